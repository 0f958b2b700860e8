/*
 * /proc/self/maps, one line at a time, with plain system calls (see
 * procmaps.h); each line parsed by lib/image's line parser. A line that
 * does not parse is skipped, so a format change costs lines, never a wrong
 * range.
 */
#include "capture/procmaps.h"

#include "image/image_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

int btp_maps_open(btp_maps_reader *r)
{
    do
        r->fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    while (r->fd < 0 && errno == EINTR);
    r->pos = r->len = 0;
    r->copy = NULL;
    r->copy_cap = r->copy_len = 0;
    r->copy_full = 0;
    return r->fd >= 0;
}

void btp_maps_close(btp_maps_reader *r)
{
    if (r->fd >= 0)
        close(r->fd);
    r->fd = -1;
}

/* The next byte, or -1 at the end. */
static int next_byte(btp_maps_reader *r)
{
    if (r->pos == r->len) {
        ssize_t got;
        do
            got = read(r->fd, r->buf, sizeof r->buf);
        while (got < 0 && errno == EINTR);
        if (got <= 0)
            return -1;
        r->pos = 0;
        r->len = (size_t)got;
        if (r->copy && !r->copy_full) {
            if ((size_t)got <= r->copy_cap - r->copy_len) {
                memcpy(r->copy + r->copy_len, r->buf, (size_t)got);
                r->copy_len += (size_t)got;
            } else {
                r->copy_full = 1;
            }
        }
    }
    return (unsigned char)r->buf[r->pos++];
}

static int parse(btp_maps_reader *r, size_t n, int cut, btp_maps_line *out)
{
    btp_procmaps_fields f;
    size_t at;
    if (btp_procmaps_line(r->line, 0, n, (unsigned)(8 * sizeof(uintptr_t)), &f, &at) != BTP_OK)
        return 0;
    out->lo = (uintptr_t)f.start;
    out->hi = (uintptr_t)f.end;
    out->offset = f.offset;
    memcpy(out->perms, f.perms, 4);
    out->path_cut = cut;
    r->line[f.path - r->line + f.path_len] = 0;
    out->path = cut ? "" : f.path;
    out->path_len = cut ? 0 : f.path_len;
    return 1;
}

int btp_maps_next(btp_maps_reader *r, btp_maps_line *out)
{
    if (r->fd < 0)
        return 0;
    for (;;) {
        size_t n = 0;
        int cut = 0, c;
        while ((c = next_byte(r)) >= 0 && c != '\n') {
            if (n < sizeof r->line - 1)
                r->line[n++] = (char)c;
            else
                cut = 1;
        }
        if (c < 0 && n == 0)
            return 0;
        if (parse(r, n, cut, out))
            return 1;
        if (c < 0)
            return 0;
    }
}

static int starts(const char *s, const char *prefix)
{
    while (*prefix)
        if (*s++ != *prefix++)
            return 0;
    return 1;
}

int btp_maps_kind(const btp_maps_line *m)
{
    const char *p = m->path;
    if (m->path_cut)
        return BTP_MAPS_FILE; /* only files have paths that long */
    if (!p[0] || starts(p, "[stack") || starts(p, "[heap]") || starts(p, "[anon:") ||
        starts(p, "[anon_shmem:"))
        return BTP_MAPS_ANON;
    if (starts(p, "[vdso]"))
        return BTP_MAPS_VDSO;
    if (p[0] == '/' && !starts(p, "/dev/"))
        return BTP_MAPS_FILE;
    return BTP_MAPS_OTHER;
}
