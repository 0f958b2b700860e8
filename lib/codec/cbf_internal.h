/* Facts of CBF v0 shared by its encoder and decoder. */
#ifndef BTPACK_CBF_INTERNAL_H
#define BTPACK_CBF_INTERNAL_H

#include <btpack/cbf.h>

#include "common/be64.h"
#include "common/compiler.h"

/* Instruction bytes (see spec/cbf.md). */
enum {
    CBF_OP_END = 0x00,
    CBF_OP_TRUNC = 0x01,
    CBF_OP_PC = 0x10,       /* 0001 a nnn */
    CBF_OP_RA = 0x20,       /* 0010 a nnn */
    CBF_OP_ASYNC = 0x30,    /* 0011 a nnn */
    CBF_OP_ABSOLUTE = 0x08, /* the `a` bit of pc/ra/async */
    CBF_OP_OMIT = 0x40,     /* 01 x ccccc */
    CBF_OP_OMIT_EXT = 0x20, /* the `x` bit of omit */
    CBF_OP_REP = 0x80,      /* 1000 x nnn */
    CBF_OP_REP_EXT = 0x08,  /* the `x` bit of rep */
    CBF_OMIT_INLINE_MAX = 32,
    CBF_REP_INLINE_MAX = 8
};

/* Information byte: version in bits 7..2, word size code in bits 1..0. */
static inline uint8_t cbf_info_byte(unsigned word_bits)
{
    return (uint8_t)(word_bits >> 5); /* 16, 32, 64: 0, 1, 2 */
}

/* Longest instruction: opcode and an 8-byte operand. */
#define CBF_MAX_INSTR 9

/* fn(args..., W) with the word size W (16, 32 or 64, the widths the
 * encoder and decoder accept) as a constant, so that a BTP_ALWAYS_INLINE fn
 * is specialised per width: the fast paths then need no masking or sign
 * extension for 64-bit words. */
#define CBF_BY_WORD_BITS(word_bits, fn, ...)                                                      \
    ((word_bits) == 64   ? fn(__VA_ARGS__, 64)                                                   \
     : (word_bits) == 32 ? fn(__VA_ARGS__, 32)                                                   \
                         : fn(__VA_ARGS__, 16))

/*
 * btp_cbf_encode(frames, n, 0, pointer width, BTP_CBF_ENC_TRUNCATE_ON_FULL,
 * buf, BTP_CBF_BOUND(n), len_out, NULL), what the capture's CBF entry asks
 * for, with no check of what that caller guarantees: frames (n of them, n
 * at most BTP_CAPTURE_CBF_MAX_FRAMES), buf and len_out not NULL, and buf
 * holding at least BTP_CBF_BOUND(n) bytes. The same stream; the checks,
 * the word size's dispatch and the optional outputs were a noticeable part
 * of the encoder's fixed cost on short stacks.
 */
#if !BTP_CODEC_SMALL
btp_status btp_cbf_encode_bounded(const btp_frame *frames, size_t n, void *buf, size_t *len_out);
#else
/* (no fast path to enter: the general one, and no code where no one calls it) */
static inline btp_status btp_cbf_encode_bounded(const btp_frame *frames, size_t n, void *buf,
                                                size_t *len_out)
{
    return btp_cbf_encode(frames, n, 0, (unsigned)(8 * sizeof(void *)),
                          BTP_CBF_ENC_TRUNCATE_ON_FULL, buf, BTP_CBF_BOUND(n), len_out, NULL);
}
#endif

#endif
