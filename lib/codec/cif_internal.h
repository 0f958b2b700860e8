/* Facts of CIF v0 shared by its encoder and decoder (spec/cif.md). */
#ifndef BTPACK_CIF_INTERNAL_H
#define BTPACK_CIF_INTERNAL_H

#include <btpack/cif.h>

/* Path opcodes. */
enum {
    CIF_OP_END = 0x00,
    CIF_OP_STR_MAX = 0x3f,      /* 01..3f: that many literal bytes follow */
    CIF_OP_FRAMEWORK = 0x40,    /* 01 nnnnnn: version byte, n+1 name bytes */
    CIF_OP_EXPAND = 0x80,       /* 10 cccccc: prefix code 0..63 */
    CIF_OP_EXPAND_LONG = 0xc0,  /* 11 kkkkkk: k+1 bytes of (code - 64) */
    CIF_HEADER_RELATIVE = 0x80, /* image header: base is a delta */
    CIF_HEADER_RESERVED = 0x40,
    CIF_FIXED_PREFIXES = 12,    /* codes 0..11 are fixed */
    CIF_FIRST_DYNAMIC = 32,     /* codes 12..31 are reserved */
    CIF_SHORT_CODES = 64        /* codes below fit the short expand */
};

/* The prefixes every table starts with (codes 0..11), and their lengths. */
extern const char *const cif_fixed_prefixes[CIF_FIXED_PREFIXES];
extern const unsigned char cif_fixed_prefix_len[CIF_FIXED_PREFIXES];

/* Information byte word size code <-> bits. */
static inline unsigned cif_size_code(unsigned word_bits)
{
    return word_bits == 16 ? 0u : word_bits == 32 ? 1u : 2u;
}

static inline int cif_is_separator(unsigned char c)
{
    return c == '/' || c == '\\';
}

/* The framework shortcut expands name n and version v to
 * "/" n ".framework/Versions/" v "/" n. */
#define CIF_FRAMEWORK_MID ".framework/Versions/"
#define CIF_FRAMEWORK_MID_LEN 20

#endif
