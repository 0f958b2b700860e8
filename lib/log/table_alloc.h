/* Zeroed hash tables and growing caches for the log writer, the reader and
 * the call tree (private). */
#ifndef BTPACK_LOG_TABLE_ALLOC_H
#define BTPACK_LOG_TABLE_ALLOC_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* calloc(n, size) with every page of the block written once. A large
 * calloc gets fresh pages from the kernel; a hash table's first touch of a
 * page is a probe, a read, which maps the shared zero page, and the insert
 * that follows is a copy-on-write fault, whose flush of the old mapping
 * interrupts every other CPU running one of the process's threads. For the
 * heap tracer's writer thread that was one interrupt of the traced program
 * per 4 KiB of its pointer map: some 7,000 on a run of python3 with 4
 * million allocations. Written first, a page is mapped once, with no flush.
 * (A plain memset after malloc would not do: compilers turn the pair back
 * into calloc.) The stores cost one per page; the table's pages are all
 * used soon anyway, since a hash spreads its entries over them. */
static inline void *log_table_calloc(size_t n, size_t size)
{
    unsigned char *p = calloc(n, size);
    if (p)
        for (size_t i = 0; i < n * size; i += 4096)
            *(volatile unsigned char *)(p + i) = 0;
    return p;
}

/* arr (*cap elements of `size` bytes) grown to hold at least `need`: the
 * capacity doubled from `first` (or *cap) until it does, but never past
 * `max`; with `zero`, the new elements zeroed. Returns the array (arr
 * itself when it already holds need), with *cap updated, or NULL, with arr
 * and *cap unchanged, when need is over max or memory runs out: the caches
 * that use it then do without. (The doubling is done in 64 bits: a
 * 32-bit capacity doubled past 2^31 would wrap to 0 and never end.) */
static inline void *log_grow(void *arr, uint32_t *cap, uint64_t need, uint32_t first,
                             uint32_t max, size_t size, int zero)
{
    if (need <= *cap)
        return arr;
    if (need > max)
        return NULL;
    uint64_t nc = *cap ? *cap : first;
    while (nc < need)
        nc *= 2;
    if (nc > max)
        nc = max;
    if (nc > SIZE_MAX / size)
        return NULL;
    unsigned char *p = realloc(arr, (size_t)nc * size);
    if (!p)
        return NULL;
    if (zero)
        memset(p + (size_t)*cap * size, 0, (size_t)(nc - *cap) * size);
    *cap = (uint32_t)nc;
    return p;
}

#endif
