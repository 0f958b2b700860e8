/* Debug-file search (debugfind.h). */
#include "symbolize/debugfind.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char system_dir[] = "/usr/lib/debug";

static int try_file(const char *cand, const unsigned char *want, size_t want_len, elf_file *out)
{
    char why[128];
    if (elf_open(out, cand, why, sizeof why) < 0)
        return 0;
    int ok = (out->has_dwarf || out->has_symtab) &&
             (!want_len || (out->build_id_len == want_len &&
                            memcmp(out->build_id, want, want_len) == 0));
    if (!ok)
        elf_close(out);
    return ok;
}

/* try_file on a path built with printf; returns the path when it matches */
#if defined(__GNUC__)
__attribute__((format(printf, 5, 6)))
#endif
static char *try_fmt(const unsigned char *want, size_t want_len, elf_file *out, char *buf,
                     const char *fmt, ...);

static char *try_fmt(const unsigned char *want, size_t want_len, elf_file *out, char *buf,
                     const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, 4096, fmt, ap);
    va_end(ap);
    if (n < 0 || n >= 4096)
        return NULL;
    return try_file(buf, want, want_len, out) ? strdup(buf) : NULL;
}

char *debug_find(const debug_dirs *d, const char *path, const elf_file *elf,
                 const unsigned char *want, size_t want_len, elf_file *out)
{
    char buf[4096], hex[2 * 64 + 1];
    const char *dirs[64];
    size_t nd = 0;
    for (size_t i = 0; i < d->n && nd < 63; i++)
        dirs[nd++] = d->dirs[i];
    if (!d->no_system)
        dirs[nd++] = system_dir;
    char *found = NULL;
    if (want_len && want_len <= 64) {
        build_id_hex(want, want_len, hex);
        for (size_t i = 0; i < nd && !found; i++)
            found = try_fmt(want, want_len, out, buf, "%s/.build-id/%.2s/%s.debug", dirs[i], hex,
                            hex + 2);
    }
    if (found || !path || path[0] != '/')
        return found;
    const char *slash = strrchr(path, '/');
    int dir_len = (int)(slash - path); /* "" for a file in / */
    const char *link = elf ? elf->debuglink : NULL;
    if (link && strchr(link, '/'))
        link = NULL; /* a bare file name only */
    if (link) {
        if (strcmp(link, slash + 1) != 0) /* not the file itself */
            found = try_fmt(want, want_len, out, buf, "%.*s/%s", dir_len, path, link);
        if (!found)
            found = try_fmt(want, want_len, out, buf, "%.*s/.debug/%s", dir_len, path, link);
        for (size_t i = 0; i < nd && !found; i++)
            found = try_fmt(want, want_len, out, buf, "%s%.*s/%s", dirs[i], dir_len, path, link);
    }
    for (size_t i = 0; i < nd && !found; i++) {
        found = try_fmt(want, want_len, out, buf, "%s%s.debug", dirs[i], path);
        if (!found)
            found = try_fmt(want, want_len, out, buf, "%s%s", dirs[i], path);
    }
    return found;
}
