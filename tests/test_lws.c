/* Unit tests of the libwebsockets codec: encoder choices and refusals,
 * decoder faults with their offsets, text forms, scanner, and a bounded
 * robustness loop over random blobs (fixed seed). */
#include <btpack/btpack.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static const char seed_m[] = "~m#IF0BmUQugNCkgCnkhdAYpQa6wAAV";
static const char seed_b[] = "~b#size: 7520, 0x406651 0x406852 0x406c1b 0x406294 ";
static const btp_frame seed_frames[] = {
    {0x406651, BTP_FRAME_RA}, {0x406852, BTP_FRAME_RA}, {0x406c1b, BTP_FRAME_RA},
    {0x406294, BTP_FRAME_RA}};

static uint64_t rng_state = 0x9e3779b97f4a7c15u;
static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* A random value of random width (two calls, in a fixed order). */
static uint64_t rnd_any_width(void)
{
    uint64_t v = rnd();
    return v >> (rnd() % 64);
}

/* Encode frames to a ~m# line; returns the status. */
static btp_status m_line(const btp_frame *f, size_t n, uint64_t size, unsigned wb, unsigned flags,
                         char *out, size_t *out_len)
{
    uint8_t blob[BTP_LWS_BLOB_MAX];
    size_t len = 0;
    btp_status st = btp_lws_encode(f, n, size, wb, flags, blob, sizeof blob, &len, NULL);
    if (st != BTP_OK)
        return st;
    return btp_lws_m_format(blob, len, out, BTP_LWS_M_LINE_MAX, out_len);
}

static void test_seed(void)
{
    char line[BTP_LWS_M_LINE_MAX];
    size_t len = 0;
    CHECK(m_line(seed_frames, 4, 7520, 64, 0, line, &len) == BTP_OK, "encode");
    CHECK(len == strlen(seed_m) && !memcmp(line, seed_m, len), "seed m line: %.*s", (int)len,
          line);

    btp_frame f[BTP_LWS_MAX_FRAMES];
    btp_lws_info info;
    CHECK(btp_lws_m_decode(seed_m, strlen(seed_m), 64, f, BTP_LWS_MAX_FRAMES, &info) == BTP_OK,
          "decode");
    CHECK(info.depth == 4 && info.alloc_size == 7520 && info.bits == 152 && info.suspect == 0,
          "info %zu %llu %zu", info.depth, (unsigned long long)info.alloc_size, info.bits);
    char b[BTP_LWS_B_LINE_MAX(BTP_LWS_MAX_FRAMES)];
    CHECK(btp_lws_b_format(f, info.depth, info.alloc_size, b, sizeof b, &len) == BTP_OK, "b");
    CHECK(len == strlen(seed_b) && !memcmp(b, seed_b, len), "b line: %.*s", (int)len, b);
    for (size_t i = 0; i < 4; i++)
        CHECK(f[i].kind == BTP_FRAME_RA, "kind");

    /* The lead-in is optional; white space and the URL-safe alphabet are
     * accepted, as the decode tool does. */
    const char *variants[] = {"IF0BmUQugNCkgCnkhdAYpQa6wAAV", "~m#IF0BmUQu gNCkgCnk\nhdAYpQa6wAAV\r\n"};
    for (size_t v = 0; v < 2; v++) {
        CHECK(btp_lws_m_decode(variants[v], strlen(variants[v]), 64, f, 4, &info) == BTP_OK &&
                  info.depth == 4 && f[2].value == 0x406c1b,
              "variant %zu", v);
    }
    /* Too small an output array: BTP_E_LIMIT, the first frames, full info. */
    CHECK(btp_lws_m_decode(seed_m, strlen(seed_m), 64, f, 2, &info) == BTP_E_LIMIT &&
              info.depth == 4 && f[1].value == 0x406852,
          "limit");
}

static void test_refusals(void)
{
    uint8_t blob[BTP_LWS_BLOB_MAX];
    size_t len, ef;
    btp_frame f[40];
    for (size_t i = 0; i < 40; i++)
        f[i] = (btp_frame){0x400000 + 16 * i, BTP_FRAME_RA};
    CHECK(btp_lws_encode(f, 31, 0, 64, 0, blob, sizeof blob, &len, NULL) == BTP_OK, "31 ok");
    CHECK(btp_lws_encode(f, 32, 0, 64, 0, blob, sizeof blob, &len, NULL) ==
              BTP_E_DEPTH_TOO_LARGE,
          "32 frames");
    CHECK(btp_lws_encode(f, 2, 0, 16, 0, blob, sizeof blob, &len, NULL) == BTP_E_INVALID_ARGUMENT,
          "word 16");
    /* Frame kinds the format cannot say. */
    f[1].kind = BTP_FRAME_OMIT;
    CHECK(btp_lws_encode(f, 3, 0, 64, BTP_LWS_ENC_ANY_ADDRESS, blob, sizeof blob, &len, &ef) ==
                  BTP_E_UNREPRESENTABLE &&
              ef == 1,
          "omit");
    f[1].kind = BTP_FRAME_PC;
    CHECK(btp_lws_encode(f, 3, 0, 64, 0, blob, sizeof blob, &len, &ef) == BTP_E_UNREPRESENTABLE &&
              ef == 1,
          "pc refused by default");
    CHECK(btp_lws_encode(f, 3, 0, 64, BTP_LWS_ENC_ANY_ADDRESS, blob, sizeof blob, &len, &ef) ==
              BTP_OK,
          "pc accepted with ANY_ADDRESS");
    f[1].kind = BTP_FRAME_RA;
    /* Values beyond the word. */
    f[2].value = 0x100000000u;
    CHECK(btp_lws_encode(f, 3, 0, 32, 0, blob, sizeof blob, &len, &ef) == BTP_E_VALUE_TOO_WIDE &&
              ef == 2,
          "wide 32");
    CHECK(btp_lws_encode(f, 2, 0x100000000u, 32, 0, blob, sizeof blob, &len, &ef) ==
              BTP_E_VALUE_TOO_WIDE,
          "wide size");
    /* Bit 63: no literal; frame 0 has nothing to refer to; later frames
     * take a delta (wrapping if they must). */
    btp_frame hi[3] = {{0x8000000000000000u, BTP_FRAME_RA}, {0x10, BTP_FRAME_RA},
                       {0xffffffffffffffffu, BTP_FRAME_RA}};
    CHECK(btp_lws_encode(hi, 1, 0, 64, 0, blob, sizeof blob, &len, &ef) == BTP_E_UNREPRESENTABLE &&
              ef == 0,
          "bit 63 frame 0");
    CHECK(btp_lws_encode(&hi[1], 2, 0, 64, 0, blob, sizeof blob, &len, NULL) == BTP_OK, "wrap");
    btp_frame back[2];
    btp_lws_info info;
    CHECK(btp_lws_decode(blob, len, 64, back, 2, &info) == BTP_OK && back[1].value == hi[2].value,
          "wrap decodes");
    /* 0 and 2^63 are exactly 2^63 apart both ways: nothing expresses it. */
    btp_frame half[2] = {{0, BTP_FRAME_RA}, {0x8000000000000000u, BTP_FRAME_RA}};
    CHECK(btp_lws_encode(half, 2, 0, 64, BTP_LWS_ENC_OPTIMAL, blob, sizeof blob, &len, &ef) ==
                  BTP_E_UNREPRESENTABLE &&
              ef == 1,
          "2^63 apart");
    CHECK(btp_lws_encode(f, 1, 0x8000000000000000u, 64, 0, blob, sizeof blob, &len, NULL) ==
              BTP_E_UNREPRESENTABLE,
          "size bit 63");
    /* A short buffer: the size needed, nothing written past cap. */
    uint8_t small[8];
    memset(small, 0xaa, sizeof small);
    CHECK(btp_lws_encode(seed_frames, 4, 7520, 64, 0, small, 5, &len, NULL) ==
                  BTP_E_BUFFER_TOO_SMALL &&
              len == 21 && small[5] == 0xaa && small[7] == 0xaa,
          "small buffer, needed %zu", len);
}

/* Decoder faults and the bit offset of the faulty field. */
static void test_faults(void)
{
    btp_frame f[BTP_LWS_MAX_FRAMES];
    btp_lws_info info;
    uint8_t b[8] = {0};
    CHECK(btp_lws_decode(b, 1, 64, f, 31, &info) == BTP_E_LENGTH_MISMATCH, "1 byte");
    CHECK(btp_lws_decode(NULL, 0, 64, f, 31, &info) == BTP_E_LENGTH_MISMATCH, "empty");
    /* 00 00 03: depth 0, then no size field. */
    memcpy(b, "\x00\x00\x03", 3);
    CHECK(btp_lws_decode(b, 3, 64, f, 31, &info) == BTP_E_OUT_OF_BITS && info.error_bit == 6,
          "out of bits at %zu", info.error_bit);
    /* depth 1, delta (10), ref 0: nothing to refer to; the ref field starts
     * at bit 8. */
    memcpy(b, "\x0a\x00\x00\x04", 4);
    CHECK(btp_lws_decode(b, 4, 64, f, 31, &info) == BTP_E_BAD_REFERENCE && info.error_bit == 8,
          "bad ref at %zu", info.error_bit);
    /* depth 1, literal, count 33 on a 32-bit word. */
    memcpy(b, "\x08\x84\x00\x00\x00\x00\x07", 7);
    CHECK(btp_lws_decode(b, 7, 32, f, 31, &info) == BTP_E_BIT_COUNT_TOO_WIDE &&
              info.error_bit == 8,
          "count too wide at %zu", info.error_bit);
    CHECK(btp_lws_decode(b, 7, 64, f, 31, &info) == BTP_E_OUT_OF_BITS, "same on 64 runs out");
    /* Base64 faults give the column. */
    const char bad[] = "~m#IF0BmUQugNCkgCnkhdAYpQa6wAAV!";
    CHECK(btp_lws_m_decode(bad, strlen(bad), 64, f, 31, &info) == BTP_E_BAD_BASE64 &&
              info.error_column == 31,
          "base64 column %zu", info.error_column);
    /* A payload longer than any record. */
    char big[3 + 4 * 120];
    memcpy(big, "~m#", 3);
    memset(big + 3, 'A', sizeof big - 3);
    CHECK(btp_lws_m_decode(big, sizeof big, 64, f, 31, &info) == BTP_E_LIMIT, "long payload");
    /* Every status the codec returns has a message. */
    for (int s = BTP_E_BAD_BASE64; s <= BTP_E_UNREPRESENTABLE; s++)
        CHECK(strcmp(btp_strerror((btp_status)s), "unknown status") != 0, "message %d", s);
}

/* MSB-first bits for hand-made blobs: field v of w bits at bit *pos. */
static void put_bits(uint8_t *b, size_t *pos, uint64_t v, unsigned w)
{
    while (w--) {
        if (v >> w & 1)
            b[*pos >> 3] |= (uint8_t)(0x80u >> (*pos & 7));
        (*pos)++;
    }
}

/* Close a hand-made bitstream of `bits` bits with its trailer; returns the
 * blob's length. */
static size_t close_blob(uint8_t *b, size_t bits)
{
    size_t len = (bits + 7) / 8 + 2;
    b[len - 2] = (uint8_t)(len >> 8);
    b[len - 1] = (uint8_t)len;
    return len;
}

/* out[k] is either untouched (still the poison) or the frame expected. */
static int poison_or(const btp_frame *f, uint64_t want)
{
    static const uint8_t poison[sizeof(btp_frame)] = {0xa5, 0xa5, 0xa5, 0xa5, 0xa5, 0xa5,
                                                      0xa5, 0xa5, 0xa5, 0xa5, 0xa5, 0xa5,
                                                      0xa5, 0xa5, 0xa5, 0xa5};
    return !memcmp(f, poison, sizeof *f) || (f->value == want && f->kind == BTP_FRAME_RA);
}

static int untouched(const btp_frame *f)
{
    const uint8_t *p = (const uint8_t *)f;
    for (size_t i = 0; i < sizeof *f; i++)
        if (p[i] != 0xa5)
            return 0;
    return 1;
}

/*
 * What a failed decode leaves in the caller's array (lws.h): frames before
 * the fault may have been stored, correctly; the entries from the faulty
 * frame on may hold anything; nothing from the record's depth on, nor past
 * max_frames.
 */
static void test_fault_output(void)
{
    btp_frame out[BTP_LWS_MAX_FRAMES + 1];
    btp_lws_info info;
    for (unsigned wb = 32; wb <= 64; wb += 32) {
        /* depth 8: five 24-bit literals, then a delta 8 frames back (there
         * are 5), then two more literals; the size. */
        uint8_t b[64] = {0};
        size_t pos = 0;
        put_bits(b, &pos, 8 << 1, 6);
        for (unsigned k = 0; k < 5; k++) {
            put_bits(b, &pos, 0, 2);
            put_bits(b, &pos, 24 << 1, 7);
            put_bits(b, &pos, (uint64_t)(0x800000 + k) << 1, 25);
        }
        size_t ref_at = pos + 2;
        put_bits(b, &pos, 2, 2);          /* delta */
        put_bits(b, &pos, 7 << 1, 4);     /* 8 frames back */
        put_bits(b, &pos, 0, 2);          /* + */
        put_bits(b, &pos, 4 << 1, 7);     /* 4 bits */
        put_bits(b, &pos, 9 << 1, 5);
        for (unsigned k = 0; k < 2; k++) {
            put_bits(b, &pos, 0, 2);
            put_bits(b, &pos, 24 << 1, 7);
            put_bits(b, &pos, (uint64_t)0x900000 << 1, 25);
        }
        put_bits(b, &pos, 5 << 1, 7);
        put_bits(b, &pos, 20 << 1, 6);
        size_t len = close_blob(b, pos);
        memset(out, 0xa5, sizeof out);
        CHECK(btp_lws_decode(b, len, wb, out, BTP_LWS_MAX_FRAMES, &info) ==
                      BTP_E_BAD_REFERENCE &&
                  info.error_bit == ref_at,
              "%u: bad reference at %zu", wb, info.error_bit);
        for (unsigned k = 0; k < 5; k++)
            CHECK(poison_or(&out[k], 0x800000 + k), "%u: frame %u before the fault", wb, k);
        for (unsigned k = 8; k < BTP_LWS_MAX_FRAMES + 1; k++)
            CHECK(untouched(&out[k]), "%u: out[%u] written past the depth", wb, k);

        /* A valid record of 20 frames cut inside its size field: every frame
         * decodes, the size runs out of bits. */
        btp_frame f[20];
        for (unsigned k = 0; k < 20; k++)
            f[k] = (btp_frame){(wb == 64 ? 0x7f3a00000000u : 0x8040000u) + rnd() % 0x40000,
                               BTP_FRAME_RA};
        uint8_t blob[BTP_LWS_BLOB_MAX];
        size_t blen = 0;
        CHECK(btp_lws_encode(f, 20, 0xfffff, wb, 0, blob, sizeof blob, &blen, NULL) == BTP_OK,
              "%u: encode 20", wb);
        CHECK(btp_lws_decode(blob, blen, wb, out, 20, &info) == BTP_OK, "%u: decode 20", wb);
        size_t size_at = info.bits - (7 + 20 + 1); /* count, 20 bits and the extra bit */
        size_t cut = close_blob(blob, size_at + 7); /* the count only */
        memset(out, 0xa5, sizeof out);
        CHECK(btp_lws_decode(blob, cut, wb, out, 25, &info) == BTP_E_OUT_OF_BITS &&
                  info.error_bit == size_at + 7,
              "%u: size's value cut at %zu, not %zu", wb, info.error_bit, size_at + 7);
        for (unsigned k = 0; k < 20; k++)
            CHECK(poison_or(&out[k], f[k].value), "%u: frame %u of the cut record", wb, k);
        for (unsigned k = 20; k < BTP_LWS_MAX_FRAMES + 1; k++)
            CHECK(untouched(&out[k]), "%u: out[%u] written past the depth", wb, k);

        /* The same record cut one bit into frame 12: frames 0..11 as
         * encoded (or untouched), nothing from the depth on. Frame 12
         * starts where a record of the first 12 frames puts its size field
         * (the frames before it are written alike whatever follows). */
        size_t len12 = 0;
        CHECK(btp_lws_encode(f, 12, 0, wb, 0, blob, sizeof blob, &len12, NULL) == BTP_OK &&
                  btp_lws_decode(blob, len12, wb, out, 12, &info) == BTP_OK,
              "%u: encode 12", wb);
        size_t frame12 = info.bits - 9; /* size 0: count 1 and its extra bit, 1 bit, extra bit */
        CHECK(btp_lws_encode(f, 20, 0xfffff, wb, 0, blob, sizeof blob, &blen, NULL) == BTP_OK,
              "%u: encode 20 again", wb);
        cut = close_blob(blob, frame12 + 1);
        memset(out, 0xa5, sizeof out);
        CHECK(btp_lws_decode(blob, cut, wb, out, 25, &info) == BTP_E_OUT_OF_BITS &&
                  info.error_bit >= frame12,
              "%u: cut in frame 12 (at %zu): error at %zu", wb, frame12, info.error_bit);
        for (unsigned k = 0; k < 12; k++)
            CHECK(poison_or(&out[k], f[k].value), "%u: frame %u before the cut", wb, k);
        for (unsigned k = 20; k < BTP_LWS_MAX_FRAMES + 1; k++)
            CHECK(untouched(&out[k]), "%u: out[%u] written past the depth", wb, k);
    }
    /* Random faults: never a write from the depth field's count on, nor
     * past max_frames. */
    for (unsigned it = 0; it < 20000; it++) {
        uint8_t b[BTP_LWS_BLOB_MAX];
        size_t len = 3 + rnd() % (sizeof b - 3);
        for (size_t i = 0; i < len; i++)
            b[i] = (uint8_t)rnd();
        close_blob(b, (len - 2) * 8);
        size_t max = rnd() % (BTP_LWS_MAX_FRAMES + 1);
        memset(out, 0xa5, sizeof out);
        btp_status st = btp_lws_decode(b, len, rnd() & 1 ? 64 : 32, out, max, &info);
        if (st == BTP_OK || st == BTP_E_LIMIT)
            continue;
        size_t from = (size_t)(b[0] >> 3) < max ? (size_t)(b[0] >> 3) : max;
        for (size_t k = from; k < BTP_LWS_MAX_FRAMES + 1; k++)
            CHECK(untouched(&out[k]), "random fault: out[%zu] written (depth %u, max %zu)", k,
                  b[0] >> 3, max);
    }
}

static void test_text(void)
{
    const char line[] = "12:00:01.5 [heap] ~m#IF0BmUQugNCkgCnkhdAYpQa6wAAV, next~m#ANdYAAAG ~m#";
    size_t pos = 0, start, len;
    CHECK(btp_lws_scan(line, strlen(line), &pos, &start, &len) == BTP_OK && start == 18 &&
              len == strlen(seed_m),
          "scan 1: %zu %zu", start, len);
    CHECK(btp_lws_scan(line, strlen(line), &pos, &start, &len) == BTP_OK &&
              !memcmp(line + start, "~m#ANdYAAAG", len) && len == 11,
          "scan 2");
    CHECK(btp_lws_scan(line, strlen(line), &pos, &start, &len) == BTP_OK && len == 3, "scan 3");
    CHECK(btp_lws_scan(line, strlen(line), &pos, &start, &len) == BTP_END, "scan end");
    pos = 0;
    CHECK(btp_lws_scan("no record ~m", 12, &pos, &start, &len) == BTP_END, "none");

    /* ~b# parse: the tool's line, trailing CR/LF, upper-case hex. */
    btp_frame f[BTP_LWS_MAX_FRAMES];
    btp_lws_info info;
    const char b1[] = "~b#size: 7520, 0x406651 0x406852 0X406C1B 0x406294 \r\n";
    CHECK(btp_lws_b_parse(b1, strlen(b1), 64, f, 31, &info) == BTP_OK && info.depth == 4 &&
              info.alloc_size == 7520 && f[2].value == 0x406c1b && f[3].kind == BTP_FRAME_RA,
          "b parse");
    const char b0[] = "~b#size: 0, ";
    CHECK(btp_lws_b_parse(b0, strlen(b0), 64, f, 31, &info) == BTP_OK && info.depth == 0, "b0");
    const char *bad[] = {"~b#size: , 0x1 ", "~b#size: 1 0x1", "~b#size: 1, 0x ", "~b#size: 1, 12 ",
                         "~b#size: 1, 0x1g ", "~b#sz: 1, "};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK(btp_lws_b_parse(bad[i], strlen(bad[i]), 64, f, 31, &info) == BTP_E_SYNTAX,
              "bad b %zu", i);
    const char wide[] = "~b#size: 1, 0x10000000000000000 ";
    CHECK(btp_lws_b_parse(wide, strlen(wide), 64, f, 31, &info) == BTP_E_VALUE_TOO_WIDE &&
              info.error_column == 12,
          "wide b");
    const char big[] = "~b#size: 18446744073709551616, ";
    CHECK(btp_lws_b_parse(big, strlen(big), 64, f, 31, &info) == BTP_E_VALUE_TOO_WIDE, "big size");
    /* 64-bit truncation signature is flagged; 32-bit sign extension folded. */
    const char t64[] = "~b#size: 16, 0x401000 0xffffffff98638f6b ";
    CHECK(btp_lws_b_parse(t64, strlen(t64), 64, f, 31, &info) == BTP_OK && info.suspect == 2,
          "suspect %x", (unsigned)info.suspect);
    const char t32[] = "~b#size: 1, 0x10 0xffffffff80000000 0x7fffffff ";
    CHECK(btp_lws_b_parse(t32, strlen(t32), 32, f, 31, &info) == BTP_OK && info.folded == 1 &&
              f[1].value == 0x80000000u && info.suspect == 0,
          "fold");
    const char n32[] = "~b#size: 1, 0x1ffffffff ";
    CHECK(btp_lws_b_parse(n32, strlen(n32), 32, f, 31, &info) == BTP_E_VALUE_TOO_WIDE, "n32");

    /* Output buffers: exact fit works, one less is refused. */
    char out[BTP_LWS_B_LINE_MAX(4)];
    size_t n;
    CHECK(btp_lws_b_format(seed_frames, 4, 7520, out, strlen(seed_b), &n) == BTP_OK &&
              n == strlen(seed_b),
          "exact");
    CHECK(btp_lws_b_format(seed_frames, 4, 7520, out, strlen(seed_b) - 1, &n) ==
              BTP_E_BUFFER_TOO_SMALL,
          "short");
    btp_frame maxf[BTP_LWS_MAX_FRAMES];
    for (size_t i = 0; i < BTP_LWS_MAX_FRAMES; i++)
        maxf[i] = (btp_frame){UINT64_MAX - i, BTP_FRAME_RA};
    char longest[BTP_LWS_B_LINE_MAX(BTP_LWS_MAX_FRAMES)];
    CHECK(btp_lws_b_format(maxf, BTP_LWS_MAX_FRAMES, UINT64_MAX, longest, sizeof longest, &n) ==
                  BTP_OK &&
              n == sizeof longest,
          "bound is exact: %zu", n);
}

/* The 64-bit truncation signature on a record libwebsockets wrote for
 * 0x7f0198638f6b (public vector): flagged, not trusted. */
static void test_truncation_flag(void)
{
    const char m[] = "~m#CLw9rmGOPa4zwAAM";
    btp_frame f[1];
    btp_lws_info info;
    CHECK(btp_lws_m_decode(m, strlen(m), 64, f, 1, &info) == BTP_OK && info.suspect == 1 &&
              f[0].value != 0x7f0198638f6b,
          "flagged %x", (unsigned)info.suspect);
    /* Our own full-width encoding of the same value is exact. */
    btp_frame one = {0x7f0198638f6b, BTP_FRAME_RA};
    uint8_t blob[BTP_LWS_BLOB_MAX];
    size_t len;
    CHECK(btp_lws_encode(&one, 1, 60, 64, 0, blob, sizeof blob, &len, NULL) == BTP_OK, "enc");
    CHECK(btp_lws_decode(blob, len, 64, f, 1, &info) == BTP_OK && f[0].value == one.value &&
              info.alloc_size == 60,
          "full width");
}

/* Random traces: both modes decode back exactly, optimal is never longer. */
static void test_random_roundtrip(void)
{
    for (int iter = 0; iter < 3000; iter++) {
        unsigned wb = (iter & 1) ? 64 : 32;
        uint64_t mask = btp_word_mask(wb);
        size_t n = rnd() % 32;
        btp_frame f[BTP_LWS_MAX_FRAMES];
        uint64_t base = rnd() & mask;
        for (size_t i = 0; i < n; i++) {
            uint64_t r = rnd();
            uint64_t v;
            switch (r % 4) {
            case 0: v = r >> (r % 64); break;                      /* any width */
            case 1: v = base + (r >> 40); break;                    /* near */
            case 2: v = i ? f[(r >> 8) % i].value : base; break;    /* repeat */
            default: v = i ? f[i - 1].value - (r >> 50) : 1; break; /* just below */
            }
            f[i] = (btp_frame){v & mask & 0x7fffffffffffffffu, BTP_FRAME_RA};
        }
        uint64_t size = rnd_any_width() & mask & 0x7fffffffffffffffu;
        size_t len[2];
        for (int mode = 0; mode < 2; mode++) {
            uint8_t blob[BTP_LWS_BLOB_MAX];
            btp_frame back[BTP_LWS_MAX_FRAMES];
            btp_lws_info info;
            btp_status st = btp_lws_encode(f, n, size, wb, mode ? BTP_LWS_ENC_OPTIMAL : 0, blob,
                                           sizeof blob, &len[mode], NULL);
            CHECK(st == BTP_OK, "iter %d mode %d: %s", iter, mode, btp_status_name(st));
            if (st != BTP_OK)
                continue;
            st = btp_lws_decode(blob, len[mode], wb, back, BTP_LWS_MAX_FRAMES, &info);
            int same = st == BTP_OK && info.depth == n && info.alloc_size == size;
            for (size_t i = 0; same && i < n; i++)
                same = back[i].value == f[i].value;
            CHECK(same, "iter %d mode %d round trip (%s)", iter, mode, btp_status_name(st));
        }
        CHECK(len[1] <= len[0], "iter %d: optimal %zu > lws %zu", iter, len[1], len[0]);
    }
}

/* Random blobs with a correct trailer (so the bitstream is parsed), each in
 * a buffer of exactly its size so a sanitizer sees any overread. Whatever is
 * accepted must re-encode to a blob that decodes to the same record. */
static void test_random_blobs(void)
{
    unsigned accepted = 0, rejected = 0;
    for (int iter = 0; iter < 20000; iter++) {
        size_t len = 2 + rnd() % 80;
        uint8_t *b = malloc(len);
        if (!b)
            return;
        for (size_t i = 0; i + 2 < len; i++)
            b[i] = (uint8_t)rnd();
        /* Small depths make long valid records likelier. */
        if (len > 2 && (iter & 1))
            b[0] &= 0x1f;
        b[len - 2] = (uint8_t)(len >> 8);
        b[len - 1] = (uint8_t)len;
        unsigned wb = (iter & 2) ? 64 : 32;
        btp_frame f[BTP_LWS_MAX_FRAMES], g[BTP_LWS_MAX_FRAMES];
        btp_lws_info info, info2;
        btp_status st = btp_lws_decode(b, len, wb, f, BTP_LWS_MAX_FRAMES, &info);
        if (st == BTP_OK) {
            accepted++;
            uint8_t blob[BTP_LWS_BLOB_MAX];
            size_t blen;
            /* Bit 63 values are re-encodable only as deltas. */
            btp_status est = btp_lws_encode(f, info.depth, info.alloc_size, wb, BTP_LWS_ENC_OPTIMAL,
                                            blob, sizeof blob, &blen, NULL);
            if (est == BTP_OK) {
                int same = btp_lws_decode(blob, blen, wb, g, BTP_LWS_MAX_FRAMES, &info2) == BTP_OK &&
                           info2.depth == info.depth && info2.alloc_size == info.alloc_size;
                for (size_t i = 0; same && i < info.depth; i++)
                    same = f[i].value == g[i].value;
                CHECK(same, "iter %d: re-encoded record differs", iter);
            } else {
                CHECK(est == BTP_E_UNREPRESENTABLE, "iter %d: %s", iter, btp_status_name(est));
            }
        } else {
            rejected++;
            CHECK(st >= BTP_E_LENGTH_MISMATCH && st <= BTP_E_BIT_COUNT_TOO_WIDE &&
                      info.error_bit <= len * 8,
                  "iter %d: %s at %zu", iter, btp_status_name(st), info.error_bit);
        }
        free(b);
    }
    /* The loop must exercise both outcomes to mean anything. */
    CHECK(accepted > 100 && rejected > 100, "accepted %u rejected %u", accepted, rejected);
    printf("random blobs: %u accepted, %u rejected\n", accepted, rejected);
}

/* Random text built from pieces of both line forms: the scanner, the ~m#
 * reader and the ~b# parser never misbehave, and a ~b# line they accept
 * formats back to a line that parses to the same record. Each text sits in
 * a buffer of exactly its size. */
static void test_random_text(void)
{
    static const char *pieces[] = {"~m#", "~b#size: ", "~b#", "0x", "0X", " ", ", ", "=", "\r\n",
                                   "IF0B", "mUQu", "AAAV", "ffffffff", "8", "12", "-_", "+/",
                                   "~", "#", "x", "9999999999999999999999",
                                   "~m#IF0BmUQugNCkgCnkhdAYpQa6wAAV"};
    unsigned b_ok = 0, m_ok = 0;
    for (int iter = 0; iter < 20000; iter++) {
        char tmp[256];
        size_t n = 0, k = 1 + rnd() % 16;
        if (iter & 1) {
            /* A mostly well-formed ~b# line, perhaps with one odd piece. */
            n = (size_t)snprintf(tmp, sizeof tmp, "~b#size: %llu, ",
                                 (unsigned long long)rnd_any_width());
            for (size_t i = 0; i < k % 8; i++)
                n += (size_t)snprintf(tmp + n, sizeof tmp - n, "0x%llx ",
                                      (unsigned long long)rnd_any_width());
            k = rnd() % 3 == 0;
        }
        for (size_t i = 0; i < k; i++) {
            const char *p = pieces[rnd() % (sizeof pieces / sizeof pieces[0])];
            size_t l = strlen(p);
            if (n + l > sizeof tmp)
                break;
            memcpy(tmp + n, p, l);
            n += l;
        }
        char *t = malloc(n ? n : 1);
        if (!t)
            return;
        memcpy(t, tmp, n);
        size_t pos = 0, start, len, records = 0;
        while (btp_lws_scan(t, n, &pos, &start, &len) == BTP_OK && records++ < n) {
            btp_frame f[BTP_LWS_MAX_FRAMES];
            btp_lws_info info;
            CHECK(start + len <= n && pos <= n, "iter %d: scan span", iter);
            if (btp_lws_m_decode(t + start, len, 64, f, BTP_LWS_MAX_FRAMES, &info) == BTP_OK)
                m_ok++;
        }
        btp_frame f[BTP_LWS_MAX_FRAMES], g[BTP_LWS_MAX_FRAMES];
        btp_lws_info info, info2;
        unsigned wb = (iter & 2) ? 32 : 64;
        if (btp_lws_b_parse(t, n, wb, f, BTP_LWS_MAX_FRAMES, &info) == BTP_OK) {
            char out[BTP_LWS_B_LINE_MAX(BTP_LWS_MAX_FRAMES)];
            size_t olen = 0;
            int same = btp_lws_b_format(f, info.depth, info.alloc_size, out, sizeof out, &olen) ==
                           BTP_OK &&
                       btp_lws_b_parse(out, olen, wb, g, BTP_LWS_MAX_FRAMES, &info2) == BTP_OK &&
                       info2.depth == info.depth && info2.alloc_size == info.alloc_size;
            for (size_t i = 0; same && i < info.depth; i++)
                same = f[i].value == g[i].value;
            CHECK(same, "iter %d: ~b# line does not re-parse: %.*s", iter, (int)n, t);
            b_ok++;
        } else {
            CHECK(info.error_column <= n, "iter %d: column %zu", iter, info.error_column);
        }
        free(t);
    }
    CHECK(b_ok > 100 && m_ok > 100, "only %u ~b# lines, %u ~m# records accepted", b_ok, m_ok);
    printf("random text: %u ~b# lines accepted, %u ~m# records decoded\n", b_ok, m_ok);
}

int main(void)
{
    test_seed();
    test_refusals();
    test_faults();
    test_fault_output();
    test_text();
    test_truncation_flag();
    test_random_roundtrip();
    test_random_blobs();
    test_random_text();
    return check_finish();
}
