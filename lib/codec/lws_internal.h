/* Facts of the libwebsockets bitstream shared by its encoder, decoder and
 * text functions (see spec/lws.md). */
#ifndef BTPACK_LWS_INTERNAL_H
#define BTPACK_LWS_INTERNAL_H

#include <btpack/lws.h>

#include "common/compiler.h"

/* x86-64 with GCC or Clang: the codecs have copies for processors with the
 * instructions of x86-64-v3 they use, chosen at run time (BTP_CPU_V3). */
#include "common/cpu_x86.h"
#define LWS_X86 BTP_CPU_X86

/* Nominal field widths; every field is followed by one extra bit. */
enum {
    LWS_W_DEPTH = 5,
    LWS_W_KIND = 1,
    LWS_W_COUNT = 6,
    LWS_W_REF = 3,
    LWS_W_SIGN = 1,
    LWS_REFS = 8,          /* a delta reaches 1..8 frames back */
    LWS_TRAILER_BITS = 16
};

static inline int lws_word_ok(unsigned word_bits)
{
    return word_bits == 32 || word_bits == 64;
}

/* libwebsockets' bit count: index of the highest set bit + 1, at least 1. */
static inline unsigned lws_sigbits(uint64_t v)
{
    /* One count of leading zeros instead of a loop over up to 64 bits: the
     * encoder asks this for every candidate reference of every frame. The
     * small build loops where the count would be a libgcc call. */
#if defined(__GNUC__) && !(BTP_CODEC_SMALL && BTP_CLZ_IS_CALL)
    return (63u ^ (unsigned)__builtin_clzll(v | 1)) + 1; /* 0 counts as 1 bit */
#else
    unsigned n = 0;
    while (v) {
        n++;
        v >>= 1;
    }
    return n ? n : 1;
#endif
}

/* 64-bit truncation signature of a field of n bits holding v: libwebsockets'
 * 64-bit encoder writes, for bit k, bit (k mod 32) of the value, except that
 * bit 31 is "any of bits 31..63". A value that needed n >= 33 bits so comes
 * out with bit 31 set and bits 32..n-1 repeating bits 0..n-33. */
static inline int lws_truncation_signature(uint64_t v, unsigned n)
{
    if (n < 33 || n > 63 || !((v >> 31) & 1))
        return 0;
    uint64_t hi = v >> 32, lo = v & (((uint64_t)1 << (n - 32)) - 1);
    return hi == lo;
}

/* What libwebsockets' 64-bit decoder prints for a truncated value:
 * 0xffffffff8xxxxxxx (bits 31..63 all set). */
static inline int lws_truncated_form(uint64_t v)
{
    return (v >> 31) == 0x1ffffffffu;
}

#if LWS_X86
/* The processor has what the x86-64-v3 copies use. */
static inline int lws_cpu_v3(void)
{
    return btp_cpu_x86_has(BTP_CPU_V3, 0);
}
#endif

#endif
