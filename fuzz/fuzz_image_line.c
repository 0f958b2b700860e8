/*
 * Fuzz target: `image` lines (btp_image_line_parse, btp_image_line_format),
 * as crash records and trace logs carry them.
 *
 * Input: byte 0 bits 0-1 choose the word size (16, 32, 64, 64); the rest is
 * text whose lines ('\n'-separated) are parsed one by one, each from a
 * buffer ending at a guard page. Properties, per line:
 *  - the status is documented; syntax and width errors carry an offset
 *    inside the line;
 *  - sizing: with no storage a good line says exactly what it needs (one
 *    image, n bytes); with exactly that (ending at guard pages) it parses,
 *    with one byte fewer it says BTP_E_BUFFER_TOO_SMALL and the same needs;
 *  - the image fits the word, base <= end_of_text, a build ID of at most 64
 *    bytes inside the storage, a NUL-terminated path inside the storage (or
 *    none), no name; the storage used is exactly the build ID and the path
 *    (no part of the line lost behind a NUL);
 *  - written again (into every capacity up to the size needed: a clean
 *    BTP_E_BUFFER_TOO_SMALL below it) and parsed, it is the same image, and
 *    writing that gives the same line (the written form is canonical).
 */
#include "fuzz.h"
#include "guard.h"

#include <btpack/imagemap.h>
#include <string.h>

static fuzz_guard in_guard, img_guard, bytes_guard, out_guard, back_img_guard, back_bytes_guard,
    again_guard;

static int same_image(const btp_image *a, const btp_image *b)
{
    if (a->base != b->base || a->end_of_text != b->end_of_text ||
        a->build_id_len != b->build_id_len ||
        (a->build_id_len && memcmp(a->build_id, b->build_id, a->build_id_len) != 0))
        return 0;
    if (!a->path || !b->path)
        return !a->path && !b->path;
    return strcmp(a->path, b->path) == 0;
}

static btp_status parse(const char *line, size_t len, unsigned word_bits, size_t max_bytes,
                        fuzz_guard *ig, fuzz_guard *bg, btp_image_buf *buf, size_t *off)
{
    memset(buf, 0, sizeof *buf);
    buf->images = (btp_image *)fuzz_guard_buf(ig, sizeof(btp_image));
    buf->max_images = 1;
    buf->bytes = max_bytes ? (char *)fuzz_guard_buf(bg, max_bytes) : NULL;
    buf->max_bytes = max_bytes;
    *off = (size_t)-1;
    return btp_image_line_parse(line, len, word_bits, buf, off);
}

static void one_line(const char *line, size_t len, unsigned word_bits)
{
    const uint64_t mask = btp_word_mask(word_bits);
    btp_image_buf none = {0};
    size_t off = (size_t)-1;
    btp_status st = btp_image_line_parse(line, len, word_bits, &none, &off);
    switch (st) {
    case BTP_E_BUFFER_TOO_SMALL:
        break;
    case BTP_E_IMAGE_SYNTAX:
    case BTP_E_VALUE_TOO_WIDE:
        FUZZ_CHECK(off <= len, "error offset %zu of %zu", off, len);
        return;
    default:
        FUZZ_CHECK(0, "undocumented status %d without storage", st);
    }
    FUZZ_CHECK(none.n_images == 1 && none.n_bytes <= len, "needs %zu images, %zu bytes",
               none.n_images, none.n_bytes);
    const size_t need = none.n_bytes;
    btp_image_buf buf;
    if (need) {
        st = parse(line, len, word_bits, need - 1, &img_guard, &bytes_guard, &buf, &off);
        FUZZ_CHECK(st == BTP_E_BUFFER_TOO_SMALL && buf.n_bytes == need,
                   "one byte fewer: status %d", st);
    }
    st = parse(line, len, word_bits, need, &img_guard, &bytes_guard, &buf, &off);
    FUZZ_CHECK(st == BTP_OK && buf.n_images == 1 && buf.n_bytes == need,
               "exact storage: status %d", st);
    const btp_image *im = &buf.images[0];
    FUZZ_CHECK(im->base <= mask && im->end_of_text <= mask && im->base <= im->end_of_text,
               "addresses");
    FUZZ_CHECK(!im->name, "a name");
    FUZZ_CHECK(im->build_id_len <= 64 && (!im->build_id_len) == (!im->build_id), "build ID");
    if (im->build_id_len)
        FUZZ_CHECK((const char *)im->build_id >= buf.bytes &&
                       (const char *)im->build_id + im->build_id_len <= buf.bytes + need,
                   "build ID outside the storage");
    if (im->path) {
        size_t at = (size_t)(im->path - buf.bytes);
        FUZZ_CHECK(im->path >= buf.bytes && at < need &&
                       strnlen(im->path, need - at) < need - at,
                   "path outside the storage or not terminated");
    }
    /* the storage is the build ID and the path, nothing cut off (a NUL) */
    FUZZ_CHECK(need == im->build_id_len + (im->path ? strlen(im->path) + 1 : 0),
               "%zu bytes used for a build ID of %zu and a path of %zu", need, im->build_id_len,
               im->path ? strlen(im->path) : 0);

    /* written again: every capacity below the size is refused cleanly */
    size_t wlen = 0;
    FUZZ_CHECK(btp_image_line_format(im, NULL, 0, &wlen) == BTP_E_BUFFER_TOO_SMALL && wlen > 0,
               "sizing the line");
    for (size_t cap = 0; cap < wlen; cap = cap < 64 ? cap + 1 : cap * 2) {
        char *o = (char *)fuzz_guard_buf(&out_guard, cap);
        size_t l = 0;
        FUZZ_CHECK(btp_image_line_format(im, o, cap, &l) == BTP_E_BUFFER_TOO_SMALL && l == wlen,
                   "capacity %zu of %zu", cap, wlen);
    }
    char *out = (char *)fuzz_guard_buf(&out_guard, wlen);
    size_t l = 0;
    FUZZ_CHECK(btp_image_line_format(im, out, wlen, &l) == BTP_OK && l == wlen, "writing");

    btp_image_buf back;
    st = parse(out, wlen, word_bits, wlen + 1, &back_img_guard, &back_bytes_guard, &back, &off);
    FUZZ_CHECK(st == BTP_OK, "the written line %.*s does not read back: status %d at %zu",
               (int)wlen, out, st, off);
    FUZZ_CHECK(same_image(im, &back.images[0]), "the image changed: %.*s", (int)wlen, out);
    size_t l2 = 0;
    char *again = (char *)fuzz_guard_buf(&again_guard, wlen);
    FUZZ_CHECK(btp_image_line_format(&back.images[0], again, wlen, &l2) == BTP_OK && l2 == wlen &&
                   memcmp(again, out, wlen) == 0,
               "not canonical: %.*s", (int)wlen, out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const unsigned words[4] = {16, 32, 64, 64};
    if (size < 1)
        return 0;
    unsigned word_bits = words[data[0] & 3];
    const char *text = (const char *)data + 1;
    size_t n = size - 1;
    for (size_t b = 0; b <= n;) {
        const char *nl = memchr(text + b, '\n', n - b);
        size_t e = nl ? (size_t)(nl - text) : n;
        one_line((const char *)fuzz_guard_copy(&in_guard, text + b, e - b), e - b, word_bits);
        b = e + 1;
    }
    return 0;
}
