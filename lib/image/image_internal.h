/* What the image-map parsers share (private): appending to a btp_image_buf
 * and reading the hex fields of text lines. Freestanding. */
#ifndef BTPACK_IMAGE_INTERNAL_H
#define BTPACK_IMAGE_INTERNAL_H

#include <btpack/imagemap.h>

/* Room for n bytes in buf->bytes: a pointer to them, or NULL when they do
 * not fit (buf->n_bytes still grows by n, so it ends up as the size needed). */
char *btp_image_buf_bytes(btp_image_buf *buf, size_t n);

/* The next image slot, or NULL when there is none (n_images still grows). */
btp_image *btp_image_buf_image(btp_image_buf *buf);

/* Parse 1..16 hex digits (either case) at p[*i..end) up to the first
 * non-hex byte into *out; *i moves past them. 0, or -1 when there are none
 * or more than 16. */
int btp_image_parse_hex(const char *p, size_t end, size_t *i, uint64_t *out);

#endif
