/*
 * MSB-first bit writer and reader with sticky errors (private).
 *
 * Both work on a caller's byte buffer and never touch a byte outside it.
 * The writer keeps counting the bits it was asked for after the buffer is
 * full, so a caller learns the size it needs; the reader stops at the end of
 * its input and remembers where the first read failed. Callers check the
 * sticky state once per field or record instead of after every bit.
 * Everything is inline arithmetic: safe in signal handlers.
 */
#ifndef BTPACK_BITIO_H
#define BTPACK_BITIO_H

#include <stddef.h>
#include <stdint.h>

#include "common/be64.h"

typedef struct bit_writer {
    uint8_t *buf;
    size_t cap_bits; /* bits the buffer holds */
    size_t pos;      /* bits requested so far (may exceed cap_bits) */
} bit_writer;

static inline void bw_init(bit_writer *w, uint8_t *buf, size_t cap_bytes)
{
    w->buf = buf;
    /* A buffer larger than SIZE_MAX/8 bytes is not a real case; clamp. */
    w->cap_bits = cap_bytes > SIZE_MAX / 8 ? SIZE_MAX & ~(size_t)7 : cap_bytes * 8;
    w->pos = 0;
}

static inline int bw_overflowed(const bit_writer *w)
{
    return w->pos > w->cap_bits;
}

/* Append the low n bits of v (n <= 64), most significant first. Bits that
 * do not fit are counted but not stored. Bytes are cleared as they are
 * entered, so unused bits of the last byte are zero. */
static inline void bw_put(bit_writer *w, uint64_t v, unsigned n)
{
    /* Up to a byte's worth of bits per step (what is left of the current
     * byte), not one bit: at most 9 steps for 64 bits. */
    while (n) {
        size_t p = w->pos;
        unsigned off = (unsigned)(p & 7), take = 8 - off;
        if (take > n)
            take = n;
        n -= take;
        w->pos += take;
        if (p >= w->cap_bits)
            continue; /* counted, not stored: cap_bits is a whole number of bytes */
        unsigned bits = (unsigned)(v >> n) & ((1u << take) - 1); /* the next `take` bits */
        uint8_t *b = &w->buf[p >> 3];
        if (off == 0)
            *b = 0;
        *b = (uint8_t)(*b | bits << (8 - off - take));
    }
}

/* Bytes used so far (the last one partly). */
static inline size_t bw_bytes(const bit_writer *w)
{
    return (w->pos + 7) / 8;
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
