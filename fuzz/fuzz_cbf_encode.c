/*
 * Fuzz target: the CBF encoder, into buffers of every size.
 *
 * Input: byte 0 chooses the word size (bits 0-1: 16, 32, 64, 64), Swift's
 * choices (bit 2) and whether the trace is closed with trunc (bit 3). Then
 * up to MAX_RECORDS records, each a header byte
 *   bits 0-1 kind (pc, ra, async, omit)
 *   bits 2-4 value bytes - 1 (big-endian value follows), unless bit 7
 *   bit 5    a copies byte follows (else 1 copy); with bit 6 too, the
 *            copies are 8 big-endian bytes instead (the full 64-bit range)
 *   bit 7    the value is the previous record's (makes runs likely)
 * Each record goes to btp_cbf_encoder_add(), whose status must be what the
 * header promises (zero count, value too wide, or ok). Then for every
 * capacity from 0 to MAX_CAP_SWEEP, CAP_SAMPLES more up to the size needed,
 * and the size needed - 1, + 0 and + 1, with the buffer ending at a guard
 * page:
 *  - without TRUNCATE_ON_FULL: ok with exactly the reference bytes when the
 *    buffer is big enough, else BTP_E_BUFFER_TOO_SMALL, length 0, and the
 *    same size needed;
 *  - with TRUNCATE_ON_FULL: the buffer holds valid CBF (strict decoding,
 *    nothing left over) whose frames are a prefix of the frames added,
 *    closed by trunc unless everything fitted; the prefix never shrinks as
 *    the buffer grows.
 * Also the one-shot btp_cbf_encode() of the frames expanded one by one must
 * give the same bytes as the streaming adds with copy counts, and
 * btp_cbf_encode_addrs() of the address frames' values (as return
 * addresses) the same results as btp_cbf_encode() of those frames, into
 * buffers of the size needed, one byte less and half, with and without
 * TRUNCATE_ON_FULL; and btp_cbf_encode_chain32() of those values modulo
 * 2^32 (a pc, then return addresses) the same as btp_cbf_encode() of
 * that chain at 32 bits, into the same sizes.
 */
#include "fuzz.h"
#include "guard.h"
#include "runs.h"

#include <string.h>

#define MAX_RECORDS 64
/* Capacities tried one by one up to this; beyond, CAP_SAMPLES evenly
 * spread up to the size needed (each try encodes twice and decodes). */
#define MAX_CAP_SWEEP 96
#define CAP_SAMPLES 16
/* Largest encoding we materialise and decode. */
#define MAX_MATERIAL (1u << 12)
/* Largest one-shot frame array. */
#define MAX_EXPAND 1024

typedef struct record {
    btp_frame frame;
    uint64_t copies;
} record;

static record recs[MAX_RECORDS];
static size_t nrecs;
static unsigned word_bits, enc_flags;
static int truncated;
static fuzz_runs model;
static fuzz_cbf_stream decoded;
static fuzz_guard out_guard, ref_guard, frames_guard, addrs_guard, out2_guard, chain_guard;

static uint64_t be(const uint8_t *p, size_t n)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v = v << 8 | p[i];
    return v;
}

/* Parse the input into recs; returns 0 if it is too short to say anything. */
static int parse(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    static const unsigned words[4] = {16, 32, 64, 64};
    word_bits = words[data[0] & 3];
    enc_flags = (data[0] & 4) ? BTP_CBF_ENC_SWIFT : 0;
    truncated = (data[0] & 8) != 0;
    size_t at = 1;
    uint64_t prev_value = 0;
    nrecs = 0;
    while (at < size && nrecs < MAX_RECORDS) {
        uint8_t h = data[at++];
        record r;
        r.frame.kind = (btp_frame_kind)(h & 3);
        if (h & 0x80) {
            r.frame.value = prev_value;
        } else {
            size_t n = ((h >> 2) & 7) + 1;
            if (size - at < n)
                break;
            r.frame.value = be(data + at, n);
            at += n;
        }
        r.copies = 1;
        if (h & 0x20) {
            size_t n = (h & 0x40) ? 8 : 1;
            if (size - at < n)
                break;
            r.copies = be(data + at, n);
            at += n;
        }
        prev_value = r.frame.value;
        recs[nrecs++] = r;
    }
    return 1;
}

/* Add every record; with check set, verify each add's status against the
 * contract and build the model of the frames accepted. */
static btp_status add_all(btp_cbf_encoder *enc, int check)
{
    uint64_t mask = btp_word_mask(word_bits);
    btp_status last = BTP_OK;
    for (size_t i = 0; i < nrecs; i++) {
        const record *r = &recs[i];
        btp_status st = btp_cbf_encoder_add(enc, r->frame, r->copies);
        int zero = r->copies == 0 || (r->frame.kind == BTP_FRAME_OMIT && r->frame.value == 0);
        int wide = r->frame.value > mask;
        if (check) {
            if (zero || wide)
                FUZZ_CHECK((zero && st == BTP_E_ZERO_COUNT) ||
                               (wide && st == BTP_E_VALUE_TOO_WIDE),
                           "record %zu: status %d (zero %d, wide %d)", i, st, zero, wide);
            else
                FUZZ_CHECK(st == BTP_OK || ((enc_flags & BTP_CBF_ENC_TRUNCATE_ON_FULL) &&
                                            st == BTP_E_BUFFER_TOO_SMALL),
                           "record %zu: status %d", i, st);
            if (!zero && !wide)
                fuzz_runs_add(&model, r->frame, r->copies);
        }
        if (st == BTP_E_BUFFER_TOO_SMALL)
            last = st;
    }
    return last;
}

static btp_status encode(unsigned flags, uint8_t *buf, size_t cap, size_t *len, size_t *needed)
{
    btp_cbf_encoder enc;
    btp_status st = btp_cbf_encoder_init(&enc, buf, cap, word_bits, flags);
    if (st != BTP_OK)
        return st;
    add_all(&enc, 0);
    st = btp_cbf_encoder_finish(&enc, truncated, len);
    *needed = btp_cbf_encoder_needed(&enc);
    return st;
}

/* One capacity, both modes. *prefix tracks the frames kept so far. */
static void try_cap(size_t cap, const uint8_t *ref, size_t needed, fuzz_count *prefix)
{
    size_t len, need;
    uint8_t *buf = fuzz_guard_buf(&out_guard, cap);
    btp_status st = encode(enc_flags, buf, cap, &len, &need);
    FUZZ_CHECK(need == needed, "cap %zu: needed %zu, expected %zu", cap, need, needed);
    if (cap >= needed) {
        FUZZ_CHECK(st == BTP_OK && len == needed, "cap %zu: %d, len %zu", cap, st, len);
        if (ref)
            FUZZ_CHECK(memcmp(buf, ref, len) == 0, "cap %zu: different bytes", cap);
    } else {
        FUZZ_CHECK(st == BTP_E_BUFFER_TOO_SMALL && len == 0, "cap %zu: %d, len %zu", cap, st,
                   len);
    }

    unsigned tflags = enc_flags | BTP_CBF_ENC_TRUNCATE_ON_FULL;
    st = encode(tflags, buf, cap, &len, &need);
    if (cap < 2) {
        FUZZ_CHECK(st == BTP_E_INVALID_ARGUMENT, "truncating into %zu bytes: %d", cap, st);
        return;
    }
    FUZZ_CHECK(need == needed, "truncating cap %zu: needed %zu, expected %zu", cap, need,
               needed);
    FUZZ_CHECK(len <= cap && len >= 2, "truncating cap %zu: len %zu", cap, len);
    unsigned policy = BTP_CBF_POLICY_STRICT;
    if (enc_flags & BTP_CBF_ENC_SWIFT)
        policy &= ~(unsigned)BTP_CBF_REJECT_RELATIVE_FIRST;
    fuzz_cbf_decode(buf, len, policy, &decoded);
    FUZZ_CHECK(decoded.status == BTP_OK && decoded.consumed == len,
               "truncated output is not valid CBF: %d at %zu", decoded.status,
               decoded.err_offset);
    FUZZ_CHECK(fuzz_runs_is_prefix(&decoded.runs, &model), "cap %zu: not a prefix", cap);
    fuzz_count kept = fuzz_runs_total(&decoded.runs);
    FUZZ_CHECK(kept >= *prefix, "cap %zu keeps fewer frames than a smaller buffer", cap);
    *prefix = kept;
    if (st == BTP_OK) {
        FUZZ_CHECK(cap >= needed && len == needed, "ok into %zu bytes, %zu needed", cap, needed);
        FUZZ_CHECK(fuzz_runs_equal(&decoded.runs, &model), "complete but frames differ");
        FUZZ_CHECK(decoded.terminator == (truncated ? BTP_CBF_TERM_TRUNC : BTP_CBF_TERM_END),
                   "terminator");
    } else {
        FUZZ_CHECK(st == BTP_E_BUFFER_TOO_SMALL && cap < needed, "truncating cap %zu: %d", cap,
                   st);
        FUZZ_CHECK(decoded.terminator == BTP_CBF_TERM_TRUNC, "closed early without trunc");
    }
}

/* Another one-shot entry point on src[0..m) (in its own form), against
 * btp_cbf_encode of frames[0..m) at `bits`: the same status, length, size
 * needed and bytes, into buffers of need bytes, one less and half, with
 * and without TRUNCATE_ON_FULL. */
typedef btp_status (*other_encoder)(const void *src, size_t m, unsigned flags, uint8_t *buf,
                                    size_t cap, size_t *len, size_t *needed);

static void compare_with_frames(const char *what, other_encoder other, const void *src,
                                const btp_frame *frames, size_t m, unsigned bits, size_t need)
{
    size_t caps[3] = {need, need - 1, need / 2};
    for (unsigned t = 0; t < 2; t++) {
        unsigned flags = enc_flags | (t ? BTP_CBF_ENC_TRUNCATE_ON_FULL : 0);
        for (unsigned c = 0; c < 3; c++) {
            uint8_t *a = fuzz_guard_buf(&out_guard, caps[c]);
            uint8_t *b = fuzz_guard_buf(&out2_guard, caps[c]);
            size_t alen = 7, aneed = 7, blen = 7, bneed = 7;
            btp_status ast = other(src, m, flags, a, caps[c], &alen, &aneed);
            btp_status bst = btp_cbf_encode(frames, m, truncated, bits, flags, b, caps[c], &blen,
                                            &bneed);
            FUZZ_CHECK(ast == bst && alen == blen && aneed == bneed,
                       "%s: %d, len %zu, needed %zu; frames: %d, %zu, %zu (cap %zu)", what, ast,
                       alen, aneed, bst, blen, bneed, caps[c]);
            FUZZ_CHECK(memcmp(a, b, alen) == 0, "%s: different bytes (cap %zu)", what, caps[c]);
        }
    }
}

static btp_status encode_addrs(const void *src, size_t m, unsigned flags, uint8_t *buf,
                               size_t cap, size_t *len, size_t *needed)
{
    return btp_cbf_encode_addrs(src, m, BTP_FRAME_RA, truncated, word_bits, flags, buf, cap, len,
                                needed);
}

static btp_status encode_chain32(const void *src, size_t m, unsigned flags, uint8_t *buf,
                                 size_t cap, size_t *len, size_t *needed)
{
    return btp_cbf_encode_chain32(src, m, truncated, flags, buf, cap, len, needed);
}

/* btp_cbf_encode_addrs on the values of the address frames of frames[0..n)
 * against btp_cbf_encode on those frames made return addresses; then
 * btp_cbf_encode_chain32 on those values modulo 2^32 against
 * btp_cbf_encode of that chain (a pc, then return addresses) at 32 bits. */
static void check_addrs(btp_frame *frames, size_t n)
{
    uint64_t *addrs = (uint64_t *)fuzz_guard_buf(&addrs_guard, n * sizeof(uint64_t));
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (frames[i].kind != BTP_FRAME_OMIT) {
            addrs[m] = frames[i].value;
            frames[m].value = frames[i].value;
            frames[m].kind = BTP_FRAME_RA;
            m++;
        }
    compare_with_frames("addresses", encode_addrs, addrs, frames, m, word_bits,
                        BTP_CBF_BOUND(m));
    uint32_t *chain = (uint32_t *)fuzz_guard_buf(&chain_guard, m * sizeof(uint32_t));
    for (size_t i = 0; i < m; i++) {
        chain[i] = (uint32_t)addrs[i];
        frames[i].value = chain[i];
        frames[i].kind = i ? BTP_FRAME_RA : BTP_FRAME_PC;
    }
    compare_with_frames("chain32", encode_chain32, chain, frames, m, 32, BTP_CBF_BOUND32(m));
}

/* The one-shot API on the frames expanded one by one gives the same bytes. */
static void check_one_shot(const uint8_t *ref, size_t needed)
{
    fuzz_count total = fuzz_runs_total(&model);
    if (total > MAX_EXPAND)
        return;
    btp_frame *frames = (btp_frame *)fuzz_guard_buf(&frames_guard,
                                                    (size_t)total * sizeof(btp_frame));
    size_t n = 0;
    for (size_t i = 0; i < model.n; i++)
        for (fuzz_count c = 0; c < model.v[i].count; c++)
            frames[n++] = model.v[i].frame;
    uint8_t *buf = fuzz_guard_buf(&out_guard, needed);
    size_t len, need;
    btp_status st = btp_cbf_encode(frames, n, truncated, word_bits, enc_flags, buf, needed, &len,
                                   &need);
    FUZZ_CHECK(st == BTP_OK && len == needed && memcmp(buf, ref, len) == 0,
               "one-shot encode differs: %d, len %zu of %zu", st, len, needed);
    check_addrs(frames, n); /* (rewrites frames) */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!parse(data, size))
        return 0;
    fuzz_runs_clear(&model);

    /* Size query with the checks on each add. */
    btp_cbf_encoder enc;
    FUZZ_CHECK(btp_cbf_encoder_init(&enc, NULL, 0, word_bits, enc_flags) == BTP_OK, "init");
    add_all(&enc, 1);
    size_t len;
    btp_status st = btp_cbf_encoder_finish(&enc, truncated, &len);
    FUZZ_CHECK(st == BTP_E_BUFFER_TOO_SMALL && len == 0, "size query %d", st);
    size_t needed = btp_cbf_encoder_needed(&enc);
    FUZZ_CHECK(needed >= 2, "needed %zu", needed);
    FUZZ_CHECK(btp_cbf_encoder_add(&enc, recs[0].frame, 1) == BTP_E_INVALID_ARGUMENT ||
                   nrecs == 0,
               "add after finish accepted");

    const uint8_t *ref = NULL;
    if (needed <= MAX_MATERIAL) {
        uint8_t *r = fuzz_guard_buf(&ref_guard, needed);
        size_t need;
        st = encode(enc_flags, r, needed, &len, &need);
        FUZZ_CHECK(st == BTP_OK && len == needed, "encode into %zu bytes: %d", needed, st);
        unsigned policy = BTP_CBF_POLICY_STRICT;
        if (enc_flags & BTP_CBF_ENC_SWIFT)
            policy &= ~(unsigned)BTP_CBF_REJECT_RELATIVE_FIRST;
        fuzz_cbf_decode(r, len, policy, &decoded);
        FUZZ_CHECK(decoded.status == BTP_OK && decoded.consumed == len,
                   "encoding is not valid CBF: %d at %zu", decoded.status, decoded.err_offset);
        FUZZ_CHECK(fuzz_runs_equal(&decoded.runs, &model), "encoding decodes to other frames");
        ref = r;
        check_one_shot(ref, needed);
    }

    fuzz_count prefix = 0;
    size_t sweep = needed + 2 < MAX_CAP_SWEEP ? needed + 2 : MAX_CAP_SWEEP;
    for (size_t cap = 0; cap <= sweep; cap++)
        try_cap(cap, ref, needed, &prefix);
    if (needed + 2 > sweep) {
        /* Increasing capacities (the prefix check needs the order), then
         * the boundary. Beyond MAX_MATERIAL only the samples are tried. */
        size_t top = needed <= MAX_MATERIAL ? needed - 1 : MAX_MATERIAL;
        size_t last = sweep;
        for (size_t k = 1; k <= CAP_SAMPLES && top > sweep; k++) {
            size_t cap = sweep + (top - sweep) * k / (CAP_SAMPLES + 1);
            if (cap > last)
                try_cap(cap, ref, needed, &prefix);
            last = cap > last ? cap : last;
        }
        if (needed <= MAX_MATERIAL) {
            for (size_t cap = needed - 1; cap <= needed + 1; cap++)
                if (cap > last)
                    try_cap(cap, ref, needed, &prefix);
        }
    }
    return 0;
}
