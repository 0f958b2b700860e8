/*
 * CBF v0 encoder. Async-signal-safe by construction: no allocation, no
 * locks, no libc calls (bytes are copied by hand), only the encoder and the
 * caller's buffer are touched.
 *
 * Minimality: every frame's encoding is independent of the others' choices
 * (the "previous address" is the computed address, however it was written),
 * so choosing the shortest form per instruction gives the shortest stream.
 * Runs of identical frames are held back as a pending repeat count and
 * written as one `rep` when the run ends, so a run costs its frame plus at
 * most a few bytes.
 */
#include "cbf_internal.h"

/* Fewest bytes n (1..word bytes) whose big-endian value, sign-extended to
 * the word, equals v (v already reduced to the word). Computed in closed
 * form (one count of leading zeros) rather than by trying each n: this runs
 * twice per frame and dominated encoding time. Sign-extend v from the word
 * to 64 bits, fold negative values onto their complement; the bits of that
 * plus a sign bit, rounded up to bytes, is n. */
static unsigned signed_bytes(uint64_t v, unsigned word_bits)
{
    uint64_t sign = (uint64_t)1 << (word_bits - 1);
    uint64_t ext = (v ^ sign) - sign;           /* sign-extended to 64 bits */
    uint64_t mag = ext ^ (0 - (ext >> 63));     /* ~ext when negative */
    unsigned n = (72 - btp_clz64(mag | 1)) / 8;     /* (magnitude bits + sign + 7) / 8 */
    return n < word_bits / 8 ? n : word_bits / 8;
}

/* Fewest bytes (>= 1) holding the unsigned value v. */
static unsigned unsigned_bytes(uint64_t v)
{
    return (71 - btp_clz64(v | 1)) / 8;
}

/* Append one instruction: opcode then the low n bytes of v, big-endian.
 * Instructions are written whole or not at all. */
static inline void emit(btp_cbf_encoder *e, uint8_t op, uint64_t v, unsigned n)
{
    size_t size = 1 + (size_t)n;
    e->needed += size;
    if (e->closed)
        return;
    if (size > e->limit - e->len) {
        if (e->flags & BTP_CBF_ENC_TRUNCATE_ON_FULL) {
            /* limit is cap - 1: the terminator always has room */
            e->buf[e->len++] = CBF_OP_TRUNC;
            e->closed = 1;
        } else {
            e->closed = 2; /* overflowed: keep counting, write nothing */
        }
        return;
    }
    /* Through a local pointer: stores to uint8_t may alias *e, so writing
     * e->buf[e->len++] would reload both after every byte. */
    uint8_t *p = e->buf + e->len;
    e->len += size;
    *p++ = op;
    while (n--)
        *p++ = (uint8_t)(v >> (8 * n));
}

static void emit_rep(btp_cbf_encoder *e, uint64_t copies)
{
    if (copies <= CBF_REP_INLINE_MAX) {
        emit(e, (uint8_t)(CBF_OP_REP | (copies - 1)), 0, 0);
    } else {
        unsigned n = unsigned_bytes(copies);
        emit(e, (uint8_t)(CBF_OP_REP | CBF_OP_REP_EXT | (n - 1)), copies, n);
    }
}

/* Write `rep`s of the word's maximum while the pending count holds one. An
 * external count must fit the word, so on 16/32-bit words a long run takes
 * several. Once nothing more can be written, the remaining full chunks are
 * only counted, at once: a run of 2^64 copies on a 16-bit word would
 * otherwise loop 2^48 times. */
static void flush_full_reps(btp_cbf_encoder *e)
{
    while (e->pending >= e->mask) {
        if (e->closed) {
            uint64_t chunks = e->pending / e->mask;
            e->needed += (size_t)(chunks * (1 + e->word_bits / 8));
            e->pending -= chunks * e->mask;
            return;
        }
        emit_rep(e, e->mask);
        e->pending -= e->mask;
    }
}

/* Write all pending repeats of the last frame: maximal reps, then the
 * remainder. */
static void flush_reps(btp_cbf_encoder *e)
{
    flush_full_reps(e);
    if (e->pending)
        emit_rep(e, e->pending);
    e->pending = 0;
}

/* The instruction for the address `value` of kind pc/ra/async after the
 * address `prev`: returns the opcode, with the operand and its byte count
 * in *v and *n. Takes the encoder's settings by value so that the fast path
 * can keep them in registers. */
static inline uint8_t address_instr(uint64_t value, btp_frame_kind kind, uint64_t prev, int seen,
                                    unsigned word_bits, uint64_t mask, unsigned flags,
                                    uint64_t *v, unsigned *n)
{
    static const uint8_t base[] = {CBF_OP_PC, CBF_OP_RA, CBF_OP_ASYNC};
    uint64_t delta = (value - prev) & mask;
    unsigned abs_n = signed_bytes(value, word_bits);
    unsigned rel_n = signed_bytes(delta, word_bits);
    /* Relative unless absolute is strictly shorter, except that the first
     * address is absolute as the specification requires (same length: the
     * previous address is 0). Swift mode keeps that one relative too. */
    int absolute = abs_n < rel_n || (!seen && !(flags & BTP_CBF_ENC_SWIFT));
    /* Selects rather than branches: which form wins is unpredictable. */
    *v = absolute ? value : delta;
    *n = absolute ? abs_n : rel_n;
    return (uint8_t)(base[kind] | (absolute ? CBF_OP_ABSOLUTE : 0) | (*n - 1));
}

static inline void emit_frame(btp_cbf_encoder *e, btp_frame f)
{
    if (f.kind == BTP_FRAME_OMIT) {
        unsigned inline_max = (e->flags & BTP_CBF_ENC_SWIFT) ? CBF_OMIT_INLINE_MAX - 1
                                                             : CBF_OMIT_INLINE_MAX;
        if (f.value <= inline_max) {
            emit(e, (uint8_t)(CBF_OP_OMIT | (f.value - 1)), 0, 0);
        } else {
            unsigned n = unsigned_bytes(f.value);
            emit(e, (uint8_t)(CBF_OP_OMIT | CBF_OP_OMIT_EXT | (n - 1)), f.value, n);
        }
        return;
    }
    uint64_t v;
    unsigned n;
    uint8_t op = address_instr(f.value, f.kind, e->prev, e->seen_address, e->word_bits, e->mask,
                               e->flags, &v, &n);
    emit(e, op, v, n);
    e->prev = f.value;
    e->seen_address = 1;
}

/* The bodies of btp_cbf_encoder_init and _finish, static so that
 * btp_cbf_encode inlines them: it calls them once per trace, and on short
 * traces the calls were a noticeable part of the cost. */
static inline btp_status init(btp_cbf_encoder *enc, void *buf, size_t cap, unsigned word_bits,
                              unsigned flags)
{
    if (!enc)
        return BTP_E_INVALID_ARGUMENT;
    /* Field by field: no memset, so no libc at all. */
    enc->buf = buf;
    enc->cap = cap;
    enc->len = 0;
    enc->needed = 0;
    enc->prev = 0;
    enc->mask = btp_word_mask(word_bits);
    enc->last.value = 0;
    enc->last.kind = BTP_FRAME_PC;
    enc->pending = 0;
    enc->word_bits = word_bits;
    enc->flags = flags;
    enc->have_last = 0;
    enc->seen_address = 0;
    enc->closed = 0;
    enc->finished = 0;
    enc->error = BTP_OK;
    int truncating = (flags & BTP_CBF_ENC_TRUNCATE_ON_FULL) != 0;
    if (!btp_word_bits_valid(word_bits) || (cap && !buf) || (truncating && cap < 2)) {
        enc->error = BTP_E_INVALID_ARGUMENT;
        enc->finished = 1;
        return BTP_E_INVALID_ARGUMENT;
    }
    enc->limit = truncating ? cap - 1 : cap;
    emit(enc, cbf_info_byte(word_bits), 0, 0);
    return BTP_OK;
}

/* The body of btp_cbf_encoder_add, static so that btp_cbf_encode's loop
 * inlines it (an exported function called through the library's own PLT
 * cannot be inlined, and the call was a large part of the cost). */
static inline btp_status add(btp_cbf_encoder *enc, btp_frame frame, uint64_t copies)
{
    if (!enc || enc->finished || (unsigned)frame.kind > BTP_FRAME_OMIT)
        return BTP_E_INVALID_ARGUMENT;
    if (copies == 0 || (frame.kind == BTP_FRAME_OMIT && frame.value == 0))
        return BTP_E_ZERO_COUNT;
    if (frame.value > enc->mask)
        return BTP_E_VALUE_TOO_WIDE;
    if (enc->have_last && frame.kind == enc->last.kind && frame.value == enc->last.value) {
        if (enc->pending > UINT64_MAX - copies) {
            /* The count would overflow. Write only reps of the word's
             * maximum, the first of them completed from `copies` if need
             * be, so the run still comes out as maximal reps and one
             * remainder last (spec/cbf.md D9), however it was split
             * across calls. */
            flush_full_reps(enc);
            if (enc->pending > UINT64_MAX - copies) {
                copies -= enc->mask - enc->pending;
                enc->pending = enc->mask;
                flush_full_reps(enc);
            }
        }
        enc->pending += copies;
    } else {
        if (enc->pending)
            flush_reps(enc);
        emit_frame(enc, frame);
        enc->last = frame;
        enc->have_last = 1;
        enc->pending = copies - 1;
    }
    return enc->closed == 1 ? BTP_E_BUFFER_TOO_SMALL : BTP_OK;
}

btp_status btp_cbf_encoder_add(btp_cbf_encoder *enc, btp_frame frame, uint64_t copies)
{
    return add(enc, frame, copies);
}

static inline btp_status finish(btp_cbf_encoder *enc, int truncated, size_t *len_out)
{
    if (len_out)
        *len_out = 0;
    if (!enc || enc->finished)
        return BTP_E_INVALID_ARGUMENT;
    flush_reps(enc);
    enc->needed += 1;
    if (!enc->closed) {
        if (enc->len < enc->cap)
            enc->buf[enc->len++] = truncated ? CBF_OP_TRUNC : CBF_OP_END;
        else
            enc->closed = 2;
    }
    enc->finished = 1;
    if (enc->closed == 2)
        return BTP_E_BUFFER_TOO_SMALL;
    if (len_out)
        *len_out = enc->len;
    return enc->closed ? BTP_E_BUFFER_TOO_SMALL : BTP_OK;
}

btp_status btp_cbf_encoder_init(btp_cbf_encoder *enc, void *buf, size_t cap, unsigned word_bits,
                                unsigned flags)
{
    return init(enc, buf, cap, word_bits, flags);
}

btp_status btp_cbf_encoder_finish(btp_cbf_encoder *enc, int truncated, size_t *len_out)
{
    return finish(enc, truncated, len_out);
}

size_t btp_cbf_encoder_needed(const btp_cbf_encoder *enc)
{
    return enc ? enc->needed : 0;
}

/* Where the word-sized value x stops being copies of its sign bit: the top
 * set bit of x ^ (x << 1) is the highest bit a signed operand of x must
 * keep below its sign bit (none for 0 and -1, hence the | 1). Larger edges
 * never need fewer bytes. */
static BTP_ALWAYS_INLINE uint64_t sign_edge(uint64_t x, const unsigned word_bits)
{
    return ((x ^ (x << 1)) & btp_word_mask(word_bits)) | 1;
}

/* 8 * (operand bytes - 1) of a value with sign_edge e: the index of its top
 * bit rounded down to a multiple of 8 (signed_bytes in a few instructions). */
static inline unsigned edge_shift(uint64_t e)
{
    return (63 ^ btp_clz64(e)) & ~7u;
}

/*
 * Write the instruction for the address `value` of kind `kind` (pc, ra or
 * async) after the address `prev` at p, which has room for CBF_MAX_INSTR
 * bytes; returns the end of the instruction. Makes the same choice as
 * address_instr for every address after the first (relative unless
 * absolute is strictly shorter; for the first see first_absolute), so the
 * bytes are the same as add()'s, with fewer instructions: the absolute
 * form is sized only when its edge is below the delta's, which on real
 * traces is rare (so the branch is well predicted). word_bits is a
 * constant in each inlined copy, so the masking of 64-bit words
 * disappears.
 */
static BTP_ALWAYS_INLINE uint8_t *put_address(uint8_t *p, uint64_t value, unsigned kind,
                                              uint64_t prev, const unsigned word_bits)
{
    uint64_t delta = (value - prev) & btp_word_mask(word_bits);
    uint64_t abs_edge = sign_edge(value, word_bits);
    uint64_t rel_edge = sign_edge(delta, word_bits);
    uint64_t v = delta;
    unsigned s = edge_shift(rel_edge), absolute = 0;
    if (abs_edge < rel_edge) {
        unsigned abs_s = edge_shift(abs_edge);
        if (abs_s < s) {
            absolute = 1;
            v = value;
            s = abs_s;
        }
    }
    /* pc/ra/async are 0x10/0x20/0x30: (kind + 1) << 4; then the `a` bit
     * and bytes - 1. */
    *p = (uint8_t)(((kind + 1) << 4) + (absolute << 3) + (s >> 3));
    /* All 8 operand bytes at once (there is room); those past the
     * instruction are overwritten by the next one or lie beyond the
     * stream's length. */
    store_be64(p + 1, v << (s ^ 56)); /* 56 - s, s a multiple of 8 up to 56 */
    return p + 2 + (s >> 3);
}

/*
 * Address frames q[0..end - q), each different from the one before, while
 * they last: written at *pp, which has room for CBF_MAX_INSTR bytes per
 * frame. *prev and *last_kind are the frame before q (an omit's kind, which
 * no address shares, counts as different) and are updated. Returns the
 * first frame not taken: an omit, a repeat, an invalid frame, or end. The
 * state is passed by pointer into this always-inlined loop so that it
 * stays in registers (stores to the byte buffer may alias an encoder
 * struct, which made the compiler reload it after every byte).
 */
static BTP_ALWAYS_INLINE const btp_frame *put_addresses(uint8_t **pp, uint64_t *prev,
                                                        unsigned *last_kind, const btp_frame *q,
                                                        const btp_frame *const end,
                                                        const unsigned word_bits)
{
    const uint64_t mask = btp_word_mask(word_bits);
    uint8_t *p = *pp;
    uint64_t pv = *prev;
    unsigned pk = *last_kind;
    for (; q < end; q++) {
        uint64_t value = q->value;
        unsigned kind = (unsigned)q->kind;
        /* A repeat (value, then kind: the value differs almost always, so
         * that branch alone decides) goes to add(). */
        if (kind > BTP_FRAME_ASYNC || value > mask || (value == pv && kind == pk))
            break;
        p = put_address(p, value, kind, pv, word_bits);
        pv = value;
        pk = kind;
    }
    *pp = p;
    *prev = pv;
    *last_kind = pk;
    return q;
}

/*
 * The first address of a stream, written by put_address after a previous
 * address of 0: the delta is then the address itself, so the relative
 * instruction has the absolute one's operand and differs only in the `a`
 * bit, which this sets (spec/cbf.md: the first address is absolute),
 * except in Swift mode, which writes it relative.
 */
static inline void first_absolute(uint8_t *instr, unsigned flags)
{
    if (!(flags & BTP_CBF_ENC_SWIFT))
        *instr |= CBF_OP_ABSOLUTE;
}

/*
 * The one-shot encoder's fast path through the encoder: frames that are
 * plain addresses, each different from the one before, while the buffer
 * has room for the longest instruction. Returns how many frames it took;
 * anything else (omit, repeats, invalid frames, a nearly full buffer) is
 * left to add().
 */
static BTP_ALWAYS_INLINE size_t add_fast_w(btp_cbf_encoder *e, const btp_frame *f, size_t n,
                                           const unsigned word_bits)
{
    uint8_t *p = e->buf + e->len;
    uint8_t *const begin = p;
    uint8_t *const stop = e->buf + e->limit;
    /* Before the first address prev is 0, and a previous frame, if any,
     * is an omit (or, with have_last 0, the placeholder PC 0, which at
     * worst sends a PC 0 to add()). */
    uint64_t prev = e->prev;
    unsigned last_kind = (unsigned)e->last.kind;
    const btp_frame *q = f;
    const btp_frame *const end = f + n;
    for (;;) {
        /* An instruction takes at most CBF_MAX_INSTR bytes, so with room
         * for m of them the next m frames need no check of room (and none
         * ever reaches the limit). */
        size_t m = (size_t)(stop - p) / CBF_MAX_INSTR;
        if (m > (size_t)(end - q))
            m = (size_t)(end - q);
        if (m == 0)
            break;
        const btp_frame *const chunk = q + m;
        q = put_addresses(&p, &prev, &last_kind, q, chunk, word_bits);
        if (q != chunk)
            break;
    }
    size_t taken = (size_t)(q - f);
    if (taken) {
        if (!e->seen_address)
            first_absolute(begin, e->flags);
        e->len += (size_t)(p - begin);
        e->needed += (size_t)(p - begin);
        e->prev = prev;
        e->last.value = prev;
        e->last.kind = (btp_frame_kind)last_kind;
        e->have_last = 1;
        e->seen_address = 1;
    }
    return taken;
}

static btp_status encode_rest(const btp_frame *frames, size_t i, size_t n, int truncated,
                              unsigned word_bits, unsigned flags, uint8_t *buf, uint8_t *p,
                              size_t cap, size_t *len_out, size_t *needed_out);

/*
 * btp_cbf_encode for the usual call, a buffer of at least BTP_CBF_BOUND(n)
 * bytes: no instruction can reach its end, so there is no encoder struct
 * at all, only registers. Writes the information byte and the leading run
 * of plain, non-repeating addresses of f[0..n), then the terminator; at
 * the first other frame it hands over to encode_rest.
 */
static BTP_ALWAYS_INLINE btp_status encode_whole_w(const btp_frame *f, size_t n, int truncated,
                                                   unsigned flags, uint8_t *buf, size_t cap,
                                                   size_t *len_out, size_t *needed_out,
                                                   const unsigned word_bits)
{
    uint8_t *p = buf;
    *p++ = cbf_info_byte(word_bits);
    /* No frame before the first: prev 0 and a kind no address has. */
    uint64_t prev = 0;
    unsigned kind = BTP_FRAME_OMIT;
    size_t i = (size_t)(put_addresses(&p, &prev, &kind, f, f + n, word_bits) - f);
    if (i)
        first_absolute(buf + 1, flags);
    if (i < n)
        return encode_rest(f, i, n, truncated, word_bits, flags, buf, p, cap, len_out,
                           needed_out);
    *p++ = truncated ? CBF_OP_TRUNC : CBF_OP_END;
    if (len_out)
        *len_out = (size_t)(p - buf);
    if (needed_out)
        *needed_out = (size_t)(p - buf);
    return BTP_OK;
}

static inline btp_status encode_whole(const btp_frame *f, size_t n, int truncated,
                                            unsigned flags, uint8_t *buf, size_t cap,
                                            size_t *len_out, size_t *needed_out,
                                            unsigned word_bits)
{
    return CBF_BY_WORD_BITS(word_bits, encode_whole_w, f, n, truncated, flags, buf, cap,
                            len_out, needed_out);
}

static size_t add_fast(btp_cbf_encoder *e, const btp_frame *f, size_t n)
{
    if (e->closed || e->pending || e->finished)
        return 0;
    return CBF_BY_WORD_BITS(e->word_bits, add_fast_w, e, f, n);
}

/*
 * btp_cbf_encode's general path, through the encoder: frames[i..n) after
 * the first i, which encode_whole wrote up to p (i == 0: nothing written).
 * Kept out of line so that the usual call does not pay for setting up an
 * encoder it does not use.
 */
static BTP_NOINLINE btp_status encode_rest(const btp_frame *frames, size_t i, size_t n,
                                           int truncated, unsigned word_bits, unsigned flags,
                                           uint8_t *buf, uint8_t *p, size_t cap,
                                           size_t *len_out, size_t *needed_out)
{
    btp_cbf_encoder enc;
    if (len_out)
        *len_out = 0;
    if (needed_out)
        *needed_out = 0;
    if (n && !frames)
        return BTP_E_INVALID_ARGUMENT;
    btp_status st = init(&enc, buf, cap, word_bits, flags);
    if (st != BTP_OK)
        return st;
    if (i) {
        /* Go on in the state encode_whole left (init wrote the same
         * information byte again). */
        enc.len = enc.needed = (size_t)(p - buf);
        enc.prev = frames[i - 1].value;
        enc.last = frames[i - 1];
        enc.have_last = 1;
        enc.seen_address = 1;
    }
    for (; i < n; i++) {
        i += add_fast(&enc, frames + i, n - i);
        if (i == n)
            break;
        st = add(&enc, frames[i], 1);
        if (st == BTP_E_BUFFER_TOO_SMALL)
            continue; /* closed with trunc; keep counting the size needed */
        if (st != BTP_OK)
            return st;
    }
    st = finish(&enc, truncated, len_out);
    if (needed_out)
        *needed_out = enc.needed;
    return st;
}

btp_status btp_cbf_encode(const btp_frame *frames, size_t n, int truncated, unsigned word_bits,
                          unsigned flags, void *buf, size_t cap, size_t *len_out,
                          size_t *needed_out)
{
    /* frames NULL (allowed with n == 0) goes the general way: frames + n
     * would be arithmetic on a null pointer. */
    if (buf && frames && btp_word_bits_valid(word_bits) && n <= (SIZE_MAX - 2) / 9 &&
        cap >= BTP_CBF_BOUND(n))
        return encode_whole(frames, n, truncated, flags, buf, cap, len_out, needed_out,
                            word_bits);
    return encode_rest(frames, 0, n, truncated, word_bits, flags, buf, buf, cap, len_out,
                       needed_out);
}
