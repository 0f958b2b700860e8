/*
 * btpack — compact stack backtraces.
 *
 * This header holds what every part of the library shares: the version, the
 * one status enum with btp_strerror(), and the frame type. It includes the
 * format headers, so `#include <btpack/btpack.h>` is all a user needs.
 *
 * Conventions that hold across the whole API:
 *  - Every function that can fail returns btp_status; BTP_OK (0) is success.
 *    BTP_END (1) is not an error: an iterator has nothing more to give.
 *    Everything >= BTP_E_FIRST is an error. The numbers are stable: they are
 *    part of the ABI and never reused.
 *  - State lives in caller-allocated structs; the library never keeps global
 *    mutable state. Distinct objects may be used from distinct threads at
 *    once; one object must not be used from two threads at once.
 *  - Readers are given (pointer, length), never look outside it and treat the
 *    bytes as hostile: every count is checked before it sizes anything.
 *  - Option structs the caller allocates (btp_capture_options,
 *    btp_crash_options, btp_log_writer_options, btp_log_reader_options,
 *    btp_heap_config) end in `uint64_t reserved[BTP_RESERVED_WORDS]`: room
 *    for options to come without changing their size. Zero it (the _init
 *    functions and `= {0}` do); a function given a nonzero reserved word
 *    refuses with BTP_E_UNSUPPORTED, so that a program built against a
 *    newer header and asking for an option this library does not know is
 *    told so instead of having it ignored. New options take reserved words
 *    from the front and mean "as before" when zero.
 */
#ifndef BTPACK_BTPACK_H
#define BTPACK_BTPACK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define BTP_VERSION_MAJOR 0
#define BTP_VERSION_MINOR 1
#define BTP_VERSION_PATCH 0
#define BTP_VERSION_STRING "0.1.0"
/* Reserved words at the end of every caller-allocated option struct. */
#define BTP_RESERVED_WORDS 4

/* The ABI version (the shared library's soname number). It changes only when
 * the ABI breaks, independently of the release version above. */
#define BTP_API_VERSION 0

#if defined(BTP_BUILDING_LIBRARY) && defined(__GNUC__)
#define BTP_API __attribute__((visibility("default")))
#else
#define BTP_API
#endif

/* One status enum for the whole library. Values are stable. */
typedef enum btp_status {
    BTP_OK = 0,
    BTP_END = 1, /* iteration finished normally; not an error */

    /* general */
    BTP_E_FIRST = 2,
    BTP_E_INVALID_ARGUMENT = 2, /* a caller broke the contract (NULL, bad word size, ...) */
    BTP_E_BUFFER_TOO_SMALL = 3, /* output did not fit; see the function for what was written */
    BTP_E_OUT_OF_MEMORY = 4,
    BTP_E_IO = 5,             /* read/write on a file descriptor or sink failed */
    BTP_E_LIMIT = 6,          /* a caller-set limit (frames, depth, size) was exceeded */
    BTP_E_UNSUPPORTED = 7,    /* not available in this build or on this platform */
    BTP_E_SYNTAX = 8,         /* text input is not in the expected format */
    BTP_E_VALUE_TOO_WIDE = 9, /* a value does not fit the word size */
    BTP_E_ZERO_COUNT = 10,    /* a count of 0 where the format needs >= 1 */

    /* CBF decoding (byte offsets are reported alongside) */
    BTP_E_EMPTY_INPUT = 20,            /* no information byte */
    BTP_E_BAD_VERSION = 21,            /* information byte version is not 0 */
    BTP_E_RESERVED_SIZE = 22,          /* word size code 0b11 */
    BTP_E_RESERVED_OPCODE = 23,        /* an instruction byte CBF v0 does not define */
    BTP_E_TRUNCATED_OPERAND = 24,      /* input ends inside an operand */
    BTP_E_ADDRESS_TOO_WIDE = 25,       /* address operand longer than the word */
    BTP_E_COUNT_TOO_WIDE = 26,         /* external omit/rep count longer than the word */
    BTP_E_REP_WITHOUT_FRAME = 27,      /* rep before any frame */
    BTP_E_FIRST_ADDRESS_RELATIVE = 28, /* strict: first address instruction is relative */
    BTP_E_TRAILING_BYTES = 29,         /* strict: bytes after end/trunc */

    /* lws bitstream / text (bit offsets are reported alongside) */
    BTP_E_BAD_BASE64 = 40,
    BTP_E_LENGTH_MISMATCH = 41,   /* length trailer differs from the payload size */
    BTP_E_OUT_OF_BITS = 42,       /* a field runs past the end of the bitstream */
    BTP_E_BAD_REFERENCE = 43,     /* delta refers to a frame not decoded yet */
    BTP_E_BIT_COUNT_TOO_WIDE = 44,/* a bit count larger than the word */
    BTP_E_DEPTH_TOO_LARGE = 45,   /* more frames than the format can hold */
    BTP_E_UNREPRESENTABLE = 46,   /* a frame kind or value the format cannot express */

    /* trace logs */
    BTP_E_BAD_MAGIC = 60,       /* not a btpack trace log */
    BTP_E_BAD_LOG_VERSION = 61, /* a log version or feature this reader does not know */
    BTP_E_CHECKSUM = 62,        /* a block's checksum does not match */
    BTP_E_CORRUPT = 63,         /* structure inside a block is inconsistent */
    BTP_E_TRUNCATED_FILE = 64,  /* the file ends inside a block */
    BTP_E_NO_ZLIB = 65,         /* compressed block, but this build has no zlib */
    BTP_E_ZLIB = 66,            /* zlib reported an error */
    BTP_E_NO_LZMA = 67,         /* LZMA-compressed block, but this build has no liblzma */
    BTP_E_LZMA = 68,            /* liblzma reported an error (a block does not decode) */

    /* capture */
    BTP_E_NO_METHOD = 80, /* the requested unwinder is not built in or failed to start */

    /* Swift's compact image map format, CIF (byte offsets reported alongside) */
    BTP_E_CIF_TRUNCATED = 100,       /* input ends inside a field */
    BTP_E_CIF_BAD_VERSION = 101,     /* information byte version is not 0 */
    BTP_E_CIF_RESERVED_SIZE = 102,   /* word size code 0b11 */
    BTP_E_CIF_COUNT_TOO_WIDE = 103,  /* a count does not fit 63 bits */
    BTP_E_CIF_BAD_PREFIX = 104,      /* a path refers to a prefix code not defined */
    BTP_E_CIF_NUL_IN_STRING = 105,   /* a NUL byte in a path or the platform */
    BTP_E_CIF_BAD_RANGE = 106,       /* end of text below the base address */
    BTP_E_CIF_RESERVED_BIT = 107,    /* strict: image header bit 6 set */
    BTP_E_CIF_EMPTY_TEXT = 108,      /* strict: end of text equal to the base */
    BTP_E_CIF_BAD_UTF8 = 109,        /* strict: a path or the platform is not UTF-8 */
    BTP_E_CIF_BUILD_ID_TOO_LONG = 110, /* strict: build ID over 1024 bytes */
    BTP_E_CIF_STRING_TOO_LONG = 111, /* encoding: platform over 255 bytes */

    /* image maps (imagemap.h) */
    BTP_E_MAPS_SYNTAX = 120,  /* a /proc/PID/maps line is malformed */
    BTP_E_IMAGE_SYNTAX = 121, /* an `image` line is malformed */
    BTP_E_BAD_NOTE = 122,     /* an ELF note runs past its area */

    /* allocation metadata (heap.h) */
    BTP_E_HEAP_FOREIGN = 140, /* no valid header in front of the pointer: not from this
                                 heap, freed twice, or damaged by an underrun */
    BTP_E_HEAP_CORRUPT = 141, /* the live list is damaged (links or a header's magic) */

    /* embedded fault capture (ports/cortex-m) */
    BTP_E_CM_FRAME_BOUNDS = 160, /* the stacked exception frame is outside the stack given */
    BTP_E_CM_EXC_RETURN = 161,   /* not an EXC_RETURN value */

    /* trace logs: losses and reader limits */
    BTP_E_RECORDS_LOST = 200,     /* records of the log are missing (a block was lost) */
    BTP_E_NODES_LIMIT = 201,      /* more call-tree nodes than the reader's max_nodes */
    BTP_E_LIVE_LIMIT = 202,       /* more live allocations than the reader's max_live */
    BTP_E_EXPANSION_LIMIT = 203,  /* more work per byte of log than max_expansion */
    BTP_E_META_LIMIT = 204        /* more metadata kept than the reader holds */
} btp_status;

/* A short English sentence for a status; never NULL, never allocates,
 * async-signal-safe. Unknown values give "unknown status". */
BTP_API const char *btp_strerror(btp_status status);

/* The status's stable lower-case identifier ("truncated_operand", ...), the
 * names used in the test vectors and in machine-readable output. */
BTP_API const char *btp_status_name(btp_status status);

/* The library's version string (BTP_VERSION_STRING of the build). */
BTP_API const char *btp_version(void);

/* The kinds of frame a backtrace holds. */
typedef enum btp_frame_kind {
    BTP_FRAME_PC = 0,    /* a program counter (the faulting/current instruction) */
    BTP_FRAME_RA = 1,    /* a return address */
    BTP_FRAME_ASYNC = 2, /* an async resume point */
    BTP_FRAME_OMIT = 3   /* `value` frames were left out here */
} btp_frame_kind;

/* One frame: for PC/RA/ASYNC `value` is the address (already reduced to the
 * trace's word size), for OMIT it is the number of omitted frames (>= 1). */
typedef struct btp_frame {
    uint64_t value;
    btp_frame_kind kind;
} btp_frame;

/* Word sizes are given in bits: 16, 32 or 64. */
static inline int btp_word_bits_valid(unsigned word_bits)
{
    return word_bits == 16 || word_bits == 32 || word_bits == 64;
}

/* All-ones mask of a word of `word_bits` bits (16, 32 or 64). */
static inline uint64_t btp_word_mask(unsigned word_bits)
{
    return word_bits >= 64 ? UINT64_MAX : ((uint64_t)1 << word_bits) - 1;
}

static inline int btp_frame_is_address(btp_frame f)
{
    return f.kind != BTP_FRAME_OMIT;
}

#ifdef __cplusplus
}
#endif

#include <btpack/base64.h>
#include <btpack/cbf.h>
#include <btpack/log.h>
#include <btpack/lws.h>
#include <btpack/capture.h>
#include <btpack/imagemap.h>
#include <btpack/heap.h>
#include <btpack/cif.h>

#endif
