/* swift: Swift's `Backtrace` as its Codable JSON, one object per line:
 *   {"architecture":"x86_64","backtrace":"<base64 CBF>","imageMap":"<base64 CIF>"}
 * (imageMap only when the trace has an image map).
 *
 * Read as Swift's JSONDecoder does: the three keys in any order, others
 * ignored; base64 in the standard or URL-safe alphabet, with or without
 * '=' padding. --strict decodes CBF and CIF strictly, except that the
 * first address may be relative (every Swift backtrace has one). Unlike Swift, a character outside the alphabet is an error
 * (Swift stops there silently and keeps what it decoded so far), and so is
 * an imageMap that does not decode (Swift quietly drops it).
 * Written as Swift's JSONEncoder does on Linux: no spaces, '/' escaped as
 * "\/", base64 without padding, CBF with Swift's choices and CIF byte for
 * byte as Swift writes it, except that the CBF ends with `end`: Swift 6.3.1
 * writes none, and its decoder then reports every backtrace truncated
 * (spec/cbf.md). The keys come in a fixed order (Foundation's order varies
 * from run to run). A trace without an architecture gets "x86_64" (64-bit),
 * "i386" (32-bit) or "msp430" (16-bit). */
#include "format.h"

#include <stdlib.h>
#include <string.h>

#include "cif_map.h"
#include "json.h"
#include "swift_common.h"

typedef struct swift_state {
    cif_map map;
    strbuf bytes;
    char *arch;
} swift_state;

static int swift_open(reader *r)
{
    r->state = calloc(1, sizeof(swift_state));
    return r->state ? 0 : rd_error(r, "out of memory");
}

static void swift_close(reader *r)
{
    swift_state *s = r->state;
    if (s) {
        cif_map_free(&s->map);
        sb_free(&s->bytes);
        free(s->arch);
    }
    free(s);
    r->state = NULL;
}

/* The base64 string value of `key` decoded into s->bytes. */
static int b64_field(reader *r, swift_state *s, const json_value *v, const char *key)
{
    size_t n = 0, out = 0, bad = 0;
    const char *text = json_str(v, &n);
    if (!text)
        return rd_error(r, "\"%s\" must be a base64 string", key);
    sb_clear(&s->bytes);
    char *d = sb_reserve(&s->bytes, BTP_BASE64_DECODED_MAX(n) + 1);
    if (!d)
        return rd_error(r, "out of memory");
    btp_status st = btp_base64_decode(text, n, d, BTP_BASE64_DECODED_MAX(n), 0, &out, &bad);
    if (st != BTP_OK)
        return rd_error(r, "\"%s\": character %zu: %s", key, bad + 1, btp_strerror(st));
    s->bytes.len = out;
    return 0;
}

/* --strict reads the CBF strictly except for a relative first address:
 * Swift writes every backtrace that way (and so does this format's writer,
 * for Swift's bytes). */
static unsigned swift_cbf_policy(const reader *r)
{
    return cbf_policy(r->opt) & ~(unsigned)BTP_CBF_REJECT_RELATIVE_FIRST;
}

static int swift_read_line(reader *r, const char *line, size_t len, trace *t)
{
    swift_state *s = r->state;
    json_error err = {0};
    json_value *v = json_parse(line, len, &err);
    if (!v)
        return rd_error(r, "column %zu: %s", err.offset + 1, err.msg);
    int rc = -1;
    size_t arch_len = 0, used = 0;
    const char *arch = json_str(json_get(v, "architecture"), &arch_len);
    const json_value *map = json_get(v, "imageMap");
    if (json_type_of(map) == JSON_NULL)
        map = NULL; /* Swift's decodeIfPresent reads null as absent */
    if (json_type_of(v) != JSON_OBJECT) {
        rd_error(r, "a Swift backtrace must be a JSON object");
    } else if (!arch || strlen(arch) != arch_len || !json_utf8_valid(arch, arch_len)) {
        rd_error(r, "\"architecture\" must be a UTF-8 string without NUL");
    } else if (!json_get(v, "backtrace")) {
        rd_error(r, "\"backtrace\" is missing");
    } else if (b64_field(r, s, json_get(v, "backtrace"), "backtrace") == 0 &&
               cbf_to_trace(r, (const uint8_t *)s->bytes.data, s->bytes.len, swift_cbf_policy(r),
                            0, t, &used) == 0) {
        rc = 1;
        if (map) {
            btp_cif_info info;
            btp_status st = BTP_OK;
            if (b64_field(r, s, map, "imageMap") < 0)
                rc = -1;
            else if ((st = cif_map_decode(&s->map, (const uint8_t *)s->bytes.data,
                                          s->bytes.len, cif_map_policy(r->opt->strict),
                                          &info)) != BTP_OK)
                rc = rd_error(r, "imageMap: byte %zu: %s (%s)", info.error_offset,
                              btp_strerror(st), btp_status_name(st));
            else
                t->image_map = &s->map.map;
        }
        char *copy = rc == 1 ? strdup(arch) : NULL;
        if (rc == 1 && !copy)
            rc = rd_error(r, "out of memory");
        if (rc == 1) {
            free(s->arch);
            s->arch = copy;
            t->arch = copy;
        }
    }
    json_free(v);
    return rc;
}

/* Base64 as Swift writes it (no padding), '/' escaped as Foundation does. */
static int put_b64(writer *w, const strbuf *bytes, strbuf *out)
{
    size_t cap = BTP_BASE64_ENCODED_LEN(bytes->len), n = 0;
    char *text = malloc(cap + 1);
    if (!text || btp_base64_encode(bytes->data, bytes->len, text, cap, 0, &n) != BTP_OK) {
        free(text);
        return wr_error(w, "out of memory");
    }
    json_put_string(out, text, n, JSON_ESCAPE_SLASH);
    free(text);
    return 0;
}

static int swift_write(writer *w, const trace *t, strbuf *out)
{
    strbuf bytes = STRBUF_INIT;
    size_t cap = BTP_CBF_BOUND(t->n), len = 0;
    char *buf = sb_reserve(&bytes, cap);
    if (!buf)
        return wr_error(w, "out of memory");
    int rc = 0;
    btp_status st = btp_cbf_encode(t->frames, t->n, t->truncated, t->word_bits,
                                   BTP_CBF_ENC_SWIFT, buf, cap, &len, NULL);
    if (st != BTP_OK) {
        rc = wr_error(w, "cannot encode as CBF: %s", btp_strerror(st));
        goto out;
    }
    bytes.len = len;
    const char *arch = t->arch ? t->arch : swift_default_arch(t->word_bits);
    sb_adds(out, "{\"architecture\":");
    json_put_string(out, arch, strlen(arch), JSON_ESCAPE_SLASH);
    sb_adds(out, ",\"backtrace\":");
    if ((rc = put_b64(w, &bytes, out)) < 0)
        goto out;
    if (t->image_map) {
        sb_clear(&bytes);
        st = cif_map_encode(t->image_map, BTP_CIF_ENC_SWIFT, &bytes);
        if (st != BTP_OK) {
            rc = wr_error(w, "cannot encode the image map as CIF: %s", btp_strerror(st));
            goto out;
        }
        sb_adds(out, ",\"imageMap\":");
        if ((rc = put_b64(w, &bytes, out)) < 0)
            goto out;
    }
    sb_adds(out, "}\n");
out:
    sb_free(&bytes);
    return rc;
}

const format fmt_swift = {
    .name = "swift",
    .help = "Swift's Backtrace JSON: {\"architecture\":..,\"backtrace\":<b64 CBF>,"
            "\"imageMap\":<b64 CIF>}",
    .open = swift_open,
    .close = swift_close,
    .read_line = swift_read_line,
    .write = swift_write,
};
