/* The x86-64 processor features the codecs' vector copies need, asked at
 * run time (lib/codec: the lws encoder's and decoder's x86-64-v3 copies,
 * the CBF address encoder's AVX-512 steps). */
#ifndef BTPACK_COMMON_CPU_X86_H
#define BTPACK_COMMON_CPU_X86_H

#include "common/compiler.h" /* BTP_CODEC_SMALL, BTP_ALWAYS_INLINE */

#if !BTP_CODEC_SMALL && defined(__x86_64__) && defined(__GNUC__)
#define BTP_CPU_X86 1
#include <cpuid.h>

enum {
    /* AVX2, BMI1, BMI2 and MOVBE, and the kernel saves the 256-bit
     * registers (x86-64-v3, as the lws copies use it) */
    BTP_CPU_V3 = 1u << 0,
    /* AVX-512 F, BW, CD, VL, VBMI and VBMI2 and BMI2, and the kernel saves
     * the opmask and 512-bit registers */
    BTP_CPU_AVX512 = 1u << 1,
    BTP_CPU_ASKED = 1u << 31,
};

/* The features (BTP_CPU_*, with BTP_CPU_ASKED) as cpuid and xgetbv say. */
static BTP_ALWAYS_INLINE unsigned btp_cpu_x86_query(void)
{
    unsigned a, b, c, d, f = BTP_CPU_ASKED;
    if (__get_cpuid_max(0, NULL) >= 7) {
        __cpuid(1, a, b, c, d);
        const unsigned c1 = c;
        if (c1 & bit_OSXSAVE) {
            unsigned lo, hi;
            __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
            (void)hi;
            __cpuid_count(7, 0, a, b, c, d);
            if ((c1 & bit_AVX) && (c1 & bit_MOVBE) && (lo & 6) == 6 && (b & bit_AVX2) &&
                (b & bit_BMI) && (b & bit_BMI2))
                f |= BTP_CPU_V3;
            const unsigned need_b =
                bit_AVX512F | bit_AVX512BW | bit_AVX512CD | bit_AVX512VL | bit_BMI2;
            const unsigned need_c = bit_AVX512VBMI | bit_AVX512VBMI2;
            if ((lo & 0xe6) == 0xe6 && (b & need_b) == need_b && (c & need_c) == need_c)
                f |= BTP_CPU_AVX512;
        }
    }
    return f;
}

/* Out of line: cpuid's registers would otherwise be saved on every call
 * of the caller. */
__attribute__((noinline, unused)) static unsigned btp_cpu_x86_ask(void)
{
    return btp_cpu_x86_query();
}

/* Whether the processor has every feature of `want` (BTP_CPU_*). Asked
 * once per file that asks; the answer is kept in a relaxed atomic, so a
 * signal handler that interrupts the first call asks again and stores the
 * same: no lock, no allocation, safe in a signal handler. `inline_ask`
 * (a constant) asks in the caller's body instead of by a call: a caller
 * whose registers are laid out better with no call in it (measured) takes
 * that. */
static BTP_ALWAYS_INLINE int btp_cpu_x86_has(unsigned want, const int inline_ask)
{
    static unsigned known;
    unsigned k = __atomic_load_n(&known, __ATOMIC_RELAXED);
    if (inline_ask ? !k : __builtin_expect(!k, 0)) {
        k = inline_ask ? btp_cpu_x86_query() : btp_cpu_x86_ask();
        __atomic_store_n(&known, k, __ATOMIC_RELAXED);
    }
    return (k & want) == want;
}
#else
#define BTP_CPU_X86 0
#endif

#endif
