/*
 * The libunwind method (optional). The current thread's stack comes from
 * unw_backtrace() into a chunk of BTP_LIBUNWIND_CHUNK addresses: on x86_64
 * it takes libunwind's fast path (a per-thread cache of each return
 * address's frame layout; no signal mask changes, which a cursor makes
 * several of per frame). A stack that fills the chunk (deeper than it, or
 * a frame pointer that points at itself, repeated until the chunk is full)
 * is walked again with a local cursor, frame by frame, which streams any
 * depth through the collector and checks that each frame's stack pointer
 * moves up the stack. From a ucontext the cursor starts at the interrupted
 * frame itself where libunwind's context type is the system's ucontext_t
 * (x86_64); elsewhere it unwinds from here through the signal frame like
 * libgcc.
 */
#include "capture_internal.h"
#include "capture_cbf.h"

#if BTP_HAVE_LIBUNWIND
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#include <pthread.h>

/* unw_backtrace's fast path makes its per-thread cache with
 * pthread_key_create, pthread_getspecific and pthread_setspecific, which
 * libunwind references weakly: in a statically linked program that does
 * not use them otherwise they are not linked in, are NULL, and the first
 * capture jumps to address 0. Naming them here links them in. */
__attribute__((used)) static void *const libunwind_needs[] = {
    (void *)&pthread_key_create, (void *)&pthread_getspecific, (void *)&pthread_setspecific,
    (void *)&pthread_once};

/* Addresses unw_backtrace() fills at once (on the stack: 2 KiB on 64-bit). */
#define BTP_LIBUNWIND_CHUNK 256

/* The fast path: 1 if the whole stack fitted the chunk and was pushed
 * (or, for btp_capture_cbf, written as its stream: btp_chunk_cbf). */
static int from_backtrace(btp_collector *c)
{
    void *chunk[BTP_LIBUNWIND_CHUNK];
    int n = unw_backtrace(chunk, BTP_LIBUNWIND_CHUNK);
    if (n <= 0 || n >= BTP_LIBUNWIND_CHUNK)
        return 0;
    btp_collector_chunk(c, chunk, n);
    return 1;
}

btp_status btp_capture_libunwind(btp_collector *c, const void *uc)
{
    if (!uc && from_backtrace(c))
        return BTP_OK;
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
