/*
 * /proc/self/maps read line by line with open/read/close only, into
 * fixed buffers: async-signal-safe. Used by the crash handler (memory that
 * may be read, images) and by btp_stack_bounds_of().
 */
#ifndef BTPACK_CAPTURE_PROCMAPS_H
#define BTPACK_CAPTURE_PROCMAPS_H

#include <stddef.h>
#include <stdint.h>

/* Longest line kept whole: a path of PATH_MAX bytes after the fields. */
#define BTP_MAPS_LINE_MAX (4096 + 128)

typedef struct btp_maps_line {
    uintptr_t lo, hi;
    uint64_t offset;
    char perms[4];    /* "r-xp" */
    const char *path; /* NUL-terminated; "" for anonymous memory */
    size_t path_len;
    int path_cut;     /* the line was too long: the path is unknown ("") */
} btp_maps_line;

typedef struct btp_maps_reader {
    int fd;
    size_t pos, len;
    char buf[1024];
    char line[BTP_MAPS_LINE_MAX];
    /* Optional: every byte read is also copied here while it fits (so the
     * text need not be read twice); copy_full once it did not. */
    char *copy;
    size_t copy_cap, copy_len;
    int copy_full;
} btp_maps_reader;

/* What a mapping is, from its path. */
enum {
    BTP_MAPS_OTHER, /* [vvar], [vsyscall], devices, anon_inode:...: never read */
    BTP_MAPS_ANON,  /* anonymous memory: stacks, heap, [anon:name] */
    BTP_MAPS_FILE,  /* a file (not a device) */
    BTP_MAPS_VDSO   /* the vDSO */
};
int btp_maps_kind(const btp_maps_line *m);

/* Open /proc/self/maps: 1, or 0 if it cannot be read. No copy is kept
 * unless the caller sets copy and copy_cap after opening. */
int btp_maps_open(btp_maps_reader *r);
/* The next well-formed line: 1, or 0 at the end or on a read error. */
int btp_maps_next(btp_maps_reader *r, btp_maps_line *out);
void btp_maps_close(btp_maps_reader *r);

#endif
