/*
 * The libgcc method: _Unwind_Backtrace walks the DWARF unwind tables
 * (.eh_frame), so it sees code built without frame pointers. It reports
 * frames from its caller outwards, through signal frames (libgcc knows the
 * kernel's signal trampoline), which is how a capture from a ucontext finds
 * the interrupted pc.
 *
 * The functions are libgcc_s's own, looked up by their symbol versions:
 * libunwind exports _Unwind_Backtrace and friends too (unversioned), and
 * which one a plain call reaches depends on the program's link order. A
 * program that has no libgcc_s loaded and whose plain calls reach
 * libunwind (libbtpack.a linked with -lunwind and --as-needed) has no
 * libgcc to run: the method then fails with BTP_E_NO_METHOD rather than
 * run libunwind's code under libgcc's name.
 */
#include "capture_internal.h"

#if BTP_HAVE_LIBGCC_UNWIND
#include <unwind.h>

typedef _Unwind_Reason_Code (*backtrace_fn)(_Unwind_Trace_Fn, void *);
typedef _Unwind_Ptr (*getip_fn)(struct _Unwind_Context *);
typedef _Unwind_Word (*getcfa_fn)(struct _Unwind_Context *);

typedef struct libgcc_fns {
    backtrace_fn backtrace;
    getip_fn getip;
    getcfa_fn getcfa;
} libgcc_fns;

/* The three from one library (the context is that library's own type):
 * libgcc_s's, else (a static program) the ones the link gave. Every thread
 * that looks them up finds the same functions, so racing stores agree. */
static _Atomic(backtrace_fn) found_backtrace;
static _Atomic(getip_fn) found_getip;
static _Atomic(getcfa_fn) found_getcfa;
static _Atomic int found_none; /* looked up: no libgcc in this process */

static libgcc_fns fns(void)
{
    libgcc_fns f = {atomic_load_explicit(&found_backtrace, memory_order_acquire),
                    atomic_load_explicit(&found_getip, memory_order_acquire),
                    atomic_load_explicit(&found_getcfa, memory_order_acquire)};
    if (f.backtrace && f.getip && f.getcfa)
        return f;
    if (atomic_load_explicit(&found_none, memory_order_acquire))
        return (libgcc_fns){0};
    /* (the versions libgcc_s gives them on every architecture) */
    f.backtrace = (backtrace_fn)btp_capture_lookup("_Unwind_Backtrace", "GCC_3.3");
    f.getip = (getip_fn)btp_capture_lookup("_Unwind_GetIP", "GCC_3.0");
    f.getcfa = (getcfa_fn)btp_capture_lookup("_Unwind_GetCFA", "GCC_3.3");
    if (!f.backtrace || !f.getip || !f.getcfa) {
        f = (libgcc_fns){_Unwind_Backtrace, _Unwind_GetIP, _Unwind_GetCFA};
        if (btp_capture_in_library((const void *)f.backtrace, "libunwind")) {
            atomic_store_explicit(&found_none, 1, memory_order_release);
            return (libgcc_fns){0};
        }
    }
    atomic_store_explicit(&found_backtrace, f.backtrace, memory_order_release);
    atomic_store_explicit(&found_getip, f.getip, memory_order_release);
    atomic_store_explicit(&found_getcfa, f.getcfa, memory_order_release);
    return f;
}

typedef struct walk {
    btp_collector *c;
    libgcc_fns f;
} walk;

static _Unwind_Reason_Code on_frame(struct _Unwind_Context *ctx, void *arg)
{
    walk *w = arg;
    uintptr_t ip = (uintptr_t)w->f.getip(ctx);
    if (ip == 0 || !btp_collector_push(w->c, ip))
        return _URC_END_OF_STACK;
    /* libgcc follows a frame pointer that points at itself for ever (the
     * same frame again and again): a frame whose CFA is not above the
     * previous one's ends the walk, unless it is on a stack not walked yet
     * (the signal frame leads from the alternate stack to the thread's). */
    return btp_collector_cfa(w->c, (uintptr_t)w->f.getcfa(ctx), 1) ? _URC_NO_REASON
                                                                      : _URC_END_OF_STACK;
}

btp_status btp_capture_libgcc(btp_collector *c, const void *uc)
{
    (void)uc; /* the walk passes through the signal frame on its own */
    walk w = {c, fns()};
    if (!w.f.backtrace)
        return BTP_E_NO_METHOD;
    /* The result is the reason the walk stopped (end of stack, our callback,
     * or unwind tables missing further up): whatever was reported is the
     * best this method can do. */
    (void)w.f.backtrace(on_frame, &w);
    return BTP_OK;
}

const void *btp_capture_libgcc_symbol(void)
{
    return (const void *)fns().backtrace;
}

#else

btp_status btp_capture_libgcc(btp_collector *c, const void *uc)
{
    (void)c;
    (void)uc;
    return BTP_E_NO_METHOD;
}

const void *btp_capture_libgcc_symbol(void)
{
    return NULL;
}

#endif
