/*
 * What the crash handler knows about the process's memory: which ranges
 * may be read (stack-like anonymous memory apart from file-backed memory),
 * which are executable, and the loaded images with their unwind tables and
 * build IDs. Built at crash time from /proc/self/maps and the images' own
 * headers in memory (every read checked against the maps), ordered by an
 * image snapshot taken at install time; when /proc/self/maps cannot be read
 * (no /proc, no memory for the tables) it is that snapshot alone.
 * See spec/capture.md for the design and its safety argument.
 */
#ifndef BTPACK_CAPTURE_CRASH_VIEW_H
#define BTPACK_CAPTURE_CRASH_VIEW_H

#include "capture/cfi.h"
#include "capture/elf_mem.h"

#include <btpack/imagemap.h>

typedef struct btp_range {
    uintptr_t lo, hi;
} btp_range;

typedef struct btp_range_set {
    btp_range *r;
    size_t n, cap;
} btp_range_set;

typedef struct btp_crash_image {
    const char *path; /* NUL-terminated; NULL: none (the vDSO) */
    uintptr_t base, end_of_text;
    btp_elf_mem e;  /* from its headers in memory; e.base 0 when they could not be read */
    uint32_t order; /* load order: the snapshot's position, then address order */
} btp_crash_image;

typedef struct btp_crash_view {
    int from_maps;      /* readable memory from the maps (0: the snapshot's segments) */
    int images_by_address; /* img sorted by base, from the maps (0: the snapshot's) */
    btp_range_set anon; /* readable anonymous memory: stacks, heap */
    btp_range_set file; /* readable file-backed memory and the vDSO */
    btp_range_set exec; /* executable memory */
    btp_crash_image *img;
    size_t n_img, cap_img;
    uint16_t *order; /* img indices in load order (NULL: img is in load order) */
    btp_image *parsed; /* lib/image's parse of the maps text */
    char *paths;
    size_t paths_cap;
    /* The text of /proc/self/maps as read (complete when maps_whole). */
    char *maps_text;
    size_t maps_len, maps_cap;
    int maps_whole;
    char *line; /* room for one image line (NULL without scratch memory) */
    size_t line_cap;
    btp_cfi_self self; /* stacks, for the snapshot-only view */
    btp_cfi_env self_env;
} btp_crash_view;

/* Bytes of scratch memory btp_crash_view_build() can use to the full. */
#define BTP_CRASH_SCRATCH_BYTES (2u << 20)

/* Take the image snapshot the handler orders images by and falls back on
 * (dl_iterate_phdr: not async-signal-safe; call at install time). Returns
 * 0 when no memory could be had for it. */
int btp_crash_snapshot_take(void);

/* Build the view into `scratch` (NULL or too small: the snapshot only).
 * Async-signal-safe. The images are those lib/image's parser finds in the
 * maps text (files mapped executable, and the vDSO); their headers are read
 * only where the maps show readable file memory, each image's under the
 * fault guard, since a file truncated under its mapping still raises
 * SIGBUS (that image then has no build ID and no unwind table). */
void btp_crash_view_build(btp_crash_view *v, void *scratch, size_t size);

/* The cfi walker's environment over the view. */
void btp_crash_view_env(btp_crash_view *v, btp_cfi_env *env);

/* The i-th image in load order (i < v->n_img), as an image-map entry
 * pointing into the view. */
btp_image btp_crash_view_image(const btp_crash_view *v, size_t i);

#endif
