/* Shared between the capture dispatcher and the per-method walkers. */
#ifndef BTPACK_CAPTURE_INTERNAL_H
#define BTPACK_CAPTURE_INTERNAL_H

#include <btpack/capture.h>

#include "btp_config.h"
#include "common/compiler.h"

#include <stdatomic.h>

/* The symbol versions glibc's backtrace() has on each architecture (NULL:
 * not known here; the method then runs the backtrace the link gave). */
#if defined(__x86_64__)
#define BTP_GLIBC_BACKTRACE_VERSION "GLIBC_2.2.5"
#elif defined(__i386__)
#define BTP_GLIBC_BACKTRACE_VERSION "GLIBC_2.1"
#elif defined(__aarch64__)
#define BTP_GLIBC_BACKTRACE_VERSION "GLIBC_2.17"
#elif defined(__arm__)
#define BTP_GLIBC_BACKTRACE_VERSION "GLIBC_2.4"
#else
#define BTP_GLIBC_BACKTRACE_VERSION NULL
#endif

/* libunwind can start from a signal's ucontext_t where its context type is
 * that very struct (x86_64); elsewhere it unwinds through the signal frame
 * from where it is called, like libgcc. */
#if BTP_HAVE_LIBUNWIND && BTP_HAVE_UNW_INIT_LOCAL2 && defined(__x86_64__)
#define BTP_LIBUNWIND_FROM_CONTEXT 1
#else
#define BTP_LIBUNWIND_FROM_CONTEXT 0
#endif

/*
 * Where a walker puts the addresses it finds, innermost first. It drops the
 * frames above the anchor, applies snip_pre, keeps the head of the stack in
 * out[0..head_cap) and the tail in a ring at out[head_cap+1..cap), counting
 * what falls out of the ring. Until a stack proves deeper than cap-1 frames
 * (when it is kept whole) the frames go on in order past head_cap, up to
 * lin_cap, which the walkers' fast paths fill; the frame after those moves
 * the ones past head_cap into the ring (btp_collector_push). No
 * allocation, no libc: usable in signal handlers.
 */
/* The highest method number. */
#define BTP_CAPTURE_LAST BTP_CAPTURE_CFI

/* Stacks a walk may pass between (a signal handler's alternate stack and
 * the thread's own, nested signals): more is a cycle. */
#define BTP_COLLECTOR_SEGMENTS 8

/* Whether btp_capture_cbf writes streams of its own as it captures (its
 * encoding walks: 64-bit words, the codecs' fast paths built). */
#if UINTPTR_MAX > 0xffffffffu && !BTP_CODEC_SMALL
#define BTP_CAPTURE_CBF_STREAM 1
#else
#define BTP_CAPTURE_CBF_STREAM 0
#endif

/*
 * Where btp_capture_cbf's capture may have its stream written while it is
 * walked (a cfi walk that took the memo's frames: cfi.c memo_cbf(); the
 * libunwind method's, from addresses that then never reach the
 * collector): its buffer, and once written (len
 * 0 until then) the stream's length and how many of its frames the
 * collector holds (n: all of them, or none for the libunwind method's).
 * The stream stands only if the capture ends with exactly n frames in the
 * collector, and plain:
 * set when the capture ends, non-zero if its frames are a pc and return
 * addresses only (the collector finished the usual way, with no omit, or
 * the quick fp walk took them).
 */
typedef struct btp_cbf_sink {
    uint8_t *buf;
    size_t cap;
    size_t len;
    size_t n;
    int plain;
} btp_cbf_sink;

typedef struct btp_collector {
    btp_frame *out;
    size_t head_n;
    /* Frames may go straight into out[head_n..fast_end) (no anchor to
     * seek, no snip_pre left): btp_collector_add()'s inline path. 0 until
     * then. */
    size_t fast_end;
    size_t fast_from;     /* head_n when that began (for the walk's count) */
    /* btp_capture_cbf's stream, or NULL (every other capture) */
    btp_cbf_sink *cbf;
    size_t cap;
    size_t head_cap;
    size_t lin_cap;       /* frames kept in order before the ring is used */
    size_t ring_cap;
    size_t ring_pos;      /* where the next ring frame goes */
    uint64_t ring_total;  /* frames pushed into the ring, including overwritten ones */
    uintptr_t anchor;     /* first frame to keep; 0: keep from the start */
    int seeking;          /* still looking for the anchor */
    int drop_unanchored;  /* anchor not found: keep nothing (caller falls back) */
    unsigned skip;        /* snip_pre still to drop */
    unsigned snip_post;
    uint64_t walked;      /* frames pushed the slow way (with the fast ones, bounds the walk) */
    /* Stretches of stack the walk has covered (see btp_collector_cfa). */
    unsigned n_seg;
    uintptr_t seg_lo[BTP_COLLECTOR_SEGMENTS];
    uintptr_t seg_hi[BTP_COLLECTOR_SEGMENTS];
    size_t pending_n;
    uintptr_t pending[BTP_CAPTURE_SEEK_MAX];
} btp_collector;

/* Frames may go straight into the head once nothing is sought or
 * skipped any more, and while the ring is not in use. */
static inline void btp_collector_go_fast(btp_collector *c)
{
    if (!c->seeking && c->skip == 0 && c->fast_end == 0 && c->ring_total == 0) {
        c->fast_end = c->lin_cap;
        c->fast_from = c->head_n;
    }
}

static inline void btp_collector_init(btp_collector *c, btp_frame *out, size_t cap,
                                      uintptr_t anchor, const btp_capture_options *opt)
{
    c->out = out;
    c->cap = cap;
    /* One slot is kept for the omit; a single slot holds just the innermost
     * frame. */
    c->ring_cap = cap < 2 ? 0 : (cap - 1) / 2;
    c->head_cap = cap < 2 ? cap : cap - 1 - c->ring_cap;
    c->lin_cap = c->ring_cap > 0 ? cap - 1 : c->head_cap;
    c->head_n = 0;
    c->fast_end = 0;
    c->fast_from = 0;
    c->cbf = NULL;
    c->ring_pos = 0;
    c->ring_total = 0;
    c->anchor = anchor;
    c->seeking = anchor != 0;
    c->drop_unanchored = 0;
    c->pending_n = 0;
    c->skip = opt ? opt->snip_pre : 0;
    c->snip_post = opt ? opt->snip_post : 0;
    c->walked = 0;
    c->n_seg = 0;
    btp_collector_go_fast(c);
}
/* Returns non-zero while the walker should go on. */
int btp_collector_push(btp_collector *c, uintptr_t addr);
/* btp_collector_push, with the usual case (the frame goes into the head
 * as it is) inline. */
static inline int btp_collector_add(btp_collector *c, uintptr_t addr)
{
    size_t n = c->head_n;
    if (n < c->fast_end) {
        c->out[n].value = (uint64_t)addr;
        c->out[n].kind = BTP_FRAME_RA;
        c->head_n = n + 1;
        return 1;
    }
    return btp_collector_push(c, addr);
}
#if BTP_CAPTURE_CBF_STREAM
/* The instruction of the return address `value` after the address
 * `before` (of a pc or a return address) at p, which has room for the
 * longest instruction (CBF_MAX_INSTR bytes); returns its end, or NULL
 * when value is `before` (a repeat: not an address instruction). */
uint8_t *btp_cbf_put_ra(uint8_t *p, uint64_t value, uint64_t before);
#endif
/* Lay the result out in order; returns the number of frames. */
size_t btp_collector_finish_slow(btp_collector *c);
/* Non-zero when the frames are all in the head, in order, with nothing to
 * snip or seek: the usual case, which btp_collector_finish lays out by
 * itself and btp_capture_cbf may encode as they are (a pc, then return
 * addresses). */
static inline int btp_collector_usual(const btp_collector *c)
{
    return c->ring_total == 0 && c->snip_post == 0 && !c->seeking;
}
static inline size_t btp_collector_finish(btp_collector *c)
{
    if (!btp_collector_usual(c))
        return btp_collector_finish_slow(c);
    /* All in the head (the usual case). */
    if (c->head_n > 0 && c->out[0].kind == BTP_FRAME_RA)
        c->out[0].kind = BTP_FRAME_PC;
    return c->head_n;
}
/* Non-zero if the anchor was looked for and never seen. */
int btp_collector_missed_anchor(const btp_collector *c);
/* Keep frames only from `anchor` on (which may be 0: a pc of 0 is a frame
 * like any other); with drop_unanchored, nothing if it never comes. */
void btp_collector_anchor(btp_collector *c, uintptr_t anchor, int drop_unanchored);
/*
 * A cycle check for walkers that know each frame's canonical frame address
 * (or stack pointer): non-zero while `cfa` lies strictly above every
 * earlier one on the same stretch of stack. A value at or below the last
 * one is accepted only if `may_switch` and no stretch walked so far holds
 * it (the walk moved to another stack, at most BTP_COLLECTOR_SEGMENTS
 * times); anything else is a cycle and the walker must stop.
 */
int btp_collector_cfa_slow(btp_collector *c, uintptr_t cfa, int may_switch);
static inline int btp_collector_cfa(btp_collector *c, uintptr_t cfa, int may_switch)
{
    /* The usual case: one stretch, walked upwards. */
    if (c->n_seg == 1 && cfa > c->seg_hi[0]) {
        c->seg_hi[0] = cfa;
        return 1;
    }
    return btp_collector_cfa_slow(c, cfa, may_switch);
}

/* btp_capture() for a public entry point whose return address is `ra` and
 * frame `fp` (the anchor: frames above it are the library's own). */
btp_status btp_capture_here_at(const btp_capture_options *opt, uintptr_t ra, uintptr_t fp,
                               btp_frame *frames, size_t cap, size_t *n_out);

struct btp_cfi_env;
/*
 * btp_capture_context() for the crash handler: `cfi_env` (NULL: the
 * ordinary one) is what the cfi method reads memory through, and *used
 * gets the method whose frames were kept (another than opt's when that one
 * failed and a simpler walk took over: cfi, else fp).
 */
btp_status btp_capture_context_in(const btp_capture_options *opt, const void *ucontext,
                                  const struct btp_cfi_env *cfi_env, btp_frame *frames,
                                  size_t cap, size_t *n_out, btp_capture_method *used);

/* The trusted stack region holding addr: the alternate signal stack when
 * the thread runs on it, else the thread's stack (cached bounds, then
 * pthread_getattr_np unless BTP_CAPTURE_ASYNC_SIGNAL_SAFE, then the
 * mapping holding addr). 1 if found. */
int btp_capture_stack_region(uintptr_t addr, unsigned flags, btp_stack_bounds *out);
/* The anonymous readable mapping holding addr, from /proc/self/maps (a
 * stack is never a file: a file mapping may raise SIGBUS when read past
 * its file's end). BTP_OK, BTP_END, BTP_E_IO. Async-signal-safe. */
btp_status btp_stack_region_of(uintptr_t addr, btp_stack_bounds *out);
/* The readable, executable mapping holding addr, likewise. */
btp_status btp_code_region_of(uintptr_t addr, btp_stack_bounds *out);
/* The calling thread's stack bounds if remembered already and holding
 * addr: 1 with *out set (async-signal-safe: a thread-local read). */
int btp_capture_known_stack(uintptr_t addr, btp_stack_bounds *out);
/* Remember the calling thread's stack bounds (not async-signal-safe). */
void btp_capture_cache_thread_bounds(void);

/* ------------------------------------------------------------------ */
/* The quick fp walk                                                    */
/* ------------------------------------------------------------------ */

#define BTP_FP_WORD ((uintptr_t)sizeof(uintptr_t))
/* Records a pass of btp_fp_records' loop. */
#define BTP_FP_PASS 8

/*
 * The fp walks' state of the calling thread: its stack (hi 0: not found
 * yet) and, worked out once when it was found, what the quick walk needs
 * (btp_fp_records): ~lim, where lim is the highest address a frame record
 * may lie at (both its words below hi), and k, one more than the distance
 * in words from lim down to the lowest word-aligned address in the stack
 * (0: no room for a record, which is also what a thread that has not
 * found its stack yet reads: every record fails the test). One block,
 * reached from one thread-pointer offset; the initial-exec model keeps
 * the access a plain thread-pointer load with no call into the dynamic
 * linker, so reading it in a signal handler is safe. Written only by
 * capture_fp.c.
 */
typedef struct btp_fp_thread {
    uintptr_t not_lim;
    uintptr_t k;
    btp_stack_bounds stack;
} btp_fp_thread;
extern __thread btp_fp_thread btp_fp_thread_state __attribute__((tls_model("initial-exec")));

/* Reads stack words the compiler's instrumentation knows nothing about
 * (other frames, possibly poisoned redzones); the bounds checked before
 * every call are what keep it safe. */
__attribute__((no_sanitize_address)) static inline uintptr_t btp_fp_load(uintptr_t a)
{
    return *(const volatile uintptr_t *)a;
}

/* x rotated right by log2(BTP_FP_WORD) bits. */
static inline uintptr_t btp_fp_rotr(uintptr_t x)
{
    const unsigned s = BTP_FP_WORD == 8 ? 3 : 2, bits = 8 * (unsigned)BTP_FP_WORD;
    return (x >> s) | (x << (bits - s));
}

/* Slot i of a walk's output: a btp_frame of kind RA, or with `addrs` (a
 * constant) a plain address in an array of uint64_t. */
static BTP_ALWAYS_INLINE void btp_fp_put(void *out, size_t i, uintptr_t ra, const int addrs)
{
    if (addrs) {
        ((uint64_t *)out)[i] = (uint64_t)ra;
    } else {
        ((btp_frame *)out)[i].value = (uint64_t)ra;
        ((btp_frame *)out)[i].kind = BTP_FRAME_RA;
    }
}

/* The record test of btp_fp_records (see there), in one place for every
 * walk that makes it: true when the record at f is not the chain's next
 * (outside the region, misaligned or not above the record before, whose
 * complemented distance is nk) or its return address is 0. Sets nk1 to
 * f's complemented distance and, when that part passes, ra to f's return
 * address. A macro, not a function: through pointers to nk1 and ra gcc
 * laid out the walks' registers otherwise (fp-cbf 434.6 -> 451.6
 * instructions a capture at depth 10 of the capture bench). */
#define BTP_FP_NOT_NEXT(f, not_lim, nk, nk1, ra)                                                  \
    ((nk1 = btp_fp_rotr((f) + (not_lim))) <= (nk) || (ra = btp_fp_load((f) + BTP_FP_WORD)) == 0)

/*
 * The frame records from f on, their return addresses stored from slot *ip
 * of out up to slot `end` (exclusive). A record is read if it lies in the
 * region (word-aligned, at or above its lowest record address, at most at
 * lim) and above the last one read. All of that is one comparison: lim - f
 * rotated right by the alignment's bits is f's distance below lim in
 * words when f is aligned and at most lim, and at least 2^61 otherwise (a
 * misaligned f puts its low bits at the top, one above lim wraps around);
 * it must be smaller than the previous record's distance k (one more than
 * the lowest record's distance to start with). So the chain only climbs,
 * and a zero frame pointer (below the region, or not above the last
 * record) fails. A zero return address ends the walk too.
 * The comparison is made on complements, which gives the same answer with
 * one instruction fewer a frame: f + ~lim is ~(lim - f), a rotation of a
 * complement is the complement of the rotation, and a < b exactly when
 * ~a > ~b; so the test is rotr(f + ~lim) > ~k, an add that keeps f (lea)
 * where lim - f needed a copy of lim first. not_lim is ~lim; *nkp holds ~k.
 * BTP_FP_PASS records a pass, so that the loop's own test costs an eighth
 * of a compare and branch a frame (end must be at least BTP_FP_PASS).
 * Returns the record the walk would go on with: with *ended set, the one
 * that failed the test or had a zero return address (the general walk
 * looks at it again); else the slots ran out first (fewer than a pass
 * left). *ip and *nkp are left at the next slot and the (complemented)
 * distance of the last record read.
 */
static BTP_ALWAYS_INLINE uintptr_t btp_fp_records(uintptr_t not_lim, uintptr_t *nkp, uintptr_t f,
                                                  void *out, size_t *ip, size_t end,
                                                  int *ended, const int addrs)
{
    /* By pointer: one register for the position and the end each. */
    const size_t stride = addrs ? sizeof(uint64_t) : sizeof(btp_frame);
    unsigned char *const base = out;
    unsigned char *o = base + *ip * stride;
    /* the last position with room for a pass */
    unsigned char *const o_last = base + (end - BTP_FP_PASS) * stride;
    uintptr_t nk = *nkp, nk1, ra;
    *ended = 1;
#define BTP_FP_STEP(j)                                                                            \
    if (BTP_FP_NOT_NEXT(f, not_lim, nk, nk1, ra)) {                                               \
        o += (j) * stride;                                                                        \
        goto done;                                                                                \
    }                                                                                             \
    btp_fp_put(o, (j), ra, addrs);                                                                \
    nk = nk1;                                                                                     \
    f = btp_fp_load(f)
    while (o <= o_last) {
        BTP_FP_STEP(0);
        BTP_FP_STEP(1);
        BTP_FP_STEP(2);
        BTP_FP_STEP(3);
        BTP_FP_STEP(4);
        BTP_FP_STEP(5);
        BTP_FP_STEP(6);
        BTP_FP_STEP(7);
        o += BTP_FP_PASS * stride;
    }
#undef BTP_FP_STEP
    *ended = 0;
done:
    *ip = (size_t)(o - base) / stride;
    *nkp = nk;
    return f;
}

/*
 * The quick walk of the current thread, straight into out (btp_frame, or
 * with `addrs` uint64_t: see btp_fp_put) with no collector: the return
 * address ra (slot 0, a pc: its kind set here for btp_frame) and the
 * chain from the record f, which must lie above the address `above`
 * (the entry point's own record). It applies only on the thread's own
 * stack, known already (btp_fp_thread_state), and to a chain that ends
 * before the frames the collector keeps in order run out (cap-1, its
 * lin_cap for any cap of 3 or more): then the general walk would keep
 * exactly these frames. 1 with *n_out set if so; 0 when ra is 0, f is not
 * a record on the known stack above `above` (the general walk looks
 * further: the alternate signal stack, the stack's bounds found now) or
 * the chain goes on (out then holds garbage: walk again). cap must be
 * more than BTP_FP_PASS (room for the pc and a pass of the loop).
 */
/* Whether a quick walk may start: the return address ra is not 0 and the
 * first record f lies above `above` (the entry point's own record) and
 * passes the record test against the thread's bounds (its first test in
 * the walk's loop too: the loop makes it again, at no cost). */
static BTP_ALWAYS_INLINE int btp_fp_quick_starts(uintptr_t ra, uintptr_t f, uintptr_t above,
                                                 uintptr_t not_lim, uintptr_t nk)
{
    return ra != 0 && f > above && btp_fp_rotr(f + not_lim) > nk;
}

static BTP_ALWAYS_INLINE int btp_fp_quick(void *out, size_t cap, uintptr_t ra, uintptr_t f,
                                          uintptr_t above, size_t *n_out, const int addrs)
{
    const btp_fp_thread *t = &btp_fp_thread_state;
    uintptr_t nk = ~t->k, not_lim = t->not_lim;
    /* (the first record's test is the loop's first too: computed once) */
    if (!btp_fp_quick_starts(ra, f, above, not_lim, nk))
        return 0;
    if (addrs) {
        ((uint64_t *)out)[0] = (uint64_t)ra;
    } else {
        ((btp_frame *)out)[0].value = (uint64_t)ra;
        ((btp_frame *)out)[0].kind = BTP_FRAME_PC;
    }
    size_t i = 1;
    int ended;
    btp_fp_records(not_lim, &nk, f, out, &i, cap - 1, &ended, addrs);
    *n_out = i;
    return ended;
}

/* The options btp_capture and btp_capture_cbf may take the quick walk
 * with: the fp method, nothing to snip, no bounds given, no option this
 * library does not know (flags do not matter: the walk reads only the
 * known stack and calls nothing). method and snip_pre are compared as one
 * word with a constant's. */
static BTP_ALWAYS_INLINE int btp_fp_quick_options(const btp_capture_options *opt)
{
#if defined(__x86_64__) || defined(__i386__) || defined(__aarch64__)
    if (!opt)
        return 0;
    static const btp_capture_options fp_only = {.method = BTP_CAPTURE_FP};
    uint64_t w, want;
    __builtin_memcpy(&w, opt, sizeof w);
    __builtin_memcpy(&want, &fp_only, sizeof want);
    if (w != want) /* (first: the other methods' calls go on at once) */
        return 0;
    uint64_t any = opt->snip_post | (uintptr_t)opt->bounds;
    for (int i = 0; i < BTP_RESERVED_WORDS; i++)
        any |= opt->reserved[i];
    return any == 0;
#else
    (void)opt;
    return 0; /* no fp method here */
#endif
}

/* The walkers. `uc` is a ucontext_t or NULL (current thread). */
btp_status btp_capture_fp_walk(btp_collector *c, const btp_regs *regs,
                               const btp_stack_bounds *bounds, unsigned flags);
/* The fp walk of the current thread from the entry point's frame fp,
 * straight into frames, when it can be done without the collector: 1 with
 * *n_out set if the result is what the collector would give with no snip
 * (the chain ends inside the head, on the thread's known stack), else 0
 * (frames then hold garbage: walk again). */
int btp_capture_fp_quick(btp_frame *frames, size_t cap, uintptr_t fp, size_t *n_out);
/* btp_capture with options btp_fp_quick_options accepts where the quick
 * walk did not apply: ra is btp_capture's return address, cfp its
 * caller's frame record (above btp_capture's own), and the walk goes on
 * from there through the collector as the general one would from
 * btp_capture's record. btp_capture ends in a tail call to it, so that
 * btp_capture's own prologue stays small. */
btp_status btp_capture_fp_entry(const btp_capture_options *opt, btp_frame *frames,
                                size_t cap, size_t *n_out, uintptr_t ra, uintptr_t cfp);
btp_status btp_capture_libgcc(btp_collector *c, const void *uc);
#if BTP_HAVE_LIBGCC_UNWIND
#include <unwind.h>
/* The libgcc walk in parts, for btp_capture_libgcc_here. */
typedef struct btp_libgcc_walk {
    btp_collector *c;
    _Unwind_Reason_Code (*backtrace)(_Unwind_Trace_Fn, void *);
    _Unwind_Ptr (*getip)(struct _Unwind_Context *);
    _Unwind_Word (*getcfa)(struct _Unwind_Context *);
} btp_libgcc_walk;
/* Sets w's three functions, all from one library (backtrace NULL: this
 * process has no libgcc unwinder). */
void btp_capture_libgcc_fns(btp_libgcc_walk *w);
/* The walk's callback: each frame's pc into w->c. */
_Unwind_Reason_Code btp_capture_libgcc_frame(struct _Unwind_Context *ctx, void *w);
/* btp_capture_libgcc, always inlined: _Unwind_Backtrace is called from the
 * caller's own frame, so the unwinder does not walk a frame of
 * btp_capture_libgcc's first (each frame costs it about 85 ns, as much as
 * a caller's: on a 15-frame stack a tenth of the capture). */
static BTP_ALWAYS_INLINE btp_status btp_capture_libgcc_here(btp_collector *c)
{
    btp_libgcc_walk w;
    btp_capture_libgcc_fns(&w);
    if (!w.backtrace)
        return BTP_E_NO_METHOD;
    w.c = c;
    /* The result is the reason the walk stopped (end of stack, the
     * callback, or unwind tables missing further up): whatever was
     * reported is the best this method can do. */
    (void)w.backtrace(btp_capture_libgcc_frame, &w);
    return BTP_OK;
}
#else
#define btp_capture_libgcc_here(c) btp_capture_libgcc((c), NULL)
#endif
btp_status btp_capture_libunwind(btp_collector *c, const void *uc);
btp_status btp_capture_glibc(btp_collector *c, const void *uc);
/* Make the method's first call now (it may load libraries). */
void btp_capture_preload(btp_capture_method method);
/* `symbol` with symbol version `version` (dlvsym over the process's
 * libraries: the definition of that version, not whichever library's the
 * plain lookup finds first), or NULL when no loaded library has it (a
 * static program) or version is NULL. Not async-signal-safe. */
void *btp_capture_lookup(const char *symbol, const char *version);
/* Non-zero if fn is in a shared object whose file name starts with prefix. */
int btp_capture_in_library(const void *fn, const char *prefix);
/* Address of a function of the method's unwinder (for dladdr), or NULL. */
const void *btp_capture_libgcc_symbol(void);
const void *btp_capture_libunwind_symbol(void);
const void *btp_capture_glibc_symbol(void);

#endif
