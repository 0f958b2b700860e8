/*
 * A function of one named library that is already loaded, found in that
 * library and not by the process's symbol search: where two libraries
 * export the same name (libgcc_s and libunwind both export
 * _Unwind_Backtrace; glibc and libunwind both export backtrace), which
 * one a plain call reaches depends on the program's link order.
 */
#include "capture_internal.h"

#include <dlfcn.h>

void *btp_capture_lookup(const char *soname, const char *symbol)
{
    /* RTLD_NOLOAD: never loads anything (a library the program does not
     * have stays out); a handle's lookup starts at the library itself. */
    void *h = dlopen(soname, RTLD_LAZY | RTLD_NOLOAD);
    if (!h)
        return NULL;
    void *sym = dlsym(h, symbol);
    dlclose(h); /* the library stays loaded: the program had it before */
    return sym;
}
