/* hex: one CBF stream per line as hex digits (either case in, lowercase
 * out). */
#include "format.h"

static int hex_line_bytes(reader *r, const char *line, size_t len, strbuf *out)
{
    size_t b = 0, e = len;
    while (b < e && (line[b] == ' ' || line[b] == '\t'))
        b++;
    while (e > b && (line[e - 1] == ' ' || line[e - 1] == '\t'))
        e--;
    if ((e - b) % 2)
        return rd_error(r, "odd number of hex digits (%zu)", e - b);
    char *d = sb_reserve(out, (e - b) / 2);
    if (!d)
        return rd_error(r, "out of memory");
    for (size_t i = b; i < e; i += 2) {
        int hi = hex_digit(line[i]), lo = hex_digit(line[i + 1]);
        if (hi < 0 || lo < 0)
            return rd_error(r, "column %zu: not a hex digit", (hi < 0 ? i : i + 1) + 1);
        d[(i - b) / 2] = (char)(hi << 4 | lo);
    }
    out->len += (e - b) / 2;
    return 0;
}

static int hex_write(writer *w, const trace *t, strbuf *out)
{
    strbuf bytes = STRBUF_INIT;
    int rc = cbf_from_trace(w, t, 0, &bytes);
    if (rc == 0) {
        sb_hex(out, bytes.data, bytes.len);
        sb_addc(out, '\n');
    }
    sb_free(&bytes);
    return rc;
}

const format fmt_hex = {
    .name = "hex",
    .help = "one CBF stream per line as hex digits",
    .line_bytes = hex_line_bytes,
    .write = hex_write,
};
