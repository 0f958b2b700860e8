/* C++ names: the Itanium ABI demangler of the C++ runtime, when the build
 * found one (libstdc++'s __cxa_demangle); otherwise names stay mangled. */
#include "symbolize/backend.h"

#include <stdlib.h>

#if BTP_CLI_HAVE_CXA_DEMANGLE
char *__cxa_demangle(const char *mangled, char *out, size_t *len, int *status);
#endif

char *sym_demangle(const char *name)
{
#if BTP_CLI_HAVE_CXA_DEMANGLE
    if (!name || name[0] != '_' || name[1] != 'Z')
        return NULL;
    int status = 0;
    char *d = __cxa_demangle(name, NULL, NULL, &status);
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
