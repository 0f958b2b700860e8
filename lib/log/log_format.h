/* Trace log byte layout shared by the writer and the reader (spec/log.md). */
#ifndef BTPACK_LOG_FORMAT_H
#define BTPACK_LOG_FORMAT_H

#include <btpack/log.h>

#define LOG_FILE_HEADER_SIZE 32u
#define LOG_VERSION 2u                 /* what the writer writes */
#define LOG_BLOCK_HEADER_SIZE 80u      /* version 2 */
#define LOG_BLOCK_HEADER_SIZE_V1 72u   /* version 1 (read only) */
#define LOG_BLOCK_HEADER_MAX 80u

extern const uint8_t btp_log_magic[8];  /* file magic */
extern const uint8_t btp_log_sync[4];   /* version 2 block sync marker "BTL2" */
extern const uint8_t btp_log_sync_v1[4]; /* version 1 block sync marker "BTLB" */

/* Block header size and sync marker of a log version (1 or 2). */
static inline size_t log_block_header_size(unsigned version)
{
    return version == 1 ? LOG_BLOCK_HEADER_SIZE_V1 : LOG_BLOCK_HEADER_SIZE;
}

enum {
    LOG_BLOCK_META = 1,
    LOG_BLOCK_RECORDS = 2,
    LOG_BLOCK_END = 3
};
enum {
    LOG_BF_ZLIB = 1u << 0,          /* payload is a zlib stream */
    LOG_BF_SEGMENT_START = 1u << 1, /* fresh dictionary and live table */
    LOG_BF_MODEL2 = 1u << 2,        /* RECORDS: stack 0 = the next new one, PTRS
                                       range-coded (log_rc.h) */
    LOG_BF_MODEL3 = 1u << 3,        /* RECORDS, with MODEL2: the next-chunk bin field
                                       and relative free ranks */
    LOG_BF_MODEL4 = 1u << 4,        /* RECORDS, with MODEL3: DICT range-coded
                                       (log_model4.h) */
    LOG_BF_M4_TAGS = 1u << 5,       /* with MODEL4: TAGS range-coded */
    LOG_BF_LZMA = 1u << 6,          /* payload is a raw LZMA2 stream (version 2 only) */
    LOG_BF_ITEMS = 1u << 7,         /* META: several metadata items; END: metadata items
                                       after its counts (version 2) */
    LOG_BF_PACKED = LOG_BF_ZLIB | LOG_BF_LZMA, /* either compression: at most one */
    LOG_BF_KNOWN = LOG_BF_ZLIB | LOG_BF_SEGMENT_START | LOG_BF_MODEL2 | LOG_BF_MODEL3 |
                   LOG_BF_MODEL4 | LOG_BF_M4_TAGS | LOG_BF_LZMA | LOG_BF_ITEMS
};

#define LOG_M3_BIN_DEPTH 120u /* MODEL3: freed pointers remembered per size class */

/* Record tags (one byte per record, spec/log.md "Record tags"). */
enum {
    TAG_FREE = 1u << 0,
    TAG_SIZE_SAME = 1u << 1, /* alloc: same size as the last alloc of this stack in the block */
    TAG_BIN_SHIFT = 2,       /* alloc: bits 2..7: 0 = pointer delta, k = bin entry k-1 */
    TAG_BIN_MAX = 62,        /* field 63 is for plain traces: */
    TAG_TRACE = 0xFC,        /* a plain backtrace */
    TAG_TRACE_TRUNC = 0xFE,  /* a plain backtrace, truncated */
    TAG_RANK_SHIFT = 1,      /* free: bits 1..7: 0 = literal, k = rank k-1, 127 = escape */
    TAG_RANK_ESC = 127,
    /* MODEL3 */
    TAG_M3_BINS = 16,        /* alloc: bin fields 1..16 are bin entries 0..15; */
    TAG_BIN_DEEP = 17,       /* 17: bin entry 16 + a number from PTRS; */
    TAG_BIN_NEXT = 18,       /* 18: at the end of the last chunk carved; */
    TAG_BIN_FREED = 19,      /* 19: a pointer freed earlier in the block (age in PTRS);
                                20..62 unused */
    TAG_M3_RANKS = 62,       /* free: rank fields 1..62 are ranks 0..61; */
    TAG_M3_RANK_ESC = 63,    /* 63: rank 62 + a number from PTRS; */
    TAG_M3_REL0 = 95,        /* 64..126: rank = prediction + field - 95 (-31..31); */
    TAG_M3_REL_MAX = 31      /* 127: prediction + a signed number from PTRS */
};

/* Model parameters fixed by the format. */
#define LOG_BIN_DEPTH 16u    /* freed pointers remembered per size class (MODEL2) */
#define LOG_BIN_DEPTH_MAX LOG_M3_BIN_DEPTH
#define LOG_BIN_CLASSES 1024u /* size classes remembered per block */
/* MODEL4: records in a block at most (range-coded tags, unlike a byte per
 * record, do not bound a block's records) */
#define LOG_M4_MAX_RECORDS (1u << 20)
#define LOG_FREED_BITS 13u    /* MODEL3: the last 2^13 freed pointers are remembered */
#define LOG_FREED_RING (1u << LOG_FREED_BITS)

typedef struct log_file_header {
    unsigned version, word_bits, flags;
    uint32_t max_nodes, max_live;
} log_file_header;

typedef struct log_block_header {
    unsigned version;       /* 1 or 2: the layout it was read with */
    unsigned kind, flags;
    uint32_t stored_len, raw_len;
    uint32_t segment;
    uint64_t block_index;
    uint64_t first_record;
    uint32_t records;
    uint32_t stacks_before, stacks_added;
    uint32_t nodes_before, nodes_added;
    uint32_t live_before;
    uint32_t payload_crc;
    log_file_header file;   /* version 2: the file header's parameters, so that
                               a log whose file header is damaged can be read */
} log_block_header;

void log_file_header_pack(uint8_t out[LOG_FILE_HEADER_SIZE], const log_file_header *h);
/* BTP_OK, BTP_E_BAD_MAGIC, BTP_E_CHECKSUM, BTP_E_BAD_LOG_VERSION. */
btp_status log_file_header_parse(const uint8_t in[LOG_FILE_HEADER_SIZE], log_file_header *h);

/* A version 2 block header (h->file: the file's parameters). */
void log_block_header_pack(uint8_t out[LOG_BLOCK_HEADER_SIZE], const log_block_header *h);
/* The block header of a log of `version` at in[0..log_block_header_size()).
 * BTP_OK; BTP_E_CHECKSUM (bad sync or header CRC); BTP_E_BAD_LOG_VERSION
 * (unknown kind or flags, or version 2 file parameters no reader takes);
 * BTP_E_CORRUPT (lengths beyond the limits). */
btp_status log_block_header_parse(const uint8_t *in, unsigned version, log_block_header *h);

/* Size class of an allocation size for the freed-pointer bins. */
static inline uint64_t log_size_class(uint64_t size, unsigned word_bits)
{
    uint64_t s = size + word_bits / 8 + 15;
    return s < size ? UINT64_MAX >> 4 : s >> 4;
}

/* Chunk the allocator carves for `size` bytes: the size plus a word of
 * header, rounded up to 16, at least 4 words (glibc malloc's on 32- and
 * 64-bit). MODEL3 predicts the next new chunk to start where the last one
 * carved ends; a wrong guess only costs bits, so other allocators are fine. */
static inline uint64_t log_chunk_size(uint64_t size, unsigned word_bits)
{
    uint64_t c = (size + word_bits / 8 + 15) & ~(uint64_t)15;
    return c < word_bits / 2 ? word_bits / 2 : c;
}

/* ---- growable byte buffer and LEB128 ---------------------------------- */
typedef struct log_buf {
    uint8_t *p;
    size_t len, cap;
    int oom; /* sticky */
} log_buf;

int log_buf_reserve(log_buf *b, size_t extra);
void log_buf_put(log_buf *b, const void *data, size_t len);
static inline void log_buf_byte(log_buf *b, uint8_t v)
{
    if (b->len < b->cap || log_buf_reserve(b, 1))
        b->p[b->len++] = v;
}
static inline void log_buf_varint(log_buf *b, uint64_t v)
{
    if (b->cap - b->len < 10 && !log_buf_reserve(b, 10))
        return;
    while (v >= 0x80) {
        b->p[b->len++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    b->p[b->len++] = (uint8_t)v;
}
void log_buf_free(log_buf *b);

static inline uint64_t log_zigzag(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}
static inline int64_t log_unzigzag(uint64_t v)
{
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/* Bounded reader with a sticky error flag. */
typedef struct log_rd {
    const uint8_t *p;
    size_t len, pos;
    int bad;
} log_rd;

static inline uint64_t log_rd_varint(log_rd *r)
{
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        if (r->pos >= r->len) {
            r->bad = 1;
            return 0;
        }
        uint8_t b = r->p[r->pos++];
        if (shift == 63 && b > 1) { /* more than 64 bits */
            r->bad = 1;
            return 0;
        }
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return v;
    }
    r->bad = 1;
    return 0;
}
static inline int log_rd_byte(log_rd *r)
{
    if (r->pos >= r->len) {
        r->bad = 1;
        return 0;
    }
    return r->p[r->pos++];
}

/* zlib wrappers (BTP_E_NO_ZLIB / BTP_E_UNSUPPORTED without zlib). */
btp_status log_deflate(const uint8_t *in, size_t len, int level, log_buf *out);
btp_status log_inflate(const uint8_t *in, size_t len, uint8_t *out, size_t raw_len);

/* LZMA2 (spec/log.md "Block header"): log_lzma_pack compresses at preset
 * level 1..9 into out and returns BTP_OK with out->len = 0 when the result
 * would not be smaller than the input (the block is then stored);
 * log_lzma_unpack decodes a stream that must give exactly raw_len bytes and
 * end exactly at len (else BTP_E_LZMA). BTP_E_UNSUPPORTED / BTP_E_NO_LZMA
 * without liblzma. */
btp_status log_lzma_pack(const uint8_t *in, size_t len, int level, log_buf *out);
btp_status log_lzma_unpack(const uint8_t *in, size_t len, uint8_t *out, size_t raw_len);

#endif
