/* What the symbolizer needs to know of an ELF file on disk: where its
 * addresses start, its build ID, whether it has DWARF, its debug link, and
 * the function symbols of .symtab/.dynsym with their sizes. The file is
 * mapped read-only and every offset and size in it is checked before use
 * (a debug directory may hold anything). */
#ifndef BTPACK_TOOLS_SYMBOLIZE_ELF_H
#define BTPACK_TOOLS_SYMBOLIZE_ELF_H

#include <stddef.h>
#include <stdint.h>

typedef struct elf_sym {
    uint64_t value, size;
    const char *name; /* into the mapped file */
} elf_sym;

typedef struct elf_file {
    const unsigned char *data;
    size_t len;
    int is64, big_endian;
    unsigned type;           /* e_type: 2 ET_EXEC, 3 ET_DYN */
    unsigned machine;        /* e_machine */
    uint64_t link_base;      /* virtual address of file offset 0 (first PT_LOAD) */
    int has_load;
    const unsigned char *build_id;
    size_t build_id_len;
    int has_dwarf;           /* a .debug_info with contents */
    int has_symtab;          /* a .symtab (all functions, static ones too) */
    int has_dynsym;
    const char *debuglink;   /* .gnu_debuglink file name (NUL-checked), or NULL */
    elf_sym *syms;           /* FUNC symbols with a size, sorted by value (elf_symbols) */
    size_t n_syms;
    int syms_loaded;
    uint64_t dev, ino;       /* st_dev and st_ino of the file opened */
} elf_file;

/* Open and inspect path. Returns 0, or -1 with a short reason in
 * why[0..why_len) ("No such file or directory", "not an ELF file",
 * "truncated ELF headers", ...). */
int elf_open(elf_file *f, const char *path, char *why, size_t why_len);
void elf_close(elf_file *f);

/* The function symbol whose [value, value + size) holds vaddr, from
 * .symtab (or .dynsym when there is no .symtab), or NULL. Symbols without
 * a size are never used: a nearest-preceding-symbol guess names the wrong
 * function whenever the one that holds the address is not in the table
 * (static functions of a stripped library). */
const elf_sym *elf_symbol_at(elf_file *f, uint64_t vaddr);

/* Lower-case hex of a build ID into out (room for 2 * len + 1). */
void build_id_hex(const unsigned char *id, size_t len, char *out);

#endif
