/*
 * What every fuzz target shares: the libFuzzer entry point and the check
 * that turns a broken property into a crash the fuzzer (or the replay test)
 * reports.
 */
#ifndef BTPACK_FUZZ_FUZZ_H
#define BTPACK_FUZZ_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* Implemented by each target; called by libFuzzer or by replay_main.c. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A property of the code under test does not hold: say which, and abort so
 * that libFuzzer saves the input and the replay test fails. */
#define FUZZ_CHECK(cond, ...)                                                         \
    do {                                                                              \
        if (!(cond)) {                                                                \
            fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                             \
            fputc('\n', stderr);                                                      \
            abort();                                                                  \
        }                                                                             \
    } while (0)

/* Room for `need` elements of `elem` bytes in v (capacity *cap elements),
 * growing geometrically. Returns the (possibly moved) array; running out of
 * memory is a harness failure. */
static inline void *fuzz_reserve(void *v, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return v;
    size_t c = *cap ? *cap : 16;
    while (c < need)
        c *= 2;
    void *bigger = realloc(v, c * elem);
    FUZZ_CHECK(bigger != NULL, "out of memory (%zu elements)", c);
    *cap = c;
    return bigger;
}

#endif
