/*
 * The btpack trace log (spec/log.md) through the library: every trace of
 * the corpus as a plain backtrace record (frames only: no sizes, pointers
 * or frees, so it stores what raw and xz-raw store), one log file per
 * corpus, written through a sink into memory and read back record by
 * record. `log` stores blocks uncompressed, `log-zlib` with zlib level 9.
 * Both are lossless: the decoder checks every record.
 */
#include <string.h>

#include <btpack/log.h>

#include "codec.h"

static size_t log_bound(const bench_corpus *c)
{
    /* Far above any real log (a new frame costs at most a 9-byte CBF
     * instruction and a tree node's few bytes, a record a few bytes, plus
     * block and file headers); the sink refuses to go past it anyway. */
    return ((size_t)1 << 20) + c->nframes * 16 + c->ntraces * 16;
}

typedef struct sink {
    bench_encoded *out;
} sink;

static btp_status sink_write(void *ctx, const void *data, size_t len)
{
    bench_encoded *out = ((sink *)ctx)->out;
    if (len > out->cap - out->len)
        return BTP_E_BUFFER_TOO_SMALL;
    memcpy(out->data + out->len, data, len);
    out->len += len;
    return BTP_OK;
}

static int log_encode_flags(const bench_corpus *c, bench_encoded *out, unsigned flags, char *err,
                            size_t errlen)
{
    btp_log_writer_options opt;
    btp_log_writer_options_init(&opt, c->word_bits);
    opt.flags = flags;
    opt.zlib_level = 9;
    opt.flush_interval_ms = 0; /* sizes that do not depend on timing */
    sink k = {out};
    btp_log_writer *w;
    out->len = 0;
    btp_status st = btp_log_writer_open(&w, sink_write, &k, &opt);
    if (st != BTP_OK)
        return bench_fail(err, errlen, "log: open: %s", btp_strerror(st));
    for (size_t i = 0; i < c->ntraces && st == BTP_OK; i++)
        st = btp_log_writer_trace(w, c->bframes + c->start[i], c->start[i + 1] - c->start[i], 0);
    if (st != BTP_OK) {
        btp_log_writer_abandon(w);
        return bench_fail(err, errlen, "log: write: %s", btp_strerror(st));
    }
    if ((st = btp_log_writer_close(w)) != BTP_OK)
        return bench_fail(err, errlen, "log: close: %s", btp_strerror(st));
    return 0;
}

static int log_encode_plain(const bench_corpus *c, bench_encoded *out, bench_scratch *s,
                            char *err, size_t errlen)
{
    return log_encode_flags(c, out, BTP_LOG_WRITE_NO_ZLIB, err, errlen);
}

static int log_encode_zlib(const bench_corpus *c, bench_encoded *out, bench_scratch *s,
                           char *err, size_t errlen)
{
    return log_encode_flags(c, out, 0, err, errlen);
}

static int log_decode(const bench_corpus *c, const bench_encoded *in, uint64_t *frames,
                      bench_scratch *s, char *err, size_t errlen)
{
    btp_log_reader *r;
    btp_status st = btp_log_reader_open(&r, in->data, in->len, 0);
    if (st != BTP_OK)
        return bench_fail(err, errlen, "log: open: %s", btp_strerror(st));
    btp_log_record rec;
    size_t i = 0;
    int rc = 0;
    while ((st = btp_log_reader_next(r, &rec)) == BTP_OK) {
        size_t want = i < c->ntraces ? c->start[i + 1] - c->start[i] : 0;
        if (i >= c->ntraces || rec.kind != BTP_LOG_TRACE || rec.n_frames != want) {
            rc = bench_fail(err, errlen, "log: record %zu is not trace %zu", i, i);
            break;
        }
        uint64_t *f = frames + c->start[i];
        for (size_t k = 0; k < want; k++)
            f[k] = rec.frames[k].value;
        i++;
    }
    if (rc == 0 && (st != BTP_END || i != c->ntraces))
        rc = bench_fail(err, errlen, "log: %zu of %zu records, then %s", i, c->ntraces,
                        btp_strerror(st));
    btp_log_reader_close(r);
    return rc;
}

const bench_codec bench_codec_log = {
    .name = "log",
    .what = "btpack trace log of the corpus's traces (frames only), blocks uncompressed",
    .bound = log_bound,
    .encode = log_encode_plain,
    .decode = log_decode,
};

const bench_codec bench_codec_log_zlib = {
    .name = "log-zlib",
    .what = "the same trace log with zlib level 9 blocks (the default)",
    .unavailable = BENCH_HAVE_ZLIB ? NULL : "built without zlib",
    .bound = log_bound,
    .encode = log_encode_zlib,
    .decode = log_decode,
};
