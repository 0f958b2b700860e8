/*
 * Trace logs: many allocation/free events with their backtraces in one file.
 *
 * The byte layout is specified in spec/log.md. In short: a file header
 * (magic, version, word size, limits), then self-delimiting blocks, each
 * with a header CRC and a payload CRC, optionally zlib-compressed. Stacks
 * live in a call tree (stacks sharing outer frames share nodes; new frames
 * are stored as CBF); a record refers to its stack by number, so a repeated
 * stack costs a reference. Pointers, sizes and frees are modelled so that
 * zlib has little left to do.
 *
 * Writer: appends records, buffers one block (bounded memory), writes each
 * block once and never rewrites it. Its memory is bounded by the block size,
 * the live-allocation cap and the dictionary cap (past which a new segment
 * with a fresh dictionary starts).
 *
 * Reader: reads a log held in memory (e.g. mmap) or streamed from a
 * source (a pipe, a file), record by record, in memory bounded by its
 * options whatever the log's size. A log cut at any byte yields every
 * record of every complete block, then BTP_E_TRUNCATED_FILE. A damaged
 * block is reported with its byte offset; with BTP_LOG_KEEP_GOING the
 * reader then goes on, reports the records it lost and their byte range
 * (BTP_E_RECORDS_LOST, btp_log_reader_last_loss()), and what it cannot
 * know any more is flagged on each record (BTP_LOG_REC_*_UNKNOWN), never
 * guessed. A damaged file header is read past from the parameters every
 * block header repeats (version 2).
 *
 * Threading: a writer or reader must not be used from two threads at once;
 * distinct objects are independent. Nothing here is async-signal-safe (the
 * writer allocates its dictionary).
 */
#ifndef BTPACK_LOG_H
#define BTPACK_LOG_H

#include <btpack/btpack.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Limits fixed by the format (spec/log.md). */
#define BTP_LOG_MAX_DEPTH 4096u          /* frames per stack */
#define BTP_LOG_MAX_NODES_LIMIT (1u << 24) /* largest dictionary a reader accepts */
#define BTP_LOG_MAX_LIVE_LIMIT (1u << 24)  /* largest live-allocation table */
#define BTP_LOG_MAX_BLOCK (4u << 20)       /* largest block payload, raw or stored */

typedef enum btp_log_kind {
    BTP_LOG_ALLOC = 0, /* `m size ptr stack` */
    BTP_LOG_FREE = 1,  /* `f ptr` */
    BTP_LOG_TRACE = 2, /* a plain backtrace (no allocation), maybe truncated */
    BTP_LOG_META = 3   /* reader with BTP_LOG_META_RECORDS: a metadata item was read
                          (btp_log_reader_meta(r, rec.meta, ...)); not a record */
} btp_log_kind;

/* ------------------------------------------------------------------ */
/* Writer                                                               */
/* ------------------------------------------------------------------ */

/* Where the writer's bytes go: called with each complete piece in order.
 * Return BTP_OK, or any error status, which the writer returns to its
 * caller (the log is then unusable). */
typedef btp_status (*btp_log_sink_fn)(void *ctx, const void *data, size_t len);

enum {
    BTP_LOG_WRITE_NO_ZLIB = 1u << 0, /* store blocks uncompressed */
    /* Hold each finished block (raw) instead of packing and writing it in the
     * call that finished it: btp_log_writer_take() hands it out and
     * btp_log_block_write() packs (zlib, checksums) and writes it, in
     * another thread if the caller likes, so that compression does not stall
     * the records. The bytes written are the same. */
    BTP_LOG_WRITE_HOLD = 1u << 1,
    /* Compress blocks with LZMA2 (liblzma) instead of zlib, at preset
     * `zlib_level` (xz's -1..-9; 6 is xz's default). Blocks of many records
     * come out 5-65 % smaller than with zlib 9 (LZMA matches reach back
     * through the whole block, deflate's 32 KiB), at about zlib 9's CPU time
     * to write with preset 2 and a few times it with 6; reading takes about
     * 15 ms a MiB of payload, several times inflate's. Not with NO_ZLIB. */
    BTP_LOG_WRITE_LZMA = 1u << 2
};

typedef struct btp_log_writer_options {
    unsigned word_bits;   /* 16, 32 or 64: frame addresses must fit */
    unsigned flags;       /* BTP_LOG_WRITE_* */
    int zlib_level;       /* compression level 1..9 (default 9): zlib's, or
                             with BTP_LOG_WRITE_LZMA the LZMA2 preset */
    size_t block_bytes;   /* flush a block when its raw payload reaches this
                             (default 128 KiB, at most BTP_LOG_MAX_BLOCK/2) */
    uint32_t max_nodes;   /* dictionary cap in tree nodes (default 1<<20,
                             at most BTP_LOG_MAX_NODES_LIMIT) */
    uint32_t max_live;    /* live allocations remembered for coding frees
                             (default 1<<20, at most BTP_LOG_MAX_LIVE_LIMIT) */
    uint32_t flush_interval_ms; /* also flush a block once its first record is
                             this old (default 1000; 0: by size only), so that
                             a writer that dies loses at most this much time
                             of records. Checked when a record is appended and
                             by btp_log_writer_poll(); resolution a few ms. */
    uint64_t reserved[BTP_RESERVED_WORDS]; /* zero (see btpack.h) */
} btp_log_writer_options;

/* Fill *opt with the defaults for word_bits (NULL: nothing happens). */
BTP_API void btp_log_writer_options_init(btp_log_writer_options *opt, unsigned word_bits);

typedef struct btp_log_writer btp_log_writer; /* opaque: it owns a dictionary */

/*
 * Create a writer and write the file header through the sink (an fd
 * variant is below). opt may be NULL for 64-bit defaults.
 * Returns BTP_OK with *out set, BTP_E_INVALID_ARGUMENT (NULL out/sink, bad
 * word size or option), BTP_E_OUT_OF_MEMORY, BTP_E_UNSUPPORTED (zlib or
 * LZMA asked for in a build without it: pass BTP_LOG_WRITE_NO_ZLIB, or check
 * btp_log_have_zlib() / btp_log_have_lzma()), or the sink's error.
 * On error *out is NULL and nothing needs freeing.
 */
BTP_API btp_status btp_log_writer_open(btp_log_writer **out, btp_log_sink_fn sink, void *ctx,
                                       const btp_log_writer_options *opt);

/* Same, writing to a file descriptor (write(2), retried on EINTR and short
 * writes; a failed write gives BTP_E_IO). The fd is not closed. */
BTP_API btp_status btp_log_writer_open_fd(btp_log_writer **out, int fd,
                                          const btp_log_writer_options *opt);

/*
 * Store a named piece of metadata (e.g. "maps": /proc/PID/maps text,
 * "comment": header comment lines) in its own block. Pending records are
 * flushed first so the order in the file is the order of calls.
 * key: 1..255 bytes; data: up to BTP_LOG_MAX_BLOCK/2 bytes.
 * Returns BTP_OK, BTP_E_INVALID_ARGUMENT, BTP_E_OUT_OF_MEMORY, or an
 * output error (sink status, BTP_E_ZLIB).
 */
BTP_API btp_status btp_log_writer_meta(btp_log_writer *w, const char *key, const void *data,
                                       size_t len);

/* One metadata item for btp_log_writer_meta_items() and
 * btp_log_writer_close_items(). */
typedef struct btp_log_meta_item {
    const char *key;  /* 1..255 bytes, NUL-terminated */
    const void *data; /* len bytes (may be NULL when len is 0) */
    size_t len;
} btp_log_meta_item;

#define BTP_LOG_MAX_META_ITEMS 64u /* items a writer puts in one block */

/*
 * Store items[0..n) (n: 1..BTP_LOG_MAX_META_ITEMS, keys of 1..255 bytes,
 * their data together up to BTP_LOG_MAX_BLOCK/2 bytes) in one block: each costs no block
 * header of its own (80 bytes) and zlib compresses them together, which is
 * most of a short log's size when it starts with a few small items.
 * Readers return them in this order, each as if written by its own
 * btp_log_writer_meta() call at this point (pending records are flushed
 * first). One item makes the same block as btp_log_writer_meta(); a block
 * of several is not read by readers older than this call (spec/log.md,
 * "Versioning"). Nothing is written when an argument is invalid.
 * Returns as btp_log_writer_meta().
 */
BTP_API btp_status btp_log_writer_meta_items(btp_log_writer *w, const btp_log_meta_item *items,
                                             size_t n);

/*
 * Append an allocation of `size` bytes at `ptr` with its stack
 * frames[0..n), innermost first (n may be 0). Frames are PC/RA/ASYNC
 * addresses or OMIT counts, fitting the word size.
 * Returns BTP_OK, BTP_E_LIMIT (n > BTP_LOG_MAX_DEPTH), BTP_E_VALUE_TOO_WIDE
 * or BTP_E_INVALID_ARGUMENT (a frame the word size or CBF cannot hold;
 * nothing appended), BTP_E_OUT_OF_MEMORY, or an output error from a block
 * flushed on the way (then the writer is unusable: every later call
 * returns that error).
 */
BTP_API btp_status btp_log_writer_alloc(btp_log_writer *w, uint64_t size, uint64_t ptr,
                                        const btp_frame *frames, size_t n);

/* Append a plain backtrace frames[0..n) (innermost first); `truncated`
 * non-zero says the stack was cut. Same returns as btp_log_writer_alloc(). */
BTP_API btp_status btp_log_writer_trace(btp_log_writer *w, const btp_frame *frames, size_t n,
                                        int truncated);

/* Append a free of `ptr`. Same returns as btp_log_writer_alloc(). */
BTP_API btp_status btp_log_writer_free(btp_log_writer *w, uint64_t ptr);

/* A hint, for a caller that sees its records coming (a queue): an
 * allocation or free of ptr will be appended soon, so bring what coding it
 * looks at into the cache now. Some records ahead (8 or so) hides most of
 * the misses of a large live set. Changes nothing else (NULL is accepted). */
BTP_API void btp_log_writer_prefetch(const btp_log_writer *w, uint64_t ptr);

/* Write the pending records as a block now (nothing if none). */
BTP_API btp_status btp_log_writer_flush(btp_log_writer *w);

/*
 * For a writer that waits for events (input, a timer): flush the pending
 * block if it is due (flush_interval_ms old). *wait_ms (may be NULL) gets
 * the milliseconds until the pending block will be due, or UINT32_MAX when
 * nothing is pending or the interval is 0: wait at most that long, then
 * call again. Returns BTP_OK, BTP_E_INVALID_ARGUMENT (NULL w), or an output
 * error (as btp_log_writer_flush()).
 */
BTP_API btp_status btp_log_writer_poll(btp_log_writer *w, uint32_t *wait_ms);

/*
 * Flush, write the end block (which tells readers the log is complete) and
 * free the writer (always, even on error). NULL is accepted.
 * Returns BTP_OK or the first error the writer met.
 */
BTP_API btp_status btp_log_writer_close(btp_log_writer *w);

/*
 * btp_log_writer_close() with the log's last metadata, items[0..n) (as in
 * btp_log_writer_meta_items(); n = 0 is btp_log_writer_close()), stored in
 * the end block instead of a block of their own. A reader returns them
 * after every record, before it reports the end; a log cut before its end
 * block loses them with it, as it would their own block written last.
 * Invalid items are not stored: the log is then ended without them and
 * BTP_E_INVALID_ARGUMENT returned. The writer is freed in every case.
 */
BTP_API btp_status btp_log_writer_close_items(btp_log_writer *w, const btp_log_meta_item *items,
                                              size_t n);

/* Free the writer without writing an end block (a reader then reports the
 * log as truncated after its last block). NULL is accepted. Held blocks
 * (BTP_LOG_WRITE_HOLD) not taken are dropped. */
BTP_API void btp_log_writer_abandon(btp_log_writer *w);

/*
 * Held blocks (BTP_LOG_WRITE_HOLD). Every call that can finish a block
 * (alloc, free, trace, meta, flush, poll) may leave one or two held; each
 * holds a copy of its raw payload (at most block_bytes, or a metadata item),
 * so take them as they come. close() writes those not taken itself, after
 * its own last blocks: every block taken must have been written (or freed)
 * before close() is called.
 */
typedef struct btp_log_block btp_log_block;

/* The oldest held block, now the caller's, or NULL (none held, or NULL w).
 * Used like the writer's other calls (the writer's thread, or under the
 * caller's lock). */
BTP_API btp_log_block *btp_log_writer_take(btp_log_writer *w);

/*
 * Pack a taken block (zlib or LZMA2 at the writer's level unless
 * BTP_LOG_WRITE_NO_ZLIB, checksums), send it through the writer's sink and
 * free it. It touches neither the writer nor any other block, so it may run
 * in another thread while the writer is being used. Blocks must be written
 * in the order they were taken, one at a time, for the log to read.
 * Returns BTP_OK, BTP_E_INVALID_ARGUMENT (NULL b), BTP_E_OUT_OF_MEMORY,
 * BTP_E_ZLIB, BTP_E_LZMA, or the sink's error (the writer does not learn of it: stop
 * using it).
 */
BTP_API btp_status btp_log_block_write(btp_log_block *b);

/* Drop a taken block unwritten (NULL is accepted). */
BTP_API void btp_log_block_free(btp_log_block *b);

/* ------------------------------------------------------------------ */
/* Reader                                                               */
/* ------------------------------------------------------------------ */

enum {
    /* After a damaged block, report it once and go on with the next one. */
    BTP_LOG_KEEP_GOING = 1u << 0,
    /* btp_log_reader_next() also returns each metadata item as it meets it
     * (kind BTP_LOG_META), in file order among the records, so that a caller
     * can use and release metadata as it streams by (a long run of comments
     * never piles up). The items of one block come one per call; those of
     * the end block before BTP_END. */
    BTP_LOG_META_RECORDS = 1u << 1
};

/* Flags on a record (only ever set after damage, in keep-going mode). */
enum {
    BTP_LOG_REC_PTR_UNKNOWN = 1u << 0,  /* ptr is not known (0 given) */
    BTP_LOG_REC_STACK_UNKNOWN = 1u << 1  /* the stack is not known (no frames given) */
};

typedef struct btp_log_record {
    btp_log_kind kind;
    unsigned flags;          /* BTP_LOG_REC_* */
    uint64_t index;          /* 0-based position of the record in the log */
    uint64_t size;           /* ALLOC: requested size; FREE: the freed allocation's
                                size when `matched` */
    uint64_t ptr;            /* the pointer allocated or freed */
    int truncated;           /* TRACE: the stack was cut */
    const btp_frame *frames; /* ALLOC, TRACE: the stack, innermost first; valid until
                                the next call on the reader */
    size_t n_frames;
    uint32_t segment;        /* segment the record is in */
    uint32_t stack_id;       /* ALLOC, TRACE: stack number within the segment (equal
                                numbers in one segment = equal stacks, throughout a
                                read, whatever the file holds: segment numbers only
                                grow); FREE: the freed allocation's, when `matched` */
    int matched;             /* FREE: the log names the allocation it frees (a free
                                of a pointer it had not seen allocated, or forgot
                                past max_live, is not matched) */
    size_t meta;             /* META: the item's index for btp_log_reader_meta(); its
                                `index` is the number of records before it */
} btp_log_record;

typedef struct btp_log_reader btp_log_reader; /* opaque: it rebuilds the dictionary */

/* What the reader may spend on a log. A log that needs more fails with the
 * status named, which says which limit to raise; the defaults read every
 * log the writer makes with its default options and stop logs built to
 * explode (a few KB that claim gigabytes of records or tree nodes). */
typedef struct btp_log_reader_options {
    unsigned flags;         /* BTP_LOG_KEEP_GOING, BTP_LOG_META_RECORDS */
    uint32_t max_nodes;     /* call-tree nodes (and stacks) per segment (default 1<<20,
                               the writer's default; BTP_E_NODES_LIMIT) */
    uint32_t max_live;      /* live allocations tracked (default 1<<20, the writer's
                               default; BTP_E_LIVE_LIMIT) */
    uint32_t max_expansion; /* tree nodes built + records decoded + frames handed out,
                               per byte of log read, beyond a first 2^20 (default
                               8192: zlib logs need under 30, LZMA2 heap logs of
                               real programs a few thousand; 0: no limit;
                               BTP_E_EXPANSION_LIMIT) */
    uint64_t reserved[BTP_RESERVED_WORDS]; /* zero (see btpack.h) */
} btp_log_reader_options;

/* Fill *opt with the defaults (NULL: nothing happens). */
BTP_API void btp_log_reader_options_init(btp_log_reader_options *opt);

/*
 * Open the log buf[0..len) (it must stay valid and unchanged while the
 * reader is used) with the default options and `flags`, and read its file
 * header and the metadata blocks that come before the first record block.
 * Returns BTP_OK with *out set; BTP_E_BAD_MAGIC; BTP_E_BAD_LOG_VERSION (a
 * version, flag or limit this reader does not know); BTP_E_CHECKSUM (file
 * header damaged); BTP_E_TRUNCATED_FILE (shorter than a file header);
 * BTP_E_INVALID_ARGUMENT; BTP_E_OUT_OF_MEMORY. Errors in the leading
 * metadata blocks are not returned here: the first btp_log_reader_next()
 * reports them. With BTP_LOG_KEEP_GOING a damaged file header of a
 * version 2 log is not an error here: the reader takes the parameters from
 * the first sound block header, and the first btp_log_reader_next()
 * reports the damage (at offset 0) before going on.
 */
BTP_API btp_status btp_log_reader_open(btp_log_reader **out, const void *buf, size_t len,
                                       unsigned flags);

/* The same with options (NULL: the defaults). */
BTP_API btp_status btp_log_reader_open_opts(btp_log_reader **out, const void *buf, size_t len,
                                            const btp_log_reader_options *opt);

/* Where a streaming reader gets the log: read up to `cap` bytes into buf
 * and return how many (it may be fewer, e.g. what a pipe holds), 0 at the
 * end of the log, or -1 on an error (the reader then reports BTP_E_IO). */
typedef long (*btp_log_source_fn)(void *ctx, void *buf, size_t cap);

/* Open a log read through `read` (called as the reader needs bytes, never
 * for more than it needs to finish the block at hand). The reader holds at
 * most a block of the log at a time; btp_log_reader_seek_block() is not
 * available (BTP_E_UNSUPPORTED). Otherwise as btp_log_reader_open_opts(),
 * plus BTP_E_IO when the first read fails. */
BTP_API btp_status btp_log_reader_open_source(btp_log_reader **out, btp_log_source_fn read,
                                              void *ctx, const btp_log_reader_options *opt);

/* Free the reader. NULL is accepted. */
BTP_API void btp_log_reader_close(btp_log_reader *r);

/* The log's word size in bits. */
BTP_API unsigned btp_log_reader_word_bits(const btp_log_reader *r);

/*
 * The next record. Returns:
 *  BTP_OK     *rec is filled.
 *  BTP_END    the end block was reached (the log is complete).
 *  BTP_E_TRUNCATED_FILE  the log ends inside a block or has no end block:
 *             everything of every complete block was returned before.
 *  BTP_E_CHECKSUM  a block header or payload fails its CRC.
 *  BTP_E_CORRUPT   a block's contents are inconsistent (bad reference,
 *             counts that disagree, bad varint or CBF, ...).
 *  BTP_E_BAD_LOG_VERSION  a block kind or flag this reader does not know.
 *  BTP_E_NO_ZLIB   a compressed block, and this build has no zlib.
 *  BTP_E_ZLIB      zlib could not inflate a block.
 *  BTP_E_NO_LZMA   an LZMA2 block, and this build has no liblzma.
 *  BTP_E_LZMA      an LZMA2 block does not decode to its stated size.
 *  BTP_E_RECORDS_LOST  records are missing before the block at the error
 *             offset (a block cut out or damaged): btp_log_reader_last_loss()
 *             says which and where. With BTP_LOG_KEEP_GOING the next call
 *             returns the records after them.
 *  BTP_E_NODES_LIMIT, BTP_E_LIVE_LIMIT, BTP_E_EXPANSION_LIMIT,
 *  BTP_E_META_LIMIT  the log needs more than the reader's options allow
 *             (always final).
 *  BTP_E_IO   the source failed (streaming reader).
 *  BTP_E_OUT_OF_MEMORY.
 * The offset of the block at fault is given by btp_log_reader_error_offset().
 * No record of a damaged block is returned. Without BTP_LOG_KEEP_GOING
 * errors are sticky. With it, the next call goes on after the damaged block
 * (by the block's length when its header is sound, else by scanning for the
 * next sound block header), and records whose pointer or stack
 * depended on lost data carry BTP_LOG_REC_*_UNKNOWN flags. Every lost
 * record is reported: by BTP_E_RECORDS_LOST once the next sound block (or
 * the end block) says how many, or with BTP_E_TRUNCATED_FILE.
 * Memory is bounded by the reader's options and the format's block size
 * (header fields are checked against them before they size anything), plus
 * a cache of at most 2^20 expanded frames that makes repeated stacks cheap
 * and at most 64 MiB of metadata not yet released.
 */
BTP_API btp_status btp_log_reader_next(btp_log_reader *r, btp_log_record *rec);

/* Byte offset in the log of the block (or header) the last error is about. */
BTP_API uint64_t btp_log_reader_error_offset(const btp_log_reader *r);

/* Records known to be lost so far (in damaged blocks), from the counts in
 * the next sound block header. */
BTP_API uint64_t btp_log_reader_lost_records(const btp_log_reader *r);

/* Records the reader found lost. */
typedef struct btp_log_loss {
    uint64_t first_record; /* index of the first record lost */
    uint64_t records;      /* how many (when `known`) */
    int known;             /* 0: the log ends before a block header says how many */
    uint64_t from, to;     /* the byte range of the log they were in: [from, to) */
} btp_log_loss;

/* The loss the last BTP_E_RECORDS_LOST or BTP_E_TRUNCATED_FILE was about:
 * BTP_OK with *loss filled, BTP_END if none was reported yet. */
BTP_API btp_status btp_log_reader_last_loss(const btp_log_reader *r, btp_log_loss *loss);

/*
 * Go to block number `block` (0-based, counting every block in the file):
 * the next btp_log_reader_next() returns that block's first record (for a
 * metadata block, the first record after it). The reader starts over and
 * decodes the blocks before it without returning their records (the
 * dictionary and live allocations depend on them), so a seek costs a read
 * of the log up to the block. Statistics and lost-record counts restart.
 * Returns BTP_OK, BTP_END (no record block at or after it), or an error met
 * on the way (as btp_log_reader_next()). Clears a sticky error.
 */
BTP_API btp_status btp_log_reader_seek_block(btp_log_reader *r, uint64_t block);

/* Metadata seen so far, in file order (all of it once the reader reached
 * the end; a metadata block is seen at the latest when the first record
 * after it is returned). Returns BTP_OK with key (NUL-terminated) and data
 * (not NUL-terminated; both valid until the reader is closed or the item
 * released) and, if `record` is not NULL, the number of records written
 * before it; BTP_END when i is past the last one; BTP_E_INVALID_ARGUMENT
 * for a released item. */
BTP_API btp_status btp_log_reader_meta(const btp_log_reader *r, size_t i, const char **key,
                                       const void **data, size_t *len, uint64_t *record);

/* The caller is done with metadata items 0..n-1: the reader frees them
 * (indexes of later items do not change). A reader keeps at most 64 MiB
 * of metadata not released (BTP_E_META_LIMIT beyond), so a caller reading
 * a long log with much metadata releases what it has used. */
BTP_API void btp_log_reader_meta_release(btp_log_reader *r, size_t n);

/* Find metadata by key (the first with that key). BTP_OK or BTP_END. */
BTP_API btp_status btp_log_reader_meta_find(const btp_log_reader *r, const char *key,
                                            const void **data, size_t *len);

/* Sections of a record block, for statistics (spec/log.md). */
enum {
    BTP_LOG_SEC_DICT = 0, /* new stacks: parent node + CBF of new frames */
    BTP_LOG_SEC_TAGS,     /* one byte per record */
    BTP_LOG_SEC_STACKS,   /* stack references */
    BTP_LOG_SEC_SIZES,    /* allocation sizes */
    BTP_LOG_SEC_PTRS,     /* allocation pointer deltas (and freed-pointer ages, large
                             free ranks) */
    BTP_LOG_SEC_FREES,    /* free ranks and literal pointers */
    BTP_LOG_SEC_COUNT
};

typedef struct btp_log_stats {
    uint64_t file_bytes;      /* bytes read so far (header + blocks) */
    uint64_t header_bytes;    /* file header + block headers */
    uint64_t meta_bytes;      /* stored bytes of metadata blocks (and of an end block
                                 holding metadata) */
    uint64_t record_bytes;    /* stored bytes of record blocks */
    uint64_t raw_section_bytes[BTP_LOG_SEC_COUNT]; /* before zlib */
    uint64_t blocks, record_blocks, segments;
    uint64_t records, allocs, frees, traces;
    uint64_t stacks, nodes;   /* summed over segments */
} btp_log_stats;

/* Statistics of what was read so far. */
BTP_API void btp_log_reader_stats(const btp_log_reader *r, btp_log_stats *st);

/* 1 when buf[0..len) starts with the trace log magic (len >= 8), else 0.
 * For telling a log from other input; opening it checks the rest. */
BTP_API int btp_log_probe(const void *buf, size_t len);

/* Whether this build can read and write zlib-compressed blocks. */
BTP_API int btp_log_have_zlib(void);

/* Whether this build can read and write LZMA2-compressed blocks (liblzma). */
BTP_API int btp_log_have_lzma(void);

#ifdef __cplusplus
}
#endif

#endif
