/*
 * MSB-first bit writer and reader with sticky errors (private).
 *
 * The reader works on a caller's byte buffer and never touches a byte
 * outside it: it stops at the end of its input and remembers where the
 * first read failed, and callers check the sticky state once per field or
 * record instead of after every bit. The writer writes whole 8-byte words
 * (see below).
 * Everything is inline arithmetic: safe in signal handlers.
 */
#ifndef BTPACK_BITIO_H
#define BTPACK_BITIO_H

#include <stddef.h>
#include <stdint.h>

#include "common/be64.h"

/*
 * The writer keeps the bits of the byte being filled in a 64-bit
 * accumulator and, at every field, stores the accumulator's pending bits
 * left-aligned as one big-endian 8-byte word at the current byte: one
 * store a field instead of a read-modify-write a byte. So it needs 8
 * bytes of slack after the last byte it completes (the caller sizes the
 * buffer for that; bytes past the end of the bits are written with
 * zeros or later overwritten). Bits after the last field in its last byte
 * are zero.
 */
typedef struct bit_writer {
    uint8_t *p;   /* byte holding the first pending bit */
    uint64_t acc; /* the pending bits in the low `bits` bits (above: junk) */
    unsigned bits; /* 0..7 */
} bit_writer;

static inline void bw_init(bit_writer *w, uint8_t *buf)
{
    w->p = buf;
    w->acc = 0;
    w->bits = 0;
}

/* Append the low n bits of v (1 <= n <= 57, v < 2^n), most significant
 * first (at most 7 bits are pending, so they and n fit 64). */
static inline void bw_put(bit_writer *w, uint64_t v, unsigned n)
{
    unsigned bits = w->bits + n;
    w->acc = w->acc << n | v;
    store_be64(w->p, w->acc << (64 - bits));
    w->p += bits >> 3;
    w->bits = bits & 7;
}

/* The same for 1 <= n <= 64. */
static inline void bw_put64(bit_writer *w, uint64_t v, unsigned n)
{
    if (n > 57) {
        bw_put(w, v >> 32, n - 32);
        v &= 0xffffffffu;
        n = 32;
    }
    bw_put(w, v, n);
}

/* Bytes written so far (the last one partly) from buf. */
static inline size_t bw_bytes(const bit_writer *w, const uint8_t *buf)
{
    return (size_t)(w->p - buf) + (w->bits != 0);
}

typedef struct bit_reader {
    const uint8_t *buf;
    size_t len_bits;
    size_t pos;     /* next bit */
    int failed;     /* sticky: a read ran past the end */
    size_t fail_at; /* bit offset of the read that failed */
} bit_reader;

static inline void br_init(bit_reader *r, const uint8_t *buf, size_t len_bytes)
{
    r->buf = buf;
    r->len_bits = len_bytes > SIZE_MAX / 8 ? SIZE_MAX & ~(size_t)7 : len_bytes * 8;
    r->pos = 0;
    r->failed = 0;
    r->fail_at = 0;
}

static inline size_t br_left(const bit_reader *r)
{
    return r->len_bits - r->pos;
}

/* Read n bits (n <= 64) MSB-first. If fewer than n remain nothing is
 * consumed, 0 is returned and the reader fails (sticky). */
static inline uint64_t br_get(bit_reader *r, unsigned n)
{
    if (r->failed)
        return 0;
    if (n > br_left(r)) {
        r->failed = 1;
        r->fail_at = r->pos;
        return 0;
    }
    size_t byte = r->pos >> 3;
    unsigned off = (unsigned)(r->pos & 7);
    if (n && n + off <= 64 && (r->len_bits >> 3) - byte >= 8) {
        /* The 8 bytes from the cursor's byte are inside the buffer and hold
         * all n bits: one big-endian load and two shifts. */
        uint64_t w = load_be64(r->buf + byte);
        r->pos += n;
        return (w << off) >> (64 - n);
    }
    /* Near the end of the buffer, a byte's worth of bits per step: the
     * length check above covers all n bits, so each step takes what is
     * left of the current byte (at most 9 steps for 64 bits). */
    uint64_t v = 0;
    while (n) {
        unsigned take = 8 - off;
        if (take > n)
            take = n;
        unsigned bits = (uint8_t)(r->buf[r->pos >> 3] << off); /* from the cursor on */
        v = v << take | bits >> (8 - take);
        r->pos += take;
        n -= take;
        off = 0;
    }
    return v;
}

#endif
