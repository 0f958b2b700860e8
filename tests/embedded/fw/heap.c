/*
 * The heap scenarios of the test firmware: a small bounded allocator in a
 * static array whose malloc and free stream heap records over the console
 * (btp_cm_record_alloc_line / btp_cm_record_free_line), each allocation
 * with its caller's chain taken by btp_cm_here() and one capture method:
 *   heap-ehabi  libgcc's EHABI unwinder (the eh image: unwind tables)
 *   heap-fp     the frame record walk (the fp image: frame pointers)
 *   heap-scan   the stack scan (either image)
 * The workload is fixed, so the host test (qemu_faults.py) knows what
 * `btpack heap report` must say about it:
 *   keep_config   1 allocation of 100 bytes, never freed
 *   temp_strings  8 allocations of 16..23 bytes, each freed at once
 *   table_grow    64, 128 and 256 bytes; the first two freed, 256 kept
 *   too_big       1 request larger than the heap: a failed allocation
 * so 12 allocations (704 bytes), 10 frees, 2 leaks (356 bytes), peak 548
 * bytes, each allocation's chain fw_malloc <- its function <- heap_run <-
 * main <- Reset_Handler. Output: the records, then "heap live=N bytes=B"
 * from the allocator's own books, then "done".
 */
#include <btpack/cortex_m.h>

#include "board.h"

#define NOINLINE __attribute__((noinline))

/* ---- the allocator: first fit over blocks with a one-word header ---- */

#define HEAP_BYTES 2048u
#define ALIGN 8u
#define USED 1u
/* A block: its header word (total bytes including the header, a multiple
 * of ALIGN, | USED), then the payload. Headers sit 4 bytes before an
 * 8-byte boundary so that payloads are 8-byte aligned. */
static uint32_t heap_area[HEAP_BYTES / 4] __attribute__((aligned(8)));
static int heap_ready;
static uint32_t live_count, live_bytes;

static uint32_t *block_at(uint32_t off)
{
    return (uint32_t *)((uint8_t *)heap_area + off);
}

static void heap_init(void)
{
    /* One free block from offset 4 (payload at 8) to the end. */
    *block_at(4) = HEAP_BYTES - 8u;
    heap_ready = 1;
}

static void *heap_take(uint32_t size)
{
    if (!heap_ready)
        heap_init();
    if (size > HEAP_BYTES)
        return 0;
    uint32_t need = (size + 4u + ALIGN - 1u) & ~(ALIGN - 1u);
    for (uint32_t off = 4; off + 4u <= HEAP_BYTES - 4u;) {
        uint32_t h = *block_at(off), len = h & ~USED;
        if (len == 0)
            break; /* damaged: stop rather than loop */
        if (!(h & USED) && len >= need) {
            if (len - need >= 2u * ALIGN) {
                *block_at(off + need) = len - need; /* the rest stays free */
                len = need;
            }
            *block_at(off) = len | USED;
            return block_at(off + 4u);
        }
        off += len;
    }
    return 0;
}

static void heap_give(void *p)
{
    uint32_t *h = (uint32_t *)p - 1;
    *h &= ~USED;
    /* Merge every run of free blocks (a pass over at most HEAP_BYTES / 8). */
    for (uint32_t off = 4; off + 4u <= HEAP_BYTES - 4u;) {
        uint32_t len = *block_at(off) & ~USED;
        if (len == 0)
            break;
        if (!(*block_at(off) & USED))
            while (off + len + 4u <= HEAP_BYTES - 4u && !(*block_at(off + len) & USED) &&
                   (*block_at(off + len) & ~USED))
                len += *block_at(off + len);
        if (!(*block_at(off) & USED))
            *block_at(off) = len;
        off += len;
    }
}

/* ---- the instrumented malloc and free ---- */

static btp_cm_method method;
static btp_cm_layout layout;

/* The capture's state is static, as the allocator's lock (none needed
 * here: one thread) would guard it: it keeps malloc's frame small, for
 * small thread stacks, and keeps stale frame records out of it: the fp
 * walk searches upwards from the SP, and 100 bytes of uninitialised locals
 * below malloc's own record would hold the records of earlier, deeper
 * calls. */
static btp_cm_fault here;
static uint32_t addrs[16];

NOINLINE static void *fw_malloc(uint32_t size)
{
    size_t n = 0;
    int truncated = 0;
    btp_cm_here(&here);
    void *p = heap_take(size);
    if (p) {
        live_count++;
        live_bytes += size;
    }
    btp_cm_capture(&here, &layout, method, addrs, 16, &n, &truncated);
    btp_cm_record_alloc_line(size, (uint32_t)(uintptr_t)p, addrs, n, truncated, console_sink, 0);
    return p;
}

NOINLINE static void fw_free(void *p, uint32_t size)
{
    if (!p)
        return;
    live_count--;
    live_bytes -= size;
    heap_give(p);
    btp_cm_record_free_line((uint32_t)(uintptr_t)p, console_sink, 0);
}

/* ---- the workload ---- */

static void *volatile kept[2];

NOINLINE static void keep_config(void)
{
    kept[0] = fw_malloc(100);
}

NOINLINE static void temp_strings(void)
{
    for (uint32_t i = 0; i < 8; i++) {
        char *s = fw_malloc(16u + i);
        if (s)
            s[0] = 0;
        fw_free(s, 16u + i);
    }
}

NOINLINE static void table_grow(void)
{
    void *a = fw_malloc(64), *b = fw_malloc(128);
    kept[1] = fw_malloc(256);
    fw_free(a, 64);
    fw_free(b, 128);
}

NOINLINE static void too_big(void)
{
    if (fw_malloc(HEAP_BYTES + 1u))
        console_str("too_big: allocated\n");
}

static int streq(const char *a, const char *b)
{
    while (*a && *a == *b)
        a++, b++;
    return *a == *b;
}

NOINLINE int heap_run(const char *kind)
{
    if (streq(kind, "heap-ehabi"))
        method = btp_cm_walk_ehabi;
    else if (streq(kind, "heap-fp"))
        method = btp_cm_walk_fp;
    else if (streq(kind, "heap-scan"))
        method = btp_cm_walk_scan;
    else
        return -1;
    layout.stack.lo = (uint32_t)(uintptr_t)__stack_lo;
    layout.stack.hi = (uint32_t)(uintptr_t)__stack_hi;
    layout.text.lo = (uint32_t)(uintptr_t)__text_start;
    layout.text.hi = (uint32_t)(uintptr_t)__text_end;
    layout.scan_words = 0;
    keep_config();
    temp_strings();
    table_grow();
    too_big();
    console_str("heap live=");
    console_dec(live_count);
    console_str(" bytes=");
    console_dec(live_bytes);
    console_str("\ndone\n");
    return 0;
}
