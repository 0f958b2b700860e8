/* Trace log writer (include/btpack/log.h, spec/log.md). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "btp_config.h"
#include "common/mix64.h"
#include "common/reserved.h"
#include "calltree.h"
#include "crc32.h"
#include "log_format.h"
#include "log_model.h"
#include "log_model4.h"
#include "log_rc.h"
#include "table_alloc.h"

/* Open-addressing map pointer -> live-table slot of its newest live
 * allocation (backward-shift deletion, so no tombstones pile up). Sixteen
 * bytes a slot, four to a cache line: a free costs one miss here, not a
 * search of the live table. */
typedef struct ptr_slot {
    uint64_t ptr;
    uint32_t live; /* live-table slot + 1; 0: empty */
    uint32_t pad;
} ptr_slot;

/* Stacks seen lately, by a hash of their frames: a stack that recurs is
 * found by checking its path in the call tree (one node per frame, the
 * nodes of a busy stack in cache) instead of a child-table probe per frame.
 * Direct-mapped; an entry is only a hint, checked before use. */
#define STACK_CACHE 16384u
typedef struct stack_hint {
    uint64_t hash;
    uint32_t stack1; /* stack number + 1; 0: empty */
    uint32_t n;
} stack_hint;

/* The addresses of the segment's stacks made of return addresses but for
 * the first frame, which may be a pc (a heap tracer's stacks, nearly all),
 * each stack's back to back: a hint is checked by one pass over them
 * instead of by its path in the call tree, a node loaded, its value and
 * kind compared and its parent's index the next load, frame by frame
 * (python3's allocations: 14 frames, 213 instructions a check against
 * about 130). At most FLAT_MAX addresses a segment (python3's and cc1's
 * runs: 0.1 million); a stack past them is checked in the tree. */
#define FLAT_MAX (1u << 21) /* 16 MiB */

/* A finished block held for btp_log_block_write() (BTP_LOG_WRITE_HOLD):
 * its header but the fields packing sets, its raw payload, and where it
 * goes, so that it is written without the writer. */
struct btp_log_block {
    btp_log_block *next;
    btp_log_sink_fn sink;
    void *ctx;
    int fd;                  /* the fd sink's: ctx points here */
    unsigned flags;          /* the writer's BTP_LOG_WRITE_* */
    int zlib_level;
    log_block_header h;
    size_t len;
    uint8_t raw[];
};

struct btp_log_writer {
    btp_log_sink_fn sink;
    void *ctx;
    int fd;
    btp_log_writer_options opt;
    log_file_header fh;      /* also stated in every block header */
    btp_status error; /* sticky */
    calltree tree;
    log_model model;
    ptr_slot *map;
    uint32_t map_cap, map_used;
    uint64_t *freed_at;      /* by pointer hash: 1 + its last free number, 0 none */
    uint32_t map_moved;      /* live.moved the map's slots are of */
    log_buf sec[BTP_LOG_SEC_COUNT];
    log_buf raw, packed;
    log_rc_enc ptr_enc;      /* PTRS: range-coded deltas */
    log_rc_model ptr_model;
    log_rc_enc dict_enc, tag_enc; /* MODEL4: DICT and range-coded TAGS */
    log_m4 m4;
    /* MODEL4's range-coded TAGS, kept beside the byte form in sec[]: a
     * block stores whichever is smaller (a program that repeats long runs
     * of records gives deflate matches no context model sees) */
    log_buf rc_tags, scratch;
    /* blocks left before the range-coded TAGS are tried again after a block
     * stored the byte form: coding them costs the writer more, so a log
     * that deflates better codes them only now and then, to notice a
     * change */
    unsigned rc_tags_off;
    stack_hint *hints;       /* STACK_CACHE */
    uint64_t *flat;          /* FLAT_MAX: stacks' return addresses (stack_flat) */
    uint32_t flat_n, flat_cap;
    uint32_t *flat_at;       /* stack number -> (its start in flat + 1) * 2 + first is a pc; 0: none */
    uint32_t flat_at_cap;    /* entries of flat_at (zeroed past n_stacks) */
    uint64_t seq;            /* allocations so far in the segment */
    uint64_t records;        /* records so far in the log */
    uint64_t block_index;
    uint32_t segment;
    int segment_start;       /* the next record block starts a segment */
    uint32_t block_records;
    uint32_t stacks_before, nodes_before, live_before;
    uint64_t block_t0;       /* ms clock when the pending block got its first record */
    btp_log_block *held, **held_end; /* BTP_LOG_WRITE_HOLD: finished, oldest first */
};

/* A millisecond clock for flush_interval_ms: the coarse clock costs a few
 * nanoseconds per record, and its resolution (a few ms) is plenty. */
static uint64_t now_ms(void)
{
    struct timespec ts = {0, 0};
#ifdef CLOCK_MONOTONIC_COARSE
    if (clock_gettime(CLOCK_MONOTONIC_COARSE, &ts) == 0)
        return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
#endif
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Slots of the writer's index of the freed-pointer ring: a pointer's slot
 * holds its last free (a collision forgets the older, which then costs a
 * delta: the index only finds, the ring decides). */
#define FREED_AT_SLOTS (2u * LOG_FREED_RING)

/* Slot of a pointer in the freed-pointer index (FREED_AT_SLOTS). The page
 * (4 KiB) is hashed and the offset in it kept, so that the pointers of one
 * page never take each other's slot. */
#define PTR_PAGE_BITS 12
static uint64_t ptr_hash(uint64_t p)
{
    return mix64(p >> PTR_PAGE_BITS) << (PTR_PAGE_BITS - 4) ^
           ((p >> 4) & ((1u << (PTR_PAGE_BITS - 4)) - 1));
}

/* Home slot of a pointer in the map: a hash of all its bits above the
 * alignment. (The map used ptr_hash, for locality: a page's pointers in
 * one run of 256 slots. But linear probing then runs through whole pages'
 * runs wherever two busy pages share slots: 29 slots a lookup on python3's
 * 4 million allocations, against 2.3 this way. The one random line a
 * lookup touches is what btp_log_writer_prefetch() fetches ahead.) */
static uint64_t map_home(uint64_t p)
{
    return ptr_home(p);
}

static ptr_slot *map_lookup(btp_log_writer *w, uint64_t ptr)
{
    uint32_t mask = w->map_cap - 1;
    for (uint32_t i = (uint32_t)map_home(ptr) & mask;; i = (i + 1) & mask) {
        if (!w->map[i].live || w->map[i].ptr == ptr)
            return &w->map[i];
    }
}

static void map_delete(btp_log_writer *w, ptr_slot *s)
{
    uint32_t mask = w->map_cap - 1;
    uint32_t i = (uint32_t)(s - w->map), j = i;
    w->map[i].live = 0;
    w->map_used--;
    for (;;) {
        j = (j + 1) & mask;
        if (!w->map[j].live)
            return;
        uint32_t home = (uint32_t)map_home(w->map[j].ptr) & mask;
        /* move j back to i if its home is not in (i, j] */
        if ((j > i && (home <= i || home > j)) || (j < i && (home <= i && home > j))) {
            w->map[i] = w->map[j];
            w->map[j].live = 0;
            i = j;
        }
    }
}

/* Room for one more pointer at most half full. */
static btp_status map_room(btp_log_writer *w)
{
    if ((uint64_t)(w->map_used + 1) * 2 <= w->map_cap)
        return BTP_OK;
    uint32_t oc = w->map_cap, nc = oc ? oc * 2 : 1024;
    ptr_slot *old = w->map, *nm = nc > oc ? log_table_calloc(nc, sizeof *nm) : NULL;
    if (!nm)
        return BTP_E_OUT_OF_MEMORY;
    w->map = nm;
    w->map_cap = nc;
    for (uint32_t i = 0; i < oc; i++)
        if (old[i].live)
            *map_lookup(w, old[i].ptr) = old[i];
    free(old);
    return BTP_OK;
}

static btp_status map_set(btp_log_writer *w, uint64_t ptr, uint32_t slot)
{
    btp_status st = map_room(w);
    if (st != BTP_OK)
        return st;
    ptr_slot *s = map_lookup(w, ptr);
    if (!s->live)
        w->map_used++;
    *s = (ptr_slot){ptr, slot + 1, 0};
    return BTP_OK;
}

static void map_clear(btp_log_writer *w)
{
    if (w->map)
        memset(w->map, 0, (size_t)w->map_cap * sizeof *w->map);
    w->map_used = 0;
}

/* The live table moved its entries (a compaction): map every pointer to
 * its entry's new slot, the newest allocation of a pointer winning. */
static btp_status map_renew(btp_log_writer *w)
{
    const live_table *L = &w->model.live;
    map_clear(w);
    w->map_moved = L->moved;
    for (uint32_t i = L->first; i < L->end; i++) {
        if (!L->e[i].alive)
            continue;
        btp_status st = map_set(w, L->e[i].ptr, i);
        if (st != BTP_OK)
            return st;
    }
    return BTP_OK;
}

void btp_log_writer_options_init(btp_log_writer_options *opt, unsigned word_bits)
{
    if (!opt)
        return;
    memset(opt, 0, sizeof *opt);
    opt->word_bits = word_bits;
    opt->zlib_level = 9;
    opt->block_bytes = 128u << 10;
    opt->max_nodes = 1u << 20;
    opt->max_live = 1u << 20;
    opt->flush_interval_ms = 1000;
}

static btp_status emit(btp_log_writer *w, const void *data, size_t len)
{
    btp_status st = w->sink(w->ctx, data, len);
    if (st != BTP_OK)
        w->error = st;
    return st;
}

/* Compress in[0..len) with the compressor `flags` choose (LZMA2 or
 * deflate) at `level` into out; with LZMA2 out->len is 0 when the result
 * would not be smaller. */
static btp_status compress(unsigned flags, int level, const uint8_t *in, size_t len, log_buf *out)
{
    return (flags & BTP_LOG_WRITE_LZMA) ? log_lzma_pack(in, len, level, out)
                                        : log_deflate(in, len, level, out);
}

/* Pack one block and send it: header then payload (raw, or deflated or
 * LZMA2-compressed when smaller). h has every field but those set here. */
static btp_status pack_block(btp_log_sink_fn sink, void *ctx, unsigned flags, int zlib_level,
                             log_buf *packed, log_block_header *h, const uint8_t *raw,
                             size_t raw_len)
{
    const uint8_t *stored = raw;
    size_t stored_len = raw_len;
    if (!(flags & BTP_LOG_WRITE_NO_ZLIB) && raw_len > 0) {
        btp_status st = compress(flags, zlib_level, raw, raw_len, packed);
        if (st != BTP_OK)
            return st;
        if (packed->len > 0 && packed->len < raw_len) {
            stored = packed->p;
            stored_len = packed->len;
            h->flags |= (flags & BTP_LOG_WRITE_LZMA) ? LOG_BF_LZMA : LOG_BF_ZLIB;
        }
    }
    h->stored_len = (uint32_t)stored_len;
    h->raw_len = (uint32_t)raw_len;
    h->payload_crc = btp_crc32_update(0, stored, stored_len);
    uint8_t hb[LOG_BLOCK_HEADER_SIZE];
    log_block_header_pack(hb, h);
    btp_status st = sink(ctx, hb, sizeof hb);
    if (st == BTP_OK && stored_len)
        st = sink(ctx, stored, stored_len);
    return st;
}

static btp_status fd_sink(void *ctx, const void *data, size_t len);

/* Keep a finished block (BTP_LOG_WRITE_HOLD) for btp_log_writer_take(). */
static btp_status hold_block(btp_log_writer *w, const log_block_header *h, const uint8_t *raw,
                             size_t raw_len)
{
    btp_log_block *b = malloc(sizeof *b + raw_len);
    if (!b)
        return w->error = BTP_E_OUT_OF_MEMORY;
    b->next = NULL;
    b->sink = w->sink;
    b->fd = w->fd;
    b->ctx = w->sink == fd_sink ? (void *)&b->fd : w->ctx;
    b->flags = w->opt.flags;
    b->zlib_level = w->opt.zlib_level;
    b->h = *h;
    b->len = raw_len;
    if (raw_len)
        memcpy(b->raw, raw, raw_len);
    *w->held_end = b;
    w->held_end = &b->next;
    return BTP_OK;
}

/* Write one block (or hold it, BTP_LOG_WRITE_HOLD). */
static btp_status write_block(btp_log_writer *w, log_block_header *h, const uint8_t *raw,
                              size_t raw_len)
{
    h->file = w->fh;
    h->segment = w->segment;
    h->block_index = w->block_index++;
    if (w->opt.flags & BTP_LOG_WRITE_HOLD)
        return hold_block(w, h, raw, raw_len);
    btp_status st = pack_block(w->sink, w->ctx, w->opt.flags, w->opt.zlib_level, &w->packed, h,
                               raw, raw_len);
    if (st != BTP_OK)
        w->error = st;
    return st;
}

btp_log_block *btp_log_writer_take(btp_log_writer *w)
{
    btp_log_block *b = w ? w->held : NULL;
    if (b) {
        w->held = b->next;
        if (!w->held)
            w->held_end = &w->held;
        b->next = NULL;
    }
    return b;
}

btp_status btp_log_block_write(btp_log_block *b)
{
    if (!b)
        return BTP_E_INVALID_ARGUMENT;
    log_buf packed = {0};
    btp_status st = pack_block(b->sink, b->ctx, b->flags, b->zlib_level, &packed, &b->h, b->raw,
                               b->len);
    log_buf_free(&packed);
    free(b);
    return st;
}

void btp_log_block_free(btp_log_block *b)
{
    free(b);
}

static size_t pending_bytes(const btp_log_writer *w)
{
    size_t n = 0;
    for (int i = 0; i < BTP_LOG_SEC_COUNT; i++)
        n += w->sec[i].len;
    return n;
}

static void begin_block(btp_log_writer *w)
{
    for (int i = 0; i < BTP_LOG_SEC_COUNT; i++)
        w->sec[i].len = 0;
    w->block_records = 0;
    w->stacks_before = w->tree.n_stacks;
    w->nodes_before = w->tree.n_nodes;
    w->live_before = w->model.live.count;
    log_model_block(&w->model);
    w->model.block_seq0 = w->seq;
    log_rc_enc_init(&w->ptr_enc);
    log_rc_model_init(&w->ptr_model);
    log_rc_enc_init(&w->dict_enc);
    log_rc_enc_init(&w->tag_enc);
    w->rc_tags.len = 0;
    log_m4_block(&w->m4);
}

/* Whether a section's range-coded form (rc) is smaller than its byte form
 * (bytes) will be after the block's compressor (deflate, or LZMA2, which
 * finds far more of a heap log's long repeats). It is judged on the first
 * RC_SAMPLE bytes of the byte form, at the writer's level (zlib's fastest
 * level misjudges long repeats, which are where the byte form wins), so
 * that choosing costs a small part of packing the block. */
#define RC_SAMPLE ((size_t)128 << 10)
static int rc_smaller(btp_log_writer *w, const log_buf *rc, const log_buf *bytes)
{
    if (rc->len >= bytes->len)
        return 0;
    if (w->opt.flags & BTP_LOG_WRITE_NO_ZLIB)
        return 1;
    size_t n = bytes->len < RC_SAMPLE ? bytes->len : RC_SAMPLE;
    btp_status st = compress(w->opt.flags, w->opt.zlib_level, bytes->p, n, &w->scratch);
    if (st != BTP_OK)
        return 1; /* no estimate: the smaller raw form */
    size_t packed = w->scratch.len ? w->scratch.len : n; /* LZMA2: 0 = not smaller */
    return (uint64_t)rc->len * n < (uint64_t)packed * bytes->len;
}

#define RC_PAUSE 7u
#define RC_PAUSE_RECORDS 4096u

btp_status btp_log_writer_flush(btp_log_writer *w)
{
    if (!w)
        return BTP_E_INVALID_ARGUMENT;
    if (w->error)
        return w->error;
    if (w->block_records == 0)
        return BTP_OK;
    log_buf *raw = &w->raw;
    raw->len = 0;
    log_rc_enc_finish(&w->ptr_enc, &w->sec[BTP_LOG_SEC_PTRS]);
    log_rc_enc_finish(&w->dict_enc, &w->sec[BTP_LOG_SEC_DICT]);
    log_rc_enc_finish(&w->tag_enc, &w->rc_tags);
    if (w->rc_tags.oom)
        return w->error = BTP_E_OUT_OF_MEMORY;
    const int tags_rc = !w->rc_tags_off && rc_smaller(w, &w->rc_tags, &w->sec[BTP_LOG_SEC_TAGS]);
    /* after a block of some size that stored the bytes, RC_PAUSE blocks
     * without (a small block's few tags tell little) */
    w->rc_tags_off = w->rc_tags_off                                 ? w->rc_tags_off - 1
                     : tags_rc || w->block_records < RC_PAUSE_RECORDS ? 0
                                                                      : RC_PAUSE;
    for (int i = 0; i < BTP_LOG_SEC_COUNT; i++) {
        const log_buf *b = i == BTP_LOG_SEC_TAGS && tags_rc ? &w->rc_tags : &w->sec[i];
        log_buf_varint(raw, b->len);
        log_buf_put(raw, b->p, b->len);
        if (w->sec[i].oom)
            return w->error = BTP_E_OUT_OF_MEMORY;
    }
    if (raw->oom)
        return w->error = BTP_E_OUT_OF_MEMORY;
    log_block_header h = {0};
    h.kind = LOG_BLOCK_RECORDS;
    h.flags = LOG_BF_MODEL2 | LOG_BF_MODEL3 | LOG_BF_MODEL4 | (tags_rc ? LOG_BF_M4_TAGS : 0) |
              (w->segment_start ? LOG_BF_SEGMENT_START : 0);
    h.first_record = w->records - w->block_records;
    h.records = w->block_records;
    h.stacks_before = w->stacks_before;
    h.stacks_added = w->tree.n_stacks - w->stacks_before;
    h.nodes_before = w->nodes_before;
    h.nodes_added = w->tree.n_nodes - w->nodes_before;
    h.live_before = w->live_before;
    btp_status st = write_block(w, &h, raw->p, raw->len);
    if (st != BTP_OK)
        return st;
    w->segment_start = 0;
    begin_block(w);
    return BTP_OK;
}

static btp_status fd_sink(void *ctx, const void *data, size_t len)
{
    int fd = *(const int *)ctx;
    const uint8_t *p = data;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return BTP_E_IO;
        }
        if (n == 0)
            return BTP_E_IO;
        p += n;
        len -= (size_t)n;
    }
    return BTP_OK;
}

static btp_status writer_open(btp_log_writer **out, btp_log_sink_fn sink, void *ctx, int fd,
                              const btp_log_writer_options *opt)
{
    if (!out)
        return BTP_E_INVALID_ARGUMENT;
    *out = NULL;
    btp_log_writer_options o;
    if (opt)
        o = *opt;
    else
        btp_log_writer_options_init(&o, 64);
    if (!btp_reserved_clear(o.reserved))
        return BTP_E_UNSUPPORTED;
    if (!sink || !btp_word_bits_valid(o.word_bits) || o.max_live == 0 ||
        o.max_live > BTP_LOG_MAX_LIVE_LIMIT || o.max_nodes < 2 ||
        o.max_nodes > BTP_LOG_MAX_NODES_LIMIT || o.block_bytes == 0 ||
        o.block_bytes > BTP_LOG_MAX_BLOCK / 2 || o.zlib_level < 1 || o.zlib_level > 9 ||
        (o.flags & ~(unsigned)(BTP_LOG_WRITE_NO_ZLIB | BTP_LOG_WRITE_HOLD |
                               BTP_LOG_WRITE_LZMA)) ||
        (o.flags & (BTP_LOG_WRITE_NO_ZLIB | BTP_LOG_WRITE_LZMA)) ==
            (BTP_LOG_WRITE_NO_ZLIB | BTP_LOG_WRITE_LZMA))
        return BTP_E_INVALID_ARGUMENT;
    if (!(o.flags & BTP_LOG_WRITE_NO_ZLIB) &&
        !((o.flags & BTP_LOG_WRITE_LZMA) ? BTP_HAVE_LZMA : BTP_HAVE_ZLIB))
        return BTP_E_UNSUPPORTED;
    btp_log_writer *w = calloc(1, sizeof *w);
    if (!w)
        return BTP_E_OUT_OF_MEMORY;
    w->sink = sink;
    w->fd = fd;
    w->ctx = fd >= 0 ? &w->fd : ctx; /* the fd sink reads the fd from the writer */
    w->opt = o;
    w->segment_start = 1;
    w->held_end = &w->held;
    btp_status st = calltree_init(&w->tree, 1);
    if (st == BTP_OK)
        st = log_model_init(&w->model, o.word_bits, o.max_live);
    if (st == BTP_OK)
        st = log_m4_init(&w->m4);
    if (st == BTP_OK && !(w->freed_at = log_table_calloc(FREED_AT_SLOTS, sizeof *w->freed_at)))
        st = BTP_E_OUT_OF_MEMORY;
    if (st == BTP_OK && !(w->hints = log_table_calloc(STACK_CACHE, sizeof *w->hints)))
        st = BTP_E_OUT_OF_MEMORY;
    if (st == BTP_OK) {
        begin_block(w);
        w->fh = (log_file_header){LOG_VERSION, o.word_bits, 0, o.max_nodes, o.max_live};
        uint8_t hb[LOG_FILE_HEADER_SIZE];
        log_file_header_pack(hb, &w->fh);
        st = emit(w, hb, sizeof hb);
    }
    if (st != BTP_OK) {
        btp_log_writer_abandon(w);
        return st;
    }
    *out = w;
    return BTP_OK;
}

btp_status btp_log_writer_open(btp_log_writer **out, btp_log_sink_fn sink, void *ctx,
                               const btp_log_writer_options *opt)
{
    return writer_open(out, sink, ctx, -1, opt);
}

btp_status btp_log_writer_open_fd(btp_log_writer **out, int fd, const btp_log_writer_options *opt)
{
    if (fd < 0) {
        if (out)
            *out = NULL;
        return BTP_E_INVALID_ARGUMENT;
    }
    return writer_open(out, fd_sink, NULL, fd, opt);
}

/* Whether items[0..n) may be stored in one block (spec/log.md, "META
 * payload"); n = 0 is allowed here (an end block without items). Their
 * data is at most half a block's limit, as one item's: the keys and
 * lengths add at most 64 x 265 bytes. */
static int items_valid(const btp_log_meta_item *items, size_t n)
{
    if (n > BTP_LOG_MAX_META_ITEMS || (n && !items))
        return 0;
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        const btp_log_meta_item *it = &items[i];
        if (!it->key || (!it->data && it->len))
            return 0;
        size_t klen = strnlen(it->key, 256);
        if (klen == 0 || klen > 255 || it->len > BTP_LOG_MAX_BLOCK / 2 - total)
            return 0;
        total += it->len;
    }
    return 1;
}

/* Append items[0..n) to raw: `varint key_len, key, varint data_len, data`
 * each, back to back. */
static void put_items(log_buf *raw, const btp_log_meta_item *items, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        size_t klen = strlen(items[i].key);
        log_buf_varint(raw, klen);
        log_buf_put(raw, items[i].key, klen);
        log_buf_varint(raw, items[i].len);
        log_buf_put(raw, items[i].data, items[i].len);
    }
}

btp_status btp_log_writer_meta_items(btp_log_writer *w, const btp_log_meta_item *items, size_t n)
{
    if (!w || n == 0 || !items_valid(items, n))
        return BTP_E_INVALID_ARGUMENT;
    btp_status st = btp_log_writer_flush(w);
    if (st != BTP_OK)
        return st;
    log_buf *raw = &w->raw;
    raw->len = 0;
    put_items(raw, items, n);
    if (raw->oom)
        return w->error = BTP_E_OUT_OF_MEMORY;
    log_block_header h = {0};
    h.kind = LOG_BLOCK_META;
    /* one item: the block every reader reads */
    h.flags = n > 1 ? LOG_BF_ITEMS : 0;
    h.first_record = w->records;
    return write_block(w, &h, raw->p, raw->len);
}

btp_status btp_log_writer_meta(btp_log_writer *w, const char *key, const void *data, size_t len)
{
    btp_log_meta_item it = {key, data, len};
    return btp_log_writer_meta_items(w, &it, 1);
}

/* Start a new segment: fresh dictionary and live table. */
static btp_status new_segment(btp_log_writer *w)
{
    btp_status st = btp_log_writer_flush(w);
    if (st != BTP_OK)
        return st;
    calltree_reset(&w->tree);
    memset(w->hints, 0, STACK_CACHE * sizeof *w->hints);
    if (w->flat_at)
        memset(w->flat_at, 0, (size_t)w->flat_at_cap * sizeof *w->flat_at);
    w->flat_n = 0;
    live_clear(&w->model.live);
    map_clear(w);
    w->map_moved = w->model.live.moved;
    w->seq = 0;
    w->segment++;
    w->segment_start = 1;
    begin_block(w);
    return BTP_OK;
}

/* What must hold before frames[0..n) may be looked at at all. */
static btp_status check_shape(const btp_frame *frames, size_t n)
{
    if (n > BTP_LOG_MAX_DEPTH)
        return BTP_E_LIMIT;
    return n && !frames ? BTP_E_INVALID_ARGUMENT : BTP_OK;
}

/* check_shape(), then every frame (kind, width, omit count). */
static btp_status check_frames(const btp_log_writer *w, const btp_frame *frames, size_t n)
{
    btp_status st = check_shape(frames, n);
    if (st != BTP_OK)
        return st;
    uint64_t mask = btp_word_mask(w->opt.word_bits);
    for (size_t i = 0; i < n; i++) {
        if ((unsigned)frames[i].kind > BTP_FRAME_OMIT)
            return BTP_E_INVALID_ARGUMENT;
        if (frames[i].value & ~mask)
            return BTP_E_VALUE_TOO_WIDE;
        if (frames[i].kind == BTP_FRAME_OMIT && frames[i].value == 0)
            return BTP_E_ZERO_COUNT;
    }
    return BTP_OK;
}

static btp_status stack_define(btp_log_writer *w, const btp_frame *frames, size_t n,
                               uint32_t *sid, int *fresh_stack);

/* A hash of frames[0..n)'s values (the kinds are checked with the hint),
 * in two chains of multiplies: half the latency of one. */
static uint64_t stack_hash(const btp_frame *frames, size_t n)
{
    uint64_t h = n, g = 0x7F4A7C159E3779B9ull;
    size_t i = 0;
    for (; i + 1 < n; i += 2) {
        h = (h ^ frames[i].value) * 0x9E3779B97F4A7C15ull;
        g = (g ^ frames[i + 1].value) * 0xC2B2AE3D27D4EB4Full;
    }
    if (i < n)
        h = (h ^ frames[i].value) * 0x9E3779B97F4A7C15ull;
    h ^= g * 0x165667B19E3779F9ull;
    return h ^ (h >> 29);
}

/* Whether stack number s, which has a flat copy (stack_flat), is
 * frames[0..n) (n its depth): the values, the first frame's kind, and
 * every other frame a return address. One pass without branches. */
static int stack_flat_is(const btp_log_writer *w, uint32_t s, const btp_frame *frames, size_t n)
{
    uint32_t at = w->flat_at[s];
    const uint64_t *v = w->flat + ((at >> 1) - 1);
    uint64_t d = n ? (uint64_t)(at & 1) ^ (frames[0].kind == BTP_FRAME_PC) : 0;
    if (n)
        d |= (v[0] ^ frames[0].value) | (frames[0].kind > BTP_FRAME_RA);
    for (size_t i = 1; i < n; i++)
        d |= (v[i] ^ frames[i].value) | (uint64_t)((unsigned)frames[i].kind ^ BTP_FRAME_RA);
    return d == 0;
}

/* Keep stack s's frames[0..n) (checked) flat if they are return addresses
 * but for the first, a pc or one, room permitting; else the stack is
 * checked in the tree. flat_at[s]: (start + 1) * 2, + 1 if the first is a
 * pc. */
static void stack_flat(btp_log_writer *w, uint32_t s, const btp_frame *frames, size_t n)
{
    if (s < w->flat_at_cap && w->flat_at[s])
        return;
    if (n > FLAT_MAX - w->flat_n || (n && frames[0].kind > BTP_FRAME_RA))
        return;
    for (size_t i = 1; i < n; i++)
        if (frames[i].kind != BTP_FRAME_RA)
            return;
    uint32_t *at = log_grow(w->flat_at, &w->flat_at_cap, (uint64_t)s + 1, 1024, UINT32_MAX / 2,
                            sizeof *at, 1);
    if (!at)
        return;
    w->flat_at = at;
    uint64_t *f = log_grow(w->flat, &w->flat_cap, (uint64_t)w->flat_n + n, 4096, FLAT_MAX,
                           sizeof *f, 0);
    if (!f)
        return;
    w->flat = f;
    for (size_t i = 0; i < n; i++)
        w->flat[w->flat_n + i] = frames[i].value;
    w->flat_at[s] = (w->flat_n + 1) * 2 + (n && frames[0].kind == BTP_FRAME_PC);
    w->flat_n += (uint32_t)n;
}

/* Whether stack number `s` is frames[0..n): its path from its node to the root. */
static int stack_is(const calltree *t, uint32_t s, const btp_frame *frames, size_t n)
{
    if (s >= t->n_stacks)
        return 0;
    uint32_t node = t->stack_node[s];
    if (node >= t->n_nodes || t->nodes[node].depth != n)
        return 0;
    for (size_t i = 0; i < n; i++) {
        const calltree_node *c = &t->nodes[node];
        if (c->value != frames[i].value || c->kind != (unsigned)frames[i].kind)
            return 0;
        node = c->parent;
    }
    return node == 0;
}

/* Stack number of frames[0..n), adding it to the dictionary section if new. */
static btp_status stack_id(btp_log_writer *w, const btp_frame *frames, size_t n, uint32_t *sid,
                           int *fresh_stack)
{
    btp_status st = check_shape(frames, n);
    if (st != BTP_OK)
        return st;
    uint64_t hash = stack_hash(frames, n);
    stack_hint *hint = &w->hints[hash % STACK_CACHE];
    /* a stack in the tree is made of checked frames: no need to check again */
    if (hint->hash == hash && hint->n == n && hint->stack1) {
        uint32_t s = hint->stack1 - 1;
        if (s < w->flat_at_cap && w->flat_at[s] ? stack_flat_is(w, s, frames, n)
                                                : stack_is(&w->tree, s, frames, n)) {
            *sid = s;
            return BTP_OK;
        }
    }
    st = check_frames(w, frames, n);
    if (st == BTP_OK)
        st = stack_define(w, frames, n, sid, fresh_stack);
    if (st == BTP_OK) {
        *hint = (stack_hint){hash, *sid + 1, (uint32_t)n};
        stack_flat(w, *sid, frames, n);
    }
    return st;
}

/* stack_id() without the hint. */
static btp_status stack_define(btp_log_writer *w, const btp_frame *frames, size_t n,
                               uint32_t *sid, int *fresh_stack)
{
    size_t matched;
    uint32_t node = calltree_find(&w->tree, frames, n, &matched);
    if (matched == n) {
        uint32_t s = calltree_stack_of(&w->tree, node);
        if (s) {
            *sid = s - 1;
            return BTP_OK;
        }
    }
    size_t fresh = n - matched;
    btp_status st;
    if (w->tree.n_nodes + fresh > w->opt.max_nodes) {
        if ((st = new_segment(w)) != BTP_OK)
            return st;
        node = 0;
        fresh = n;
        if (w->tree.n_nodes + fresh > w->opt.max_nodes)
            return BTP_E_LIMIT;
    }
    log_m4_put_entry(&w->m4, &w->dict_enc, &w->sec[BTP_LOG_SEC_DICT], &w->tree, node, frames,
                     fresh);
    for (size_t i = fresh; i-- > 0;)
        if ((st = calltree_add(&w->tree, node, frames[i], 1, &node)) != BTP_OK)
            return w->error = st;
    if ((st = calltree_add_stack(&w->tree, node, sid)) != BTP_OK)
        return w->error = st;
    *fresh_stack = 1;
    return BTP_OK;
}

/* Stack number of frames[0..n), adding it to the dictionary section if new;
 * its reference (0: a stack this call defined, else the number + 1) goes to
 * STACKS. */
static btp_status stack_ref(btp_log_writer *w, const btp_frame *frames, size_t n, uint32_t *sid)
{
    int fresh = 0;
    btp_status st = stack_id(w, frames, n, sid, &fresh);
    /* the reader knows the stacks before this one when it is new */
    if (st == BTP_OK)
        log_buf_varint(&w->sec[BTP_LOG_SEC_STACKS], fresh ? 0 : *sid + 1u);
    return st;
}

/* The start of a record with a stack (an allocation, a trace): the writer
 * usable, then stack_ref (which checks the frames). */
static btp_status stack_record(btp_log_writer *w, const btp_frame *frames, size_t n,
                               uint32_t *sid)
{
    if (!w)
        return BTP_E_INVALID_ARGUMENT;
    if (w->error)
        return w->error;
    return stack_ref(w, frames, n, sid);
}


/* Whether the pending block has waited flush_interval_ms (ms: the clock
 * now; *wait: how long until it will have). */
static int block_due(const btp_log_writer *w, uint64_t ms, uint32_t *wait)
{
    *wait = UINT32_MAX;
    if (!w->opt.flush_interval_ms || w->block_records == 0)
        return 0;
    uint64_t age = ms - w->block_t0;
    if (age >= w->opt.flush_interval_ms)
        return 1;
    *wait = (uint32_t)(w->opt.flush_interval_ms - age);
    return 0;
}

static btp_status end_record(btp_log_writer *w)
{
    w->records++;
    w->block_records++;
    uint32_t wait;
    if (w->block_records == 1 && w->opt.flush_interval_ms)
        w->block_t0 = now_ms();
    if (pending_bytes(w) >= w->opt.block_bytes || w->block_records >= LOG_M4_MAX_RECORDS ||
        (w->opt.flush_interval_ms && block_due(w, now_ms(), &wait)))
        return btp_log_writer_flush(w);
    return BTP_OK;
}

btp_status btp_log_writer_poll(btp_log_writer *w, uint32_t *wait_ms)
{
    uint32_t wait = UINT32_MAX;
    btp_status st = BTP_E_INVALID_ARGUMENT;
    if (w) {
        st = w->error;
        if (st == BTP_OK && block_due(w, now_ms(), &wait))
            st = btp_log_writer_flush(w); /* nothing is pending after it */
    }
    if (wait_ms)
        *wait_ms = wait;
    return st;
}

btp_status btp_log_writer_alloc(btp_log_writer *w, uint64_t size, uint64_t ptr,
                                const btp_frame *frames, size_t n)
{
    uint32_t sid;
    btp_status st = stack_record(w, frames, n, &sid);
    if (st != BTP_OK)
        return st;
    log_model *m = &w->model;
    unsigned tag = 0;
    const stack_memo *last = log_model_memo(m, sid);
    /* a stack's allocations tend to land near each other: code the pointer
     * from its stack's previous one when there is one in this block */
    uint64_t base = last ? last->ptr : m->prev_ptr;
    if (last && last->size == size)
        tag |= TAG_SIZE_SAME;
    else
        log_buf_varint(&w->sec[BTP_LOG_SEC_SIZES], size);
    /* at the end of the last chunk carved (the top chunk, or a free chunk
     * being split, is cut in order: checked first, it spares a search of
     * the bin), else from the bin of its size class (glibc's tcache and
     * fastbins are LIFO per chunk size), else a pointer freed earlier,
     * else a delta from the base */
    log_buf *pb = &w->sec[BTP_LOG_SEC_PTRS];
    const int next = ptr == m->next_ptr;
    bin *b = next ? NULL : log_model_bin(m, log_size_class(size, m->word_bits), 0);
    int k = b ? bin_find(b, ptr) : -1;
    if (k >= 0) {
        bin_take(b, (unsigned)k);
        if (k < TAG_M3_BINS) {
            tag |= (unsigned)(k + 1) << TAG_BIN_SHIFT;
        } else { /* deeper: its position range-coded, not one of many rare tags */
            tag |= TAG_BIN_DEEP << TAG_BIN_SHIFT;
            log_rc_put_num(&w->ptr_enc, &w->ptr_model.deep, pb, (unsigned)k - TAG_M3_BINS, 0);
        }
    } else {
        uint64_t j = next ? 0 : w->freed_at[ptr_hash(ptr) & (FREED_AT_SLOTS - 1)];
        if (next) {
            tag |= TAG_BIN_NEXT << TAG_BIN_SHIFT;
        } else if (j > m->freed0 && m->n_freed - j < LOG_FREED_RING &&
                   m->freed[(j - 1) & (LOG_FREED_RING - 1)] == ptr &&
                   !log_rc_recent_has(&w->ptr_model, ptr - base)) {
            /* freed earlier in the block, in a bin no longer or of another
             * size (chunks coalesce and split); unless a recent delta
             * gives it, which costs fewer bits */
            tag |= TAG_BIN_FREED << TAG_BIN_SHIFT;
            log_rc_put_num(&w->ptr_enc, &w->ptr_model.age, pb, m->n_freed - j, 0);
        } else {
            log_rc_put_delta(&w->ptr_enc, &w->ptr_model, pb, ptr - base);
        }
        base = m->prev_ptr = ptr;
        m->next_ptr = ptr + log_chunk_size(size, m->word_bits);
    }
    m->free_pred++;
    /* bin hits leave the bases alone, so that after damage an unknown bin
     * entry does not make the following deltas unknown too */
    const unsigned last_tag = last ? last->tag + 1u : 0; /* before the memo moves on */
    if ((st = log_model_memo_set(m, sid, size, base, 1, tag)) != BTP_OK)
        return w->error = st;
    log_buf_byte(&w->sec[BTP_LOG_SEC_TAGS], (uint8_t)tag);
    if (!w->rc_tags_off) {
        log_m4_put_kind(&w->m4, &w->tag_enc, &w->rc_tags, M4_ALLOC);
        log_m4_put_alloc(&w->m4, &w->tag_enc, &w->rc_tags, last_tag, tag);
    }

    live_entry e = {w->seq, ptr, size, sid, 1, 1};
    if ((st = live_push(&m->live, e)) != BTP_OK)
        return w->error = st;
    if (m->live.moved != w->map_moved)
        st = map_renew(w); /* the new entry too */
    else
        st = map_set(w, ptr, m->live.end - 1);
    if (st != BTP_OK)
        return w->error = st;
    w->seq++;
    if (m->live.count > m->max_live) { /* forget the oldest (the reader does the same) */
        uint32_t slot = live_oldest(&m->live);
        ptr_slot *s = map_lookup(w, m->live.e[slot].ptr);
        if (s->live == slot + 1)
            map_delete(w, s);
        live_remove(&m->live, slot);
    }
    return end_record(w);
}

btp_status btp_log_writer_trace(btp_log_writer *w, const btp_frame *frames, size_t n,
                                int truncated)
{
    uint32_t sid;
    btp_status st = stack_record(w, frames, n, &sid);
    if (st != BTP_OK)
        return st;
    log_buf_byte(&w->sec[BTP_LOG_SEC_TAGS], truncated ? TAG_TRACE_TRUNC : TAG_TRACE);
    if (!w->rc_tags_off)
        log_m4_put_kind(&w->m4, &w->tag_enc, &w->rc_tags, truncated ? M4_TRACE_TRUNC : M4_TRACE);
    return end_record(w);
}

void btp_log_writer_prefetch(const btp_log_writer *w, uint64_t ptr)
{
    /* what an allocation or free of ptr looks at first: its map slot (the
     * free's cache miss, and the allocation's when it stores the pointer)
     * and its freed-pointer index */
    if (w && w->map) {
        __builtin_prefetch(&w->map[map_home(ptr) & (w->map_cap - 1)]);
        __builtin_prefetch(&w->freed_at[ptr_hash(ptr) & (FREED_AT_SLOTS - 1)]);
    }
}

/* A FREE's tag (its rank field), in both forms. */
static void put_free_tag(btp_log_writer *w, unsigned field)
{
    log_buf_byte(&w->sec[BTP_LOG_SEC_TAGS], (uint8_t)(TAG_FREE | field << TAG_RANK_SHIFT));
    if (!w->rc_tags_off) {
        log_m4_put_kind(&w->m4, &w->tag_enc, &w->rc_tags, M4_FREE);
        log_m4_put_free(&w->m4, &w->tag_enc, &w->rc_tags, field);
    }
}

btp_status btp_log_writer_free(btp_log_writer *w, uint64_t ptr)
{
    if (!w)
        return BTP_E_INVALID_ARGUMENT;
    if (w->error)
        return w->error;
    log_model *m = &w->model;
    ptr_slot *s = w->map ? map_lookup(w, ptr) : NULL;
    uint32_t slot = s && s->live ? s->live - 1 : UINT32_MAX;
    log_model_freed(m, ptr, 1);
    w->freed_at[ptr_hash(ptr) & (FREED_AT_SLOTS - 1)] = m->n_freed;
    if (slot == UINT32_MAX || !m->live.e[slot].alive || m->live.e[slot].ptr != ptr) {
        /* not a live allocation we know: literal pointer */
        put_free_tag(w, 0);
        log_buf_varint(&w->sec[BTP_LOG_SEC_FREES], ptr);
        return end_record(w);
    }
    uint32_t rank = live_rank(&m->live, slot);
    /* the rank relative to the prediction when it hits (a program freeing
     * in allocation order: one repeated tag), else the rank when small
     * (LIFO), else relative when near; else whichever number is smaller,
     * range-coded */
    uint64_t d = (uint64_t)rank - m->free_pred;
    uint64_t mag = d >> 63 ? 0 - d : d;
    unsigned field;
    if (d == 0 || (rank >= TAG_M3_RANKS && mag <= TAG_M3_REL_MAX))
        field = (unsigned)(TAG_M3_REL0 + (int64_t)d);
    else if (rank < TAG_M3_RANKS)
        field = rank + 1;
    else
        field = mag < rank ? TAG_RANK_ESC : TAG_M3_RANK_ESC;
    put_free_tag(w, field);
    if (field == TAG_RANK_ESC)
        log_buf_varint(&w->sec[BTP_LOG_SEC_FREES], log_zigzag((int64_t)d));
    else if (field == TAG_M3_RANK_ESC)
        log_rc_put_num(&w->ptr_enc, &w->ptr_model.rank, &w->sec[BTP_LOG_SEC_PTRS],
                       rank - TAG_M3_RANKS, 0);
    m->free_pred = (uint64_t)rank - 1;
    uint64_t size = m->live.e[slot].size;
    int binned = m->live.e[slot].seq >= m->block_seq0;
    live_remove(&m->live, slot);
    map_delete(w, s);
    bin *b = binned ? log_model_bin(m, log_size_class(size, m->word_bits), 1) : NULL;
    if (b)
        bin_push(b, ptr, 1, LOG_M3_BIN_DEPTH);
    return end_record(w);
}

btp_status btp_log_writer_close_items(btp_log_writer *w, const btp_log_meta_item *items,
                                      size_t n)
{
    if (!w)
        return BTP_OK;
    int valid = items_valid(items, n);
    if (!valid)
        n = 0;
    btp_status st = btp_log_writer_flush(w);
    if (st == BTP_OK) {
        log_buf *raw = &w->raw;
        raw->len = 0;
        log_buf_varint(raw, w->records);
        log_buf_varint(raw, w->block_index);
        put_items(raw, items, n);
        log_block_header h = {0};
        h.kind = LOG_BLOCK_END;
        h.flags = n ? LOG_BF_ITEMS : 0;
        h.first_record = w->records;
        st = raw->oom ? BTP_E_OUT_OF_MEMORY : write_block(w, &h, raw->p, raw->len);
    }
    /* held blocks (BTP_LOG_WRITE_HOLD) not taken go out now, in order */
    for (btp_log_block *b; (b = btp_log_writer_take(w)) != NULL;) {
        if (st == BTP_OK)
            st = btp_log_block_write(b);
        else
            btp_log_block_free(b);
    }
    btp_log_writer_abandon(w);
    return st == BTP_OK && !valid ? BTP_E_INVALID_ARGUMENT : st;
}

btp_status btp_log_writer_close(btp_log_writer *w)
{
    return btp_log_writer_close_items(w, NULL, 0);
}

void btp_log_writer_abandon(btp_log_writer *w)
{
    if (!w)
        return;
    calltree_free(&w->tree);
    log_model_free(&w->model);
    free(w->map);
    for (int i = 0; i < BTP_LOG_SEC_COUNT; i++)
        log_buf_free(&w->sec[i]);
    log_buf_free(&w->raw);
    log_buf_free(&w->packed);
    log_buf_free(&w->rc_tags);
    log_buf_free(&w->scratch);
    log_m4_free(&w->m4);
    free(w->freed_at);
    free(w->hints);
    free(w->flat);
    free(w->flat_at);
    for (btp_log_block *b; (b = btp_log_writer_take(w)) != NULL;)
        btp_log_block_free(b);
    free(w);
}
