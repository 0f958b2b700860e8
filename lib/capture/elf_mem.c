/*
 * Reading a loaded ELF image's program headers and notes from memory (see
 * elf_mem.h). Each field is copied out with memcpy after its bytes were
 * checked, so neither alignment nor a damaged header can fault; notes go
 * to lib/image's reader once their segment was checked whole.
 */
#include "capture/elf_mem.h"

#include <btpack/imagemap.h>

#include <elf.h>
#include <link.h>
#include <string.h>
#include <sys/auxv.h>

#if defined(__x86_64__)
#define HOST_MACHINE EM_X86_64
#elif defined(__i386__)
#define HOST_MACHINE EM_386
#elif defined(__aarch64__)
#define HOST_MACHINE EM_AARCH64
#elif defined(__arm__)
#define HOST_MACHINE EM_ARM
#elif defined(__riscv)
#define HOST_MACHINE EM_RISCV
#endif

#if UINTPTR_MAX > 0xffffffffu
#define HOST_CLASS ELFCLASS64
#else
#define HOST_CLASS ELFCLASS32
#endif

/* More program headers than any real image has: a bound on the work a
 * damaged header can ask for. */
#define MAX_PHNUM 1024

size_t btp_elf_page_size(void)
{
    static size_t page;
    if (page == 0) {
        unsigned long p = getauxval(AT_PAGESZ);
        /* A power of two, or the common default. */
        page = p >= 1024 && (p & (p - 1)) == 0 ? (size_t)p : 4096;
    }
    return page;
}

static int get(btp_mem_check ok, const void *ctx, uintptr_t addr, void *dst, size_t len)
{
    if (addr + len < addr)
        return 0;
    if (ok && !ok(ctx, addr, len))
        return 0;
    memcpy(dst, (const void *)addr, len);
    return 1;
}

/* The GNU build ID in the PT_NOTE segment [p, p + len), read by
 * lib/image's note reader once the whole segment is known readable. */
static void find_build_id(btp_elf_mem *e, uintptr_t p, uintptr_t len, btp_mem_check ok,
                          const void *ctx)
{
    const unsigned char *id;
    size_t n;
    if (len == 0 || len > 0x10000 || (ok && !ok(ctx, p, len)))
        return;
    if (btp_elf_notes_build_id((const void *)p, len, 0, &id, &n) == BTP_OK && n > 0 &&
        n <= BTP_ELF_BUILD_ID_MAX) {
        memcpy(e->build_id, id, n);
        e->build_id_len = n;
    }
}

int btp_elf_mem_from_phdrs(btp_elf_mem *e, uintptr_t bias, uintptr_t phdr, size_t phnum,
                           btp_mem_check ok, const void *ctx)
{
    memset(e, 0, sizeof *e);
    if (phnum > MAX_PHNUM)
        return 0;
    const uintptr_t page = btp_elf_page_size();
    int have_load = 0;
    e->bias = bias;
    for (size_t i = 0; i < phnum; i++) {
        ElfW(Phdr) ph;
        if (!get(ok, ctx, phdr + i * sizeof ph, &ph, sizeof ph))
            return 0;
        uintptr_t va = bias + (uintptr_t)ph.p_vaddr;
        uintptr_t sz = (uintptr_t)ph.p_memsz;
        if (va + sz < va)
            return 0;
        if (ph.p_type == PT_LOAD) {
            uintptr_t lo = va & ~(page - 1);
            uintptr_t hi = (va + sz + page - 1) & ~(page - 1);
            if (hi < lo)
                return 0;
            if (!have_load) {
                /* Offset 0 lies p_offset bytes before the segment's start. */
                e->base = (va - (uintptr_t)ph.p_offset) & ~(page - 1);
                have_load = 1;
            }
            if (ph.p_flags & PF_X) {
                if (e->end_of_text == 0 || lo < e->text_lo)
                    e->text_lo = lo;
                if (hi > e->end_of_text)
                    e->end_of_text = hi;
            }
            if (e->n_segs < BTP_ELF_MAX_SEGS) {
                e->seg_lo[e->n_segs] = lo;
                e->seg_hi[e->n_segs] = hi;
                e->n_segs++;
            }
        } else if (ph.p_type == PT_GNU_EH_FRAME) {
            e->eh_hdr = va;
            e->eh_hdr_len = sz;
        } else if (ph.p_type == PT_NOTE && e->build_id_len == 0) {
            find_build_id(e, va, sz, ok, ctx);
        }
    }
    return have_load;
}

int btp_elf_mem_from_header(btp_elf_mem *e, uintptr_t base, btp_mem_check ok, const void *ctx)
{
#ifdef HOST_MACHINE
    ElfW(Ehdr) eh;
    if (!get(ok, ctx, base, &eh, sizeof eh))
        return 0;
    if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != HOST_CLASS ||
        eh.e_machine != HOST_MACHINE || eh.e_phentsize != sizeof(ElfW(Phdr)) ||
        eh.e_phnum == 0 || eh.e_phnum > MAX_PHNUM || eh.e_phoff == 0)
        return 0;
    uintptr_t phdr = base + (uintptr_t)eh.e_phoff;
    if (phdr < base)
        return 0;
    /* The first PT_LOAD decides the bias: offset 0 is mapped at base. */
    for (size_t i = 0; i < eh.e_phnum; i++) {
        ElfW(Phdr) ph;
        if (!get(ok, ctx, phdr + i * sizeof ph, &ph, sizeof ph))
            return 0;
        if (ph.p_type != PT_LOAD)
            continue;
        uintptr_t page = btp_elf_page_size();
        uintptr_t first = ((uintptr_t)ph.p_vaddr - (uintptr_t)ph.p_offset) & ~(page - 1);
        return btp_elf_mem_from_phdrs(e, base - first, phdr, eh.e_phnum, ok, ctx) &&
               e->base == base;
    }
    return 0;
#else
    (void)e;
    (void)base;
    (void)ok;
    (void)ctx;
    return 0;
#endif
}
