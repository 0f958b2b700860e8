/* addrs: one trace per line, space-separated tokens: `0xHEX` (a return
 * address), `pc:0xHEX`, `async:0xHEX`, `omit:N`, and a last token `trunc`
 * when the trace was truncated; `#` lines are comments. A trace with no
 * frames is the line `empty` (`trunc` when truncated): a blank line is no
 * trace, as in every text format. */
#include "format.h"

#include <string.h>

static int starts(const char *s, size_t n, const char *prefix)
{
    size_t k = strlen(prefix);
    return n >= k && memcmp(s, prefix, k) == 0;
}

static int addrs_read_line(reader *r, const char *line, size_t len, trace *t)
{
    size_t i = 0;
    while (i < len && (line[i] == ' ' || line[i] == '\t'))
        i++;
    if (i < len && line[i] == '#')
        return 0;
    trace_reset(t, r->word_bits);
    t->loc = r->loc;
    size_t tokens = 0;
    while (i < len) {
        size_t b = i;
        while (i < len && line[i] != ' ' && line[i] != '\t')
            i++;
        const char *tok = line + b;
        size_t n = i - b;
        while (i < len && (line[i] == ' ' || line[i] == '\t'))
            i++;
        tokens++;
        if (t->truncated)
            return rd_error(r, "token %zu: `trunc` must be the last token", tokens - 1);
        btp_frame f = {.kind = BTP_FRAME_RA};
        int bad;
        if (n == 5 && memcmp(tok, "trunc", 5) == 0) {
            t->truncated = 1;
            continue;
        } else if (n == 5 && memcmp(tok, "empty", 5) == 0) {
            if (tokens != 1 || i < len)
                return rd_error(r, "token %zu: `empty` must be the only token", tokens);
            return 1;
        } else if (starts(tok, n, "pc:")) {
            f.kind = BTP_FRAME_PC;
            bad = parse_hex_u64(tok + 3, n - 3, &f.value);
        } else if (starts(tok, n, "async:")) {
            f.kind = BTP_FRAME_ASYNC;
            bad = parse_hex_u64(tok + 6, n - 6, &f.value);
        } else if (starts(tok, n, "omit:")) {
            f.kind = BTP_FRAME_OMIT;
            bad = parse_dec_u64(tok + 5, n - 5, &f.value);
        } else {
            bad = parse_hex_u64(tok, n, &f.value);
        }
        if (bad)
            return rd_error(r, "token %zu: `%.*s` is not 0xHEX, pc:0xHEX, async:0xHEX, omit:N "
                               "or trunc", tokens, (int)(n > 40 ? 40 : n), tok);
        if (rd_add_frame(r, t, f, 1) < 0)
            return -1;
    }
    return 1;
}

static int addrs_write(writer *w, const trace *t, strbuf *out)
{
    const char *sep = "";
    for (size_t i = 0; i < t->n_runs; i++) {
        btp_frame f = t->runs[i].frame;
        for (uint64_t c = 0; c < t->runs[i].count; c++) {
            if (f.kind == BTP_FRAME_OMIT)
                sb_printf(out, "%somit:%llu", sep, (unsigned long long)f.value);
            else
                sb_printf(out, "%s%s0x%llx", sep,
                          f.kind == BTP_FRAME_PC      ? "pc:"
                          : f.kind == BTP_FRAME_ASYNC ? "async:"
                                                      : "",
                          (unsigned long long)f.value);
            sep = " ";
            if ((c & 4095) == 4095 && wr_spill(w, out) < 0)
                return -1;
        }
        if (wr_spill(w, out) < 0)
            return -1;
    }
    if (t->truncated)
        sb_adds(out, t->n ? " trunc" : "trunc");
    else if (!t->n)
        sb_adds(out, "empty");
    sb_addc(out, '\n');
    return 0;
}

const format fmt_addrs = {
    .name = "addrs",
    .help = "one trace per line: 0xRA pc:0xHEX async:0xHEX omit:N [trunc], or `empty`; "
            "'#' comments",
    .read_line = addrs_read_line,
    .write = addrs_write,
};
