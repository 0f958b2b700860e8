/* Adaptive binary range coding of the pointer deltas of a trace log block
 * (spec/log.md "PTRS with PTRS_RANGE"). A heap pointer coded from a nearby
 * one is a number of some 10-30 bits whose low bits are the allocator's
 * alignment (zero) and whose length varies: as LEB128 bytes under deflate
 * it costs about 1.8 times what a coder that models the length and the low
 * bits costs, which is most of the size of a log of a real program.
 *
 * The coder is LZMA's (11-bit probabilities adapted by 1/32, a carry-less
 * range coder with a cache byte); the decoder also normalizes after each
 * bit, so that it consumes exactly the bytes the encoder wrote and a reader
 * can insist that the section ends where the last value does. The decoder
 * reads only inside its section (past the end it sees zero bytes and marks
 * itself bad), so any input costs at most a bounded number of steps per
 * value decoded. Writer and reader share this file so the model cannot
 * drift apart. */
#ifndef BTPACK_LOG_RC_H
#define BTPACK_LOG_RC_H

#include <stddef.h>
#include <stdint.h>

#include "log_format.h"

#define LOG_RC_PROB_BITS 11
#define LOG_RC_PROB_INIT (1u << (LOG_RC_PROB_BITS - 1))
#define LOG_RC_MOVE_BITS 5
#define LOG_RC_TOP (1u << 24)
#define LOG_RC_HI_BITS 3  /* bits under the leading one coded with a context */
#define LOG_RC_LO_BITS 4  /* lowest bits coded with a context (alignment) */
#define LOG_RC_RECENT 16  /* deltas remembered, most recently used first */

/* An adaptive model of numbers (log_rc_put_num). */
typedef struct log_rc_num {
    uint16_t len[128];
    uint16_t sign[65];
    uint16_t hi[65][1u << LOG_RC_HI_BITS];
} log_rc_num;

/* The adaptive model of one block's deltas. A delta is first looked up
 * among the LOG_RC_RECENT last distinct ones (an allocator handing out
 * chunks of a few sizes in turn repeats a few deltas): a hit bit (context:
 * whether the previous delta was a hit), then its position as a 4-level
 * bit tree, and it moves to the front. A miss codes the bit length of
 * |delta| (0..64) as a 7-level bit tree, the sign per length, the next
 * LOG_RC_HI_BITS bits as a bit tree per length, and the lowest
 * LOG_RC_LO_BITS bits per position; every other bit is coded flat; the
 * delta then goes to the front, the last one out. */
typedef struct log_rc_model {
    uint64_t recent[LOG_RC_RECENT];
    uint32_t n_recent;
    unsigned last_hit;
    uint16_t hit[2];
    uint16_t pos[LOG_RC_RECENT];
    log_rc_num lit; /* a miss: the delta as a signed number, its low bits as lo says */
    uint16_t lo[LOG_RC_LO_BITS];
    /* MODEL3 (spec/log.md "MODEL3"): a freed pointer's age, a free's large
     * rank, a deep bin position */
    log_rc_num age, rank, deep;
} log_rc_model;

static inline void log_rc_model_init(log_rc_model *m)
{
    m->n_recent = 0;
    m->last_hit = 0;
    uint16_t *p = m->hit;
    for (size_t i = 0; i < (sizeof *m - offsetof(log_rc_model, hit)) / sizeof *p; i++)
        p[i] = LOG_RC_PROB_INIT;
}

/* Move entry k to the front, or (k == n_recent) put v there. */
static inline void log_rc_recent_front(log_rc_model *m, uint32_t k, uint64_t v)
{
    if (k == m->n_recent && m->n_recent < LOG_RC_RECENT)
        m->n_recent++;
    if (k >= LOG_RC_RECENT)
        k = LOG_RC_RECENT - 1;
    for (; k > 0; k--)
        m->recent[k] = m->recent[k - 1];
    m->recent[0] = v;
}

/* Whether v is among the recent deltas. */
static inline int log_rc_recent_has(const log_rc_model *m, uint64_t v)
{
    for (uint32_t k = 0; k < m->n_recent; k++)
        if (m->recent[k] == v)
            return 1;
    return 0;
}

/* ---- encoder: appends to a log_buf ------------------------------------ */
typedef struct log_rc_enc {
    uint64_t low;
    uint32_t range;
    uint8_t cache;
    uint64_t cache_size;
    int started;
} log_rc_enc;

static inline void log_rc_enc_init(log_rc_enc *e)
{
    e->low = 0;
    e->range = 0xFFFFFFFFu;
    e->cache = 0;
    e->cache_size = 1;
    e->started = 0;
}

static inline void log_rc_shift_low(log_rc_enc *e, log_buf *out)
{
    if ((uint32_t)e->low < 0xFF000000u || (e->low >> 32) != 0) {
        uint8_t carry = (uint8_t)(e->low >> 32), b = e->cache;
        do {
            log_buf_byte(out, (uint8_t)(b + carry));
            b = 0xFF;
        } while (--e->cache_size != 0);
        e->cache = (uint8_t)(e->low >> 24);
    }
    e->cache_size++;
    e->low = (uint32_t)e->low << 8;
}

static inline void log_rc_enc_bit(log_rc_enc *e, log_buf *out, uint16_t *prob, unsigned bit)
{
    uint32_t bound = (e->range >> LOG_RC_PROB_BITS) * *prob;
    if (!bit) {
        e->range = bound;
        *prob = (uint16_t)(*prob + (((1u << LOG_RC_PROB_BITS) - *prob) >> LOG_RC_MOVE_BITS));
    } else {
        e->low += bound;
        e->range -= bound;
        *prob = (uint16_t)(*prob - (*prob >> LOG_RC_MOVE_BITS));
    }
    while (e->range < LOG_RC_TOP) {
        e->range <<= 8;
        log_rc_shift_low(e, out);
    }
}

static inline void log_rc_enc_flat(log_rc_enc *e, log_buf *out, unsigned bit)
{
    e->range >>= 1;
    if (bit)
        e->low += e->range;
    while (e->range < LOG_RC_TOP) {
        e->range <<= 8;
        log_rc_shift_low(e, out);
    }
}

/* The last bytes of a section (nothing when no value was coded). */
static inline void log_rc_enc_finish(log_rc_enc *e, log_buf *out)
{
    if (!e->started)
        return;
    for (int i = 0; i < 5; i++)
        log_rc_shift_low(e, out);
}

/* ---- decoder: reads a log_rd section ---------------------------------- */
typedef struct log_rc_dec {
    uint32_t range, code;
    int started;
} log_rc_dec;

static inline uint8_t log_rc_next_byte(log_rd *in)
{
    if (in->pos >= in->len) {
        in->bad = 1; /* read past the section: it is damaged */
        return 0;
    }
    return in->p[in->pos++];
}

static inline void log_rc_dec_start(log_rc_dec *d, log_rd *in)
{
    d->started = 1;
    d->range = 0xFFFFFFFFu;
    d->code = 0;
    if (log_rc_next_byte(in) != 0) /* the encoder's first byte is always 0 */
        in->bad = 1;
    for (int i = 0; i < 4; i++)
        d->code = d->code << 8 | log_rc_next_byte(in);
}

static inline unsigned log_rc_dec_bit(log_rc_dec *d, log_rd *in, uint16_t *prob)
{
    uint32_t bound = (d->range >> LOG_RC_PROB_BITS) * *prob;
    unsigned bit;
    if (d->code < bound) {
        d->range = bound;
        *prob = (uint16_t)(*prob + (((1u << LOG_RC_PROB_BITS) - *prob) >> LOG_RC_MOVE_BITS));
        bit = 0;
    } else {
        d->code -= bound;
        d->range -= bound;
        *prob = (uint16_t)(*prob - (*prob >> LOG_RC_MOVE_BITS));
        bit = 1;
    }
    while (d->range < LOG_RC_TOP) {
        d->range <<= 8;
        d->code = d->code << 8 | log_rc_next_byte(in);
    }
    return bit;
}

static inline unsigned log_rc_dec_flat(log_rc_dec *d, log_rd *in)
{
    d->range >>= 1;
    unsigned bit = d->code >= d->range;
    if (bit)
        d->code -= d->range;
    while (d->range < LOG_RC_TOP) {
        d->range <<= 8;
        d->code = d->code << 8 | log_rc_next_byte(in);
    }
    return bit;
}

static inline unsigned log_rc_bitlen(uint64_t v)
{
    return v ? 64u - (unsigned)__builtin_clzll(v) : 0u;
}

/* ---- numbers: a delta's full value, and MODEL3's ------------------------- */
/* Its bit length L (0..64) as a 7-level bit tree, for a signed number the
 * sign (1 = negative) per L, then the LOG_RC_HI_BITS bits under the leading
 * one as a bit tree per L; with `lo` the lowest LOG_RC_LO_BITS bits one
 * model per position (a delta's alignment); every other bit flat. */
static inline void log_rc_put_bits(log_rc_enc *e, log_rc_num *m, uint16_t *lo, log_buf *out,
                                   uint64_t v, int is_signed)
{
    unsigned neg = 0;
    if (is_signed && (v >> 63)) {
        neg = 1;
        v = 0 - v;
    }
    unsigned L = log_rc_bitlen(v), node = 1;
    for (int i = 6; i >= 0; i--) {
        unsigned b = (L >> i) & 1;
        log_rc_enc_bit(e, out, &m->len[node], b);
        node = node * 2 + b;
    }
    if (L == 0)
        return;
    if (is_signed)
        log_rc_enc_bit(e, out, &m->sign[L], neg);
    node = 1;
    for (int i = (int)L - 2; i >= 0; i--) {
        unsigned b = (unsigned)(v >> i) & 1;
        if (i >= (int)L - 1 - (int)LOG_RC_HI_BITS) {
            log_rc_enc_bit(e, out, &m->hi[L][node], b);
            node = node * 2 + b;
        } else if (lo && i < (int)LOG_RC_LO_BITS) {
            log_rc_enc_bit(e, out, &lo[i], b);
        } else {
            log_rc_enc_flat(e, out, b);
        }
    }
}

/* A number coded by log_rc_put_bits with the same lo (modulo 2^64 when
 * signed); sets in->bad on a length beyond 64 bits. */
static inline uint64_t log_rc_get_bits(log_rc_dec *d, log_rc_num *m, uint16_t *lo, log_rd *in,
                                       int is_signed)
{
    unsigned node = 1;
    for (int i = 0; i < 7; i++)
        node = node * 2 + log_rc_dec_bit(d, in, &m->len[node]);
    unsigned L = node - 128;
    if (L == 0)
        return 0;
    if (L > 64) {
        in->bad = 1;
        return 0;
    }
    unsigned neg = is_signed ? log_rc_dec_bit(d, in, &m->sign[L]) : 0;
    uint64_t v = 1;
    node = 1;
    for (int i = (int)L - 2; i >= 0; i--) {
        unsigned b;
        if (i >= (int)L - 1 - (int)LOG_RC_HI_BITS) {
            b = log_rc_dec_bit(d, in, &m->hi[L][node]);
            node = node * 2 + b;
        } else if (lo && i < (int)LOG_RC_LO_BITS) {
            b = log_rc_dec_bit(d, in, &lo[i]);
        } else {
            b = log_rc_dec_flat(d, in);
        }
        v = v << 1 | b;
    }
    return neg ? 0 - v : v;
}

/* ---- one delta (ptr - base, modulo 2^64) ------------------------------ */
static inline void log_rc_put_delta(log_rc_enc *e, log_rc_model *m, log_buf *out, uint64_t delta)
{
    e->started = 1;
    uint32_t k = 0;
    while (k < m->n_recent && m->recent[k] != delta)
        k++;
    unsigned hit = k < m->n_recent, node = 1;
    log_rc_enc_bit(e, out, &m->hit[m->last_hit], hit);
    m->last_hit = hit;
    log_rc_recent_front(m, k, delta);
    if (hit) {
        for (int i = 3; i >= 0; i--) {
            unsigned b = (k >> i) & 1;
            log_rc_enc_bit(e, out, &m->pos[node], b);
            node = node * 2 + b;
        }
        return;
    }
    log_rc_put_bits(e, &m->lit, m->lo, out, delta, 1);
}

/* The next delta; sets in->bad on a length beyond 64 bits or a read past
 * the section. */
static inline uint64_t log_rc_get_delta(log_rc_dec *d, log_rc_model *m, log_rd *in)
{
    if (!d->started)
        log_rc_dec_start(d, in);
    unsigned hit = log_rc_dec_bit(d, in, &m->hit[m->last_hit]), node = 1;
    m->last_hit = hit;
    if (hit) {
        for (int i = 0; i < 4; i++)
            node = node * 2 + log_rc_dec_bit(d, in, &m->pos[node]);
        uint32_t k = node - 16;
        if (k >= m->n_recent) {
            in->bad = 1;
            return 0;
        }
        uint64_t v = m->recent[k];
        log_rc_recent_front(m, k, v);
        return v;
    }
    uint64_t v = log_rc_get_bits(d, &m->lit, m->lo, in, 1);
    log_rc_recent_front(m, m->n_recent, v);
    return v;
}

/* MODEL3's numbers (a freed pointer's age, free ranks): log_rc_put_bits
 * with every low bit flat. */
static inline void log_rc_put_num(log_rc_enc *e, log_rc_num *m, log_buf *out, uint64_t v,
                                  int is_signed)
{
    e->started = 1;
    log_rc_put_bits(e, m, NULL, out, v, is_signed);
}

/* A number coded by log_rc_put_num (modulo 2^64 when signed); sets
 * in->bad on a length beyond 64 bits or a read past the section. */
static inline uint64_t log_rc_get_num(log_rc_dec *d, log_rc_num *m, log_rd *in, int is_signed)
{
    if (!d->started)
        log_rc_dec_start(d, in);
    return log_rc_get_bits(d, m, NULL, in, is_signed);
}

#endif
