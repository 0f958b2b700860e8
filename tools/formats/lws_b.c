/* lws-b: the `~b#` lines libwebsockets' decode tool prints (spec/lws.md):
 *   ~b#size: <decimal>, 0x<hex> 0x<hex> ...<space>
 * Output is byte-identical to the tool. Input: the first `~b#` in a line
 * (text before it, e.g. a timestamp, is passed over; lines without one are
 * skipped); frames are return addresses. With --word-bits 32, values the
 * x86_64 tool sign-extended are folded back to 32 bits (with a warning). */
#include "lws_common.h"

#include <string.h>

static int lws_b_read_line(reader *r, const char *line, size_t len, trace *t)
{
    size_t start = 0;
    if (lws_reader_word_bits(r) < 0)
        return -1;
    while (start + 3 <= len && memcmp(line + start, "~b#", 3) != 0)
        start++;
    if (start + 3 > len)
        return 0;
    btp_frame f[BTP_LWS_MAX_FRAMES];
    btp_lws_info info;
    btp_status st = btp_lws_b_parse(line + start, len - start, r->word_bits, f,
                                    BTP_LWS_MAX_FRAMES, &info);
    if (st != BTP_OK)
        return rd_error(r, "column %zu: bad ~b# line: %s", start + info.error_column + 1,
                        btp_strerror(st));
    return lws_record(r, start + 1, f, &info, t);
}

static int lws_b_write(writer *w, const trace *t, strbuf *out)
{
    uint64_t size;
    size_t len = 0;
    char line[BTP_LWS_B_LINE_MAX(BTP_LWS_MAX_FRAMES) + 1];
    if (lws_check_trace(w, t, &size) < 0)
        return -1;
    const btp_frame *frames = trace_frames(t); /* at most 31 */
    if (!frames || btp_lws_b_format(frames, t->n, size, line, sizeof line - 1, &len) != BTP_OK)
        return wr_error(w, "cannot format the ~b# line");
    line[len++] = '\n';
    sb_add(out, line, len);
    return 0;
}

const format fmt_lws_b = {
    .name = "lws-b",
    .help = "libwebsockets' decode tool lines: ~b#size: N, 0xHEX 0xHEX ... (byte-identical)",
    .read_line = lws_b_read_line,
    .write = lws_b_write,
};
