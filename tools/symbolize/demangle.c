/* C++ names: the Itanium ABI demangler of the C++ runtime, when the build
 * found one (libstdc++'s __cxa_demangle); otherwise names stay mangled.
 *
 * The runtime is opened when the first mangled name needs it, not linked:
 * loading libstdc++ at start-up (its relocations and static constructors)
 * took about 1 ms of every btpack run, 4 % of turning a trace log of
 * 21 MB of text back into text, for a function only symbolizing uses. */
#include "symbolize/backend.h"

#include <stdlib.h>

#if BTP_CLI_HAVE_CXA_DEMANGLE
#include <dlfcn.h>
#include <pthread.h>
#include <string.h>

typedef char *(*cxa_demangle_fn)(const char *mangled, char *out, size_t *len, int *status);

static cxa_demangle_fn demangler;
static pthread_once_t demangler_once = PTHREAD_ONCE_INIT;

static void find_demangler(void)
{
    /* already in the process (a C++ program, a static runtime), else the
     * runtime the build found, by its soname (stable since GCC 3.4) */
    void *f = dlsym(RTLD_DEFAULT, "__cxa_demangle");
    if (!f) {
        void *h = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_LOCAL);
        f = h ? dlsym(h, "__cxa_demangle") : NULL;
    }
    memcpy(&demangler, &f, sizeof demangler); /* object to function pointer */
}
#endif

char *sym_demangle(const char *name)
{
#if BTP_CLI_HAVE_CXA_DEMANGLE
    if (!name || name[0] != '_' || name[1] != 'Z')
        return NULL;
    pthread_once(&demangler_once, find_demangler);
    if (!demangler)
        return NULL;
    int status = 0;
    char *d = demangler(name, NULL, NULL, &status);
    if (status != 0) {
        free(d);
        return NULL;
    }
    return d;
#else
    (void)name;
    return NULL;
#endif
}
