/* Where the debug information of an image is: by build ID in
 * DIR/.build-id/xx/yyyy.debug, by the file's .gnu_debuglink next to it, in
 * its .debug/ folder or under DIR/<its folder>/, and by path as DIR/<path>
 * and DIR/<path>.debug, for each --debug-dir DIR and then /usr/lib/debug. */
#ifndef BTPACK_TOOLS_SYMBOLIZE_DEBUGFIND_H
#define BTPACK_TOOLS_SYMBOLIZE_DEBUGFIND_H

#include <stddef.h>

#include "symbolize/elf.h"

typedef struct debug_dirs {
    const char *const *dirs;
    size_t n;
    int no_system; /* leave /usr/lib/debug out */
} debug_dirs;

/*
 * The first candidate that is an ELF file with DWARF or a symbol table and
 * whose build ID is want[0..want_len) (when want_len > 0; a candidate
 * without a build ID is then refused too, as a file that cannot be shown to
 * match). path (may be NULL: search by build ID only) is the image's file,
 * elf (may be NULL) that file opened, for its debug link. Returns the
 * candidate opened in *out with its path (free it), or NULL.
 */
char *debug_find(const debug_dirs *d, const char *path, const elf_file *elf,
                 const unsigned char *want, size_t want_len, elf_file *out);

#endif
