/*
 * Fuzz target: the /proc/PID/maps parser (btp_image_map_from_procmaps).
 *
 * Input: byte 0 bits 0-1 choose the word size (16, 32, 64, 64); the rest is
 * the maps text, in a buffer ending at a guard page. Properties:
 *  - the status is documented; syntax and width errors carry an offset
 *    inside the text;
 *  - sizing: with no storage the parser says exactly how many images and
 *    bytes it needs; with exactly that (arrays ending at guard pages) it
 *    succeeds and uses all of it, with one image or one byte fewer it says
 *    BTP_E_BUFFER_TOO_SMALL and still counts the same needs;
 *  - every image fits the word, has base <= end_of_text, and a path that
 *    starts with '/', holds no newline and ends inside the storage (or no
 *    path and the name "[vdso]"), and no build ID; the storage used is
 *    exactly the paths (none cut short by a NUL in the text);
 *  - each image written as an `image` line (btp_image_line_format) reads
 *    back (btp_image_line_parse) as the same image: what the CLI stores in
 *    a trace log from a maps file can be read again;
 *  - btp_image_map_find places the first byte of each non-empty image in an
 *    image that holds it.
 */
#include "fuzz.h"
#include "guard.h"

#include <btpack/imagemap.h>
#include <string.h>

static fuzz_guard in_guard, img_guard, bytes_guard, line_guard, back_img_guard, back_bytes_guard;

static btp_status parse(const char *text, size_t n, unsigned word_bits, size_t max_images,
                        size_t max_bytes, btp_image_buf *buf, btp_image_map *map, size_t *off)
{
    memset(buf, 0, sizeof *buf);
    buf->images = max_images ? (btp_image *)fuzz_guard_buf(&img_guard,
                                                           max_images * sizeof(btp_image))
                             : NULL;
    buf->max_images = max_images;
    buf->bytes = max_bytes ? (char *)fuzz_guard_buf(&bytes_guard, max_bytes) : NULL;
    buf->max_bytes = max_bytes;
    *off = (size_t)-1;
    return btp_image_map_from_procmaps(text, n, word_bits, buf, map, off);
}

/* One image as an image line and back. */
static void check_line_round_trip(const btp_image *im, unsigned word_bits)
{
    size_t need = 0;
    FUZZ_CHECK(btp_image_line_format(im, NULL, 0, &need) ==
                   (need ? BTP_E_BUFFER_TOO_SMALL : BTP_OK),
               "sizing the image line");
    char *line = (char *)fuzz_guard_buf(&line_guard, need);
    size_t len = 0;
    FUZZ_CHECK(btp_image_line_format(im, line, need, &len) == BTP_OK && len == need,
               "image line of %zu bytes", need);
    btp_image_buf back = {0};
    back.images = (btp_image *)fuzz_guard_buf(&back_img_guard, sizeof(btp_image));
    back.max_images = 1;
    back.bytes = (char *)fuzz_guard_buf(&back_bytes_guard, len + 1);
    back.max_bytes = len + 1;
    size_t off = 0;
    btp_status st = btp_image_line_parse(line, len, word_bits, &back, &off);
    FUZZ_CHECK(st == BTP_OK, "the image line %.*s does not read back: status %d at %zu",
               (int)len, line, st, off);
    const btp_image *b = &back.images[0];
    FUZZ_CHECK(b->base == im->base && b->end_of_text == im->end_of_text, "addresses changed");
    FUZZ_CHECK(b->build_id_len == 0, "a build ID appeared");
    if (im->path)
        FUZZ_CHECK(b->path && strcmp(b->path, im->path) == 0, "path changed");
    else
        FUZZ_CHECK(!b->path, "a path appeared");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const unsigned words[4] = {16, 32, 64, 64};
    if (size < 1)
        return 0;
    unsigned word_bits = words[data[0] & 3];
    size_t n = size - 1;
    const char *text = (const char *)fuzz_guard_copy(&in_guard, data + 1, n);
    const uint64_t mask = btp_word_mask(word_bits);

    btp_image_buf buf;
    btp_image_map map;
    size_t off;
    btp_status st = parse(text, n, word_bits, 0, 0, &buf, &map, &off);
    switch (st) {
    case BTP_OK:
        FUZZ_CHECK(buf.n_images == 0 && buf.n_bytes == 0, "OK without storage but %zu images",
                   buf.n_images);
        return 0;
    case BTP_E_BUFFER_TOO_SMALL:
        break;
    case BTP_E_MAPS_SYNTAX:
    case BTP_E_VALUE_TOO_WIDE:
        FUZZ_CHECK(off <= n, "error offset %zu of %zu", off, n);
        return 0;
    default:
        FUZZ_CHECK(0, "undocumented status %d", st);
    }
    const size_t need_images = buf.n_images, need_bytes = buf.n_bytes;
    FUZZ_CHECK(need_images > 0 && need_images <= n && need_bytes <= n + need_images,
               "needs %zu images, %zu bytes for %zu bytes of text", need_images, need_bytes, n);

    /* one image or one byte fewer: too small, same needs */
    st = parse(text, n, word_bits, need_images - 1, need_bytes, &buf, &map, &off);
    FUZZ_CHECK(st == BTP_E_BUFFER_TOO_SMALL && buf.n_images == need_images &&
                   buf.n_bytes == need_bytes,
               "one image fewer: status %d", st);
    if (need_bytes) {
        st = parse(text, n, word_bits, need_images, need_bytes - 1, &buf, &map, &off);
        FUZZ_CHECK(st == BTP_E_BUFFER_TOO_SMALL && buf.n_images == need_images &&
                       buf.n_bytes == need_bytes,
                   "one byte fewer: status %d", st);
    }

    st = parse(text, n, word_bits, need_images, need_bytes, &buf, &map, &off);
    FUZZ_CHECK(st == BTP_OK, "exact storage: status %d", st);
    FUZZ_CHECK(buf.n_images == need_images && buf.n_bytes == need_bytes, "used other sizes");
    FUZZ_CHECK(map.word_bits == word_bits && map.n_images == need_images &&
                   map.images == buf.images && !map.platform,
               "map fields");
    size_t path_bytes = 0;
    for (size_t i = 0; i < map.n_images; i++) {
        const btp_image *im = &map.images[i];
        FUZZ_CHECK(im->base <= mask && im->end_of_text <= mask, "image %zu beyond the word", i);
        FUZZ_CHECK(im->base <= im->end_of_text, "image %zu: base 0x%llx > end 0x%llx", i,
                   (unsigned long long)im->base, (unsigned long long)im->end_of_text);
        FUZZ_CHECK(!im->build_id && !im->build_id_len, "image %zu has a build ID", i);
        if (im->path) {
            size_t at = (size_t)(im->path - buf.bytes);
            FUZZ_CHECK(im->path >= buf.bytes && at < need_bytes, "image %zu path outside", i);
            size_t len = strnlen(im->path, need_bytes - at);
            FUZZ_CHECK(len < need_bytes - at, "image %zu path not terminated", i);
            FUZZ_CHECK(im->path[0] == '/' && !memchr(im->path, '\n', len), "image %zu path", i);
            FUZZ_CHECK(!im->name, "image %zu: a name with a path", i);
            path_bytes += len + 1;
        } else {
            FUZZ_CHECK(im->name && strcmp(im->name, "[vdso]") == 0, "image %zu: no path", i);
        }
        check_line_round_trip(im, word_bits);
        if (im->base < im->end_of_text) {
            const btp_image *f = btp_image_map_find(&map, im->base);
            FUZZ_CHECK(f && f->base <= im->base && im->base < f->end_of_text,
                       "image %zu's base is in no image", i);
        }
    }
    /* the storage is the paths, nothing cut off (a NUL in the text) */
    FUZZ_CHECK(path_bytes == need_bytes, "%zu bytes used, paths of %zu", need_bytes, path_bytes);
    return 0;
}
