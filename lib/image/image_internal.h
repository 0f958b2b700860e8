/* What the image-map parsers share (private): appending to a btp_image_buf
 * and reading the hex fields of text lines. Freestanding. */
#ifndef BTPACK_IMAGE_INTERNAL_H
#define BTPACK_IMAGE_INTERNAL_H

#include <btpack/imagemap.h>

#include <string.h>

#include "common/compiler.h"
#include "common/hexdigit.h"

/* Inline, so that each parser stands alone (the crash handler links only
 * the image-line writer). */

/* a[0..n) == b[0..n), by hand: lib/image, like lib/codec, calls no libc
 * beyond memcpy and memset (the crash handler runs its parsers). */
static inline int btp_image_same_bytes(const char *a, const char *b, size_t n)
{
    size_t i = 0;
    while (i < n && a[i] == b[i])
        i++;
    return i == n;
}

/* Room for n bytes in buf->bytes: a pointer to them, or NULL when they do
 * not fit (buf->n_bytes still grows by n, so it ends up as the size needed). */
static inline char *btp_image_buf_bytes(btp_image_buf *buf, size_t n)
{
    size_t at = buf->n_bytes;
    buf->n_bytes += n;
    if (!buf->bytes || at > buf->max_bytes || n > buf->max_bytes - at)
        return NULL;
    return buf->bytes + at;
}

/* The next image slot, or NULL when there is none (n_images still grows). */
static inline btp_image *btp_image_buf_image(btp_image_buf *buf)
{
    size_t at = buf->n_images++;
    return buf->images && at < buf->max_images ? &buf->images[at] : NULL;
}

/* Point *map (cleared first) at all of buf's images, word size word_bits:
 * BTP_OK, or BTP_E_BUFFER_TOO_SMALL when something did not fit (buf's
 * counts then say what a retry needs). */
static inline btp_status btp_image_buf_finish(const btp_image_buf *buf, unsigned word_bits,
                                              btp_image_map *map)
{
    memset(map, 0, sizeof *map);
    map->word_bits = word_bits;
    if (buf->n_images > buf->max_images || buf->n_bytes > buf->max_bytes ||
        (buf->n_bytes && !buf->bytes) || (buf->n_images && !buf->images))
        return BTP_E_BUFFER_TOO_SMALL;
    map->images = buf->images;
    map->n_images = buf->n_images;
    return BTP_OK;
}

/* Parse 1..16 hex digits (either case) at p[*i..end) up to the first
 * non-hex byte into *out; *i moves past them. 0, or -1 when there are none
 * or more than 16. */
static inline int btp_image_parse_hex(const char *p, size_t end, size_t *i, uint64_t *out)
{
    uint64_t v = 0;
    size_t k = *i, digits = 0;
    for (int d; k < end && (d = btp_hex_digit((unsigned char)p[k])) >= 0; k++, digits++) {
        if (digits == 16)
            return -1;
        v = v << 4 | (unsigned)d;
    }
    if (!digits)
        return -1;
    *i = k;
    *out = v;
    return 0;
}

/* The fields of one /proc/PID/maps line. */
typedef struct btp_procmaps_fields {
    uint64_t start, end, offset, inode;
    char perms[4];    /* [r-][w-][x-][ps] */
    const char *path; /* into the line; path_len 0 when there is none */
    size_t path_len;
} btp_procmaps_fields;

/*
 * Parse one /proc/PID/maps line t[b..e) (without its newline; a trailing
 * '\r' is ignored): `START-END PERMS OFFSET DEV INODE [PATH]`, every field
 * checked as btp_image_map_from_procmaps() says. BTP_OK, or
 * BTP_E_MAPS_SYNTAX / BTP_E_VALUE_TOO_WIDE with *at at the bad field.
 * Freestanding, async-signal-safe (the crash handler reads
 * /proc/self/maps with it).
 */
btp_status btp_procmaps_line(const char *t, size_t b, size_t e, unsigned word_bits,
                             btp_procmaps_fields *f, size_t *at);

#endif
