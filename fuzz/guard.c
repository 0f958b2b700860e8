/* Guard-page buffers: see guard.h. */
#include "guard.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FUZZ_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define FUZZ_ASAN 1
#endif
#ifdef FUZZ_ASAN
#include <sanitizer/asan_interface.h>
#endif

static size_t page_size(void)
{
    long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? (size_t)p : 4096;
}

/* Make the mapping hold at least len bytes before its guard page. */
static void reserve(fuzz_guard *g, size_t len)
{
    if (g->map && len <= g->usable)
        return;
    size_t page = page_size();
    size_t usable = (len + page - 1) / page * page;
    if (usable < page)
        usable = page;
    if (g->map) {
#ifdef FUZZ_ASAN
        ASAN_UNPOISON_MEMORY_REGION(g->map, g->usable);
#endif
        munmap(g->map, g->usable + page);
    }
    void *m = mmap(NULL, usable + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
    if (m == MAP_FAILED || mprotect((uint8_t *)m + usable, page, PROT_NONE) != 0) {
        perror("fuzz guard: mmap/mprotect");
        abort();
    }
    g->map = m;
    g->usable = usable;
}

uint8_t *fuzz_guard_buf(fuzz_guard *g, size_t len)
{
    reserve(g, len);
    uint8_t *p = g->map + (g->usable - len);
#ifdef FUZZ_ASAN
    ASAN_UNPOISON_MEMORY_REGION(g->map, g->usable);
    /* Only whole 8-byte granules can be poisoned: an underrun of less than
     * 8 bytes may go unseen when p is not aligned. */
    ASAN_POISON_MEMORY_REGION(g->map, g->usable - len);
#endif
    return p;
}

const uint8_t *fuzz_guard_copy(fuzz_guard *g, const void *data, size_t len)
{
    uint8_t *p = fuzz_guard_buf(g, len);
    if (len)
        memcpy(p, data, len);
    return p;
}
