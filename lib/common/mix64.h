/*
 * Hashes for open-addressing tables keyed by heap pointers (private):
 * the log writer's pointer map and the heap tracer's table of synthetic
 * addresses. No libc.
 */
#ifndef BTPACK_MIX64_H
#define BTPACK_MIX64_H

#include <stdint.h>

/* A 64-bit mix (MurmurHash3's finaliser): every input bit moves many
 * output bits. */
static inline uint64_t mix64(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    return h ^ h >> 33;
}

/* A heap pointer's home slot (before masking): the bits above malloc's
 * 16-byte alignment, all of them mixed, so that busy pages never share
 * runs of slots. */
static inline uint64_t ptr_home(uint64_t p)
{
    return mix64(p >> 4);
}

#endif
