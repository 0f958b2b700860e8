/*
 * The libunwind method (optional): a local cursor stepped frame by frame.
 * From a ucontext it starts at the interrupted frame itself where
 * libunwind's context type is the system's ucontext_t (x86_64); elsewhere it
 * unwinds from here through the signal frame like libgcc.
 */
#include "capture_internal.h"

#if BTP_HAVE_LIBUNWIND
#define UNW_LOCAL_ONLY
#include <libunwind.h>

btp_status btp_capture_libunwind(btp_collector *c, const void *uc)
{
    unw_cursor_t cursor;
    unw_context_t context;
#if BTP_LIBUNWIND_FROM_CONTEXT
    if (uc) {
        /* Copied: libunwind wants a mutable context. */
        context = *(const unw_context_t *)uc;
        if (unw_init_local2(&cursor, &context, UNW_INIT_SIGNAL_FRAME) < 0)
            return BTP_E_NO_METHOD;
    } else
#endif
    {
        (void)uc;
        if (unw_getcontext(&context) < 0 || unw_init_local(&cursor, &context) < 0)
            return BTP_E_NO_METHOD;
    }
    /* A frame's stack pointer is its callee's CFA: checked from the second
     * frame on (the first may share its stack pointer with a frameless
     * innermost function), it ends a cycle (a frame pointer pointing at
     * itself) before the repeated frame is kept. */
    unsigned frame = 0;
    do {
        unw_word_t ip = 0, sp = 0;
        if (unw_get_reg(&cursor, UNW_REG_IP, &ip) < 0 || ip == 0)
            break;
        if (frame++ >= 1 && (unw_get_reg(&cursor, UNW_REG_SP, &sp) < 0 ||
                             !btp_collector_cfa(c, (uintptr_t)sp, 1)))
            break;
        if (!btp_collector_push(c, (uintptr_t)ip))
            break;
    } while (unw_step(&cursor) > 0);
    return BTP_OK;
}

const void *btp_capture_libunwind_symbol(void)
{
    return (const void *)&unw_step;
}

#else

btp_status btp_capture_libunwind(btp_collector *c, const void *uc)
{
    (void)c;
    (void)uc;
    return BTP_E_NO_METHOD;
}

const void *btp_capture_libunwind_symbol(void)
{
    return NULL;
}

#endif
