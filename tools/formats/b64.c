/* b64: one CBF stream per line in base64 as Swift writes it (standard
 * alphabet, no padding); padding and the URL-safe alphabet are accepted. */
#include "format.h"

static int b64_line_bytes(reader *r, const char *line, size_t len, strbuf *out)
{
    size_t b = 0, e = len, n = 0, bad = 0;
    while (b < e && (line[b] == ' ' || line[b] == '\t'))
        b++;
    while (e > b && (line[e - 1] == ' ' || line[e - 1] == '\t'))
        e--;
    char *d = sb_reserve(out, BTP_BASE64_DECODED_MAX(e - b));
    if (!d)
        return rd_error(r, "out of memory");
    btp_status st = btp_base64_decode(line + b, e - b, d, BTP_BASE64_DECODED_MAX(e - b), 0, &n,
                                      &bad);
    if (st != BTP_OK)
        return rd_error(r, "column %zu: %s", b + bad + 1, btp_strerror(st));
    out->len += n;
    return 0;
}

static int b64_write(writer *w, const trace *t, strbuf *out)
{
    strbuf bytes = STRBUF_INIT;
    int rc = cbf_from_trace(w, t, 0, &bytes);
    if (rc == 0) {
        size_t cap = BTP_BASE64_ENCODED_LEN(bytes.len), n = 0;
        char *d = sb_reserve(out, cap + 1);
        if (!d || btp_base64_encode(bytes.data, bytes.len, d, cap, 0, &n) != BTP_OK) {
            rc = wr_error(w, "out of memory");
        } else {
            out->len += n;
            sb_addc(out, '\n');
        }
    }
    sb_free(&bytes);
    return rc;
}

const format fmt_b64 = {
    .name = "b64",
    .help = "one CBF stream per line in base64 (Swift's: no '=' out; '=', URL-safe in)",
    .line_bytes = b64_line_bytes,
    .write = b64_write,
};
