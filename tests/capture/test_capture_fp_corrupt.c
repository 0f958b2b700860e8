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

/* What the library promises for a walk of `total` frames v[0..total) (the
 * pc 0x1234, then return addresses), written the plain way: snip_pre off
 * the top; then the innermost head and outermost tail around an omit if it
 * does not fit; then snip_post off the kept tail, then the omitted count,
 * then the head. */
static size_t model(const uintptr_t *v, size_t total, size_t cap, unsigned pre, unsigned post,
                    btp_frame *out)
{
    size_t first = pre < total ? pre : total;
    size_t n = total - first;
    size_t ring_cap = cap < 2 ? 0 : (cap - 1) / 2;
    size_t head_cap = cap < 2 ? cap : cap - 1 - ring_cap;
    size_t head = n < head_cap ? n : head_cap;
    size_t tail = n - head < ring_cap ? n - head : ring_cap;
    size_t omitted = n - head - tail;
    size_t tail_start = n - tail; /* before snip_post shortens the tail */
    size_t d = post < tail ? post : tail;
    tail -= d;
    post -= (unsigned)d;
    d = post < omitted ? post : omitted;
    omitted -= d;
    post -= (unsigned)d;
    head -= post < head ? post : head;
    size_t k = 0;
    for (size_t i = 0; i < head; i++)
        out[k++] = (btp_frame){v[first + i], BTP_FRAME_RA};
    if (omitted > 0 && k < cap)
        out[k++] = (btp_frame){omitted, BTP_FRAME_OMIT};
    for (size_t i = 0; i < tail; i++)
        out[k++] = (btp_frame){v[first + tail_start + i], BTP_FRAME_RA};
    if (k > 0 && out[0].kind == BTP_FRAME_RA)
        out[0].kind = BTP_FRAME_PC;
    return k;
}

/* Every small depth, capacity and snip against the model. */
static void test_shortening(void)
{
    uintptr_t v[24];
    btp_frame got[16], want[16];
    for (size_t records = 0; records < 23; records++) {
        reset();
        v[0] = 0x1234;
        for (size_t i = 0; i < records; i++) {
            record(0x100 + i * 2 * W, i + 1 < records ? at(0x100 + (i + 1) * 2 * W) : 0,
                   0x5000 + i);
            v[i + 1] = 0x5000 + i;
        }
        for (size_t cap = 1; cap <= 12; cap++)
            for (unsigned pre = 0; pre < 4; pre++)
                for (unsigned post = 0; post < 4; post++) {
                    btp_capture_options o = {0};
                    o.method = BTP_CAPTURE_FP;
                    o.snip_pre = pre;
                    o.snip_post = post;
                    btp_regs regs = {0x1234, at(0x100), records ? at(0x100) : 0};
                    size_t n = 0;
                    btp_status st = btp_capture_regs(&o, &regs, &bounds, got, cap, &n);
                    size_t k = model(v, records + 1, cap, pre, post, want);
                    int ok = st == BTP_OK && n == k;
                    for (size_t i = 0; ok && i < n; i++)
                        ok = got[i].kind == want[i].kind && got[i].value == want[i].value;
                    CHECK(ok, "records %zu cap %zu pre %u post %u: %zu frames, want %zu",
                          records, cap, pre, post, n, k);
                }
    }
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

    test_shortening();
    munmap(mem, 3 * psize);
    return check_finish();
}
