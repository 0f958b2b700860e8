/*
 * The libgcc method: _Unwind_Backtrace walks the DWARF unwind tables
 * (.eh_frame), so it sees code built without frame pointers. It reports
 * frames from its caller outwards, through signal frames (libgcc knows the
 * kernel's signal trampoline), which is how a capture from a ucontext finds
 * the interrupted pc.
 */
#include "capture_internal.h"

#if BTP_HAVE_LIBGCC_UNWIND
#include <unwind.h>

static _Unwind_Reason_Code on_frame(struct _Unwind_Context *ctx, void *arg)
{
    uintptr_t ip = (uintptr_t)_Unwind_GetIP(ctx);
    if (ip == 0 || !btp_collector_push(arg, ip))
        return _URC_END_OF_STACK;
    /* libgcc follows a frame pointer that points at itself for ever (the
     * same frame again and again): a frame whose CFA is not above the
     * previous one's ends the walk, unless it is on a stack not walked yet
     * (the signal frame leads from the alternate stack to the thread's). */
    return btp_collector_cfa(arg, (uintptr_t)_Unwind_GetCFA(ctx), 1) ? _URC_NO_REASON
                                                                      : _URC_END_OF_STACK;
}

btp_status btp_capture_libgcc(btp_collector *c, const void *uc)
{
    (void)uc; /* the walk passes through the signal frame on its own */
    /* The result is the reason the walk stopped (end of stack, our callback,
     * or unwind tables missing further up): whatever was reported is the
     * best this method can do. */
    (void)_Unwind_Backtrace(on_frame, c);
    return BTP_OK;
}

const void *btp_capture_libgcc_symbol(void)
{
    return (const void *)&_Unwind_Backtrace;
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
