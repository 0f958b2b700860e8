/*
 * The golden vectors, run against the library:
 *   test_cbf_vectors cbf-public.jsonl cbf-edge-cases.jsonl
 *
 * Public, valid: every hex form decodes to `frames`/`truncated` under the
 * default and Swift policies (spec_hex also strictly; swift_hex strictly
 * only if its first address is absolute); our encoder gives spec_hex (with
 * an omit of 32 inline, see inline_omit32), and
 * swift_hex with BTP_CBF_ENC_SWIFT, never longer than min_len; the frames
 * round-trip and encode into every too-small buffer correctly; swift_b64
 * is the unpadded base64 of swift_hex.
 * Public, malformed: strict gives `error` at `error_offset` after
 * `frames_before_error`; the default policy the same except that it
 * accepts a relative first address; the Swift policy gives `swift_frames`
 * (a final "truncated" marker standing for our error).
 * Edge cases: strict matches the `strict` column exactly, Swift the
 * `lenient` one, and the default the `lenient` one except that it rejects
 * operands/counts wider than the word (address_too_wide/count_too_wide, as
 * in the strict column).
 */
#include <btpack/btpack.h>

#include <errno.h>

#include "cbf_testutil.h"
#include "json.h"

#define MAX_FRAMES 1024
#define MAX_RUNS 64

static const char *str_of(const json_value *obj, const char *key)
{
    return json_str(json_get(obj, key), NULL);
}

/* One JSON frame: {"type":"pc|ra|async","addr":"0x.."} or
 * {"type":"omit","count":N}, with an optional "copies" (edge cases).
 * {"type":"truncated"} sets *trunc. Returns 0 on success. */
static int parse_frame(const json_value *v, btp_cbf_run *out, int *trunc)
{
    static const char *const kinds[] = {"pc", "ra", "async", "omit"};
    const char *type = str_of(v, "type");
    *trunc = 0;
    out->count = 1;
    if (!type)
        return -1;
    if (strcmp(type, "truncated") == 0) {
        *trunc = 1;
        return 0;
    }
    for (int k = 0; k < 4; k++) {
        if (strcmp(type, kinds[k]) != 0)
            continue;
        out->frame.kind = (btp_frame_kind)k;
        if (k == BTP_FRAME_OMIT) {
            if (json_u64(json_get(v, "count"), &out->frame.value) != 0)
                return -1;
        } else {
            const char *addr = str_of(v, "addr");
            char *end;
            if (!addr || strncmp(addr, "0x", 2) != 0)
                return -1;
            errno = 0;
            out->frame.value = strtoull(addr + 2, &end, 16);
            if (errno || *end || end == addr + 2)
                return -1;
        }
        const json_value *copies = json_get(v, "copies");
        if (copies && json_u64(copies, &out->count) != 0)
            return -1;
        return 0;
    }
    return -1;
}

/* A JSON frame list as runs; a final "truncated" marker sets *trunc.
 * Returns the number of runs, or -1 on a bad list. */
static long parse_runs(const json_value *list, btp_cbf_run *runs, size_t max, int *trunc)
{
    size_t n = 0;
    *trunc = 0;
    if (json_type_of(list) != JSON_ARRAY)
        return -1;
    for (size_t i = 0; i < json_len(list); i++) {
        int t;
        if (n == max || *trunc || parse_frame(json_at(list, i), &runs[n], &t) != 0)
            return -1;
        if (t)
            *trunc = 1;
        else
            n++;
    }
    return (long)n;
}

/* The same as plain frames (every count 1). */
static long parse_frames(const json_value *list, btp_frame *frames, size_t max, int *trunc)
{
    static btp_cbf_run runs[MAX_FRAMES];
    long n = parse_runs(list, runs, max < MAX_FRAMES ? max : MAX_FRAMES, trunc);
    for (long i = 0; i < n; i++) {
        if (runs[i].count != 1)
            return -1;
        frames[i] = runs[i].frame;
    }
    return n;
}

/* Decode buf under policy into frames (one-shot). */
static btp_status decode(const uint8_t *buf, size_t len, unsigned policy, btp_frame *out,
                         btp_cbf_info *info)
{
    memset(info, 0, sizeof *info);
    return btp_cbf_decode(buf, len, policy, out, MAX_FRAMES, info);
}

static void check_valid_hex(const char *id, const char *field, const char *hex,
                            const btp_frame *frames, size_t n, int truncated,
                            int strict_must_pass)
{
    static btp_frame out[MAX_FRAMES];
    static const unsigned policies[] = {BTP_CBF_POLICY_DEFAULT, BTP_CBF_POLICY_SWIFT,
                                        BTP_CBF_POLICY_STRICT};
    size_t len = 0;
    uint8_t *buf = hex ? tu_parse_hex(hex, &len) : NULL;
    CHECK(buf != NULL, "%s: %s is not hex", id, field);
    if (!buf)
        return;
    for (int p = 0; p < 3; p++) {
        btp_cbf_info info;
        btp_status st = decode(buf, len, policies[p], out, &info);
        if (policies[p] == BTP_CBF_POLICY_STRICT && !strict_must_pass &&
            st == BTP_E_FIRST_ADDRESS_RELATIVE)
            continue;
        CHECK(st == BTP_OK, "%s: %s policy %u: %s at %zu", id, field, policies[p],
              btp_status_name(st), info.error_offset);
        long d = tu_frames_diff(frames, n, out, info.frames);
        CHECK(d < 0, "%s: %s policy %u: frames differ at %ld", id, field, policies[p], d);
        CHECK(info.truncated == truncated && info.consumed == len,
              "%s: %s policy %u: truncated %d consumed %zu of %zu", id, field, policies[p],
              info.truncated, info.consumed, len);
    }
    free(buf);
}

/* spec_hex follows Swift's choices apart from the first address, so it
 * writes an omit of exactly 32 frames externally (60 20) where our encoder
 * uses the inline form 5f (spec/cbf.md D9). Rewrite those instructions of
 * p[0..n) in place, walking instruction by instruction so that operand
 * bytes are never mistaken for one; returns the new length. */
static size_t inline_omit32(uint8_t *p, size_t n)
{
    size_t i = 1, o = n ? 1 : 0;
    while (i < n) {
        uint8_t op = p[i];
        size_t len = 1;
        if (op >= 0x10 && op < 0x40)
            len += (size_t)(op & 7) + 1;
        else if (op >= 0x60 && op < 0x80)
            len += (size_t)(op & 0x1f) + 1;
        else if (op >= 0x88 && op < 0x90)
            len += (size_t)(op & 7) + 1;
        if (len > n - i)
            len = n - i;
        if (op == 0x60 && len == 2 && p[i + 1] == 0x20) {
            p[o++] = 0x5f;
        } else {
            memmove(p + o, p + i, len);
            o += len;
        }
        i += len;
    }
    return o;
}

/* Our encoder, plain and in Swift mode, against the vector's encodings. */
static void check_encoding(const char *id, const json_value *v, const btp_frame *frames, size_t n,
                           int truncated, unsigned bits)
{
    static uint8_t buf[BTP_CBF_BOUND(MAX_FRAMES)];
    static const struct {
        const char *field;
        unsigned flags;
    } forms[] = {{"spec_hex", 0}, {"swift_hex", BTP_CBF_ENC_SWIFT}};
    uint64_t min_len = 0;
    CHECK(json_u64(json_get(v, "min_len"), &min_len) == 0, "%s: min_len", id);
    for (int f = 0; f < 2; f++) {
        size_t len = 0, want_len = 0;
        const char *hex = str_of(v, forms[f].field);
        uint8_t *want = hex ? tu_parse_hex(hex, &want_len) : NULL;
        if (want && forms[f].flags == 0)
            want_len = inline_omit32(want, want_len);
        btp_status st = btp_cbf_encode(frames, n, truncated, bits, forms[f].flags, buf,
                                       sizeof buf, &len, NULL);
        CHECK(want && st == BTP_OK && len == want_len && memcmp(buf, want, len) == 0,
              "%s: encoder output (%s) differs from %s", id, btp_status_name(st),
              forms[f].field);
        if (forms[f].flags == 0)
            CHECK(len <= min_len, "%s: %zu bytes, min_len %llu", id, len,
                  (unsigned long long)min_len);
        free(want);
        tu_check_roundtrip(id, frames, n, truncated, bits, forms[f].flags);
        tu_check_every_cap(id, frames, n, truncated, bits, forms[f].flags);
    }
}

static void check_valid(const char *id, const json_value *v)
{
    static btp_frame frames[MAX_FRAMES];
    uint64_t bits = 0;
    int marker;
    long n = parse_frames(json_get(v, "frames"), frames, MAX_FRAMES, &marker);
    int truncated = json_bool(json_get(v, "truncated"));
    CHECK(n >= 0 && !marker && truncated >= 0 && json_u64(json_get(v, "word_bits"), &bits) == 0,
          "%s: bad vector", id);
    if (n < 0 || truncated < 0)
        return;
    int swift_first_relative = json_bool(json_get(v, "swift_first_relative")) == 1;
    check_valid_hex(id, "spec_hex", str_of(v, "spec_hex"), frames, (size_t)n, truncated, 1);
    check_valid_hex(id, "swift_hex", str_of(v, "swift_hex"), frames, (size_t)n, truncated,
                    !swift_first_relative);
    check_valid_hex(id, "min_hex", str_of(v, "min_hex"), frames, (size_t)n, truncated, 0);
    check_valid_hex(id, "verbose_hex", str_of(v, "verbose_hex"), frames, (size_t)n, truncated,
                    0);
    const json_value *alt = json_get(v, "alt_hex");
    if (json_type_of(alt) == JSON_ARRAY) {
        for (size_t i = 0; i < json_len(alt); i++)
            check_valid_hex(id, "alt_hex[]", json_str(json_at(alt, i), NULL), frames, (size_t)n,
                            truncated, 0);
    } else {
        check_valid_hex(id, "alt_hex", json_str(alt, NULL), frames, (size_t)n, truncated, 0);
    }
    /* A relative first address must be what made strict fail. */
    size_t len = 0;
    uint8_t *swift = tu_parse_hex(str_of(v, "swift_hex"), &len);
    btp_cbf_info info;
    static btp_frame out[MAX_FRAMES];
    btp_status st = swift ? decode(swift, len, BTP_CBF_POLICY_STRICT, out, &info) : BTP_E_SYNTAX;
    CHECK(st == (swift_first_relative ? BTP_E_FIRST_ADDRESS_RELATIVE : BTP_OK),
          "%s: swift_hex strict: %s", id, btp_status_name(st));
    /* Swift serialises CBF as unpadded standard base64. */
    const char *b64 = str_of(v, "swift_b64");
    static char text[BTP_BASE64_ENCODED_LEN(BTP_CBF_BOUND(MAX_FRAMES))];
    static uint8_t bytes[BTP_CBF_BOUND(MAX_FRAMES)];
    size_t tlen = 0, blen = 0;
    CHECK(swift && b64 && btp_base64_encode(swift, len, text, sizeof text, 0, &tlen) == BTP_OK &&
              tlen == strlen(b64) && memcmp(text, b64, tlen) == 0,
          "%s: base64 of swift_hex differs from swift_b64", id);
    CHECK(b64 && btp_base64_decode(b64, strlen(b64), bytes, sizeof bytes, 0, &blen, NULL) ==
                     BTP_OK && swift && blen == len && memcmp(bytes, swift, len) == 0,
          "%s: swift_b64 does not decode to swift_hex", id);
    free(swift);
    check_encoding(id, v, frames, (size_t)n, truncated, (unsigned)bits);
}

static void check_malformed(const char *id, const json_value *v)
{
    static btp_frame before[MAX_FRAMES], swift[MAX_FRAMES], out[MAX_FRAMES];
    const char *error = str_of(v, "error");
    uint64_t offset = 0;
    size_t len = 0;
    int marker = 0, swift_trunc = 0;
    long n_before = 0;
    const json_value *fb = json_get(v, "frames_before_error");
    if (json_type_of(fb) != JSON_NULL)
        n_before = parse_frames(fb, before, MAX_FRAMES, &marker);
    long n_swift = parse_frames(json_get(v, "swift_frames"), swift, MAX_FRAMES, &swift_trunc);
    uint8_t *buf = tu_parse_hex(str_of(v, "hex") ? str_of(v, "hex") : "x", &len);
    CHECK(error && buf && n_before >= 0 && !marker && n_swift >= 0 &&
              json_u64(json_get(v, "error_offset"), &offset) == 0,
          "%s: bad vector", id);
    if (!error || !buf || n_before < 0 || n_swift < 0) {
        free(buf);
        return;
    }
    int relative_first = strcmp(error, "first_address_relative") == 0;
    static const unsigned policies[] = {BTP_CBF_POLICY_STRICT, BTP_CBF_POLICY_DEFAULT};
    for (int p = 0; p < 2; p++) {
        btp_cbf_info info;
        btp_status st = decode(buf, len, policies[p], out, &info);
        if (policies[p] == BTP_CBF_POLICY_DEFAULT && relative_first) {
            /* The default policy reads Swift's output: the frames are
             * Swift's own reading. */
            CHECK(st == BTP_OK && tu_frames_diff(swift, (size_t)n_swift, out, info.frames) < 0,
                  "%s: default policy: %s", id, btp_status_name(st));
            continue;
        }
        CHECK(strcmp(btp_status_name(st), error) == 0 && info.error_offset == offset,
              "%s: policy %u: %s at %zu, want %s at %llu", id, policies[p], btp_status_name(st),
              info.error_offset, error, (unsigned long long)offset);
        long d = tu_frames_diff(before, (size_t)n_before, out, info.frames);
        CHECK(d < 0, "%s: policy %u: frames before the error differ at %ld (%zu frames)", id,
              policies[p], d, info.frames);
    }

    /* Swift policy against what Swift returns: Swift reports no errors,
     * so its final "truncated" marker stands for ours; for a bad
     * information byte Swift returns nothing. */
    btp_cbf_info info;
    btp_status st = decode(buf, len, BTP_CBF_POLICY_SWIFT, out, &info);
    long d = tu_frames_diff(swift, (size_t)n_swift, out, info.frames);
    int info_byte = st == BTP_E_BAD_VERSION || st == BTP_E_RESERVED_SIZE;
    if (swift_trunc)
        CHECK(st >= BTP_E_FIRST && d < 0, "%s: swift policy: %s, frames differ at %ld", id,
              btp_status_name(st), d);
    else if (info_byte)
        CHECK(n_swift == 0 && strcmp(btp_status_name(st), error) == 0,
              "%s: swift policy on a bad information byte: %s", id, btp_status_name(st));
    else
        CHECK(st == BTP_OK && d < 0, "%s: swift policy: %s, frames differ at %ld", id,
              btp_status_name(st), d);
    free(buf);
}

/* Decode hex under policy and compare with a strict/lenient column. */
static int edge_matches(const char *id, const char *col, const uint8_t *buf, size_t len,
                        unsigned policy, const json_value *want, int report)
{
    static const char *const terms[] = {NULL, "end", "trunc"};
    btp_cbf_run runs[MAX_RUNS], want_runs[MAX_RUNS], run;
    btp_cbf_decoder dec;
    size_t n = 0;
    btp_status st = btp_cbf_decoder_init(&dec, buf, len, policy);
    while (st == BTP_OK && n < MAX_RUNS && (st = btp_cbf_decoder_next(&dec, &run)) == BTP_OK)
        runs[n++] = run;
    const char *error = str_of(want, "error");
    if (error) {
        uint64_t offset = 0;
        int ok = json_u64(json_get(want, "error_offset"), &offset) == 0 &&
                 strcmp(btp_status_name(st), error) == 0 &&
                 btp_cbf_decoder_error_offset(&dec) == offset;
        if (report)
            CHECK(ok, "%s: %s (policy %u): %s at %zu, want %s at %llu", id, col, policy,
                  btp_status_name(st), btp_cbf_decoder_error_offset(&dec), error,
                  (unsigned long long)offset);
        return ok;
    }
    int marker = 0;
    uint64_t consumed = 0;
    long nw = parse_runs(json_get(want, "frames_rle"), want_runs, MAX_RUNS, &marker);
    const char *term = str_of(want, "terminator");
    btp_cbf_terminator t = btp_cbf_decoder_terminator(&dec);
    int ok = nw >= 0 && st == BTP_END && json_u64(json_get(want, "consumed"), &consumed) == 0 &&
             btp_cbf_decoder_consumed(&dec) == consumed &&
             ((!term && !terms[t]) || (term && terms[t] && strcmp(term, terms[t]) == 0)) &&
             marker == (t == BTP_CBF_TERM_TRUNC);
    size_t cn = tu_canonical_runs(runs, n), cw = nw > 0 ? tu_canonical_runs(want_runs, (size_t)nw) : 0;
    ok = ok && cn == cw;
    for (size_t i = 0; ok && i < cn; i++)
        ok = tu_frame_eq(runs[i].frame, want_runs[i].frame) && runs[i].count == want_runs[i].count;
    if (report)
        CHECK(ok, "%s: %s (policy %u): %s, %zu runs (want %ld), terminator %d, consumed %zu", id,
              col, policy, btp_status_name(st), cn, nw, (int)t, btp_cbf_decoder_consumed(&dec));
    return ok;
}

static unsigned long edge_default_wide;

static void check_edge(const char *id, const json_value *v)
{
    size_t len = 0;
    const char *hex = str_of(v, "hex");
    uint8_t *buf = hex ? tu_parse_hex(hex, &len) : NULL;
    const json_value *strict = json_get(v, "strict"), *lenient = json_get(v, "lenient");
    CHECK(buf && strict && lenient, "%s: bad edge case", id);
    if (!buf || !strict || !lenient) {
        free(buf);
        return;
    }
    edge_matches(id, "strict", buf, len, BTP_CBF_POLICY_STRICT, strict, 1);
    edge_matches(id, "lenient", buf, len, BTP_CBF_POLICY_SWIFT, lenient, 1);
    /* Default: the lenient column, or, where only a wider-than-word
     * operand separates the two, the strict column's error. */
    if (!edge_matches(id, "lenient", buf, len, BTP_CBF_POLICY_DEFAULT, lenient, 0)) {
        const char *error = str_of(strict, "error");
        int wide = error && (strcmp(error, "address_too_wide") == 0 ||
                             strcmp(error, "count_too_wide") == 0);
        CHECK(wide, "%s: default policy matches neither lenient nor a width error", id);
        if (wide && edge_matches(id, "strict", buf, len, BTP_CBF_POLICY_DEFAULT, strict, 1))
            edge_default_wide++;
    }
    free(buf);
}

/* Read a JSON Lines file and hand each object to the checker for its kind.
 * Returns the number of lines read. */
static size_t run_file(const char *path, unsigned long counts[3])
{
    FILE *f = fopen(path, "r");
    CHECK(f != NULL, "cannot open %s", path);
    if (!f)
        return 0;
    char *line = NULL;
    size_t cap = 0, lines = 0;
    ssize_t got;
    while ((got = getline(&line, &cap, f)) > 0) {
        lines++;
        json_error err = {0, NULL};
        json_value *v = json_parse(line, (size_t)got, &err);
        const char *kind = str_of(v, "kind"), *id = str_of(v, "id");
        CHECK(v && kind && id, "%s:%zu: %s at %zu", path, lines, err.msg ? err.msg : "no kind/id",
              err.offset);
        if (v && kind && id) {
            if (strcmp(kind, "valid") == 0) {
                counts[0]++;
                check_valid(id, v);
            } else if (strcmp(kind, "malformed") == 0) {
                counts[1]++;
                check_malformed(id, v);
            } else if (strcmp(kind, "edge") == 0) {
                counts[2]++;
                check_edge(id, v);
            } else {
                CHECK(0, "%s: unknown kind %s", id, kind);
            }
        }
        json_free(v);
    }
    free(line);
    fclose(f);
    return lines;
}

int main(int argc, char **argv)
{
    unsigned long counts[3] = {0, 0, 0};
    CHECK(argc == 3, "usage: %s cbf-public.jsonl cbf-edge-cases.jsonl", argv[0]);
    if (argc != 3)
        return check_finish();
    size_t lines = run_file(argv[1], counts) + run_file(argv[2], counts);
    /* An empty or unreadable file must not pass silently. */
    CHECK(counts[0] > 0 && counts[1] > 0 && counts[2] > 0 &&
              lines == counts[0] + counts[1] + counts[2],
          "vectors read: %lu valid, %lu malformed, %lu edge of %zu lines", counts[0], counts[1],
          counts[2], lines);
    printf("%lu valid, %lu malformed, %lu edge cases (%lu where the default policy rejects a "
           "wide operand)\n",
           counts[0], counts[1], counts[2], edge_default_wide);
    return check_finish();
}
