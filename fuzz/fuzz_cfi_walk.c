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
 *               the text); bit 1: registers are raw values
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
 *  - the walk ends, with BTP_OK and between 1 and 64 frames (the
 *    collector's capacity), touching nothing outside the two buffers;
 *  - with a layout cache, empty and then filled by the first walk, the
 *    walk gives the same frames as without one (cached layouts are applied
 *    load for load as the full step applies the row).
 */
#include "fuzz.h"

#include "capture/cfi.h"
#include "capture/cfi_cache.h"

#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define STACK_BYTES (16 * 1024)
#define CAP 64
#define MAX_CHANGES 64

typedef struct fenced {
    uint8_t *p; /* size bytes between two inaccessible pages */
    size_t size;
} fenced;

static fenced fence(size_t size)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size = (size + page - 1) / page * page;
    uint8_t *m = mmap(NULL, size + 2 * page, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    FUZZ_CHECK(m != MAP_FAILED, "mmap %zu", size);
    FUZZ_CHECK(mprotect(m, page, PROT_NONE) == 0 && mprotect(m + page + size, page, PROT_NONE) == 0,
               "mprotect");
    return (fenced){m + page, size};
}

/* This program's image, and its copy. */
static uintptr_t span_lo, span_hi, text_lo, text_hi, eh_hdr;
static fenced image, stack;
static uint8_t *pristine;
static uintptr_t delta; /* copy = original + delta */
static size_t tables_at; /* .eh_frame_hdr's offset in the copy: changes go after it */

static int on_object(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    (void)data;
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = (info->dlpi_addr + ph->p_vaddr) & ~(page - 1);
        uintptr_t hi = (info->dlpi_addr + ph->p_vaddr + ph->p_memsz + page - 1) & ~(page - 1);
        if (ph->p_type == PT_LOAD) {
            if (!span_lo || lo < span_lo)
                span_lo = lo;
            if (hi > span_hi)
                span_hi = hi;
            if ((ph->p_flags & PF_X) && hi - lo > text_hi - text_lo) {
                text_lo = lo;
                text_hi = hi;
            }
        } else if (ph->p_type == PT_GNU_EH_FRAME) {
            eh_hdr = info->dlpi_addr + ph->p_vaddr;
        }
    }
    return 1; /* the first object: this program */
}

/* Memory the sanitizers know as globals with redzones between them. */
#if defined(__clang__) || defined(__GNUC__)
__attribute__((no_sanitize_address))
#endif
static void raw_copy(uint8_t *to, uintptr_t from, size_t n)
{
    for (size_t i = 0; i < n; i++)
        to[i] = *(const volatile uint8_t *)(from + i);
}

static void setup(void)
{
    dl_iterate_phdr(on_object, NULL);
    FUZZ_CHECK(span_lo && text_lo && eh_hdr, "no image of our own");
    image = fence(span_hi - span_lo);
    stack = fence(STACK_BYTES);
    delta = (uintptr_t)image.p - span_lo;
    tables_at = eh_hdr - span_lo;
    /* The readable parts of the span, at the same offsets. */
    FILE *f = fopen("/proc/self/maps", "r");
    char line[4096];
    while (f && fgets(line, sizeof line, f)) {
        unsigned long long lo, hi;
        char perms[8];
        if (sscanf(line, "%llx-%llx %7s", &lo, &hi, perms) != 3 || perms[0] != 'r' ||
            lo < span_lo || hi > span_hi)
            continue;
        raw_copy(image.p + (lo - span_lo), (uintptr_t)lo, (size_t)(hi - lo));
    }
    if (f)
        fclose(f);
    pristine = malloc(image.size);
    FUZZ_CHECK(pristine != NULL, "out of memory");
    memcpy(pristine, image.p, image.size);
}

static int fake_find(void *ctx, uintptr_t pc, btp_cfi_image *out)
{
    (void)ctx;
    uintptr_t lo = (uintptr_t)image.p;
    if (pc < lo || pc >= lo + image.size)
        return 0;
    memset(out, 0, sizeof *out);
    out->eh_hdr = eh_hdr + delta;
    out->lo = lo;
    out->hi = lo + image.size;
    out->text_lo = text_lo + delta;
    out->text_hi = text_hi + delta;
    out->id = 1;
    return 1;
}

static int fake_stack_ok(void *ctx, uintptr_t a, size_t n)
{
    (void)ctx;
    uintptr_t lo = (uintptr_t)stack.p, hi = lo + stack.size;
    return a >= lo && a <= hi && n <= hi - a;
}

static int fake_region(void *ctx, uintptr_t a, btp_stack_bounds *out)
{
    (void)ctx;
    if (!fake_stack_ok(NULL, a, 1))
        return 0;
    out->lo = (uintptr_t)stack.p;
    out->hi = out->lo + stack.size;
    return 1;
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

static size_t walk(const btp_cfi_regs *regs, btp_cfi_cache *with, btp_frame *out)
{
    btp_cfi_env env = {.find = fake_find, .stack_ok = fake_stack_ok, .code_ok = NULL,
                       .region = with ? fake_region : NULL, .cache = with, .ctx = NULL};
    btp_collector c;
    btp_capture_options o = {0};
    btp_collector_init(&c, out, CAP, 0, &o);
    btp_status st = btp_cfi_walk(&c, regs, &env);
    size_t n = btp_collector_finish(&c);
    FUZZ_CHECK(st == BTP_OK, "status %s", btp_status_name(st));
    FUZZ_CHECK(n >= 1 && n <= CAP, "%zu frames", n);
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!image.p)
        setup();
    const uint8_t *p = data, *end = data + size;
    unsigned flags = (unsigned)rd(&p, end, 1);
    uint64_t pcv = rd(&p, end, 8);
    uintptr_t tsize = text_hi - text_lo;

    /* Changes to the unwind tables, undone at the end. */
    unsigned m = (unsigned)rd(&p, end, 1) % (MAX_CHANGES + 1);
    size_t at[MAX_CHANGES];
    size_t tables = image.size - tables_at;
    for (unsigned i = 0; i < m; i++) {
        at[i] = tables_at + (size_t)(rd(&p, end, 4) % tables);
        image.p[at[i]] = (uint8_t)rd(&p, end, 1);
    }

    btp_cfi_regs regs;
    memset(&regs, 0, sizeof regs);
    for (unsigned i = 0; i < BTP_CFI_NREG; i++) {
        unsigned v = (unsigned)rd(&p, end, 2);
        if (v & 0x8000)
            continue;
        regs.valid |= (uint64_t)1 << i;
        regs.r[i] = (flags & 2) ? (uintptr_t)v
                                : (uintptr_t)stack.p + (uintptr_t)(v & 0x3fff) * 8 % stack.size;
    }
    regs.pc = (flags & 1) ? (uintptr_t)pcv : text_lo + delta + (uintptr_t)(pcv % tsize);

    /* The stack. */
    memset(stack.p, 0, stack.size);
    for (size_t i = 0; i + 8 <= stack.size && p < end; i += 8) {
        uint64_t w = rd(&p, end, 8);
        switch (w >> 60) {
        case 1: w = text_lo + delta + (w & 0xffffffffu) % tsize; break;
        case 2: w = (uintptr_t)stack.p + (w & 0xffff) * 8 % stack.size; break;
        default: break;
        }
        memcpy(stack.p + i, &w, 8);
    }

    btp_frame plain[CAP], first[CAP], again[CAP];
    size_t n = walk(&regs, NULL, plain);
    btp_cfi_cache_clear(&cache);
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

    for (unsigned i = m; i-- > 0;)
        image.p[at[i]] = pristine[at[i]];
    return 0;
}
