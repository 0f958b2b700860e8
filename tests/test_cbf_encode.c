/*
 * CBF encoder: its choices (spec/cbf.md "Decisions"), argument errors, long
 * runs on every word size, and too-small buffers at every byte boundary.
 */
#include <btpack/btpack.h>

#include "cbf_testutil.h"

#define PC(v) tu_frame(BTP_FRAME_PC, (v))
#define RA(v) tu_frame(BTP_FRAME_RA, (v))
#define ASYNC(v) tu_frame(BTP_FRAME_ASYNC, (v))
#define OMIT(v) tu_frame(BTP_FRAME_OMIT, (v))
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* Encode frames one-shot and compare with the expected hex. */
static void expect_hex(const char *what, const btp_frame *frames, size_t n, int truncated,
                       unsigned word_bits, unsigned flags, const char *hex)
{
    uint8_t buf[256];
    size_t len = 0, want_len = 0;
    uint8_t *want = tu_parse_hex(hex, &want_len);
    btp_status st = btp_cbf_encode(frames, n, truncated, word_bits, flags, buf, sizeof buf, &len,
                                   NULL);
    CHECK(want && st == BTP_OK && len == want_len && memcmp(buf, want, len) == 0,
          "%s: %s, %zu bytes, want %s", what, btp_status_name(st), len, hex);
    free(want);
}

/* Encode with the streaming API, adding (frame, copies) pairs. */
static size_t encode_runs(const btp_cbf_run *runs, size_t n, unsigned word_bits, uint8_t *buf,
                          size_t cap)
{
    btp_cbf_encoder enc;
    size_t len = 0;
    btp_status st = btp_cbf_encoder_init(&enc, buf, cap, word_bits, 0);
    for (size_t i = 0; i < n && st == BTP_OK; i++)
        st = btp_cbf_encoder_add(&enc, runs[i].frame, runs[i].count);
    if (st == BTP_OK)
        st = btp_cbf_encoder_finish(&enc, 0, &len);
    CHECK(st == BTP_OK, "encode_runs: %s", btp_status_name(st));
    return len;
}

/* Decode buf strictly into at most max runs; returns the number. */
static size_t decode_runs(const uint8_t *buf, size_t len, btp_cbf_run *runs, size_t max)
{
    btp_cbf_decoder dec;
    btp_cbf_run run;
    size_t n = 0;
    btp_status st = btp_cbf_decoder_init(&dec, buf, len, BTP_CBF_POLICY_STRICT);
    while (st == BTP_OK && (st = btp_cbf_decoder_next(&dec, &run)) == BTP_OK && n < max)
        runs[n++] = run;
    CHECK(st == BTP_END, "decode_runs: %s", btp_status_name(st));
    return n;
}

/* Decisions: first address absolute; relative on a tie; absolute only when
 * strictly shorter; minimal two's-complement operands. */
static void test_address_choices(void)
{
    const btp_frame tie[] = {PC(0x10), RA(0x20)};
    expect_hex("first absolute, tie relative", tie, 2, 0, 64, 0, "02181020" "1000");
    expect_hex("swift: first relative", tie, 2, 0, 64, BTP_CBF_ENC_SWIFT, "02101020" "1000");
    const btp_frame shorter[] = {PC(0x7fff00000000), RA(0x10)};
    expect_hex("absolute when strictly shorter", shorter, 2, 0, 64, 0,
               "021d7fff00000000" "2810" "00");
    /* 0x80 needs two bytes (00 80): one byte 80 would sign-extend. */
    const btp_frame sign[] = {ASYNC(0x80), PC(0xffffffffffffff80)};
    expect_hex("sign extension needs a zero byte", sign, 2, 0, 64, 0, "0239" "0080" "18" "80" "00");
    /* Relative deltas wrap modulo the word: 0xfffffff0 -> 0x10 is +0x20. */
    const btp_frame wrap[] = {PC(0xfffffff0), PC(0x10)};
    expect_hex("relative wraps (32)", wrap, 2, 0, 32, 0, "0118f0" "1020" "00");
    const btp_frame wrap16[] = {PC(0xfff0), PC(0x10)};
    expect_hex("relative wraps (16)", wrap16, 2, 0, 16, 0, "0018f0" "1020" "00");
    expect_hex("trunc terminator", tie, 2, 1, 64, 0, "021810201001");
    expect_hex("empty", NULL, 0, 0, 16, 0, "0000");
    expect_hex("empty truncated", NULL, 0, 1, 32, 0, "0101");
}

/* Decisions: omit inline up to 32 (Swift: 31), external with the fewest
 * big-endian bytes; rep inline for 1..8 extra copies, external above;
 * rep after omit repeats the omit. */
static void test_omit_rep_choices(void)
{
    const btp_frame o1[] = {OMIT(1)}, o32[] = {OMIT(32)}, o33[] = {OMIT(33)},
                    o256[] = {OMIT(256)}, omax[] = {OMIT(0xffff)};
    expect_hex("omit 1", o1, 1, 0, 64, 0, "024000");
    expect_hex("omit 32 inline", o32, 1, 0, 64, 0, "025f00");
    expect_hex("swift: omit 32 external", o32, 1, 0, 64, BTP_CBF_ENC_SWIFT, "02602000");
    expect_hex("omit 33", o33, 1, 0, 64, 0, "02602100");
    expect_hex("omit 256", o256, 1, 0, 64, 0, "0261010000");
    expect_hex("omit 0xffff on 16-bit", omax, 1, 0, 16, 0, "0061ffff00");

    btp_frame run[10];
    for (size_t i = 0; i < COUNT(run); i++)
        run[i] = RA(0x1234);
    expect_hex("rep 1", run, 2, 0, 32, 0, "0129123480" "00");
    expect_hex("rep 8 inline", run, 9, 0, 32, 0, "0129123487" "00");
    expect_hex("rep 9 external", run, 10, 0, 32, 0, "012912348809" "00");
    const btp_frame omits[] = {OMIT(5), OMIT(5), OMIT(5)};
    expect_hex("rep after omit", omits, 3, 0, 64, 0, "02448100");
}

/* Decision: an external rep count must fit the word, so runs longer than
 * the word's maximum take several reps on 16/32-bit; on 64-bit a run of
 * more than 2^64 copies takes two. All decode back to the same copies. */
static void test_long_runs(void)
{
    uint8_t buf[64];
    btp_cbf_run back[4];

    const btp_cbf_run r16[] = {{PC(0x10), 70000}};
    size_t len = encode_runs(r16, 1, 16, buf, sizeof buf);
    /* 69999 extra copies = 0xffff + 4464 (0x1170) */
    const uint8_t want16[] = {0x00, 0x18, 0x10, 0x89, 0xff, 0xff, 0x89, 0x11, 0x70, 0x00};
    CHECK(len == sizeof want16 && memcmp(buf, want16, len) == 0, "16-bit run of 70000: %zu", len);
    size_t n = decode_runs(buf, len, back, COUNT(back));
    CHECK(n == 1 && back[0].count == 70000 && tu_frame_eq(back[0].frame, PC(0x10)),
          "16-bit run decodes to %zu runs", n);

    const btp_cbf_run r32[] = {{RA(0x40000000), ((uint64_t)1 << 32) + 5}, {RA(0x40000004), 1}};
    len = encode_runs(r32, 2, 32, buf, sizeof buf);
    const uint8_t want32[] = {0x01, 0x2b, 0x40, 0x00, 0x00, 0x00, 0x8b, 0xff, 0xff, 0xff, 0xff,
                              0x84, 0x20, 0x04, 0x00};
    CHECK(len == sizeof want32 && memcmp(buf, want32, len) == 0, "32-bit run of 2^32+5: %zu", len);
    n = decode_runs(buf, len, back, COUNT(back));
    CHECK(n == 2 && back[0].count == r32[0].count && back[1].count == 1,
          "32-bit run decodes to %zu runs", n);

    /* 2^64-1 copies in one call, then 5 more of the same frame: 2^64+3
     * extra copies, written as on a shorter word, a rep of the maximum and
     * then the remainder, as if the run had come in one call. */
    btp_cbf_encoder enc;
    CHECK(btp_cbf_encoder_init(&enc, buf, sizeof buf, 64, 0) == BTP_OK, "init");
    CHECK(btp_cbf_encoder_add(&enc, OMIT(3), UINT64_MAX) == BTP_OK, "add 2^64-1");
    CHECK(btp_cbf_encoder_add(&enc, OMIT(3), 5) == BTP_OK, "add 5 more");
    CHECK(btp_cbf_encoder_finish(&enc, 0, &len) == BTP_OK, "finish");
    const uint8_t want64[] = {0x02, 0x42, 0x8f, 0xff, 0xff, 0xff, 0xff, 0xff,
                              0xff, 0xff, 0xff, 0x83, 0x00};
    CHECK(len == sizeof want64 && memcmp(buf, want64, len) == 0, "64-bit run of 2^64+4: %zu", len);
    n = decode_runs(buf, len, back, COUNT(back));
    /* The decoder starts a new run where a rep would push one past 2^64-1. */
    CHECK(n == 3 && back[0].count == 1 && back[1].count == UINT64_MAX && back[2].count == 4 &&
              tu_frame_eq(back[2].frame, OMIT(3)),
          "2^64+4 copies decode to %zu runs", n);
    /* The same run split the other way round gives the same bytes. */
    CHECK(btp_cbf_encoder_init(&enc, buf, sizeof buf, 64, 0) == BTP_OK, "init");
    CHECK(btp_cbf_encoder_add(&enc, OMIT(3), 5) == BTP_OK, "add 5");
    CHECK(btp_cbf_encoder_add(&enc, OMIT(3), UINT64_MAX) == BTP_OK, "add 2^64-1 more");
    CHECK(btp_cbf_encoder_finish(&enc, 0, &len) == BTP_OK, "finish");
    CHECK(len == sizeof want64 && memcmp(buf, want64, len) == 0, "5 then 2^64-1: %zu", len);

    /* 2^64-1 copies on 16/32-bit need ~2^48 / 2^32 reps: they cannot fit,
     * but the size needed comes back exactly and at once (the remaining
     * chunks are counted, not looped over). 2^64-2 extra copies are
     * 281479271743489 reps of <= 0xffff, or 4294967297 reps of <= 2^32-1. */
    static const struct {
        unsigned bits;
        uint64_t needed;
    } huge[] = {{16, 3 + (uint64_t)3 * 281479271743489u + 1},
                {32, 3 + (uint64_t)5 * 4294967297u + 1}};
    for (size_t i = 0; i < COUNT(huge); i++) {
        CHECK(btp_cbf_encoder_init(&enc, buf, sizeof buf, huge[i].bits, 0) == BTP_OK, "init");
        CHECK(btp_cbf_encoder_add(&enc, PC(0x10), UINT64_MAX) == BTP_OK, "add 2^64-1");
        /* Where size_t has 32 bits (bare-metal targets) the size needed
         * does not fit it: only the failure is checked there. */
        CHECK(btp_cbf_encoder_finish(&enc, 0, &len) == BTP_E_BUFFER_TOO_SMALL &&
                  (huge[i].needed > SIZE_MAX ||
                   (uint64_t)btp_cbf_encoder_needed(&enc) == huge[i].needed),
              "%u-bit run of 2^64-1: needed %zu, want %llu", huge[i].bits,
              btp_cbf_encoder_needed(&enc), (unsigned long long)huge[i].needed);
        CHECK(btp_cbf_encoder_init(&enc, buf, sizeof buf, huge[i].bits,
                                   BTP_CBF_ENC_TRUNCATE_ON_FULL) == BTP_OK, "init truncating");
        /* The copies are pending until finish() writes them. */
        CHECK(btp_cbf_encoder_add(&enc, PC(0x10), UINT64_MAX) == BTP_OK, "add 2^64-1, truncating");
        CHECK(btp_cbf_encoder_finish(&enc, 0, &len) == BTP_E_BUFFER_TOO_SMALL && len <= sizeof buf,
              "finish truncating");
        n = decode_runs(buf, len, back, COUNT(back));
        uint64_t per_rep = huge[i].bits == 16 ? 0xffff : 0xffffffff;
        CHECK(n == 1 && back[0].count == 1 + per_rep * ((len - 4) / (1 + huge[i].bits / 8)),
              "%u-bit truncated run: %zu runs, %zu bytes", huge[i].bits, n, len);
    }
}

static void test_arguments(void)
{
    uint8_t buf[64];
    btp_cbf_encoder enc;
    size_t len;

    CHECK(btp_cbf_encoder_init(&enc, buf, sizeof buf, 8, 0) == BTP_E_INVALID_ARGUMENT, "8-bit");
    CHECK(btp_cbf_encoder_init(&enc, buf, sizeof buf, 128, 0) == BTP_E_INVALID_ARGUMENT, "128");
    CHECK(btp_cbf_encoder_add(&enc, PC(1), 1) == BTP_E_INVALID_ARGUMENT, "add after bad init");
    CHECK(btp_cbf_encoder_init(&enc, NULL, 4, 64, 0) == BTP_E_INVALID_ARGUMENT, "NULL buffer");
    CHECK(btp_cbf_encoder_init(NULL, buf, 4, 64, 0) == BTP_E_INVALID_ARGUMENT, "NULL encoder");
    CHECK(btp_cbf_encoder_init(&enc, buf, 1, 64, BTP_CBF_ENC_TRUNCATE_ON_FULL) ==
              BTP_E_INVALID_ARGUMENT, "truncate with cap 1");
    CHECK(btp_cbf_encode(NULL, 1, 0, 64, 0, buf, sizeof buf, &len, NULL) ==
              BTP_E_INVALID_ARGUMENT, "NULL frames");
    /* No frames may come as NULL: an empty stream, information byte and
     * end (the fuzzers caught pointer arithmetic on that NULL). */
    CHECK(btp_cbf_encode(NULL, 0, 0, 32, 0, buf, sizeof buf, &len, NULL) == BTP_OK && len == 2 &&
              buf[0] == 1 && buf[1] == 0, "NULL frames, n 0");

    /* A rejected frame appends nothing: the stream equals the one
     * without it. */
    CHECK(btp_cbf_encoder_init(&enc, buf, sizeof buf, 32, 0) == BTP_OK, "init 32");
    CHECK(btp_cbf_encoder_add(&enc, PC(0x10), 1) == BTP_OK, "pc");
    CHECK(btp_cbf_encoder_add(&enc, PC(0x100000000), 1) == BTP_E_VALUE_TOO_WIDE, "wide address");
    CHECK(btp_cbf_encoder_add(&enc, OMIT(0x100000000), 1) == BTP_E_VALUE_TOO_WIDE, "wide omit");
    CHECK(btp_cbf_encoder_add(&enc, OMIT(0), 1) == BTP_E_ZERO_COUNT, "omit 0");
    CHECK(btp_cbf_encoder_add(&enc, PC(0x20), 0) == BTP_E_ZERO_COUNT, "0 copies");
    btp_frame bad_kind = {0x10, (btp_frame_kind)4};
    CHECK(btp_cbf_encoder_add(&enc, bad_kind, 1) == BTP_E_INVALID_ARGUMENT, "bad kind");
    CHECK(btp_cbf_encoder_add(&enc, PC(0x10), 1) == BTP_OK, "same pc again");
    CHECK(btp_cbf_encoder_finish(&enc, 0, &len) == BTP_OK, "finish");
    const uint8_t want[] = {0x01, 0x18, 0x10, 0x80, 0x00};
    CHECK(len == sizeof want && memcmp(buf, want, len) == 0, "rejected frames left no trace");
    CHECK(btp_cbf_encoder_add(&enc, PC(1), 1) == BTP_E_INVALID_ARGUMENT, "add after finish");
    CHECK(btp_cbf_encoder_finish(&enc, 0, &len) == BTP_E_INVALID_ARGUMENT && len == 0,
          "finish twice");

    /* Once closed early by TRUNCATE_ON_FULL, every later frame is dropped
     * and reported. */
    CHECK(btp_cbf_encoder_init(&enc, buf, 4, 64, BTP_CBF_ENC_TRUNCATE_ON_FULL) == BTP_OK,
          "init cap 4");
    CHECK(btp_cbf_encoder_add(&enc, PC(0x10), 1) == BTP_OK, "pc fits");
    CHECK(btp_cbf_encoder_add(&enc, PC(0x7fff00000000), 1) == BTP_E_BUFFER_TOO_SMALL, "full");
    CHECK(btp_cbf_encoder_add(&enc, PC(0x11), 1) == BTP_E_BUFFER_TOO_SMALL, "still closed");
    CHECK(btp_cbf_encoder_finish(&enc, 0, &len) == BTP_E_BUFFER_TOO_SMALL && len == 4 &&
              memcmp(buf, "\x02\x18\x10\x01", 4) == 0,
          "closed with trunc, %zu bytes", len);
}

/* Synthetic traces for the round-trip and every-capacity checks: reps,
 * omits (inline, 32, external), wrap-around, all kinds, each word size. */
static void test_synthetic_traces(void)
{
    const btp_frame t16[] = {PC(0x4000), RA(0x4010), RA(0x4010), RA(0x4010), OMIT(32),
                             OMIT(33), OMIT(33), ASYNC(0xfff0), ASYNC(0x10), RA(0x10),
                             OMIT(0xffff), RA(0x8000), RA(0x7fff)};
    const btp_frame t32[] = {RA(0xb6f01234), RA(0x00012345), RA(0x00012345), RA(0x00012345),
                             RA(0x00012345), RA(0x00012345), RA(0x00012345), RA(0x00012345),
                             RA(0x00012345), RA(0x00012345), RA(0x00012345), RA(0x00012345),
                             OMIT(1), OMIT(1), PC(0xffffffff), PC(0), OMIT(0x10000),
                             ASYNC(0x80000000)};
    const btp_frame t64[] = {PC(0x55710c32d94a), RA(0x55710c3ccb6c), RA(0x7ff1ff7d9c7f),
                             RA(0x7ff1ff7d9c7f), RA(0x55710c3ccb6c), OMIT(1000), RA(0x10),
                             RA(0xffffffffffffffff), RA(0x8000000000000000), OMIT(31),
                             OMIT(32), ASYNC(0x7fff000010f0), ASYNC(0x7fff000010f0),
                             OMIT(0xffffffffffffffff)};
    btp_frame rep300[300];
    for (size_t i = 0; i < COUNT(rep300); i++)
        rep300[i] = i < 150 ? RA(0x1000) : RA(0x2000);

    struct {
        const char *name;
        const btp_frame *f;
        size_t n;
        unsigned bits;
    } cases[] = {
        {"t16", t16, COUNT(t16), 16},    {"t16@32", t16, COUNT(t16), 32},
        {"t16@64", t16, COUNT(t16), 64}, {"t32", t32, COUNT(t32), 32},
        {"t32@64", t32, COUNT(t32), 64}, {"t64", t64, COUNT(t64), 64},
        {"rep300", rep300, COUNT(rep300), 16},
    };
    for (size_t c = 0; c < COUNT(cases); c++) {
        for (int truncated = 0; truncated < 2; truncated++) {
            for (unsigned swift = 0; swift < 2; swift++) {
                unsigned flags = swift ? BTP_CBF_ENC_SWIFT : 0;
                tu_check_roundtrip(cases[c].name, cases[c].f, cases[c].n, truncated,
                                   cases[c].bits, flags);
                tu_check_every_cap(cases[c].name, cases[c].f, cases[c].n, truncated,
                                   cases[c].bits, flags);
            }
        }
    }
}

/* btp_cbf_encode_addrs' fast loop against btp_cbf_encode (in
 * tu_check_roundtrip) at the edges of its tests: on 32-bit words, values
 * around [0x800000, 0xff800000), outside which an absolute operand may be
 * shorter, in every order, at odd and even positions and after repeats;
 * then values too wide for the word, one of them with the low 32 bits of
 * the address before it (a delta of 0 in 32 bits, not a repeat). */
static void test_addrs_edges(void)
{
    const uint64_t v[] = {1,          0x7f,       0x80,       0x7fff,     0x8000,
                          0x7fffff,   0x800000,   0x800001,   0x1234567,  0x56555000,
                          0xf7f00000, 0xff7fffff, 0xff800000, 0xff800001, 0xfffffffe,
                          0xffffffff};
    const unsigned bits[] = {16, 32, 64};
    char what[64];
    for (size_t b = 0; b < COUNT(bits); b++) {
        for (size_t i = 0; i < COUNT(v); i++) {
            for (size_t j = 0; j < COUNT(v); j++) {
                btp_frame f[] = {RA(v[i]), RA(v[j]), RA(v[j]), RA(v[i]), RA(v[j]), RA(v[i])};
                int fits = btp_word_mask(bits[b]) >= (v[i] > v[j] ? v[i] : v[j]);
                for (size_t n = 1; fits && n <= COUNT(f); n++) {
                    snprintf(what, sizeof what, "edges %zu,%zu n=%zu", i, j, n);
                    tu_check_roundtrip(what, f, n, 0, bits[b], 0);
                }
            }
        }
    }
    const uint64_t wide[][4] = {{0x100001234, 1, 2, 3},
                                {0x1234, 0x100001234, 1, 2},
                                {0x1234, 0x5678, 0x100005678, 1},
                                {0x1234, 0x5678, 0x9abc, 0x10000ffff}};
    for (size_t i = 0; i < COUNT(wide); i++) {
        for (size_t n = 1; n <= 4; n++) {
            uint8_t buf[64];
            size_t len = 1;
            btp_status st = btp_cbf_encode_addrs(wide[i], n, BTP_FRAME_RA, 0, 32, 0, buf,
                                                 sizeof buf, &len, NULL);
            int has_wide = 0;
            for (size_t k = 0; k < n; k++)
                has_wide |= wide[i][k] > 0xffffffff;
            CHECK(has_wide ? st == BTP_E_VALUE_TOO_WIDE && len == 0 : st == BTP_OK,
                  "wide %zu n=%zu: %s", i, n, btp_status_name(st));
        }
    }
}

int main(void)
{
    test_address_choices();
    test_omit_rep_choices();
    test_long_runs();
    test_arguments();
    test_synthetic_traces();
    test_addrs_edges();
    return check_finish();
}
