/* A small program for the heapmap test: each "allocation" prints its size
 * and its backtrace (innermost first) as a JSON line, which the test turns
 * into ~m# records. The SITE_* comments mark the call sites the test
 * expects heapmap to name. Built with -g -O0 -no-pie so the run-time
 * addresses are the ELF's. */
#include <execinfo.h>
#include <stdio.h>

static void __attribute__((noinline)) record(size_t size)
{
    void *bt[8];
    int n = backtrace(bt, 8); /* SITE_RECORD */
    if (n > 3)
        n = 3; /* record, its caller, main */
    printf("{\"word_bits\":%d,\"alloc_size\":%zu,\"frames\":[", (int)(8 * sizeof(void *)), size);
    for (int i = 0; i < n; i++)
        printf("%s{\"type\":\"ra\",\"addr\":\"%p\"}", i ? "," : "", bt[i]);
    printf("]}\n");
}

static void __attribute__((noinline)) alloc_small(size_t size)
{
    record(size); /* SITE_SMALL */
}

static void __attribute__((noinline)) alloc_big(size_t size)
{
    record(size); /* SITE_BIG */
}

int main(void)
{
    for (int i = 0; i < 3; i++)
        alloc_small(100); /* SITE_MAIN_LOOP */
    alloc_big(5000); /* SITE_MAIN_BIG */
    alloc_small(7); /* SITE_MAIN_ONCE */
    return 0;
}
