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
 *                are the same thing (as on the CIF wire). At most
 *                BTP_IMAGE_MAX_BUILD_ID bytes in a map btpack builds from
 *                text (image lines, crash logs); real ones have 16 or 20.
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

/* The longest build ID an image line carries, and the longest any reader of
 * textual image maps accepts (CIF allows more: see BTP_CIF_MAX_BUILD_ID). */
#define BTP_IMAGE_MAX_BUILD_ID 64

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

/* ------------------------------------------------------------------ */
/* Filling and querying image maps                                     */
/* ------------------------------------------------------------------ */

/*
 * Caller-provided storage for the parsers below: they append images to
 * images[0..max_images) and copy their paths and build IDs into
 * bytes[0..max_bytes). n_images / n_bytes say how much is in use; start
 * them at 0 (or keep appending to earlier content). The images point into
 * `bytes`, so both must outlive every map built from them.
 *
 * When either array is too small a parser keeps going without storing, so
 * that n_images / n_bytes end up as the sizes a retry needs, and returns
 * BTP_E_BUFFER_TOO_SMALL. What it appended is then unusable.
 */
typedef struct btp_image_buf {
    btp_image *images;
    size_t max_images, n_images;
    char *bytes;
    size_t max_bytes, n_bytes;
} btp_image_buf;

/*
 * Parse /proc/PID/maps text (text[0..len), lines of
 * `START-END PERMS OFFSET DEV INODE [PATH]`) into images appended to buf,
 * and point *map at all of buf's images (word size word_bits, no platform).
 *
 * One image per loaded file: a mapping at file offset 0 starts an image
 * (base = its start); later mappings of the same path at or above that base
 * join it, and end_of_text is the end of the last executable one (so
 * base < end_of_text for every image). A file whose offset-0
 * mapping is missing (a cut listing) gets base = START - OFFSET of its first
 * mapping. Files without an executable mapping (locale archives, caches,
 * fonts) are not images; neither are anonymous mappings and pseudo-paths,
 * except `[vdso]`, which becomes an image with no path and the name
 * "[vdso]". The path is kept as the kernel wrote it (" (deleted)" and
 * `\012` escapes included). No build IDs: the text has none.
 * A non-executable offset-0 mapping on the line right after an image's
 * executable mapping, of the same path, joins that image (a file smaller
 * than a page maps its data at offset 0 again) instead of starting one.
 *
 * Hostile input: every field is checked (hex of at most 16 digits that fits
 * word_bits, START < END, permissions `[r-][w-][xs-][ps]`, no NUL byte in
 * the path); the first bad
 * line stops the parse with BTP_E_MAPS_SYNTAX (or BTP_E_VALUE_TOO_WIDE) and
 * *error_offset (may be NULL) set to the byte offset of the bad field. A
 * last line without '\n' is parsed like the others; blank lines are
 * skipped. Work is linear in len (joining looks back at most 8 images);
 * nothing is allocated.
 *
 * Returns BTP_OK, BTP_E_MAPS_SYNTAX, BTP_E_VALUE_TOO_WIDE,
 * BTP_E_BUFFER_TOO_SMALL (see btp_image_buf) or BTP_E_INVALID_ARGUMENT
 * (NULL buf/map, text NULL with len > 0, bad word_bits).
 * Thread-safety: none needed beyond not sharing buf; freestanding (no libc).
 */
BTP_API btp_status btp_image_map_from_procmaps(const char *text, size_t len,
                                               unsigned word_bits, btp_image_buf *buf,
                                               btp_image_map *map, size_t *error_offset);

/*
 * The image whose [base, end_of_text) holds addr, or NULL. When images
 * overlap (only hostile or inconsistent maps do that) the one with the
 * highest base wins, then the first in array order: the innermost
 * candidate, which is what a loader that maps libraries into holes of
 * others would mean. Linear in map->n_images; map may be NULL (no image).
 */
BTP_API const btp_image *btp_image_map_find(const btp_image_map *map, uint64_t addr);

/*
 * One image as a crash record's `image` line, without the newline:
 *
 *   image 0x<base> 0x<end_of_text> <build ID in lower-case hex, or -> <path, or ->
 *
 * In the path `\` is written `\\`, a newline `\n`, other bytes < 0x20 and
 * 0x7f as `\xHH`; a path that is exactly "-" is written `\x2d` so that it
 * does not read back as "no path". The name is not written (readers derive
 * it from the path; a path-less image reads back with no name).
 * Writes at most cap bytes to out and sets *len (may be NULL) to the line's
 * full length. Returns BTP_OK, BTP_E_BUFFER_TOO_SMALL (nothing usable in
 * out; *len says what is needed) or BTP_E_INVALID_ARGUMENT.
 * Async-signal-safe and freestanding (no libc, no allocation): the crash
 * handler writes its image lines with it.
 */
BTP_API btp_status btp_image_line_format(const btp_image *image, char *out, size_t cap,
                                         size_t *len);

/*
 * Parse one `image` line (line[0..len), without its newline; a trailing
 * '\r' is ignored) as btp_image_line_format writes it and append the image
 * to buf (path unescaped, build ID as bytes). Unknown escapes, a NUL byte in
 * the path (written as an escape it is refused too: a path cannot hold one),
 * a build ID of odd length or longer than 64 bytes, hex fields longer than
 * 16 digits or too wide for word_bits, end_of_text < base, or a missing field:
 * BTP_E_IMAGE_SYNTAX (or BTP_E_VALUE_TOO_WIDE) with *error_offset at the
 * bad byte. Returns BTP_OK, those, BTP_E_BUFFER_TOO_SMALL (see
 * btp_image_buf) or BTP_E_INVALID_ARGUMENT. Freestanding.
 */
BTP_API btp_status btp_image_line_parse(const char *line, size_t len, unsigned word_bits,
                                        btp_image_buf *buf, size_t *error_offset);

/*
 * Find the GNU build ID (NT_GNU_BUILD_ID, owner "GNU") in the bytes of an
 * ELF note area (a PT_NOTE segment or SHT_NOTE section, notes[0..len), in
 * the host's byte order when swap is 0, the other when it is 1; 4-byte
 * aligned entries as on every Linux target). Sets *id / *id_len to the
 * descriptor inside notes, or NULL / 0 when the area holds no build ID.
 * A note whose sizes run past len: BTP_E_BAD_NOTE. Freestanding, reads
 * nothing outside notes[0..len).
 */
BTP_API btp_status btp_elf_notes_build_id(const void *notes, size_t len, int swap,
                                          const unsigned char **id, size_t *id_len);

/*
 * The images loaded in this process now, in load order (the dynamic
 * loader's order: the executable first), appended to buf as the parsers
 * above do (see btp_image_buf), each with its path, build ID, base and end
 * of text read from its program headers and notes in memory
 * (dl_iterate_phdr); *map points at all of buf's images, word size that of
 * a pointer. The executable's path is /proc/self/exe's target (the loader
 * gives none); other paths are the loader's (as the process opened them,
 * possibly through symlinks). The vDSO has no path and the name the loader
 * gives it ("linux-vdso.so.1"). A build ID longer than 64 bytes is left
 * out (build_id_len 0). An image loaded or unloaded by another thread
 * while this runs may or may not be in the map.
 *
 * Returns BTP_OK, BTP_E_BUFFER_TOO_SMALL (buf's counts say what a retry
 * needs) or BTP_E_INVALID_ARGUMENT (NULL buf or map). Thread-safe; not
 * async-signal-safe (dl_iterate_phdr takes the loader's lock): the crash
 * handler builds its own map at crash time from /proc/self/maps (see
 * capture.h).
 */
BTP_API btp_status btp_image_map_self(btp_image_buf *buf, btp_image_map *map);

#ifdef __cplusplus
}
#endif

#endif
