/*
 * The Cortex-M capture code (ports/cortex-m) on the host, on simulated
 * target memory: the stacked-frame reader, the call-site test, the frame
 * record walk and the stack scan on hand-built GCC frames, records through a
 * sink, and random stacks and registers. Target loads go to sim_load32/16,
 * which abort on any address outside the simulated memory: a read the code
 * did not check against its bounds fails the test (with ASan, so does any
 * host-side overrun).
 */
#include <btpack/btpack.h>
#include <btpack/cortex_m.h>

#include <stdio.h>

#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "../test_rng.h"

/* ---- simulated memory: code at TEXT_LO, a stack at STACK_LO ---- */

#define TEXT_LO 0x00000100u
#define TEXT_WORDS 4096u
#define STACK_LO 0x20000000u
#define STACK_WORDS 512u
#define STACK_HI (STACK_LO + 4u * STACK_WORDS)

static uint16_t text[TEXT_WORDS * 2];
static uint32_t stack[STACK_WORDS];
/* The bounds the code under test is given may be narrower than the
 * simulated memory; reads must stay inside what it was given. */
static btp_cm_range given_stack, given_text;

uint32_t sim_load32(uint32_t a);
uint16_t sim_load16(uint32_t a);

static int inside(btp_cm_range r, uint32_t a, uint32_t n)
{
    return a >= r.lo && a < r.hi && r.hi - a >= n;
}

uint32_t sim_load32(uint32_t a)
{
    if (!inside(given_stack, a, 4) || a < STACK_LO || a + 4 > STACK_HI || (a & 3)) {
        fprintf(stderr, "read32 of %#x outside the stack given [%#x, %#x)\n", a, given_stack.lo,
                given_stack.hi);
        abort();
    }
    return stack[(a - STACK_LO) / 4];
}

uint16_t sim_load16(uint32_t a)
{
    if (!inside(given_text, a, 2) || a < TEXT_LO || a + 2 > TEXT_LO + sizeof text || (a & 1)) {
        fprintf(stderr, "read16 of %#x outside the text given [%#x, %#x)\n", a, given_text.lo,
                given_text.hi);
        abort();
    }
    return text[(a - TEXT_LO) / 2];
}

static uint32_t *stk(uint32_t a)
{
    return &stack[(a - STACK_LO) / 4];
}

/* A BL at `site` to `target`; returns its return address (Thumb bit set). */
static uint32_t put_bl(uint32_t site, uint32_t target)
{
    uint32_t off = target - (site + 4);
    uint32_t s = (off >> 24) & 1, i1 = (off >> 23) & 1, i2 = (off >> 22) & 1;
    uint32_t j1 = (!i1) ^ s, j2 = (!i2) ^ s;
    text[(site - TEXT_LO) / 2] = (uint16_t)(0xF000u | s << 10 | ((off >> 12) & 0x3FFu));
    text[(site - TEXT_LO) / 2 + 1] =
        (uint16_t)(0xD000u | j1 << 13 | j2 << 11 | ((off >> 1) & 0x7FFu));
    return (site + 4) | 1u;
}

/* A BLX r3 at `site`; returns its return address. */
static uint32_t put_blx(uint32_t site)
{
    text[(site - TEXT_LO) / 2] = 0x4798u;
    return (site + 2) | 1u;
}

static btp_cm_layout layout(void)
{
    btp_cm_layout l;
    l.stack.lo = STACK_LO;
    l.stack.hi = STACK_HI;
    l.text.lo = TEXT_LO;
    l.text.hi = TEXT_LO + sizeof text;
    l.scan_words = 0;
    given_stack = l.stack;
    given_text = l.text;
    return l;
}

static void reset(void)
{
    memset(text, 0xBF, sizeof text); /* "nop"-like filler that is no call */
    for (unsigned i = 0; i < STACK_WORDS; i++)
        stack[i] = 0xA5A50000u + i; /* not addresses in text */
}

/* ---- call-site test ---- */

static void test_thumb(void)
{
    reset();
    btp_cm_layout l = layout();
    uint32_t target;
    /* Forward and backward BLs decode to their targets (through capture's
     * lr test, which uses the same decoder). */
    uint32_t ra_fwd = put_bl(0x200, 0x1F00);
    uint32_t ra_back = put_bl(0x1800, 0x120);
    uint32_t ra_blx = put_blx(0x400);
    btp_cm_fault f;
    memset(&f, 0, sizeof f);
    uint32_t addrs[8];
    size_t n;
    struct {
        uint32_t lr, pc;
        size_t want;
    } cases[] = {
        {ra_fwd, 0x1F10, 2},        /* called F0 at 0x1F00, pc 16 bytes in: lr is its caller */
        {ra_fwd, 0x1F00 + 1024, 1}, /* too far into the function for a leaf */
        {ra_fwd, 0x1EFE, 1},        /* pc before the call's target */
        {ra_back, 0x130, 2},
        {ra_blx, 0x1000, 2},        /* through a register: cannot be told apart */
        {ra_fwd & ~1u, 0x1F10, 1},  /* even: not a Thumb return address */
        {TEXT_LO | 1u, 0x1F10, 1},  /* no instruction before it inside text */
        {0x1235, 0x1F10, 1},        /* no call before it */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        f.r[14] = cases[i].lr;
        f.r[15] = cases[i].pc;
        f.r[13] = STACK_HI; /* nothing on the stack to scan */
        btp_status st = btp_cm_capture(&f, &l, btp_cm_walk_scan, addrs, 8, &n, NULL);
        CHECK(st == BTP_OK && n == cases[i].want, "lr case %zu: %s, %zu frames", i,
              btp_status_name(st), n);
    }
    (void)target;
    /* Text that ends inside the call refuses it without reading past its
     * end; text that ends right after it (a last call that never returns)
     * takes it. */
    f.r[14] = ra_fwd;
    f.r[15] = 0x1F10;
    for (uint32_t hi = 0x202; hi <= 0x204; hi++) {
        l.text.lo = 0x200;
        l.text.hi = hi;
        given_text = l.text;
        CHECK(btp_cm_capture(&f, &l, btp_cm_walk_scan, addrs, 8, &n, NULL) == BTP_OK &&
                  n == (hi == 0x204 ? 2u : 1u),
              "text [0x200, %#x): %zu frames", hi, n);
    }
}

/* ---- the stacked frame ---- */

static void put_frame(uint32_t at, uint32_t pc, uint32_t lr, uint32_t xpsr)
{
    for (unsigned i = 0; i < 4; i++)
        *stk(at + 4 * i) = 0x100u + i; /* r0-r3 */
    *stk(at + 16) = 0x112u;            /* r12 */
    *stk(at + 20) = lr;
    *stk(at + 24) = pc;
    *stk(at + 28) = xpsr;
}

static void test_fault_read(void)
{
    reset();
    btp_cm_layout l = layout();
    btp_cm_entry e;
    for (unsigned i = 0; i < 8; i++)
        e.r4_r11[i] = 0x400u + i;
    btp_cm_fault f;
    uint32_t fr = STACK_LO + 0x100;

    e.exc_return = 0xFFFFFFFDu; /* thread mode, PSP, basic frame */
    put_frame(fr, 0x1000, 0x2001, 0x01000000u);
    CHECK(btp_cm_fault_read(&f, fr, &e, l.stack) == BTP_OK, "basic frame");
    CHECK(f.r[15] == 0x1000 && f.r[14] == 0x2001 && f.r[13] == fr + 32 && f.r[0] == 0x100 &&
              f.r[12] == 0x112 && f.r[4] == 0x400 && f.r[11] == 0x407 &&
              f.flags == BTP_CM_FAULT_PSP && f.xpsr == 0x01000000u,
          "basic frame: pc %#x sp %#x flags %#x", f.r[15], f.r[13], f.flags);

    e.exc_return = 0xFFFFFFE9u; /* thread mode, MSP, FPU frame */
    put_frame(fr, 0x1000, 0x2001, 0x01000200u); /* realigned */
    CHECK(btp_cm_fault_read(&f, fr, &e, l.stack) == BTP_OK &&
              f.r[13] == fr + 32 + 72 + 4 &&
              f.flags == (BTP_CM_FAULT_FPU_FRAME | BTP_CM_FAULT_PADDED),
          "FPU frame, padded: sp %#x flags %#x", f.r[13], f.flags);

    e.exc_return = 0xFFFFFFF1u; /* handler mode */
    CHECK(btp_cm_fault_read(&f, fr, &e, l.stack) == BTP_OK &&
              (f.flags & BTP_CM_FAULT_HANDLER),
          "handler mode flag");

    /* ARMv8-M: DCRS clear, the additional state context comes first. */
    e.exc_return = 0xFFFFFFDDu & ~0x20u;
    for (unsigned i = 0; i < 8; i++)
        *stk(fr + 8 + 4 * i) = 0x800u + i;
    put_frame(fr + 40, 0x1100, 0x2101, 0x01000000u);
    CHECK(btp_cm_fault_read(&f, fr, &e, l.stack) == BTP_OK && f.r[15] == 0x1100 &&
              f.r[4] == 0x800 && f.r[11] == 0x807 && f.frame == fr + 40 &&
              f.r[13] == fr + 40 + 32 && (f.flags & BTP_CM_FAULT_ADDITIONAL),
          "additional state context: pc %#x r4 %#x", f.r[15], f.r[4]);

    /* Out of bounds, at every position around the top and bottom. */
    e.exc_return = 0xFFFFFFFDu;
    for (uint32_t at = STACK_HI - 40; at < STACK_HI + 8; at += 4) {
        btp_status st = btp_cm_fault_read(&f, at, &e, l.stack);
        CHECK(at + 32 <= STACK_HI ? st == BTP_OK : st == BTP_E_CM_FRAME_BOUNDS,
              "frame at top - %u: %s", STACK_HI - at, btp_status_name(st));
    }
    e.exc_return = 0xFFFFFFEDu; /* FPU frame: 104 bytes */
    CHECK(btp_cm_fault_read(&f, STACK_HI - 100, &e, l.stack) == BTP_E_CM_FRAME_BOUNDS,
          "FPU frame past the top");
    CHECK(btp_cm_fault_read(&f, STACK_LO - 4, &e, l.stack) == BTP_E_CM_FRAME_BOUNDS,
          "below the stack");
    CHECK(btp_cm_fault_read(&f, 0xFFFFFFF0u, &e, l.stack) == BTP_E_CM_FRAME_BOUNDS,
          "wrapping frame");
    CHECK(btp_cm_fault_read(&f, fr + 2, &e, l.stack) == BTP_E_CM_FRAME_BOUNDS, "misaligned");
    e.exc_return = 0x00001234u;
    CHECK(btp_cm_fault_read(&f, fr, &e, l.stack) == BTP_E_CM_EXC_RETURN, "not EXC_RETURN");
    CHECK(btp_cm_fault_read(NULL, fr, &e, l.stack) == BTP_E_INVALID_ARGUMENT, "NULL fault");
}

/* ---- GCC frames: main -> F2 -> F1 -> F0 ---- */

/* Functions at fixed places in text, each with a call site. */
#define F_MAIN 0x0300u
#define F2 0x0600u
#define F1 0x0900u
#define F0 0x0C00u

struct chain {
    uint32_t sp;          /* SP at the fault */
    uint32_t ra[3];       /* return addresses into F1, F2, main (Thumb bit set) */
    uint32_t stale;       /* a stale return address left in F1's locals */
};

/* Push a GCC frame on the simulated stack at *sp (= the caller's r7): lr,
 * `high` registers r8.., r7, then `locals` words of junk. Returns the new
 * r7 (= new SP). */
static uint32_t gcc_frame(uint32_t *sp, uint32_t caller_r7, uint32_t ra, unsigned high,
                          unsigned locals)
{
    *sp -= 4;
    *stk(*sp) = ra;
    for (unsigned i = 0; i < high; i++) {
        *sp -= 4;
        *stk(*sp) = 0x8888u + i;
    }
    *sp -= 4;
    *stk(*sp) = caller_r7;
    for (unsigned i = 0; i < locals; i++) {
        *sp -= 4;
        /* a pointer to 12 bytes above itself, as locals may hold: the
         * walk must not take it for a record (its "lr" is no return
         * address) */
        *stk(*sp) = (i == 1) ? *sp + 12 : 0x5A5A0000u + i;
    }
    return *sp;
}

static struct chain build_chain(int leaf)
{
    reset();
    struct chain c;
    c.ra[2] = put_bl(F_MAIN + 0x10, F2);
    c.ra[1] = put_bl(F2 + 0x20, F1);
    c.stale = put_bl(F1 + 0x08, F_MAIN + 0x80); /* an earlier call of F1, returned */
    c.ra[0] = put_bl(F1 + 0x30, F0);
    uint32_t sp = STACK_HI - 16;
    uint32_t r7 = gcc_frame(&sp, 0xDEAD0000u, 0x0Fu /* from startup: no call */, 0, 2);
    r7 = gcc_frame(&sp, r7, c.ra[2], 1, 3);   /* F2: push {r7, r8, lr} */
    r7 = gcc_frame(&sp, r7, c.ra[1], 0, 4);   /* F1 */
    *stk(sp + 4) = c.stale;                   /* F1's locals keep a stale one */
    if (!leaf)
        r7 = gcc_frame(&sp, r7, c.ra[0], 2, 2); /* F0: push {r7, r8, r9, lr} */
    c.sp = sp;
    return c;
}

static size_t capture(const btp_cm_fault *f, btp_cm_method m, uint32_t *addrs, size_t max,
                      int *trunc)
{
    btp_cm_layout l = layout();
    size_t n = 0;
    btp_status st = btp_cm_capture(f, &l, m, addrs, max, &n, trunc);
    CHECK(st == BTP_OK, "capture: %s", btp_status_name(st));
    return n;
}

static void test_walks(void)
{
    for (int leaf = 0; leaf <= 1; leaf++) {
        struct chain c = build_chain(leaf);
        btp_cm_fault f;
        memset(&f, 0, sizeof f);
        f.r[13] = c.sp;
        f.r[15] = F0 + 0x0A;
        /* Framed: lr is whatever F0 called last (here: nothing useful).
         * Leaf: lr is F0's return address. */
        f.r[14] = leaf ? c.ra[0] : 0xFFFFFFFFu;
        uint32_t want[] = {F0 + 0x0A, c.ra[0] & ~1u, c.ra[1] & ~1u, c.ra[2] & ~1u};
        uint32_t a[16];
        int trunc;
        size_t n = capture(&f, btp_cm_walk_fp, a, 16, &trunc);
        CHECK(n == 4 && !trunc && memcmp(a, want, sizeof want) == 0,
              "fp walk (leaf %d): %zu frames: %#x %#x %#x %#x", leaf, n, a[0], a[1], a[2],
              a[3]);
        n = capture(&f, btp_cm_walk_scan, a, 16, &trunc);
        /* The scan finds the stale return address too, between F1 and F2. */
        uint32_t want_scan[] = {F0 + 0x0A, c.ra[0] & ~1u, c.stale & ~1u, c.ra[1] & ~1u,
                                c.ra[2] & ~1u};
        CHECK(n == 5 && !trunc && memcmp(a, want_scan, sizeof want_scan) == 0,
              "scan (leaf %d): %zu frames", leaf, n);
        /* Truncation: the array holds 3. */
        n = capture(&f, btp_cm_walk_fp, a, 3, &trunc);
        CHECK(n == 3 && trunc && memcmp(a, want, 3 * sizeof a[0]) == 0, "fp truncated: %zu", n);
        n = capture(&f, btp_cm_walk_scan, a, 1, &trunc);
        CHECK(n == 1 && trunc && a[0] == want[0], "scan truncated to 1: %zu", n);
        /* The scan's word budget. */
        btp_cm_layout l = layout();
        l.scan_words = 2;
        CHECK(btp_cm_capture(&f, &l, btp_cm_walk_scan, a, 16, &n, NULL) == BTP_OK &&
                  n == (leaf ? 3u : 1u),
              "scan of 2 words: %zu", n);
        /* A stack range that ends inside the chain: the walk stops there,
         * reading nothing above it. */
        l = layout();
        l.stack.hi = c.sp + 32;
        given_stack = l.stack;
        CHECK(btp_cm_capture(&f, &l, btp_cm_walk_fp, a, 16, &n, NULL) == BTP_OK &&
                  n == (leaf ? 3u : 2u),
              "fp walk in a cut stack: %zu", n);
        CHECK(btp_cm_capture(&f, &l, btp_cm_walk_scan, a, 16, &n, NULL) == BTP_OK && n >= 1,
              "scan in a cut stack: %zu", n);
    }
    /* Arguments. */
    btp_cm_fault f;
    memset(&f, 0, sizeof f);
    btp_cm_layout l = layout();
    uint32_t a[4];
    size_t n;
    CHECK(btp_cm_capture(&f, &l, btp_cm_walk_fp, a, 0, &n, NULL) == BTP_E_INVALID_ARGUMENT,
          "max 0");
    CHECK(btp_cm_capture(&f, &l, NULL, a, 4, &n, NULL) == BTP_E_INVALID_ARGUMENT, "no method");
    l.text.hi = l.text.lo;
    CHECK(btp_cm_capture(&f, &l, btp_cm_walk_fp, a, 4, &n, NULL) == BTP_E_INVALID_ARGUMENT,
          "empty text");
}

static uint64_t below(uint64_t *rng, uint64_t n)
{
    return test_rng(rng) % n;
}

/* Random stacks, registers and bounds: every read stays inside the bounds
 * given (sim_load aborts otherwise), counts stay inside the array. */
static void test_random(void)
{
    uint64_t rng = 0x14u;
    for (int iter = 0; iter < 20000; iter++) {
        reset();
        btp_cm_layout l = layout();
        /* Random calls in text, random stack words (many of them return
         * addresses and pointers into the stack). */
        for (int i = 0; i < 64; i++) {
            uint32_t site = TEXT_LO + 2u * (uint32_t)below(&rng, TEXT_WORDS * 2 - 2);
            put_bl(site, TEXT_LO + 2u * (uint32_t)below(&rng, TEXT_WORDS * 2));
        }
        for (unsigned i = 0; i < STACK_WORDS; i++) {
            uint32_t r = (uint32_t)test_rng(&rng);
            switch (r % 4) {
            case 0: stack[i] = r; break;
            case 1: stack[i] = (TEXT_LO + (r >> 8) % (TEXT_WORDS * 4)) | 1u; break;
            case 2: stack[i] = STACK_LO + 4u * i + 4u * (uint32_t)((r >> 8) % 12); break;
            default: stack[i] = STACK_LO + (r >> 8) % (STACK_WORDS * 4 + 64); break;
            }
        }
        /* Bounds inside the simulated memory, possibly empty or tiny. */
        uint32_t s0 = STACK_LO + 4u * (uint32_t)below(&rng, STACK_WORDS);
        uint32_t s1 = STACK_LO + (uint32_t)below(&rng, STACK_WORDS * 4 + 1);
        l.stack.lo = s0 < s1 ? s0 : s1;
        l.stack.hi = s0 < s1 ? s1 : s0;
        uint32_t t0 = TEXT_LO + (uint32_t)below(&rng, TEXT_WORDS * 4);
        l.text.hi = t0 + 1 + (uint32_t)below(&rng, TEXT_LO + TEXT_WORDS * 4 - t0);
        l.text.lo = t0;
        l.scan_words = (uint32_t)below(&rng, 3) * 40u;
        given_stack = l.stack;
        given_text = l.text;
        btp_cm_fault f;
        for (unsigned i = 0; i < 16; i++)
            f.r[i] = (uint32_t)test_rng(&rng);
        if (below(&rng, 2))
            f.r[13] = STACK_LO + (uint32_t)below(&rng, STACK_WORDS * 4 + 8) - 4;
        if (below(&rng, 2))
            f.r[14] = stack[below(&rng, STACK_WORDS)];
        uint32_t a[24];
        size_t max = 1 + below(&rng, 24), n = 99;
        int trunc = -1;
        btp_cm_method m = below(&rng, 2) ? btp_cm_walk_fp : btp_cm_walk_scan;
        btp_status st = btp_cm_capture(&f, &l, m, a, max, &n, &trunc);
        if (st != BTP_OK || n < 1 || n > max || (trunc != 0 && trunc != 1)) {
            CHECK(0, "random %d: %s n %zu max %zu", iter, btp_status_name(st), n, max);
            break;
        }
        btp_cm_entry e;
        memset(&e, 0, sizeof e);
        e.exc_return = 0xFFFFFF00u | (uint32_t)test_rng(&rng);
        st = btp_cm_fault_read(&f, (uint32_t)test_rng(&rng) % (STACK_WORDS * 8) + STACK_LO -
                                       STACK_WORDS * 2,
                               &e, l.stack);
        if (st != BTP_OK && st != BTP_E_CM_FRAME_BOUNDS) {
            CHECK(0, "random fault_read %d: %s", iter, btp_status_name(st));
            break;
        }
    }
    CHECK(1, "random stacks");
}

/* ---- records ---- */

struct membuf {
    char data[2048];
    size_t len;
    int fail_after; /* calls left before failing; -1: never */
};

static int mem_sink(void *ctx, const void *bytes, size_t n)
{
    struct membuf *m = ctx;
    if (m->fail_after == 0 || n == 0 || n > sizeof m->data - m->len)
        return -1;
    if (m->fail_after > 0)
        m->fail_after--;
    memcpy(m->data + m->len, bytes, n);
    m->len += n;
    return 0;
}

static void test_record(void)
{
    uint32_t chain[40];
    for (unsigned i = 0; i < 40; i++)
        chain[i] = 0x08000000u + 0x1234u * i + (i ? 0x10u : 0);
    for (size_t n = 0; n <= 40; n += 13) {
        /* Raw CBF: decodes to a pc and n-1 return addresses. */
        struct membuf m = {{0}, 0, -1};
        CHECK(btp_cm_record_cbf(chain, n, 1, mem_sink, &m) == BTP_OK,
              "raw %zu", n);
        btp_frame back[48];
        btp_cbf_info info;
        CHECK(m.len <= BTP_CM_CBF_MAX(n), "raw %zu: %zu bytes", n, m.len);
        btp_status st = btp_cbf_decode(m.data, m.len, BTP_CBF_POLICY_STRICT, back, 48, &info);
        int same = st == BTP_OK && info.frames == n && info.truncated && info.word_bits == 32;
        for (size_t i = 0; same && i < n; i++)
            same = back[i].value == chain[i] && back[i].kind == (i ? BTP_FRAME_RA : BTP_FRAME_PC);
        CHECK(same, "raw %zu: decoded back %s, %zu frames", n, btp_status_name(st), info.frames);

        /* The hex line: the same bytes. */
        struct membuf h = {{0}, 0, -1};
        CHECK(btp_cm_record_cbf_line(chain, n, 1, mem_sink, &h) == BTP_OK,
              "line %zu", n);
        int ok = h.len == 4 + 2 * m.len + 1 && memcmp(h.data, "cbf ", 4) == 0 &&
                 h.data[h.len - 1] == '\n';
        for (size_t i = 0; ok && i < m.len; i++) {
            char hx[3];
            snprintf(hx, sizeof hx, "%02x", (unsigned char)m.data[i]);
            ok = memcmp(h.data + 4 + 2 * i, hx, 2) == 0;
        }
        CHECK(ok, "line %zu: %.*s", n, (int)h.len, h.data);

        /* The heap record: "m,0xSIZE,0xPTR," then the same hex digits. */
        struct membuf a = {{0}, 0, -1};
        CHECK(btp_cm_record_alloc_line(4294967295u, 0x20000a08u, chain, n, 1, mem_sink, &a) ==
                  BTP_OK,
              "alloc line %zu", n);
        static const char head[] = "m,0xffffffff,0x20000a08,";
        ok = a.len == sizeof head - 1 + h.len - 4 && memcmp(a.data, head, sizeof head - 1) == 0 &&
             memcmp(a.data + sizeof head - 1, h.data + 4, h.len - 4) == 0;
        CHECK(ok, "alloc line %zu: %.*s", n, (int)a.len, a.data);

        /* ~m#: up to 31 frames, all decode as return addresses. */
        struct membuf w = {{0}, 0, -1};
        st = btp_cm_record_lws_line(chain, n, mem_sink, &w);
        if (n > BTP_LWS_MAX_FRAMES) {
            CHECK(st == BTP_E_DEPTH_TOO_LARGE && w.len == 0, "lws %zu: %s", n,
                  btp_status_name(st));
            continue;
        }
        btp_lws_info li;
        btp_status dst = st == BTP_OK && w.len > 4
                             ? btp_lws_m_decode(w.data, w.len - 1, 32, back, 48, &li)
                             : BTP_E_SYNTAX;
        same = st == BTP_OK && dst == BTP_OK && li.depth == n && w.data[w.len - 1] == '\n';
        for (size_t i = 0; same && i < n; i++)
            same = back[i].value == chain[i];
        CHECK(same, "lws %zu: %s / %s", n, btp_status_name(st), btp_status_name(dst));
    }
    /* A failing sink is an I/O error, on the first and on a later piece. */
    for (int after = 0; after <= 1; after++) {
        struct membuf m = {{0}, 0, after};
        CHECK(btp_cm_record_cbf_line(chain, 40, 0, mem_sink, &m) == BTP_E_IO,
              "failing sink after %d", after);
    }
    /* Free lines; a failed allocation's pointer 0 and a size of 0. */
    struct membuf fl = {{0}, 0, -1};
    CHECK(btp_cm_record_free_line(0x20000a08u, mem_sink, &fl) == BTP_OK &&
              btp_cm_record_free_line(0, mem_sink, &fl) == BTP_OK &&
              btp_cm_record_alloc_line(0, 0, chain, 1, 0, mem_sink, &fl) == BTP_OK,
          "free lines");
    static const char frees[] = "f,,0x20000a08\nf,,0x0\nm,0x0,0x0,";
    CHECK(fl.len > sizeof frees && memcmp(fl.data, frees, sizeof frees - 1) == 0,
          "free lines: %.*s", (int)fl.len, fl.data);
    for (int after = 0; after <= 1; after++) {
        struct membuf m = {{0}, 0, after};
        CHECK(btp_cm_record_alloc_line(1, 2, chain, 40, 0, mem_sink, &m) == BTP_E_IO,
              "alloc line, failing sink after %d", after);
    }
    struct membuf m = {{0}, 0, 0};
    CHECK(btp_cm_record_free_line(1, mem_sink, &m) == BTP_E_IO &&
              btp_cm_record_free_line(1, NULL, &m) == BTP_E_INVALID_ARGUMENT,
          "free line errors");
    m.fail_after = -1;
    uint32_t many[65] = {0};
    CHECK(btp_cm_record_cbf(many, 65, 0, mem_sink, &m) == BTP_E_INVALID_ARGUMENT &&
              btp_cm_record_cbf_line(many, 65, 0, mem_sink, &m) == BTP_E_INVALID_ARGUMENT &&
              btp_cm_record_lws_line(many, 65, mem_sink, &m) == BTP_E_INVALID_ARGUMENT &&
              btp_cm_record_alloc_line(1, 2, many, 65, 0, mem_sink, &m) ==
                  BTP_E_INVALID_ARGUMENT,
          "65 frames");
    CHECK(btp_cm_record_cbf(NULL, 1, 0, mem_sink, &m) == BTP_E_INVALID_ARGUMENT &&
              btp_cm_record_lws_line(NULL, 1, mem_sink, &m) == BTP_E_INVALID_ARGUMENT,
          "NULL addrs");
    CHECK(btp_cm_record_cbf_line(chain, 1, 0, NULL, &m) == BTP_E_INVALID_ARGUMENT,
          "NULL sink");
    CHECK(btp_cm_record_cbf(NULL, 0, 0, mem_sink, &m) == BTP_OK && m.len == 2,
          "empty chain: %zu bytes", m.len);
    CHECK(strcmp(btp_status_name(BTP_E_CM_FRAME_BOUNDS), "cm_frame_bounds") == 0 &&
              strcmp(btp_status_name(BTP_E_CM_EXC_RETURN), "cm_exc_return") == 0,
          "status names");
}

int main(void)
{
    test_thumb();
    test_fault_read();
    test_walks();
    test_random();
    test_record();
    return check_finish();
}
