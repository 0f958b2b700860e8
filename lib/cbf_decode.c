/*
 * CBF v0 decoder: a cursor that yields runs (frame + copy count).
 *
 * Hostile input: every read is checked against the length before it is
 * made; a `rep` count is added to a run, never iterated, so a rep of 2^64
 * copies costs O(1); the work of each call is bounded by the bytes it reads.
 */
#include "cbf_internal.h"

static btp_status fail(btp_cbf_decoder *d, btp_status st, size_t offset)
{
    d->status = st;
    d->err_offset = offset;
    return st;
}

btp_status btp_cbf_decoder_init(btp_cbf_decoder *d, const void *buf, size_t len, unsigned policy)
{
    if (!d)
        return BTP_E_INVALID_ARGUMENT;
    *d = (btp_cbf_decoder){0};
    d->buf = buf;
    d->len = len;
    d->policy = policy;
    if (len && !buf)
        return fail(d, BTP_E_INVALID_ARGUMENT, 0);
    if (len == 0)
        return fail(d, BTP_E_EMPTY_INPUT, 0);
    uint8_t info = d->buf[0];
    if (info >> 2 != 0)
        return fail(d, BTP_E_BAD_VERSION, 0);
    if ((info & 3) == 3)
        return fail(d, BTP_E_RESERVED_SIZE, 0);
    d->word_bits = 16u << (info & 3);
    d->mask = btp_word_mask(d->word_bits);
    d->pos = 1;
    return BTP_OK;
}

/* The 8 bytes at p as a big-endian number (compilers make this one load). */
static inline uint64_t load_be64(const uint8_t *p)
{
    return (uint64_t)p[0] << 56 | (uint64_t)p[1] << 48 | (uint64_t)p[2] << 40 |
           (uint64_t)p[3] << 32 | (uint64_t)p[4] << 24 | (uint64_t)p[5] << 16 |
           (uint64_t)p[6] << 8 | (uint64_t)p[7];
}

/* The n-byte (1..8) big-endian address operand at p, sign-extended to 64
 * bits; p[0..8) must be readable. */
static inline uint64_t address_operand(const uint8_t *p, unsigned n)
{
    uint64_t sign = (uint64_t)1 << (8 * n - 1);
    return ((load_be64(p) >> (64 - 8 * n)) ^ sign) - sign;
}

/* Read the n-byte big-endian operand after the opcode at `at`.
 * Checks width against the word, then length. With ACCEPT_WIDE any width
 * is read: an address (at most 8 bytes) keeps its low bytes as Swift does,
 * and a count (up to 32 bytes) is taken whole when it fits 64 bits; a
 * count above 2^64-1 is still too wide, as its low bytes would be a
 * silently wrong answer. Sign-extends from the first byte when `sign` is
 * set (addresses only). */
static btp_status operand(btp_cbf_decoder *d, size_t at, unsigned n, int sign,
                          btp_status too_wide, uint64_t *out)
{
    int wide = (d->policy & BTP_CBF_ACCEPT_WIDE) != 0;
    if (n > d->word_bits / 8 && !wide)
        return fail(d, too_wide, at);
    if (d->len - at - 1 < n)
        return fail(d, BTP_E_TRUNCATED_OPERAND, at);
    const uint8_t *p = d->buf + at + 1;
    for (; n > 8; n--, p++)
        if (*p != 0)
            return fail(d, too_wide, at);
    uint64_t v = (sign && (p[0] & 0x80)) ? UINT64_MAX : 0;
    for (unsigned i = 0; i < n; i++)
        v = v << 8 | p[i];
    *out = v;
    return BTP_OK;
}

/* Read the rep at d->pos: extra copies into *copies. */
static btp_status read_rep(btp_cbf_decoder *d, uint8_t op, size_t *size, uint64_t *copies)
{
    unsigned n = (op & 7u) + 1;
    if (!d->have_last)
        return fail(d, BTP_E_REP_WITHOUT_FRAME, d->pos);
    if (!(op & CBF_OP_REP_EXT)) {
        *size = 1;
        *copies = n;
        return BTP_OK;
    }
    btp_status st = operand(d, d->pos, n, 0, BTP_E_COUNT_TOO_WIDE, copies);
    if (st != BTP_OK)
        return st;
    if (*copies == 0 && (d->policy & BTP_CBF_REJECT_ZERO_COUNT))
        return fail(d, BTP_E_ZERO_COUNT, d->pos);
    *size = 1 + (size_t)n;
    return BTP_OK;
}

/* Read the frame instruction (pc/ra/async/omit) at d->pos into *f. */
static btp_status read_frame(btp_cbf_decoder *d, uint8_t op, btp_frame *f)
{
    size_t at = d->pos;
    uint64_t v;
    btp_status st;
    if (op >= CBF_OP_OMIT) {
        unsigned c = op & 0x1fu;
        f->kind = BTP_FRAME_OMIT;
        if (!(op & CBF_OP_OMIT_EXT)) {
            f->value = c + 1;
            d->pos += 1;
            return BTP_OK;
        }
        if ((st = operand(d, at, c + 1, 0, BTP_E_COUNT_TOO_WIDE, &v)) != BTP_OK)
            return st;
        if (v == 0 && (d->policy & BTP_CBF_REJECT_ZERO_COUNT))
            return fail(d, BTP_E_ZERO_COUNT, at);
        f->value = v;
        d->pos += 2 + (size_t)c;
        return BTP_OK;
    }
    unsigned n = (op & 7u) + 1;
    int absolute = (op & CBF_OP_ABSOLUTE) != 0;
    if (n <= d->word_bits / 8 && d->len - at - 1 >= 8) {
        /* Fast path for the common case, an operand that fits the word
         * with 8 bytes readable after the opcode: one big-endian load
         * keeps the n wanted bytes and sign-extends them, instead of a
         * byte loop whose length the branch predictor cannot guess. */
        v = address_operand(d->buf + at + 1, n);
    } else if ((st = operand(d, at, n, 1, BTP_E_ADDRESS_TOO_WIDE, &v)) != BTP_OK) {
        return st;
    }
    if (!absolute && !d->seen_address && (d->policy & BTP_CBF_REJECT_RELATIVE_FIRST))
        return fail(d, BTP_E_FIRST_ADDRESS_RELATIVE, at);
    /* Wrap-around modulo the word, as real encoders rely on. */
    d->prev = (absolute ? v : d->prev + v) & d->mask;
    d->seen_address = 1;
    f->kind = (btp_frame_kind)((op >> 4) - 1);
    f->value = d->prev;
    d->pos += 1 + (size_t)n;
    return BTP_OK;
}

/* The body of btp_cbf_decoder_next, static so that btp_cbf_decode's loop
 * inlines it (the exported function is called through the PLT). */
static inline btp_status next(btp_cbf_decoder *d, btp_cbf_run *run)
{
    if (!d || !run)
        return BTP_E_INVALID_ARGUMENT;
    if (d->status != BTP_OK)
        return d->status;
    for (;;) {
        if (d->pos >= d->len) {
            d->terminator = BTP_CBF_TERM_NONE;
            return d->status = BTP_END;
        }
        uint8_t op = d->buf[d->pos];
        if (op == CBF_OP_END || op == CBF_OP_TRUNC) {
            d->terminator = op == CBF_OP_END ? BTP_CBF_TERM_END : BTP_CBF_TERM_TRUNC;
            d->pos++;
            if (d->pos < d->len && (d->policy & BTP_CBF_REJECT_TRAILING))
                return fail(d, BTP_E_TRAILING_BYTES, d->pos);
            return d->status = BTP_END;
        }
        if ((op & 0xf0u) == CBF_OP_REP) {
            /* A rep not merged into the run before it: a run that
             * overflowed 2^64-1, or a lenient zero-count rep. */
            size_t size;
            uint64_t copies;
            btp_status st = read_rep(d, op, &size, &copies);
            if (st != BTP_OK)
                return st;
            d->pos += size;
            if (copies == 0)
                continue;
            run->frame = d->last;
            run->count = copies;
            break;
        }
        if (op < CBF_OP_PC || op >= CBF_OP_REP)
            return fail(d, BTP_E_RESERVED_OPCODE, d->pos);
        /* Into a local first: copying run->frame right after read_frame
         * stored it field by field stalls on store forwarding (most of the
         * decoding time before). */
        btp_frame f;
        btp_status st = read_frame(d, op, &f);
        if (st != BTP_OK)
            return st;
        run->frame = f;
        d->last = f;
        d->have_last = 1;
        run->count = 1;
        break;
    }
    /* Merge the reps that follow into this run. A faulty rep ends the run
     * and leaves its error (already recorded) for the next call. */
    while (d->pos < d->len && (d->buf[d->pos] & 0xf0u) == CBF_OP_REP) {
        size_t size;
        uint64_t copies;
        if (read_rep(d, d->buf[d->pos], &size, &copies) != BTP_OK)
            break; /* recorded in d->status, returned by the next call */
        if (copies > UINT64_MAX - run->count)
            break; /* this rep starts the next run */
        run->count += copies;
        d->pos += size;
    }
    return BTP_OK;
}

btp_status btp_cbf_decoder_next(btp_cbf_decoder *d, btp_cbf_run *run)
{
    return next(d, run);
}

unsigned btp_cbf_decoder_word_bits(const btp_cbf_decoder *d)
{
    return d ? d->word_bits : 0;
}

size_t btp_cbf_decoder_consumed(const btp_cbf_decoder *d)
{
    return d ? d->pos : 0;
}

size_t btp_cbf_decoder_error_offset(const btp_cbf_decoder *d)
{
    return d ? d->err_offset : 0;
}

btp_cbf_terminator btp_cbf_decoder_terminator(const btp_cbf_decoder *d)
{
    return d ? d->terminator : BTP_CBF_TERM_NONE;
}

/*
 * btp_cbf_decode's fast path: address instructions (pc/ra/async with an
 * operand that fits the word and is all there) straight into
 * out[0..room), one frame each. The state is kept
 * in locals and written back at the end; the operand is read as in
 * read_frame. It stops at anything else (rep, omit, end, a fault, the last
 * bytes of the input), which next() then handles with all its checks, so
 * results and error offsets are the same. Returns the frames written.
 */
static size_t decode_fast(btp_cbf_decoder *d, btp_frame *out, size_t room)
{
    if (d->status != BTP_OK)
        return 0;
    const uint8_t *const buf = d->buf;
    const size_t len = d->len;
    const uint64_t mask = d->mask;
    const unsigned word_bytes = d->word_bits / 8;
    const int strict_first = (d->policy & BTP_CBF_REJECT_RELATIVE_FIRST) != 0;
    size_t pos = d->pos, n = 0;
    uint64_t prev = d->prev;
    int seen = d->seen_address;
    btp_frame f = d->last;
    while (n < room && pos < len) {
        uint8_t op = buf[pos];
        unsigned k = (op & 7u) + 1;
        int absolute = (op & CBF_OP_ABSOLUTE) != 0;
        if (op < CBF_OP_PC || op >= CBF_OP_OMIT || k > word_bytes ||
            (!absolute && !seen && strict_first) || len - pos - 1 < k)
            break;
        uint64_t v;
        if (len - pos > 8) {
            v = address_operand(buf + pos + 1, k);
        } else {
            /* The last bytes of the input: byte by byte, never past len. */
            v = (buf[pos + 1] & 0x80) ? UINT64_MAX : 0;
            for (unsigned i = 1; i <= k; i++)
                v = v << 8 | buf[pos + i];
        }
        prev = (absolute ? v : prev + v) & mask;
        seen = 1;
        f.value = prev;
        f.kind = (btp_frame_kind)((op >> 4) - 1);
        out[n].value = f.value;
        out[n].kind = f.kind;
        n++;
        pos += 1 + (size_t)k;
    }
    if (n) {
        d->pos = pos;
        d->prev = prev;
        d->seen_address = 1;
        d->last = f;
        d->have_last = 1;
    }
    return n;
}

btp_status btp_cbf_decode(const void *buf, size_t len, unsigned policy, btp_frame *out,
                          size_t max_frames, btp_cbf_info *info)
{
    btp_cbf_decoder d;
    btp_cbf_run run;
    size_t n = 0;
    btp_status st = btp_cbf_decoder_init(&d, buf, len, policy);
    if (st == BTP_OK && max_frames && !out)
        st = BTP_E_INVALID_ARGUMENT;
    while (st == BTP_OK) {
        if (n < max_frames)
            n += decode_fast(&d, out + n, max_frames - n);
        st = next(&d, &run);
        if (st != BTP_OK)
            break;
        uint64_t room = max_frames - n;
        uint64_t take = run.count < room ? run.count : room;
        /* Field by field: a whole-struct copy of the run just stored
         * field by field stalls on store forwarding. */
        for (uint64_t i = 0; i < take; i++, n++) {
            out[n].value = run.frame.value;
            out[n].kind = run.frame.kind;
        }
        if (take < run.count)
            st = BTP_E_LIMIT;
    }
    if (info) {
        info->word_bits = d.word_bits;
        info->terminator = d.terminator;
        info->truncated = d.terminator == BTP_CBF_TERM_TRUNC;
        info->consumed = d.pos;
        info->frames = n;
        info->error_offset = d.err_offset;
    }
    return st == BTP_END ? BTP_OK : st;
}
