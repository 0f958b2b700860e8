/*
 * Helpers the CBF tests share: hex parsing, frame comparison, and the two
 * property checks every trace goes through (round trip in every way the API
 * offers, and encoding into every too-small buffer).
 *
 * Header-only (static inline) on purpose: CHECK counts into per-program
 * counters defined in check.h, so the helpers must live in the test's own
 * translation unit.
 */
#ifndef BTPACK_TESTS_CBF_TESTUTIL_H
#define BTPACK_TESTS_CBF_TESTUTIL_H

#include <btpack/btpack.h>

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../lib/common/hexdigit.h"
#include "check.h"

/* Hex text (even length, no separators) into a malloc'ed buffer; NULL on
 * bad input. *len gets the byte count. */
static inline uint8_t *tu_parse_hex(const char *hex, size_t *len)
{
    size_t n = strlen(hex);
    if (n % 2)
        return NULL;
    uint8_t *out = malloc(n / 2 + 1); /* +1: never malloc(0) */
    if (!out)
        return NULL;
    for (size_t i = 0; i < n / 2; i++) {
        int hi = btp_hex_digit((unsigned char)hex[2 * i]);
        int lo = btp_hex_digit((unsigned char)hex[2 * i + 1]);
        if (hi < 0 || lo < 0) {
            free(out);
            return NULL;
        }
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    *len = n / 2;
    return out;
}

static inline int tu_frame_eq(btp_frame a, btp_frame b)
{
    return a.kind == b.kind && a.value == b.value;
}

/* Index of the first difference between a[0..na) and b[0..nb), or -1 when
 * they are equal. */
static inline long tu_frames_diff(const btp_frame *a, size_t na, const btp_frame *b, size_t nb)
{
    size_t n = na < nb ? na : nb;
    for (size_t i = 0; i < n; i++)
        if (!tu_frame_eq(a[i], b[i]))
            return (long)i;
    return na == nb ? -1 : (long)n;
}

static inline btp_frame tu_frame(btp_frame_kind kind, uint64_t value)
{
    btp_frame f = {value, kind};
    return f;
}

/* Canonical form of a run sequence: adjacent equal frames merged, counts
 * filled greedily up to 2^64-1. Two sequences expand to the same frames iff
 * their canonical forms are equal. Returns the new length. */
static inline size_t tu_canonical_runs(btp_cbf_run *r, size_t n)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (o && tu_frame_eq(r[o - 1].frame, r[i].frame) && r[o - 1].count < UINT64_MAX) {
            uint64_t room = UINT64_MAX - r[o - 1].count;
            uint64_t take = r[i].count < room ? r[i].count : room;
            r[o - 1].count += take;
            r[i].count -= take;
            if (r[i].count == 0)
                continue;
        }
        r[o++] = r[i];
    }
    return o;
}

/*
 * The address-array entry points on frames[0..n) whose one-shot encoding
 * is enc[0..len): when every frame is an address of one kind,
 * btp_cbf_encode_addrs gives the same bytes and btp_cbf_decode_addrs the
 * addresses back; when one is an omit, btp_cbf_decode_addrs stops there
 * with BTP_E_UNREPRESENTABLE and the addresses before it.
 */
static inline void tu_check_addrs(const char *what, const btp_frame *frames, size_t n,
                                  int truncated, unsigned word_bits, unsigned flags,
                                  const uint8_t *enc, size_t len)
{
    uint64_t *addrs = malloc((n + 1) * sizeof *addrs), *back = malloc((n + 1) * sizeof *back);
    uint8_t *buf = malloc(BTP_CBF_BOUND(n));
    size_t omit = 0, len2 = 0;
    int one_kind = 1;
    if (!addrs || !back || !buf) {
        CHECK(0, "%s: out of memory", what);
        goto out;
    }
    while (omit < n && frames[omit].kind != BTP_FRAME_OMIT)
        omit++;
    for (size_t i = 0; i < n; i++) {
        addrs[i] = frames[i].value;
        one_kind = one_kind && frames[i].kind == frames[0].kind;
    }
    if (omit == n && one_kind) {
        btp_frame_kind kind = n ? frames[0].kind : BTP_FRAME_RA;
        btp_status st = btp_cbf_encode_addrs(addrs, n, kind, truncated, word_bits, flags, buf,
                                             BTP_CBF_BOUND(n), &len2, NULL);
        CHECK(st == BTP_OK && len2 == len && memcmp(buf, enc, len) == 0,
              "%s/%u: btp_cbf_encode_addrs differs (%s, %zu vs %zu bytes)", what, word_bits,
              btp_status_name(st), len2, len);
    }
    btp_cbf_info info;
    btp_status st = btp_cbf_decode_addrs(enc, len, BTP_CBF_POLICY_DEFAULT, back, n + 1, &info);
    if (omit == n)
        CHECK(st == BTP_OK && info.frames == n && info.consumed == len,
              "%s/%u: btp_cbf_decode_addrs: %s, %zu frames", what, word_bits,
              btp_status_name(st), info.frames);
    else
        CHECK(st == BTP_E_UNREPRESENTABLE && info.frames == omit &&
                  (enc[info.error_offset] & 0xc0) == 0x40,
              "%s/%u: btp_cbf_decode_addrs over an omit: %s, %zu frames, offset %zu", what,
              word_bits, btp_status_name(st), info.frames, info.error_offset);
    for (size_t i = 0; i < info.frames && i < omit; i++)
        CHECK(back[i] == addrs[i], "%s/%u: address %zu differs", what, word_bits, i);
out:
    free(addrs);
    free(back);
    free(buf);
}

/*
 * Round-trip frames[0..n) at word_bits with encoder flags `flags`:
 *  - one-shot encode; needed == length; length <= BTP_CBF_BOUND(n);
 *  - streaming frame by frame and streaming as runs (add(frame, count))
 *    give the same bytes;
 *  - one-shot decode (strict, or default for Swift-style output whose
 *    first address is relative) gives the frames and `truncated` back and
 *    consumes the whole stream;
 *  - the decoder cursor's runs expand to the frames, and adjacent runs
 *    differ (the encoder merged every run into rep).
 * Returns the encoded length, or 0 after a failed CHECK. If out/out_cap are
 * given the encoding is copied there (when it fits).
 */
static inline size_t tu_check_roundtrip(const char *what, const btp_frame *frames, size_t n,
                                        int truncated, unsigned word_bits, unsigned flags)
{
    size_t cap = BTP_CBF_BOUND(n);
    uint8_t *one = malloc(cap), *stream = malloc(cap), *runs = malloc(cap);
    btp_frame *back = malloc((n + 1) * sizeof *back);
    size_t len = 0, needed = 0, len2 = 0, len3 = 0, result = 0;
    unsigned policy = (flags & BTP_CBF_ENC_SWIFT) ? BTP_CBF_POLICY_DEFAULT : BTP_CBF_POLICY_STRICT;
    btp_status st;
    if (!one || !stream || !runs || !back) {
        CHECK(0, "%s: out of memory", what);
        goto out;
    }

    st = btp_cbf_encode(frames, n, truncated, word_bits, flags, one, cap, &len, &needed);
    CHECK(st == BTP_OK, "%s/%u: encode: %s", what, word_bits, btp_status_name(st));
    if (st != BTP_OK)
        goto out;
    CHECK(needed == len, "%s/%u: needed %zu != len %zu", what, word_bits, needed, len);
    CHECK(len >= 2 && len <= cap, "%s/%u: len %zu", what, word_bits, len);

    tu_check_addrs(what, frames, n, truncated, word_bits, flags, one, len);

    btp_cbf_encoder enc;
    st = btp_cbf_encoder_init(&enc, stream, cap, word_bits, flags);
    for (size_t i = 0; i < n && st == BTP_OK; i++)
        st = btp_cbf_encoder_add(&enc, frames[i], 1);
    if (st == BTP_OK)
        st = btp_cbf_encoder_finish(&enc, truncated, &len2);
    CHECK(st == BTP_OK && len2 == len && memcmp(one, stream, len) == 0,
          "%s/%u: frame-by-frame streaming differs (%s, %zu vs %zu bytes)", what, word_bits,
          btp_status_name(st), len2, len);

    st = btp_cbf_encoder_init(&enc, runs, cap, word_bits, flags);
    for (size_t i = 0; i < n && st == BTP_OK;) {
        size_t j = i + 1;
        while (j < n && tu_frame_eq(frames[j], frames[i]))
            j++;
        st = btp_cbf_encoder_add(&enc, frames[i], j - i);
        i = j;
    }
    if (st == BTP_OK)
        st = btp_cbf_encoder_finish(&enc, truncated, &len3);
    CHECK(st == BTP_OK && len3 == len && memcmp(one, runs, len) == 0,
          "%s/%u: streaming as runs differs (%s, %zu vs %zu bytes)", what, word_bits,
          btp_status_name(st), len3, len);

    btp_cbf_info info;
    st = btp_cbf_decode(one, len, policy, back, n + 1, &info);
    CHECK(st == BTP_OK, "%s/%u: decode: %s at %zu", what, word_bits, btp_status_name(st),
          info.error_offset);
    long d = tu_frames_diff(frames, n, back, info.frames);
    CHECK(d < 0, "%s/%u: decoded frames differ at %ld (%zu vs %zu frames)", what, word_bits, d,
          n, info.frames);
    CHECK(info.truncated == !!truncated && info.consumed == len && info.word_bits == word_bits,
          "%s/%u: info truncated %d consumed %zu/%zu word %u", what, word_bits, info.truncated,
          info.consumed, len, info.word_bits);

    btp_cbf_decoder dec;
    btp_cbf_run run, prev = {{0, BTP_FRAME_PC}, 0};
    size_t at = 0;
    int ok = btp_cbf_decoder_init(&dec, one, len, policy) == BTP_OK;
    while (ok && (st = btp_cbf_decoder_next(&dec, &run)) == BTP_OK) {
        ok = run.count >= 1 && run.count <= n - at &&
             !(prev.count && tu_frame_eq(prev.frame, run.frame));
        for (uint64_t k = 0; ok && k < run.count; k++)
            ok = tu_frame_eq(frames[at + k], run.frame);
        at += ok ? (size_t)run.count : 0;
        prev = run;
    }
    CHECK(ok && st == BTP_END && at == n, "%s/%u: runs differ near frame %zu (%s)", what,
          word_bits, at, btp_status_name(st));
    if (d < 0 && st == BTP_END && ok)
        result = len;
out:
    free(one);
    free(stream);
    free(runs);
    free(back);
    return result;
}

/*
 * Encode frames[0..n) into every capacity from 0 to the size needed, each
 * buffer ending exactly at a PROT_NONE guard page, so any write past cap
 * faults at once.
 *  - Without TRUNCATE_ON_FULL: BTP_E_BUFFER_TOO_SMALL with needed reported
 *    exactly (one-shot and streaming) below the size, the reference bytes
 *    at it.
 *  - With TRUNCATE_ON_FULL (cap >= 2; 0 and 1 are invalid arguments): the
 *    output decodes strictly to a prefix of the frames, ends with trunc
 *    when it did not fit, and the prefix never shrinks as cap grows.
 * `flags` adds other encoder flags (e.g. BTP_CBF_ENC_SWIFT).
 */
static inline void tu_check_every_cap(const char *what, const btp_frame *frames, size_t n,
                                      int truncated, unsigned word_bits, unsigned flags)
{
    size_t bound = BTP_CBF_BOUND(n), need = 0, len = 0;
    uint8_t *ref = malloc(bound);
    btp_frame *back = malloc((n + 1) * sizeof *back);
    unsigned policy = (flags & BTP_CBF_ENC_SWIFT) ? BTP_CBF_POLICY_DEFAULT : BTP_CBF_POLICY_STRICT;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t span = (bound + page - 1) / page * page;
    uint8_t *map = mmap(NULL, span + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                        -1, 0);
    if (!ref || !back || map == MAP_FAILED) {
        CHECK(0, "%s: out of memory", what);
        goto out;
    }
    uint8_t *guard = map + span;
    CHECK(mprotect(guard, page, PROT_NONE) == 0, "%s: mprotect", what);
    btp_status st = btp_cbf_encode(frames, n, truncated, word_bits, flags, ref, bound, &need, NULL);
    CHECK(st == BTP_OK, "%s: reference encode: %s", what, btp_status_name(st));
    if (st != BTP_OK)
        goto out;

    size_t last_prefix = 0;
    for (size_t cap = 0; cap <= need; cap++) {
        uint8_t *buf = guard - cap;
        size_t needed = 0;
        len = 12345;
        st = btp_cbf_encode(frames, n, truncated, word_bits, flags, buf, cap, &len, &needed);
        if (cap < need) {
            CHECK(st == BTP_E_BUFFER_TOO_SMALL && len == 0 && needed == need,
                  "%s: cap %zu: %s len %zu needed %zu (want %zu)", what, cap,
                  btp_status_name(st), len, needed, need);
        } else {
            CHECK(st == BTP_OK && len == need && memcmp(buf, ref, need) == 0,
                  "%s: cap %zu = needed: %s len %zu", what, cap, btp_status_name(st), len);
        }
        /* The streaming API reports the same through finish() and needed(). */
        btp_cbf_encoder enc;
        st = btp_cbf_encoder_init(&enc, buf, cap, word_bits, flags);
        for (size_t i = 0; i < n && st == BTP_OK; i++)
            st = btp_cbf_encoder_add(&enc, frames[i], 1);
        CHECK(st == BTP_OK, "%s: cap %zu: streaming add: %s", what, cap, btp_status_name(st));
        st = btp_cbf_encoder_finish(&enc, truncated, &len);
        CHECK(st == (cap < need ? BTP_E_BUFFER_TOO_SMALL : BTP_OK) &&
                  btp_cbf_encoder_needed(&enc) == need,
              "%s: cap %zu: streaming finish %s needed %zu", what, cap, btp_status_name(st),
              btp_cbf_encoder_needed(&enc));

        unsigned tflags = flags | BTP_CBF_ENC_TRUNCATE_ON_FULL;
        st = btp_cbf_encode(frames, n, truncated, word_bits, tflags, buf, cap, &len, &needed);
        if (cap < 2) {
            CHECK(st == BTP_E_INVALID_ARGUMENT, "%s: truncate cap %zu: %s", what, cap,
                  btp_status_name(st));
            continue;
        }
        CHECK(st == (cap < need ? BTP_E_BUFFER_TOO_SMALL : BTP_OK) && len >= 2 && len <= cap,
              "%s: truncate cap %zu: %s len %zu", what, cap, btp_status_name(st), len);
        if (len < 2 || len > cap)
            continue;
        btp_cbf_info info;
        btp_status dst = btp_cbf_decode(buf, len, policy, back, n + 1, &info);
        long d = tu_frames_diff(frames, info.frames, back, info.frames);
        CHECK(dst == BTP_OK && info.consumed == len && info.frames <= n && d < 0,
              "%s: truncate cap %zu: decode %s, %zu frames, consumed %zu of %zu, diff at %ld",
              what, cap, btp_status_name(dst), info.frames, info.consumed, len, d);
        if (cap < need)
            CHECK(info.terminator == BTP_CBF_TERM_TRUNC, "%s: truncate cap %zu: terminator %d",
                  what, cap, (int)info.terminator);
        else
            CHECK(len == need && memcmp(buf, ref, need) == 0,
                  "%s: truncate cap %zu = needed: output differs", what, cap);
        CHECK(info.frames >= last_prefix, "%s: truncate cap %zu: prefix shrank %zu -> %zu", what,
              cap, last_prefix, info.frames);
        last_prefix = info.frames;
    }
out:
    if (map != MAP_FAILED)
        munmap(map, span + page);
    free(ref);
    free(back);
}

/*
 * btp_cbf_encode_chain32 on the chain addrs[0..n) (a pc, then return
 * addresses) against btp_cbf_encode of the same frames at 32 bits, with
 * `flags` and with flags | TRUNCATE_ON_FULL: the same status, *len_out and
 * *needed_out, and the same bytes wherever the general encoder gives a
 * stream (a complete one, or one closed early by trunc). With every_cap,
 * at every capacity from 0 to one past the size needed, each buffer
 * ending at a PROT_NONE guard page (a write past cap faults); else at the
 * size needed and at BTP_CBF_BOUND32(n).
 */
static inline void tu_check_chain32(const char *what, const uint32_t *addrs, size_t n,
                                    int truncated, unsigned flags, int every_cap)
{
    btp_frame *frames = malloc((n + 1) * sizeof *frames);
    size_t bound = BTP_CBF_BOUND32(n), need = 0;
    uint8_t *ref = malloc(bound);
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t span = (bound + 1 + page - 1) / page * page;
    uint8_t *map = mmap(NULL, 2 * (span + page), PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (!frames || !ref || map == MAP_FAILED) {
        CHECK(0, "%s: out of memory", what);
        goto out;
    }
    /* Two buffers, each right before its own guard page. */
    uint8_t *guard_a = map + span, *guard_b = map + 2 * span + page;
    CHECK(mprotect(guard_a, page, PROT_NONE) == 0 && mprotect(guard_b, page, PROT_NONE) == 0,
          "%s: mprotect", what);
    for (size_t i = 0; i < n; i++)
        frames[i] = tu_frame(i ? BTP_FRAME_RA : BTP_FRAME_PC, addrs[i]);
    btp_status st = btp_cbf_encode(frames, n, truncated, 32, flags, ref, bound, &need, NULL);
    CHECK(st == BTP_OK && need <= bound, "%s: reference encode: %s, %zu of %zu bytes", what,
          btp_status_name(st), need, bound);
    if (st != BTP_OK)
        goto out;
    const size_t fixed[2] = {need, bound};
    for (size_t c = 0; c < (every_cap ? need + 2 : 2); c++) {
        size_t cap = every_cap ? c : fixed[c];
        for (int t = 0; t < 2; t++) {
            unsigned fl = flags | (t ? BTP_CBF_ENC_TRUNCATE_ON_FULL : 0u);
            uint8_t *a = guard_a - cap, *b = guard_b - cap;
            size_t len_a = 11, len_b = 22, need_a = 33, need_b = 44;
            btp_status sa = btp_cbf_encode(frames, n, truncated, 32, fl, a, cap, &len_a, &need_a);
            btp_status sb = btp_cbf_encode_chain32(addrs, n, truncated, fl, b, cap, &len_b,
                                                   &need_b);
            CHECK(sa == sb && len_a == len_b && need_a == need_b,
                  "%s: cap %zu flags %#x: chain32 %s len %zu needed %zu, btp_cbf_encode %s len "
                  "%zu needed %zu",
                  what, cap, fl, btp_status_name(sb), len_b, need_b, btp_status_name(sa), len_a,
                  need_a);
            if (sa == sb && len_a == len_b && len_a <= cap)
                CHECK(memcmp(a, b, len_a) == 0, "%s: cap %zu flags %#x: bytes differ", what, cap,
                      fl);
            /* Also through the NULL outputs. */
            sb = btp_cbf_encode_chain32(addrs, n, truncated, fl, b, cap, NULL, NULL);
            CHECK(sb == sa, "%s: cap %zu flags %#x: without outputs %s", what, cap, fl,
                  btp_status_name(sb));
        }
    }
out:
    if (map != MAP_FAILED)
        munmap(map, 2 * (span + page));
    free(frames);
    free(ref);
}

#endif
