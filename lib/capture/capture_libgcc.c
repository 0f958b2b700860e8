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
    if (ip == 0)
        return _URC_END_OF_STACK;
    return btp_collector_push(arg, ip) ? _URC_NO_REASON : _URC_END_OF_STACK;
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
