/*
 * CIF codec unit tests: the worked examples of the format notes (decoded
 * field by field, encoded back byte for byte), the encoder's choices and
 * errors, the decoder's Swift-compatible recovery, and random maps through
 * both directions in every mode. The vectors recorded from Swift's runtime
 * are in test_cif_vectors.c.
 */
#include <btpack/btpack.h>

#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cif_testutil.h"
#include "test_rng.h"

static size_t unhex(const char *h, unsigned char *out)
{
    size_t n = 0;
    for (; h[0] && h[1]; h += 2)
        sscanf(h, "%2hhx", &out[n++]);
    return n;
}

static unsigned char arena[1 << 20];
static btp_image images[4096];
static btp_cif_prefix table[65536];
static unsigned char out[1 << 20];

static btp_status dec(const unsigned char *p, size_t n, unsigned policy, btp_image_map *m,
                      btp_cif_info *info)
{
    return btp_cif_decode(p, n, policy, images, 4096, arena, sizeof arena, m, info);
}

static btp_status enc(const btp_image_map *m, unsigned flags, size_t *len)
{
    return btp_cif_encode(m, flags, table, 65536, out, sizeof out, len, NULL);
}

/* cif.md example 2 (Linux x86_64, four images) and example 3 (32-bit). */
static void examples(void)
{
    static unsigned char in[512];
    size_t n = unhex("02264c696e7578202844656269616e20474e552f4c696e75782031322028626f6f6b776f"
                     "726d292904295555555540002000140102030405060708090a0b0c0d0e0f10111213141"
                     "02f7573722f62696e2f63726173686572002a7ffff7c0000019500002abcd811b2f7838"
                     "365f36342d6c696e75782d676e752f6c6962632e736f2e36009220000007f0000081a28"
                     "0066d2e736f2e3600921c300002c0000111801736342f6c642d6c696e75782d7838362d"
                     "36342e736f2e3200", in);
    btp_image_map m;
    btp_cif_info info;
    CHECK(dec(in, n, BTP_CIF_POLICY_STRICT, &m, &info) == BTP_OK && info.consumed == 186,
          "example 2: %zu bytes", info.consumed);
    CHECK(m.word_bits == 64 && m.n_images == 4 &&
              strcmp(m.platform, "Linux (Debian GNU/Linux 12 (bookworm))") == 0,
          "example 2: map");
    CHECK(strcmp(m.images[2].path, "/usr/lib/x86_64-linux-gnu/libm.so.6") == 0 &&
              strcmp(m.images[2].name, "libm.so.6") == 0 && m.images[2].build_id_len == 0 &&
              m.images[2].base == 0x7ffff7e00000 && m.images[2].end_of_text == 0x7ffff7e7f000,
          "example 2: image 2 (relative base, three prefix references)");
    CHECK(strcmp(m.images[3].path, "/lib64/ld-linux-x86-64.so.2") == 0 &&
              m.images[3].build_id_len == 1 && m.images[3].build_id[0] == 0x11,
          "example 2: image 3");
    size_t len;
    CHECK(enc(&m, BTP_CIF_ENC_SWIFT, &len) == BTP_OK && len == n && memcmp(out, in, n) == 0,
          "example 2: Swift's bytes");

    n = unhex("010f4c696e75782028756e6b6e6f776e2903110100001000000c2f7573722f62696e2f61707000"
              "1c7ffff000ff00002000000f2f6f70742f6269672f6c69622e736f001ab700000010000000818"
              "006632e736f2e3600", in);
    CHECK(dec(in, n, BTP_CIF_POLICY_STRICT, &m, &info) == BTP_OK && m.word_bits == 32 &&
              m.images[1].base == 0x7ffff000 && m.images[1].end_of_text == 0x80001000 &&
              m.images[2].base == 0xb7000000,
          "example 3: addresses reduced to 32 bits");
    CHECK(enc(&m, BTP_CIF_ENC_SWIFT, &len) == BTP_OK && len == n && memcmp(out, in, n) == 0,
          "example 3: Swift's bytes (5-byte end across the sign bit)");
}

static void encoder_errors(void)
{
    btp_image im = {.path = "/a", .base = 0x1000, .end_of_text = 0x800};
    btp_image_map m = {.word_bits = 64, .images = &im, .n_images = 1};
    size_t len = 99, needed = 99;
    CHECK(btp_cif_encode(&m, 0, NULL, 0, out, sizeof out, &len, &needed) ==
              BTP_E_CIF_BAD_RANGE && len == 0, "end below base");
    im.end_of_text = 0x10000;
    m.word_bits = 16;
    CHECK(btp_cif_encode(&m, 0, NULL, 0, out, sizeof out, &len, NULL) == BTP_E_VALUE_TOO_WIDE,
          "address wider than the word");
    m.word_bits = 12;
    CHECK(btp_cif_encode(&m, 0, NULL, 0, out, sizeof out, &len, NULL) ==
              BTP_E_INVALID_ARGUMENT, "word size");
    m.word_bits = 64;
    char plat[257];
    memset(plat, 'p', 256);
    plat[256] = 0;
    m.platform = plat;
    CHECK(btp_cif_encode(&m, 0, NULL, 0, out, sizeof out, &len, NULL) ==
              BTP_E_CIF_STRING_TOO_LONG, "platform of 256 bytes");
    plat[255] = 0;
    CHECK(btp_cif_encode(&m, 0, NULL, 0, out, sizeof out, &len, NULL) == BTP_OK,
          "platform of 255 bytes");
    CHECK(btp_cif_encode(NULL, 0, NULL, 0, out, sizeof out, &len, NULL) ==
              BTP_E_INVALID_ARGUMENT, "NULL map");
    CHECK(btp_cif_encode(&m, 0, NULL, 5, out, sizeof out, &len, NULL) ==
              BTP_E_INVALID_ARGUMENT, "NULL table with a size");
    CHECK(btp_cif_decode(NULL, 3, 0, images, 1, arena, 1, &m, NULL) == BTP_E_INVALID_ARGUMENT,
          "NULL input with a length");
    CHECK(strcmp(btp_cif_fixed_prefix(11), "C:\\Program Files") == 0 &&
              btp_cif_fixed_prefix(12) == NULL, "fixed prefixes");
    CHECK(strcmp(btp_status_name(BTP_E_CIF_BAD_PREFIX), "cif_bad_prefix") == 0,
          "status names");
}

/* Swift's choices: ties go absolute; counts; the framework shortcut uses
 * the name, and only when no prefix matches. */
static void encoder_choices(void)
{
    btp_image ims[2] = {{.path = "/System/Library/Frameworks/AppKit.framework/Versions/C/AppKit",
                         .base = 0x180000000, .end_of_text = 0x181000000},
                        {.path = "/x/AppKit.framework/Versions/C/AppKit", .name = "Other",
                         .base = 0x182000000, .end_of_text = 0x182000010}};
    btp_image_map m = {.word_bits = 64, .images = ims, .n_images = 2};
    size_t len;
    CHECK(enc(&m, BTP_CIF_ENC_SWIFT, &len) == BTP_OK, "encode");
    static unsigned char want[256];
    size_t n = unhex("02000223018000000001000000008445434170704b697498020000001000252f782f4170704b"
                     "69742e6672616d65776f726b2f56657273696f6e732f432f4170704b697400", want);
    CHECK(len == n && memcmp(out, want, n) == 0,
          "framework shortcut after a prefix; a name that differs from the path's last "
          "component disables it");

    /* A build ID of 64 bytes: 80 40 for Swift, 40 minimal. */
    unsigned char id[64] = {0};
    btp_image one = {.build_id = id, .build_id_len = 64, .base = 0x1000, .end_of_text = 0x2000};
    m = (btp_image_map){.word_bits = 64, .images = &one, .n_images = 1};
    size_t swift_len, min_len;
    CHECK(enc(&m, BTP_CIF_ENC_SWIFT, &swift_len) == BTP_OK && out[8] == 0x80 && out[9] == 0x40,
          "Swift's count 80 40");
    CHECK(enc(&m, 0, &min_len) == BTP_OK && out[8] == 0x40 && min_len == swift_len - 1,
          "minimal count 40");
}

/* BTP_CIF_LENIENT: a bad path is dropped and decoding goes on after it. */
static void lenient(void)
{
    static unsigned char in[64];
    /* two images: the first path uses reserved code 12, the second is fine */
    size_t n = unhex("0200020910001000008c0009200010000005" "2f622e736f00", in);
    btp_image_map m;
    btp_cif_info info;
    btp_status st = dec(in, n, 0, &m, &info);
    CHECK(st == BTP_E_CIF_BAD_PREFIX && info.error_offset == 9,
          "default: bad prefix at 9, got %s at %zu", btp_status_name(st), info.error_offset);
    st = dec(in, n, BTP_CIF_POLICY_SWIFT, &m, &info);
    /* After the code byte, the `00` that followed is read as image 1's
     * header (1-byte base 0x09, end 0x09 + 0x20), and its path, a str of 16
     * bytes, runs out of input: dropped too, and the map is complete. */
    CHECK(st == BTP_OK && m.n_images == 2 && !m.images[0].path && !m.images[0].name &&
              m.images[1].base == 0x09 && m.images[1].end_of_text == 0x29 &&
              !m.images[1].path && info.paths_dropped == 2,
          "swift: %s, %zu images, %zu dropped", btp_status_name(st), m.n_images,
          info.paths_dropped);
}

/* A random map whose paths share prefixes and fixed ones, of any word size. */
static void random_map(uint64_t *rng, btp_image_map *m, btp_image *ims, char (*paths)[200],
                       unsigned char (*ids)[40])
{
    static const char *const parts[] = {"usr", "lib", "lib64", "opt", "x86_64-linux-gnu", "a",
                                        "swift", "System", "Library", "Frameworks", "b\\c",
                                        "libfoo.so.1", "C:"};
    unsigned w = (unsigned[]){16, 32, 64, 64}[test_rng(rng) % 4];
    uint64_t mask = btp_word_mask(w);
    size_t n = test_rng(rng) % 40;
    *m = (btp_image_map){.word_bits = w, .images = ims, .n_images = n,
                         .platform = test_rng(rng) % 2 ? "Linux (unknown)" : NULL};
    uint64_t base = test_rng(rng) & mask;
    for (size_t i = 0; i < n; i++) {
        size_t k = test_rng(rng) % 6, o = 0;
        for (size_t j = 0; j < k; j++)
            o += (size_t)snprintf(paths[i] + o, 200 - o, "%s%s",
                                  test_rng(rng) % 8 ? "/" : "\\",
                                  parts[test_rng(rng) % (sizeof parts / sizeof parts[0])]);
        paths[i][o] = 0;
        if (test_rng(rng) % 2)
            base = (base + (test_rng(rng) & 0xfffff)) & mask;
        else
            base = test_rng(rng) & mask;
        uint64_t size = test_rng(rng) & (test_rng(rng) % 2 ? 0xffff : mask);
        if (size > mask - base)
            size = mask - base;
        size_t idl = (size_t[]){0, 1, 20, 40}[test_rng(rng) % 4];
        for (size_t j = 0; j < idl; j++)
            ids[i][j] = (unsigned char)test_rng(rng);
        ims[i] = (btp_image){.path = paths[i], .build_id = idl ? ids[i] : NULL,
                             .build_id_len = idl, .base = base, .end_of_text = base + size};
    }
}

static void random_round_trips(void)
{
    static btp_image ims[64];
    static char paths[64][200];
    static unsigned char ids[64][40];
    uint64_t rng = 0x5eed;
    unsigned bad = 0;
    for (int i = 0; i < 3000; i++) {
        btp_image_map m, back;
        random_map(&rng, &m, ims, paths, ids);
        for (unsigned flags = 0; flags < 2; flags++) {
            size_t len, tcap = (size_t)(test_rng(&rng) % 3 ? 65536 : test_rng(&rng) % 8);
            btp_status st = btp_cif_encode(&m, flags, table, tcap, out, sizeof out, &len, NULL);
            btp_cif_info info;
            btp_status ds = st == BTP_OK ? dec(out, len, 0, &back, &info) : st;
            if (st != BTP_OK || ds != BTP_OK || info.consumed != len || !cif_same_map(&m, &back)) {
                if (bad++ < 5)
                    CHECK(0, "round trip %d, flags %u, table %zu: %s / %s", i, flags, tcap,
                          btp_status_name(st), btp_status_name(ds));
            }
        }
    }
    CHECK(bad == 0, "%u random maps did not survive", bad);
}

int main(void)
{
    examples();
    encoder_errors();
    encoder_choices();
    lenient();
    random_round_trips();
    return check_finish();
}
