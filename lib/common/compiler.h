/* Compiler hints shared by the codecs (private). */
#ifndef BTPACK_COMPILER_H
#define BTPACK_COMPILER_H

#include <stdint.h>

/* BTP_CODEC_SMALL: 1 compiles the codecs without their fast paths, for
 * code size (the Meson option codec_size; the default on bare metal). The
 * fast paths only ever take inputs the general paths handle too and give
 * the same bytes, results and error offsets, so both builds pass the same
 * tests; the general paths are what the small build keeps. */
#ifndef BTP_CODEC_SMALL
#define BTP_CODEC_SMALL 0
#endif

/* 1 where counting leading zeros is a call into libgcc (several hundred
 * bytes with its table) because the core has no instruction for it:
 * ARMv6-M, RISC-V without Zbb. The small build then counts by a loop. */
#if (defined(__arm__) && !defined(__ARM_FEATURE_CLZ)) || (defined(__riscv) && !defined(__riscv_zbb))
#define BTP_CLZ_IS_CALL 1
#else
#define BTP_CLZ_IS_CALL 0
#endif

/* Forces inlining where a constant argument must specialise the body. */
#if defined(__GNUC__)
#define BTP_ALWAYS_INLINE __attribute__((always_inline)) inline
#else
#define BTP_ALWAYS_INLINE inline
#endif

/* Hides an integer's value from the optimiser, so that a loop using it is
 * not turned into a libc call (a copying loop into memcpy or memmove, a
 * byte loop into strlen or memchr): the freestanding code must link
 * without libc. */
#if defined(__GNUC__)
#define BTP_OPAQUE(x) __asm__("" : "+r"(x))
#else
#define BTP_OPAQUE(x) ((void)0)
#endif

/* Keeps a hot loop out of its caller, so that the caller's variables do not
 * compete with the loop's for registers. */
#if defined(__GNUC__)
#define BTP_NOINLINE __attribute__((noinline))
#else
#define BTP_NOINLINE
#endif

/* Number of leading zero bits of x (x != 0): one instruction where the
 * compiler has a builtin, no libc either way. */
static inline unsigned btp_clz64(uint64_t x)
{
#if defined(__GNUC__)
    return (unsigned)__builtin_clzll(x);
#else
    unsigned n = 0;
    while (!(x >> 63)) {
        x <<= 1;
        n++;
    }
    return n;
#endif
}

#endif
