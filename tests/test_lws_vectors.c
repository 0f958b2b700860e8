/*
 * The libwebsockets golden vectors (tests/data/vectors/lws-public.jsonl, or
 * any file in its format given as argv[1]) against the codec:
 *  - roundtrip_exact vectors: the libwebsockets-mode encoding of frames and
 *    alloc_size is m_line byte for byte (32 and 64 bit); decoding m_line
 *    gives the exact frames and size, and b_line byte for byte;
 *  - clang-built encodings decode to the same record as gcc's;
 *  - every encodable vector: optimal mode is never longer and decodes back,
 *    and our own encoding is exact where libwebsockets lost bits;
 *  - records libwebsockets truncated are flagged;
 *  - malformed records: rejected with a message unless libwebsockets itself
 *    reads them soundly (its gcc build without sanitizer findings, or its
 *    clang build); what we accept decodes to what it printed. A record
 *    its gcc build failed on after reading a set extra bit may be read.
 */
#include <btpack/btpack.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "json.h"

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    for (size_t r; buf && (r = fread(buf + n, 1, cap - n, f)) > 0;) {
        n += r;
        if (n == cap) {
            char *nb = realloc(buf, cap *= 2);
            if (!nb)
                free(buf);
            buf = nb;
        }
    }
    fclose(f);
    *len = n;
    return buf;
}

static const char *str(const json_value *o, const char *k)
{
    return json_str(json_get(o, k), NULL);
}

/* "0x..." strings to frames; returns the count or (size_t)-1. */
static size_t frames_of(const json_value *arr, btp_frame *out, size_t max)
{
    size_t n = json_len(arr);
    if (json_type_of(arr) != JSON_ARRAY || n > max)
        return (size_t)-1;
    for (size_t i = 0; i < n; i++) {
        const char *s = json_str(json_at(arr, i), NULL);
        char *end;
        if (!s)
            return (size_t)-1;
        out[i] = (btp_frame){strtoull(s, &end, 16), BTP_FRAME_RA};
        if (*end)
            return (size_t)-1;
    }
    return n;
}

/* Decode a ~m# text into a ~b# line (NUL-terminated) and the record. */
static btp_status decode_b(const char *m, unsigned wb, btp_frame *f, btp_lws_info *info, char *b,
                           size_t bcap)
{
    size_t blen = 0;
    btp_status st = btp_lws_m_decode(m, strlen(m), wb, f, BTP_LWS_MAX_FRAMES, info);
    b[0] = 0;
    if (st == BTP_OK && btp_lws_b_format(f, info->depth, info->alloc_size, b, bcap - 1, &blen) ==
                            BTP_OK)
        b[blen] = 0;
    return st;
}

static int same_frames(const btp_frame *a, const btp_frame *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (a[i].value != b[i].value)
            return 0;
    return 1;
}

static unsigned counts[9];
enum { C_ENC, C_DEC, C_DEC32, C_CLANG, C_OPT, C_MAL_REJ, C_MAL_OK, C_FLAG, C_MAL_EXTRA };

static void valid(const json_value *v, size_t line)
{
    uint64_t wb64 = 0, size = 0;
    btp_frame want[64], got[BTP_LWS_MAX_FRAMES];
    json_u64(json_get(v, "word_bits"), &wb64);
    unsigned wb = (unsigned)wb64;
    size_t n = frames_of(json_get(v, "frames"), want, 64);
    int exact = json_bool(json_get(v, "roundtrip_exact")) == 1;
    const char *m = str(v, "m_line"), *bl = str(v, "b_line");
    const json_value *clang = json_get(v, "clang_build_encoding");
    CHECK(n != (size_t)-1 && json_u64(json_get(v, "alloc_size"), &size) == 0 && m &&
              (wb == 32 || wb == 64),
          "line %zu: vector fields", line);
    if (n == (size_t)-1 || !m)
        return;

    char b[BTP_LWS_B_LINE_MAX(BTP_LWS_MAX_FRAMES) + 1];
    btp_lws_info info;
    uint8_t blob[2][BTP_LWS_BLOB_MAX];
    size_t blen[2] = {0, 0};
    btp_status est[2];
    for (int mode = 0; mode < 2; mode++)
        est[mode] = btp_lws_encode(want, n, size, wb, mode ? BTP_LWS_ENC_OPTIMAL : 0, blob[mode],
                                   BTP_LWS_BLOB_MAX, &blen[mode], NULL);
    if (n > BTP_LWS_MAX_FRAMES) {
        CHECK(est[0] == BTP_E_DEPTH_TOO_LARGE && est[1] == BTP_E_DEPTH_TOO_LARGE,
              "line %zu: depth %zu refused", line, n);
        return;
    }
    /* Our encodings, both modes, decode back to the vector's record. */
    for (int mode = 0; mode < 2; mode++) {
        CHECK(est[mode] == BTP_OK, "line %zu mode %d: %s", line, mode, btp_status_name(est[mode]));
        if (est[mode] != BTP_OK)
            return;
        btp_status st = btp_lws_decode(blob[mode], blen[mode], wb, got, BTP_LWS_MAX_FRAMES, &info);
        CHECK(st == BTP_OK && info.depth == n && info.alloc_size == size && same_frames(got, want, n),
              "line %zu mode %d: does not decode back", line, mode);
    }
    CHECK(blen[1] <= blen[0], "line %zu: optimal %zu > lws %zu", line, blen[1], blen[0]);
    counts[C_OPT]++;

    if (exact) {
        char ml[BTP_LWS_M_LINE_MAX];
        size_t ml_len = 0;
        CHECK(btp_lws_m_format(blob[0], blen[0], ml, sizeof ml, &ml_len) == BTP_OK &&
                  ml_len == strlen(m) && !memcmp(ml, m, ml_len),
              "line %zu: encoded %.*s\n want %s", line, (int)ml_len, ml, m);
        counts[C_ENC]++;
        btp_status st = decode_b(m, wb, got, &info, b, sizeof b);
        CHECK(st == BTP_OK && info.depth == n && info.alloc_size == size && same_frames(got, want, n),
              "line %zu: decoded frames (%s)", line, btp_status_name(st));
        counts[wb == 64 ? C_DEC : C_DEC32]++;
        CHECK(bl && !strcmp(b, bl), "line %zu: decoded\n %s\n want\n %s", line, b, bl ? bl : "-");
        /* And the ~b# line parses back to the record. */
        btp_frame pb[BTP_LWS_MAX_FRAMES];
        btp_lws_info pi;
        CHECK(bl && btp_lws_b_parse(bl, strlen(bl), wb, pb, BTP_LWS_MAX_FRAMES, &pi) == BTP_OK &&
                  pi.depth == n && pi.alloc_size == size && same_frames(pb, want, n),
              "line %zu: b_line parse", line);
    } else if (wb == 64) {
        /* libwebsockets lost bits here: whatever of its record we can read
         * carries the flag on each value >= 2^32. */
        btp_status st = decode_b(m, wb, got, &info, b, sizeof b);
        if (st == BTP_OK && info.depth == n) {
            for (size_t i = 0; i < n; i++)
                CHECK(want[i].value < ((uint64_t)1 << 32) || (info.suspect >> i & 1),
                      "line %zu: frame %zu not flagged", line, i);
            CHECK(size < ((uint64_t)1 << 32) || (info.suspect & BTP_LWS_SUSPECT_SIZE),
                  "line %zu: size not flagged", line);
            counts[C_FLAG]++;
        }
    }
    if (clang && json_get(clang, "m_line")) {
        btp_frame g2[BTP_LWS_MAX_FRAMES];
        btp_lws_info i2;
        char b2[sizeof b];
        btp_status s1 = decode_b(m, wb, got, &info, b, sizeof b);
        btp_status s2 = decode_b(str(clang, "m_line"), wb, g2, &i2, b2, sizeof b2);
        if (exact && wb == 64)
            CHECK(s2 == BTP_OK && bl && !strcmp(b2, bl), "line %zu: clang decoded %s", line, b2);
        CHECK(s1 == s2 && (s1 != BTP_OK || !strcmp(b, b2)), "line %zu: clang and gcc differ", line);
        counts[C_CLANG]++;
    }
}

static int ok_result(const char *r)
{
    return r && !strncmp(r, "OK: ", 4);
}

/* Whether every sanitizer finding of libwebsockets' run is the shift by -1
 * its field reader does for a set extra bit. */
static int extra_bit_findings(const json_value *v)
{
    const json_value *f = json_get(v, "sanitizer_findings");
    for (size_t i = 0; i < json_len(f); i++) {
        const char *s = json_str(json_at(f, i), NULL);
        if (!s || !strstr(s, "shift exponent -1"))
            return 0;
    }
    return 1;
}

static void malformed(const json_value *v, size_t line)
{
    uint64_t wb = 64;
    json_u64(json_get(v, "word_bits"), &wb);
    const char *m = str(v, "m_line"), *gcc = str(v, "lws_decoder_result"),
               *clang = str(v, "lws_decoder_result_clang_build");
    if (!m || !gcc)
        return;
    /* libwebsockets reads it soundly: its gcc build without undefined
     * behaviour, or its clang build (which, like us, ignores the extra
     * bits). */
    int findings = json_len(json_get(v, "sanitizer_findings")) > 0;
    const char *sound = ok_result(gcc) && !findings ? gcc : ok_result(clang) ? clang : NULL;
    btp_frame f[BTP_LWS_MAX_FRAMES];
    btp_lws_info info;
    char b[BTP_LWS_B_LINE_MAX(BTP_LWS_MAX_FRAMES) + 1];
    btp_status st = decode_b(m, (unsigned)wb, f, &info, b, sizeof b);
    if (sound) {
        CHECK(st == BTP_OK && !strcmp(b, sound + 4), "line %zu: %s\n got %s\n want %s", line,
              btp_status_name(st), b, sound + 4);
        counts[C_MAL_OK]++;
        return;
    }
    if (st == BTP_OK && findings && extra_bit_findings(v)) {
        /* libwebsockets' gcc build read a set extra bit (its sanitizer saw
         * the shift by -1) and turned it into bit 31 of the field, which
         * is what made it fail; we ignore extra bits (spec/lws.md section
         * 2), so such a record can be readable for us. Random blobs with a
         * right trailer are, about 7% of the time. */
        counts[C_MAL_EXTRA]++;
        return;
    }
    const char *msg = btp_strerror(st);
    CHECK(st >= BTP_E_FIRST && msg && *msg && strcmp(msg, "unknown status"),
          "line %zu: accepted %s (libwebsockets: %s)", line, b, gcc);
    if (strstr(gcc, "invalid base64"))
        CHECK(st == BTP_E_BAD_BASE64, "line %zu: %s", line, btp_status_name(st));
    if (strstr(gcc, "compressed length wrong"))
        CHECK(st == BTP_E_LENGTH_MISMATCH, "line %zu: %s", line, btp_status_name(st));
    counts[C_MAL_REJ]++;
}

int main(int argc, char **argv)
{
    size_t len = 0;
    char *text = argc > 1 ? slurp(argv[1], &len) : NULL;
    CHECK(text != NULL, "cannot read %s", argc > 1 ? argv[1] : "(no path)");
    if (!text)
        return check_finish();
    size_t vectors = 0;
    for (size_t pos = 0, line = 1; pos < len; line++) {
        char *nl = memchr(text + pos, '\n', len - pos);
        size_t end = nl ? (size_t)(nl - text) : len;
        if (end > pos) {
            json_error err;
            json_value *v = json_parse(text + pos, end - pos, &err);
            CHECK(v != NULL, "line %zu: %s", line, v ? "" : err.msg);
            const char *kind = str(v, "kind");
            if (kind && !strcmp(kind, "valid"))
                valid(v, line);
            else if (kind && !strcmp(kind, "malformed"))
                malformed(v, line);
            else
                CHECK(0, "line %zu: unknown kind", line);
            json_free(v);
            vectors++;
        }
        pos = end + 1;
    }
    free(text);
    printf("%zu vectors: %u encoded exactly, %u decoded exactly (64-bit), %u (32-bit), "
           "%u clang pairs, %u optimal, %u truncation records flagged, "
           "%u malformed rejected, %u malformed read soundly, %u malformed read that "
           "libwebsockets misreads by a set extra bit\n",
           vectors, counts[C_ENC], counts[C_DEC], counts[C_DEC32], counts[C_CLANG], counts[C_OPT],
           counts[C_FLAG], counts[C_MAL_REJ], counts[C_MAL_OK], counts[C_MAL_EXTRA]);
    CHECK(vectors > 0 && counts[C_ENC] > 0, "no vectors checked");
    return check_finish();
}
