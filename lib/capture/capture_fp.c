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

#include <signal.h>
#include <ucontext.h>

#define WORD BTP_FP_WORD

/* This thread's stack, found once by pthread_getattr_np (slow, and not
 * async-signal-safe, hence cached), with the quick walk's view of it
 * (capture_internal.h). */
__thread btp_fp_thread btp_fp_thread_state __attribute__((tls_model("initial-exec")));
#define thread_stack (btp_fp_thread_state.stack)

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
    btp_fp_thread_state.not_lim = ~lim;
    btp_fp_thread_state.k = ok ? (lim - lo_a) / WORD + 1 : 0;
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

/* The walk while frames go straight into the head: btp_fp_records from f
 * on, its slots from *op up to o_end, in the region r and above the last
 * record read (*prev, 0: none), both updated. Returns the record the
 * general step goes on with (0: the chain ended). */
__attribute__((no_sanitize_address)) static inline uintptr_t fast_records(
    const btp_stack_bounds *r, uintptr_t f, uintptr_t *prev, btp_frame **op,
    btp_frame *const o_end, int *ended)
{
    *ended = 0;
    uintptr_t lo_a, lim;
    if (!region_limits(r, &lo_a, &lim) || o_end - *op < BTP_FP_PASS)
        return f;
    const uintptr_t last = *prev;
    uintptr_t k = (lim - lo_a) / WORD + 1;
    if (last >= lo_a) /* above it: f > last is lim - f < lim - last */
        k = last > lim ? 0 : (lim - last + WORD - 1) / WORD;
    uintptr_t nk = ~k;
    btp_frame *const o0 = *op;
    size_t i = 0;
    f = btp_fp_records(~lim, &nk, f, o0, &i, (size_t)(o_end - o0), ended, 0);
    *op = o0 + i;
    if (~nk != k)
        *prev = lim - ~nk * WORD; /* the last record read */
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
        uintptr_t next = btp_fp_load(f);
        uintptr_t ra = btp_fp_load(f + WORD);
        if (ra == 0 || !btp_collector_push(c, ra))
            return BTP_OK;
        if (next == 0)
            return BTP_OK;
        prev = f;
        f = next;
    }
}

btp_status btp_capture_fp_entry(const btp_capture_options *opt, btp_frame *frames,
                                size_t cap, size_t *n_out, uintptr_t ra, uintptr_t cfp)
{
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
    if (cap <= BTP_FP_PASS || thread_stack.hi == 0 || !inside(&thread_stack, fp) || fp % WORD != 0)
        return 0;
    return btp_fp_quick(frames, cap, btp_fp_load(fp + WORD), btp_fp_load(fp), fp, n_out, 0);
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
