/* Helpers shared by the formats: error recording, number parsing. */
#include "format.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Declared as a printf-style function so the compiler checks every caller's
 * format string against its arguments. */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 0)))
#endif
static void set_msg(char *msg, size_t cap, const char *fmt, va_list ap)
{
    vsnprintf(msg, cap, fmt, ap);
}

int rd_error(reader *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    set_msg(r->msg, sizeof r->msg, fmt, ap);
    va_end(ap);
    r->err_loc = r->loc;
    return -1;
}

int rd_error_at(reader *r, uint64_t offset, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    set_msg(r->msg, sizeof r->msg, fmt, ap);
    va_end(ap);
    r->err_loc = r->loc;
    r->err_loc.offset = offset;
    r->err_loc.has_offset = 1;
    return -1;
}

int wr_error(writer *w, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    set_msg(w->msg, sizeof w->msg, fmt, ap);
    va_end(ap);
    return -1;
}

int rd_add_frame(reader *r, trace *t, btp_frame f, uint64_t copies)
{
    btp_status st = trace_add(t, f, copies);
    if (st == BTP_OK)
        return 0;
    switch (st) {
    case BTP_E_LIMIT:
        return rd_error(r, "more than %zu frames in one trace (see --max-frames)", t->max_frames);
    case BTP_E_VALUE_TOO_WIDE:
        if (f.kind == BTP_FRAME_OMIT)
            return rd_error(r, "frame %zu: omit count %llu does not fit %u bits", t->n + 1,
                            (unsigned long long)f.value, t->word_bits);
        return rd_error(r, "frame %zu: address 0x%llx does not fit %u bits", t->n + 1,
                        (unsigned long long)f.value, t->word_bits);
    case BTP_E_ZERO_COUNT:
        return rd_error(r, "frame %zu: a count of 0 (omit and repeat counts start at 1)",
                        t->n + 1);
    default:
        return rd_error(r, "frame %zu: %s", t->n + 1, btp_strerror(st));
    }
}

int hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int parse_hex_digits_u64(const char *s, size_t n, uint64_t *out)
{
    if (n == 0)
        return -1;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        int d = hex_digit(s[i]);
        if (d < 0 || v >> 60)
            return -1;
        v = v << 4 | (unsigned)d;
    }
    *out = v;
    return 0;
}

int parse_hex_u64(const char *s, size_t n, uint64_t *out)
{
    if (n < 3 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X'))
        return -1;
    return parse_hex_digits_u64(s + 2, n - 2, out);
}

int parse_dec_u64(const char *s, size_t n, uint64_t *out)
{
    if (n == 0)
        return -1;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        unsigned d = (unsigned)(s[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

const uint8_t *rd_bytes(reader *r, size_t need, size_t *have)
{
    size_t off = (size_t)(r->pos - r->win_off); /* where r->pos is in the window */
    while (r->win.len - off < need && !r->in_end) {
        /* forget what was read before r->pos once it is half the window:
         * moves stay linear in the input */
        if (off && off >= r->win.len / 2) {
            memmove(r->win.data, r->win.data + off, r->win.len - off);
            r->win.len -= off;
            r->win_off += off;
            off = 0;
        }
        size_t room = need - (r->win.len - off);
        if (room < 65536)
            room = 65536;
        char *d = sb_reserve(&r->win, room);
        long got = d ? input_read(r->in, d, room) : -1;
        if (got < 0) {
            if (d)
                r->in_failed = 1; /* the input said why */
            else
                rd_error(r, "out of memory");
            r->fatal = r->in_end = 1;
            *have = 0;
            return NULL;
        }
        if (got == 0)
            r->in_end = 1;
        r->win.len += (size_t)got;
    }
    *have = r->win.len - off;
    return (const uint8_t *)r->win.data + off;
}

void rd_skip(reader *r, size_t n)
{
    r->pos += n;
}

int wr_spill(writer *w, strbuf *out)
{
    if (!w->spill || out->len < ((size_t)1 << 20))
        return 0;
    return w->spill(w->spill_ctx) < 0 ? -1 : 0;
}
