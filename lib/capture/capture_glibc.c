/*
 * The glibc method: backtrace() from <execinfo.h> (itself a wrapper around
 * libgcc's unwinder, loaded with dlopen on first use). It fills an array, so
 * it sees at most BTP_CAPTURE_GLIBC_MAX_FRAMES frames.
 *
 * The function is glibc's own, looked up by its symbol version: libunwind
 * exports a `backtrace` too, and a program that links libunwind before the
 * C library (Meson, and most build systems, put the C library last) would
 * otherwise run libunwind's under this method's name.
 */
#include "capture_internal.h"

#if BTP_HAVE_EXECINFO
#include <execinfo.h>

typedef int (*backtrace_fn)(void **, int);

/* glibc's backtrace, once found (NULL: not yet). Each thread that finds it
 * finds the same function, so racing stores agree. */
static _Atomic(backtrace_fn) glibc_backtrace;

static backtrace_fn resolve(void)
{
    backtrace_fn fn = atomic_load_explicit(&glibc_backtrace, memory_order_acquire);
    if (fn)
        return fn;
    fn = (backtrace_fn)btp_capture_lookup("backtrace", BTP_GLIBC_BACKTRACE_VERSION);
    if (!fn)
        fn = backtrace; /* a static program: the one the link gave */
    atomic_store_explicit(&glibc_backtrace, fn, memory_order_release);
    return fn;
}

btp_status btp_capture_glibc(btp_collector *c, const void *uc)
{
    (void)uc; /* like libgcc, it walks through the signal frame */
    void *addrs[BTP_CAPTURE_GLIBC_MAX_FRAMES];
    int n = resolve()(addrs, BTP_CAPTURE_GLIBC_MAX_FRAMES);
    for (int i = 0; i < n; i++)
        if (addrs[i] == NULL || !btp_collector_add(c, (uintptr_t)addrs[i]))
            break;
    return n > 0 ? BTP_OK : BTP_E_NO_METHOD;
}

const void *btp_capture_glibc_symbol(void)
{
    return (const void *)resolve();
}

#else

btp_status btp_capture_glibc(btp_collector *c, const void *uc)
{
    (void)c;
    (void)uc;
    return BTP_E_NO_METHOD;
}

const void *btp_capture_glibc_symbol(void)
{
    return NULL;
}

#endif
