/* The one assertion helper the C tests share. A failed CHECK prints where
 * and why and counts; a test's main returns check_finish(), which prints
 * "N passed, N failed" and is non-zero when anything failed. */
#ifndef BTPACK_TESTS_CHECK_H
#define BTPACK_TESTS_CHECK_H

#include <stdio.h>

static unsigned long check_passed_, check_failed_;

#define CHECK(cond, ...)                                                       \
    do {                                                                       \
        if (cond) {                                                            \
            check_passed_++;                                                   \
        } else {                                                               \
            check_failed_++;                                                   \
            fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                      \
            fputc('\n', stderr);                                               \
        }                                                                      \
    } while (0)

static inline int check_finish(void)
{
    printf("%lu passed, %lu failed\n", check_passed_, check_failed_);
    return check_failed_ ? 1 : 0;
}

#endif
