/*
 * The cfi walker fed hostile input: a copy of this program's own image
 * (text, .eh_frame_hdr, .eh_frame) and a stack, each fenced by inaccessible
 * pages, with bytes of the unwind tables and of the stack changed at random,
 * and random registers. Whatever the bytes, every walk must end, stay
 * within the collector's capacity, and read nothing outside the memory the
 * environment vouches for: a stray read hits a fence and fails the test.
 *
 * usage: test_cfi_hostile [ITERATIONS] [SEED]
 */
#include "../check.h"
#include "../test_rng.h"

#include "capture/cfi.h"

#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

typedef struct fenced {
    unsigned char *p; /* size bytes between two inaccessible pages */
    size_t size;
} fenced;

static fenced fence(size_t size)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size = (size + page - 1) / page * page;
    unsigned char *m = mmap(NULL, size + 2 * page, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        abort();
    mprotect(m, page, PROT_NONE);
    mprotect(m + page + size, page, PROT_NONE);
    return (fenced){m + page, size};
}

/* This program's image: its span, its text and its unwind tables. */
static uintptr_t span_lo, span_hi, text_lo, text_hi, eh_hdr, tables_lo, tables_hi;

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
            if (ph->p_flags & PF_X) {
                text_lo = lo;
                text_hi = hi;
            }
        } else if (ph->p_type == PT_GNU_EH_FRAME) {
            eh_hdr = info->dlpi_addr + ph->p_vaddr;
        }
    }
    return 1; /* the first object: this program */
}

static fenced image, stack;
static uintptr_t delta; /* copy = original + delta */

static int fake_find(void *ctx, uintptr_t pc, btp_cfi_image *out)
{
    (void)ctx;
    if (pc < span_lo + delta || pc >= span_hi + delta)
        return 0;
    memset(out, 0, sizeof *out);
    out->eh_hdr = eh_hdr + delta;
    out->lo = (uintptr_t)image.p;
    out->hi = (uintptr_t)image.p + image.size;
    out->text_lo = text_lo + delta;
    out->text_hi = text_hi + delta;
    return 1;
}

static int fake_stack_ok(void *ctx, uintptr_t a, size_t n)
{
    (void)ctx;
    uintptr_t lo = (uintptr_t)stack.p, hi = lo + stack.size;
    return a >= lo && a <= hi && n <= hi - a;
}

/* A copy of memory ASan knows as globals with redzones between them. */
__attribute__((no_sanitize_address)) static void raw_copy(unsigned char *to, uintptr_t from,
                                                          size_t n)
{
    for (size_t i = 0; i < n; i++)
        to[i] = *(const volatile unsigned char *)(from + i);
}

/* Copy the program's readable segments to the same offsets in the fence. */
static void copy_image(void)
{
    memset(image.p, 0, image.size);
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
}

int main(int argc, char **argv)
{
    unsigned long iterations = argc > 1 ? strtoul(argv[1], NULL, 10) : 20000;
    uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 0) : 0x5eed;
    dl_iterate_phdr(on_object, NULL);
    CHECK(span_lo && text_lo && eh_hdr, "no image of our own");
    if (!span_lo || !eh_hdr)
        return check_finish();
    image = fence(span_hi - span_lo);
    stack = fence(16 * 1024);
    delta = (uintptr_t)image.p - span_lo;
    copy_image();
    /* The tables: from .eh_frame_hdr to the end of its segment. */
    tables_lo = eh_hdr - span_lo;
    tables_hi = image.size;
    unsigned char *pristine = malloc(image.size);
    memcpy(pristine, image.p, image.size);

    btp_cfi_env env = {.find = fake_find, .stack_ok = fake_stack_ok, .code_ok = NULL, .ctx = NULL};
    uint64_t rng = seed ? seed : 1;
    btp_frame frames[64];
    unsigned long deep = 0, total = 0;
    for (unsigned long it = 0; it < iterations; it++) {
        /* A few bytes of the tables changed (none on a quarter of the runs). */
        memcpy(image.p + tables_lo, pristine + tables_lo, tables_hi - tables_lo);
        unsigned flips = (unsigned)(test_rng(&rng) % 4 ? test_rng(&rng) % 8 : 0);
        for (unsigned k = 0; k < flips; k++)
            image.p[tables_lo + test_rng(&rng) % (tables_hi - tables_lo)] =
                (unsigned char)test_rng(&rng);
        /* A stack of random words, some of them return addresses into our
         * text, some pointers into the stack itself. */
        uintptr_t *w = (uintptr_t *)(void *)stack.p;
        size_t nw = stack.size / sizeof *w;
        for (size_t i = 0; i < nw; i++) {
            uint64_t r = test_rng(&rng);
            switch (r % 3) {
            case 0: w[i] = text_lo + delta + (uintptr_t)(r >> 8) % (text_hi - text_lo); break;
            case 1: w[i] = (uintptr_t)stack.p + (uintptr_t)(r >> 8) % stack.size; break;
            default: w[i] = (uintptr_t)r; break;
            }
        }
        btp_cfi_regs regs;
        memset(&regs, 0, sizeof regs);
        for (unsigned i = 0; i < BTP_CFI_NREG; i++)
            regs.r[i] = (uintptr_t)stack.p + (uintptr_t)test_rng(&rng) % stack.size;
        regs.r[BTP_CFI_SP] = (uintptr_t)stack.p + (uintptr_t)test_rng(&rng) % (stack.size / 2);
        regs.valid = ~(uint64_t)0 >> (64 - BTP_CFI_NREG);
        regs.pc = test_rng(&rng) % 8 == 0 ? (uintptr_t)test_rng(&rng)
                                               : text_lo + delta +
                                                     (uintptr_t)test_rng(&rng) %
                                                         (text_hi - text_lo);
        btp_collector c;
        btp_capture_options o = {0};
        btp_collector_init(&c, frames, 64, 0, &o);
        btp_status st = btp_cfi_walk(&c, &regs, &env);
        size_t n = btp_collector_finish(&c);
        CHECK(st == BTP_OK && n >= 1 && n <= 64, "iteration %lu: %s, %zu frames", it,
              btp_status_name(st), n);
        deep += n > 2;
        total += n;
    }
    printf("%lu walks, %lu frames, %lu walks past two frames\n", iterations, total, deep);
    /* The hostile input must have let some walks get somewhere, or the
     * test would only ever exercise the first step. */
    CHECK(deep > iterations / 1000, "only %lu walks went past two frames", deep);
    free(pristine);
    return check_finish();
}
