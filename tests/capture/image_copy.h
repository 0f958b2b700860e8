/*
 * A copy of this program's own image (its text, .eh_frame_hdr and
 * .eh_frame, at the same offsets) and a stack, each between two
 * inaccessible pages, for walking the cfi walker over tables and stacks a
 * test or fuzzer may change: any read outside them faults at once. Shared
 * by test_cfi_hostile.c, test_cfi_cache.c and fuzz/fuzz_cfi_walk.c.
 */
#ifndef BTPACK_TESTS_CAPTURE_IMAGE_COPY_H
#define BTPACK_TESTS_CAPTURE_IMAGE_COPY_H

#include "capture/cfi.h"

#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

typedef struct fenced {
    uint8_t *p; /* size bytes between two inaccessible pages */
    size_t size;
} fenced;

/* size bytes (rounded up to pages) between two inaccessible pages; aborts
 * when there is no memory (nothing can go on without it). */
static inline fenced fenced_map(size_t size)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size = (size + page - 1) / page * page;
    uint8_t *m = mmap(NULL, size + 2 * page, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED || mprotect(m, page, PROT_NONE) != 0 ||
        mprotect(m + page + size, page, PROT_NONE) != 0)
        abort();
    return (fenced){m + page, size};
}

/* This program's image and its copy (copy = original + delta). */
typedef struct own_image {
    uintptr_t span_lo, span_hi; /* the loaded span, page-aligned */
    uintptr_t text_lo, text_hi; /* the largest executable segment */
    uintptr_t eh_hdr;           /* .eh_frame_hdr */
    fenced copy;
    uintptr_t delta;
} own_image;

static inline int own_image_segments(struct dl_phdr_info *info, size_t size, void *data)
{
    own_image *im = data;
    (void)size;
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = (info->dlpi_addr + ph->p_vaddr) & ~(page - 1);
        uintptr_t hi = (info->dlpi_addr + ph->p_vaddr + ph->p_memsz + page - 1) & ~(page - 1);
        if (ph->p_type == PT_LOAD) {
            if (!im->span_lo || lo < im->span_lo)
                im->span_lo = lo;
            if (hi > im->span_hi)
                im->span_hi = hi;
            if ((ph->p_flags & PF_X) && hi - lo > im->text_hi - im->text_lo) {
                im->text_lo = lo;
                im->text_hi = hi;
            }
        } else if (ph->p_type == PT_GNU_EH_FRAME) {
            im->eh_hdr = info->dlpi_addr + ph->p_vaddr;
        }
    }
    return 1; /* the first object: this program */
}

/* Memory the sanitizers know as globals with redzones between them. */
__attribute__((no_sanitize_address)) static inline void own_image_raw_copy(uint8_t *to,
                                                                           uintptr_t from,
                                                                           size_t n)
{
    for (size_t i = 0; i < n; i++)
        to[i] = *(const volatile uint8_t *)(from + i);
}

/* Find this program's image and copy its readable segments. 1 on success. */
static inline int own_image_copy(own_image *im)
{
    memset(im, 0, sizeof *im);
    dl_iterate_phdr(own_image_segments, im);
    if (!im->span_lo || !im->text_lo || !im->eh_hdr)
        return 0;
    im->copy = fenced_map(im->span_hi - im->span_lo);
    im->delta = (uintptr_t)im->copy.p - im->span_lo;
    FILE *f = fopen("/proc/self/maps", "r");
    char line[4096];
    while (f && fgets(line, sizeof line, f)) {
        unsigned long long lo, hi;
        char perms[8];
        if (sscanf(line, "%llx-%llx %7s", &lo, &hi, perms) != 3 || perms[0] != 'r' ||
            lo < im->span_lo || hi > im->span_hi)
            continue;
        own_image_raw_copy(im->copy.p + (lo - im->span_lo), (uintptr_t)lo, (size_t)(hi - lo));
    }
    if (f)
        fclose(f);
    return 1;
}

/* The copy as the walker's image when it holds pc (the whole copy: a cfi
 * environment with a layout cache must answer for its whole span). */
static inline int own_image_find(const own_image *im, uintptr_t pc, uintptr_t id,
                                 btp_cfi_image *out)
{
    uintptr_t lo = (uintptr_t)im->copy.p;
    if (pc < lo || pc >= lo + im->copy.size)
        return 0;
    memset(out, 0, sizeof *out);
    out->eh_hdr = im->eh_hdr + im->delta;
    out->lo = lo;
    out->hi = lo + im->copy.size;
    out->text_lo = im->text_lo + im->delta;
    out->text_hi = im->text_hi + im->delta;
    out->id = id;
    return 1;
}

/* [a, a + n) lies in f. */
static inline int fenced_holds(const fenced *f, uintptr_t a, size_t n)
{
    uintptr_t lo = (uintptr_t)f->p, hi = lo + f->size;
    return a >= lo && a <= hi && n <= hi - a;
}

/* A cfi environment over a copy of the image and a fenced stack: the walker
 * may read the copy's tables and code, and the stack; nothing else. */
typedef struct copy_env {
    const own_image *im;
    fenced stack;
    uintptr_t id; /* the image's loader record, as the walker's cache sees it */
} copy_env;

static inline int copy_find(void *ctx, uintptr_t pc, btp_cfi_image *out)
{
    const copy_env *ce = ctx;
    return own_image_find(ce->im, pc, ce->id, out);
}

static inline int copy_stack_ok(void *ctx, uintptr_t a, size_t n)
{
    const copy_env *ce = ctx;
    return fenced_holds(&ce->stack, a, n);
}

static inline int copy_region(void *ctx, uintptr_t a, btp_stack_bounds *out)
{
    const copy_env *ce = ctx;
    if (!fenced_holds(&ce->stack, a, 1))
        return 0;
    out->lo = (uintptr_t)ce->stack.p;
    out->hi = out->lo + ce->stack.size;
    return 1;
}

/* The environment over *ce; with `cache` (a layout cache) or without. */
static inline btp_cfi_env copy_env_of(copy_env *ce, struct btp_cfi_cache *cache)
{
    btp_cfi_env env = {.find = copy_find, .stack_ok = copy_stack_ok, .code_ok = NULL,
                       .region = cache ? copy_region : NULL, .cache = cache, .ctx = ce};
    return env;
}

#endif
