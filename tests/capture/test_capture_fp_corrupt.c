/*
 * The fp walker fed hand-built frame chains, good and bad, on a fake stack
 * page fenced by inaccessible pages: any read outside the bounds faults and
 * fails the test, so "does not crash" is checked for real.
 */
#include "../check.h"

#include <btpack/btpack.h>
#include <pthread.h>
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

#if defined(__x86_64__) && defined(__GNUC__)
/* btp_capture called as from a function whose frame record is at fp (rbp
 * set to it for the call), so that its quick walk (the fp method's usual
 * path: the thread's own stack, from the caller's record) meets chains
 * forged on this thread's stack. */
static __attribute__((noinline)) btp_status capture_from(uintptr_t fp,
                                                         const btp_capture_options *o,
                                                         btp_frame *f, size_t cap, size_t *n)
{
    register uintptr_t rdi __asm__("rdi") = (uintptr_t)o;
    register uintptr_t rsi __asm__("rsi") = (uintptr_t)f;
    register uintptr_t rdx __asm__("rdx") = cap;
    register uintptr_t rcx __asm__("rcx") = (uintptr_t)n;
    register uintptr_t r11 __asm__("r11") = (uintptr_t)&btp_capture;
    uintptr_t rax;
    /* past the red zone, aligned for the call; rbp saved and put back */
    __asm__ volatile("mov %%rsp, %%r12\n\t"
                     "sub $128, %%rsp\n\t"
                     "and $-16, %%rsp\n\t"
                     "push %%rbp\n\t"
                     "push %%rbp\n\t"
                     "mov %%rbx, %%rbp\n\t"
                     "call *%%r11\n\t"
                     "mov 8(%%rsp), %%rbp\n\t"
                     "mov %%r12, %%rsp"
                     : "=a"(rax), "+r"(rdi), "+r"(rsi), "+r"(rdx), "+r"(rcx), "+r"(r11)
                     : "b"(fp)
                     : "r8", "r9", "r10", "r12", "memory", "cc", "xmm0", "xmm1", "xmm2", "xmm3",
                       "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12",
                       "xmm13", "xmm14", "xmm15");
    return (btp_status)rax;
}

/* The frames after the first (the return address into capture_from) are
 * exactly ras[0..k). */
static void expect_quick(const char *what, btp_status st, const btp_frame *f, size_t n,
                         const uintptr_t *ras, size_t k)
{
    CHECK(st == BTP_OK && n == k + 1 && f[0].kind == BTP_FRAME_PC && f[0].value != 0,
          "%s: %s, %zu frames, expected %zu", what, btp_status_name(st), n, k + 1);
    for (size_t i = 0; i < k && n == k + 1; i++)
        CHECK(f[i + 1].kind == BTP_FRAME_RA && f[i + 1].value == ras[i], "%s: ra %zu", what, i);
}

/* Chains forged on this function's frame (this thread's stack, above
 * btp_capture's own record), good and bad: the walk follows a good one,
 * stops at the first bad record and reads nothing outside the stack (a
 * record pointing into the fence would fault). */
static __attribute__((noinline)) void test_quick_forged(const uint8_t *fence)
{
    volatile uintptr_t area[256];
    uintptr_t ras[64];
    btp_frame f[64];
    size_t n;
    btp_status st;
    btp_capture_options o = {0};
    o.method = BTP_CAPTURE_FP;
    /* this thread's bounds, remembered (the quick walk needs them) */
    CHECK(btp_capture(&o, f, 64, &n) == BTP_OK, "warm-up");
#define REC(i) ((uintptr_t)&area[i])
#define SET(i, next, ra) (area[i] = (next), area[(i) + 1] = (ra))
    for (size_t i = 0; i < 64; i++)
        ras[i] = 0x7000 + i;

    SET(8, REC(16), ras[0]);
    SET(16, REC(24), ras[1]);
    SET(24, 0, ras[2]);
    st = capture_from(REC(8), &o, f, 64, &n);
    expect_quick("forged good", st, f, n, ras, 3);
    st = capture_from(REC(8), &o, f, 5, &n); /* no room for a pass of the quick walk */
    expect_quick("forged good, cap 5", st, f, n, ras, 3);

    const uintptr_t bad[] = {
        REC(16) + 4,                /* misaligned */
        REC(8),                     /* itself */
        REC(4),                     /* backwards */
        0,                          /* the end */
        (uintptr_t)fence + 64,      /* off the stack, into the fence */
        UINTPTR_MAX & ~(uintptr_t)7 /* wraps */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        SET(8, bad[i], ras[0]);
        st = capture_from(REC(8), &o, f, 64, &n);
        expect_quick("forged bad next", st, f, n, ras, 1);
        /* as the caller's record itself: the return address alone */
        if (bad[i] != REC(8) && bad[i] != REC(4)) {
            st = capture_from(bad[i], &o, f, 64, &n);
            expect_quick("forged bad start", st, f, n, ras, 0);
        }
    }
    /* A zero return address ends the chain before it. */
    SET(8, REC(16), ras[0]);
    SET(16, REC(24), 0);
    st = capture_from(REC(8), &o, f, 64, &n);
    expect_quick("forged zero ra", st, f, n, ras, 1);

    /* Long chains: ending inside the array (the quick walk), and going on
     * past it (walked again through the collector: head, omit, tail). */
    for (size_t records = 50; records <= 60; records += 10) {
        for (size_t i = 0; i < records; i++)
            SET(4 * i, i + 1 < records ? REC(4 * (i + 1)) : 0, ras[i]);
        st = capture_from(REC(0), &o, f, 64, &n);
        expect_quick("forged long", st, f, n, ras, records);
        st = capture_from(REC(0), &o, f, 16, &n);
        CHECK(st == BTP_OK && n == 16 && f[8].kind == BTP_FRAME_OMIT &&
                  f[8].value == records + 1 - 15 && f[7].value == ras[6] &&
                  f[15].value == ras[records - 1],
              "forged long, cap 16: %zu frames", n);
    }
#undef SET
#undef REC
}

/* A thread's first capture, before it has found its stack: the quick
 * walk's limits are not set yet, so it must take no record (a chain into
 * the fence would fault) and leave the chain to the general walk, which
 * finds the bounds and stops there. */
static __attribute__((noinline)) void *first_capture(void *fence)
{
    volatile uintptr_t area[16];
    const uintptr_t ras[] = {0x7100};
    btp_frame f[64];
    size_t n = 0;
    btp_capture_options o = {0};
    o.method = BTP_CAPTURE_FP;
    area[8] = (uintptr_t)fence + 64;
    area[9] = ras[0];
    btp_status st = capture_from((uintptr_t)&area[8], &o, f, 64, &n);
    expect_quick("a thread's first capture, forged into the fence", st, f, n, ras, 1);
    return NULL;
}

static void test_quick_first_in_thread(uint8_t *fence)
{
    pthread_t t;
    CHECK(pthread_create(&t, NULL, first_capture, fence) == 0, "pthread_create");
    pthread_join(t, NULL);
}
#endif

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
#if defined(__x86_64__) && defined(__GNUC__)
    test_quick_forged(mem);
    test_quick_first_in_thread(mem);
#endif
    munmap(mem, 3 * psize);
    return check_finish();
}
