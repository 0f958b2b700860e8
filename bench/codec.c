/*
 * What every codec shares: error messages, scratch memory, and the loop
 * over the traces for per-trace codecs (one place for the trace index and
 * its bounds checks).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "codec.h"

int bench_fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

void *bench_scratch_reserve(bench_scratch *s, size_t size)
{
    if (size <= s->cap)
        return s->p;
    void *p = realloc(s->p, size ? size : 1);
    if (!p)
        return NULL;
    s->p = p;
    s->cap = size;
    return p;
}

static const char *why(int rc)
{
    return rc == BENCH_MISMATCH ? "decodes to another trace" : btp_strerror((btp_status)rc);
}

int bench_encode(const bench_codec *k, const bench_corpus *c, bench_encoded *out,
                 bench_scratch *s, char *err, size_t errlen)
{
    if (!k->encode_trace)
        return k->encode(c, out, s, err, errlen);
    size_t len = 0;
    for (size_t i = 0; i < c->ntraces; i++) {
        size_t n;
        int rc = k->encode_trace(c, i, k->param, out->data + len, out->cap - len, &n);
        if (rc != 0)
            return bench_fail(err, errlen, "%s: trace %zu: %s", k->name, i, why(rc));
        len += n;
        out->ends[i] = len;
    }
    out->len = len;
    return 0;
}

int bench_decode(const bench_codec *k, const bench_corpus *c, const bench_encoded *in,
                 uint64_t *frames, btp_frame *bframes, bench_scratch *s, char *err,
                 size_t errlen)
{
    if (!k->decode_trace && !k->decode_trace_b)
        return k->decode(c, in, frames, s, err, errlen);
    size_t pos = 0;
    for (size_t i = 0; i < c->ntraces; i++) {
        size_t end = in->ends[i];
        if (end < pos || end > in->len)
            return bench_fail(err, errlen, "%s: bad trace index", k->name);
        int rc = k->decode_trace_b
                     ? k->decode_trace_b(c, i, k->param, in->data + pos, end - pos,
                                         bframes + c->start[i], s)
                     : k->decode_trace(c, i, k->param, in->data + pos, end - pos,
                                       frames + c->start[i], s);
        if (rc != 0)
            return bench_fail(err, errlen, "%s: trace %zu: %s", k->name, i, why(rc));
        pos = end;
    }
    return 0;
}
