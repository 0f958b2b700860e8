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

/*
 * The images loaded in this process now, in load order (the dynamic
 * loader's order: the executable first), each with its path, build ID,
 * base and end of text, read from its program headers and notes in memory
 * (dl_iterate_phdr). The executable's path is /proc/self/exe's target
 * (the loader gives none); other paths are the loader's (as the process
 * opened them, possibly through symlinks). The vDSO has no path and the
 * name the loader gives it ("linux-vdso.so.1"). A build ID longer than 64
 * bytes is left out (build_id_len 0).
 *
 * The map, its images and everything they point to live in the caller's
 * memory: images[0..max_images) and arena[0..arena_size) (paths, names and
 * build IDs, byte-aligned). *images_needed and *arena_needed (either may be
 * NULL) get what the whole map needs, so a caller can size its buffers and
 * call again (an image loaded in between can still make it too small).
 *
 * Returns BTP_OK; BTP_E_BUFFER_TOO_SMALL when not every image fit (the map
 * then holds the longest prefix, in load order, of images that fit whole);
 * BTP_E_INVALID_ARGUMENT (NULL map, or NULL buffers with a non-zero size).
 * Thread-safe; not async-signal-safe (dl_iterate_phdr takes the loader's
 * lock): the crash handler builds its own map at crash time from
 * /proc/self/maps (see capture.h).
 */
BTP_API btp_status btp_image_map_self(btp_image_map *map, btp_image *images, size_t max_images,
                                      void *arena, size_t arena_size, size_t *images_needed,
                                      size_t *arena_needed);

#ifdef __cplusplus
}
#endif

#endif
