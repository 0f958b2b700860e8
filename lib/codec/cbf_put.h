/* The CBF encoder's writer of one address instruction, shared by the
 * one-shot encoders (cbf_encode.c) and the capture's frame-pointer walk
 * that encodes each return address as it reads it (capture.c). */
#ifndef BTPACK_CBF_PUT_H
#define BTPACK_CBF_PUT_H

#include "cbf_internal.h"

#if !BTP_CODEC_SMALL
/*
 * What an address instruction of each kind looks like for t, the index of
 * the top bit of its operand's sign edge (below), whose operand has
 * (t >> 3) + 1 bytes, relative (t) or absolute (64 + t): the opcode, the
 * power of two that moves the operand to the top of a big-endian word,
 * and the instruction's length. Tables, as the fast
 * paths need these a frame: each is one load from the kind's base indexed
 * by t, with no arithmetic on t first. The length and the power are
 * 64-bit words so that each is an operand from memory: the output pointer
 * takes the length in one `add`, and the operand is moved by one
 * multiplication (a shift by a count from a table needs the count loaded
 * into cl first, and the register shuffling that cl's being taken
 * brings).
 */
typedef struct cbf_shapes {
    uint64_t step[128];
    uint64_t scale[128];
    /* For a relative shape t: the absolute form is strictly shorter when
     * the value's sign edge is below this, 2^(8 * (t >> 3)) (0 for t < 8,
     * where nothing is shorter than the relative form's one byte). */
    uint64_t abs_below[64];
    uint8_t op[128];
} cbf_shapes;
/* One per kind: pc, ra, async (defined in cbf_encode.c). */
extern const cbf_shapes btp_cbf_kind_shapes[3];

/* The index of the top set bit of x (not 0), as a 64-bit value: an index
 * into btp_cbf_kind_shapes with no widening (63 ^ clz, which the compiler
 * turns into the same `bsr`, comes out as an int that it then
 * sign-extends). `bsr` leaves its destination as it was when x is 0, so
 * the processor makes it wait for the register's last value: with a
 * register of the compiler's choice that was the shift count loaded for
 * the frame before, a chain through every frame (measured: 40 % more time
 * a frame on a 64-bit corpus). Zeroing it first (an idiom the processor
 * resolves without executing) cuts that. (`bsr` of a register into
 * itself, which depends only on x, measured slower still: the btp_frame
 * path 1.50 -> 2.2 ns a frame on py311_regrtest.) */
static BTP_ALWAYS_INLINE uint64_t top_bit(uint64_t x)
{
#if defined(__GNUC__) && defined(__x86_64__)
    uint64_t t = 0;
    __asm__("bsrq %1, %0" : "+r"(t) : "rm"(x));
    return t;
#else
    return 63 ^ (uint64_t)btp_clz64(x);
#endif
}

/* top_bit of a 32-bit x (not 0), with no widening of x first. */
static BTP_ALWAYS_INLINE uint64_t top_bit32(uint32_t x)
{
#if defined(__GNUC__) && defined(__x86_64__)
    uint64_t t = 0; /* a 32-bit write clears the upper half */
    __asm__("bsrl %1, %k0" : "+r"(t) : "rm"(x));
    return t;
#else
    return top_bit(x);
#endif
}

/* top_bit32 by a `bsr` of x's register into itself: one instruction
 * fewer, for the 32-bit address loop, where it measured as fast as the
 * zeroed form (unlike the btp_frame loop, see top_bit). */
static BTP_ALWAYS_INLINE uint64_t top_bit32_in_place(uint32_t x)
{
#if defined(__GNUC__) && defined(__x86_64__)
    uint64_t t = x; /* bsrl writes it whole (x is not 0) */
    __asm__("bsrl %k0, %k0" : "+r"(t));
    return t;
#else
    return top_bit32(x);
#endif
}

/* Write the instruction of kind shapes and shape t (relative or absolute)
 * for operand v at p
 * (room for CBF_MAX_INSTR bytes); returns its end. All 8 operand bytes
 * (4 on 32-bit words) are stored at once; those past the instruction are
 * overwritten by the next one or lie beyond the stream's length. On
 * 32-bit words the operand is moved in 32 bits, by the high half of the
 * power of two (2^(32 - 8 * bytes)): no zero extension of v first. */
static BTP_ALWAYS_INLINE uint8_t *put_shape(uint8_t *p, const cbf_shapes *shapes, uint64_t t,
                                            uint64_t v, const unsigned word_bits)
{
    *p = shapes->op[t];
    if (word_bits == 32)
        store_be32(p + 1, (uint32_t)v * (uint32_t)(shapes->scale[t] >> 32));
    else
        store_be64(p + 1, v * shapes->scale[t]);
    return p + shapes->step[t];
}

/*
 * Write the instruction for the address `value` at p, `delta` (reduced
 * to the word; not 0 when `nonzero`) after the address before it; p has
 * room for CBF_MAX_INSTR bytes, shapes is btp_cbf_kind_shapes[kind] for its kind (pc,
 * ra or async). Returns the end of the instruction. Makes the same choice
 * as address_instr for every address after the first (relative unless
 * absolute is strictly shorter; for the first see first_absolute), so the
 * bytes are the same as add()'s, with fewer instructions. The size of an
 * operand comes from its sign edge, x ^ (x << 1) in the word: its top set
 * bit is the highest bit the operand must keep below its sign bit (none
 * for 0 and -1, hence the | 1, for a delta only where the caller does not
 * know it is not 0); its index t gives the bytes. The absolute form is
 * sized only when it is shorter. The caller computes the
 * delta, as it tests it for a repeat (0) anyway. word_bits is a constant
 * in each inlined copy, so the masking of 64-bit words disappears.
 */
static BTP_ALWAYS_INLINE uint8_t *put_address(uint8_t *p, uint64_t value, uint64_t delta,
                                              const cbf_shapes *shapes, const int nonzero,
                                              const unsigned word_bits)
{
    const uint64_t mask = btp_word_mask(word_bits);
    uint64_t abs_edge, t;
    int abs_shorter; /* absolute may be shorter: its edge is lower */
    if (word_bits == 32) {
        /* In 32-bit arithmetic, which reduces to the word for free (the
         * 64-bit form with a mask costs a zero extension per value). */
        uint32_t d = (uint32_t)delta, v = (uint32_t)value;
        uint32_t re = (d ^ (d << 1)) | (nonzero ? 0 : 1), ae = v ^ (v << 1);
        abs_edge = ae;
        abs_shorter = ae < re;
        t = top_bit32(re);
    } else {
        uint64_t rel_edge = ((delta ^ (delta << 1)) & mask) | (nonzero ? 0 : 1);
        abs_edge = (value ^ (value << 1)) & mask;
        abs_shorter = abs_edge < rel_edge;
        t = top_bit(rel_edge);
    }
    /* Branches, well predicted where the program is mapped high (its
     * absolute addresses longer than most deltas). Where it is mapped low
     * they are not (a quarter of gcc12_cc1_sqlite3's frames), but a
     * choice by conditional moves made every corpus slower: it puts a
     * load and the moves on the way from each value to the output
     * pointer's step (and so did a loop of such choices entered only once
     * a trace had written an absolute form: faster on long streams, slower
     * per trace). The first test is on registers alone; the second,
     * exact, by the table (the absolute form is shorter when its edge is
     * below 2^(8 * (t >> 3))), not by a second `bsr` and a compare of
     * byte counts: fewer instructions on the way to a frame that is not
     * absolute after all. */
    if (abs_shorter && abs_edge < shapes->abs_below[t])
        return put_shape(p, shapes, 64 + top_bit(abs_edge | 1), value, word_bits);
    return put_shape(p, shapes, t, delta, word_bits);
}
#endif

#endif
