/*
 * Where a thread's stack is: from pthread_getattr_np (exact, but neither
 * cheap nor async-signal-safe), or from /proc/self/maps read with plain
 * open/read (async-signal-safe, any thread, any stack).
 */
#include "capture_internal.h"

#include "capture/procmaps.h"

#include <pthread.h>

btp_status btp_stack_bounds_current(btp_stack_bounds *out)
{
    if (!out)
        return BTP_E_INVALID_ARGUMENT;
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) != 0)
        return BTP_E_IO;
    void *addr = NULL;
    size_t size = 0;
    int rc = pthread_attr_getstack(&attr, &addr, &size);
    pthread_attr_destroy(&attr);
    if (rc != 0 || !addr || size == 0)
        return BTP_E_IO;
    out->lo = (uintptr_t)addr;
    out->hi = out->lo + size;
    return out->hi > out->lo ? BTP_OK : BTP_E_IO;
}

enum { ANY = 0, ANON_ONLY = 1, EXEC_ONLY = 2 };

/* The readable mapping holding addr (anonymous only / executable only). */
static btp_status mapping_of(uintptr_t addr, int want, btp_stack_bounds *out)
{
    btp_maps_reader r;
    if (!btp_maps_open(&r))
        return BTP_E_IO;
    btp_maps_line m;
    btp_status st = BTP_END;
    while (btp_maps_next(&r, &m)) {
        if (addr >= m.lo && addr < m.hi) {
            if (m.perms[0] == 'r' && (want != ANON_ONLY || btp_maps_kind(&m) == BTP_MAPS_ANON) &&
                (want != EXEC_ONLY || m.perms[2] == 'x')) {
                out->lo = m.lo;
                out->hi = m.hi;
                st = BTP_OK;
            }
            break;
        }
    }
    btp_maps_close(&r);
    return st;
}

btp_status btp_stack_bounds_of(uintptr_t addr, btp_stack_bounds *out)
{
    if (!out)
        return BTP_E_INVALID_ARGUMENT;
    return mapping_of(addr, ANY, out);
}

btp_status btp_stack_region_of(uintptr_t addr, btp_stack_bounds *out)
{
    return mapping_of(addr, ANON_ONLY, out);
}

btp_status btp_code_region_of(uintptr_t addr, btp_stack_bounds *out)
{
    return mapping_of(addr, EXEC_ONLY, out);
}
