/* MODEL4 (spec/log.md "MODEL4"): the dictionary entries and the record
 * tags of a RECORDS block, each section one range-coded stream (log_rc.h's
 * coder) instead of CBF and bytes under deflate.
 *
 * - A dictionary entry's new frames are predicted from their caller: the
 *   frames seen below the same caller address before (a hashed table of
 *   short lists), since the same callee chains (allocator wrappers, the
 *   routines a pass calls) hang under many call paths; a frame not among
 *   them is its difference from the caller's address.
 * - A record's kind is predicted from the kinds before it, an allocation's
 *   tag from its stack's previous one (a call site allocates the same size
 *   the same way), a free's rank field from the previous free's. A block
 *   stores these tags range-coded or as bytes, whichever is smaller: long
 *   runs of records repeated give deflate matches no such model sees.
 *
 * All state is per block and of fixed size (a stack's last tag is in the
 * record model's stack memo, log_model.h). Writer and reader share this
 * code, inline so that the reader's loop keeps the decoder in registers. */
#ifndef BTPACK_LOG_MODEL4_H
#define BTPACK_LOG_MODEL4_H

#include <stdlib.h>
#include <string.h>

#include "calltree.h"
#include "log_format.h"
#include "log_model.h"
#include "log_rc.h"

#define M4_BUCKET_BITS 13  /* callee lists: 2^13 buckets by caller address */
#define M4_WAYS 8          /* callees remembered per bucket */

/* A callee list: frame values, most recent first (its length and stamp are
 * apart, so that only they need zeroing). */
typedef struct m4_bucket {
    uint64_t v[M4_WAYS];
} m4_bucket;

/* The adaptive probabilities of a block: one struct, so that a block starts
 * with one copy of them as they begin. */
typedef struct m4_probs {
    /* dictionary entries */
    log_rc_num parent, count, lit, omit;
    uint16_t fkind[5][4]; /* a frame's kind: 2-bit tree per its caller's (4: the root) */
    uint16_t d_hit[M4_WAYS], d_pos[M4_WAYS][M4_WAYS];
    /* tags */
    uint16_t kind[256][4];
    uint16_t free_same[128][4], free_field[128];
    uint16_t tag_first[128], tag_same[4], tag_size[2], tag_bin[64][64];
} m4_probs;

typedef struct log_m4 {
    uint32_t gen; /* block generation: tables stamped with another are empty */
    m4_probs p, p0; /* the block's probabilities; as they start */
    /* dictionary entries */
    m4_bucket *bucket;    /* 2^M4_BUCKET_BITS lists */
    uint32_t *bucket_gen; /* a list's stamp */
    uint8_t *bucket_n;    /* a list's length */
    /* tags */
    unsigned kinds;      /* the last 4 kinds, 2 bits each, newest lowest */
    unsigned last_free;  /* the last FREE's rank field */
    unsigned free_hist, tag_hist;
} log_m4;

/* Record kinds in TAGS. */
enum { M4_ALLOC, M4_FREE, M4_TRACE, M4_TRACE_TRUNC };

/* The API (each function below says more):
 * - log_m4_init / log_m4_free; log_m4_block: a new block, every model and
 *   prediction forgotten;
 * - log_m4_put_entry / log_m4_get_entry + log_m4_get_frame: a dictionary
 *   entry (the reader bounds the frame count before asking for frames);
 * - log_m4_put_kind / _get_kind, then for a FREE log_m4_put_free /
 *   _get_free (its rank field), for an ALLOC log_m4_put_alloc / _get_alloc
 *   (its tag, predicted from its stack's last one in the block). */

static inline void log_m4_free(log_m4 *m)
{
    free(m->bucket);
    free(m->bucket_gen);
    free(m->bucket_n);
    memset(m, 0, sizeof *m);
}

/* A block starts with one copy of the probabilities; the tables are
 * stamped with the block's generation, so that a block costs no work in
 * proportion to their size: a reader may meet many small blocks. */
static inline void log_m4_block(log_m4 *m)
{
    if (++m->gen == 0) { /* wrapped: forget the stamps for real */
        memset(m->bucket_gen, 0, sizeof *m->bucket_gen << M4_BUCKET_BITS);
        m->gen = 1;
    }
    m->p = m->p0;
    m->kinds = m->last_free = m->free_hist = m->tag_hist = 0;
}

static inline btp_status log_m4_init(log_m4 *m)
{
    memset(m, 0, sizeof *m);
    m->bucket = malloc(sizeof *m->bucket << M4_BUCKET_BITS); /* read only below bucket_n */
    m->bucket_gen = calloc((size_t)1 << M4_BUCKET_BITS, sizeof *m->bucket_gen);
    m->bucket_n = calloc((size_t)1 << M4_BUCKET_BITS, sizeof *m->bucket_n);
    if (!m->bucket || !m->bucket_gen || !m->bucket_n) {
        log_m4_free(m);
        return BTP_E_OUT_OF_MEMORY;
    }
    uint16_t *p0 = (uint16_t *)&m->p0; /* m4_probs is all probabilities */
    for (size_t i = 0; i < sizeof m->p0 / sizeof *p0; i++)
        p0[i] = LOG_RC_PROB_INIT;
    log_m4_block(m);
    return BTP_OK;
}

/* ---- dictionary entries -------------------------------------------------- */

/* The callee list of `caller`: its values, and in *n their number. */
static inline m4_bucket *m4_bucket_of(log_m4 *m, uint64_t caller, uint8_t **n)
{
    size_t i = (size_t)((caller * 0x9E3779B97F4A7C15ull) >> (64 - M4_BUCKET_BITS));
    if (m->bucket_gen[i] != m->gen) {
        m->bucket_gen[i] = m->gen;
        m->bucket_n[i] = 0;
    }
    *n = &m->bucket_n[i];
    return &m->bucket[i];
}

/* Entry k of b (k == *n: a new value v) to the front. */
static inline void m4_bucket_front(m4_bucket *b, uint8_t *n, uint32_t k, uint64_t v)
{
    if (k == *n && *n < M4_WAYS)
        (*n)++;
    if (k >= M4_WAYS)
        k = M4_WAYS - 1;
    for (; k > 0; k--)
        b->v[k] = b->v[k - 1];
    b->v[0] = v;
}

static inline void m4_put_frame(log_m4 *m, log_rc_enc *e, log_buf *out, uint64_t caller,
                      unsigned caller_kind, btp_frame f)
{
    unsigned kind = (unsigned)f.kind, node = 1;
    for (int i = 1; i >= 0; i--) {
        unsigned b = (kind >> i) & 1;
        log_rc_enc_bit(e, out, &m->p.fkind[caller_kind][node], b);
        node = node * 2 + b;
    }
    if (kind == BTP_FRAME_OMIT) {
        log_rc_put_num(e, &m->p.omit, out, f.value, 0);
        return;
    }
    uint8_t *bn;
    m4_bucket *b = m4_bucket_of(m, caller, &bn);
    uint32_t k = 0;
    while (k < *bn && b->v[k] != f.value)
        k++;
    if (*bn) {
        unsigned hit = k < *bn;
        log_rc_enc_bit(e, out, &m->p.d_hit[*bn - 1u], hit);
        if (hit) {
            node = 1;
            for (int i = 2; i >= 0; i--) {
                unsigned bit = (k >> i) & 1;
                log_rc_enc_bit(e, out, &m->p.d_pos[*bn - 1u][node], bit);
                node = node * 2 + bit;
            }
        }
    }
    if (k == *bn)
        log_rc_put_num(e, &m->p.lit, out, f.value - caller, 1);
    m4_bucket_front(b, bn, k, f.value);
}

/* A dictionary entry: new frames f[0..n) (innermost first) below `parent`
 * of tree t (which does not hold them yet). */
static inline void log_m4_put_entry(log_m4 *m, log_rc_enc *e, log_buf *out, const calltree *t,
                      uint32_t parent, const btp_frame *f, size_t n)
{
    e->started = 1;
    log_rc_put_num(e, &m->p.parent, out, t->n_nodes - 1u - parent, 0);
    log_rc_put_num(e, &m->p.count, out, n, 0);
    uint64_t caller = parent ? t->nodes[parent].value : 0;
    unsigned caller_kind = parent ? t->nodes[parent].kind : 4u;
    for (size_t i = n; i-- > 0;) {
        m4_put_frame(m, e, out, caller, caller_kind, f[i]);
        caller = f[i].value;
        caller_kind = (unsigned)f[i].kind;
    }
}

/* The parent and the number of new frames of the next entry (*n, which
 * the caller bounds before asking for the frames); in->bad when the parent
 * is out of range. */
static inline void log_m4_get_entry(log_m4 *m, log_rc_dec *d, log_rd *in, const calltree *t,
                      uint32_t *parent, uint64_t *n)
{
    if (!d->started)
        log_rc_dec_start(d, in);
    uint64_t back = log_rc_get_num(d, &m->p.parent, in, 0);
    *n = log_rc_get_num(d, &m->p.count, in, 0);
    if (back >= t->n_nodes) {
        in->bad = 1;
        back = t->n_nodes - 1u;
    }
    *parent = (uint32_t)(t->n_nodes - 1u - back);
}

/* The next frame of the entry, outermost first, below the frame `caller`
 * (the parent's, then the frame before; caller_kind 4 for the root, whose
 * value is 0). The caller must be known: an unknown one would make this
 * and every later prediction of the block differ from the writer's.
 * in->bad on damage (a kind, count or value out of range). */
static inline btp_frame log_m4_get_frame(log_m4 *m, log_rc_dec *d, log_rd *in,
                                         unsigned word_bits, uint64_t caller,
                                         unsigned caller_kind)
{
    btp_frame f = {0, BTP_FRAME_RA};
    unsigned node = 1;
    for (int i = 0; i < 2; i++)
        node = node * 2 + log_rc_dec_bit(d, in, &m->p.fkind[caller_kind][node]);
    f.kind = (btp_frame_kind)(node - 4);
    uint64_t mask = btp_word_mask(word_bits);
    if (f.kind == BTP_FRAME_OMIT) {
        f.value = log_rc_get_num(d, &m->p.omit, in, 0);
        if (f.value == 0 || (f.value & ~mask))
            in->bad = 1;
        return f;
    }
    uint8_t *bn;
    m4_bucket *b = m4_bucket_of(m, caller, &bn);
    uint32_t k = *bn;
    if (*bn && log_rc_dec_bit(d, in, &m->p.d_hit[*bn - 1u])) {
        node = 1;
        for (int i = 0; i < 3; i++)
            node = node * 2 + log_rc_dec_bit(d, in, &m->p.d_pos[*bn - 1u][node]);
        k = node - 8;
        if (k >= *bn) {
            in->bad = 1;
            return f;
        }
        f.value = b->v[k];
    } else {
        f.value = caller + log_rc_get_num(d, &m->p.lit, in, 1);
        if (f.value & ~mask) {
            in->bad = 1;
            return f;
        }
    }
    m4_bucket_front(b, bn, k, f.value);
    return f;
}

/* ---- tags ---------------------------------------------------------------- */

static inline void m4_put_tree(log_rc_enc *e, log_buf *out, uint16_t *p, unsigned bits, unsigned v)
{
    unsigned node = 1;
    for (int i = (int)bits - 1; i >= 0; i--) {
        unsigned b = (v >> i) & 1;
        log_rc_enc_bit(e, out, &p[node], b);
        node = node * 2 + b;
    }
}

static inline unsigned m4_get_tree(log_rc_dec *d, log_rd *in, uint16_t *p, unsigned bits)
{
    unsigned node = 1;
    for (unsigned i = 0; i < bits; i++)
        node = node * 2 + log_rc_dec_bit(d, in, &p[node]);
    return node - (1u << bits);
}

/* A record's kind (M4_*). */
static inline void log_m4_put_kind(log_m4 *m, log_rc_enc *e, log_buf *out, unsigned kind)
{
    e->started = 1;
    m4_put_tree(e, out, m->p.kind[m->kinds & 255], 2, kind);
    m->kinds = m->kinds << 2 | kind;
}

static inline unsigned log_m4_get_kind(log_m4 *m, log_rc_dec *d, log_rd *in)
{
    if (!d->started)
        log_rc_dec_start(d, in);
    unsigned kind = m4_get_tree(d, in, m->p.kind[m->kinds & 255], 2);
    m->kinds = m->kinds << 2 | kind;
    return kind;
}

/* A FREE's rank field (0..127): the last one's, or a bit tree. */
static inline void log_m4_put_free(log_m4 *m, log_rc_enc *e, log_buf *out, unsigned field)
{
    unsigned same = field == m->last_free;
    log_rc_enc_bit(e, out, &m->p.free_same[m->last_free][m->free_hist & 3], same);
    m->free_hist = m->free_hist << 1 | same;
    if (!same)
        m4_put_tree(e, out, m->p.free_field, 7, field);
    m->last_free = field;
}

static inline unsigned log_m4_get_free(log_m4 *m, log_rc_dec *d, log_rd *in)
{
    unsigned same = log_rc_dec_bit(d, in, &m->p.free_same[m->last_free][m->free_hist & 3]);
    m->free_hist = m->free_hist << 1 | same;
    if (!same)
        m->last_free = m4_get_tree(d, in, m->p.free_field, 7);
    return m->last_free;
}

/* An allocation's tag: with no earlier one of its stack in the block, its
 * upper 7 bits as a bit tree; else whether it is that one's, and if not
 * SIZE_SAME (per the last one's) and the bin field (per the last one's). last1:
 * the last tag + 1, 0 for none. */
static inline void log_m4_put_alloc(log_m4 *m, log_rc_enc *e, log_buf *out, unsigned last1,
                                    unsigned tag)
{
    if (!last1) {
        m4_put_tree(e, out, m->p.tag_first, 7, tag >> 1);
        return;
    }
    unsigned last = last1 - 1u, same = tag == last;
    log_rc_enc_bit(e, out, &m->p.tag_same[(m->tag_hist & 1) * 2 + (last >> 2 == 0)], same);
    m->tag_hist = same;
    if (!same) {
        log_rc_enc_bit(e, out, &m->p.tag_size[(last >> 1) & 1], (tag >> 1) & 1);
        m4_put_tree(e, out, m->p.tag_bin[last >> 2], 6, tag >> 2);
    }
}

/* The tag log_m4_put_alloc coded, `last` the memo of its stack (NULL: none
 * in this block); sets in->bad on a tag that is not an allocation's. */
static inline unsigned log_m4_get_alloc(log_m4 *m, log_rc_dec *d, log_rd *in,
                                        const stack_memo *last)
{
    unsigned tag;
    if (!last) {
        tag = m4_get_tree(d, in, m->p.tag_first, 7) << 1;
    } else {
        unsigned same =
            log_rc_dec_bit(d, in, &m->p.tag_same[(m->tag_hist & 1) * 2 + (last->tag >> 2 == 0)]);
        m->tag_hist = same;
        if (same) {
            tag = last->tag;
        } else {
            tag = log_rc_dec_bit(d, in, &m->p.tag_size[(last->tag >> 1) & 1]) << 1;
            tag |= m4_get_tree(d, in, m->p.tag_bin[last->tag >> 2], 6) << 2;
        }
    }
    if (tag == 0xFC || tag == 0xFE) /* a trace's, not an allocation's */
        in->bad = 1;
    return tag;
}

#endif
