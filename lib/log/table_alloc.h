/* Zeroed hash tables for the log writer and the call tree (private). */
#ifndef BTPACK_LOG_TABLE_ALLOC_H
#define BTPACK_LOG_TABLE_ALLOC_H

#include <stdint.h>
#include <stdlib.h>

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

#endif
