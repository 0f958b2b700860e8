/*
 * The fp method: follow the chain of frame records {saved fp, return
 * address} that code built with frame pointers keeps (x86_64, i386 and
 * aarch64 all lay a record out this way), and read the registers out of a
 * signal's ucontext_t.
 *
 * Safety comes from never reading a word that is not known to be mapped:
 * a frame record is followed only if it lies inside a trusted region (the
 * thread's stack or the signal alternate stack), is word-aligned and lies
 * strictly above the previous one. Moving up and staying inside [lo, hi)
 * also bounds the walk. The chain may leave the alternate stack for the
 * thread's stack once (a handler's frames sit on the alternate stack, the
 * interrupted code's on the ordinary one).
 */
#include "capture_internal.h"

#include "common/reserved.h"

#include <signal.h>
#include <ucontext.h>

#define WORD ((uintptr_t)sizeof(uintptr_t))

/* This thread's stack, found once by pthread_getattr_np (slow, and not
 * async-signal-safe, hence cached). initial-exec keeps the access a plain
 * thread-pointer load with no call into the dynamic linker, so reading it
 * in a signal handler is safe. */
static __thread btp_stack_bounds thread_stack __attribute__((tls_model("initial-exec")));

/* What fast_records works out of thread_stack before its loop, worked out
 * once when thread_stack is set (see region_limits), for the quick walk:
 * quick_k 0 when the stack has no room for a record. */
static __thread uintptr_t quick_lim __attribute__((tls_model("initial-exec")));
static __thread uintptr_t quick_k __attribute__((tls_model("initial-exec")));

static int inside(const btp_stack_bounds *b, uintptr_t a)
{
    return a >= b->lo && a < b->hi;
}

/* The records a walk in r may read lie at word-aligned addresses from
 * *lo_a to *lim; returns 0 when there are none. */
static int region_limits(const btp_stack_bounds *r, uintptr_t *lo_a, uintptr_t *lim)
{
    *lo_a = (r->lo + WORD - 1) & ~(WORD - 1);
    *lim = r->hi >= 2 * WORD ? (r->hi - 2 * WORD) & ~(WORD - 1) : 0;
    return *lim >= *lo_a && *lo_a >= r->lo;
}

static void set_thread_stack(const btp_stack_bounds *t)
{
    uintptr_t lo_a, lim;
    int ok = region_limits(t, &lo_a, &lim);
    quick_lim = lim;
    quick_k = ok ? (lim - lo_a) / WORD + 1 : 0;
    thread_stack = *t;
}

/* The region to trust for a chain starting at `addr` on the thread's own
 * stack (not the alternate stack). */
static btp_status thread_bounds(uintptr_t addr, unsigned flags, btp_stack_bounds *b)
{
    if (thread_stack.hi != 0 && inside(&thread_stack, addr)) {
        *b = thread_stack;
        return BTP_OK;
    }
    if (thread_stack.hi == 0 && !(flags & BTP_CAPTURE_ASYNC_SIGNAL_SAFE)) {
        btp_stack_bounds t;
        if (btp_stack_bounds_current(&t) == BTP_OK) {
            set_thread_stack(&t);
            if (inside(&t, addr)) {
                *b = t;
                return BTP_OK;
            }
        }
    }
    /* Not the stack the thread started with (a coroutine, a signal context
     * from another thread) or no cache yet in a signal handler: the
     * anonymous mapping holding the address. */
    return btp_stack_region_of(addr, b) == BTP_OK ? BTP_OK : BTP_E_NO_METHOD;
}

/* The alternate signal stack, if this thread is running on it. */
static int alt_stack(btp_stack_bounds *b)
{
    stack_t ss;
    if (sigaltstack(NULL, &ss) != 0 || !(ss.ss_flags & SS_ONSTACK) || !ss.ss_sp)
        return 0;
    b->lo = (uintptr_t)ss.ss_sp;
    b->hi = b->lo + ss.ss_size;
    return b->hi > b->lo;
}

int btp_capture_stack_region(uintptr_t addr, unsigned flags, btp_stack_bounds *out)
{
    if (thread_stack.hi != 0 && inside(&thread_stack, addr)) {
        *out = thread_stack;
        return 1;
    }
    btp_stack_bounds b;
    if (alt_stack(&b) && inside(&b, addr)) {
        *out = b;
        return 1;
    }
    return thread_bounds(addr, flags, out) == BTP_OK;
}

int btp_capture_known_stack(uintptr_t addr, btp_stack_bounds *out)
{
    if (thread_stack.hi == 0 || !inside(&thread_stack, addr))
        return 0;
    *out = thread_stack;
    return 1;
}

void btp_capture_cache_thread_bounds(void)
{
    btp_stack_bounds t;
    if (thread_stack.hi == 0 && btp_stack_bounds_current(&t) == BTP_OK)
        set_thread_stack(&t);
}

/* A frame record at f may be read if both of its words lie in r. */
static int record_ok(const btp_stack_bounds *r, uintptr_t f)
{
    return f % WORD == 0 && f >= r->lo && r->hi >= 2 * WORD && f <= r->hi - 2 * WORD;
}

/* Reads stack words the compiler's instrumentation knows nothing about (other
 * frames, possibly poisoned redzones); the bounds above are what keep it
 * safe. */
__attribute__((no_sanitize_address)) static uintptr_t load(uintptr_t a)
{
    return *(const volatile uintptr_t *)a;
}

/* x rotated right by log2(WORD) bits. */
static inline uintptr_t rotr_word(uintptr_t x)
{
    const unsigned k = WORD == 8 ? 3 : 2, bits = 8 * (unsigned)WORD;
    return (x >> k) | (x << (bits - k));
}

/*
 * The walk while frames go straight into the head: records from f on,
 * their return addresses stored at *o (up to o_end). A record is read if it
 * lies in the region (word-aligned, at or above lo_a, at most at lim) and
 * above the last one read (*prev). All of that is one comparison: lim - f
 * rotated right by the alignment's bits is f's distance below lim in words
 * when f is aligned and at most lim, and at least 2^61 otherwise (a
 * misaligned f puts its low bits at the top, one above lim wraps around);
 * it must be smaller than the previous record's distance (k), which starts
 * one word below lo_a (or at *prev). So the chain only climbs, and a zero
 * frame pointer (below lo_a, or not above *prev) fails. Two records a pass:
 * half the loop's own branches. Returns the record the general step goes
 * on with (0: the chain ended).
 */
/* fast_records' loop, with the region as lim and k (see there): returns the
 * record to go on with and leaves the distance of the last record read in
 * *kp. */
__attribute__((no_sanitize_address)) static inline uintptr_t records_loop(
    uintptr_t lim, uintptr_t *kp, uintptr_t f, btp_frame **op, btp_frame *const o_end,
    int *ended)
{
    *ended = 0;
    btp_frame *o = *op;
    uintptr_t k = *kp;
    btp_frame *const o_last = o_end - 2; /* room for two from here */
    uintptr_t ra = 0, k1;
    for (;;) {
        if (o > o_last)
            break;
        if ((k1 = rotr_word(lim - f)) >= k || (ra = load(f + WORD)) == 0)
            goto end; /* the end (the general step sees it again) */
        uintptr_t f1 = load(f);
        o[0].value = (uint64_t)ra;
        o[0].kind = BTP_FRAME_RA;
        k = k1;
        f = f1;
        if ((k1 = rotr_word(lim - f)) >= k || (ra = load(f + WORD)) == 0) {
            o += 1;
            goto end;
        }
        f1 = load(f);
        o[1].value = (uint64_t)ra;
        o[1].kind = BTP_FRAME_RA;
        o += 2;
        k = k1;
        f = f1;
    }
    if (0) {
    end:
        *ended = 1; /* a record failed the test, or a zero return address */
    }
    *kp = k;
    *op = o;
    return f;
}

/*
 * The walk while frames go straight into the head: records from f on,
 * their return addresses stored at *o (up to o_end). A record is read if it
 * lies in the region (word-aligned, at or above lo_a, at most at lim) and
 * above the last one read (*prev). All of that is one comparison: lim - f
 * rotated right by the alignment's bits is f's distance below lim in words
 * when f is aligned and at most lim, and at least 2^61 otherwise (a
 * misaligned f puts its low bits at the top, one above lim wraps around);
 * it must be smaller than the previous record's distance (k), which starts
 * one word below lo_a (or at *prev). So the chain only climbs, and a zero
 * frame pointer (below lo_a, or not above *prev) fails. Two records a pass:
 * half the loop's own branches. Returns the record the general step goes
 * on with (0: the chain ended).
 */
__attribute__((no_sanitize_address)) static inline uintptr_t fast_records(
    const btp_stack_bounds *r, uintptr_t f, uintptr_t *prev, btp_frame **op,
    btp_frame *const o_end, int *ended)
{
    *ended = 0;
    uintptr_t lo_a, lim;
    if (!region_limits(r, &lo_a, &lim) || o_end - *op < 2)
        return f;
    const uintptr_t last = *prev;
    uintptr_t k = (lim - lo_a) / WORD + 1;
    if (last >= lo_a) /* above it: f > last is lim - f < lim - last */
        k = last > lim ? 0 : (lim - last + WORD - 1) / WORD;
    const uintptr_t k_start = k;
    f = records_loop(lim, &k, f, op, o_end, ended);
    if (k != k_start)
        *prev = lim - k * WORD; /* the last record read */
    return f;
}

__attribute__((no_sanitize_address)) btp_status btp_capture_fp_walk(
    btp_collector *c, const btp_regs *regs, const btp_stack_bounds *given, unsigned flags)
{
    if (regs->pc != 0 && !btp_collector_push(c, regs->pc))
        return BTP_OK;
    uintptr_t f = regs->fp;
    if (f == 0)
        return BTP_OK;

    btp_stack_bounds r;
    int on_alt = 0; /* r is the alternate stack: one switch to the thread's is allowed */
    if (given) {
        r = *given;
    } else if (thread_stack.hi != 0 && inside(&thread_stack, f)) {
        r = thread_stack; /* the common case: no system call */
    } else if (alt_stack(&r) && inside(&r, f)) {
        on_alt = 1;
    } else if (thread_bounds(f, flags, &r) != BTP_OK) {
        return BTP_OK; /* nothing we may read: the pc alone */
    }
    /* The first record must be at or above the stack pointer too: below it
     * is dead stack. */
    if (regs->sp && inside(&r, regs->sp) && f < regs->sp)
        return BTP_OK;

    uintptr_t prev = 0;
    for (;;) {
        /* While frames go straight into the head: the checks of record_ok
         * with the region's bounds in registers, the frame stored here. */
        if (c->head_n < c->fast_end) {
            btp_frame *o = c->out + c->head_n;
            int ended;
            f = fast_records(&r, f, &prev, &o, c->out + c->fast_end, &ended);
            c->head_n = (size_t)(o - c->out);
            if (f == 0)
                return BTP_OK;
        }
        if (!record_ok(&r, f) || f <= prev) {
            btp_stack_bounds t;
            if (!on_alt || given || inside(&r, f) || thread_bounds(f, flags, &t) != BTP_OK ||
                !record_ok(&t, f))
                return BTP_OK;
            r = t; /* left the alternate stack for the thread's own */
            on_alt = 0;
        }
        uintptr_t next = load(f);
        uintptr_t ra = load(f + WORD);
        if (ra == 0 || !btp_collector_push(c, ra))
            return BTP_OK;
        if (next == 0)
            return BTP_OK;
        prev = f;
        f = next;
    }
}

/* The quick walk from a return address `ra` (the first frame) and the frame
 * record `fp` of the function it returns into: 1 with *n_out set, or 0 as
 * btp_capture_fp_quick. */
static inline int quick_from(btp_frame *frames, size_t cap, uintptr_t ra, uintptr_t fp,
                             size_t *n_out)
{
    /* Only the thread's own stack, known already, and only a chain that
     * ends before the frames the collector keeps in order run out (cap-1,
     * its lin_cap for any cap of 2 or more): then the general walk would
     * keep exactly these frames. The region's limits were worked out when
     * the stack was found (quick_lim, quick_k). */
    uintptr_t k = quick_k;
    if (k == 0 || !inside(&thread_stack, fp) || cap < 3 || ra == 0)
        return 0;
    frames[0].value = (uint64_t)ra;
    frames[0].kind = BTP_FRAME_PC;
    btp_frame *o = frames + 1;
    int ended;
    records_loop(quick_lim, &k, fp, &o, frames + cap - 1, &ended);
    if (!ended)
        return 0;
    *n_out = (size_t)(o - frames);
    return 1;
}

btp_status btp_capture_fp_entry(const btp_capture_options *opt, btp_frame *frames,
                                size_t cap, size_t *n_out, uintptr_t ra, uintptr_t cfp)
{
    if (!btp_reserved_clear(opt->reserved))
        return BTP_E_UNSUPPORTED;
    if (quick_from(frames, cap, ra, cfp, n_out))
        return BTP_OK;
    btp_collector c;
    btp_collector_init(&c, frames, cap, 0, opt);
    btp_regs regs = {.pc = ra, .sp = 0, .fp = cfp};
    btp_status st = btp_capture_fp_walk(&c, &regs, NULL, opt->flags);
    *n_out = btp_collector_finish(&c);
    return st;
}

int btp_capture_fp_quick(btp_frame *frames, size_t cap, uintptr_t fp, size_t *n_out)
{
    /* fp is the entry point's own frame record: its return address comes
     * first, then the chain from its caller's record */
    if (thread_stack.hi == 0 || !inside(&thread_stack, fp) || fp % WORD != 0)
        return 0;
    return quick_from(frames, cap, load(fp + WORD), load(fp), n_out);
}

btp_status btp_regs_from_context(const void *ucontext, btp_regs *regs)
{
    if (!ucontext || !regs)
        return BTP_E_INVALID_ARGUMENT;
    const ucontext_t *uc = ucontext;
#if defined(__linux__) && defined(__x86_64__)
    regs->pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
    regs->sp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
    regs->fp = (uintptr_t)uc->uc_mcontext.gregs[REG_RBP];
    return BTP_OK;
#elif defined(__linux__) && defined(__i386__)
    regs->pc = (uintptr_t)uc->uc_mcontext.gregs[REG_EIP];
    regs->sp = (uintptr_t)uc->uc_mcontext.gregs[REG_ESP];
    regs->fp = (uintptr_t)uc->uc_mcontext.gregs[REG_EBP];
    return BTP_OK;
#elif defined(__linux__) && defined(__aarch64__)
    regs->pc = (uintptr_t)uc->uc_mcontext.pc;
    regs->sp = (uintptr_t)uc->uc_mcontext.sp;
    regs->fp = (uintptr_t)uc->uc_mcontext.regs[29];
    return BTP_OK;
#else
    (void)uc;
    return BTP_E_UNSUPPORTED;
#endif
}
