/* Compiler hints shared by the codecs (private). */
#ifndef BTPACK_COMPILER_H
#define BTPACK_COMPILER_H

#include <stdint.h>

/* Forces inlining where a constant argument must specialise the body. */
#if defined(__GNUC__)
#define BTP_ALWAYS_INLINE __attribute__((always_inline)) inline
#else
#define BTP_ALWAYS_INLINE inline
#endif

/* Keeps a hot loop out of its caller, so that the caller's variables do not
 * compete with the loop's for registers. */
#if defined(__GNUC__)
#define BTP_NOINLINE __attribute__((noinline))
#else
#define BTP_NOINLINE
#endif

/* Hides the value of an integer from the optimiser, so that a loop using it
 * is not turned into a libc call (a byte loop into strlen or memchr): the
 * freestanding code must link without libc. */
#if defined(__GNUC__)
#define BTP_OPAQUE(x) __asm__("" : "+r"(x))
#else
#define BTP_OPAQUE(x) ((void)0)
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
