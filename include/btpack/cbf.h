/*
 * Compact Backtrace Format (CBF) v0: encoder and decoder.
 *
 * The format as we read and write it is specified in spec/cbf.md. In short:
 * an information byte (version 0, word size 16/32/64), then byte-aligned
 * instructions end, trunc, pc/ra/async (absolute or relative, 1..8 operand
 * bytes, big-endian, sign-extended, modulo the word), omit and rep (inline
 * or with a big-endian external count).
 */
#ifndef BTPACK_CBF_H
#define BTPACK_CBF_H

#include <btpack/btpack.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ */
/* Encoder                                                              */
/* ------------------------------------------------------------------ */

/* Flags for the encoder. */
enum {
    /* When the buffer cannot take the next instruction, close the trace
     * there with `trunc` instead of failing: the buffer then always holds a
     * complete, valid CBF stream (needs a capacity of at least 2 bytes). */
    BTP_CBF_ENC_TRUNCATE_ON_FULL = 1u << 0,
    /* Make Swift's encoder's choices instead of the minimal ones: absolute
     * only when strictly shorter (so the first address is written relative)
     * and `omit` inline only up to 31. For comparison and benchmarks. */
    BTP_CBF_ENC_SWIFT = 1u << 1
};

/* Upper bound on the encoding of n frames (information byte, at most 9
 * bytes per frame, the terminator), for sizing buffers. */
#define BTP_CBF_BOUND(n) ((size_t)2 + (size_t)9 * (size_t)(n))

/* Encoder state. Caller-allocated (e.g. on the stack); the fields are
 * private. */
typedef struct btp_cbf_encoder {
    uint8_t *buf;
    size_t cap;       /* bytes the caller gave */
    size_t limit;     /* bytes instructions may use (cap, or cap-1 to keep room for trunc) */
    size_t len;       /* bytes written to buf */
    size_t needed;    /* bytes the complete encoding needs */
    uint64_t prev;    /* previous computed address */
    uint64_t mask;    /* word mask */
    btp_frame last;   /* frame a pending rep repeats */
    uint64_t pending; /* extra copies of `last` not yet written */
    unsigned word_bits;
    unsigned flags;
    int have_last;    /* `last` is valid */
    int seen_address; /* an address frame has been written */
    int closed;       /* trunc written early (TRUNCATE_ON_FULL) */
    int finished;
    btp_status error; /* sticky argument error */
} btp_cbf_encoder;

/*
 * Start a stream into buf[0..cap). Writes the information byte at once.
 * word_bits: 16, 32 or 64. flags: BTP_CBF_ENC_*.
 * Returns BTP_E_INVALID_ARGUMENT for a bad word size, a NULL buffer with a
 * non-zero capacity, or TRUNCATE_ON_FULL with cap < 2.
 *
 * The encoder functions are async-signal-safe: they never allocate, lock or
 * call into libc, and touch only the encoder and buf[0..cap). They never
 * write past buf + cap.
 */
BTP_API btp_status btp_cbf_encoder_init(btp_cbf_encoder *enc, void *buf, size_t cap,
                                        unsigned word_bits, unsigned flags);

/*
 * Append `copies` (>= 1) copies of `frame`. Runs of identical frames, given
 * in one call or across calls, become `rep` instructions (several on a
 * 16/32-bit word when the run is longer than the word's maximum count;
 * once the buffer is full the rest are only counted, so any run costs
 * O(cap) work at most).
 * Returns:
 *  BTP_OK
 *  BTP_E_VALUE_TOO_WIDE   the address does not fit the word, or an omit
 *                         count does not fit the word (nothing appended)
 *  BTP_E_ZERO_COUNT       copies == 0 or an omit of 0 frames (nothing appended)
 *  BTP_E_INVALID_ARGUMENT bad kind, or the encoder is finished
 *  BTP_E_BUFFER_TOO_SMALL (TRUNCATE_ON_FULL only) the stream was closed
 *                         with `trunc` because the buffer is full; this
 *                         frame and all later ones are dropped, the buffer
 *                         holds valid CBF.
 * Without TRUNCATE_ON_FULL a full buffer is reported by finish(), and
 * encoding goes on counting the size it needs.
 */
BTP_API btp_status btp_cbf_encoder_add(btp_cbf_encoder *enc, btp_frame frame, uint64_t copies);

/*
 * Close the stream with `end`, or `trunc` if `truncated` is non-zero.
 * *len_out (may be NULL) receives the number of valid bytes in the buffer.
 * Returns BTP_OK, or BTP_E_BUFFER_TOO_SMALL when the complete encoding did
 * not fit: then without TRUNCATE_ON_FULL *len_out is 0 and the buffer's
 * content is unspecified (but nothing past cap was written); with it,
 * *len_out bytes hold a valid stream closed early by `trunc`. In both cases
 * btp_cbf_encoder_needed() gives the size the complete encoding needs.
 */
BTP_API btp_status btp_cbf_encoder_finish(btp_cbf_encoder *enc, int truncated, size_t *len_out);

/* Bytes the complete encoding of everything added so far needs (including
 * the terminator once finished). */
BTP_API size_t btp_cbf_encoder_needed(const btp_cbf_encoder *enc);

/*
 * One-shot: encode frames[0..n) into buf[0..cap); same rules, results and
 * signal safety as the streaming calls. *len_out gets the bytes written; on
 * BTP_E_BUFFER_TOO_SMALL without TRUNCATE_ON_FULL, *needed_out (may be NULL)
 * gets the size required.
 */
BTP_API btp_status btp_cbf_encode(const btp_frame *frames, size_t n, int truncated,
                                  unsigned word_bits, unsigned flags, void *buf, size_t cap,
                                  size_t *len_out, size_t *needed_out);

/*
 * One-shot from a plain array of addresses, all of one kind, e.g. the
 * return addresses an unwinder or backtrace() gives: the same bytes,
 * results and signal safety as btp_cbf_encode of the frames
 * {addrs[i], kind}, i < n, without building that array. kind:
 * BTP_FRAME_PC, BTP_FRAME_RA or BTP_FRAME_ASYNC (else
 * BTP_E_INVALID_ARGUMENT). With a buffer of at least BTP_CBF_BOUND(n)
 * bytes it reads each address once and writes each instruction with no
 * check of room: the fastest way into CBF.
 */
BTP_API btp_status btp_cbf_encode_addrs(const uint64_t *addrs, size_t n, btp_frame_kind kind,
                                        int truncated, unsigned word_bits, unsigned flags,
                                        void *buf, size_t cap, size_t *len_out,
                                        size_t *needed_out);

/* Upper bound on btp_cbf_encode_chain32's output for n addresses (an
 * information byte, at most 5 bytes per frame, the terminator). */
#define BTP_CBF_BOUND32(n) ((size_t)2 + (size_t)5 * (size_t)(n))

/*
 * One-shot for a call chain captured on a 32-bit target, e.g. in a fault
 * handler: addrs[0] is the pc, addrs[1..n) are return addresses, words are
 * 32 bits. The same bytes, results, *len_out and *needed_out as
 * btp_cbf_encode of the frames {addrs[0], BTP_FRAME_PC}, {addrs[i],
 * BTP_FRAME_RA} (i >= 1) with word_bits 32 and the same flags, and the
 * same signal safety, in far less code: 32-bit arithmetic, no streaming
 * state (under 512 bytes of Thumb-2 at -Os with the codecs built for
 * size; bench/embedded.md). BTP_CBF_BOUND32(n) bytes always suffice.
 * Returns BTP_E_INVALID_ARGUMENT for a NULL addrs with n > 0, a NULL
 * buffer with a non-zero capacity, or TRUNCATE_ON_FULL with cap < 2;
 * BTP_E_BUFFER_TOO_SMALL as btp_cbf_encode does.
 */
BTP_API btp_status btp_cbf_encode_chain32(const uint32_t *addrs, size_t n, int truncated,
                                          unsigned flags, void *buf, size_t cap,
                                          size_t *len_out, size_t *needed_out);

/* ------------------------------------------------------------------ */
/* Decoder                                                              */
/* ------------------------------------------------------------------ */

/* Decoder policy flags. The default (0) reads everything Swift writes
 * (relative first address, missing `end`, zero external counts: an omit of
 * 0 comes back as an OMIT frame of value 0, a rep of 0 adds nothing) and
 * stops at `end`/`trunc`, leaving any further bytes to the caller (streams
 * stored back to back). spec/cbf.md describes the policies. */
enum {
    BTP_CBF_REJECT_RELATIVE_FIRST = 1u << 0, /* first address must be absolute */
    BTP_CBF_REJECT_ZERO_COUNT = 1u << 1,     /* external omit/rep count of 0 */
    BTP_CBF_REJECT_TRAILING = 1u << 2,       /* bytes after end/trunc */
    /* Swift compatibility: an address operand longer than the word keeps
     * its low bytes, and an external count longer than the word (up to
     * the 32 bytes omit can announce) is taken whole if its value fits 64
     * bits, instead of failing; a larger count is still
     * BTP_E_COUNT_TOO_WIDE (Swift would keep its low bytes). */
    BTP_CBF_ACCEPT_WIDE = 1u << 3
};
#define BTP_CBF_POLICY_DEFAULT 0u
#define BTP_CBF_POLICY_STRICT \
    (BTP_CBF_REJECT_RELATIVE_FIRST | BTP_CBF_REJECT_ZERO_COUNT | BTP_CBF_REJECT_TRAILING)
#define BTP_CBF_POLICY_SWIFT BTP_CBF_ACCEPT_WIDE

/* How a stream ended. */
typedef enum btp_cbf_terminator {
    BTP_CBF_TERM_NONE = 0, /* input ran out without end/trunc (allowed) */
    BTP_CBF_TERM_END = 1,
    BTP_CBF_TERM_TRUNC = 2
} btp_cbf_terminator;

/* A run: `count` (>= 1) consecutive copies of `frame`. A `rep` of 2^64
 * copies is one run, so a run costs O(1) however long it is. */
typedef struct btp_cbf_run {
    btp_frame frame;
    uint64_t count;
} btp_cbf_run;

/* Decoder cursor. Caller-allocated; fields are private (use the
 * accessors). */
typedef struct btp_cbf_decoder {
    const uint8_t *buf;
    size_t len;
    size_t pos;          /* next instruction */
    size_t err_offset;
    uint64_t prev;       /* previous computed address */
    uint64_t mask;
    btp_cbf_run pending; /* run read ahead but not yet returned */
    btp_frame last;      /* frame a rep repeats */
    unsigned word_bits;
    unsigned policy;
    int have_last;
    int have_pending;
    int seen_address;
    btp_cbf_terminator terminator;
    btp_status status;   /* sticky: BTP_OK while running, then BTP_END or an error */
} btp_cbf_decoder;

/*
 * Start decoding buf[0..len) and read the information byte.
 * Returns BTP_OK, BTP_E_EMPTY_INPUT (len 0), BTP_E_BAD_VERSION or
 * BTP_E_RESERVED_SIZE (checked in that order; offset 0), or
 * BTP_E_INVALID_ARGUMENT (NULL with len > 0). The decoder keeps a pointer to
 * buf: it must stay valid while the decoder is used.
 */
BTP_API btp_status btp_cbf_decoder_init(btp_cbf_decoder *dec, const void *buf, size_t len,
                                        unsigned policy);

/*
 * Next run. Returns BTP_OK with *run filled, BTP_END when the stream is
 * over (end, trunc, or input exhausted), or an error whose byte offset
 * btp_cbf_decoder_error_offset() gives: BTP_E_RESERVED_OPCODE,
 * BTP_E_TRUNCATED_OPERAND, BTP_E_ADDRESS_TOO_WIDE, BTP_E_COUNT_TOO_WIDE,
 * BTP_E_REP_WITHOUT_FRAME, and by policy BTP_E_FIRST_ADDRESS_RELATIVE,
 * BTP_E_ZERO_COUNT, BTP_E_TRAILING_BYTES. End and errors are sticky.
 * Consecutive `rep`s of a frame are merged into its run (up to 2^64-1
 * copies; beyond that the rest comes as another run of the same frame).
 * Runs are returned before an error that follows them. Each call does
 * O(instructions read) work; nothing allocates.
 */
BTP_API btp_status btp_cbf_decoder_next(btp_cbf_decoder *dec, btp_cbf_run *run);

/* The stream's word size in bits (16, 32 or 64), read from its information
 * byte: the addresses the decoder returns are reduced to it. 0 when dec is
 * NULL or btp_cbf_decoder_init() failed. */
BTP_API unsigned btp_cbf_decoder_word_bits(const btp_cbf_decoder *dec);
/* Bytes of the input this stream used so far; after BTP_END, the stream's
 * length including its terminator (the next stream starts here). */
BTP_API size_t btp_cbf_decoder_consumed(const btp_cbf_decoder *dec);
/* Byte offset of the fault after an error (0 otherwise). */
BTP_API size_t btp_cbf_decoder_error_offset(const btp_cbf_decoder *dec);
BTP_API btp_cbf_terminator btp_cbf_decoder_terminator(const btp_cbf_decoder *dec);

/* Summary of a one-shot decode. */
typedef struct btp_cbf_info {
    unsigned word_bits;
    int truncated;                 /* the stream ended with trunc */
    btp_cbf_terminator terminator;
    size_t consumed;               /* bytes of the stream */
    size_t frames;                 /* frames written to the caller array */
    size_t error_offset;           /* byte offset of the fault on error */
} btp_cbf_info;

/*
 * One-shot: decode one stream from buf into out[0..max_frames), expanding
 * runs. Returns BTP_OK, a decoder error (frames before it are in out), or
 * BTP_E_LIMIT when the stream holds more than max_frames frames (out holds
 * the first max_frames). info may be NULL.
 */
BTP_API btp_status btp_cbf_decode(const void *buf, size_t len, unsigned policy, btp_frame *out,
                                  size_t max_frames, btp_cbf_info *info);

/*
 * One-shot into a plain array of addresses: as btp_cbf_decode, but out[i]
 * gets frame i's address only (whether it was a pc, ra or async frame is
 * dropped), so an array of words is all the caller keeps. An `omit`,
 * which has no address, stops decoding with BTP_E_UNREPRESENTABLE
 * (BTP_E_LIMIT if out is already full): info->error_offset is the omit's
 * offset, the frames before it are in out and counted in info->frames.
 * The same checks, statuses and offsets otherwise; the same guarantees on
 * malicious input.
 */
BTP_API btp_status btp_cbf_decode_addrs(const void *buf, size_t len, unsigned policy,
                                        uint64_t *out, size_t max_frames, btp_cbf_info *info);

#ifdef __cplusplus
}
#endif

#endif
