/* A single-threaded program with a fixed allocation history for
 * tests/heap/heap_noaddr.py: the same allocations, frees, peak and leaks
 * on every run, from a few known functions. It prints every pointer it got
 * (hex, one a line), so the test can look for them in a log recorded with
 * --no-addresses. Written with write(2): stdio's buffer would be one more
 * allocation, the same in every run but not the program's own. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void *volatile sink;

static void *show(void *p)
{
    char line[32];
    int n = snprintf(line, sizeof line, "%llx\n", (unsigned long long)(uintptr_t)p);
    if (write(1, line, (size_t)n) != n)
        exit(2);
    return p;
}

/* 2 leaks: 3000 and 70000 bytes (the second from mmap, far from the heap). */
__attribute__((noinline)) static void leak_two(void)
{
    sink = show(malloc(3000));
    sink = show(malloc(70000));
}

/* 200 small blocks of varied sizes, freed in a scrambled order; the same
 * sizes again (glibc hands the freed addresses back). */
__attribute__((noinline)) static void churn(void)
{
    void *keep[200];
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < 200; i++) {
            keep[i] = show(malloc((size_t)(16 + (i * 37) % 500)));
            memset(keep[i], i, 16);
        }
        for (int i = 0; i < 200; i++)
            free(keep[(i * 73) % 200]);
    }
}

/* A growing buffer: realloc moves it, the peak is in here. */
__attribute__((noinline)) static void grow(void)
{
    char *p = NULL;
    for (size_t n = 1000; n <= 256000; n *= 2) {
        p = show(realloc(p, n));
        memset(p, 1, n);
    }
    free(p);
}

int main(void)
{
    leak_two();
    churn();
    grow();
    void *c = show(calloc(100, 3));
    free(c);
    return 0;
}
