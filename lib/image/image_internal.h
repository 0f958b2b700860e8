/* What the image-map parsers share (private): appending to a btp_image_buf
 * and reading the hex fields of text lines. Freestanding. */
#ifndef BTPACK_IMAGE_INTERNAL_H
#define BTPACK_IMAGE_INTERNAL_H

#include <btpack/imagemap.h>

#include "common/hexdigit.h"

/* Inline, so that each parser stands alone (the crash handler links only
 * the image-line writer). */

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

#endif
