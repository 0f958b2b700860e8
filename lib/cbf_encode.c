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

/* Number of leading zero bits of x (x != 0). */
static unsigned clz64(uint64_t x)
{
#if defined(__GNUC__)
    return (unsigned)__builtin_clzll(x);
#else
    unsigned n = 0;
    while (!(x >> 63)) {
        x <<= 1;
        n++;
    }
    return n;
#endif
}

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
    unsigned n = (72 - clz64(mag | 1)) / 8;     /* (magnitude bits + sign + 7) / 8 */
    return n < word_bits / 8 ? n : word_bits / 8;
}

/* Fewest bytes (>= 1) holding the unsigned value v. */
static unsigned unsigned_bytes(uint64_t v)
{
    return (71 - clz64(v | 1)) / 8;
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

btp_status btp_cbf_encoder_init(btp_cbf_encoder *enc, void *buf, size_t cap, unsigned word_bits,
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

btp_status btp_cbf_encoder_finish(btp_cbf_encoder *enc, int truncated, size_t *len_out)
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

size_t btp_cbf_encoder_needed(const btp_cbf_encoder *enc)
{
    return enc ? enc->needed : 0;
}

/* Write v big-endian to p[0..8). */
static inline void store_be64(uint8_t *p, uint64_t v)
{
#if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    /* A builtin, not libc: compiles to one byte swap and one store. */
    v = __builtin_bswap64(v);
    __builtin_memcpy(p, &v, 8);
#else
    p[0] = (uint8_t)(v >> 56);
    p[1] = (uint8_t)(v >> 48);
    p[2] = (uint8_t)(v >> 40);
    p[3] = (uint8_t)(v >> 32);
    p[4] = (uint8_t)(v >> 24);
    p[5] = (uint8_t)(v >> 16);
    p[6] = (uint8_t)(v >> 8);
    p[7] = (uint8_t)v;
#endif
}

/* Longest instruction: opcode and an 8-byte operand. */
#define CBF_MAX_INSTR 9

/*
 * The one-shot encoder's fast path: frames that are plain addresses, each
 * different from the one before, while the buffer has room for the longest
 * instruction. The state is kept in locals (stores to the byte buffer may
 * alias the encoder struct, which made the compiler reload it after every
 * byte) and written back at the end. The instruction is chosen by
 * address_instr as in emit_frame, so the bytes are the same as add()'s.
 * Returns how many frames it took; anything else (omit, repeats, invalid
 * frames, a nearly full buffer) is left to add().
 */
static size_t add_fast(btp_cbf_encoder *e, const btp_frame *f, size_t n)
{
    if (e->closed || e->pending || e->finished || e->limit - e->len < CBF_MAX_INSTR)
        return 0;
    const uint64_t mask = e->mask;
    const unsigned word_bits = e->word_bits, flags = e->flags;
    uint8_t *p = e->buf + e->len;
    uint8_t *const begin = p;
    uint8_t *const stop = e->buf + e->limit;
    uint64_t prev = e->prev;
    btp_frame last = e->last;
    int have_last = e->have_last, seen = e->seen_address;
    size_t i = 0;
    for (; i < n && (size_t)(stop - p) >= CBF_MAX_INSTR; i++) {
        uint64_t value = f[i].value, v;
        btp_frame_kind kind = f[i].kind;
        unsigned k;
        if ((unsigned)kind > BTP_FRAME_ASYNC || value > mask ||
            (have_last && value == last.value && kind == last.kind))
            break;
        *p = address_instr(value, kind, prev, seen, word_bits, mask, flags, &v, &k);
        /* All 8 operand bytes at once (there is room: see the loop test);
         * those past the instruction are overwritten by the next one or
         * lie beyond the stream's length. */
        store_be64(p + 1, v << (64 - 8 * k));
        p += 1 + k;
        prev = value;
        seen = 1;
        last.value = value;
        last.kind = kind;
        have_last = 1;
    }
    e->len += (size_t)(p - begin);
    e->needed += (size_t)(p - begin);
    e->prev = prev;
    e->last = last;
    e->have_last = have_last;
    e->seen_address = seen;
    return i;
}

btp_status btp_cbf_encode(const btp_frame *frames, size_t n, int truncated, unsigned word_bits,
                          unsigned flags, void *buf, size_t cap, size_t *len_out,
                          size_t *needed_out)
{
    btp_cbf_encoder enc;
    if (len_out)
        *len_out = 0;
    if (needed_out)
        *needed_out = 0;
    if (n && !frames)
        return BTP_E_INVALID_ARGUMENT;
    btp_status st = btp_cbf_encoder_init(&enc, buf, cap, word_bits, flags);
    if (st != BTP_OK)
        return st;
    for (size_t i = 0; i < n; i++) {
        i += add_fast(&enc, frames + i, n - i);
        if (i == n)
            break;
        st = add(&enc, frames[i], 1);
        if (st == BTP_E_BUFFER_TOO_SMALL)
            continue; /* closed with trunc; keep counting the size needed */
        if (st != BTP_OK)
            return st;
    }
    st = btp_cbf_encoder_finish(&enc, truncated, len_out);
    if (needed_out)
        *needed_out = enc.needed;
    return st;
}
