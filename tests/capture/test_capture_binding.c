/*
 * Each method runs the code its name says, whatever the program's link
 * order. This program links libunwind before the C library (as Meson and
 * most build systems do: the C library comes last), so a plain call of
 * backtrace() or _Unwind_Backtrace from here reaches libunwind's; the
 * glibc and libgcc methods must still run glibc's and libgcc_s's.
 */
#include "../check.h"

#include <btpack/btpack.h>
#include <dlfcn.h>
#include <execinfo.h>
#include <string.h>
#include <unwind.h>

#define UNW_LOCAL_ONLY
#include <libunwind.h>

static const char *base_name(const char *path)
{
    const char *s = path ? strrchr(path, '/') : NULL;
    return s ? s + 1 : path ? path : "(none)";
}

static const char *library_of(const void *fn)
{
    Dl_info info;
    return dladdr(fn, &info) && info.dli_fname ? base_name(info.dli_fname) : "(none)";
}

/* With no libgcc_s in the process (nothing here needed it once the link
 * gave _Unwind_Backtrace to libunwind, as in a static libbtpack), the libgcc
 * method must refuse rather than run libunwind's code. Returns 1 when that
 * is the case here. */
static __attribute__((noinline)) int libgcc_refused(void)
{
    if (btp_capture_method_library(BTP_CAPTURE_LIBGCC))
        return 0;
    btp_capture_options o = {0};
    o.method = BTP_CAPTURE_LIBGCC;
    btp_frame f[4];
    size_t n = 0;
    CHECK(btp_capture(&o, f, 4, &n) == BTP_E_NO_METHOD, "libgcc without libgcc_s");
    return 1;
}

int main(void)
{
    /* The hazard is there: plain calls from here do not reach glibc's and
     * libgcc_s's functions (libunwind's; under AddressSanitizer, backtrace
     * is its interceptor's). Taking unw_backtrace's address also keeps
     * libunwind on the link line. */
    const char *plain_bt = library_of((const void *)&backtrace);
    const char *plain_unwind = library_of((const void *)&_Unwind_Backtrace);
    CHECK(strncmp(plain_bt, "libc.so", 7) != 0 && strncmp(plain_unwind, "libunwind", 9) == 0,
          "link order does not reproduce the hazard: backtrace from %s, _Unwind_Backtrace "
          "from %s (unw_backtrace at %p)",
          plain_bt, plain_unwind, (const void *)&unw_backtrace);

    static const struct {
        btp_capture_method m;
        const char *lib;
    } want[] = {{BTP_CAPTURE_GLIBC, "libc.so"},
                {BTP_CAPTURE_LIBGCC, "libgcc_s.so"},
                {BTP_CAPTURE_LIBUNWIND, "libunwind"}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        if (!btp_capture_method_available(want[i].m) ||
            (want[i].m == BTP_CAPTURE_LIBGCC && libgcc_refused()))
            continue;
        const char *lib = base_name(btp_capture_method_library(want[i].m));
        CHECK(strncmp(lib, want[i].lib, strlen(want[i].lib)) == 0, "%s runs code of %s",
              btp_capture_method_name(want[i].m), lib);
        /* and it captures: main and this program's caller of main */
        btp_capture_options o = {0};
        o.method = want[i].m;
        btp_frame f[64];
        size_t n = 0;
        btp_status st = btp_capture(&o, f, 64, &n);
        CHECK(st == BTP_OK && n >= 2, "%s: %s, %zu frames", btp_capture_method_name(o.method),
              btp_status_name(st), n);
        Dl_info info;
        CHECK(n > 0 && dladdr((void *)(uintptr_t)f[0].value, &info) && info.dli_sname &&
                  strcmp(info.dli_sname, "main") == 0,
              "%s: first frame %#llx is not in main", btp_capture_method_name(o.method),
              n ? (unsigned long long)f[0].value : 0ull);
    }
    return check_finish();
}
