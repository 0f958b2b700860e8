/* lws: libwebsockets' compressed backtraces, `~m#` + base64 (spec/lws.md).
 * Input: every `~m#` record anywhere in a line of log text (timestamps and
 * other words around it are fine; several per line); lines without one are
 * passed over. The word size is --word-bits (32 for 32-bit devices; default
 * 64); frames are return addresses; the allocation size is kept.
 * Output: one `~m#` line per trace, libwebsockets' own encoding (or the
 * smallest with --lws-optimal). */
#include "lws_common.h"

#include <stdlib.h>

typedef struct lws_state {
    size_t line; /* line number the position belongs to */
    size_t pos;  /* where to look for the next record on that line */
} lws_state;

static int lws_open(reader *r)
{
    r->state = calloc(1, sizeof(lws_state));
    if (!r->state)
        return rd_error(r, "out of memory");
    return 0;
}

static void lws_close(reader *r)
{
    free(r->state);
    r->state = NULL;
}

static int lws_read_line(reader *r, const char *line, size_t len, trace *t)
{
    lws_state *s = r->state;
    size_t start, n, peek;
    if (lws_reader_word_bits(r) < 0)
        return -1;
    if (s->line != r->loc.line) {
        s->line = r->loc.line;
        s->pos = 0;
    }
    if (btp_lws_scan(line, len, &s->pos, &start, &n) != BTP_OK)
        return 0;
    /* Another record further on: come back to this line. */
    peek = s->pos;
    r->more = btp_lws_scan(line, len, &peek, &(size_t){0}, &(size_t){0}) == BTP_OK;

    btp_frame f[BTP_LWS_MAX_FRAMES];
    btp_lws_info info;
    btp_status st = btp_lws_m_decode(line + start, n, r->word_bits, f, BTP_LWS_MAX_FRAMES, &info);
    if (st == BTP_E_LIMIT)
        return rd_error(r, "column %zu: bad ~m# record: longer than any record (%d bytes)",
                        start + 1, BTP_LWS_BLOB_MAX);
    if (st == BTP_E_BAD_BASE64)
        return rd_error(r, "column %zu: bad ~m# record: %s at column %zu", start + 1,
                        btp_strerror(st), start + info.error_column + 1);
    if (st != BTP_OK)
        return rd_error(r, "column %zu: bad ~m# record: %s (%s) at bit %zu", start + 1,
                        btp_strerror(st), btp_status_name(st), info.error_bit);
    return lws_record(r, start + 1, f, &info, t);
}

static int lws_write(writer *w, const trace *t, strbuf *out)
{
    uint64_t size;
    uint8_t blob[BTP_LWS_BLOB_MAX];
    size_t len = 0, bad = 0;
    if (lws_check_trace(w, t, &size) < 0)
        return -1;
    const btp_frame *frames = trace_frames(t); /* at most 31 */
    if (!frames)
        return wr_error(w, "out of memory");
    btp_status st = btp_lws_encode(frames, t->n, size, t->word_bits,
                                   BTP_LWS_ENC_ANY_ADDRESS |
                                       (w->opt->lws_optimal ? BTP_LWS_ENC_OPTIMAL : 0),
                                   blob, sizeof blob, &len, &bad);
    if (st == BTP_E_UNREPRESENTABLE && size >> 63)
        return wr_error(w, "allocation size %llu has bit 63 set, which lws cannot hold",
                        (unsigned long long)size);
    if (st == BTP_E_UNREPRESENTABLE)
        return wr_error(w, "frame %zu: 0x%llx has bit 63 set and no delta from the frames "
                           "before it can express it (%s)", bad + 1,
                        (unsigned long long)frames[bad].value, btp_status_name(st));
    if (st == BTP_E_VALUE_TOO_WIDE)
        return wr_error(w, "the allocation size %llu does not fit %u bits",
                        (unsigned long long)size, t->word_bits);
    if (st != BTP_OK)
        return wr_error(w, "%s", btp_strerror(st));
    char line[BTP_LWS_M_LINE_MAX + 1];
    btp_lws_m_format(blob, len, line, BTP_LWS_M_LINE_MAX, &len);
    line[len++] = '\n';
    sb_add(out, line, len);
    return 0;
}

const format fmt_lws = {
    .name = "lws",
    .help = "libwebsockets ~m# records, found anywhere in log lines; --word-bits 32 for "
            "32-bit devices",
    .open = lws_open,
    .close = lws_close,
    .read_line = lws_read_line,
    .write = lws_write,
};
