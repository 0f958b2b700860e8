/*
 * Swift's Compact Image Map Format (CIF) v0: encoder and decoder.
 *
 * CIF is how Swift's runtime stores an image map (btp_image_map: the loaded
 * images with path, build ID, base and end of text, the word size and a
 * platform string) next to a CBF backtrace: base64 in the `imageMap` key of
 * its `Backtrace` JSON. spec/cif.md describes the format as btpack reads
 * and writes it and everything Swift 6.3.1's runtime was seen to do. In
 * short: an information byte (version 0, word size), the platform string,
 * an image count, then per image a header byte, base address (absolute or
 * relative to the previous image's), end-of-text offset, build ID and a
 * path compressed against a table of prefixes that both sides grow as the
 * paths go by.
 *
 * Both directions are freestanding: no allocation, no libc beyond what the
 * compiler needs, caller-provided buffers. The encoder is async-signal-safe
 * (a crash handler can encode the map it holds).
 */
#ifndef BTPACK_CIF_H
#define BTPACK_CIF_H

#include <btpack/btpack.h>

#ifdef __cplusplus
extern "C" {
#endif

/* From <btpack/imagemap.h> (named by their tags here: btpack.h includes
 * both headers, in either order). */
struct btp_image;
struct btp_image_map;

/* ------------------------------------------------------------------ */
/* Encoder                                                              */
/* ------------------------------------------------------------------ */

/* Encoder flags. */
enum {
    /* Swift's choices where the format leaves one: counts (image count,
     * build-ID lengths) whose bit length is a multiple of 7 get Swift's
     * redundant leading 0x80 byte (64 is `80 40`, not `40`). With this flag
     * the output is byte for byte what Swift 6.3.1 writes for the same
     * image list (spec/cif.md lists the two pathological cases where Swift
     * writes corrupt data instead, which only BTP_CIF_ENC_SWIFT_BUGS
     * copies). Without it every count is minimal. */
    BTP_CIF_ENC_SWIFT = 1u << 0,
    /* Also copy Swift's length bug in long prefix references (codes 320 and
     * up get too few operand bytes, which no decoder reads back correctly).
     * Only for comparing with Swift's output; never for data to keep. */
    BTP_CIF_ENC_SWIFT_BUGS = 1u << 1
};

/* One entry of the encoder's table of path prefixes: bytes of a path in the
 * map being encoded. The caller provides the table (any memory, e.g. on the
 * stack); its content is private. */
typedef struct btp_cif_prefix {
    const char *s;
    size_t len;
} btp_cif_prefix;

/*
 * Encode map into buf[0..cap) as CIF; *len_out (may be NULL) gets the bytes
 * written, *needed_out (may be NULL) the bytes the whole encoding needs
 * (also when it did not fit).
 *
 * table[0..table_cap) is the encoder's work space for the prefixes the
 * paths define (one per '/' or '\' of a path's literal part, so
 * btp_cif_prefix_bound(map) entries are always enough). With fewer the
 * output is still valid CIF of the same map, only longer and no longer
 * Swift's bytes: prefixes beyond the table are defined (the decoder counts
 * them) but never referred to. table may be NULL with table_cap 0.
 *
 * Images are written in the order given (Swift sorts by base when it
 * captures, the encoder does not). An image with name NULL takes the text
 * after the last '/' or '\' of its path as its name (what a decoder gives
 * back); the name matters only for Swift's framework shortcut. Paths and
 * the platform are C strings (bytes, written as they are).
 *
 * Returns:
 *  BTP_OK
 *  BTP_E_BUFFER_TOO_SMALL the encoding needs *needed_out bytes; buf holds
 *                         nothing usable (nothing past cap was written)
 *  BTP_E_VALUE_TOO_WIDE   a base or end of text does not fit the word
 *  BTP_E_CIF_BAD_RANGE    an image's end of text is below its base (Swift
 *                         traps on that)
 *  BTP_E_CIF_STRING_TOO_LONG the platform is longer than 255 bytes
 *  BTP_E_INVALID_ARGUMENT NULL map, bad word size, NULL images with
 *                         n_images > 0, NULL buf with cap > 0, NULL table
 *                         with table_cap > 0
 * Work is O(total path bytes x prefixes in the table); nothing allocates;
 * async-signal-safe; touches only map (read), table and buf.
 */
BTP_API btp_status btp_cif_encode(const struct btp_image_map *map, unsigned flags,
                                  btp_cif_prefix *table, size_t table_cap, void *buf, size_t cap,
                                  size_t *len_out, size_t *needed_out);

/* Table entries that are always enough for encoding map: the number of '/'
 * and '\' in its paths (at least 1). */
BTP_API size_t btp_cif_prefix_bound(const struct btp_image_map *map);

/* ------------------------------------------------------------------ */
/* Decoder                                                              */
/* ------------------------------------------------------------------ */

/* Decoder policy flags. The default (0) reads everything Swift writes and
 * rejects everything malformed with a status and the offset of the fault;
 * bytes after the last image are left to the caller (info->consumed says
 * where the map ends). spec/cif.md describes the policies. */
enum {
    BTP_CIF_REJECT_TRAILING = 1u << 0,       /* bytes after the last image */
    BTP_CIF_REJECT_RESERVED_BIT = 1u << 1,   /* header bit 6 set */
    BTP_CIF_REJECT_EMPTY_TEXT = 1u << 2,     /* end of text == base */
    BTP_CIF_REJECT_BAD_UTF8 = 1u << 3,       /* platform or path not UTF-8 */
    BTP_CIF_REJECT_LONG_BUILD_ID = 1u << 4,  /* build ID over 1024 bytes */
    /* Swift compatibility: a path that cannot be decoded (an undefined
     * prefix code, input ending inside it, a long reference too wide, a NUL
     * byte) makes that image's path and name absent and decoding goes on
     * from the byte after the fault, as Swift 6.3.1 does; an end of text
     * below the base is kept (modulo the word). */
    BTP_CIF_LENIENT = 1u << 5
};
#define BTP_CIF_POLICY_DEFAULT 0u
#define BTP_CIF_POLICY_STRICT                                                               \
    (BTP_CIF_REJECT_TRAILING | BTP_CIF_REJECT_RESERVED_BIT | BTP_CIF_REJECT_EMPTY_TEXT |   \
     BTP_CIF_REJECT_BAD_UTF8 | BTP_CIF_REJECT_LONG_BUILD_ID)
#define BTP_CIF_POLICY_SWIFT BTP_CIF_LENIENT

/* Longest build ID the strict policy accepts (what newer Swift accepts). */
#define BTP_CIF_MAX_BUILD_ID 1024

/* At most this many images fit len bytes of CIF (each takes 5 or more):
 * an images array of this size never gives BTP_E_LIMIT. */
#define BTP_CIF_MAX_IMAGES(len) ((size_t)(len) / 5 + 1)

/* Summary of a decode. */
typedef struct btp_cif_info {
    unsigned word_bits;
    size_t consumed;      /* bytes of the map (its end; trailing bytes follow) */
    size_t error_offset;  /* byte offset of the fault on error */
    size_t arena_used;    /* bytes of the arena in use (strings, IDs, table) */
    size_t paths_dropped; /* BTP_CIF_LENIENT: paths made absent */
} btp_cif_info;

/* What btp_cif_walk reports, field by field. */
typedef enum btp_cif_field {
    BTP_CIF_F_INFO,       /* value = word bits */
    BTP_CIF_F_PLATFORM,   /* text = the platform string */
    BTP_CIF_F_COUNT,      /* value = image count */
    BTP_CIF_F_HEADER,     /* value = header byte; image = index */
    BTP_CIF_F_BASE,       /* value = base; relative = 1 when written as a delta */
    BTP_CIF_F_END,        /* value = end of text */
    BTP_CIF_F_BUILD_ID,   /* value = length; text = the bytes */
    BTP_CIF_F_PATH_STR,   /* text = literal bytes */
    BTP_CIF_F_PATH_DEFINE,/* no bytes of its own: value = the code a literal
                             just defined, text = its prefix */
    BTP_CIF_F_PATH_EXPAND,/* value = prefix code; text = its bytes */
    BTP_CIF_F_PATH_FRAMEWORK, /* value = version byte; text = the expansion */
    BTP_CIF_F_PATH_END,   /* the `end` byte */
    BTP_CIF_F_PATH,       /* the whole path: offset/len its bytes, text = the
                             path (text_len 0: none) */
    BTP_CIF_F_PATH_DROPPED /* BTP_CIF_LENIENT: path dropped; value = its status */
} btp_cif_field;

typedef struct btp_cif_event {
    btp_cif_field field;
    size_t offset;        /* first byte of the field */
    size_t len;           /* its bytes */
    size_t image;         /* index of the image it belongs to */
    uint64_t value;
    int relative;
    const char *text;     /* see btp_cif_field; not NUL-terminated */
    size_t text_len;
} btp_cif_event;

typedef void (*btp_cif_visitor)(void *ctx, const btp_cif_event *ev);

/*
 * Decode the CIF map in buf[0..len) into *map.
 *
 * images[0..max_images) receives the images (BTP_CIF_MAX_IMAGES(len) is
 * always enough); arena[0..arena_size) holds their paths and names
 * (NUL-terminated; a name points into its path), build IDs, the platform
 * and the prefix table. map points into both; they must outlive it. A path
 * that is absent on the wire has path and name NULL. Addresses are reduced
 * to the map's word size.
 *
 * Returns BTP_OK with *map filled, or an error with info->error_offset at
 * the fault (map then holds nothing usable):
 *  BTP_E_EMPTY_INPUT       len 0
 *  BTP_E_CIF_BAD_VERSION   information byte version not 0 (offset 0)
 *  BTP_E_CIF_RESERVED_SIZE word size code 0b11 (offset 0)
 *  BTP_E_CIF_TRUNCATED     input ends inside a field (offset: the field)
 *  BTP_E_CIF_COUNT_TOO_WIDE a count beyond 2^63 (offset: the count)
 *  BTP_E_LIMIT             more images than max_images (offset: the first
 *                          image that does not fit)
 *  BTP_E_CIF_BAD_PREFIX    a path refers to an undefined prefix code, or a
 *                          long reference's value overflows (offset: it)
 *  BTP_E_CIF_NUL_IN_STRING a NUL byte in the platform or a path
 *  BTP_E_CIF_BAD_RANGE     end of text below base (not BTP_CIF_LENIENT)
 *  BTP_E_BUFFER_TOO_SMALL  the arena is full (offset: where it filled up)
 *  by policy: BTP_E_TRAILING_BYTES, BTP_E_CIF_RESERVED_BIT,
 *  BTP_E_CIF_EMPTY_TEXT, BTP_E_CIF_BAD_UTF8, BTP_E_CIF_BUILD_ID_TOO_LONG
 *  BTP_E_INVALID_ARGUMENT  NULL map, NULL buf with len > 0, NULL images
 *                          with max_images > 0, NULL arena with size > 0
 * info may be NULL.
 *
 * Hostile input: nothing outside buf[0..len) is read, nothing outside the
 * arena and images written; counts are checked against the input's real
 * size before they are used; work is O(len + arena_size) (paths built from
 * prefixes are copied into the arena, so an arena of a few times len keeps
 * expansion-heavy input cheap and fails it cleanly). No allocation; the
 * decoder is reentrant.
 */
BTP_API btp_status btp_cif_decode(const void *buf, size_t len, unsigned policy,
                                  struct btp_image *images, size_t max_images, void *arena,
                                  size_t arena_size, struct btp_image_map *map,
                                  btp_cif_info *info);

/* btp_cif_decode, reporting every field to visit(ctx, event) as it is read
 * (for disassembly). Events come in input order; on an error the fields
 * before the fault have been reported. */
BTP_API btp_status btp_cif_walk(const void *buf, size_t len, unsigned policy,
                                struct btp_image *images, size_t max_images, void *arena,
                                size_t arena_size, struct btp_image_map *map, btp_cif_info *info,
                                btp_cif_visitor visit, void *ctx);

/* The text of fixed prefix code `code` (0..11: "/lib", "/usr/lib", ...), or
 * NULL for other codes. */
BTP_API const char *btp_cif_fixed_prefix(unsigned code);

#ifdef __cplusplus
}
#endif

#endif
