/* trace (input): the allocation record format of the bundled corpora
 * (tests/data/corpus/README.md):
 *   # stkshim v1 method=... word=<64|32> ...
 *   m <size> <ptr> <addr0> ... <addrK>     an allocation and its stack
 *   f <ptr>                                a free
 * The word size comes from the header line (`word=`), else --word-bits.
 * `m` records become TRACE_ALLOC with the size; `f` records TRACE_FREE,
 * which formats that hold only traces skip. */
#include "format.h"

#include <string.h>

/* `word=N` in a comment line sets the word size. */
static int header(reader *r, const char *line, size_t len)
{
    for (size_t i = 0; i + 5 <= len; i++) {
        if ((i == 0 || line[i - 1] == ' ') && memcmp(line + i, "word=", 5) == 0) {
            size_t b = i + 5, e = b;
            uint64_t v;
            while (e < len && line[e] != ' ')
                e++;
            if (parse_dec_u64(line + b, e - b, &v) < 0 || !btp_word_bits_valid((unsigned)v) ||
                v > 64)
                return rd_error(r, "header: word=%.*s is not 16, 32 or 64", (int)(e - b),
                                line + b);
            r->word_bits = (unsigned)v;
        }
    }
    return 0;
}

/* Next space-separated field of line[*i..len) into tok/n; 0 if none. */
static int field(const char *line, size_t len, size_t *i, const char **tok, size_t *n)
{
    while (*i < len && line[*i] == ' ')
        (*i)++;
    if (*i >= len)
        return 0;
    size_t b = *i;
    while (*i < len && line[*i] != ' ')
        (*i)++;
    *tok = line + b;
    *n = *i - b;
    return 1;
}

static int trace_read_line(reader *r, const char *line, size_t len, trace *t)
{
    if (line[0] == '#')
        return header(r, line, len) < 0 ? -1 : 0;
    const char *tok;
    size_t n, i = 1, k = 0;
    if (len < 2 || (line[0] != 'm' && line[0] != 'f') || line[1] != ' ')
        return rd_error(r, "expected an `m` or `f` record or a `#` comment");
    trace_reset(t, r->word_bits);
    t->loc = r->loc;
    t->event = line[0] == 'm' ? TRACE_ALLOC : TRACE_FREE;
    if (t->event == TRACE_ALLOC) {
        if (!field(line, len, &i, &tok, &n) || parse_dec_u64(tok, n, &t->alloc_size) < 0)
            return rd_error(r, "`m` record: size must be a decimal number");
        t->has_alloc_size = 1;
    }
    if (!field(line, len, &i, &tok, &n) || parse_hex_u64(tok, n, &t->pointer) < 0)
        return rd_error(r, "record: pointer must be 0xHEX");
    t->has_pointer = 1;
    while (field(line, len, &i, &tok, &n)) {
        btp_frame f = {.kind = BTP_FRAME_RA};
        k++;
        if (t->event == TRACE_FREE)
            return rd_error(r, "`f` record: unexpected text after the pointer");
        if (parse_hex_u64(tok, n, &f.value) < 0)
            return rd_error(r, "`m` record: address %zu `%.*s` is not 0xHEX", k,
                            (int)(n > 40 ? 40 : n), tok);
        if (rd_add_frame(r, t, f, 1) < 0)
            return -1;
    }
    return 1;
}

const format fmt_trace = {
    .name = "trace",
    .help = "allocation records: `m SIZE PTR ADDR...`, `f PTR`, `# ... word=N`",
    .read_line = trace_read_line,
};
