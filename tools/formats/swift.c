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
    /* the line's image map, in the one of the two not given with a trace
     * last, so that the map given stays as it was until another is (a
     * symbolizer compares the two to see a change: sym_set_map()) */
    cif_map maps[2];
    int given;
    strbuf bytes;
    strbuf arch_text, bt_text, map_text; /* the line's strings, as read */
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
        cif_map_free(&s->maps[0]);
        cif_map_free(&s->maps[1]);
        sb_free(&s->bytes);
        sb_free(&s->arch_text);
        sb_free(&s->bt_text);
        sb_free(&s->map_text);
        free(s->arch);
    }
    free(s);
    r->state = NULL;
}

/* The base64 text of `key` decoded into s->bytes. */
static int b64_field(reader *r, swift_state *s, const strbuf *text, const char *key)
{
    size_t n = text->len, out = 0, bad = 0;
    sb_clear(&s->bytes);
    char *d = sb_reserve(&s->bytes, BTP_BASE64_DECODED_MAX(n) + 1);
    if (!d)
        return rd_error(r, "out of memory");
    btp_status st = btp_base64_decode(text->data ? text->data : "", n, d,
                                      BTP_BASE64_DECODED_MAX(n), 0, &out, &bad);
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

enum { ABSENT = 0, STRING = 1, OTHER = 2, NUL_VALUE = 3 };

/* The value of a member: a string (copied into *to) or something else
 * (skipped). Returns STRING, OTHER or NUL_VALUE (null), or -1 on a syntax
 * error. */
static int member(json_cursor *c, strbuf *to)
{
    int ch = json_peek(c);
    if (ch == '"') {
        const char *v;
        size_t n;
        if (json_string(c, &v, &n) < 0)
            return -1;
        sb_clear(to);
        sb_add(to, v, n);
        return STRING;
    }
    if (ch == 'n') {
        json_type type;
        int b;
        if (json_literal(c, &type, &b) < 0)
            return -1;
        return type == JSON_NULL ? NUL_VALUE : OTHER;
    }
    return json_skip(c) < 0 ? -1 : OTHER;
}

/* The first of each key: its state (ABSENT, STRING, OTHER, NUL_VALUE). */
typedef struct swift_members {
    swift_state *s;
    int arch, bt, map;
} swift_members;

static int take_member(void *ctx, json_cursor *c, const char *key, size_t klen)
{
    swift_members *m = ctx;
    int *got = klen == 12 && !memcmp(key, "architecture", 12) ? &m->arch
               : klen == 9 && !memcmp(key, "backtrace", 9)    ? &m->bt
               : klen == 8 && !memcmp(key, "imageMap", 8)     ? &m->map
                                                              : NULL;
    if (!got || *got != ABSENT)
        return json_skip(c);
    *got = member(c, got == &m->arch ? &m->s->arch_text
                     : got == &m->bt ? &m->s->bt_text
                                     : &m->s->map_text);
    return *got < 0 ? -1 : 0;
}

/* The line is read in place with the JSON cursor (no tree): memory is what
 * its three strings take, whatever else it holds. */
static int swift_read_line(reader *r, const char *line, size_t len, trace *t)
{
    swift_state *s = r->state;
    json_cursor c;
    json_cursor_init(&c, line, len);
    int rc = -1;
    swift_members m = {s, ABSENT, ABSENT, ABSENT};
    int is_object = json_members(&c, take_member, &m);
    if (is_object < 0)
        goto syntax;
    size_t used = 0;
    const char *arch_s = s->arch_text.data ? s->arch_text.data : "";
    if (!is_object) {
        rd_error(r, "a Swift backtrace must be a JSON object");
    } else if (m.arch != STRING || strlen(arch_s) != s->arch_text.len ||
               !json_utf8_valid(arch_s, s->arch_text.len)) {
        rd_error(r, "\"architecture\" must be a UTF-8 string without NUL");
    } else if (m.bt == ABSENT) {
        rd_error(r, "\"backtrace\" is missing");
    } else if (m.bt != STRING) {
        rd_error(r, "\"backtrace\" must be a base64 string");
    } else if (b64_field(r, s, &s->bt_text, "backtrace") == 0 &&
               cbf_to_trace(r, (const uint8_t *)s->bytes.data, s->bytes.len, swift_cbf_policy(r),
                            0, t, &used) == 0) {
        rc = 1;
        if (m.map == OTHER) { /* null is absent, as Swift's decodeIfPresent reads it */
            rc = rd_error(r, "\"imageMap\" must be a base64 string");
        } else if (m.map == STRING) {
            btp_cif_info info;
            btp_status st = BTP_OK;
            int cur = !s->given;
            if (b64_field(r, s, &s->map_text, "imageMap") < 0)
                rc = -1;
            else if ((st = cif_map_decode(&s->maps[cur], (const uint8_t *)s->bytes.data,
                                          s->bytes.len, cif_map_policy(r->opt->strict),
                                          &info)) != BTP_OK)
                rc = rd_error(r, "imageMap: byte %zu: %s (%s)", info.error_offset,
                              btp_strerror(st), btp_status_name(st));
            else
                t->image_map = &s->maps[cur].map;
            if (t->image_map)
                s->given = cur;
        }
        char *copy = rc == 1 ? strdup(arch_s) : NULL;
        if (rc == 1 && !copy)
            rc = rd_error(r, "out of memory");
        if (rc == 1) {
            free(s->arch);
            s->arch = copy;
            t->arch = copy;
        }
    }
    goto out;
syntax:
    rd_error(r, "column %zu: %s", c.err.offset + 1, c.err.msg);
out:
    json_cursor_free(&c);
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
    btp_status st;
    int rc = cbf_from_trace(w, t, BTP_CBF_ENC_SWIFT, &bytes);
    if (rc < 0)
        goto out;
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
