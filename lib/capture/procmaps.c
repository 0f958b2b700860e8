/*
 * /proc/self/maps, one line at a time, with plain system calls (see
 * procmaps.h). A line is "lo-hi perms offset dev inode [path]"; a line
 * that does not parse is skipped, so a format change costs lines, never
 * a wrong range.
 */
#include "capture/procmaps.h"

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

/* A hex number ending at `stop`; advances *i past the stop character. */
static int hex_field(const char *s, size_t n, size_t *i, char stop, uint64_t *out)
{
    uint64_t v = 0;
    size_t digits = 0;
    for (; *i < n; (*i)++) {
        char ch = s[*i];
        unsigned d;
        if (ch >= '0' && ch <= '9')
            d = (unsigned)(ch - '0');
        else if (ch >= 'a' && ch <= 'f')
            d = (unsigned)(ch - 'a' + 10);
        else
            break;
        if (digits++ >= 16)
            return 0;
        v = v << 4 | d;
    }
    if (digits == 0 || *i >= n || s[*i] != stop)
        return 0;
    (*i)++;
    *out = v;
    return 1;
}

/* Skip a field of non-space characters and the spaces after it. */
static int skip_field(const char *s, size_t n, size_t *i)
{
    size_t start = *i;
    while (*i < n && s[*i] != ' ')
        (*i)++;
    if (*i == start)
        return 0;
    while (*i < n && s[*i] == ' ')
        (*i)++;
    return 1;
}

static int parse(btp_maps_reader *r, size_t n, int cut, btp_maps_line *out)
{
    const char *s = r->line;
    size_t i = 0;
    uint64_t lo, hi, off;
    if (!hex_field(s, n, &i, '-', &lo) || !hex_field(s, n, &i, ' ', &hi))
        return 0;
    if (lo > UINTPTR_MAX || hi > UINTPTR_MAX || hi <= lo || n - i < 5 || s[i + 4] != ' ')
        return 0;
    for (int k = 0; k < 4; k++)
        out->perms[k] = s[i + k];
    i += 5;
    if (!hex_field(s, n, &i, ' ', &off) || !skip_field(s, n, &i) || !skip_field(s, n, &i))
        return 0; /* offset, dev, inode */
    out->lo = (uintptr_t)lo;
    out->hi = (uintptr_t)hi;
    out->offset = off;
    out->path_cut = cut;
    r->line[n] = 0;
    out->path = cut ? "" : s + i;
    out->path_len = cut ? 0 : n - i;
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
