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

/* The three from one library (the context is that library's own type):
 * looked up once, kept in atomics (a capture in a signal handler reads
 * them; a race only looks them up twice). */
static _Atomic(void *) found_backtrace, found_getip, found_getcfa;
static _Atomic int found_none; /* looked up: no libgcc in this process */

void btp_capture_libgcc_fns(btp_libgcc_walk *w)
{
    void *b = atomic_load_explicit(&found_backtrace, memory_order_acquire);
    void *i = atomic_load_explicit(&found_getip, memory_order_acquire);
    void *c = atomic_load_explicit(&found_getcfa, memory_order_acquire);
    if (!(b && i && c) && !atomic_load_explicit(&found_none, memory_order_acquire)) {
        /* (the versions libgcc_s gives them on every architecture) */
        b = btp_capture_lookup("_Unwind_Backtrace", "GCC_3.3");
        i = btp_capture_lookup("_Unwind_GetIP", "GCC_3.0");
        c = btp_capture_lookup("_Unwind_GetCFA", "GCC_3.3");
        if (!b || !i || !c) {
            b = (void *)_Unwind_Backtrace;
            i = (void *)_Unwind_GetIP;
            c = (void *)_Unwind_GetCFA;
            if (btp_capture_in_library(b, "libunwind")) {
                atomic_store_explicit(&found_none, 1, memory_order_release);
                b = i = c = NULL;
            }
        }
        if (b) {
            atomic_store_explicit(&found_backtrace, b, memory_order_release);
            atomic_store_explicit(&found_getip, i, memory_order_release);
            atomic_store_explicit(&found_getcfa, c, memory_order_release);
        }
    }
    if (!(b && i && c))
        b = i = c = NULL;
    w->backtrace = (_Unwind_Reason_Code(*)(_Unwind_Trace_Fn, void *))b;
    w->getip = (_Unwind_Ptr(*)(struct _Unwind_Context *))i;
    w->getcfa = (_Unwind_Word(*)(struct _Unwind_Context *))c;
}

_Unwind_Reason_Code btp_capture_libgcc_frame(struct _Unwind_Context *ctx, void *arg)
{
    btp_libgcc_walk *w = arg;
    uintptr_t ip = (uintptr_t)w->getip(ctx);
    if (ip == 0 || !btp_collector_add(w->c, ip))
        return _URC_END_OF_STACK;
    /* libgcc follows a frame pointer that points at itself for ever (the
     * same frame again and again): a frame whose CFA is not above the
     * previous one's ends the walk, unless it is on a stack not walked yet
     * (the signal frame leads from the alternate stack to the thread's). */
    return btp_collector_cfa(w->c, (uintptr_t)w->getcfa(ctx), 1) ? _URC_NO_REASON
                                                                   : _URC_END_OF_STACK;
}

btp_status btp_capture_libgcc(btp_collector *c, const void *uc)
{
    (void)uc; /* the walk passes through the signal frame on its own */
    return btp_capture_libgcc_here(c);
}

const void *btp_capture_libgcc_symbol(void)
{
    btp_libgcc_walk w;
    btp_capture_libgcc_fns(&w);
    return (const void *)w.backtrace;
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
