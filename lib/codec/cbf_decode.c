/*
 * CBF v0 decoder: a cursor that yields runs (frame + copy count).
 *
 * Hostile input: every read is checked against the length before it is
 * made; a `rep` count is added to a run, never iterated, so a rep of 2^64
 * copies costs O(1); the work of each call is bounded by the bytes it reads.
 */
#include <string.h>

#include "cbf_internal.h"

/* The general path of the one-shot decoders: out of line, so that the
 * fast path's registers are its own; in the small build, where it is the
 * only path, inlined into each decoder (an address array or frames, known
 * in each). */
#if BTP_CODEC_SMALL
#define CBF_REST_INLINE BTP_ALWAYS_INLINE
#else
#define CBF_REST_INLINE BTP_NOINLINE
#endif

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
    d->mask = UINT64_MAX >> (64 - d->word_bits); /* btp_word_mask, with no test */
    d->pos = 1;
    return BTP_OK;
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
    if (!BTP_CODEC_SMALL && n <= d->word_bits / 8 && d->len - at - 1 >= 8) {
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

#if !BTP_CODEC_SMALL
/* The opcodes decode_whole_w's block loop takes for a word size: pc, ra
 * or async with an operand of 1 to 7 bytes that fits the word. Bit
 * CBF_FAST_BIT(word_bits) of cbf_fast_op[op]. A table, as the test is one
 * load and one branch, off the chain of positions. */
#define CBF_FAST_BIT(word_bits) ((word_bits) / 16)
#define CBF_FAST(o)                                                                               \
    ((o) < CBF_OP_PC || (o) >= CBF_OP_OMIT || ((o) & 7) == 7 ? 0                                  \
     : ((o) & 7) < 2                                   ? 1 | 2 | 4                                \
     : ((o) & 7) < 4                                   ? 2 | 4                                    \
                                                       : 4)
#define CBF_FAST8(o)                                                                              \
    CBF_FAST(o), CBF_FAST(o + 1), CBF_FAST(o + 2), CBF_FAST(o + 3), CBF_FAST(o + 4),              \
        CBF_FAST(o + 5), CBF_FAST(o + 6), CBF_FAST(o + 7)
#define CBF_FAST64(o)                                                                             \
    CBF_FAST8(o), CBF_FAST8(o + 8), CBF_FAST8(o + 16), CBF_FAST8(o + 24), CBF_FAST8(o + 32),      \
        CBF_FAST8(o + 40), CBF_FAST8(o + 48), CBF_FAST8(o + 56)
static const uint8_t cbf_fast_op[256] = {CBF_FAST64(0), CBF_FAST64(64), CBF_FAST64(128),
                                         CBF_FAST64(192)};
#undef CBF_FAST64
#undef CBF_FAST8
#undef CBF_FAST
#endif

/*
 * Where the one-shot decoders write: an array of btp_frame, or a plain
 * array of addresses (btp_cbf_decode_addrs, which drops the kinds). The
 * always-inlined writer takes `addrs` as a constant, so each copy of a
 * fast path writes its own form with no test of which.
 */
typedef struct frame_out {
    btp_frame *frames;
    uint64_t *addrs;
} frame_out;

static BTP_ALWAYS_INLINE void put_frame(frame_out o, size_t i, uint64_t value,
                                        btp_frame_kind kind, const int addrs)
{
    if (addrs) {
        o.addrs[i] = value;
    } else {
        o.frames[i].value = value;
        o.frames[i].kind = kind;
    }
}

static BTP_ALWAYS_INLINE frame_out out_at(frame_out o, size_t i, const int addrs)
{
    frame_out r = {addrs ? NULL : o.frames + i, addrs ? o.addrs + i : NULL};
    return r;
}

#if !BTP_CODEC_SMALL
/*
 * btp_cbf_decode's fast path: address instructions (pc/ra/async with an
 * operand that fits the word and is all there) straight into
 * out[0..room), one frame each. The state is kept in locals and written
 * back at the end; the operand is read as in read_frame. It stops at
 * anything else (rep, omit, end, a fault), which next() then handles with
 * all its checks, so results and error offsets are the same. Returns the
 * frames written.
 *
 * Two loops: while at least CBF_MAX_INSTR bytes remain, blocks of frames
 * that cannot reach the end of the input (each instruction is at most
 * CBF_MAX_INSTR bytes) are read with no check of length, each operand by
 * one 8-byte load; the last bytes of the input, and a first address under
 * BTP_CBF_REJECT_RELATIVE_FIRST, one careful step at a time. word_bits is
 * a constant in each inlined copy (see decode_fast).
 */
static BTP_ALWAYS_INLINE size_t decode_fast_w(btp_cbf_decoder *d, frame_out out, size_t room,
                                              const int addrs, const unsigned word_bits)
{
    const uint8_t *const buf = d->buf;
    const size_t len = d->len;
    const uint64_t mask = btp_word_mask(word_bits);
    const unsigned word_bytes = word_bits / 8;
    const int strict_first = (d->policy & BTP_CBF_REJECT_RELATIVE_FIRST) != 0;
    size_t pos = d->pos, n = 0;
    uint64_t prev = d->prev;
    int seen = d->seen_address;
    btp_frame_kind kind = d->last.kind;
    while (n < room && pos < len) {
        if (len - pos >= CBF_MAX_INSTR && (seen || !strict_first)) {
            size_t m = (len - pos) / CBF_MAX_INSTR;
            const size_t block_end = n + (m < room - n ? m : room - n);
            do {
                uint8_t op = buf[pos];
                unsigned k = (op & 7u) + 1;
                /* pc, ra or async (0x10..0x3f) with a width the word has. */
                if ((unsigned)(op - CBF_OP_PC) >= CBF_OP_OMIT - CBF_OP_PC || k > word_bytes)
                    goto done;
                /* An arithmetic shift keeps the k bytes and sign-extends. */
                uint64_t v = (uint64_t)((int64_t)load_be64(buf + pos + 1) >> (64 - 8 * k));
                /* Relative adds prev, absolute adds 0: no branch on which
                 * (unpredictable on real traces). */
                uint64_t keep = (uint64_t)((op >> 3) & 1u) - 1; /* all ones when relative */
                prev = (v + (prev & keep)) & mask;
                kind = (btp_frame_kind)((op >> 4) - 1);
                put_frame(out, n, prev, kind, addrs);
                n++;
                pos += 1 + (size_t)k;
            } while (n < block_end);
            seen = 1;
            continue;
        }
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
        kind = (btp_frame_kind)((op >> 4) - 1);
        put_frame(out, n, prev, kind, addrs);
        n++;
        pos += 1 + (size_t)k;
    }
done:
    if (n) {
        d->pos = pos;
        d->prev = prev;
        d->seen_address = 1;
        d->last.value = prev;
        d->last.kind = kind;
        d->have_last = 1;
    }
    return n;
}

static size_t decode_fast(btp_cbf_decoder *d, frame_out out, size_t room, int addrs)
{
    if (d->status != BTP_OK)
        return 0;
    return addrs ? CBF_BY_WORD_BITS(d->word_bits, decode_fast_w, d, out, room, 1)
                 : CBF_BY_WORD_BITS(d->word_bits, decode_fast_w, d, out, room, 0);
}
#endif

/* Offset of the omit that the run read from `at` on came from: next()
 * skips any zero-count reps before it (all checked already). */
static size_t omit_offset(const btp_cbf_decoder *d, size_t at)
{
    while ((d->buf[at] & 0xf0u) == CBF_OP_REP)
        at += (d->buf[at] & CBF_OP_REP_EXT) ? 2 + (size_t)(d->buf[at] & 7u) : 1;
    return at;
}

/* btp_cbf_decode's general path, through the decoder: resumes after the
 * n frames (n may be 0) decode_whole wrote, with pos and prev as it left
 * them (and `last`, the frame before pos, when n > 0). Kept out of the
 * fast path so that its state does not compete with the fast loop for
 * registers (CBF_REST_INLINE). For an address array an omit is
 * BTP_E_UNREPRESENTABLE. */
static CBF_REST_INLINE btp_status decode_rest(const void *buf, size_t len, unsigned policy,
                                              frame_out out, const int addrs, size_t max_frames,
                                              btp_cbf_info *info, size_t n, size_t pos,
                                              uint64_t prev, btp_frame last)
{
    btp_cbf_decoder d;
    btp_cbf_run run;
    btp_status st = btp_cbf_decoder_init(&d, buf, len, policy);
    if (st == BTP_OK && max_frames && !(addrs ? (void *)out.addrs : (void *)out.frames))
        st = BTP_E_INVALID_ARGUMENT;
    if (st == BTP_OK && n) {
        d.pos = pos;
        d.prev = prev;
        d.seen_address = 1;
        d.last = last;
        d.have_last = 1;
    }
    while (st == BTP_OK) {
#if !BTP_CODEC_SMALL
        if (n < max_frames)
            n += decode_fast(&d, out_at(out, n, addrs), max_frames - n, addrs);
#endif
        size_t at = d.pos;
        st = next(&d, &run);
        if (st != BTP_OK)
            break;
        if (addrs && run.frame.kind == BTP_FRAME_OMIT && n < max_frames) {
            /* (With no room left it is BTP_E_LIMIT, as for btp_frame.) */
            st = fail(&d, BTP_E_UNREPRESENTABLE, omit_offset(&d, at));
            break;
        }
        size_t room = max_frames - n;
        size_t take = run.count < room ? (size_t)run.count : room;
        /* Field by field: a whole-struct copy of the run just stored
         * field by field stalls on store forwarding. */
        for (size_t i = 0; i < take; i++, n++)
            put_frame(out, n, run.frame.value, run.frame.kind, addrs);
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

#if !BTP_CODEC_SMALL
/*
 * The fast loop of decode_whole_w: plain address instructions from p on
 * (op is *p), into out from n, while n < room, the opcode is one the word
 * takes (cbf_fast_op) and the instruction lies inside the input. The
 * bytes p[0..10) must be readable wherever an instruction starts. With
 * `before`, that is known while p <= lim; else lim is the end of the
 * data (p is in a zero-padded copy of the input's last bytes) and an
 * instruction must end by lim. Updates *pp, *np and *prevp; returns
 * the opcode it stopped at.
 *
 * The position of each instruction is the chain every frame waits on:
 * loading each opcode once its position is known costs a load and two
 * steps of arithmetic a frame (about 6 cycles). Instead the next opcode is
 * taken from the 8 bytes after the current one, loaded for the operand
 * anyway: they depend on the position only, so they are loaded early, and
 * the chain is a shift and a byte. That needs the next opcode inside those
 * 8 bytes, so 8-byte operands (never on real traces) are left to the
 * careful path.
 */
static BTP_ALWAYS_INLINE unsigned fast_run(const uint8_t **pp, const uint8_t *lim, int before,
                                           frame_out out, size_t *np, size_t room,
                                           uint64_t *prevp, const int addrs,
                                           const unsigned word_bits)
{
    const uint64_t mask = btp_word_mask(word_bits);
    const unsigned fast_bit = CBF_FAST_BIT(word_bits);
    const uint8_t *p = *pp;
    size_t n = *np;
    uint64_t prev = *prevp;
    /* The opcode in the low byte of x, with whatever the shift that
     * brought it there left above it: the masking to a byte (a step on
     * the chain of positions) is only for the table's index and the kind,
     * off that chain; the length and the next shift count need the low 3
     * bits only (the shift takes its count mod 64, which drops the rest
     * of op << 3). */
    uint64_t x = *p;
    while (n < room && (cbf_fast_op[x & 0xff] & fast_bit) && (!before || p <= lim)) {
        const uint8_t *next = p + (x & 7u) + 2;
        if (!before && next > lim)
            break; /* the operand is cut short */
        unsigned c = (unsigned)x << 3; /* 8 * (op & 7) in its low 6 bits */
        btp_frame_kind kind = (btp_frame_kind)(((x & 0xff) >> 4) - 1);
        if (word_bits == 32) {
            /* Operands of at most 4 bytes: 4-byte loads (their swap to
             * the top of a 64-bit word, the same shifts as below) and
             * 32-bit arithmetic, which needs no masking. */
            uint64_t w = load_le32(p + 1), after = load_le32(p + 2);
            uint32_t v = (uint32_t)sar64((int64_t)byte_swap64(w), c ^ 56);
            prev = (x & CBF_OP_ABSOLUTE) ? v : (uint32_t)prev + v;
            put_frame(out, n, prev, kind, addrs);
            n++;
            p = next;
            x = shr64(after, c);
            if (!addrs)
                x &= 0xff; /* see below */
            continue;
        }
        /* The operand, and the 8 bytes from the one after the opcode on
         * (the next opcode is among them), loaded apart so that the chain
         * has no shift of the first. */
        uint64_t w = load_le64(p + 1), after = load_le64(p + 2);
        /* An arithmetic shift keeps the operand's (op & 7) + 1 bytes and
         * sign-extends them: a shift by 56 - 8 * (op & 7). */
        uint64_t v = (uint64_t)sar64((int64_t)byte_swap64(w), c ^ 56);
        /* A conditional move, not a branch: which form comes next is
         * unpredictable on real traces. */
        prev = ((x & CBF_OP_ABSOLUTE) ? v : prev + v) & mask;
        put_frame(out, n, prev, kind, addrs);
        n++;
        p = next;
        /* The next opcode: byte op & 7 of `after`. Into btp_frame the
         * kind needs it masked, and masked at once it measured faster
         * there (fewer instructions than masking it twice off the chain:
         * 33.2 against 35.3 a frame on py311_regrtest). */
        x = shr64(after, c);
        if (!addrs)
            x &= 0xff;
    }
    *pp = p;
    *np = n;
    *prevp = prev;
    return (unsigned)x & 0xff;
}

/* An inline rep at *pp (1 to 8 more copies of the frame before, written
 * out), taken when this call wrote that frame and there is room for the
 * copies; else 0, and the careful path decides. Recursion makes these
 * common (a fifth of one corpus's traces), so they stay off the careful
 * path. */
static BTP_ALWAYS_INLINE int take_rep(unsigned op, const uint8_t **pp, frame_out out,
                                      size_t *np, size_t room, uint64_t prev, const int addrs)
{
    size_t n = *np, k = (op & 7u) + 1;
    if ((op & 0xf8u) != CBF_OP_REP || n == 0 || room - n < k)
        return 0;
    btp_frame_kind kind = addrs ? BTP_FRAME_RA : out.frames[n - 1].kind;
    for (size_t i = 0; i < k; i++)
        put_frame(out, n + i, prev, kind, addrs);
    *np = n + k;
    *pp += 1;
    return 1;
}

/*
 * The last bytes of an input of at least 8 bytes (fewer than 10 from *pp
 * on): what fast_run and take_rep take there, each operand out of one
 * load of the input's last 8 bytes, which hold every operand that starts
 * at most 9 bytes before the end. Only shorter inputs go through a
 * zero-padded copy: on short traces (15 frames) the copy of every
 * stream's last bytes (a memset and a memcpy, then loads across their
 * stores) and a second loop over it cost more than a few frames.
 */
static BTP_ALWAYS_INLINE void tail_run(const uint8_t **pp, const uint8_t *buf, size_t len,
                                       frame_out out, size_t *np, size_t room, uint64_t *prevp,
                                       const int addrs, const unsigned word_bits)
{
    const uint64_t mask = btp_word_mask(word_bits);
    const unsigned fast_bit = CBF_FAST_BIT(word_bits);
    const uint8_t *const last8 = buf + len - 8, *const end = buf + len;
    const uint64_t tail = load_be64(last8);
    const uint8_t *p = *pp;
    size_t n = *np;
    uint64_t prev = *prevp;
    while (p < end) {
        unsigned op = *p;
        if (n < room && (cbf_fast_op[op] & fast_bit)) {
            unsigned k = (op & 7u) + 1; /* 1..7 */
            if (k > (size_t)(end - p) - 1)
                break; /* the operand is cut short */
            /* The operand's first byte is byte o (0..7, as p >= end - 9)
             * of `tail`, its last inside it (checked above). */
            unsigned o = (unsigned)(p + 1 - last8);
            uint64_t v = (uint64_t)sar64((int64_t)(tail << (8 * o)), 64 - 8 * k);
            prev = ((op & CBF_OP_ABSOLUTE) ? v : prev + v) & mask;
            put_frame(out, n, prev, (btp_frame_kind)((op >> 4) - 1), addrs);
            n++;
            p += 1 + k;
            continue;
        }
        if (!take_rep(op, &p, out, &n, room, prev, addrs))
            break;
    }
    *pp = p;
    *np = n;
    *prevp = prev;
}

/*
 * btp_cbf_decode's path for the usual stream: address instructions from
 * the first one on, then `end`. Everything is in registers, with no
 * decoder struct: fast_run over the input while 10 bytes follow an
 * instruction's start, then over a zero-padded copy of the last bytes. At
 * the first thing it does not handle (omit, rep, trunc, a fault, a width
 * the word lacks, an operand cut short, a relative first address under
 * BTP_CBF_REJECT_RELATIVE_FIRST, a full output array) it hands over to
 * decode_rest where it stopped, so results and error offsets are the same
 * as the decoder's. buf[0] is a valid information byte for word_bits and
 * len >= 2 (the caller checks).
 */
static BTP_ALWAYS_INLINE btp_status decode_whole_w(const uint8_t *buf, size_t len,
                                                   unsigned policy, frame_out out,
                                                   size_t max_frames, btp_cbf_info *info,
                                                   const int addrs, const unsigned word_bits)
{
    const uint8_t *p = buf + 1;
    size_t n = 0, room = max_frames;
    uint64_t prev = 0;
    if ((policy & BTP_CBF_REJECT_RELATIVE_FIRST) && !(buf[1] & CBF_OP_ABSOLUTE))
        room = 0; /* a relative first address (or not an address): next() decides */
    /* The bytes fast_run reads from an instruction's start: 10, or 6 on
     * 32-bit words, whose loads are of 4 bytes. */
    const size_t reach = word_bits == 32 ? 6 : 10;
    if (len > reach) {
        const uint8_t *const lim = buf + len - reach;
        unsigned op;
        do
            op = fast_run(&p, lim, 1, out, &n, room, &prev, addrs, word_bits);
        while (p <= lim && take_rep(op, &p, out, &n, room, prev, addrs));
    }
    size_t rest = len - (size_t)(p - buf);
    /* The usual stream ends here: the fast loop took every frame and
     * stopped at `end` (inside the input: every instruction it takes ends
     * before the input does). The last bytes need no tail then, which on
     * short traces was a noticeable part of the call. On 32-bit words
     * only: with the 64-bit loop's longer reach the tail takes the last
     * frames more often, and there the test measured no faster. */
    if (word_bits == 32 && rest && *p == CBF_OP_END)
        rest = 0;
    if (rest < reach && rest && len >= 8) {
        tail_run(&p, buf, len, out, &n, room, &prev, addrs, word_bits);
    } else if (rest < reach && rest) {
        /* An input of fewer than 8 bytes, where loads would pass it: from
         * a copy that ends at tail + 16, followed by zeros (an `end`,
         * which stops the loop). */
        uint8_t tail[32];
        memset(tail, 0, sizeof tail);
        memcpy(tail + 16 - len, buf, len);
        const uint8_t *q = tail + 16 - rest, *const end = tail + 16;
        unsigned op;
        do
            op = fast_run(&q, end, 0, out, &n, room, &prev, addrs, word_bits);
        while (q < end && take_rep(op, &q, out, &n, room, prev, addrs));
        p = buf + len - (size_t)(end - q);
    }
    size_t pos = (size_t)(p - buf);
    if (pos < len && buf[pos] == CBF_OP_END &&
        (pos + 1 == len || !(policy & BTP_CBF_REJECT_TRAILING))) {
        if (info) {
            info->word_bits = word_bits;
            info->terminator = BTP_CBF_TERM_END;
            info->truncated = 0;
            info->consumed = pos + 1;
            info->frames = n;
            info->error_offset = 0;
        }
        return BTP_OK;
    }
    /* The frame a rep would repeat: its kind matters only in btp_frame
     * output (an address array has none), where it is out[n - 1]'s. */
    btp_frame last = {prev, addrs || !n ? BTP_FRAME_RA : out.frames[n - 1].kind};
    return decode_rest(buf, len, policy, out, addrs, max_frames, info, n, pos, prev, last);
}

/* Inlined into their one caller each: on short traces the call and its
 * arguments' moves were a noticeable part of the cost. */
static BTP_ALWAYS_INLINE btp_status decode_whole(const uint8_t *buf, size_t len, unsigned policy,
                                            btp_frame *out, size_t max_frames,
                                            btp_cbf_info *info, unsigned word_bits)
{
    frame_out o = {out, NULL};
    return CBF_BY_WORD_BITS(word_bits, decode_whole_w, buf, len, policy, o, max_frames, info, 0);
}

static BTP_ALWAYS_INLINE btp_status decode_whole_addrs(const uint8_t *buf, size_t len,
                                                  unsigned policy, uint64_t *out,
                                                  size_t max_frames, btp_cbf_info *info,
                                                  unsigned word_bits)
{
    frame_out o = {NULL, out};
    return CBF_BY_WORD_BITS(word_bits, decode_whole_w, buf, len, policy, o, max_frames, info, 1);
}

/* What both one-shot decoders ask before the fast path: a stream of at
 * least 2 bytes with a valid information byte, and an output if one is
 * needed. */
static inline int whole_ok(const uint8_t *b, size_t len, const void *out, size_t max_frames)
{
    return b && len >= 2 && (out || !max_frames) && (b[0] >> 2) == 0 && (b[0] & 3) != 3;
}
#endif

/* Both one-shot decoders: the fast path for a usual stream, else the
 * decoder (always, in the small build). Always inlined, so that each
 * decoder's copy knows what it writes. */
static BTP_ALWAYS_INLINE btp_status decode_any(const void *buf, size_t len, unsigned policy,
                                               frame_out o, int addrs, size_t max_frames,
                                               btp_cbf_info *info)
{
#if !BTP_CODEC_SMALL
    const uint8_t *b = buf;
    if (whole_ok(b, len, addrs ? (const void *)o.addrs : (const void *)o.frames, max_frames))
        return addrs ? decode_whole_addrs(b, len, policy, o.addrs, max_frames, info,
                                          16u << (b[0] & 3))
                     : decode_whole(b, len, policy, o.frames, max_frames, info,
                                    16u << (b[0] & 3));
#endif
    btp_frame none = {0, BTP_FRAME_PC};
    return decode_rest(buf, len, policy, o, addrs, max_frames, info, 0, 0, 0, none);
}

btp_status btp_cbf_decode(const void *buf, size_t len, unsigned policy, btp_frame *out,
                          size_t max_frames, btp_cbf_info *info)
{
    frame_out o = {out, NULL};
    return decode_any(buf, len, policy, o, 0, max_frames, info);
}

btp_status btp_cbf_decode_addrs(const void *buf, size_t len, unsigned policy, uint64_t *out,
                                size_t max_frames, btp_cbf_info *info)
{
    frame_out o = {NULL, out};
    return decode_any(buf, len, policy, o, 1, max_frames, info);
}
