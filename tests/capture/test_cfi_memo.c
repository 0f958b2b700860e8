/*
 * The cfi walker's memo of the walk before (lib/capture/cfi.c, "The walk
 * memo"): a walk that takes its end from the memo must give the frames the
 * walk without memo and cache gives, whatever changed in between:
 *  - over a copy of this program's image and a stack of its return
 *    addresses (and zeros, which end walks), changed word by word between
 *    walks, and in particular at the very slots the memo read;
 *  - after the image was replaced by another at the same address;
 *  - on this thread's real stack, from call paths that differ at the same
 *    depth and from recursion of several depths, in turn;
 *  - there too, for the walk's head (the frames above the collector's
 *    anchor and those it snips, taken relative to the start's stack
 *    pointer), from several depths and with the head's last return address
 *    changing between walks;
 *  - in threads capturing through btp_capture() (the per-thread memo)
 *    while signal handlers capture on top of them.
 * Each part also checks that the memo was used, so that it tests something.
 */
#include "../cbf_testutil.h"
#include "../check.h"
#include "../test_rng.h"
#include "chain.h"

#include "image_copy.h"

#include "capture/cfi_cache.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CAP 64
#include "signal_capture.h" /* uses CAP */

/* The copy-image parts need walks the memo records (ending at a return
 * address of 0 after cached steps); an AddressSanitizer build's own code
 * gives few (its frames' layouts are mostly walked in full), so there they
 * check the frames only and say so, and the other build checks that the
 * memo was used too. */
#if defined(__SANITIZE_ADDRESS__)
#define NEED_USE 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define NEED_USE 0
#endif
#endif
#ifndef NEED_USE
#define NEED_USE 1
#endif
#define W ((uintptr_t)sizeof(uintptr_t))

static uint64_t rng = 88172645463325252ull;
static uint64_t next_rand(void)
{
    return test_rng(&rng);
}

static int same_frames(const btp_frame *a, size_t na, const btp_frame *b, size_t nb)
{
    return tu_frames_diff(a, na, b, nb) < 0;
}

/* ------------------------------------------------------------------ */
/* A copied image and a stack changed word by word                      */
/* ------------------------------------------------------------------ */

static own_image im;
static copy_env ce = {&im, {NULL, 0}, 1};
static _Alignas(64) btp_cfi_slot slots[4096];
static btp_cfi_cache cache = {4095, slots};
static btp_cfi_memo memo;

static size_t copy_walk(const btp_cfi_regs *regs, int with, btp_frame *out)
{
    btp_cfi_env env = copy_env_of(&ce, with ? &cache : NULL);
    env.memo = with ? &memo : NULL;
    btp_collector c;
    btp_capture_options o = {0};
    btp_collector_init(&c, out, CAP, 0, &o);
    (void)btp_cfi_walk(&c, regs, &env);
    return btp_collector_finish(&c);
}

static uintptr_t text_word(void)
{
    return im.text_lo + im.delta + (uintptr_t)(next_rand() >> 20) % (im.text_hi - im.text_lo);
}

/* The words walks read: the first part of the stack. */
#define HOT (6 * 1024)

/* A word for offset i of the stack: a return address mostly, 0 now and
 * then (it ends a walk), or an address a little further up the stack (a
 * saved frame pointer, for code whose CFA is based on it). */
static uintptr_t stack_word(size_t i)
{
    uint64_t r = next_rand() % 9;
    size_t up = i + W * (1 + (size_t)(next_rand() % 32));
    if (r == 0)
        return 0;
    if (r <= 2 && up + W <= ce.stack.size)
        return (uintptr_t)ce.stack.p + up;
    return text_word();
}

static void fill_stack(void)
{
    for (size_t i = 0; i + W <= ce.stack.size; i += W) {
        uintptr_t v = stack_word(i);
        memcpy(ce.stack.p + i, &v, W);
    }
}

static void start_regs(btp_cfi_regs *regs, uint64_t seed)
{
    memset(regs, 0, sizeof *regs);
    uint64_t x = seed * 6364136223846793005ull + 1442695040888963407ull;
    regs->pc = im.text_lo + im.delta + (uintptr_t)(x >> 20) % (im.text_hi - im.text_lo);
    for (unsigned i = 0; i < BTP_CFI_NREG; i++)
        regs->r[i] = (uintptr_t)ce.stack.p + 64 * i + (uintptr_t)(x >> 40) % 4 * W;
    regs->valid = ~(uint64_t)0 >> (64 - BTP_CFI_NREG);
}

/* One walk with the memo against one without: 1 if they agree. */
static int agree(const btp_cfi_regs *regs, size_t *n_out, btp_frame *ref)
{
    btp_frame got[CAP];
    size_t nr = copy_walk(regs, 0, ref), ng = copy_walk(regs, 1, got);
    *n_out = nr;
    return same_frames(ref, nr, got, ng);
}

/* Starting states whose walks the memo can record (they end at a return
 * address of 0 or the outermost frame, after a few cached steps; random
 * stacks end most walks otherwise: a CFA that does not go up). */
#define STARTS 24
static uint64_t starts[STARTS];
static unsigned n_starts;

static void pick_starts(void)
{
    for (int tries = 0;; tries++) {
        n_starts = 0;
        uint64_t seed = next_rand() % 100000;
        for (unsigned k = 0; k < 4000 && n_starts < STARTS; k++, seed++) {
            btp_cfi_regs regs;
            start_regs(&regs, seed);
            btp_frame f[CAP];
            copy_walk(&regs, 1, f);
            memo.n = 0;
            copy_walk(&regs, 1, f); /* its layouts cached now */
            if (memo.n >= 3)
                starts[n_starts++] = seed;
        }
        if (n_starts >= STARTS / 2 || tries == 3)
            break;
        fill_stack(); /* the changes left few: a fresh stack */
    }
    if (n_starts == 0)
        starts[n_starts++] = 0;
}

/* Walks from a few starting states, the stack changed between them: a
 * random word of the part walked, or a slot the memo read. */
static void changed_stacks(void)
{
    enum { WALKS = 30000 };
    pick_starts();
    unsigned bad = 0, targeted = 0, mattered = 0;
    unsigned long used0 = memo.used;
    for (unsigned w = 0; w < WALKS; w++) {
        btp_cfi_regs regs;
        start_regs(&regs, starts[next_rand() % n_starts]);
        btp_frame before[CAP], after[CAP];
        size_t nb, na;
        if (!agree(&regs, &nb, before))
            bad++;
        uint64_t pick = next_rand();
        if (pick % 3 == 0 && memo.n > 0) {
            /* a slot the memo read (a return address, or a frame pointer
             * that a later step is based on) */
            /* (states BTP_CFI_MEMO_N - n .. BTP_CFI_MEMO_N, the last the end) */
            unsigned k = BTP_CFI_MEMO_N - memo.n + (unsigned)(next_rand() % memo.n);
            uint64_t f = memo.info[k];
            int8_t off = (int8_t)(uint8_t)(pick & 1 ? f >> 8 : f);
            if (off == -128)
                off = (int8_t)(uint8_t)f;
            uintptr_t at = memo.sp[k + 1] + (uintptr_t)((intptr_t)off * (intptr_t)W);
            if (at >= (uintptr_t)ce.stack.p && at + W <= (uintptr_t)ce.stack.p + ce.stack.size) {
                uintptr_t v = stack_word(at - (uintptr_t)ce.stack.p);
                memcpy((void *)at, &v, W);
                targeted++;
            }
        } else if (pick % 3 == 1) {
            size_t i = (size_t)(next_rand() % (HOT / W)) * W;
            uintptr_t v = stack_word(i);
            memcpy(ce.stack.p + i, &v, W);
        }
        /* again from the same start: the memo's states come up */
        if (!agree(&regs, &na, after))
            bad++;
        if (pick % 3 == 0)
            mattered += !same_frames(before, nb, after, na);
        if (w % 5000 == 4999)
            fill_stack(); /* a fresh stack now and then */
        if (w % 200 == 199)
            pick_starts(); /* starts the memo can record, on the stack as it is now */
    }
    unsigned long used = memo.used - used0;
    CHECK(bad == 0, "%u walks with the memo differed from the walk without", bad);
    if (!NEED_USE)
        printf("changed stacks: memo use not checked (AddressSanitizer build)\n");
    CHECK(!NEED_USE || used > WALKS / 10, "the memo was used in only %lu of %u walks", used,
          2 * WALKS);
    CHECK(!NEED_USE || (targeted > WALKS / 20 && mattered > 0),
          "%u changes at the memo's slots, %u of them changed the walk: the test changes "
          "nothing",
          targeted, mattered);
    printf("changed stacks: %lu of %u walks ended from the memo; %u changes at its "
           "slots (%u changed the frames)\n",
           used, 2 * WALKS, targeted, mattered);
}

/* The stack vouched for ending a word short of the memo's highest slot, at
 * its end, or a word above: the walk must stop where the walk without the
 * memo stops, and the memo's rest be taken only where all its slots lie in
 * the stack (the end of the highest from the memo's states: the CFA, its
 * step's highest slot from w[2] of its packed layout, bits 24-31 of info;
 * each walk's memo is made with the whole stack first). */
static uintptr_t memo_slots_end(void)
{
    uintptr_t end = 0;
    for (unsigned k = BTP_CFI_MEMO_N - memo.n; k < BTP_CFI_MEMO_N; k++) {
        uintptr_t e = memo.sp[k + 1] +
                      (uintptr_t)(((intptr_t)(int8_t)(uint8_t)(memo.info[k] >> 24) + 1) *
                                  (intptr_t)W);
        end = e > end ? e : end;
    }
    return end;
}

static void stack_end(void)
{
    enum { WALKS = 6000 };
    pick_starts();
    const size_t size0 = ce.stack.size;
    const uintptr_t lo = (uintptr_t)ce.stack.p;
    unsigned bad = 0, tried = 0, short_by = 0, short_used = 0, fits = 0, fits_used = 0;
    uintptr_t cut = 0;
    for (unsigned w = 0; w < WALKS; w++) {
        btp_cfi_regs regs;
        start_regs(&regs, starts[next_rand() % n_starts]);
        btp_frame f[CAP], ref[CAP];
        copy_walk(&regs, 1, f); /* the memo of a walk from this start */
        if (memo.n == 0)
            continue;
        uintptr_t end = memo_slots_end();
        if (end <= lo + W || end + W > lo + size0)
            continue;
        /* the stack's end: from this walk's memo, or (every other batch of
         * 8 walks) the same for the batch, so that walks whose memo ends
         * higher meet what was found for an earlier memo with that end */
        if (w % 16 < 8 || w % 8 == 0 || cut == 0) {
            unsigned d = (unsigned)(next_rand() % 3); /* a word short, at the end, a word over */
            cut = end + d * W - W;
        }
        ce.stack.size = (size_t)(cut - lo);
        unsigned long used0 = memo.used;
        size_t n;
        if (!agree(&regs, &n, ref))
            bad++;
        tried++;
        int used = memo.used != used0;
        if (end > cut)
            short_by++, short_used += used;
        else
            fits++, fits_used += used;
        ce.stack.size = size0;
    }
    CHECK(bad == 0, "%u of %u walks with the memo differed from the walk without", bad, tried);
    CHECK(!NEED_USE || (short_by > 0 && fits > 0),
          "no walks with the stack's end at the memo's slots (%u)", tried);
    CHECK(short_used == 0, "%u walks took the memo's rest with a slot of it off the stack",
          short_used);
    if (!NEED_USE)
        printf("stack end: memo use not checked (AddressSanitizer build)\n");
    CHECK(!NEED_USE || fits_used > fits / 4,
          "the memo was used in only %u of %u walks with all its slots in the stack", fits_used,
          fits);
    printf("stack end: %u walks, %u a word short of the memo's slots; %u of %u with room "
           "ended from the memo\n",
           tried, short_by, fits_used, fits);
}

/* The image replaced by one with other tables at the same address (as in
 * test_cfi_cache.c): walks whose memo came from the first must not use it. */
static void replaced_image(void)
{
    enum { WALKS = 4000 };
    unsigned bad = 0, differ = 0;
    unsigned long used0 = memo.used;
    btp_cfi_regs regs[STARTS];
    btp_frame first[STARTS][CAP];
    size_t nfirst[STARTS];
    fill_stack();
    pick_starts();
    for (unsigned s = 0; s < STARTS; s++) {
        start_regs(&regs[s], s < n_starts ? starts[s] : 100000 + s); /* (few found: others too) */
        nfirst[s] = copy_walk(&regs[s], 0, first[s]);
    }
    /* memos (and cached layouts) from the image as it is; each start
     * twice in a row, so that a start the memo can record ends from it
     * (walks from different starts share states only by chance) */
    for (unsigned w = 0; w < WALKS; w++) {
        btp_frame ref[CAP];
        size_t n;
        if (!agree(&regs[w / 2 % STARTS], &n, ref))
            bad++;
    }
    CHECK(!NEED_USE || memo.used > used0, "the memo was not used before the image changed");
    uint8_t *tables = im.copy.p + (im.eh_hdr - im.span_lo);
    uint32_t count;
    memcpy(&count, tables + 8, 4);
    uint8_t *frames = tables + 12 + 8 * (size_t)count, *end = im.copy.p + im.copy.size;
    for (uint8_t *q = frames; q < end; q++)
        if (*q == 0x0e) /* DW_CFA_def_cfa_offset: its operand is next */
            q[1] = (uint8_t)(q[1] ^ 0x08);
    ce.id = 3; /* the new image's loader record */
    for (unsigned w = 0; w < STARTS; w++) {
        btp_frame ref[CAP];
        size_t n;
        if (!agree(&regs[w], &n, ref))
            bad++;
        differ += !same_frames(first[w], nfirst[w], ref, n);
    }
    CHECK(bad == 0, "%u walks with the memo differed from the walk without", bad);
    CHECK(differ > 0, "the new tables give the same walks: the test changes nothing");
    printf("replaced image: %u of %u starts walk differently now; no memo of the old used\n",
           differ, STARTS);
}

/* ------------------------------------------------------------------ */
/* The real stack                                                       */
/* ------------------------------------------------------------------ */

typedef struct shot {
    size_t n;
    btp_frame f[CAP];
} shot;

static btp_cfi_memo real_memo;

static unsigned real_bad;

/* Two walks from regs (the caller's state): without cache and memo, then
 * with the memo `with` (the stack above unchanged between them), each into a
 * collector with `anchor` and `snip` frames to snip; 1 if they agree (and
 * keep at least `min` frames). */
static NOINL int walk_pair(const btp_cfi_regs *regs, btp_cfi_memo *with, uintptr_t anchor,
                           unsigned snip, size_t min)
{
    shot s[2];
    btp_cfi_self self;
    btp_cfi_env env;
    for (int k = 0; k < 2; k++) {
        btp_cfi_self_env(&self, &env, NULL, 0);
        env.cache = k ? btp_cfi_cache_global() : NULL;
        env.memo = k ? with : NULL;
        btp_collector c;
        btp_capture_options o = {0};
        o.snip_pre = snip;
        btp_collector_init(&c, s[k].f, CAP, anchor, &o);
        (void)btp_cfi_walk(&c, regs, &env);
        s[k].n = btp_collector_finish(&c);
    }
    return s[0].n >= min && same_frames(s[0].f, s[0].n, s[1].f, s[1].n);
}

/* Two walks from this function's state (walk_pair). */
static NOINL void pair(void)
{
    btp_cfi_regs regs;
    BTP_CFI_REGS_HERE(&regs);
    if (!walk_pair(&regs, &real_memo, 0, 0, 0))
        real_bad++;
    BARRIER();
}

/* Two paths of the same depth and frame sizes, and recursion. */
NOINL void path_a(volatile int *x);
NOINL void path_b(volatile int *x);
NOINL void recurse(int d);

NOINL void path_a(volatile int *x)
{
    char pad[48];
    memset(pad, (int)*x, sizeof pad);
    __asm__ volatile("" : : "r"(pad) : "memory");
    pair();
    BARRIER();
}

NOINL void path_b(volatile int *x)
{
    char pad[48];
    memset(pad, (int)*x + 1, sizeof pad);
    __asm__ volatile("" : : "r"(pad) : "memory");
    pair();
    BARRIER();
}

NOINL void recurse(int d)
{
    volatile int x = d;
    if (d > 0)
        recurse(d - 1);
    else if (next_rand() & 1)
        path_a(&x);
    else
        path_b(&x);
    BARRIER();
}

static void real_stack(void)
{
    unsigned long used0 = real_memo.used;
    for (int i = 0; i < 3000; i++)
        recurse((int)(next_rand() % 6));
    CHECK(real_bad == 0, "%u walks with the memo differed from the walk without", real_bad);
    CHECK(real_memo.used - used0 > 1000, "the memo was used in only %lu of 3000 walks",
          real_memo.used - used0);
    printf("real stack: %lu of 3000 walks ended from the memo\n", real_memo.used - used0);
}

/* ------------------------------------------------------------------ */
/* The head                                                             */
/* ------------------------------------------------------------------ */

static btp_cfi_memo head_memo;
static unsigned head_bad;

/* As pair(), with the collector of a capture's entry point: the anchor is
 * this function's return address, and the two frames from it on are
 * snipped (as a heap tracer's record function and interposed malloc). */
static NOINL void head_pair(void)
{
    btp_cfi_regs regs;
    BTP_CFI_REGS_HERE(&regs);
    if (!walk_pair(&regs, &head_memo, (uintptr_t)__builtin_return_address(0), 2, 3))
        head_bad++;
    BARRIER();
}

NOINL void head_mid(void);
NOINL void head_top(int which);
NOINL void head_recurse(int d);

NOINL void head_mid(void)
{
    head_pair();
    BARRIER();
}

/* head_mid from two places: the head's last return address changes */
NOINL void head_top(int which)
{
    volatile int x = which;
    if (which) {
        head_mid();
        x++;
    } else {
        head_mid();
        x--;
    }
    BARRIER();
}

/* (alloca: a frame whose CFA the frame pointer gives, so that the walk
 * after the head needs the frame pointer the head left) */
NOINL void head_recurse(int d)
{
    volatile char *x = __builtin_alloca((size_t)d * 16 + 8);
    x[0] = (char)d;
    if (d > 0)
        head_recurse(d - 1);
    else
        head_top(next_rand() % 4 == 0);
    BARRIER();
}

static void head(void)
{
    unsigned long used0 = head_memo.head_used;
    for (int i = 0; i < 3000; i++)
        head_recurse((int)(next_rand() % 6));
    unsigned long used = head_memo.head_used - used0;
    CHECK(head_bad == 0, "%u walks with the memo's head differed from the walk without",
          head_bad);
    CHECK(!NEED_USE || used > 1000, "the head was taken from the memo in only %lu of 3000 walks",
          used);
    printf("head: %lu of 3000 walks took their head from the memo\n", used);
}

/* ------------------------------------------------------------------ */
/* From the caller's frame (btp_capture_cfi_caller)                     */
/* ------------------------------------------------------------------ */

#if defined(__x86_64__)
static unsigned caller_bad, caller_walks;

/* As a heap tracer's interposed malloc: the capture with this function's
 * frame snipped against the one from its frame record (the caller's state
 * at the call), the way the tracer captures. */
static NOINL void caller_entry(void)
{
    const uintptr_t *fr = __builtin_frame_address(0);
    btp_capture_options o;
    btp_capture_options_init(&o);
    o.method = BTP_CAPTURE_CFI;
    o.snip_pre = 1;
    btp_frame a[CAP], b[CAP];
    size_t na = 0, nb = 0;
    btp_status sa = btp_capture(&o, a, CAP, &na);
    btp_status sb = btp_capture_cfi_caller(&o, fr[1], (uintptr_t)(fr + 2), fr[0], b, CAP, &nb);
    caller_walks++;
    if (sa != BTP_OK || sb != BTP_OK || na < 3 || !same_frames(a, na, b, nb) ||
        b[0].value != fr[1] || b[0].kind != BTP_FRAME_PC)
        caller_bad++;
    BARRIER();
}

NOINL void caller_top(int which);
NOINL void caller_recurse(int d);

/* the entry point from two places */
NOINL void caller_top(int which)
{
    volatile int x = which;
    if (which) {
        caller_entry();
        x++;
    } else {
        caller_entry();
        x--;
    }
    BARRIER();
}

/* (alloca: frames whose CFA the frame pointer gives, which the walk from
 * the caller's state takes with the frame pointer the entry point saved) */
NOINL void caller_recurse(int d)
{
    volatile char *x = __builtin_alloca((size_t)d * 16 + 8);
    x[0] = (char)d;
    if (d > 0)
        caller_recurse(d - 1);
    else
        caller_top(next_rand() % 3 == 0);
    BARRIER();
}
#endif

static void from_caller(void)
{
#if defined(__x86_64__)
    for (int i = 0; i < 2000; i++)
        caller_recurse((int)(next_rand() % 6));
    CHECK(caller_bad == 0, "%u of %u captures from the caller's frame differed", caller_bad,
          caller_walks);
    btp_frame f[2];
    size_t n = 1;
    CHECK(btp_capture_cfi_caller(NULL, 0, 0, 0, f, 0, &n) == BTP_E_INVALID_ARGUMENT && n == 0,
          "a capture into no room was not refused");
    printf("from the caller: %u captures agree\n", caller_walks - caller_bad);
#endif
}

/* ------------------------------------------------------------------ */
/* A set of memos for walks from the caller's frame (btp_cfi_memo_pick)  */
/* ------------------------------------------------------------------ */

#if defined(__x86_64__)
static btp_cfi_memo_set memo_set;
static unsigned set_bad, set_walks;

/* Three walks from the caller's state at this function's call, as
 * btp_capture_cfi_caller makes them: without cache and memo, with the memo
 * the set picks for the start, and with one it picks for another start
 * (any memo must give the same frames: the walk checks it). */
static NOINL void set_entry(void)
{
    const uintptr_t *fr = __builtin_frame_address(0);
    btp_cfi_regs regs;
    regs.pc = fr[1];
    regs.r[BTP_CFI_SP] = (uintptr_t)(fr + 2);
    regs.r[BTP_CFI_FP] = fr[0];
    regs.valid = (uint64_t)1 << BTP_CFI_SP | (uint64_t)1 << BTP_CFI_FP;
    shot s[3];
    uintptr_t other = regs.pc + 1 + next_rand() % 4096;
    for (int k = 0; k < 3; k++) {
        btp_cfi_self self;
        btp_cfi_env env;
        btp_cfi_self_env(&self, &env, NULL, 0);
        env.cache = k ? btp_cfi_cache_global() : NULL;
        env.memo = k == 0 ? NULL : btp_cfi_memo_pick(&memo_set, k == 1 ? regs.pc : other);
        btp_collector c;
        btp_capture_options o = {0};
        btp_collector_init(&c, s[k].f, CAP, 0, &o);
        c.skip = 0;
        btp_collector_go_fast(&c);
        if (btp_collector_cfa_slow(&c, regs.r[BTP_CFI_SP], 0))
            (void)btp_cfi_walk_ret(&c, &regs, &env);
        s[k].n = btp_collector_finish(&c);
    }
    set_walks++;
    if (s[0].n < 3 || !same_frames(s[0].f, s[0].n, s[1].f, s[1].n) ||
        !same_frames(s[0].f, s[0].n, s[2].f, s[2].n))
        set_bad++;
    BARRIER();
}

NOINL void set_top(int which);
NOINL void set_recurse(int d);

/* the entry point from four places, as an interpreter calls malloc */
NOINL void set_top(int which)
{
    volatile int x = which;
    switch (which) {
    case 0: set_entry(); x++; break;
    case 1: set_entry(); x--; break;
    case 2: set_entry(); x += 2; break;
    default: set_entry(); x -= 2; break;
    }
    BARRIER();
}

NOINL void set_recurse(int d)
{
    volatile char *x = __builtin_alloca((size_t)d * 16 + 8);
    x[0] = (char)d;
    if (d > 0)
        set_recurse(d - 1);
    else
        set_top((int)(next_rand() % 4));
    BARRIER();
}
#endif

static void memo_set_part(void)
{
#if defined(__x86_64__)
    unsigned long used0[BTP_CFI_MEMO_SET];
    for (unsigned k = 0; k < BTP_CFI_MEMO_SET; k++)
        used0[k] = memo_set.m[k].used;
    for (int i = 0; i < 3000; i++)
        set_recurse((int)(next_rand() % 4));
    unsigned long used = 0;
    unsigned memos = 0;
    for (unsigned k = 0; k < BTP_CFI_MEMO_SET; k++) {
        used += memo_set.m[k].used - used0[k];
        memos += memo_set.m[k].used != used0[k];
    }
    CHECK(set_bad == 0, "%u of %u walks with a memo of the set differed from the walk without",
          set_bad, set_walks);
    /* two walks with a memo each per round */
    CHECK(!NEED_USE || used > 2000, "the set's memos were used in only %lu of 6000 walks", used);
    CHECK(!NEED_USE || memos >= 2, "only %u of the set's memos were used", memos);
    printf("memo set: %u rounds agree; %lu of 6000 walks ended from a memo, %u memos used\n",
           set_walks - set_bad, used, memos);
#endif
}

/* ------------------------------------------------------------------ */
/* Threads and signals (the per-thread memo of btp_capture)             */
/* ------------------------------------------------------------------ */

static _Atomic int stop;

static NOINL size_t capture_cfi(btp_frame *f)
{
    btp_capture_options o = {0};
    o.method = BTP_CAPTURE_CFI;
    size_t n = 0;
    if (btp_capture(&o, f, CAP, &n) != BTP_OK)
        n = 0;
    BARRIER();
    return n;
}

NOINL size_t site_a(btp_frame *f);
NOINL size_t site_b(btp_frame *f, int d);

NOINL size_t site_a(btp_frame *f)
{
    size_t n = capture_cfi(f);
    BARRIER();
    return n;
}

NOINL size_t site_b(btp_frame *f, int d)
{
    size_t n = d > 0 ? site_b(f, d - 1) : capture_cfi(f);
    BARRIER();
    return n;
}

/* The frames of each site, from a thread's first capture (its memo empty:
 * a plain walk); the same code in every thread gives the same frames. */
static btp_frame ref[2][CAP];
static size_t nref[2];

typedef struct job {
    int mode; /* 0, 1: the reference of site_b, site_a; 2: captures in turn */
    uint64_t bad;
} job;

static void *hammer(void *arg)
{
    job *jb = arg;
    btp_frame f[CAP];
    unsigned long i;
    for (i = 0; jb->mode < 2 ? i < 1 : !stop || i <= 4000; i++) {
        int k = jb->mode < 2 ? jb->mode : (int)(i % 3 == 0);
        size_t n = k ? site_a(f) : site_b(f, 3);
        if (jb->mode < 2) {
            memcpy(ref[k], f, sizeof f);
            nref[k] = n;
        } else if (!same_frames(ref[k], nref[k], f, n)) {
            ++jb->bad;
        }
    }
    jb->bad |= (uint64_t)i << 32;
    return NULL;
}

static void threads_and_signals(void)
{
    catch_sigusr1();
    enum { T = 3 };
    pthread_t t[T];
    job jobs[T];
    for (int k = 0; k < 2; k++) {
        job r = {k, 0};
        pthread_create(&t[0], NULL, hammer, &r);
        pthread_join(t[0], NULL);
    }
    CHECK(nref[0] > 4 && nref[1] > 4, "short reference stacks (%zu, %zu frames)", nref[0],
          nref[1]);
    for (int i = 0; i < T; i++) {
        jobs[i] = (job){2, 0};
        pthread_create(&t[i], NULL, hammer, &jobs[i]);
    }
    interrupt_and_join(t, T, 300, 0, &stop);
    uint64_t total = 0, made = 0;
    for (int i = 0; i < T; i++) {
        total += jobs[i].bad & 0xffffffffu;
        made += jobs[i].bad >> 32;
    }
    CHECK(total == 0, "%llu of %llu captures differed from a plain walk from that site",
          (unsigned long long)total, (unsigned long long)made);
    CHECK(!handler_bad, "a capture in a signal handler lost the interrupted pc");
    CHECK(handler_walks > 0, "no signal came");
    printf("threads: %d threads, %llu captures; %lu captures in signal handlers\n", T,
           (unsigned long long)made, (unsigned long)handler_walks);
}

int main(void)
{
#if !BTP_CFI_MEMO
    printf("no walk memo on this architecture\n");
    return 0;
#else
    btp_capture_cache_thread_bounds();
    if (!own_image_copy(&im)) {
        CHECK(0, "no image of our own");
        return check_finish();
    }
    ce.stack = fenced_map(64 * 1024);
    fill_stack();
    changed_stacks();
    stack_end();
    replaced_image();
    real_stack();
    head();
    from_caller();
    memo_set_part();
    threads_and_signals();
    return check_finish();
#endif
}
