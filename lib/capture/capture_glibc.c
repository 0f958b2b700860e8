/*
 * The glibc method: backtrace() from <execinfo.h> (itself a wrapper around
 * libgcc's unwinder, loaded with dlopen on first use). It fills an array, so
 * it sees at most BTP_CAPTURE_GLIBC_MAX_FRAMES frames.
 */
#include "capture_internal.h"

#if BTP_HAVE_EXECINFO
#include <execinfo.h>

btp_status btp_capture_glibc(btp_collector *c, const void *uc)
{
    (void)uc; /* like libgcc, it walks through the signal frame */
    void *addrs[BTP_CAPTURE_GLIBC_MAX_FRAMES];
    int n = backtrace(addrs, BTP_CAPTURE_GLIBC_MAX_FRAMES);
    for (int i = 0; i < n; i++)
        if (addrs[i] == NULL || !btp_collector_push(c, (uintptr_t)addrs[i]))
            break;
    return n > 0 ? BTP_OK : BTP_E_NO_METHOD;
}

const void *btp_capture_glibc_symbol(void)
{
    return (const void *)&backtrace;
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
