/* The reserved words that end every caller-allocated option struct
 * (btpack.h): all zero, or the caller asked for an option this library does
 * not know. Freestanding. */
#ifndef BTPACK_COMMON_RESERVED_H
#define BTPACK_COMMON_RESERVED_H

#include <btpack/btpack.h>

static inline int btp_reserved_clear(const uint64_t reserved[BTP_RESERVED_WORDS])
{
    uint64_t any = 0;
    for (int i = 0; i < BTP_RESERVED_WORDS; i++)
        any |= reserved[i];
    return any == 0;
}

#endif
