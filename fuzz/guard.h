/*
 * Guard-page buffers for the fuzz harnesses.
 *
 * A fuzz_guard hands out buffers whose last byte is immediately followed by
 * an inaccessible (PROT_NONE) page, so reading or writing even one byte past
 * the end faults at once, in every build (with or without a sanitizer, and
 * whatever the allocator's slack). Under AddressSanitizer the bytes before
 * the buffer are poisoned too, so underruns are reported as well.
 *
 * A guard is reused across inputs: the mapping only grows, so a fuzzer does
 * not pay an mmap per execution. Not thread-safe (harnesses are
 * single-threaded). Allocation failure aborts: a harness cannot go on
 * without its buffer, and libFuzzer reports the abort.
 */
#ifndef BTPACK_FUZZ_GUARD_H
#define BTPACK_FUZZ_GUARD_H

#include <stddef.h>
#include <stdint.h>

typedef struct fuzz_guard {
    uint8_t *map;     /* start of the mapping (readable/writable part first) */
    size_t usable;    /* bytes before the guard page */
} fuzz_guard;

/* Give len writable bytes ending right at the guard page. The content is
 * unspecified (the harness fills what it needs). len 0 gives a pointer to
 * the guard page itself: valid to pass with length 0, never dereferenced. */
uint8_t *fuzz_guard_buf(fuzz_guard *g, size_t len);

/* Copy data[0..len) into a guarded buffer and return it (the decoder's
 * input: any read past len faults). */
const uint8_t *fuzz_guard_copy(fuzz_guard *g, const void *data, size_t len);

#endif
