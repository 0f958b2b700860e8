/*
 * Base64 (lib/codec/base64.c): RFC 4648 vectors, both alphabets, padding, bad
 * characters with their offsets, buffer sizes at every boundary (against a
 * guard page), and a round trip of random bytes.
 */
#include <btpack/btpack.h>

#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"
#include "test_rng.h"

static const struct {
    const char *plain, *padded, *unpadded;
} rfc4648[] = {
    {"", "", ""},
    {"f", "Zg==", "Zg"},
    {"fo", "Zm8=", "Zm8"},
    {"foo", "Zm9v", "Zm9v"},
    {"foob", "Zm9vYg==", "Zm9vYg"},
    {"fooba", "Zm9vYmE=", "Zm9vYmE"},
    {"foobar", "Zm9vYmFy", "Zm9vYmFy"},
};

static void test_rfc4648(void)
{
    char out[16];
    uint8_t back[16];
    for (size_t i = 0; i < sizeof rfc4648 / sizeof rfc4648[0]; i++) {
        const char *p = rfc4648[i].plain;
        size_t n = strlen(p), len = 99;
        btp_status st = btp_base64_encode(p, n, out, sizeof out, BTP_B64_PAD, &len);
        CHECK(st == BTP_OK && len == strlen(rfc4648[i].padded) &&
                  memcmp(out, rfc4648[i].padded, len) == 0,
              "encode padded \"%s\"", p);
        CHECK(len == BTP_BASE64_ENCODED_LEN(n), "padded length of %zu bytes", n);
        st = btp_base64_encode(p, n, out, sizeof out, 0, &len);
        CHECK(st == BTP_OK && len == strlen(rfc4648[i].unpadded) &&
                  memcmp(out, rfc4648[i].unpadded, len) == 0,
              "encode unpadded \"%s\"", p);
        const char *forms[] = {rfc4648[i].padded, rfc4648[i].unpadded};
        for (int f = 0; f < 2; f++) {
            size_t m = strlen(forms[f]), err = 99;
            st = btp_base64_decode(forms[f], m, back, sizeof back, 0, &len, &err);
            CHECK(st == BTP_OK && len == n && memcmp(back, p, n) == 0 && err == 0,
                  "decode \"%s\": %s", forms[f], btp_status_name(st));
            CHECK(len <= BTP_BASE64_DECODED_MAX(m), "decoded max of %zu chars", m);
        }
    }
}

/* The encoder writes the standard alphabet; the decoder reads standard
 * and URL-safe, even mixed. */
static void test_alphabets(void)
{
    const uint8_t bytes[] = {0xfb, 0xff, 0xbf, 0xfe};
    char out[16];
    uint8_t back[8];
    size_t len, err;
    CHECK(btp_base64_encode(bytes, 4, out, sizeof out, 0, &len) == BTP_OK && len == 6 &&
              memcmp(out, "+/+//g", 6) == 0,
          "standard alphabet: %.*s", (int)len, out);
    static const char *const forms[] = {"+/+//g", "-_-__g", "-/+_/g", "+/+//g=="};
    for (int i = 0; i < 4; i++) {
        btp_status st = btp_base64_decode(forms[i], strlen(forms[i]), back, sizeof back, 0, &len,
                                          &err);
        CHECK(st == BTP_OK && len == 4 && memcmp(back, bytes, 4) == 0, "decode %s: %s",
              forms[i], btp_status_name(st));
    }
    /* Every one of the 64 values in each alphabet. */
    static const char std[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    static const char url[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    uint8_t all[48], from_std[48], from_url[48];
    /* The reference: sextets 0..63 packed by hand, most significant first. */
    uint32_t acc = 0;
    unsigned bits = 0;
    size_t k = 0;
    for (uint32_t v = 0; v < 64; v++) {
        acc = acc << 6 | v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            all[k++] = (uint8_t)(acc >> bits);
        }
    }
    char enc[64];
    CHECK(btp_base64_encode(all, 48, enc, sizeof enc, 0, &len) == BTP_OK && len == 64 &&
              memcmp(enc, std, 64) == 0,
          "all 64 sextets encode in order");
    CHECK(btp_base64_decode(std, 64, from_std, 48, 0, &len, &err) == BTP_OK && len == 48 &&
              memcmp(from_std, all, 48) == 0,
          "standard alphabet decodes");
    CHECK(btp_base64_decode(url, 64, from_url, 48, 0, &len, &err) == BTP_OK && len == 48 &&
              memcmp(from_url, all, 48) == 0,
          "URL-safe alphabet decodes");
}

static void expect_bad(const char *text, unsigned flags, size_t offset)
{
    uint8_t out[64];
    size_t len = 99, err = 99;
    btp_status st = btp_base64_decode(text, strlen(text), out, sizeof out, flags, &len, &err);
    CHECK(st == BTP_E_BAD_BASE64 && err == offset && len == 0, "\"%s\": %s at %zu, want %zu",
          text, btp_status_name(st), err, offset);
}

static void expect_good(const char *text, unsigned flags, const char *plain)
{
    uint8_t out[64];
    size_t len = 99, err = 99;
    btp_status st = btp_base64_decode(text, strlen(text), out, sizeof out, flags, &len, &err);
    CHECK(st == BTP_OK && len == strlen(plain) && memcmp(out, plain, len) == 0,
          "\"%s\": %s, %zu bytes", text, btp_status_name(st), len);
}

/* Padding is optional and ends the data; bad characters report their
 * index; a final group of one character is an error (at that character);
 * leftover bits of a partial group are ignored. */
static void test_padding_and_errors(void)
{
    expect_good("Zg=", 0, "f");
    expect_good("Zm9v=", 0, "foo");
    expect_good("Zm9vYg===", 0, "foob");
    expect_good("Zh", 0, "f"); /* low bits 0001 ignored */
    expect_bad("Zg=x", 0, 3);
    expect_bad("Zg==Zg==", 0, 4);
    expect_bad("Zm*v", 0, 2);
    expect_bad("Zm9v\n", 0, 4);
    expect_bad("Zm9v YmFy", 0, 4);
    expect_bad("\xffZm9", 0, 0);
    expect_bad("Zm9v.", 0, 4);
    expect_bad("Z", 0, 0);
    expect_bad("Zm9vY", 0, 4);
    expect_bad("Zm9vY==", 0, 4);
    expect_bad("Zm9vY \n", BTP_B64_SKIP_SPACE, 4);
    /* White space only when asked for, anywhere, also after padding. */
    expect_good(" Zm\t9v\r\nYm Fy\n", BTP_B64_SKIP_SPACE, "foobar");
    expect_good("Zg= =\n", BTP_B64_SKIP_SPACE, "f");
    expect_bad(" Zm9v", 0, 0);
    /* An embedded NUL is a bad character, not the end. */
    uint8_t nul_out[4];
    size_t nul_len, nul_err;
    CHECK(btp_base64_decode("Zm\0v", 4, nul_out, 4, 0, &nul_len, &nul_err) == BTP_E_BAD_BASE64 &&
              nul_err == 2,
          "embedded NUL");

    uint8_t out[4];
    size_t len, err;
    CHECK(btp_base64_decode(NULL, 4, out, 4, 0, &len, &err) == BTP_E_INVALID_ARGUMENT, "NULL in");
    CHECK(btp_base64_decode("Zm9v", 4, NULL, 4, 0, &len, &err) == BTP_E_INVALID_ARGUMENT,
          "NULL out");
    CHECK(btp_base64_decode(NULL, 0, NULL, 0, 0, &len, NULL) == BTP_OK && len == 0, "empty");
    CHECK(btp_base64_encode(NULL, 1, (char *)out, 4, 0, &len) == BTP_E_INVALID_ARGUMENT,
          "encode NULL in");
    CHECK(btp_base64_encode("a", 1, NULL, 4, 0, &len) == BTP_E_INVALID_ARGUMENT,
          "encode NULL out");
    CHECK(btp_base64_encode(NULL, 0, NULL, 0, 0, &len) == BTP_OK && len == 0, "encode empty");
}

/* Every capacity below the size needed fails without writing past cap
 * (the buffer ends at a PROT_NONE page); the exact size works. */
static void test_buffer_sizes(void)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    uint8_t *map = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
                        0);
    CHECK(map != MAP_FAILED && mprotect(map + page, page, PROT_NONE) == 0, "guard page");
    if (map == MAP_FAILED)
        return;
    uint8_t *guard = map + page;
    const char *plain = "any carnal pleasure.";
    for (size_t n = 0; n <= strlen(plain); n++) {
        for (unsigned flags = 0; flags <= BTP_B64_PAD; flags++) {
            char ref[64];
            size_t need, len;
            CHECK(btp_base64_encode(plain, n, ref, sizeof ref, flags, &need) == BTP_OK, "ref");
            for (size_t cap = 0; cap <= need; cap++) {
                btp_status st = btp_base64_encode(plain, n, (char *)guard - cap, cap, flags, &len);
                if (cap < need)
                    CHECK(st == BTP_E_BUFFER_TOO_SMALL && len == 0,
                          "encode %zu bytes, cap %zu: %s", n, cap, btp_status_name(st));
                else
                    CHECK(st == BTP_OK && len == need && memcmp(guard - cap, ref, need) == 0,
                          "encode %zu bytes, cap %zu: %s", n, cap, btp_status_name(st));
            }
            for (size_t cap = 0; cap <= n; cap++) {
                size_t err;
                btp_status st = btp_base64_decode(ref, need, guard - cap, cap, flags, &len, &err);
                if (cap < n)
                    CHECK(st == BTP_E_BUFFER_TOO_SMALL && len == 0,
                          "decode %zu bytes, cap %zu: %s", n, cap, btp_status_name(st));
                else
                    CHECK(st == BTP_OK && len == n && memcmp(guard - cap, plain, n) == 0,
                          "decode %zu bytes, cap %zu: %s", n, cap, btp_status_name(st));
            }
        }
    }
    munmap(map, 2 * page);
}

static uint64_t rng_state = 0x243f6a8885a308d3u;
static uint64_t rng(void)
{
    return test_rng(&rng_state);
}

/* Random bytes round-trip, padded or not, in either alphabet. */
static void test_random_roundtrip(void)
{
    uint8_t in[100], back[100];
    char text[BTP_BASE64_ENCODED_LEN(100)];
    unsigned long bad = 0;
    for (int r = 0; r < 5000; r++) {
        size_t n = (size_t)(rng() % 101), len, back_len, err;
        for (size_t i = 0; i < n; i++)
            in[i] = (uint8_t)rng();
        unsigned flags = (unsigned)(rng() & BTP_B64_PAD);
        if (btp_base64_encode(in, n, text, sizeof text, flags, &len) != BTP_OK ||
            len > BTP_BASE64_ENCODED_LEN(n)) {
            bad++;
            continue;
        }
        if (rng() & 1)
            for (size_t i = 0; i < len; i++)
                text[i] = text[i] == '+' ? '-' : text[i] == '/' ? '_' : text[i];
        if (btp_base64_decode(text, len, back, n, 0, &back_len, &err) != BTP_OK ||
            back_len != n || memcmp(in, back, n) != 0)
            bad++;
    }
    CHECK(bad == 0, "%lu random round trips failed", bad);
}

int main(void)
{
    test_rfc4648();
    test_alphabets();
    test_padding_and_errors();
    test_buffer_sizes();
    test_random_roundtrip();
    return check_finish();
}
