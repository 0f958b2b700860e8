/*
 * CBF decoder: runs and rep merging, huge counts, sticky ends and errors,
 * error precedence, concatenated streams, the three policies on the
 * questions the vectors leave out, and random bytes.
 */
#include <btpack/btpack.h>

#include "cbf_testutil.h"
#include "test_rng.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

typedef struct expect_run {
    btp_frame_kind kind;
    uint64_t value;
    uint64_t count;
} expect_run;

/* Decode hex under policy and compare the runs, the final status and its
 * offset (for errors) or the terminator and bytes consumed (for END). */
static void expect_runs(const char *what, const char *hex, unsigned policy,
                        const expect_run *want, size_t n_want, btp_status final, size_t where)
{
    size_t len = 0;
    uint8_t *buf = tu_parse_hex(hex, &len);
    btp_cbf_decoder dec;
    btp_cbf_run run;
    size_t n = 0;
    int same = 1;
    btp_status st = btp_cbf_decoder_init(&dec, buf, len, policy);
    while (st == BTP_OK && (st = btp_cbf_decoder_next(&dec, &run)) == BTP_OK) {
        same = same && n < n_want && run.frame.kind == want[n].kind &&
               run.frame.value == want[n].value && run.count == want[n].count;
        n++;
    }
    CHECK(same && n == n_want, "%s: runs differ (%zu runs, want %zu)", what, n, n_want);
    CHECK(st == final, "%s: %s, want %s", what, btp_status_name(st), btp_status_name(final));
    if (final == BTP_END)
        CHECK(btp_cbf_decoder_consumed(&dec) == where, "%s: consumed %zu, want %zu", what,
              btp_cbf_decoder_consumed(&dec), where);
    else
        CHECK(btp_cbf_decoder_error_offset(&dec) == where, "%s: error offset %zu, want %zu", what,
              btp_cbf_decoder_error_offset(&dec), where);
    /* End and errors are sticky. */
    CHECK(btp_cbf_decoder_next(&dec, &run) == st, "%s: not sticky", what);
    free(buf);
}

#define RUNS(...) ((const expect_run[]){__VA_ARGS__}), \
    (sizeof((const expect_run[]){__VA_ARGS__}) / sizeof(expect_run))
#define NO_RUNS NULL, 0
#define STRICT BTP_CBF_POLICY_STRICT
#define DEFAULT BTP_CBF_POLICY_DEFAULT
#define SWIFT BTP_CBF_POLICY_SWIFT
#define PC BTP_FRAME_PC
#define RA BTP_FRAME_RA
#define OMIT BTP_FRAME_OMIT

/* A rep's count is added, never iterated: 2^64-1 copies are one run. */
static void test_huge_reps(void)
{
    expect_runs("rep 2^64-2", "0218108ffffffffffffffffe00", STRICT,
                RUNS({PC, 0x10, UINT64_MAX}), BTP_END, 13);
    /* The frame plus 2^64-1 copies is 2^64: the rep becomes its own run. */
    expect_runs("rep 2^64-1", "0218108fffffffffffffffff00", STRICT,
                RUNS({PC, 0x10, 1}, {PC, 0x10, UINT64_MAX}), BTP_END, 13);
    /* Merged counts that overflow continue in a second run of the frame. */
    expect_runs("merge overflow", "021810" "8f8000000000000000" "8f8000000000000000" "00",
                STRICT, RUNS({PC, 0x10, 0x8000000000000001}, {PC, 0x10, 0x8000000000000000}),
                BTP_END, 22);
    expect_runs("merge overflow, then more merging",
                "021810" "8fffffffffffffffff" "8fffffffffffffffff" "87" "00", STRICT,
                RUNS({PC, 0x10, 1}, {PC, 0x10, UINT64_MAX}, {PC, 0x10, UINT64_MAX}, {PC, 0x10, 8}),
                BTP_END,
                23);
    /* One-shot decoding expands up to max_frames and stops: bounded work. */
    size_t len;
    uint8_t *buf = tu_parse_hex("0218108fffffffffffffffff00", &len);
    btp_frame out[16];
    btp_cbf_info info;
    btp_status st = btp_cbf_decode(buf, len, STRICT, out, COUNT(out), &info);
    CHECK(st == BTP_E_LIMIT && info.frames == COUNT(out) &&
              tu_frame_eq(out[15], tu_frame(PC, 0x10)),
          "expansion limit: %s, %zu frames", btp_status_name(st), info.frames);
    st = btp_cbf_decode(buf, len, STRICT, NULL, 0, &info);
    CHECK(st == BTP_E_LIMIT && info.frames == 0, "max_frames 0: %s", btp_status_name(st));
    free(buf);
}

/* Consecutive reps add; rep repeats the whole previous frame, omit too;
 * a frame equal to the previous one written again is a new run. */
static void test_rep_semantics(void)
{
    expect_runs("rep after rep", "021810878700", STRICT, RUNS({PC, 0x10, 17}), BTP_END, 6);
    expect_runs("inline and external reps", "0218108789100000", STRICT,
                RUNS({PC, 0x10, 1 + 8 + 0x1000}), BTP_END, 8);
    expect_runs("rep after omit", "0218104481" "2000", STRICT,
                RUNS({PC, 0x10, 1}, {OMIT, 5, 3}, {RA, 0x10, 1}), BTP_END, 7);
    expect_runs("same frame twice is two runs", "021810100000", STRICT,
                RUNS({PC, 0x10, 1}, {PC, 0x10, 1}), BTP_END, 6);
    expect_runs("rep without frame", "0280", DEFAULT, NO_RUNS, BTP_E_REP_WITHOUT_FRAME, 1);
    /* The run before a faulty rep is returned, then the error. */
    expect_runs("run before a cut rep", "02181089ff", STRICT, RUNS({PC, 0x10, 1}),
                BTP_E_TRUNCATED_OPERAND, 3);
    expect_runs("run before a zero rep (strict)", "021810878800", STRICT,
                RUNS({PC, 0x10, 9}), BTP_E_ZERO_COUNT, 4);
}

/* Information byte: empty, version before size, each size. */
static void test_info_byte(void)
{
    btp_cbf_decoder dec;
    CHECK(btp_cbf_decoder_init(&dec, "", 0, DEFAULT) == BTP_E_EMPTY_INPUT, "empty");
    CHECK(btp_cbf_decoder_init(&dec, NULL, 0, DEFAULT) == BTP_E_EMPTY_INPUT, "NULL, 0");
    CHECK(btp_cbf_decoder_init(&dec, NULL, 3, DEFAULT) == BTP_E_INVALID_ARGUMENT, "NULL, 3");
    CHECK(btp_cbf_decoder_init(NULL, "\x02", 1, DEFAULT) == BTP_E_INVALID_ARGUMENT, "no decoder");
    CHECK(btp_cbf_decoder_init(&dec, "\x07", 1, STRICT) == BTP_E_BAD_VERSION &&
              btp_cbf_decoder_error_offset(&dec) == 0,
          "version is checked before size");
    CHECK(btp_cbf_decoder_init(&dec, "\x04", 1, STRICT) == BTP_E_BAD_VERSION, "version 1");
    CHECK(btp_cbf_decoder_init(&dec, "\x03", 1, SWIFT) == BTP_E_RESERVED_SIZE, "size 3");
    btp_cbf_run run;
    CHECK(btp_cbf_decoder_next(&dec, &run) == BTP_E_RESERVED_SIZE, "init error is sticky");
    static const unsigned bits[] = {16, 32, 64};
    for (unsigned s = 0; s < 3; s++) {
        uint8_t info = (uint8_t)s;
        CHECK(btp_cbf_decoder_init(&dec, &info, 1, STRICT) == BTP_OK &&
                  btp_cbf_decoder_word_bits(&dec) == bits[s],
              "size code %u", s);
        CHECK(btp_cbf_decoder_next(&dec, &run) == BTP_END &&
                  btp_cbf_decoder_terminator(&dec) == BTP_CBF_TERM_NONE,
              "information byte only");
    }
    CHECK(btp_cbf_decoder_next(NULL, &run) == BTP_E_INVALID_ARGUMENT, "next(NULL)");
    CHECK(btp_cbf_decoder_next(&dec, NULL) == BTP_E_INVALID_ARGUMENT, "next(run NULL)");
}

/* Streams stored back to back: the default policy stops at end/trunc and
 * consumed() says where the next stream starts. */
static void test_concatenated(void)
{
    size_t len;
    uint8_t *buf = tu_parse_hex("02181000" "01183001" "0029123480", &len);
    btp_frame out[8];
    btp_cbf_info info;
    size_t at = 0, frames = 0, streams = 0;
    while (at < len && streams < 4) {
        btp_status st = btp_cbf_decode(buf + at, len - at, DEFAULT, out + frames,
                                       COUNT(out) - frames, &info);
        CHECK(st == BTP_OK, "stream %zu: %s", streams, btp_status_name(st));
        if (st != BTP_OK)
            break;
        at += info.consumed;
        frames += info.frames;
        streams++;
    }
    CHECK(streams == 3 && at == len && frames == 4, "%zu streams, %zu frames", streams, frames);
    CHECK(info.terminator == BTP_CBF_TERM_NONE, "last stream has no terminator");
    CHECK(tu_frame_eq(out[1], tu_frame(PC, 0x30)) && tu_frame_eq(out[3], tu_frame(RA, 0x1234)),
          "frames of the streams");
    btp_status st = btp_cbf_decode(buf, len, STRICT, out, COUNT(out), &info);
    CHECK(st == BTP_E_TRAILING_BYTES && info.error_offset == 4 && info.frames == 1,
          "strict rejects the second stream: %s", btp_status_name(st));
    free(buf);
}

/* Within an instruction the checks come in a fixed order: reserved
 * opcode; rep without frame; operand wider than the word; operand cut
 * short; zero count; relative first address. */
static void test_precedence(void)
{
    expect_runs("rep without frame before its cut operand", "0288", STRICT, NO_RUNS,
                BTP_E_REP_WITHOUT_FRAME, 1);
    expect_runs("too wide before cut short (address)", "0013ff", STRICT, NO_RUNS,
                BTP_E_ADDRESS_TOO_WIDE, 1);
    expect_runs("too wide before cut short (count)", "021810680000", DEFAULT,
                RUNS({PC, 0x10, 1}), BTP_E_COUNT_TOO_WIDE, 3);
    expect_runs("cut short before relative first", "0210", STRICT, NO_RUNS,
                BTP_E_TRUNCATED_OPERAND, 1);
    expect_runs("cut short before zero count", "0260", STRICT, NO_RUNS, BTP_E_TRUNCATED_OPERAND,
                1);
    expect_runs("reserved opcode whatever follows", "02021010", STRICT, NO_RUNS,
                BTP_E_RESERVED_OPCODE, 1);
    expect_runs("reserved opcode 0x90", "021810" "90", DEFAULT, RUNS({PC, 0x10, 1}),
                BTP_E_RESERVED_OPCODE, 3);
}

/* The policy decisions the vector files do not cover. */
static void test_policies(void)
{
    /* "First address" is the first pc/ra/async, even after an omit. */
    expect_runs("relative first after omit, strict", "0244201000", STRICT, RUNS({OMIT, 5, 1}),
                BTP_E_FIRST_ADDRESS_RELATIVE, 2);
    expect_runs("relative first after omit, default", "0244201000", DEFAULT,
                RUNS({OMIT, 5, 1}, {RA, 0x10, 1}), BTP_END, 5);
    expect_runs("relative after absolute, strict", "021810201000", STRICT,
                RUNS({PC, 0x10, 1}, {RA, 0x20, 1}), BTP_END, 6);
    /* Each REJECT flag alone. */
    expect_runs("REJECT_RELATIVE_FIRST alone", "0210100000ff", BTP_CBF_REJECT_RELATIVE_FIRST,
                NO_RUNS, BTP_E_FIRST_ADDRESS_RELATIVE, 1);
    expect_runs("REJECT_TRAILING alone", "02101000ff", BTP_CBF_REJECT_TRAILING,
                RUNS({PC, 0x10, 1}), BTP_E_TRAILING_BYTES, 4);
    expect_runs("REJECT_ZERO_COUNT alone", "021010600000", BTP_CBF_REJECT_ZERO_COUNT,
                RUNS({PC, 0x10, 1}), BTP_E_ZERO_COUNT, 3);
    expect_runs("end as the last byte is not trailing", "02181000", STRICT,
                RUNS({PC, 0x10, 1}), BTP_END, 4);
    /* Strict accepts non-minimal forms: external counts that would fit
     * inline, padded operands. */
    expect_runs("non-minimal forms, strict", "0219" "0010" "8801" "6001" "2100ff" "00", STRICT,
                RUNS({PC, 0x10, 2}, {OMIT, 1, 1}, {RA, 0x10f, 1}), BTP_END, 12);
    /* Default: a zero external rep adds nothing, even as the first thing
     * after a run that overflowed; an omit of 0 is returned as is. */
    expect_runs("zero rep, default", "021810880000", DEFAULT, RUNS({PC, 0x10, 1}), BTP_END, 6);
    expect_runs("zero omit, default", "02600000", DEFAULT, RUNS({OMIT, 0, 1}), BTP_END, 4);
    /* Wide operands: default and strict reject, Swift keeps the low bytes
     * of an address and takes a long count whole if it fits 64 bits. */
    expect_runs("wide address, default", "001aff123400", DEFAULT, NO_RUNS,
                BTP_E_ADDRESS_TOO_WIDE, 1);
    expect_runs("wide address, swift", "001bffff123400", SWIFT, RUNS({PC, 0x1234, 1}), BTP_END,
                7);
    expect_runs("wide negative address, swift", "001afffff000", SWIFT, RUNS({PC, 0xfff0, 1}),
                BTP_END, 6);
    expect_runs("16-byte omit count, swift", "021808" "6f" "00000000000000000000000000000102" "00",
                SWIFT, RUNS({PC, 0x8, 1}, {OMIT, 0x102, 1}), BTP_END, 21);
    expect_runs("32-byte omit count 2^64-1, swift",
                "021808" "7f" "000000000000000000000000000000000000000000000000ffffffffffffffff" "00",
                SWIFT, RUNS({PC, 0x8, 1}, {OMIT, UINT64_MAX, 1}), BTP_END, 37);
    expect_runs("9-byte omit count above 2^64-1, swift", "021808" "68" "010000000000000000" "00",
                SWIFT, RUNS({PC, 0x8, 1}), BTP_E_COUNT_TOO_WIDE, 3);
    expect_runs("8-byte rep count on 16-bit, swift", "0018088f00000000000000ff", SWIFT,
                RUNS({PC, 0x8, 0x100}), BTP_END, 12);
    expect_runs("wide count cut short, swift", "0018086f0000", SWIFT, RUNS({PC, 0x8, 1}),
                BTP_E_TRUNCATED_OPERAND, 3);
    expect_runs("wide count cut short, default", "0018086f0000", DEFAULT, RUNS({PC, 0x8, 1}),
                BTP_E_COUNT_TOO_WIDE, 3);
}

static uint64_t rng_state = 0x9e3779b97f4a7c15u;
static uint64_t rng(void)
{
    return test_rng(&rng_state);
}

/* Random bytes under each policy never crash (ASan/UBSan builds check the
 * memory side), give a known status with an offset inside the input, and
 * whatever decodes re-encodes to a stream that decodes strictly to the
 * same frames. */
static void test_random_bytes(void)
{
    enum { ROUNDS = 60000, MAX_LEN = 40, MAX_RUNS = 64 };
    static const unsigned policies[] = {DEFAULT, STRICT, SWIFT};
    uint8_t in[MAX_LEN];
    uint8_t enc[BTP_CBF_BOUND(MAX_RUNS) + 64 * 4];
    btp_cbf_run runs[MAX_RUNS], back[MAX_RUNS * 4];
    unsigned long decoded_ok = 0, errors = 0, bad = 0, reencode_bad = 0;
    for (unsigned r = 0; r < ROUNDS; r++) {
        /* Short inputs often, and bytes biased towards defined opcodes
         * (0x00-0x8f), so that many inputs decode and reps pile up. */
        size_t len = (size_t)(rng() % (rng() % 2 ? 12 : MAX_LEN + 1));
        for (size_t i = 0; i < len; i++)
            in[i] = (uint8_t)(rng() % 4 ? rng() % 0x90 : rng());
        if (len && rng() % 8)
            in[0] = (uint8_t)(rng() % 3); /* mostly a valid information byte */
        unsigned policy = policies[r % 3];
        btp_cbf_decoder dec;
        btp_cbf_run run;
        size_t n = 0;
        btp_status st = btp_cbf_decoder_init(&dec, in, len, policy);
        while (st == BTP_OK && (st = btp_cbf_decoder_next(&dec, &run)) == BTP_OK) {
            if (run.count == 0 || n == MAX_RUNS)
                bad++;
            else
                runs[n++] = run;
        }
        if (st == BTP_END) {
            decoded_ok++;
            if (btp_cbf_decoder_consumed(&dec) > len)
                bad++;
        } else {
            errors++;
            int known = (st >= BTP_E_EMPTY_INPUT && st <= BTP_E_TRAILING_BYTES) ||
                        st == BTP_E_ZERO_COUNT;
            if (!known ||
                (len && btp_cbf_decoder_error_offset(&dec) >= len)) {
                bad++;
                fprintf(stderr, "round %u: %s at %zu of %zu\n", r, btp_status_name(st),
                        btp_cbf_decoder_error_offset(&dec), len);
            }
        }
        if (st != BTP_END)
            continue;
        /* Re-encode the runs; omit 0 (accepted by the default policy) and
         * Swift-mode counts wider than the word cannot be written. */
        unsigned bits = btp_cbf_decoder_word_bits(&dec);
        btp_cbf_encoder e;
        size_t elen = 0;
        btp_status es = btp_cbf_encoder_init(&e, enc, sizeof enc, bits, 0);
        for (size_t i = 0; i < n && es == BTP_OK; i++)
            es = btp_cbf_encoder_add(&e, runs[i].frame, runs[i].count);
        if (es == BTP_E_ZERO_COUNT || es == BTP_E_VALUE_TOO_WIDE)
            continue;
        if (es == BTP_OK)
            es = btp_cbf_encoder_finish(&e, btp_cbf_decoder_terminator(&dec) == BTP_CBF_TERM_TRUNC,
                                        &elen);
        /* A Swift-mode 8-byte rep count on a 16-bit word re-encodes as up
         * to 2^48 reps: too big for the buffer, but counted, not looped. */
        if (es == BTP_E_BUFFER_TOO_SMALL && policy == SWIFT && btp_cbf_encoder_needed(&e) > sizeof enc)
            continue;
        size_t m = 0;
        btp_cbf_decoder d2;
        btp_status ds = es == BTP_OK ? btp_cbf_decoder_init(&d2, enc, elen, STRICT) : es;
        while (ds == BTP_OK && m < COUNT(back) && (ds = btp_cbf_decoder_next(&d2, &run)) == BTP_OK)
            back[m++] = run;
        size_t cn = tu_canonical_runs(runs, n), cm = tu_canonical_runs(back, m);
        int same = ds == BTP_END && cn == cm;
        for (size_t i = 0; same && i < cn; i++)
            same = tu_frame_eq(runs[i].frame, back[i].frame) && runs[i].count == back[i].count;
        if (!same) {
            reencode_bad++;
            if (reencode_bad < 5)
                fprintf(stderr, "round %u: re-encode %s/%s, %zu vs %zu runs\n", r,
                        btp_status_name(es), btp_status_name(ds), cn, cm);
        }
    }
    CHECK(bad == 0, "%lu random inputs gave a bad result", bad);
    CHECK(reencode_bad == 0, "%lu random inputs did not re-encode", reencode_bad);
    /* The loop is only worth something if it reached both outcomes. */
    CHECK(decoded_ok > ROUNDS / 50 && errors > ROUNDS / 50, "%lu decoded, %lu errors", decoded_ok,
          errors);
    printf("random: %d inputs, %lu decoded, %lu errors\n", ROUNDS, decoded_ok, errors);
}

/* Streams made mostly of address instructions of every width (the
 * one-shot decoder's fast paths), with omits, reps, terminators, bytes
 * after them, faults and cuts anywhere (the last 8 bytes go another way),
 * under every policy and output size: btp_cbf_decode must give what the
 * cursor gives, expanded. */
static void test_oneshot_matches_cursor(void)
{
    enum { ROUNDS = 40000, MAX_LEN = 96, MAX_OUT = 48 };
    static const unsigned policies[] = {DEFAULT, STRICT, SWIFT};
    uint8_t in[MAX_LEN];
    btp_frame want[MAX_OUT + 1], got[MAX_OUT];
    unsigned long differ = 0, ok = 0, limit = 0, errors = 0;
    for (unsigned r = 0; r < ROUNDS; r++) {
        size_t len = 0;
        in[len++] = (uint8_t)(rng() % 8 ? rng() % 3 : rng());
        size_t target = 1 + (size_t)(rng() % MAX_LEN);
        while (len < target) {
            unsigned pick = (unsigned)(rng() % 100);
            uint8_t op;
            if (pick < 80) /* pc/ra/async, absolute or relative, 1..8 bytes */
                op = (uint8_t)(0x10 + rng() % 0x30);
            else if (pick < 86)
                op = (uint8_t)(0x40 + rng() % 0x40); /* omit */
            else if (pick < 92)
                op = (uint8_t)(0x80 + rng() % 0x10); /* rep */
            else if (pick < 97)
                op = (uint8_t)(rng() % 2); /* end, trunc */
            else
                op = (uint8_t)rng();
            in[len++] = op;
            unsigned operand = (op >= 0x10 && op < 0x40) ? (op & 7u) + 1
                               : (op >= 0x60 && op < 0x80) ? (op & 0x1fu) + 1
                               : (op >= 0x88 && op < 0x90) ? (op & 7u) + 1
                                                           : 0;
            for (unsigned k = 0; k < operand && len < MAX_LEN; k++)
                in[len++] = (uint8_t)(rng() % 4 ? rng() : 0);
        }
        if (rng() % 4 == 0)
            len -= (size_t)(rng() % (len < 9 ? len : 9)); /* cut anywhere */
        unsigned policy = policies[r % 3];
        size_t room = (size_t)(rng() % 3 ? MAX_OUT : rng() % (MAX_OUT + 1));

        /* The cursor, runs expanded into want[0..room]. */
        btp_cbf_decoder dec;
        btp_cbf_run run;
        size_t n = 0;
        int over = 0;
        btp_status st = btp_cbf_decoder_init(&dec, in, len, policy);
        while (st == BTP_OK && !over && (st = btp_cbf_decoder_next(&dec, &run)) == BTP_OK)
            for (uint64_t c = 0; c < run.count && !over; c++) {
                if (n == room)
                    over = 1;
                else
                    want[n++] = run.frame;
            }
        btp_status expect = over ? BTP_E_LIMIT : st == BTP_END ? BTP_OK : st;

        btp_cbf_info info;
        btp_status got_st = btp_cbf_decode(in, len, policy, got, room, &info);
        int same = got_st == expect && info.frames == n;
        for (size_t i = 0; same && i < n; i++)
            same = tu_frame_eq(got[i], want[i]);
        if (same && expect == BTP_OK)
            same = info.consumed == btp_cbf_decoder_consumed(&dec) &&
                   info.terminator == btp_cbf_decoder_terminator(&dec) &&
                   info.word_bits == btp_cbf_decoder_word_bits(&dec);
        else if (same && expect != BTP_E_LIMIT)
            same = info.error_offset == btp_cbf_decoder_error_offset(&dec) &&
                   info.consumed == btp_cbf_decoder_consumed(&dec);
        if (!same && ++differ < 5)
            fprintf(stderr, "round %u: one-shot %s, %zu frames; cursor %s, %zu frames\n", r,
                    btp_status_name(got_st), info.frames, btp_status_name(expect), n);
        ok += expect == BTP_OK;
        limit += expect == BTP_E_LIMIT;
        errors += expect != BTP_OK && expect != BTP_E_LIMIT;
    }
    CHECK(differ == 0, "%lu streams: one-shot and cursor differ", differ);
    CHECK(ok > ROUNDS / 20 && limit > ROUNDS / 50 && errors > ROUNDS / 20,
          "%lu decoded, %lu over the limit, %lu errors", ok, limit, errors);
    printf("one-shot vs cursor: %d streams, %lu decoded, %lu over the limit, %lu errors\n",
           ROUNDS, ok, limit, errors);
}

int main(void)
{
    test_huge_reps();
    test_rep_semantics();
    test_info_byte();
    test_precedence();
    test_concatenated();
    test_policies();
    test_random_bytes();
    test_oneshot_matches_cursor();
    return check_finish();
}
