/* Facts of CBF v0 shared by its encoder and decoder. */
#ifndef BTPACK_CBF_INTERNAL_H
#define BTPACK_CBF_INTERNAL_H

#include <btpack/cbf.h>

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
    return (uint8_t)(word_bits == 16 ? 0 : word_bits == 32 ? 1 : 2);
}

#endif
