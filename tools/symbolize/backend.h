/* Symbolizer back ends: given one ELF file that holds DWARF and a batch of
 * its virtual addresses, say for each address its function(s) and
 * file:line, innermost (inlined) first. One call per file, whatever the
 * number of addresses: the addr2line back end runs one process for the
 * whole batch, the libdw one reads the file once. */
#ifndef BTPACK_TOOLS_SYMBOLIZE_BACKEND_H
#define BTPACK_TOOLS_SYMBOLIZE_BACKEND_H

#include <stddef.h>
#include <stdint.h>

/* Called for each location of address i (0-based in the batch), innermost
 * first; function/file NULL when unknown, line 0 when unknown. Strings are
 * only valid during the call. Returns 0, or -1 to stop (out of memory). */
typedef int (*sym_emit_fn)(void *ctx, size_t i, const char *function, const char *file,
                           unsigned line);

typedef struct sym_backend {
    const char *name;
    /* Returns 0, or -1 with why[0..why_len) set when the file could not be
     * read at all (the caller then notes it for every address). */
    int (*resolve)(const char *prog, const char *file, const uint64_t *vaddrs, size_t n,
                   sym_emit_fn emit, void *ctx, char *why, size_t why_len);
} sym_backend;

extern const sym_backend sym_backend_addr2line;
/* NULL name when built without libdw. */
extern const sym_backend sym_backend_libdw;

/* A demangled copy of a C++ (Itanium ABI) symbol name, or NULL when name
 * is not mangled or no demangler is built in (free() the result). */
char *sym_demangle(const char *name);

#endif
