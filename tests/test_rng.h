/* The tests' pseudo-random numbers: xorshift64* from a fixed seed, so a
 * failure reproduces exactly. */
#ifndef BTPACK_TESTS_TEST_RNG_H
#define BTPACK_TESTS_TEST_RNG_H

#include <stdint.h>

static inline uint64_t test_rng(uint64_t *state)
{
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    return *state * 0x2545f4914f6cdd1du;
}

#endif
