/*
 * The fp walker fed hand-built frame chains, good and bad, on a fake stack
 * page fenced by inaccessible pages: any read outside the bounds faults and
 * fails the test, so "does not crash" is checked for real.
 */
#include "../check.h"

#include <btpack/btpack.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define W sizeof(uintptr_t)

static uint8_t *page;  /* the fake stack */
static size_t psize;
static btp_stack_bounds bounds;

static uintptr_t at(size_t off)
{
    return (uintptr_t)page + off;
}

/* A frame record {next, ra} at offset off. */
static void record(size_t off, uintptr_t next, uintptr_t ra)
{
    uintptr_t *p = (uintptr_t *)(void *)(page + off);
    p[0] = next;
    p[1] = ra;
}

static size_t walk(uintptr_t fp, uintptr_t sp, const btp_stack_bounds *b, btp_frame *f,
                   size_t cap)
{
    btp_capture_options o = {0};
    o.method = BTP_CAPTURE_FP;
    btp_regs regs = {0x1234, sp, fp};
    size_t n = 99999;
    btp_status st = btp_capture_regs(&o, &regs, b, f, cap, &n);
    CHECK(st == BTP_OK, "walk status %s", btp_status_name(st));
    CHECK(n <= cap, "n %zu > cap %zu", n, cap);
    return st == BTP_OK ? n : 0;
}

/* The walk gave the pc then exactly the return addresses ras[0..k). */
static void expect(const char *what, const btp_frame *f, size_t n, const uintptr_t *ras, size_t k)
{
    CHECK(n == k + 1, "%s: %zu frames, expected %zu", what, n, k + 1);
    if (n != k + 1)
        return;
    CHECK(f[0].kind == BTP_FRAME_PC && f[0].value == 0x1234, "%s: pc", what);
    for (size_t i = 0; i < k; i++)
        CHECK(f[i + 1].kind == BTP_FRAME_RA && f[i + 1].value == ras[i], "%s: ra %zu", what, i);
}

static void reset(void)
{
    memset(page, 0, psize);
}

int main(void)
{
    psize = (size_t)sysconf(_SC_PAGESIZE);
    uint8_t *mem = mmap(NULL, 3 * psize, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(mem != MAP_FAILED, "mmap");
    if (mem == MAP_FAILED)
        return check_finish();
    page = mem + psize;
    CHECK(mprotect(page, psize, PROT_READ | PROT_WRITE) == 0, "mprotect");
    bounds.lo = at(0);
    bounds.hi = at(psize);
    btp_frame f[64];
    size_t n;
    const uintptr_t ras[] = {0xa1, 0xa2, 0xa3};

    /* A good chain ends at a zero frame pointer. */
    reset();
    record(0x100, at(0x200), ras[0]);
    record(0x200, at(0x300), ras[1]);
    record(0x300, 0, ras[2]);
    n = walk(at(0x100), at(0x100), &bounds, f, 64);
    expect("good", f, n, ras, 3);
    /* Same without bounds: found from /proc/self/maps (the page is its own
     * mapping between the inaccessible ones). */
    n = walk(at(0x100), at(0x100), NULL, f, 64);
    expect("good, maps bounds", f, n, ras, 3);
    /* A zero return address ends it too. */
    record(0x200, at(0x300), 0);
    n = walk(at(0x100), at(0x100), &bounds, f, 64);
    expect("zero ra", f, n, ras, 1);

    /* Pointers out of bounds: into the fence, far away, near the top. */
    const uintptr_t bad[] = {
        (uintptr_t)mem + 8,         /* below: the lower fence */
        at(psize),                  /* the upper fence */
        at(psize) - W,              /* record would straddle the top */
        UINTPTR_MAX - W + 1,        /* wraps */
        UINTPTR_MAX & ~(uintptr_t)(W - 1),
        16,                         /* near null */
        at(0x203),                  /* misaligned */
        at(0x100),                  /* backwards (a loop) */
        at(0x200),                  /* itself */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        reset();
        record(0x100, at(0x200), ras[0]);
        record(0x200, bad[i], ras[1]);
        n = walk(at(0x100), at(0x100), &bounds, f, 64);
        expect("bad next", f, n, ras, 2);
        /* and as the starting frame pointer: only the pc */
        n = walk(bad[i] == at(0x100) || bad[i] == at(0x200) ? at(0x3) : bad[i], 0, &bounds, f,
                 64);
        expect("bad start", f, n, ras, 0);
        /* without bounds: found from the maps, same outcome */
        n = walk(at(0x100), at(0x100), NULL, f, 64);
        expect("bad next, maps bounds", f, n, ras, 2);
    }
    /* A frame pointer below the stack pointer is dead stack. */
    reset();
    record(0x100, 0, ras[0]);
    n = walk(at(0x100), at(0x800), &bounds, f, 64);
    expect("below sp", f, n, ras, 0);
    /* No frame pointer at all. */
    n = walk(0, at(0x800), &bounds, f, 64);
    expect("fp 0", f, n, ras, 0);
    /* A start in an inaccessible mapping with no bounds given. */
    n = walk((uintptr_t)mem + 64, 0, NULL, f, 64);
    expect("fenced start, maps bounds", f, n, ras, 0);

    /* A long chain is cut into head, omit, tail. */
    reset();
    size_t records = psize / (2 * W) - 1;
    for (size_t i = 0; i < records; i++)
        record(i * 2 * W, i + 1 < records ? at((i + 1) * 2 * W) : 0, 0x1000 + i);
    n = walk(at(0), at(0), &bounds, f, 16);
    CHECK(n == 16 && f[8].kind == BTP_FRAME_OMIT && f[8].value == records + 1 - 15,
          "long chain: n %zu omit %llu", n, (unsigned long long)f[8].value);
    CHECK(f[7].value == 0x1000 + 6 && f[9].value == 0x1000 + records - 7 &&
              f[15].value == 0x1000 + records - 1,
          "long chain: head/tail");

    /* Garbage: random words, many of them pointing into the page. Must end,
     * within the bounds, whatever the start. */
    srand(7);
    for (int round = 0; round < 200; round++) {
        uintptr_t *w = (uintptr_t *)(void *)page;
        for (size_t i = 0; i < psize / W; i++) {
            int r = rand();
            w[i] = (r & 3) ? at((size_t)rand() % psize) : (uintptr_t)r * 2654435761u;
        }
        uintptr_t start = at((size_t)rand() % psize);
        n = walk(start, 0, &bounds, f, 64);
        CHECK(n >= 1 && n <= 64, "garbage round %d: %zu", round, n);
    }

    munmap(mem, 3 * psize);
    return check_finish();
}
