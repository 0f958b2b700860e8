/*
 * Reading an image's headers from memory (lib/image/elf_mem.c) when the
 * headers are hostile: a copy of this program's first pages (ELF header,
 * program headers, notes) between inaccessible pages, with random bytes
 * changed, read through a check that allows only the copy. Every read must
 * stay inside it (a stray read hits a fence), and whatever is reported must
 * be within the copy's bounds.
 *
 * usage: test_elf_mem_hostile [ITERATIONS] [SEED]
 */
#include "../check.h"
#include "../test_rng.h"

#include "capture/elf_mem.h"

#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static unsigned char *copy;
static size_t copy_size;

static int in_copy(const void *ctx, uintptr_t a, size_t n)
{
    (void)ctx;
    uintptr_t lo = (uintptr_t)copy, hi = lo + copy_size;
    return a >= lo && a <= hi && n <= hi - a;
}

static uintptr_t first_base;

static int on_object(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    (void)data;
    btp_elf_mem e;
    if (btp_elf_mem_from_phdrs(&e, info->dlpi_addr, (uintptr_t)info->dlpi_phdr,
                               info->dlpi_phnum, NULL, NULL))
        first_base = e.base;
    return 1;
}

int main(int argc, char **argv)
{
    unsigned long iterations = argc > 1 ? strtoul(argv[1], NULL, 10) : 50000;
    uint64_t rng = argc > 2 ? strtoull(argv[2], NULL, 0) : 0xe1f;
    dl_iterate_phdr(on_object, NULL);
    CHECK(first_base != 0, "no image of our own");
    if (!first_base)
        return check_finish();
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    copy_size = page;
    unsigned char *m = mmap(NULL, copy_size + 2 * page, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(m != MAP_FAILED, "mmap");
    if (m == MAP_FAILED)
        return check_finish();
    mprotect(m, page, PROT_NONE);
    mprotect(m + page + copy_size, page, PROT_NONE);
    copy = m + page;
    unsigned char *pristine = malloc(copy_size);
    for (size_t i = 0; i < copy_size; i++) /* (the headers, not globals ASan knows) */
        pristine[i] = ((const volatile unsigned char *)first_base)[i];

    /* Unchanged, the copy reads like the image (its notes are in the first
     * page of an ordinary executable). */
    memcpy(copy, pristine, copy_size);
    btp_elf_mem e;
    int ok = btp_elf_mem_from_header(&e, (uintptr_t)copy, in_copy, NULL);
    CHECK(ok && e.base == (uintptr_t)copy && e.end_of_text > e.base, "pristine copy: %d", ok);

    unsigned long parsed = 0;
    for (unsigned long it = 0; it < iterations; it++) {
        memcpy(copy, pristine, copy_size);
        unsigned flips = 1 + (unsigned)(test_rng(&rng) % 16);
        for (unsigned k = 0; k < flips; k++) {
            /* Mostly the headers, where the offsets and counts are. */
            size_t at = test_rng(&rng) % 4 ? test_rng(&rng) % 512 : test_rng(&rng) % copy_size;
            copy[at] = (unsigned char)test_rng(&rng);
        }
        memset(&e, 0xa5, sizeof e);
        if (btp_elf_mem_from_header(&e, (uintptr_t)copy, in_copy, NULL)) {
            parsed++;
            CHECK(e.build_id_len <= BTP_ELF_BUILD_ID_MAX && e.n_segs <= BTP_ELF_MAX_SEGS &&
                      e.base == (uintptr_t)copy,
                  "iteration %lu: build ID %zu bytes, %u segments", it, e.build_id_len, e.n_segs);
        }
    }
    printf("%lu mutated headers, %lu still parsed\n", iterations, parsed);
    CHECK(parsed > 0 && parsed < iterations, "mutations changed nothing or everything");
    free(pristine);
    return check_finish();
}
