/*
 * The symbolizer every command uses (symbolize, stats on a log, heapmap):
 * addresses -> (image, offset) through an image map -> debug file found by
 * path or build ID -> function, inlined frames, file:line.
 *
 * Use: sym_set_map() for the image map in effect, sym_add() every address
 * (cheap: answers are shared between equal requests), sym_resolve() once
 * (one back-end run per file), then sym_get() per address. Bad input never
 * gives a wrong name: a file that is missing, is not the one the map names
 * (build ID), holds no symbols, or an address in no image, all come back
 * as a note per address.
 */
#ifndef BTPACK_TOOLS_SYMBOLIZE_SYMBOLIZER_H
#define BTPACK_TOOLS_SYMBOLIZE_SYMBOLIZER_H

#include <btpack/btpack.h>

#include "strbuf.h"

typedef struct sym_options {
    const char *backend;           /* "libdw", "addr2line", or NULL: the default */
    const char *addr2line;         /* program for the addr2line back end (NULL: addr2line) */
    const char *const *debug_dirs; /* searched before /usr/lib/debug */
    size_t n_debug_dirs;
    int no_system_debug_dir;       /* do not search /usr/lib/debug (tests) */
    /* An ELF file for addresses no image holds (or all, without a map):
     * they are its addresses as linked (a program loaded where it was
     * linked, or the offsets of a PIE). NULL: none. */
    const char *elf;
    /* Only place addresses in images (image, build ID, offsets): no debug
     * files, no back end (LLVM markup output, where the consumer
     * symbolizes). */
    int images_only;
    /* For an image whose map gives no build ID: whether the file at path,
     * with st_dev dev and st_ino ino, is the one the process loaded (1),
     * another file (0: its names may be another version's, and each frame
     * in it says so), or cannot be told (-1). NULL: cannot be told. */
    int (*same_file)(void *ctx, const char *path, uint64_t dev, uint64_t ino);
    void *same_file_ctx;
} sym_options;

/* One source position, innermost first: [0] is where the address is, each
 * next one the call site in the function the previous was inlined into. */
typedef struct sym_loc {
    const char *function; /* demangled; NULL when unknown */
    const char *file;     /* NULL when unknown */
    unsigned line;        /* 0 when unknown */
} sym_loc;

typedef struct sym_answer {
    const char *image;      /* the image's path (or name, "[vdso]"); NULL: in none */
    const char *build_id;   /* lower-case hex, NULL when unknown */
    uint64_t base;          /* the image's base */
    uint64_t image_end;     /* its end of text */
    uint64_t link_base;     /* the file's address of its offset 0 (0 for a PIE or
                               library; 0 when the file was not read) */
    uint64_t offset;        /* address - base (the address itself for --elf) */
    const sym_loc *locs;    /* n_locs positions, innermost first */
    size_t n_locs;          /* 0: nothing known (see note) */
    const char *note;       /* why nothing or less is known, or NULL */
    const char *debug_file; /* the file the answer came from, or NULL */
} sym_answer;

typedef struct symbolizer symbolizer;

/* Names of the built-in back ends, the default first. */
const char *const *sym_backends(void);
const char *sym_default_backend(void);

/* NULL when out of memory or the back end is unknown (why says which). */
symbolizer *sym_new(const sym_options *opt, char *why, size_t why_len);
void sym_free(symbolizer *s);

/* The map for the addresses added next (NULL: none). The map must stay
 * valid and unchanged until the next sym_set_map (or sym_resolve), which
 * compares the two: a map whose contents changed must come at another
 * address (the same address is taken as the same map). sym_add copies what
 * it keeps. Returns 0 or -1 (out of memory). */
int sym_set_map(symbolizer *s, const btp_image_map *map);

/* Ask for an address of a frame of this kind (a return address is looked
 * up at address - 1, the call). Returns a handle >= 0, or -1 (out of
 * memory; OMIT frames are not addresses and are refused). */
long sym_add(symbolizer *s, uint64_t addr, btp_frame_kind kind);

/* Find the files and run the back ends: one run per file for all its
 * addresses. Returns 0, or -1 when out of memory (other failures become
 * notes). */
int sym_resolve(symbolizer *s);

/* After sym_resolve: when the back end failed on any file (it could not
 * run, died, or answered garbage), say so once as an error and return 1,
 * else 0. Those files' frames carry the reason in their note and only what
 * the symbol table gives. A command asked for names ends with an error
 * status then: the output is less than what was asked for. */
int sym_backends_failed(const char *cmd, const symbolizer *s);

/* The answer for a handle (valid until sym_free). */
void sym_get(const symbolizer *s, long handle, sym_answer *out);

/* An answer as the JSON members that follow a frame's "addr" (each with a
 * leading comma): "image", "offset", "build_id" when known, "symbols" (one
 * {"function","file","line","inlined"} per position, innermost first) and
 * "note" when there is one. */
void sym_answer_json(strbuf *o, const sym_answer *a);

/* An answer on one line: "0xADDR  image+0xOFF  function file:line
 * (inlined into F)", the parts known. */
void sym_answer_line(strbuf *o, uint64_t addr, const sym_answer *a);

#endif
