/*
 * Big- and little-endian 64- and 32-bit loads and stores on byte buffers (private). Written
 * byte by byte, which compilers turn into one load or store and a byte
 * swap; no libc, so usable in the async-signal-safe encoders.
 */
#ifndef BTPACK_BE64_H
#define BTPACK_BE64_H

#include <stdint.h>

#include "common/compiler.h"

/* The 8 bytes at p as a big-endian number. */
static inline uint64_t load_be64(const uint8_t *p)
{
    return (uint64_t)p[0] << 56 | (uint64_t)p[1] << 48 | (uint64_t)p[2] << 40 |
           (uint64_t)p[3] << 32 | (uint64_t)p[4] << 24 | (uint64_t)p[5] << 16 |
           (uint64_t)p[6] << 8 | (uint64_t)p[7];
}

/* The 2 bytes at p as a big-endian number: one load and a rotation (the
 * bytes one by one, shifted and ORed, stay two loads with gcc 12). */
static inline uint16_t load_be16(const uint8_t *p)
{
#if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint16_t v;
    __builtin_memcpy(&v, p, 2); /* a builtin, not libc, as in store_be64 */
    return __builtin_bswap16(v);
#else
    return (uint16_t)(p[0] << 8 | p[1]);
#endif
}

/* v with its bytes in the opposite order (a builtin, not libc). */
static inline uint64_t byte_swap64(uint64_t v)
{
#if defined(__GNUC__)
    return __builtin_bswap64(v);
#else
    v = (v & 0x00ff00ff00ff00ffu) << 8 | (v >> 8 & 0x00ff00ff00ff00ffu);
    v = (v & 0x0000ffff0000ffffu) << 16 | (v >> 16 & 0x0000ffff0000ffffu);
    return v << 32 | v >> 32;
#endif
}

/* x shifted right by c mod 64 (logical, arithmetic): the low 6 bits of c
 * are the count, as x86 shift instructions take it, so a caller whose
 * count is a multiple of 8 plus junk above bit 5 needs no masking on its
 * critical path. Elsewhere the masking is explicit. */
static inline uint64_t shr64(uint64_t x, unsigned c)
{
#if defined(__GNUC__) && defined(__x86_64__)
    __asm__("shrq %%cl, %0" : "+r"(x) : "c"(c));
    return x;
#else
    return x >> (c & 63);
#endif
}

static inline int64_t sar64(int64_t x, unsigned c)
{
#if defined(__GNUC__) && defined(__x86_64__)
    __asm__("sarq %%cl, %0" : "+r"(x) : "c"(c));
    return x;
#else
    /* Right shift of a negative value is implementation-defined in C;
     * every compiler we support shifts arithmetically. */
    return x >> (c & 63);
#endif
}

/* The 8 bytes at p as a little-endian number. */
static inline uint64_t load_le64(const uint8_t *p)
{
    return (uint64_t)p[7] << 56 | (uint64_t)p[6] << 48 | (uint64_t)p[5] << 40 |
           (uint64_t)p[4] << 32 | (uint64_t)p[3] << 24 | (uint64_t)p[2] << 16 |
           (uint64_t)p[1] << 8 | (uint64_t)p[0];
}

/* The 4 bytes at p as a little-endian number. (The 32-bit pair is forced
 * inline, as the CBF codecs had them: as plain inline functions the CBF
 * encoder through btp_frame took 37.0 instead of 36.1 instructions a frame
 * on sqlite3_i386, bench/ir.py.) */
static BTP_ALWAYS_INLINE uint32_t load_le32(const uint8_t *p)
{
    return (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | (uint32_t)p[0];
}

/* Write v big-endian to p[0..4). */
static BTP_ALWAYS_INLINE void store_be32(uint8_t *p, uint32_t v)
{
#if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    v = __builtin_bswap32(v); /* a builtin, not libc, as in store_be64 */
    __builtin_memcpy(p, &v, 4);
#else
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
#endif
}

/* Write v big-endian to p[0..8). */
static inline void store_be64(uint8_t *p, uint64_t v)
{
#if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    /* A builtin, not libc: compiles to one byte swap and one store. */
    v = __builtin_bswap64(v);
    __builtin_memcpy(p, &v, 8);
#else
    p[0] = (uint8_t)(v >> 56);
    p[1] = (uint8_t)(v >> 48);
    p[2] = (uint8_t)(v >> 40);
    p[3] = (uint8_t)(v >> 32);
    p[4] = (uint8_t)(v >> 24);
    p[5] = (uint8_t)(v >> 16);
    p[6] = (uint8_t)(v >> 8);
    p[7] = (uint8_t)v;
#endif
}

#endif
