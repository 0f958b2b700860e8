/*
 * A function of a library found by its symbol version, not by the
 * process's plain symbol search: where two libraries export the same name
 * (libgcc_s and libunwind both export _Unwind_Backtrace; glibc and
 * libunwind both export backtrace), which one a plain call reaches
 * depends on the program's link order. libunwind's are unversioned, so a
 * versioned lookup passes over them.
 */
#include "capture_internal.h"

#include <dlfcn.h>
#include <string.h>

void *btp_capture_lookup(const char *symbol, const char *version)
{
    /* dlvsym, not dlopen: nothing is loaded, and a statically linked
     * program (where it finds nothing) gets no link-time warning. */
    return version ? dlvsym(RTLD_DEFAULT, symbol, version) : NULL;
}

int btp_capture_in_library(const void *fn, const char *prefix)
{
    Dl_info info;
    if (!dladdr(fn, &info) || !info.dli_fname)
        return 0;
    const char *base = strrchr(info.dli_fname, '/');
    base = base ? base + 1 : info.dli_fname;
    return strncmp(base, prefix, strlen(prefix)) == 0;
}
