/*
 * Image maps: which executable and shared libraries a process had loaded,
 * and where. One model for everything in btpack that needs it: crash
 * records, trace logs, Swift's compact image map format (CIF) and the
 * symbolizer all read and write a btp_image_map.
 *
 * An image is one loaded file (or a file-less object such as the vDSO):
 *
 *   name         its short name ("libc.so.6"); NULL means "the last
 *                component of path" (what Swift's CIF decoder derives).
 *   path         the file's path as the process saw it; NULL or "" when
 *                unknown.
 *   build_id     the ELF NT_GNU_BUILD_ID note's bytes (or a Mach-O UUID,
 *                PE GUID+age); build_id_len 0 means none. Empty and absent
 *                are the same thing (as on the CIF wire).
 *   base         the address the image's first byte (file offset 0) is
 *                mapped at: the start of its offset-0 mapping in
 *                /proc/PID/maps, which Swift also calls the base address.
 *                For an ELF file, a file virtual address V is at run time
 *                V - first_load_vaddr + base, where first_load_vaddr is the
 *                page-aligned p_vaddr of its first PT_LOAD (0 for PIE
 *                executables and libraries, 0x400000-like for fixed-address
 *                executables).
 *   end_of_text  one past the last byte of the image's executable text
 *                (the end of its last executable mapping); addresses in
 *                [base, end_of_text) belong to the image.
 *
 * The map carries the word size of the process (16, 32 or 64; every address
 * is reduced to it) and an optional platform string ("Linux (Debian
 * GNU/Linux 12 (bookworm))", as Swift writes it in CIF).
 *
 * Ownership: a btp_image_map only points. Whoever fills one (a decoder, a
 * parser, a capture) stores the images and their strings and build IDs in
 * memory the caller provides, and says so in its contract; the map is valid
 * as long as that memory is.
 */
#ifndef BTPACK_IMAGEMAP_H
#define BTPACK_IMAGEMAP_H

#include <btpack/btpack.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct btp_image {
    const char *name;             /* NULL: derived from path */
    const char *path;             /* NULL or "": unknown */
    const unsigned char *build_id; /* build_id_len bytes; NULL when none */
    size_t build_id_len;          /* 0: no build ID */
    uint64_t base;                /* where file offset 0 is mapped */
    uint64_t end_of_text;         /* one past the end of the executable text */
} btp_image;

typedef struct btp_image_map {
    unsigned word_bits;        /* 16, 32 or 64 */
    const char *platform;      /* NULL: none */
    const btp_image *images;   /* n_images entries (any order; usually by base) */
    size_t n_images;
} btp_image_map;

#ifdef __cplusplus
}
#endif

#endif
