/*
 * Telling an input's format from its first bytes, when --from is not given
 * (see format.h, format_detect(); the rules are format_detect_help).
 *
 * Only what the input itself says counts: a magic number, an information
 * byte, the shape of a line. The file name never does. Reading stops at the
 * first line that decides, so a pipe is not waited on for more than it has
 * sent; at most DETECT_MAX bytes are read ahead, and all of them are still
 * read by the format chosen.
 */
#include "format.h"

#include <string.h>

#include "diag.h"

#define DETECT_MAX ((size_t)64 << 10)

const char format_detect_help[] =
    "Without --from, the format is read from the input itself (decompressed\n"
    "first when it is xz), and an explicit --from always wins:\n"
    "  log     a trace log's magic, \\x89BTPLOG\n"
    "  cbf     binary data starting with a CBF information byte: 00, 01 or 02\n"
    "then the first line that tells (blank lines, `#` comments and other text\n"
    "are passed over, within the first 64 KiB):\n"
    "  lws     a line holding ~m# (anywhere in it)\n"
    "  lws-b   a line holding ~b#\n"
    "  crash   a line starting `btpack-crash v`\n"
    "  swift-crashlog  a JSON object with \"crashReport\"\n"
    "  swift   a JSON object with a \"backtrace\" key\n"
    "  json    a JSON object with a \"frames\" key\n"
    "  trace   `# stkshim` or `# ... word=N`, `m SIZE ...`, `f PTR`\n"
    "  hex     hex digits only, starting 00, 01 or 02\n"
    "  b64     base64 only, starting with A (a CBF information byte)\n"
    "  addrs   tokens 0xHEX, pc:0xHEX, async:0xHEX, omit:N, trunc\n"
    "In other binary data (a device log with noise, say) only the lws, lws-b and\n"
    "crash lines count. Anything else (other binary data, JSON of neither kind,\n"
    "text with no such line) is an error that asks for --from.\n";

/* What one line says. */
typedef enum { LINE_BLANK, LINE_OTHER, LINE_COMMENT, LINE_FORMAT } line_verdict;

static int has(const char *s, size_t n, const char *what)
{
    size_t k = strlen(what);
    for (size_t i = 0; i + k <= n; i++)
        if (memcmp(s + i, what, k) == 0)
            return 1;
    return 0;
}

static int starts(const char *s, size_t n, const char *prefix)
{
    size_t k = strlen(prefix);
    return n >= k && memcmp(s, prefix, k) == 0;
}

static int is_b64(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           c == '+' || c == '/' || c == '-' || c == '_' || c == '=';
}

/* An addrs token: 0xHEX, pc:0xHEX, async:0xHEX, omit:N, trunc, empty. */
static int addrs_token(const char *t, size_t n)
{
    uint64_t v;
    if ((n == 5 && memcmp(t, "trunc", 5) == 0) || (n == 5 && memcmp(t, "empty", 5) == 0))
        return 1;
    if (starts(t, n, "pc:"))
        return parse_hex_u64(t + 3, n - 3, &v) == 0;
    if (starts(t, n, "async:"))
        return parse_hex_u64(t + 6, n - 6, &v) == 0;
    if (starts(t, n, "omit:"))
        return parse_dec_u64(t + 5, n - 5, &v) == 0;
    return parse_hex_u64(t, n, &v) == 0;
}

/* The format line s[0..n) says it is (*out), or that it is blank, a
 * comment, or other text. `whole`: the line is complete (else only its start is there,
 * and its last token may be cut). */
static line_verdict classify(const char *s, size_t n, int whole, const format **out)
{
    while (n && (s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
    while (n && (s[0] == ' ' || s[0] == '\t'))
        s++, n--;
    const char *name = NULL;
    if (has(s, n, "~m#"))
        name = "lws";
    else if (has(s, n, "~b#"))
        name = "lws-b";
    else if (starts(s, n, "btpack-crash v"))
        name = "crash";
    else if (starts(s, n, "{"))
        name = has(s, n, "\"crashReport\"") ? "swift-crashlog"
               : has(s, n, "\"backtrace\"") ? "swift"
               : has(s, n, "\"frames\"")    ? "json"
                                             : NULL;
    else if (starts(s, n, "#"))
        name = has(s, n, "stkshim") || has(s, n, " word=") ? "trace" : NULL;
    else if (starts(s, n, "m ") || starts(s, n, "f "))
        name = "trace";
    if (!name && n >= 2 && s[0] == '0' && s[1] >= '0' && s[1] <= '2') {
        size_t i = 0;
        while (i < n && hex_digit(s[i]) >= 0)
            i++;
        if (i == n)
            name = "hex";
    }
    if (!name && n >= 2 && s[0] == 'A') {
        size_t i = 0;
        while (i < n && is_b64(s[i]))
            i++;
        if (i == n)
            name = "b64";
    }
    if (!name && n) {
        size_t i = 0, ok = 1, tokens = 0;
        while (i < n && ok) {
            size_t b = i;
            while (i < n && s[i] != ' ' && s[i] != '\t')
                i++;
            if (i < n || whole) {
                ok = addrs_token(s + b, i - b);
                tokens++;
            }
            while (i < n && (s[i] == ' ' || s[i] == '\t'))
                i++;
        }
        if (ok && tokens)
            name = "addrs";
    }
    if (name) {
        *out = format_find(name);
        return LINE_FORMAT;
    }
    return !n ? LINE_BLANK : s[0] == '#' ? LINE_COMMENT : LINE_OTHER;
}

/* A format whose records are found among other text (and noise). */
static int found_anywhere(const format *f)
{
    return !strcmp(f->name, "lws") || !strcmp(f->name, "lws-b") || !strcmp(f->name, "crash");
}

int detect_binary(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] == 0 || (p[i] < 0x20 && p[i] != '\t' && p[i] != '\n' && p[i] != '\r' &&
                          p[i] != '\f' && p[i] != '\v' && p[i] != 0x1b))
            return 1;
    return 0;
}

/* Print the error that asks for --from; NULL. */
static const format *cannot_tell(input *in, const char *why)
{
    diag(DIAG_ERROR, in->name, NULL, "cannot tell the input format: %s; use --from FMT "
         "(`btpack convert --help` lists them)", why);
    return NULL;
}

const format *format_detect(input *in)
{
    const void *data;
    long got = input_peek_more(in, DETECT_MAX, &data);
    size_t n = got > 0 ? (size_t)got : 0, done = 0; /* lines before done are classified */
    int comments = 0, other = 0;
    if (got < 0)
        return NULL;
    for (;;) {
        const uint8_t *p = data;
        int end = n == DETECT_MAX || (size_t)got == 0; /* nothing more to come */
        if (n == 0)
            return format_find("hex"); /* empty: no records in any format */
        /* the binary formats by their first bytes (a log's magic needs 8) */
        if (n >= 8 && btp_log_probe(p, 8))
            return format_find("log");
        if (n < 8 && !end && p[0] == 0x89)
            goto more;
        if (p[0] <= 2)
            return format_find("cbf");
        /* Other binary data: only records found anywhere in a line (a
         * device log with noise on its serial line) can still tell. */
        int binary = detect_binary(p, n < 4096 ? n : 4096);
        /* text: line by line */
        for (;;) {
            const char *s = (const char *)p + done;
            const char *nl = memchr(s, '\n', n - done);
            if (!nl && !end)
                break;
            size_t len = nl ? (size_t)(nl - s) : n - done;
            const format *f = NULL;
            line_verdict v = classify(s, len, nl != NULL || n < DETECT_MAX, &f);
            if (v == LINE_FORMAT && (!binary || found_anywhere(f)))
                return f;
            comments |= v == LINE_COMMENT;
            other |= v == LINE_OTHER;
            if (!nl)
                break;
            done += len + 1;
        }
        if (end && binary)
            return cannot_tell(in, "binary data that is neither CBF (first byte 00, 01 or 02) "
                                   "nor a btpack trace log");
        if (end) {
            /* blank lines and comments only: no records in any format */
            if (!other)
                return format_find(comments ? "addrs" : "hex");
            return cannot_tell(in, n == DETECT_MAX ? "no line in the first 64 KiB looks like "
                                                     "a record of a known format"
                                                   : "no line looks like a record of a known "
                                                     "format");
        }
    more:
        got = input_peek_more(in, DETECT_MAX, &data);
        if (got < 0)
            return NULL;
        got = (long)((size_t)got - n); /* what arrived: 0 at the end */
        n += (size_t)got;
    }
}

int format_check_text(input *in, const format *fmt)
{
    const void *data;
    if (!fmt->line_bytes)
        return 0;
    long got = input_peek_more(in, 4096, &data);
    if (got < 0)
        return -1;
    const uint8_t *p = data;
    size_t n = (size_t)got;
    if (!detect_binary(p, n))
        return 0;
    const char *hint = n >= 8 && btp_log_probe(p, 8) ? "use --from log (a btpack trace log)"
                       : p[0] <= 2 ? "use --from cbf (raw CBF streams)"
                                   : "not a format btpack reads";
    diag(DIAG_ERROR, in->name, NULL, "binary input, not %s text: %s", fmt->name, hint);
    return -1;
}
