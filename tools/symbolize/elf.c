/* ELF inspection for the symbolizer (elf.h). */
#include "symbolize/elf.h"

#include <btpack/imagemap.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

enum { PT_LOAD_ = 1, PT_NOTE_ = 4, SHT_SYMTAB_ = 2, SHT_NOTE_ = 7, SHT_NOBITS_ = 8,
       SHT_DYNSYM_ = 11, STT_FUNC_ = 2, STT_GNU_IFUNC_ = 10 };

static uint64_t rd(const elf_file *f, uint64_t off, unsigned size)
{
    const unsigned char *p = f->data + off;
    uint64_t v = 0;
    for (unsigned i = 0; i < size; i++) {
        unsigned shift = f->big_endian ? (size - 1 - i) * 8 : i * 8;
        /* byte by byte: right on any host */
        v |= (uint64_t)p[i] << shift;
    }
    return v;
}

/* [off, off + n) inside the file */
static int in_file(const elf_file *f, uint64_t off, uint64_t n)
{
    return off <= f->len && n <= f->len - off;
}

/* Field readers by class: (32-bit offset, 64-bit offset, size 4 or 8). */
#define FIELD(f, base, o32, o64, wide) rd((f), (base) + ((f)->is64 ? (o64) : (o32)), \
                                          (f)->is64 && (wide) ? 8 : 4)

typedef struct section {
    uint32_t name, type;
    uint64_t offset, size, link, entsize;
} section;

static int get_section(const elf_file *f, uint64_t shoff, unsigned shentsize, unsigned i,
                       section *s)
{
    uint64_t b = shoff + (uint64_t)i * shentsize;
    if (!in_file(f, b, shentsize))
        return -1;
    s->name = (uint32_t)rd(f, b, 4);
    s->type = (uint32_t)rd(f, b + 4, 4);
    s->offset = FIELD(f, b, 16, 24, 1);
    s->size = FIELD(f, b, 20, 32, 1);
    s->link = rd(f, b + (f->is64 ? 40 : 24), 4);
    s->entsize = FIELD(f, b, 36, 56, 1);
    return 0;
}

/* NUL-terminated string at strtab offset `at` (inside the table), or NULL. */
static const char *str_at(const elf_file *f, const section *strtab, uint64_t at)
{
    if (!strtab || strtab->type == SHT_NOBITS_ || !in_file(f, strtab->offset, strtab->size) ||
        at >= strtab->size)
        return NULL;
    const char *s = (const char *)f->data + strtab->offset + at;
    return memchr(s, 0, strtab->size - at) ? s : NULL;
}

static void set_why(char *why, size_t why_len, const char *msg)
{
    snprintf(why, why_len, "%s", msg);
}

static void note_area(elf_file *f, uint64_t off, uint64_t size)
{
    if (f->build_id || !in_file(f, off, size))
        return;
    const unsigned char *id;
    size_t n;
    /* the library reads words in the host order unless told to swap */
    int host_le = 1;
    host_le = *(const unsigned char *)&host_le;
    int file_le = !f->big_endian;
    if (btp_elf_notes_build_id(f->data + off, size, host_le != file_le, &id, &n) == BTP_OK && id)
        f->build_id = id, f->build_id_len = n;
}

int elf_open(elf_file *f, const char *path, char *why, size_t why_len)
{
    memset(f, 0, sizeof *f);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        set_why(why, why_len, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size < 52) {
        set_why(why, why_len, fstat(fd, &st) == 0 && !S_ISREG(st.st_mode) ? "not a regular file"
                                                                            : "not an ELF file");
        close(fd);
        return -1;
    }
    void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (m == MAP_FAILED) {
        set_why(why, why_len, strerror(errno));
        return -1;
    }
    f->data = m;
    f->len = (size_t)st.st_size;
    f->dev = (uint64_t)st.st_dev;
    f->ino = (uint64_t)st.st_ino;
    const unsigned char *h = f->data;
    if (memcmp(h, "\177ELF", 4) != 0 || (h[4] != 1 && h[4] != 2) || (h[5] != 1 && h[5] != 2)) {
        set_why(why, why_len, "not an ELF file");
        elf_close(f);
        return -1;
    }
    f->is64 = h[4] == 2;
    f->big_endian = h[5] == 2;
    if (f->is64 && f->len < 64) {
        set_why(why, why_len, "truncated ELF header");
        elf_close(f);
        return -1;
    }
    f->type = (unsigned)rd(f, 16, 2);
    f->machine = (unsigned)rd(f, 18, 2);
    uint64_t phoff = FIELD(f, 0, 28, 32, 1), shoff = FIELD(f, 0, 32, 40, 1);
    unsigned phentsize = (unsigned)rd(f, f->is64 ? 54 : 42, 2);
    unsigned phnum = (unsigned)rd(f, f->is64 ? 56 : 44, 2);
    unsigned shentsize = (unsigned)rd(f, f->is64 ? 58 : 46, 2);
    unsigned shnum = (unsigned)rd(f, f->is64 ? 60 : 48, 2);
    unsigned shstrndx = (unsigned)rd(f, f->is64 ? 62 : 50, 2);
    unsigned need_ph = f->is64 ? 56 : 32, need_sh = f->is64 ? 64 : 40;

    /* program headers: where offset 0 is linked, and notes */
    if (phnum && (phentsize < need_ph || !in_file(f, phoff, (uint64_t)phnum * phentsize))) {
        set_why(why, why_len, "truncated ELF program headers");
        elf_close(f);
        return -1;
    }
    for (unsigned i = 0; i < phnum; i++) {
        uint64_t b = phoff + (uint64_t)i * phentsize;
        uint32_t type = (uint32_t)rd(f, b, 4);
        uint64_t off = FIELD(f, b, 4, 8, 1), vaddr = FIELD(f, b, 8, 16, 1);
        uint64_t filesz = FIELD(f, b, 16, 32, 1);
        if (type == PT_LOAD_ && !f->has_load) {
            f->has_load = 1;
            f->link_base = vaddr - off;
        }
        if (type == PT_NOTE_)
            note_area(f, off, filesz);
    }

    /* section headers: notes (debug files keep .note.gnu.build-id as a
     * section), DWARF, symbol tables, debug link */
    section shstr;
    if (shnum && shentsize >= need_sh && in_file(f, shoff, (uint64_t)shnum * shentsize) &&
        shstrndx < shnum && get_section(f, shoff, shentsize, shstrndx, &shstr) == 0) {
        for (unsigned i = 0; i < shnum; i++) {
            section s;
            if (get_section(f, shoff, shentsize, i, &s) < 0)
                break;
            const char *name = str_at(f, &shstr, s.name);
            if (s.type == SHT_NOTE_)
                note_area(f, s.offset, s.size);
            if (!name)
                continue;
            if (s.type == SHT_SYMTAB_ && s.size)
                f->has_symtab = 1;
            if (s.type == SHT_DYNSYM_ && s.size)
                f->has_dynsym = 1;
            if ((strcmp(name, ".debug_info") == 0 || strcmp(name, ".zdebug_info") == 0) &&
                s.type != SHT_NOBITS_ && s.size && in_file(f, s.offset, s.size))
                f->has_dwarf = 1;
            if (strcmp(name, ".gnu_debuglink") == 0 && s.type != SHT_NOBITS_ &&
                in_file(f, s.offset, s.size) && s.size > 4 &&
                memchr(f->data + s.offset, 0, s.size - 4))
                f->debuglink = (const char *)f->data + s.offset;
        }
    }
    return 0;
}

void elf_close(elf_file *f)
{
    if (f->data)
        munmap((void *)f->data, f->len);
    free(f->syms);
    memset(f, 0, sizeof *f);
}

static int cmp_sym(const void *a, const void *b)
{
    const elf_sym *x = a, *y = b;
    return x->value < y->value ? -1 : x->value > y->value;
}

static void load_symbols(elf_file *f)
{
    f->syms_loaded = 1;
    uint64_t shoff = FIELD(f, 0, 32, 40, 1);
    unsigned shentsize = (unsigned)rd(f, f->is64 ? 58 : 46, 2);
    unsigned shnum = (unsigned)rd(f, f->is64 ? 60 : 48, 2);
    unsigned want = f->has_symtab ? SHT_SYMTAB_ : SHT_DYNSYM_;
    unsigned symsize = f->is64 ? 24 : 16;
    if (shentsize < (f->is64 ? 64u : 40u) || !in_file(f, shoff, (uint64_t)shnum * shentsize))
        return;
    for (unsigned i = 0; i < shnum; i++) {
        section s, strtab;
        if (get_section(f, shoff, shentsize, i, &s) < 0 || s.type != want ||
            !in_file(f, s.offset, s.size) || s.link >= shnum ||
            get_section(f, shoff, shentsize, (unsigned)s.link, &strtab) < 0)
            continue;
        size_t n = (size_t)(s.size / symsize);
        elf_sym *grown = realloc(f->syms, (f->n_syms + n + 1) * sizeof *grown);
        if (!grown)
            return;
        f->syms = grown;
        for (size_t k = 0; k < n; k++) {
            uint64_t b = s.offset + k * symsize;
            uint32_t name = (uint32_t)rd(f, b, 4);
            unsigned info = f->data[b + (f->is64 ? 4 : 12)];
            uint64_t value = f->is64 ? rd(f, b + 8, 8) : rd(f, b + 4, 4);
            uint64_t size = f->is64 ? rd(f, b + 16, 8) : rd(f, b + 8, 4);
            unsigned shndx = (unsigned)rd(f, b + (f->is64 ? 6 : 14), 2);
            unsigned type = info & 15;
            const char *nm = str_at(f, &strtab, name);
            if ((type != STT_FUNC_ && type != STT_GNU_IFUNC_) || !size || !shndx || !nm || !*nm)
                continue;
            f->syms[f->n_syms++] = (elf_sym){value, size, nm};
        }
    }
    if (f->n_syms)
        qsort(f->syms, f->n_syms, sizeof *f->syms, cmp_sym);
}

const elf_sym *elf_symbol_at(elf_file *f, uint64_t vaddr)
{
    if (!f->syms_loaded)
        load_symbols(f);
    /* last symbol starting at or below vaddr; then look back over
     * neighbours that start lower but may be larger (nested, aliases) */
    size_t lo = 0, hi = f->n_syms;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (f->syms[mid].value <= vaddr)
            lo = mid + 1;
        else
            hi = mid;
    }
    const elf_sym *best = NULL;
    for (size_t k = lo, steps = 0; k-- > 0 && steps < 64; steps++) {
        const elf_sym *s = &f->syms[k];
        if (vaddr - s->value < s->size && (!best || s->size < best->size))
            best = s;
    }
    return best;
}

void build_id_hex(const unsigned char *id, size_t len, char *out)
{
    static const char d[] = "0123456789abcdef";
    for (size_t i = 0; i < len; i++) {
        out[2 * i] = d[id[i] >> 4];
        out[2 * i + 1] = d[id[i] & 15];
    }
    out[2 * len] = 0;
}
