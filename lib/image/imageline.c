/* `image` lines of crash records and trace logs (imagemap.h): written by
 * the crash handler (so: no libc at all, not even memcpy, and the caller's
 * buffer), read by the tools. */
#include "image/image_internal.h"

static const char hexdig[] = "0123456789abcdef";

/* Appends to out[0..cap) while counting everything in *n. */
typedef struct sink {
    char *out;
    size_t cap, n;
} sink;

static void put(sink *s, char c)
{
    if (s->n < s->cap)
        s->out[s->n] = c;
    s->n++;
}

static void put_str(sink *s, const char *p)
{
    while (*p)
        put(s, *p++);
}

static void put_hex(sink *s, uint64_t v)
{
    int shift = 60;
    put_str(s, "0x");
    while (shift > 0 && ((v >> shift) & 15) == 0)
        shift -= 4;
    for (; shift >= 0; shift -= 4)
        put(s, hexdig[(v >> shift) & 15]);
}

btp_status btp_image_line_format(const btp_image *image, char *out, size_t cap, size_t *len)
{
    if (!image || (!out && cap) || (image->build_id_len && !image->build_id))
        return BTP_E_INVALID_ARGUMENT;
    sink s = {out, cap, 0};
    put_str(&s, "image ");
    put_hex(&s, image->base);
    put(&s, ' ');
    put_hex(&s, image->end_of_text);
    put(&s, ' ');
    if (!image->build_id_len)
        put(&s, '-');
    for (size_t i = 0; i < image->build_id_len; i++) {
        put(&s, hexdig[image->build_id[i] >> 4]);
        put(&s, hexdig[image->build_id[i] & 15]);
    }
    put(&s, ' ');
    const char *p = image->path;
    if (!p || !*p) {
        put(&s, '-');
    } else if (p[0] == '-' && p[1] == 0) {
        put_str(&s, "\\x2d");
    } else {
        for (; *p; p++) {
            unsigned char c = (unsigned char)*p;
            if (c == '\\') {
                put_str(&s, "\\\\");
            } else if (c == '\n') {
                put_str(&s, "\\n");
            } else if (c < 0x20 || c == 0x7f) {
                put_str(&s, "\\x");
                put(&s, hexdig[c >> 4]);
                put(&s, hexdig[c & 15]);
            } else {
                put(&s, (char)c);
            }
        }
    }
    if (len)
        *len = s.n;
    return s.n <= cap ? BTP_OK : BTP_E_BUFFER_TOO_SMALL;
}

/* The byte written as two hex digits at s[k], s[k + 1], or -1. */
static int hex_byte_at(const char *s, size_t k)
{
    int hi = btp_hex_digit((unsigned char)s[k]), lo = btp_hex_digit((unsigned char)s[k + 1]);
    return hi < 0 || lo < 0 ? -1 : hi << 4 | lo;
}

btp_status btp_image_line_parse(const char *line, size_t len, unsigned word_bits,
                                btp_image_buf *buf, size_t *error_offset)
{
    if (!buf || (!line && len) || !btp_word_bits_valid(word_bits))
        return BTP_E_INVALID_ARGUMENT;
    size_t i = 0, at = 0;
    uint64_t base, end;
    const uint64_t mask = btp_word_mask(word_bits);
    btp_status st = BTP_E_IMAGE_SYNTAX;
    if (len && line[len - 1] == '\r')
        len--;
#define FAIL_AT(pos)                                                                               \
    do {                                                                                           \
        at = (pos);                                                                                \
        goto fail;                                                                                 \
    } while (0)
    for (const char *k = "image "; *k; k++, i++)
        if (i >= len || line[i] != *k)
            FAIL_AT(0);
    if (len - i < 2 || line[i] != '0' || line[i + 1] != 'x')
        FAIL_AT(i);
    i += 2;
    if (btp_image_parse_hex(line, len, &i, &base) < 0)
        FAIL_AT(i);
    if (i >= len || line[i] != ' ')
        FAIL_AT(i);
    size_t end_at = ++i;
    if (len - i < 2 || line[i] != '0' || line[i + 1] != 'x')
        FAIL_AT(i);
    i += 2;
    if (btp_image_parse_hex(line, len, &i, &end) < 0)
        FAIL_AT(i);
    if (base > mask || end > mask) {
        st = BTP_E_VALUE_TOO_WIDE;
        FAIL_AT(base > mask ? 6 : end_at);
    }
    if (end < base)
        FAIL_AT(end_at);
    if (i >= len || line[i] != ' ')
        FAIL_AT(i);
    i++;
    /* build ID */
    size_t id_at = i, id_digits = 0;
    while (i < len && line[i] != ' ')
        i++;
    id_digits = i - id_at;
    int no_id = id_digits == 1 && line[id_at] == '-';
    if (!no_id) {
        if (id_digits == 0 || id_digits % 2 || id_digits / 2 > BTP_IMAGE_MAX_BUILD_ID)
            FAIL_AT(id_at);
        for (size_t k = id_at; k < i; k++)
            if (btp_hex_digit((unsigned char)line[k]) < 0)
                FAIL_AT(k);
    }
    if (i >= len || line[i] != ' ')
        FAIL_AT(i);
    i++;
    /* path: the rest; check the escapes and measure before storing */
    size_t path_at = i, path_len = 0;
    int no_path = len - i == 1 && line[i] == '-';
    if (i == len)
        FAIL_AT(i);
    for (size_t k = i; !no_path && k < len; path_len++) {
        if (line[k] == 0)
            FAIL_AT(k); /* a C string cannot hold it: the path would be cut there */
        if (line[k] != '\\') {
            k++;
            continue;
        }
        if (k + 1 < len && (line[k + 1] == '\\' || line[k + 1] == 'n')) {
            k += 2;
        } else if (k + 3 < len && line[k + 1] == 'x' && hex_byte_at(line, k + 2) > 0) {
            k += 4; /* any byte but NUL (a path cannot hold one) */
        } else {
            FAIL_AT(k);
        }
    }
#undef FAIL_AT
    btp_image *im = btp_image_buf_image(buf);
    unsigned char *id = no_id ? NULL : (unsigned char *)btp_image_buf_bytes(buf, id_digits / 2);
    char *path = no_path ? NULL : btp_image_buf_bytes(buf, path_len + 1);
    if (!im || (!no_id && !id) || (!no_path && !path))
        return BTP_E_BUFFER_TOO_SMALL;
    for (size_t k = 0; !no_id && k < id_digits / 2; k++)
        id[k] = (unsigned char)hex_byte_at(line, id_at + 2 * k);
    size_t o = 0;
    for (size_t k = path_at; !no_path && k < len;) {
        if (line[k] != '\\') {
            path[o++] = line[k++];
        } else if (line[k + 1] == '\\') {
            path[o++] = '\\';
            k += 2;
        } else if (line[k + 1] == 'n') {
            path[o++] = '\n';
            k += 2;
        } else {
            path[o++] = (char)hex_byte_at(line, k + 2);
            k += 4;
        }
    }
    if (path)
        path[o] = 0;
    im->name = NULL;
    im->path = path;
    im->build_id = id;
    im->build_id_len = no_id ? 0 : id_digits / 2;
    im->base = base;
    im->end_of_text = end;
    return BTP_OK;
fail:
    if (error_offset)
        *error_offset = at;
    return st;
}
