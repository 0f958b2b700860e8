/* Trace log reader (include/btpack/log.h, spec/log.md). */
#include <stdlib.h>
#include <string.h>

#include "calltree.h"
#include "common/reserved.h"
#include "crc32.h"
#include "log_format.h"
#include "log_model.h"
#include "log_model4.h"
#include "log_rc.h"
#include "table_alloc.h"

typedef struct meta_item {
    char *key;
    uint8_t *data;
    size_t len;
    uint64_t record; /* records before it */
} meta_item;

/* A record of the current block, decoded before any is returned so that a
 * block is either delivered whole or not at all. */
typedef struct drec {
    uint64_t ptr, size;
    uint32_t stack;  /* stack number (alloc) */
    uint8_t kind, flags, truncated, matched;
} drec;

/* Expanded frames of stacks already returned, so that a repeated stack is
 * handed out without walking the tree again. Valid while stack numbers keep
 * their meaning: cleared (by generation) whenever the dictionary is reset or
 * rolled back. At most FC_MAX frames are kept. */
#define FC_MAX (1u << 20)
typedef struct fc_entry {
    uint32_t off, n, gen;
} fc_entry;

/* Work a log may cost before max_expansion applies (so that a small log
 * with a few deep stacks is never refused). */
#define EXPANSION_FREE ((uint64_t)1 << 20)
/* Metadata the reader keeps (not yet released by the caller). */
#define META_KEEP_BYTES ((size_t)64 << 20)
#define META_KEEP_ITEMS 4096u
/* A stream is read at least this much at a time. */
#define READ_CHUNK ((size_t)64 << 10)

struct btp_log_reader {
    /* The log's bytes: all of it in memory (buf, len), or a window onto a
     * stream read through src: bytes [win_off, win_off + win_len) of the
     * log. Blocks are read forward only, so the window holds at most one
     * block (plus what the last read brought). */
    const uint8_t *buf;
    size_t len;
    btp_log_source_fn src;
    void *src_ctx;
    uint8_t *win;
    size_t win_len, win_cap;
    uint64_t win_off;
    int src_end, src_error;
    btp_log_reader_options opt;
    unsigned flags;
    log_file_header fh;
    size_t hdr_size;         /* block header size of the log's version */
    uint64_t pos;            /* next block header */
    btp_status error;        /* sticky without KEEP_GOING; final errors always */
    int final;               /* nothing more can come (end block or truncation) */
    uint64_t err_off;
    btp_status pending;      /* a damaged file header read on without: the first
                                next() reports it */
    uint64_t good_end;       /* end of the last block read whole */
    btp_log_loss loss;       /* the last loss reported */
    int have_loss;
    uint64_t work;           /* nodes built, records decoded, frames handed out */
    calltree tree;
    log_model model;
    log_rc_model ptr_model; /* PTRS_RANGE: the block's delta model */
    log_m4 m4;              /* MODEL4: DICT and STACKS models */
    int have_m4;            /* m4 allocated (at the first MODEL4 block) */
    uint8_t *raw;
    size_t raw_cap;
    drec *recs;
    size_t recs_cap;
    uint32_t n_recs, next_rec;
    uint64_t block_first;    /* index of recs[0] */
    uint32_t block_segment;
    uint64_t next_index;     /* index the next block should start at */
    uint32_t segment;
    int have_segment;        /* tree/live hold a segment's state */
    int64_t last_segment;    /* highest segment number taken since the start, or -1:
                                numbers only grow, so (segment, stack number) names
                                one stack even in a damaged or hostile log */
    int uncertain;           /* a loss happened in this segment */
    uint32_t unknown_live;   /* live allocations of the writer we do not know */
    uint64_t lost;
    uint64_t seq;
    btp_frame *frames;
    fc_entry *fc;            /* by stack number */
    uint32_t fc_cap, fc_gen;
    btp_frame *fc_pool;
    uint32_t fc_len, fc_pool_cap;
    size_t meta_new;         /* items the block just read added, the last ones kept,
                                not yet returned (BTP_LOG_META_RECORDS) */
    meta_item *meta;         /* items meta_base .. meta_base + n_meta - 1 */
    size_t n_meta, cap_meta, meta_base;
    size_t meta_bytes;       /* kept */
    uint64_t meta_upto;      /* metadata of blocks below this index is stored */
    btp_log_stats st;
};

static btp_status fail(btp_log_reader *r, btp_status st, uint64_t off)
{
    r->error = st;
    r->err_off = off;
    return st;
}

/* Read the stream until the window holds n bytes (or the stream ends):
 * a pipe gives what it has, and no more is waited for than needed. */
static void fill(btp_log_reader *r, size_t n)
{
    size_t cap = n > READ_CHUNK ? n : READ_CHUNK;
    if (cap > r->win_cap) {
        uint8_t *w = realloc(r->win, cap);
        if (!w) {
            r->src_error = r->src_end = 1; /* reported as an input error */
            return;
        }
        r->win = w;
        r->win_cap = cap;
    }
    while (r->win_len < n && !r->src_end) {
        long got = r->src(r->src_ctx, r->win + r->win_len, r->win_cap - r->win_len);
        if (got <= 0) {
            r->src_end = 1;
            r->src_error = got < 0;
        } else {
            r->win_len += (size_t)got;
        }
    }
}

/* Bytes [at, at + n) of the log: a pointer to them and in *have how many
 * there are (fewer than n only at the end of the log). The pointer is valid
 * until the next call. A stream's window forgets the bytes before `at`
 * when it has to read more (so bytes are moved once per refill, not once
 * per block): blocks are read forward only, so it never holds much more
 * than a block. */
static const uint8_t *bytes_at(btp_log_reader *r, uint64_t at, size_t n, size_t *have)
{
    if (!r->src) {
        size_t k = at < r->len ? r->len - (size_t)at : 0;
        *have = k < n ? k : n;
        return k ? r->buf + at : NULL;
    }
    while (at > r->win_off + r->win_len && !r->src_end) { /* read past what lies before */
        r->win_off += r->win_len;
        r->win_len = 0;
        fill(r, 1);
    }
    if (at < r->win_off || at > r->win_off + r->win_len) { /* forward only; or the end */
        *have = 0;
        return NULL;
    }
    size_t off = (size_t)(at - r->win_off);
    if (r->win_len - off < n && !r->src_end) {
        if (off) /* never memmove on the NULL of an empty window */
            memmove(r->win, r->win + off, r->win_len - off);
        r->win_len -= off;
        r->win_off = at;
        off = 0;
        fill(r, n);
    }
    size_t avail = r->win_len - off;
    *have = avail < n ? avail : n;
    return avail ? r->win + off : NULL;
}

/* Count `units` of work; BTP_E_EXPANSION_LIMIT when the log costs more
 * than max_expansion per byte read (after EXPANSION_FREE). */
static btp_status spend(btp_log_reader *r, uint64_t units)
{
    r->work += units;
    if (r->opt.max_expansion &&
        r->work > EXPANSION_FREE + (uint64_t)r->opt.max_expansion * r->pos)
        return BTP_E_EXPANSION_LIMIT;
    return BTP_OK;
}

static void frames_cache_clear(btp_log_reader *r)
{
    if (++r->fc_gen == 0) { /* wrapped: clear the stamps for real */
        if (r->fc)
            memset(r->fc, 0, (size_t)r->fc_cap * sizeof *r->fc);
        r->fc_gen = 1;
    }
    r->fc_len = 0;
}

/* The frames of stack `sid` (count in *n), from the cache or the tree;
 * NULL when the stack is unknown. */
static const btp_frame *stack_frames(btp_log_reader *r, uint32_t sid, size_t *n)
{
    if (sid < r->fc_cap && r->fc[sid].gen == r->fc_gen) {
        *n = r->fc[sid].n;
        return r->fc_pool + r->fc[sid].off;
    }
    size_t k = calltree_frames(&r->tree, r->tree.stack_node[sid], r->frames, BTP_LOG_MAX_DEPTH);
    if (k == (size_t)-1)
        return NULL;
    *n = k;
    /* an empty stack needs no cache entry, and the pool may not exist yet
     * (a NULL + 0 result would read as "unknown") */
    if (k == 0)
        return r->frames;
    if (k > FC_MAX - r->fc_len)
        return r->frames; /* cache full: plain walk */
    fc_entry *e = log_grow(r->fc, &r->fc_cap, (uint64_t)sid + 1, 1024, UINT32_MAX, sizeof *e, 1);
    if (!e)
        return r->frames;
    r->fc = e;
    btp_frame *p = log_grow(r->fc_pool, &r->fc_pool_cap, (uint64_t)r->fc_len + k, 4096, FC_MAX,
                            sizeof *p, 0);
    if (!p)
        return r->frames;
    r->fc_pool = p;
    memcpy(r->fc_pool + r->fc_len, r->frames, k * sizeof *r->frames);
    r->fc[sid] = (fc_entry){r->fc_len, (uint32_t)k, r->fc_gen};
    r->fc_len += (uint32_t)k;
    return r->fc_pool + r->fc[sid].off;
}

/* Something is lost: from here on in this segment, what depends on the
 * past is unknown until a segment start. */
static void lose(btp_log_reader *r)
{
    frames_cache_clear(r);
    r->uncertain = 1;
    live_clear(&r->model.live);
    r->unknown_live = 0;
}

/* The next item of a metadata payload at rd: its key at *kpos (*klen
 * bytes) and data at *dpos (*dlen bytes), rd moved past it. BTP_E_CORRUPT
 * unless it lies whole within the payload. */
static btp_status meta_item_at(log_rd *rd, size_t *kpos, size_t *klen, size_t *dpos,
                               size_t *dlen)
{
    uint64_t k = log_rd_varint(rd);
    if (rd->bad || k == 0 || k > 255 || k > rd->len - rd->pos)
        return BTP_E_CORRUPT;
    *kpos = rd->pos;
    *klen = (size_t)k;
    rd->pos += (size_t)k;
    uint64_t d = log_rd_varint(rd);
    if (rd->bad || d > rd->len - rd->pos)
        return BTP_E_CORRUPT;
    *dpos = rd->pos;
    *dlen = (size_t)d;
    rd->pos += (size_t)d;
    return BTP_OK;
}

/* Keep the metadata items of p[0..n): exactly one filling it, or with
 * `several` (the ITEMS flag) one or more back to back filling it. All of
 * them or, on an error, none: the whole payload is checked before anything
 * is kept. r->meta_new counts the items added. */
static btp_status add_meta(btp_log_reader *r, const uint8_t *p, size_t n, uint64_t record,
                           int several)
{
    log_rd rd = {p, n, 0, 0};
    size_t items = 0, bytes = 0, kpos, klen, dpos, dlen;
    do {
        if (meta_item_at(&rd, &kpos, &klen, &dpos, &dlen) != BTP_OK)
            return BTP_E_CORRUPT;
        items++;
        bytes += klen + dlen; /* within the payload, so no overflow */
    } while (several && rd.pos < rd.len);
    if (rd.pos != rd.len)
        return BTP_E_CORRUPT;
    if (items > META_KEEP_ITEMS - r->n_meta || bytes > META_KEEP_BYTES - r->meta_bytes)
        return BTP_E_META_LIMIT;
    if (r->n_meta + items > r->cap_meta) {
        size_t c = r->cap_meta ? r->cap_meta : 8;
        while (c < r->n_meta + items)
            c *= 2;
        meta_item *m = realloc(r->meta, c * sizeof *m);
        if (!m)
            return BTP_E_OUT_OF_MEMORY;
        r->meta = m;
        r->cap_meta = c;
    }
    size_t first = r->n_meta;
    rd.pos = 0;
    for (size_t i = 0; i < items; i++) {
        (void)meta_item_at(&rd, &kpos, &klen, &dpos, &dlen); /* checked above */
        meta_item it = {malloc(klen + 1), malloc(dlen ? dlen : 1), dlen, record};
        if (!it.key || !it.data) {
            free(it.key);
            free(it.data);
            while (r->n_meta > first) { /* none of the block's items, as on damage */
                meta_item *m = &r->meta[--r->n_meta];
                r->meta_bytes -= m->len + strlen(m->key);
                free(m->key);
                free(m->data);
            }
            return BTP_E_OUT_OF_MEMORY;
        }
        memcpy(it.key, p + kpos, klen);
        it.key[klen] = 0;
        memcpy(it.data, p + dpos, dlen);
        r->meta[r->n_meta++] = it;
        r->meta_bytes += klen + dlen;
    }
    r->meta_new = items;
    return BTP_OK;
}

/* The items of metadata payload p[0..n) of block h (unless a read of it
 * before a seek kept them already): add_meta, and the block marked read. */
static btp_status take_meta(btp_log_reader *r, const log_block_header *h, const uint8_t *p,
                            size_t n, int several)
{
    if (h->block_index < r->meta_upto)
        return BTP_OK;
    btp_status st = add_meta(r, p, n, h->first_record, several);
    if (st == BTP_OK)
        r->meta_upto = h->block_index + 1;
    return st;
}

/* Room for an entry of n new nodes (and the work it costs). */
static btp_status dict_room(btp_log_reader *r, uint64_t n)
{
    if (r->tree.n_nodes + n > r->fh.max_nodes)
        return BTP_E_CORRUPT;
    if (r->tree.n_nodes + n > r->opt.max_nodes)
        return BTP_E_NODES_LIMIT;
    return spend(r, n + 1);
}

/* Node `node` becomes the next stack. */
static btp_status dict_stack(btp_log_reader *r, uint32_t node)
{
    uint32_t sid;
    if (r->tree.n_stacks >= r->fh.max_nodes)
        return BTP_E_CORRUPT;
    if (r->tree.n_stacks >= r->opt.max_nodes)
        return BTP_E_NODES_LIMIT;
    return calltree_add_stack(&r->tree, node, &sid);
}

/* Decode the dictionary section: new stacks. */
static btp_status read_dict(btp_log_reader *r, log_rd *d)
{
    calltree *t = &r->tree;
    while (d->pos < d->len) {
        uint64_t parent = log_rd_varint(d);
        if (d->bad || parent >= t->n_nodes)
            return BTP_E_CORRUPT;
        btp_cbf_decoder dec;
        if (btp_cbf_decoder_init(&dec, d->p + d->pos, d->len - d->pos, BTP_CBF_POLICY_STRICT &
                                 ~(unsigned)BTP_CBF_REJECT_TRAILING) != BTP_OK ||
            btp_cbf_decoder_word_bits(&dec) != r->fh.word_bits)
            return BTP_E_CORRUPT;
        size_t depth = t->nodes[parent].depth, n = 0;
        btp_cbf_run run;
        btp_status st;
        while ((st = btp_cbf_decoder_next(&dec, &run)) == BTP_OK) {
            if (run.count > BTP_LOG_MAX_DEPTH - depth - n)
                return BTP_E_CORRUPT;
            for (uint64_t k = 0; k < run.count; k++)
                r->frames[n++] = run.frame;
        }
        if (st != BTP_END || btp_cbf_decoder_terminator(&dec) != BTP_CBF_TERM_END)
            return BTP_E_CORRUPT;
        d->pos += btp_cbf_decoder_consumed(&dec);
        if ((st = dict_room(r, n)) != BTP_OK)
            return st;
        uint32_t node = (uint32_t)parent;
        for (size_t i = n; i-- > 0;)
            if ((st = calltree_add(t, node, r->frames[i], 1, &node)) != BTP_OK)
                return st;
        if ((st = dict_stack(r, node)) != BTP_OK)
            return st;
    }
    return BTP_OK;
}

/* The rest of the block's dictionary after an entry on an unknown node
 * (keep-going mode, after a loss): MODEL4 predicts frames from the frames
 * above them, so nothing after it can be decoded; the nodes and stacks the
 * header says the block adds become unknown. */
static btp_status dict_unknown(btp_log_reader *r, log_rd *d, const log_block_header *h)
{
    calltree *t = &r->tree;
    d->pos = d->len; /* skipped */
    uint32_t nodes = h->nodes_before + h->nodes_added, stacks = h->stacks_before + h->stacks_added;
    if (t->n_nodes > nodes || t->n_stacks > stacks)
        return BTP_E_CORRUPT;
    if (nodes > r->opt.max_nodes || stacks > r->opt.max_nodes)
        return BTP_E_NODES_LIMIT;
    btp_status st = spend(r, (uint64_t)(nodes - t->n_nodes) + (stacks - t->n_stacks));
    uint32_t id;
    while (st == BTP_OK && t->n_nodes < nodes)
        st = calltree_add(t, 0, (btp_frame){0, BTP_FRAME_RA}, 0, &id);
    while (st == BTP_OK && t->n_stacks < stacks)
        st = calltree_add_stack(t, UINT32_MAX, &id);
    return st;
}

/* Decode a MODEL4 dictionary section: the header's stacks_added entries,
 * one range-coded stream. */
static btp_status read_dict_m4(btp_log_reader *r, log_rd *d, const log_block_header *h)
{
    calltree *t = &r->tree;
    log_rc_dec dec = {0, 0, 0};
    for (uint32_t e = 0; e < h->stacks_added; e++) {
        uint32_t parent;
        uint64_t n;
        log_m4_get_entry(&r->m4, &dec, d, t, &parent, &n);
        if (d->bad || n > BTP_LOG_MAX_DEPTH - t->nodes[parent].depth)
            return BTP_E_CORRUPT;
        if (!t->nodes[parent].known)
            return dict_unknown(r, d, h);
        btp_status st = dict_room(r, n);
        if (st != BTP_OK)
            return st;
        uint32_t node = parent;
        uint64_t caller = parent ? t->nodes[parent].value : 0;
        unsigned caller_kind = parent ? t->nodes[parent].kind : 4u;
        for (uint64_t i = 0; i < n; i++) {
            btp_frame f = log_m4_get_frame(&r->m4, &dec, d, r->fh.word_bits, caller, caller_kind);
            if (d->bad)
                return BTP_E_CORRUPT;
            if ((st = calltree_add(t, node, f, 1, &node)) != BTP_OK)
                return st;
            caller = f.value;
            caller_kind = (unsigned)f.kind;
        }
        if ((st = dict_stack(r, node)) != BTP_OK)
            return st;
    }
    return d->bad || d->pos != d->len ? BTP_E_CORRUPT : BTP_OK;
}

static btp_status push_live(btp_log_reader *r, uint64_t ptr, uint64_t size, uint32_t stack,
                            int known)
{
    log_model *m = &r->model;
    live_entry e = {r->seq++, ptr, size, stack, 1, (uint8_t)known};
    btp_status st = live_push(&m->live, e);
    if (st != BTP_OK)
        return st;
    if ((uint64_t)m->live.count + r->unknown_live > m->max_live) {
        if (r->unknown_live)
            r->unknown_live--;
        else
            live_remove(&m->live, live_oldest(&m->live));
    }
    return m->live.count > r->opt.max_live ? BTP_E_LIVE_LIMIT : BTP_OK;
}

/* A stack reference from STACKS. With MODEL2, 0 is the block's next stack
 * not referenced yet (*next_new, the order in which DICT defines them) and
 * any other v is stack v - 1. BTP_OK or BTP_E_CORRUPT. */
static btp_status read_stack(btp_log_reader *r, log_rd *s, int model2, uint32_t *next_new,
                             uint32_t *sid)
{
    uint64_t v = log_rd_varint(s);
    if (model2)
        v = v == 0 ? (*next_new)++ : v - 1;
    if (s->bad || v >= r->tree.n_stacks)
        return BTP_E_CORRUPT;
    *sid = (uint32_t)v;
    return BTP_OK;
}

/* Decode every record of a record block into r->recs. */
static btp_status read_records(btp_log_reader *r, log_rd *sec, uint32_t count, unsigned flags,
                               uint32_t next_new)
{
    const int model2 = (flags & LOG_BF_MODEL2) != 0, model3 = (flags & LOG_BF_MODEL3) != 0;
    const int tags_rc = (flags & LOG_BF_M4_TAGS) != 0;
    int ptrs_range = model2;
    log_rc_dec dec = {0, 0, 0}, tdec = {0, 0, 0};
    log_rd *tr = &sec[BTP_LOG_SEC_TAGS];
    log_rd *pr = &sec[BTP_LOG_SEC_PTRS];
    if (ptrs_range)
        log_rc_model_init(&r->ptr_model);
    log_model *m = &r->model;
    log_model_block(m);
    m->block_seq0 = r->seq;
    /* a byte per record, or (range-coded) a fixed bound */
    if (tags_rc ? count > LOG_M4_MAX_RECORDS : count > tr->len)
        return BTP_E_CORRUPT;
    btp_status st0 = spend(r, count);
    if (st0 != BTP_OK)
        return st0;
    for (uint32_t i = 0; i < count; i++) {
        /* grown as records decode: a header's count alone allocates nothing */
        if (i == r->recs_cap) {
            size_t cap = r->recs_cap ? (size_t)r->recs_cap * 2 : 4096;
            drec *p = realloc(r->recs, (cap < count ? cap : count) * sizeof *p);
            if (!p)
                return BTP_E_OUT_OF_MEMORY;
            r->recs = p;
            r->recs_cap = cap < count ? cap : count;
        }
        drec *d = &r->recs[i];
        unsigned tag;
        int have_stack = 0;
        if (!tags_rc) {
            tag = (unsigned)log_rd_byte(tr);
        } else {
            unsigned kind = log_m4_get_kind(&r->m4, &tdec, tr);
            if (kind == M4_FREE) {
                tag = TAG_FREE | log_m4_get_free(&r->m4, &tdec, tr) << TAG_RANK_SHIFT;
            } else if (kind != M4_ALLOC) {
                tag = kind == M4_TRACE ? TAG_TRACE : TAG_TRACE_TRUNC;
            } else { /* its stack first: the tag is predicted from the stack's last */
                btp_status st = read_stack(r, &sec[BTP_LOG_SEC_STACKS], model2, &next_new,
                                           &d->stack);
                if (st != BTP_OK)
                    return st;
                tag = log_m4_get_alloc(&r->m4, &tdec, tr, log_model_memo(m, d->stack));
                have_stack = 1;
            }
            if (tr->bad)
                return BTP_E_CORRUPT;
        }
        /* by fields: gcc made a memset of this a `rep stos`, whose start-up
         * cost a fifth of this loop */
        d->ptr = d->size = 0;
        if (!have_stack)
            d->stack = 0;
        d->kind = d->flags = d->truncated = d->matched = 0;
        if (tag == TAG_TRACE || tag == TAG_TRACE_TRUNC) {
            btp_status st =
                read_stack(r, &sec[BTP_LOG_SEC_STACKS], model2, &next_new, &d->stack);
            if (st != BTP_OK)
                return st;
            d->kind = BTP_LOG_TRACE;
            d->truncated = tag == TAG_TRACE_TRUNC;
            continue;
        }
        if (tag & TAG_FREE) {
            d->kind = BTP_LOG_FREE;
            unsigned field = tag >> TAG_RANK_SHIFT;
            if (field == 0) {
                d->ptr = log_rd_varint(&sec[BTP_LOG_SEC_FREES]);
                log_model_freed(m, d->ptr, 1);
                continue;
            }
            uint64_t rank = field - 1;
            if (model3) {
                /* 1..62 the rank as is, 63 a larger one; else relative to
                 * the prediction */
                if (field == TAG_M3_RANK_ESC)
                    rank = TAG_M3_RANKS + log_rc_get_num(&dec, &r->ptr_model.rank, pr, 0);
                else if (field == TAG_RANK_ESC)
                    rank = m->free_pred +
                           (uint64_t)log_unzigzag(log_rd_varint(&sec[BTP_LOG_SEC_FREES]));
                else if (field > TAG_M3_RANK_ESC)
                    rank = m->free_pred + ((uint64_t)field - TAG_M3_REL0);
                m->free_pred = rank - 1;
            } else if (field == TAG_RANK_ESC) {
                rank += log_rd_varint(&sec[BTP_LOG_SEC_FREES]);
            }
            if (sec[BTP_LOG_SEC_FREES].bad || pr->bad)
                return BTP_E_CORRUPT;
            if (rank < m->live.count) {
                uint32_t slot = live_at_rank(&m->live, (uint32_t)rank);
                live_entry e = m->live.e[slot];
                live_remove(&m->live, slot);
                d->ptr = e.known ? e.ptr : 0;
                d->flags = e.known ? 0 : BTP_LOG_REC_PTR_UNKNOWN;
                d->size = e.size;
                d->stack = e.stack;
                d->matched = 1;
                bin *b = e.seq >= m->block_seq0
                             ? log_model_bin(m, log_size_class(e.size, m->word_bits), 1)
                             : NULL;
                if (b)
                    bin_push(b, e.ptr, e.known, model3 ? LOG_M3_BIN_DEPTH : LOG_BIN_DEPTH);
                log_model_freed(m, e.ptr, e.known);
            } else if (rank < (uint64_t)m->live.count + r->unknown_live) {
                /* an allocation from before this block: never binned, so
                 * the bins stay exact */
                r->unknown_live--;
                d->flags = BTP_LOG_REC_PTR_UNKNOWN;
                log_model_freed(m, 0, 0);
            } else {
                return BTP_E_CORRUPT;
            }
            continue;
        }
        d->kind = BTP_LOG_ALLOC;
        btp_status st = have_stack ? BTP_OK
                                   : read_stack(r, &sec[BTP_LOG_SEC_STACKS], model2, &next_new,
                                                &d->stack);
        if (st != BTP_OK)
            return st;
        const stack_memo *last = log_model_memo(m, d->stack);
        uint64_t base = last ? last->ptr : m->prev_ptr;
        int base_known = last ? last->ptr_known : m->prev_known;
        if (tag & TAG_SIZE_SAME) {
            if (!last)
                return BTP_E_CORRUPT;
            d->size = last->size;
        } else {
            d->size = log_rd_varint(&sec[BTP_LOG_SEC_SIZES]);
            if (sec[BTP_LOG_SEC_SIZES].bad)
                return BTP_E_CORRUPT;
        }
        unsigned k = tag >> TAG_BIN_SHIFT;
        int known;
        if (k > (model3 ? TAG_BIN_FREED : TAG_BIN_MAX))
            return BTP_E_CORRUPT;
        if (k && !(model3 && k >= TAG_BIN_NEXT)) {
            bin *b = log_model_bin(m, log_size_class(d->size, m->word_bits), 0);
            if (!b || k > b->n)
                return BTP_E_CORRUPT;
            unsigned at = k - 1;
            if (model3 && k == TAG_BIN_DEEP) {
                uint64_t deep = log_rc_get_num(&dec, &r->ptr_model.deep, pr, 0);
                if (pr->bad || deep >= b->n - TAG_M3_BINS)
                    return BTP_E_CORRUPT;
                at = TAG_M3_BINS + (unsigned)deep;
            }
            bin_entry e = bin_take(b, at);
            d->ptr = e.ptr;
            known = e.known;
        } else {
            if (k == TAG_BIN_NEXT) { /* MODEL3: at the end of the last chunk carved */
                d->ptr = m->next_ptr;
                known = m->next_known;
            } else if (k == TAG_BIN_FREED) { /* MODEL3: a pointer freed in this block */
                uint64_t age = log_rc_get_num(&dec, &r->ptr_model.age, pr, 0);
                if (pr->bad || age >= m->n_freed - m->freed0 || age >= LOG_FREED_RING)
                    return BTP_E_CORRUPT;
                uint32_t at = (uint32_t)(m->n_freed - 1 - age) & (LOG_FREED_RING - 1);
                d->ptr = m->freed[at];
                known = m->freed_known[at];
            } else {
                uint64_t delta;
                if (ptrs_range)
                    delta = log_rc_get_delta(&dec, &r->ptr_model, pr);
                else
                    delta = (uint64_t)log_unzigzag(log_rd_varint(pr));
                if (pr->bad)
                    return BTP_E_CORRUPT;
                d->ptr = base + delta;
                known = base_known;
            }
            base = m->prev_ptr = d->ptr;
            base_known = m->prev_known = known;
            m->next_ptr = d->ptr + log_chunk_size(d->size, m->word_bits);
            m->next_known = known;
        }
        m->free_pred++;
        if ((st = log_model_memo_set(m, d->stack, d->size, base, base_known, tag)) != BTP_OK)
            return st;
        if (!known) {
            d->flags |= BTP_LOG_REC_PTR_UNKNOWN;
            d->ptr = 0;
        }
        if ((st = push_live(r, d->ptr, d->size, d->stack, known)) != BTP_OK)
            return st;
    }
    for (int i = 0; i < BTP_LOG_SEC_COUNT; i++)
        if (sec[i].bad || sec[i].pos != sec[i].len)
            return BTP_E_CORRUPT;
    if (model2 && next_new != r->tree.n_stacks) /* a new stack nothing referenced */
        return BTP_E_CORRUPT;
    return BTP_OK;
}

/* Bring the segment state in line with a sound record block header; in
 * keep-going mode fill what was lost with unknowns. */
static btp_status enter_block(btp_log_reader *r, const log_block_header *h)
{
    int keep = r->flags & BTP_LOG_KEEP_GOING;
    calltree *t = &r->tree;
    if (h->flags & LOG_BF_SEGMENT_START) {
        if (h->nodes_before != 1 || h->stacks_before != 0 || h->live_before != 0 ||
            (int64_t)h->segment <= r->last_segment)
            return BTP_E_CORRUPT;
        r->last_segment = h->segment;
        calltree_reset(t);
        frames_cache_clear(r);
        live_clear(&r->model.live);
        r->uncertain = 0;
        r->unknown_live = 0;
        r->seq = 0;
        r->segment = h->segment;
        r->have_segment = 1;
    } else if (!r->have_segment || h->segment != r->segment) {
        if (!keep || (int64_t)h->segment <= r->last_segment)
            return BTP_E_CORRUPT;
        r->last_segment = h->segment;
        calltree_reset(t);
        lose(r);
        r->segment = h->segment;
        r->have_segment = 1;
    }
    if (h->nodes_before > r->fh.max_nodes || h->nodes_added > r->fh.max_nodes - h->nodes_before ||
        h->stacks_before > r->fh.max_nodes || h->stacks_added > r->fh.max_nodes - h->stacks_before)
        return BTP_E_CORRUPT;
    if (t->n_nodes != h->nodes_before || t->n_stacks != h->stacks_before) {
        if (!keep || t->n_nodes > h->nodes_before || t->n_stacks > h->stacks_before)
            return BTP_E_CORRUPT;
        if (h->nodes_before > r->opt.max_nodes || h->stacks_before > r->opt.max_nodes)
            return BTP_E_NODES_LIMIT;
        btp_status st = spend(r, (uint64_t)(h->nodes_before - t->n_nodes) +
                                     (h->stacks_before - t->n_stacks));
        if (st != BTP_OK)
            return st;
        uint32_t id;
        while (t->n_nodes < h->nodes_before)
            if ((st = calltree_add(t, 0, (btp_frame){0, BTP_FRAME_RA}, 0, &id)) != BTP_OK)
                return st;
        while (t->n_stacks < h->stacks_before)
            if ((st = calltree_add_stack(t, UINT32_MAX, &id)) != BTP_OK)
                return st;
        lose(r);
    }
    if (r->uncertain) {
        if (h->live_before < r->model.live.count)
            return BTP_E_CORRUPT;
        r->unknown_live = h->live_before - r->model.live.count;
    } else if (r->model.live.count != h->live_before) {
        return BTP_E_CORRUPT;
    }
    return BTP_OK;
}

static btp_status load_records(btp_log_reader *r, const log_block_header *h, const uint8_t *p,
                               size_t n)
{
    int keep = r->flags & BTP_LOG_KEEP_GOING;
    uint64_t gap = 0;
    if (h->first_record != r->next_index) {
        if (h->first_record < r->next_index)
            return BTP_E_CORRUPT;
        gap = h->first_record - r->next_index;
        if (!keep)
            return BTP_E_RECORDS_LOST;
        lose(r);
    }
    btp_status st = enter_block(r, h);
    if (st != BTP_OK)
        return st;
    log_rd all = {p, n, 0, 0}, sec[BTP_LOG_SEC_COUNT];
    for (int i = 0; i < BTP_LOG_SEC_COUNT; i++) {
        uint64_t l = log_rd_varint(&all);
        if (all.bad || l > n - all.pos)
            return BTP_E_CORRUPT;
        sec[i] = (log_rd){p + all.pos, (size_t)l, 0, 0};
        all.pos += (size_t)l;
        r->st.raw_section_bytes[i] += l;
    }
    if (all.pos != n)
        return BTP_E_CORRUPT;
    uint32_t nodes0 = r->tree.n_nodes, stacks0 = r->tree.n_stacks;
    int model4 = (h->flags & LOG_BF_MODEL4) != 0;
    if (model4 && !r->have_m4) {
        if ((st = log_m4_init(&r->m4)) != BTP_OK)
            return st;
        r->have_m4 = 1;
    }
    if (model4) {
        log_m4_block(&r->m4);
        st = read_dict_m4(r, &sec[BTP_LOG_SEC_DICT], h);
    } else {
        st = read_dict(r, &sec[BTP_LOG_SEC_DICT]);
    }
    if (st == BTP_OK && (r->tree.n_nodes - nodes0 != h->nodes_added ||
                         r->tree.n_stacks - stacks0 != h->stacks_added))
        st = BTP_E_CORRUPT;
    if (st == BTP_OK)
        st = read_records(r, sec, h->records, h->flags, stacks0);
    if (st != BTP_OK) { /* forget the half-read block */
        r->tree.n_nodes = nodes0;
        r->tree.n_stacks = stacks0;
        frames_cache_clear(r);
        r->n_recs = r->next_rec = 0;
        return st;
    }
    r->n_recs = h->records;
    r->next_rec = 0;
    r->block_first = h->first_record;
    r->block_segment = r->segment;
    r->next_index = h->first_record + h->records;
    r->st.record_blocks++;
    r->st.records += h->records;
    r->st.nodes += h->nodes_added;
    r->st.stacks += h->stacks_added;
    if (h->flags & LOG_BF_SEGMENT_START)
        r->st.segments++;
    if (gap) {
        r->lost += gap;
        return BTP_E_RECORDS_LOST; /* the block's records wait for the next call */
    }
    return BTP_OK;
}

/* Scan for the next sound block header of `version` at or after `from`:
 * its offset, or the offset where the log ends (fewer bytes than a header
 * left). */
static uint64_t resync(btp_log_reader *r, uint64_t from, unsigned version)
{
    const uint8_t *sync = version == 1 ? btp_log_sync_v1 : btp_log_sync;
    size_t hs = log_block_header_size(version);
    for (uint64_t p = from;;) {
        size_t have;
        const uint8_t *b = bytes_at(r, p, READ_CHUNK + hs, &have);
        if (have < hs)
            return p + have;
        size_t scan = have - hs + 1;
        for (size_t i = 0; i < scan; i++) {
            if (b[i] != sync[0] || memcmp(b + i, sync, 4) != 0)
                continue;
            log_block_header h;
            if (log_block_header_parse(b + i, version, &h) == BTP_OK)
                return p + i;
        }
        p += scan;
    }
}

/* The log ends at `end` inside or after the block at `at` (whose header, if
 * h is not NULL, is known): what is lost. */
static void lose_tail(btp_log_reader *r, const log_block_header *h, uint64_t end)
{
    r->loss = (btp_log_loss){r->next_index, 0, 0, r->good_end, end};
    if (h && h->kind == LOG_BLOCK_RECORDS && h->first_record >= r->next_index &&
        h->first_record + h->records >= h->first_record) {
        r->loss.records = h->first_record + h->records - r->next_index;
        r->loss.known = 1;
    }
    r->have_loss = 1;
}

/* Records were found missing before the sound block at `at` (its first
 * record: `first`). */
static void lose_gap(btp_log_reader *r, uint64_t expect, uint64_t first, uint64_t at)
{
    r->loss = (btp_log_loss){expect, first - expect, 1, r->good_end, at};
    r->have_loss = 1;
}

/* Read the block at r->pos. BTP_OK (a block was consumed; records may be
 * waiting), BTP_END, BTP_E_RECORDS_LOST (records were missing before a
 * block whose own records now wait), or an error (with the block skipped
 * in keep-going mode). */
static btp_status load_block(btp_log_reader *r)
{
    uint64_t at = r->pos;
    int keep = r->flags & BTP_LOG_KEEP_GOING;
    size_t have, hs = r->hdr_size;
    const uint8_t *b = bytes_at(r, at, hs, &have);
    if (have < hs) {
        r->final = 1;
        if (r->src_error)
            return fail(r, BTP_E_IO, at + have);
        lose_tail(r, NULL, at + have);
        return fail(r, BTP_E_TRUNCATED_FILE, at);
    }
    log_block_header h;
    btp_status st = log_block_header_parse(b, r->fh.version, &h);
    if (st != BTP_OK) {
        if (!keep)
            r->final = 1;
        r->pos = resync(r, at + 1, r->fh.version);
        lose(r);
        return fail(r, st, at);
    }
    b = bytes_at(r, at, hs + h.stored_len, &have);
    if (have < hs + h.stored_len) {
        r->final = 1;
        if (r->src_error)
            return fail(r, BTP_E_IO, at + have);
        lose_tail(r, &h, at + have);
        return fail(r, BTP_E_TRUNCATED_FILE, at);
    }
    const uint8_t *stored = b + hs;
    r->pos = at + hs + h.stored_len;
    r->st.file_bytes = r->pos;
    r->st.header_bytes += hs;
    r->st.blocks++;
    /* a version 2 block states the file's parameters: they must agree */
    if (h.version == 2 && memcmp(&h.file, &r->fh, sizeof h.file) != 0)
        st = BTP_E_CORRUPT;
    if (st == BTP_OK && btp_crc32_update(0, stored, h.stored_len) != h.payload_crc)
        st = BTP_E_CHECKSUM;
    const uint8_t *raw = stored;
    if (st == BTP_OK && (h.flags & LOG_BF_PACKED)) {
        if (h.raw_len > r->raw_cap) {
            uint8_t *p = realloc(r->raw, h.raw_len);
            if (!p)
                return fail(r, BTP_E_OUT_OF_MEMORY, at);
            r->raw = p;
            r->raw_cap = h.raw_len;
        }
        st = (h.flags & LOG_BF_LZMA) ? log_lzma_unpack(stored, h.stored_len, r->raw, h.raw_len)
                                     : log_inflate(stored, h.stored_len, r->raw, h.raw_len);
        raw = r->raw;
    }
    uint64_t expect = r->next_index;
    if (st == BTP_OK) {
        switch (h.kind) {
        case LOG_BLOCK_META:
            r->st.meta_bytes += h.stored_len;
            /* placed among records already read: not where the writer put it */
            st = h.first_record < r->next_index
                     ? BTP_E_CORRUPT
                     : take_meta(r, &h, raw, h.raw_len, h.flags & LOG_BF_ITEMS);
            break;
        case LOG_BLOCK_RECORDS:
            r->st.record_bytes += h.stored_len;
            st = load_records(r, &h, raw, h.raw_len);
            if (st == BTP_E_RECORDS_LOST) {
                lose_gap(r, expect, h.first_record, at);
                if (keep) { /* the block itself was read: its records wait */
                    r->good_end = r->pos;
                    return fail(r, st, at);
                }
            }
            break;
        case LOG_BLOCK_END: {
            log_rd rd = {raw, h.raw_len, 0, 0};
            uint64_t records = log_rd_varint(&rd);
            (void)log_rd_varint(&rd);
            if (rd.bad || (rd.pos != rd.len) == !(h.flags & LOG_BF_ITEMS) ||
                records != h.first_record || records < r->next_index) {
                st = BTP_E_CORRUPT;
                break;
            }
            /* the log's last metadata (ITEMS): returned before the end */
            if (h.flags & LOG_BF_ITEMS) {
                r->st.meta_bytes += h.stored_len;
                if ((st = take_meta(r, &h, raw + rd.pos, rd.len - rd.pos, 1)) != BTP_OK)
                    break;
            }
            r->final = 1;
            if (records > r->next_index) {
                r->lost += records - r->next_index;
                lose_gap(r, expect, records, at); /* from the last block read whole */
                r->good_end = r->pos;
                r->next_index = records;
                /* reported now; then the end */
                fail(r, BTP_E_RECORDS_LOST, at);
                if (keep)
                    r->error = BTP_END;
                return BTP_E_RECORDS_LOST;
            }
            r->good_end = r->pos;
            r->error = BTP_END;
            return BTP_END;
        }
        }
    }
    if (st != BTP_OK) {
        if (!keep || st == BTP_E_NODES_LIMIT || st == BTP_E_LIVE_LIMIT ||
            st == BTP_E_EXPANSION_LIMIT || st == BTP_E_META_LIMIT || st == BTP_E_OUT_OF_MEMORY)
            r->final = 1;
        if (h.kind == LOG_BLOCK_RECORDS)
            lose(r);
        return fail(r, st, at);
    }
    r->good_end = r->pos;
    return BTP_OK;
}

void btp_log_reader_options_init(btp_log_reader_options *opt)
{
    if (!opt)
        return;
    memset(opt, 0, sizeof *opt);
    opt->max_nodes = 1u << 20;
    opt->max_live = 1u << 20;
    /* LZMA2 blocks of a real heap log hold up to a few thousand units a
     * byte (sqlite3's 1.1 million allocations in 12.6 KB: 2,048-4,096) */
    opt->max_expansion = 1u << 13;
}

/* Open over memory (src NULL) or a stream. */
static btp_status reader_open(btp_log_reader **out, const void *buf, size_t len,
                              btp_log_source_fn src, void *ctx, const btp_log_reader_options *opt)
{
    if (!out)
        return BTP_E_INVALID_ARGUMENT;
    *out = NULL;
    btp_log_reader_options o;
    if (opt)
        o = *opt;
    else
        btp_log_reader_options_init(&o);
    if (!btp_reserved_clear(o.reserved))
        return BTP_E_UNSUPPORTED;
    if ((!src && !buf && len) ||
        (o.flags & ~(unsigned)(BTP_LOG_KEEP_GOING | BTP_LOG_META_RECORDS)) || o.max_nodes < 1 ||
        o.max_live < 1)
        return BTP_E_INVALID_ARGUMENT;
    btp_log_reader *r = calloc(1, sizeof *r);
    if (!r)
        return BTP_E_OUT_OF_MEMORY;
    r->buf = buf;
    r->len = len;
    r->src = src;
    r->src_ctx = ctx;
    r->opt = o;
    r->flags = o.flags;
    r->fc_gen = 1; /* cache entries (stamped 0 when made) start out empty */
    r->last_segment = -1;
    size_t have;
    const uint8_t *b = bytes_at(r, 0, LOG_FILE_HEADER_SIZE, &have);
    btp_status st;
    if (r->src_error)
        st = BTP_E_IO;
    else if (have < LOG_FILE_HEADER_SIZE)
        st = have >= 8 && memcmp(b, btp_log_magic, 8) != 0 ? BTP_E_BAD_MAGIC
                                                          : BTP_E_TRUNCATED_FILE;
    else
        st = log_file_header_parse(b, &r->fh);
    r->pos = LOG_FILE_HEADER_SIZE;
    if (st != BTP_OK && st != BTP_E_TRUNCATED_FILE && st != BTP_E_IO &&
        (o.flags & BTP_LOG_KEEP_GOING)) {
        /* A damaged file header: every version 2 block header states what
         * it held. Read on from the first sound one; next() reports the
         * damage first. */
        uint64_t p = resync(r, 0, LOG_VERSION);
        log_block_header h;
        b = bytes_at(r, p, LOG_BLOCK_HEADER_SIZE, &have);
        if (have == LOG_BLOCK_HEADER_SIZE &&
            log_block_header_parse(b, LOG_VERSION, &h) == BTP_OK) {
            r->fh = h.file;
            r->pos = p;
            r->pending = st;
            st = BTP_OK;
        }
    }
    if (st != BTP_OK) {
        btp_log_reader_close(r);
        return st;
    }
    r->hdr_size = log_block_header_size(r->fh.version);
    r->good_end = r->pos;
    r->st.header_bytes = LOG_FILE_HEADER_SIZE;
    r->st.file_bytes = r->pos;
    st = calltree_init(&r->tree, 0);
    if (st == BTP_OK)
        st = log_model_init(&r->model, r->fh.word_bits, r->fh.max_live);
    if (st == BTP_OK && !(r->frames = malloc(BTP_LOG_MAX_DEPTH * sizeof *r->frames)))
        st = BTP_E_OUT_OF_MEMORY;
    if (st != BTP_OK) {
        btp_log_reader_close(r);
        return st;
    }
    /* the leading metadata blocks, so that e.g. the maps are known at once
     * (with META_RECORDS the caller gets them from next(), one at a time) */
    while (!r->pending && !(r->flags & BTP_LOG_META_RECORDS)) {
        log_block_header h;
        uint64_t at = r->pos;
        b = bytes_at(r, at, r->hdr_size, &have);
        if (have < r->hdr_size || log_block_header_parse(b, r->fh.version, &h) != BTP_OK ||
            h.kind != LOG_BLOCK_META)
            break;
        btp_log_stats before = r->st;
        uint64_t good = r->good_end;
        if (load_block(r) != BTP_OK) { /* let next() meet it again */
            r->pos = at;
            r->error = BTP_OK;
            r->final = 0;
            r->have_loss = 0;
            r->st = before;
            r->good_end = good;
            break;
        }
    }
    *out = r;
    return BTP_OK;
}

btp_status btp_log_reader_open(btp_log_reader **out, const void *buf, size_t len, unsigned flags)
{
    btp_log_reader_options o;
    btp_log_reader_options_init(&o);
    if (flags & ~(unsigned)BTP_LOG_KEEP_GOING) {
        if (out)
            *out = NULL;
        return BTP_E_INVALID_ARGUMENT;
    }
    o.flags = flags;
    return reader_open(out, buf, len, NULL, NULL, &o);
}

btp_status btp_log_reader_open_opts(btp_log_reader **out, const void *buf, size_t len,
                                    const btp_log_reader_options *opt)
{
    return reader_open(out, buf, len, NULL, NULL, opt);
}

btp_status btp_log_reader_open_source(btp_log_reader **out, btp_log_source_fn read, void *ctx,
                                      const btp_log_reader_options *opt)
{
    if (!read) {
        if (out)
            *out = NULL;
        return BTP_E_INVALID_ARGUMENT;
    }
    return reader_open(out, NULL, 0, read, ctx, opt);
}

static void meta_free_item(meta_item *m)
{
    free(m->key);
    free(m->data);
}

void btp_log_reader_close(btp_log_reader *r)
{
    if (!r)
        return;
    calltree_free(&r->tree);
    log_model_free(&r->model);
    if (r->have_m4)
        log_m4_free(&r->m4);
    free(r->raw);
    free(r->recs);
    free(r->frames);
    free(r->fc);
    free(r->fc_pool);
    for (size_t i = 0; i < r->n_meta; i++)
        meta_free_item(&r->meta[i]);
    free(r->meta);
    free(r->win);
    free(r);
}

unsigned btp_log_reader_word_bits(const btp_log_reader *r)
{
    return r ? r->fh.word_bits : 0;
}

btp_status btp_log_reader_next(btp_log_reader *r, btp_log_record *rec)
{
    if (!r || !rec)
        return BTP_E_INVALID_ARGUMENT;
    if (r->pending) {
        btp_status st = r->pending;
        r->pending = BTP_OK;
        return fail(r, st, 0);
    }
    int keep = r->flags & BTP_LOG_KEEP_GOING;
    while (r->next_rec >= r->n_recs) {
        /* the items of the block just read, one at a time (those of the
         * end block too, before the end; not after an error that stops) */
        if (r->meta_new && (r->flags & BTP_LOG_META_RECORDS) &&
            (keep || r->error == BTP_OK || r->error == BTP_END)) {
            size_t i = r->n_meta - r->meta_new--;
            memset(rec, 0, sizeof *rec);
            rec->kind = BTP_LOG_META;
            rec->meta = r->meta_base + i;
            rec->index = r->meta[i].record;
            return BTP_OK;
        }
        if (r->final || (r->error != BTP_OK && !keep))
            return r->error;
        r->n_recs = r->next_rec = 0;
        r->meta_new = 0;
        btp_status st = load_block(r);
        if (st != BTP_OK && !(st == BTP_END && r->meta_new && (r->flags & BTP_LOG_META_RECORDS)))
            return st;
    }
    const drec *d = &r->recs[r->next_rec];
    memset(rec, 0, sizeof *rec);
    rec->kind = (btp_log_kind)d->kind;
    rec->flags = d->flags;
    rec->index = r->block_first + r->next_rec;
    rec->size = d->size;
    rec->ptr = d->ptr;
    rec->segment = r->block_segment;
    r->next_rec++;
    rec->truncated = d->truncated;
    rec->matched = d->matched;
    if (d->matched)
        rec->stack_id = d->stack;
    if (d->kind != BTP_LOG_FREE) {
        rec->stack_id = d->stack;
        size_t n;
        const btp_frame *f = stack_frames(r, d->stack, &n);
        if (!f) {
            rec->flags |= BTP_LOG_REC_STACK_UNKNOWN;
        } else {
            rec->frames = f;
            rec->n_frames = n;
            if (spend(r, n) != BTP_OK) { /* this and every later record refused */
                r->final = 1;
                r->n_recs = r->next_rec = 0;
                memset(rec, 0, sizeof *rec);
                return fail(r, BTP_E_EXPANSION_LIMIT, r->good_end);
            }
        }
        if (d->kind == BTP_LOG_ALLOC)
            r->st.allocs++;
        else
            r->st.traces++;
    } else {
        r->st.frees++;
    }
    return BTP_OK;
}

uint64_t btp_log_reader_error_offset(const btp_log_reader *r)
{
    return r ? r->err_off : 0;
}

uint64_t btp_log_reader_lost_records(const btp_log_reader *r)
{
    return r ? r->lost : 0;
}

btp_status btp_log_reader_last_loss(const btp_log_reader *r, btp_log_loss *loss)
{
    if (!r || !loss)
        return BTP_E_INVALID_ARGUMENT;
    if (!r->have_loss)
        return BTP_END;
    *loss = r->loss;
    return BTP_OK;
}

btp_status btp_log_reader_seek_block(btp_log_reader *r, uint64_t block)
{
    if (!r)
        return BTP_E_INVALID_ARGUMENT;
    if (r->src)
        return BTP_E_UNSUPPORTED; /* a stream cannot go back */
    /* start over and replay the blocks before the target */
    calltree_reset(&r->tree);
    frames_cache_clear(r);
    live_clear(&r->model.live);
    r->pos = LOG_FILE_HEADER_SIZE;
    r->error = BTP_OK;
    r->pending = BTP_OK;
    r->final = 0;
    r->n_recs = r->next_rec = 0;
    r->meta_new = 0;
    r->next_index = 0;
    r->have_segment = r->uncertain = 0;
    r->last_segment = -1;
    r->unknown_live = 0;
    r->lost = 0;
    r->have_loss = 0;
    r->work = 0;
    r->good_end = r->pos;
    memset(&r->st, 0, sizeof r->st);
    r->st.header_bytes = r->st.file_bytes = LOG_FILE_HEADER_SIZE;
    for (;;) {
        size_t have;
        const uint8_t *b = bytes_at(r, r->pos, r->hdr_size, &have);
        if (have == r->hdr_size) {
            log_block_header h;
            if (log_block_header_parse(b, r->fh.version, &h) == BTP_OK &&
                h.block_index >= block && h.kind != LOG_BLOCK_META)
                return h.kind == LOG_BLOCK_END ? BTP_END : BTP_OK;
        }
        btp_status st = load_block(r);
        r->meta_new = 0; /* next() returns the target's records, not these */
        if (st == BTP_E_RECORDS_LOST && !r->final)
            st = BTP_OK;
        if (st != BTP_OK && (st == BTP_END || !(r->flags & BTP_LOG_KEEP_GOING) || r->final))
            return st;
        r->n_recs = r->next_rec = 0;
    }
}

btp_status btp_log_reader_meta(const btp_log_reader *r, size_t i, const char **key,
                               const void **data, size_t *len, uint64_t *record)
{
    if (!r || !key || !data || !len || i < r->meta_base)
        return BTP_E_INVALID_ARGUMENT;
    i -= r->meta_base;
    if (i >= r->n_meta)
        return BTP_END;
    *key = r->meta[i].key;
    *data = r->meta[i].data;
    *len = r->meta[i].len;
    if (record)
        *record = r->meta[i].record;
    return BTP_OK;
}

void btp_log_reader_meta_release(btp_log_reader *r, size_t n)
{
    if (!r || n <= r->meta_base)
        return;
    size_t k = n - r->meta_base < r->n_meta ? n - r->meta_base : r->n_meta;
    for (size_t i = 0; i < k; i++) {
        r->meta_bytes -= r->meta[i].len + strlen(r->meta[i].key);
        meta_free_item(&r->meta[i]);
    }
    memmove(r->meta, r->meta + k, (r->n_meta - k) * sizeof *r->meta);
    r->n_meta -= k;
    r->meta_base += k;
    if (r->meta_new > r->n_meta) /* released before next() returned them */
        r->meta_new = r->n_meta;
}

btp_status btp_log_reader_meta_find(const btp_log_reader *r, const char *key, const void **data,
                                    size_t *len)
{
    if (!r || !key || !data || !len)
        return BTP_E_INVALID_ARGUMENT;
    for (size_t i = 0; i < r->n_meta; i++)
        if (strcmp(r->meta[i].key, key) == 0) {
            *data = r->meta[i].data;
            *len = r->meta[i].len;
            return BTP_OK;
        }
    return BTP_END;
}

void btp_log_reader_stats(const btp_log_reader *r, btp_log_stats *st)
{
    if (!st)
        return;
    if (!r) {
        memset(st, 0, sizeof *st);
        return;
    }
    *st = r->st;
}
