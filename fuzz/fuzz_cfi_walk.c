/*
 * Fuzz target: the cfi walker (lib/capture/cfi.c) over hostile unwind
 * tables and stacks, with and without its layout cache.
 *
 * The image is a copy of this program's own (text, .eh_frame_hdr,
 * .eh_frame), made once, between two inaccessible pages; the stack is 16
 * KiB between two inaccessible pages. The walker's environment vouches for
 * exactly those: any read elsewhere faults, in every build.
 *
 * Input:
 *  byte 0       bit 0: the pc is a raw 64-bit value (else an offset into
 *               the text); bit 1: registers are raw values; bit 2: see
 *               below; bits 3-4: frames the collector snips (0-3); bit
 *               5: the image is not one the environment keeps (the
 *               walks ask for it; a walk that starts there records no
 *               head); bit 6: the pc is a return address (the walks
 *               start as after a step: btp_cfi_walk_ret)
 *  bytes 1-8    the pc (an offset into the text is taken modulo its size)
 *  byte 9       m: changes to the unwind tables (at most 64)
 *  m x 5 bytes  offset (4 bytes, modulo the tables' size), new byte
 *  17 x 2 bytes the registers (bit 15 clear: known; the low 14 bits a word
 *               index into the stack, or with raw registers the value)
 *  the rest     the stack, 8-byte words; a word whose top 4 bits are 1
 *               becomes the text address at its low 32 bits (modulo the
 *               text's size), 2: the stack address of word (low 16 bits
 *               modulo the stack's words), else it stays as it is
 *
 * Properties:
 *  - the walk ends, with BTP_OK and between 1 (0 when frames are snipped)
 *    and 64 frames (the collector's capacity), touching nothing outside
 *    the two buffers;
 *  - with a layout cache, empty and then filled by the first walk, the
 *    walk gives the same frames as without one (cached layouts are applied
 *    load for load as the full step applies the row); the walk's head (its
 *    first steps, while the collector snips) is recorded in the memo by the
 *    first and taken from it by the second (without flag 32: with it the
 *    image is one the environment is asked for, and no head is kept).
 */
#include "fuzz.h"

#include "capture/image_copy.h"

#include "capture/cfi_cache.h"

#include <stdlib.h>
#include <string.h>

#define STACK_BYTES (16 * 1024)
#define CAP 64
#define MAX_CHANGES 64

/* This program's image and its copy, the stack, and the pristine tables. */
static own_image im;
static copy_env ce = {&im, {NULL, 0}, 1};
static uint8_t *pristine;
static size_t tables_at; /* .eh_frame_hdr's offset in the copy: changes go after it */

static void setup(void)
{
    FUZZ_CHECK(own_image_copy(&im), "no image of our own");
    ce.stack = fenced_map(STACK_BYTES);
    tables_at = im.eh_hdr - im.span_lo;
    pristine = malloc(im.copy.size);
    FUZZ_CHECK(pristine != NULL, "out of memory");
    memcpy(pristine, im.copy.p, im.copy.size);
}

static uint64_t rd(const uint8_t **p, const uint8_t *end, unsigned n)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < n && *p < end; i++)
        v |= (uint64_t)*(*p)++ << (8 * i);
    return v;
}

/* A private cache, so that inputs do not see each other's layouts. */
static _Alignas(64) btp_cfi_slot slots[256];
static btp_cfi_cache cache = {255, slots};

/* A private memo of the walk before (cfi.h), used with the cache. */
static btp_cfi_memo memo;

/* The copy as an image the environment keeps (with its tag), for the
 * walks with the cache; the frames the collector snips. */
static btp_cfi_image kept;
static unsigned n_kept, snip, ret;

static size_t walk(const btp_cfi_regs *regs, btp_cfi_cache *with, btp_frame *out)
{
    btp_cfi_env env = copy_env_of(&ce, with);
    const btp_cfi_image *keep[1] = {&kept};
    env.memo = with ? &memo : NULL;
    env.keep = keep;
    env.n_keep = with ? n_kept : 0;
    btp_collector c;
    btp_capture_options o = {0};
    o.snip_pre = snip;
    btp_collector_init(&c, out, CAP, 0, &o);
    btp_status st = ret ? btp_cfi_walk_ret(&c, regs, &env) : btp_cfi_walk(&c, regs, &env);
    size_t n = btp_collector_finish(&c);
    FUZZ_CHECK(st == BTP_OK, "status %s", btp_status_name(st));
    FUZZ_CHECK(n >= (snip ? 0u : 1u) && n <= CAP, "%zu frames", n); /* (all may be snipped) */
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!im.copy.p)
        setup();
    const uint8_t *p = data, *end = data + size;
    unsigned flags = (unsigned)rd(&p, end, 1);
    uint64_t pcv = rd(&p, end, 8);
    uintptr_t tsize = im.text_hi - im.text_lo, text = im.text_lo + im.delta;

    /* Changes to the unwind tables, undone at the end. */
    unsigned m = (unsigned)rd(&p, end, 1) % (MAX_CHANGES + 1);
    size_t at[MAX_CHANGES];
    size_t tables = im.copy.size - tables_at;
    for (unsigned i = 0; i < m; i++) {
        at[i] = tables_at + (size_t)(rd(&p, end, 4) % tables);
        im.copy.p[at[i]] = (uint8_t)rd(&p, end, 1);
    }

    btp_cfi_regs regs;
    memset(&regs, 0, sizeof regs);
    for (unsigned i = 0; i < BTP_CFI_NREG; i++) {
        unsigned v = (unsigned)rd(&p, end, 2);
        if (v & 0x8000)
            continue;
        regs.valid |= (uint64_t)1 << i;
        regs.r[i] = (flags & 2) ? (uintptr_t)v
                                : (uintptr_t)ce.stack.p + (uintptr_t)(v & 0x3fff) * 8 % ce.stack.size;
    }
    regs.pc = (flags & 1) ? (uintptr_t)pcv : text + (uintptr_t)(pcv % tsize);

    /* The stack. */
    memset(ce.stack.p, 0, ce.stack.size);
    for (size_t i = 0; i + 8 <= ce.stack.size && p < end; i += 8) {
        uint64_t w = rd(&p, end, 8);
        switch (w >> 60) {
        case 1: w = text + (w & 0xffffffffu) % tsize; break;
        case 2: w = (uintptr_t)ce.stack.p + (w & 0xffff) * 8 % ce.stack.size; break;
        default: break;
        }
        memcpy(ce.stack.p + i, &w, 8);
    }

    /* the tables changed: the kept image's tag again, no layout or head of
     * the tables before */
    n_kept = !(flags & 32) && copy_find(&ce, text, &kept) ? 1 : 0;
    kept.tag = btp_cfi_image_tag(&kept);
    snip = (flags >> 3) & 3;
    ret = (flags >> 6) & 1;

    btp_frame plain[CAP], first[CAP], again[CAP];
    size_t n = walk(&regs, NULL, plain);
    btp_cfi_cache_clear(&cache);
    memset(&memo, 0, sizeof memo); /* nothing of the input before (the head's partial-take counts too) */
    size_t n1 = walk(&regs, &cache, first);
    size_t n2 = walk(&regs, &cache, again);
    FUZZ_CHECK(n1 == n && n2 == n, "%zu frames, %zu with an empty cache, %zu with a full one", n,
               n1, n2);
    for (size_t i = 0; i < n; i++)
        FUZZ_CHECK(first[i].value == plain[i].value && first[i].kind == plain[i].kind &&
                       again[i].value == plain[i].value && again[i].kind == plain[i].kind,
                   "frame %zu: %#llx, %#llx with an empty cache, %#llx with a full one", i,
                   (unsigned long long)plain[i].value, (unsigned long long)first[i].value,
                   (unsigned long long)again[i].value);

    /* With flag 4, a stack word changed (the pc's high bits say which):
     * the walk with the memo of the one before still gives the frames of
     * the walk without. */
    if (flags & 4) {
        size_t w = (size_t)(pcv >> 32) * 8 % ce.stack.size;
        uint64_t v = text + (uintptr_t)(pcv >> 7) % tsize;
        memcpy(ce.stack.p + w, &v, 8);
        n = walk(&regs, NULL, plain);
        n1 = walk(&regs, &cache, first);
        FUZZ_CHECK(n1 == n, "%zu frames, %zu with the memo of the walk before a change", n, n1);
        for (size_t i = 0; i < n; i++)
            FUZZ_CHECK(first[i].value == plain[i].value && first[i].kind == plain[i].kind,
                       "frame %zu: %#llx, %#llx with the memo of the walk before a change", i,
                       (unsigned long long)plain[i].value, (unsigned long long)first[i].value);
    }

    for (unsigned i = m; i-- > 0;)
        im.copy.p[at[i]] = pristine[at[i]];
    return 0;
}
