/*
 * What a loaded ELF image says about itself, read from its program headers
 * in this process's memory: where it is, where its text ends, its build ID
 * and its unwind table (PT_GNU_EH_FRAME). Shared by btp_image_map_self()
 * (headers found by dl_iterate_phdr) and the crash handler (headers found
 * from /proc/self/maps at crash time).
 *
 * Every byte is read through a check the caller supplies (a range of
 * memory known to be readable), so a damaged or hostile image ends the
 * read instead of faulting; with no check the memory is trusted (the
 * dynamic loader's own description of a loaded object). No allocation, no
 * locks, no libc beyond memcpy: async-signal-safe.
 */
#ifndef BTPACK_CAPTURE_ELF_MEM_H
#define BTPACK_CAPTURE_ELF_MEM_H

#include <stddef.h>
#include <stdint.h>

#include <btpack/imagemap.h>

/* Longest build ID kept, the longest an image line carries; a longer note
 * is treated as no build ID (GNU build IDs are 16 or 20 bytes,
 * --build-id=0x... rarely more than 32). */
#define BTP_ELF_BUILD_ID_MAX BTP_IMAGE_MAX_BUILD_ID
/* PT_LOAD segments remembered per image (for checking reads when the
 * process maps cannot be read). */
#define BTP_ELF_MAX_SEGS 8

/* Non-zero if [addr, addr + len) may be read. */
typedef int (*btp_mem_check)(const void *ctx, uintptr_t addr, size_t len);

typedef struct btp_elf_mem {
    uintptr_t bias;        /* run-time address minus file virtual address */
    uintptr_t base;        /* where file offset 0 is mapped */
    uintptr_t text_lo;     /* start of the first executable segment */
    uintptr_t end_of_text; /* end of the last executable segment, page-rounded */
    uintptr_t eh_hdr;      /* .eh_frame_hdr (PT_GNU_EH_FRAME); 0: none */
    size_t eh_hdr_len;
    uintptr_t seg_lo[BTP_ELF_MAX_SEGS]; /* PT_LOAD spans, page-rounded */
    uintptr_t seg_hi[BTP_ELF_MAX_SEGS];
    unsigned n_segs;
    unsigned char build_id[BTP_ELF_BUILD_ID_MAX];
    size_t build_id_len; /* 0: none */
} btp_elf_mem;

/* The page size, read once from the auxiliary vector (call it once outside
 * a signal handler first; afterwards it is a plain load). */
size_t btp_elf_page_size(void);

/* Fill *e from the program headers at `phdr` (phnum entries) of an image
 * loaded with `bias`. Returns 1 when the image has a PT_LOAD segment, 0
 * otherwise (*e is then unspecified). */
int btp_elf_mem_from_phdrs(btp_elf_mem *e, uintptr_t bias, uintptr_t phdr, size_t phnum,
                           btp_mem_check ok, const void *ctx);

/* Fill *e from the ELF header mapped at `base` (the image's file offset 0).
 * Returns 1 for an ELF image of this process's class and machine whose first
 * PT_LOAD maps offset 0 at `base`, else 0. */
int btp_elf_mem_from_header(btp_elf_mem *e, uintptr_t base, btp_mem_check ok, const void *ctx);

#endif
