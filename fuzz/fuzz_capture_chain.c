/*
 * Fuzz target: btp_capture_cbf on real stacks of the fuzzer's shape, the
 * cfi and libunwind methods, against btp_capture from the same place. The
 * input is a list of captures, each from the bottom of a chain of calls of
 * its depth through four functions of different frame layouts (plain, a
 * large frame, alloca of a chosen size: a frame-pointer-based CFA, two
 * call sites) in the order its path says, one capture after the other on
 * this thread: the cfi walk joins the memo of the walk before (cfi.h)
 * wherever the stacks agree, and btp_capture_cbf takes the instructions it
 * kept there (cfi.c memo_cbf); the libunwind
 * method writes the stream from unw_backtrace's addresses (btp_chunk_cbf)
 * when they fit, else its frames go through the collector.
 *
 * Input: first a fixed capture (so that the memo is in the same state at
 * the start of every input, as far as the walks before can set it), then
 * up to 16 of 8 bytes each:
 *  byte 0     depth (modulo 161)
 *  byte 1     bits 0-1: the order of the captures: 0: CBF, frames, the
 *             reference; 1: frames, CBF, reference; 2: CBF twice, frames,
 *             reference; 3: reference, frames, CBF. bit 2: snip_pre 1;
 *             bit 3: snip_post 1; bit 4: BTP_CAPTURE_ASYNC_SIGNAL_SAFE;
 *             bit 5: the libunwind method (where built), else cfi;
 *             bits 6-7: the CBF buffer: 0, 1: room for any capture
 *             (BTP_CBF_BOUND(BTP_CAPTURE_CBF_MAX_FRAMES)), 2: 2 + 4 x
 *             byte 2 bytes, 3: 2 + byte 2 bytes
 *  byte 2     see above
 *  byte 3     the alloca's size, in 16-byte units
 *  bytes 4-7  the path: 2 bits a level (cycling), which function makes it
 *
 * Properties, for each capture (frames: btp_capture's; the reference: the
 * cfi method with the thread's stack given as opt->bounds, which walks
 * without the memo; for libunwind, frames again):
 *  - every call returns BTP_OK, but CBF into a buffer too small for its
 *    stream, BTP_E_BUFFER_TOO_SMALL;
 *  - the frames hold the chain: each function's own return address
 *    (__builtin_return_address, recorded as it ran) where it must be,
 *    up to any omit;
 *  - the reference has the same frames (but the first, the return
 *    address of each call into the library, which differs, unless
 *    snipped);
 *  - the stream (in a buffer ending at a guard page) decodes (strict) to
 *    the frames, or cut short, to a prefix of them marked truncated; its
 *    bytes are btp_cbf_encode's of those frames (with
 *    BTP_CBF_ENC_TRUNCATE_ON_FULL, the buffer's size).
 */
#include "fuzz.h"
#include "guard.h"

#include <btpack/btpack.h>
#include <alloca.h>
#include <string.h>

#define NOINL __attribute__((noinline))
#define BARRIER() __asm__ volatile("" ::: "memory")
#define MAXD 160
#define CAP BTP_CAPTURE_CBF_MAX_FRAMES
#define FULL BTP_CBF_BOUND(CAP)

typedef struct chain {
    unsigned depth;
    unsigned opts;
    size_t cap;
    size_t asz;
    uint32_t path;
    uintptr_t ra[MAXD + 2];
} chain;

typedef struct capture {
    btp_status st;
    btp_frame f[CAP];
    size_t n;
    uint8_t *bytes;
    size_t len;
} capture;

static fuzz_guard g_bytes[2], g_want;
static btp_stack_bounds g_stack;
static int g_have_stack, g_unwind;

static int same_frame(const btp_frame *a, const btp_frame *b)
{
    return a->kind == b->kind && a->value == b->value;
}

/* The frames of a capture against the chain recorded: original frame j
 * (before snip_pre s) is the probe's pc for j = 0, else the return
 * address of the function at level depth + 2 - j (ra[depth + 1]: the
 * probe's own). */
static void check_chain(const chain *x, const btp_frame *f, size_t n, const char *what)
{
    unsigned s = x->opts >> 2 & 1;
    for (size_t i = 0; i < n && f[i].kind != BTP_FRAME_OMIT; i++) {
        size_t j = i + s;
        if (j == 0 || j > x->depth + 2)
            continue;
        FUZZ_CHECK(f[i].value == x->ra[x->depth + 2 - j],
                   "%s: frame %zu is 0x%llx, the chain's 0x%llx (depth %u)", what, i,
                   (unsigned long long)f[i].value,
                   (unsigned long long)x->ra[x->depth + 2 - j], x->depth);
    }
}

/* Two captures' frames the same (from `from` on) and as many. */
static void check_same(const btp_frame *a, size_t na, const btp_frame *b, size_t nb,
                       size_t from, const char *what)
{
    FUZZ_CHECK(na == nb, "%s: %zu frames against %zu", what, na, nb);
    FUZZ_CHECK(na == 0 || a[0].kind == b[0].kind, "%s: first frame's kind", what);
    for (size_t i = from; i < na; i++)
        FUZZ_CHECK(same_frame(&a[i], &b[i]), "%s: frame %zu: 0x%llx (kind %d) against 0x%llx (%d)",
                   what, i, (unsigned long long)a[i].value, (int)a[i].kind,
                   (unsigned long long)b[i].value, (int)b[i].kind);
}

/* A stream against the frames (p) of a capture from the same place. */
static void check_stream(const chain *x, const capture *c, const capture *p)
{
    size_t from = (x->opts >> 2 & 1) ? 0 : 1; /* (frame 0 is each call's own, unless snipped) */
    FUZZ_CHECK(c->st == BTP_OK || c->st == BTP_E_BUFFER_TOO_SMALL, "cbf %s",
               btp_status_name(c->st));
    FUZZ_CHECK(c->len >= 2 && c->len <= x->cap, "cbf: %zu bytes in %zu", c->len, x->cap);
    btp_frame dec[CAP + 1];
    btp_cbf_info info;
    btp_status ds = btp_cbf_decode(c->bytes, c->len, BTP_CBF_POLICY_STRICT, dec, CAP + 1, &info);
    FUZZ_CHECK(ds == BTP_OK, "cbf decode %s", btp_status_name(ds));
    if (c->st == BTP_OK) {
        FUZZ_CHECK(!info.truncated, "cbf: truncated, yet BTP_OK");
        check_same(dec, info.frames, p->f, p->n, from, "cbf against frames");
    } else {
        FUZZ_CHECK(info.truncated && info.frames < p->n, "cbf cut short: %zu frames of %zu%s",
                   info.frames, p->n, info.truncated ? "" : ", not marked");
        check_same(dec, info.frames, p->f, info.frames, from, "cut cbf against frames");
    }
    /* The encoder's bytes of the frames (the stream's own first frame;
     * with none decoded, its value is not known: the length then). */
    btp_frame ref[CAP];
    memcpy(ref, p->f, p->n * sizeof ref[0]);
    if (from == 1 && info.frames > 0)
        ref[0] = dec[0];
    uint8_t *want = fuzz_guard_buf(&g_want, x->cap);
    size_t wlen = 0;
    btp_status ws = btp_cbf_encode(ref, p->n, 0, (unsigned)(8 * sizeof(void *)),
                                   BTP_CBF_ENC_TRUNCATE_ON_FULL, want, x->cap, &wlen, NULL);
    FUZZ_CHECK(ws == c->st, "encoder %s, capture %s", btp_status_name(ws), btp_status_name(c->st));
    if (from == 0 || info.frames > 0)
        FUZZ_CHECK(wlen == c->len && memcmp(want, c->bytes, wlen) == 0,
                   "cbf: %zu bytes, not the encoder's %zu", c->len, wlen);
}

static void opts_of(const chain *x, btp_capture_options *o, int reference)
{
    memset(o, 0, sizeof *o);
    o->method = (x->opts & 32) && g_unwind ? BTP_CAPTURE_LIBUNWIND : BTP_CAPTURE_CFI;
    o->snip_pre = x->opts >> 2 & 1;
    o->snip_post = x->opts >> 3 & 1;
    o->flags = (x->opts & 16) ? BTP_CAPTURE_ASYNC_SIGNAL_SAFE : 0;
    if (reference && o->method == BTP_CAPTURE_CFI && g_have_stack)
        o->bounds = &g_stack;
}

/* The bottom of the chain: the captures, then the checks. */
static NOINL void probe(chain *x, unsigned k)
{
    x->ra[k] = (uintptr_t)__builtin_return_address(0);
    static capture cb[2], fr, rf;
    btp_capture_options o, ro;
    opts_of(x, &o, 0);
    opts_of(x, &ro, 1);
    for (int i = 0; i < 2; i++) {
        cb[i].bytes = fuzz_guard_buf(&g_bytes[i], x->cap);
        memset(cb[i].bytes, 0xee, x->cap);
        cb[i].len = 0;
    }
    int twice = 0;
    switch (x->opts & 3) {
    case 0:
        cb[0].st = btp_capture_cbf(&o, NULL, cb[0].bytes, x->cap, &cb[0].len);
        fr.st = btp_capture(&o, fr.f, CAP, &fr.n);
        rf.st = btp_capture(&ro, rf.f, CAP, &rf.n);
        break;
    case 1:
        fr.st = btp_capture(&o, fr.f, CAP, &fr.n);
        cb[0].st = btp_capture_cbf(&o, NULL, cb[0].bytes, x->cap, &cb[0].len);
        rf.st = btp_capture(&ro, rf.f, CAP, &rf.n);
        break;
    case 2:
        /* (the second where the memo holds all the first kept) */
        cb[0].st = btp_capture_cbf(&o, NULL, cb[0].bytes, x->cap, &cb[0].len);
        cb[1].st = btp_capture_cbf(&o, NULL, cb[1].bytes, x->cap, &cb[1].len);
        twice = 1;
        fr.st = btp_capture(&o, fr.f, CAP, &fr.n);
        rf.st = btp_capture(&ro, rf.f, CAP, &rf.n);
        break;
    default:
        rf.st = btp_capture(&ro, rf.f, CAP, &rf.n);
        fr.st = btp_capture(&o, fr.f, CAP, &fr.n);
        cb[0].st = btp_capture_cbf(&o, NULL, cb[0].bytes, x->cap, &cb[0].len);
        break;
    }
    BARRIER();
    FUZZ_CHECK(fr.st == BTP_OK && fr.n >= 1 && fr.n <= CAP, "frames: %s, %zu",
               btp_status_name(fr.st), fr.n);
    FUZZ_CHECK(rf.st == BTP_OK, "reference: %s", btp_status_name(rf.st));
    check_chain(x, fr.f, fr.n, "frames");
    check_chain(x, rf.f, rf.n, "reference");
    check_same(rf.f, rf.n, fr.f, fr.n, (x->opts >> 2 & 1) ? 0 : 1, "reference against frames");
    check_stream(x, &cb[0], &fr);
    if (twice) {
        check_stream(x, &cb[1], &fr);
    }
}

/* The chain's functions: each records its return address, then calls the
 * next level's (or the probe at the bottom). */
typedef void level_fn(chain *x, unsigned k);
static level_fn lv0, lv1, lv2, lv3;
static level_fn *const levels[4] = {lv0, lv1, lv2, lv3};

#define NEXT(x, k)                                                                                \
    do {                                                                                          \
        if ((k) == (x)->depth)                                                                    \
            probe((x), (k) + 1);                                                                  \
        else                                                                                      \
            levels[(x)->path >> (2 * ((k) + 1) % 32) & 3]((x), (k) + 1);                          \
    } while (0)

static NOINL void lv0(chain *x, unsigned k)
{
    x->ra[k] = (uintptr_t)__builtin_return_address(0);
    NEXT(x, k);
    BARRIER();
}

static NOINL void lv1(chain *x, unsigned k)
{
    volatile uint64_t pad[24];
    pad[k % 24] = k;
    x->ra[k] = (uintptr_t)__builtin_return_address(0);
    NEXT(x, k);
    pad[(k + 1) % 24] = pad[k % 24];
    BARRIER();
}

static NOINL void lv2(chain *x, unsigned k)
{
    char *a = alloca(x->asz + 1);
    a[0] = (char)k;
    __asm__ volatile("" : : "r"(a) : "memory");
    x->ra[k] = (uintptr_t)__builtin_return_address(0);
    NEXT(x, k);
    __asm__ volatile("" : : "r"(a) : "memory");
}

static NOINL void lv3(chain *x, unsigned k)
{
    static volatile unsigned odd;
    x->ra[k] = (uintptr_t)__builtin_return_address(0);
    if (k & 1) {
        NEXT(x, k);
        BARRIER();
    } else {
        odd++;
        NEXT(x, k);
        odd--;
    }
}

static void run(chain *x)
{
    levels[x->path & 3](x, 0);
    BARRIER();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!btp_capture_method_available(BTP_CAPTURE_CFI))
        return 0;
    static int ready;
    if (!ready) {
        g_have_stack = btp_stack_bounds_current(&g_stack) == BTP_OK;
        g_unwind = btp_capture_method_available(BTP_CAPTURE_LIBUNWIND);
        ready = 1;
    }
    static chain x;
    memset(&x, 0, sizeof x);
    x.depth = 3;
    x.cap = FULL;
    x.asz = 16;
    run(&x);
    for (size_t at = 0; at + 8 <= size && at < 16 * 8; at += 8) {
        const uint8_t *b = data + at;
        memset(&x, 0, sizeof x);
        x.depth = b[0] % (MAXD + 1);
        x.opts = b[1];
        switch (b[1] >> 6) {
        case 2: x.cap = 2 + 4 * (size_t)b[2]; break;
        case 3: x.cap = 2 + (size_t)b[2]; break;
        default: x.cap = FULL; break;
        }
        x.asz = 16 * (size_t)b[3];
        x.path = (uint32_t)b[4] | (uint32_t)b[5] << 8 | (uint32_t)b[6] << 16 |
                 (uint32_t)b[7] << 24;
        run(&x);
    }
    return 0;
}
