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
 * the word, equals v (v already reduced to the word). */
static unsigned signed_bytes(uint64_t v, uint64_t mask, unsigned word_bytes)
{
    for (unsigned n = 1; n < word_bytes; n++) {
        uint64_t low_mask = ((uint64_t)1 << (8 * n)) - 1;
        uint64_t low = v & low_mask;
        uint64_t ext = (low >> (8 * n - 1)) ? (low | (mask & ~low_mask)) : low;
        if (ext == v)
            return n;
    }
    return word_bytes;
}

/* Fewest bytes (>= 1) holding the unsigned value v. */
static unsigned unsigned_bytes(uint64_t v)
{
    unsigned n = 1;
    while (n < 8 && (v >> (8 * n)) != 0)
        n++;
    return n;
}

/* Append one instruction: opcode then the low n bytes of v, big-endian.
 * Instructions are written whole or not at all. */
static void emit(btp_cbf_encoder *e, uint8_t op, uint64_t v, unsigned n)
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
    e->buf[e->len++] = op;
    while (n--)
        e->buf[e->len++] = (uint8_t)(v >> (8 * n));
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

/* Write the pending repeats of the last frame. An external count must fit
 * the word, so on 16/32-bit words a long run takes several `rep`s. Once
 * nothing more can be written, the remaining full chunks are only counted,
 * at once: a run of 2^64 copies on a 16-bit word would otherwise loop 2^48
 * times. */
static void flush_reps(btp_cbf_encoder *e)
{
    while (e->pending) {
        if (e->closed && e->pending > e->mask) {
            uint64_t chunks = e->pending / e->mask;
            e->needed += (size_t)(chunks * (1 + e->word_bits / 8));
            e->pending -= chunks * e->mask;
            continue;
        }
        uint64_t chunk = e->pending < e->mask ? e->pending : e->mask;
        emit_rep(e, chunk);
        e->pending -= chunk;
    }
}

static void emit_frame(btp_cbf_encoder *e, btp_frame f)
{
    unsigned word_bytes = e->word_bits / 8;
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
    static const uint8_t base[] = {CBF_OP_PC, CBF_OP_RA, CBF_OP_ASYNC};
    uint64_t delta = (f.value - e->prev) & e->mask;
    unsigned abs_n = signed_bytes(f.value, e->mask, word_bytes);
    unsigned rel_n = signed_bytes(delta, e->mask, word_bytes);
    /* Relative unless absolute is strictly shorter, except that the first
     * address is absolute as the specification requires (same length: the
     * previous address is 0). Swift mode keeps that one relative too. */
    int absolute = abs_n < rel_n || (!e->seen_address && !(e->flags & BTP_CBF_ENC_SWIFT));
    uint8_t op = base[f.kind];
    if (absolute)
        emit(e, (uint8_t)(op | CBF_OP_ABSOLUTE | (abs_n - 1)), f.value, abs_n);
    else
        emit(e, (uint8_t)(op | (rel_n - 1)), delta, rel_n);
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

btp_status btp_cbf_encoder_add(btp_cbf_encoder *enc, btp_frame frame, uint64_t copies)
{
    if (!enc || enc->finished || (unsigned)frame.kind > BTP_FRAME_OMIT)
        return BTP_E_INVALID_ARGUMENT;
    if (copies == 0 || (frame.kind == BTP_FRAME_OMIT && frame.value == 0))
        return BTP_E_ZERO_COUNT;
    if (frame.value > enc->mask)
        return BTP_E_VALUE_TOO_WIDE;
    if (enc->have_last && frame.kind == enc->last.kind && frame.value == enc->last.value) {
        if (enc->pending > UINT64_MAX - copies) {
            /* The count no longer fits 64 bits. Top pending up to a
             * multiple of the largest count a rep holds (2^64-1 is one for
             * every word size) and write those full reps, so that only the
             * run's last rep is partial: flushing pending as it was would
             * leave a partial rep in the middle and cost an extra one. */
            uint64_t take = (enc->mask - enc->pending % enc->mask) % enc->mask;
            if (take > copies)
                take = copies;
            enc->pending += take;
            copies -= take;
            flush_reps(enc);
        }
        enc->pending += copies;
    } else {
        flush_reps(enc);
        emit_frame(enc, frame);
        enc->last = frame;
        enc->have_last = 1;
        enc->pending = copies - 1;
    }
    return enc->closed == 1 ? BTP_E_BUFFER_TOO_SMALL : BTP_OK;
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
        st = btp_cbf_encoder_add(&enc, frames[i], 1);
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
