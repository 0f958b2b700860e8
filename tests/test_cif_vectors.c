/*
 * The CIF vectors recorded from Swift 6.3.1's runtime, run against the
 * library:  test_cif_vectors cif-swift.jsonl
 * (tests/swift/make_cif_vectors.py describes the file.)
 *
 * Every vector: each policy gives its `expect` status at its offset (for
 * "ok", the bytes consumed). Where btpack's Swift policy accepts and
 * `swift_agrees` is true, it gives exactly the platform and images Swift
 * decoded.
 * Valid vectors, besides: the encoder in Swift mode writes Swift's
 * re-encoding byte for byte (with the Swift-bugs mode where `swift_bug`
 * says Swift's is corrupt), the minimal mode is never longer and both
 * decode to the same images; every arena size, every output size and
 * every prefix-table size is handled as the header says.
 */
#include <btpack/btpack.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cif_testutil.h"
#include "json.h"

#define SENTINEL 0xa5

static unsigned char *unhex(const char *h, size_t *n)
{
    size_t len = h ? strlen(h) / 2 : 0;
    unsigned char *out = malloc(len + 1);
    for (size_t i = 0; i < len; i++)
        sscanf(h + 2 * i, "%2hhx", &out[i]);
    *n = len;
    return out;
}

static void hex_of(const void *p, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++)
        sprintf(out + 2 * i, "%02x", ((const unsigned char *)p)[i]);
    out[2 * n] = 0;
}

typedef struct decoded {
    btp_status st;
    btp_cif_info info;
    btp_image_map map;
    btp_image *images;
    unsigned char *arena;
} decoded;

static void decode(const unsigned char *in, size_t n, unsigned policy, decoded *d)
{
    size_t max = BTP_CIF_MAX_IMAGES(n), arena = 64 * n + 1024;
    d->images = malloc(max * sizeof *d->images);
    d->arena = malloc(arena);
    d->st = btp_cif_decode(in, n, policy, d->images, max, d->arena, arena, &d->map, &d->info);
}

static void release(decoded *d)
{
    free(d->images);
    free(d->arena);
}

/* An image as the vectors write it: [name hex, path hex, build ID hex,
 * "0xBASE", "0xEND"], nulls for none. */
static int image_matches(const btp_image *im, const json_value *want, char *why, size_t cap)
{
    char buf[8192], addr[32];
    const char *w;
    const char *name = im->name, *path = im->path;
    w = json_str(json_at(want, 0), NULL);
    if (name && strlen(name) * 2 < sizeof buf)
        hex_of(name, strlen(name), buf);
    if ((!w) != (!name) || (w && strcmp(w, buf) != 0))
        return snprintf(why, cap, "name %s, want %s", name ? name : "null", w ? w : "null"), 0;
    w = json_str(json_at(want, 1), NULL);
    if (path && strlen(path) * 2 < sizeof buf)
        hex_of(path, strlen(path), buf);
    if ((!w) != (!path) || (w && strcmp(w, buf) != 0))
        return snprintf(why, cap, "path %s, want %s", path ? path : "null", w ? w : "null"), 0;
    w = json_str(json_at(want, 2), NULL);
    hex_of(im->build_id, im->build_id_len, buf);
    if ((!w) != (im->build_id_len == 0) || (w && strcmp(w, buf) != 0))
        return snprintf(why, cap, "build ID %.40s, want %.40s", buf, w ? w : "null"), 0;
    snprintf(addr, sizeof addr, "0x%llx", (unsigned long long)im->base);
    if (strcmp(addr, json_str(json_at(want, 3), NULL)) != 0)
        return snprintf(why, cap, "base %s", addr), 0;
    snprintf(addr, sizeof addr, "0x%llx", (unsigned long long)im->end_of_text);
    if (strcmp(addr, json_str(json_at(want, 4), NULL)) != 0)
        return snprintf(why, cap, "end %s", addr), 0;
    return 1;
}

static int same_as_swift(const btp_image_map *m, const json_value *swift, char *why, size_t cap)
{
    const json_value *ims = json_get(swift, "images");
    const char *plat = json_str(json_get(swift, "platform"), NULL);
    char buf[600] = "";
    if (m->platform && strlen(m->platform) <= 255)
        hex_of(m->platform, strlen(m->platform), buf);
    if (!m->platform || strcmp(buf, plat) != 0)
        return snprintf(why, cap, "platform %s, want %s", buf, plat), 0;
    if (m->n_images != json_len(ims))
        return snprintf(why, cap, "%zu images, want %zu", m->n_images, json_len(ims)), 0;
    for (size_t i = 0; i < m->n_images; i++) {
        char w[200];
        if (!image_matches(&m->images[i], json_at(ims, i), w, sizeof w))
            return snprintf(why, cap, "image %zu: %s", i, w), 0;
    }
    return 1;
}

/* Encode m with flags into a fresh buffer (*out, *len). */
static btp_status encode(const btp_image_map *m, unsigned flags, unsigned char **out, size_t *len)
{
    size_t bound = btp_cif_prefix_bound(m), needed = 0;
    btp_cif_prefix *table = malloc(bound * sizeof *table);
    btp_status st = btp_cif_encode(m, flags, table, bound, NULL, 0, NULL, &needed);
    *out = malloc(needed + 1);
    if (st == BTP_E_BUFFER_TOO_SMALL)
        st = btp_cif_encode(m, flags, table, bound, *out, needed, len, NULL);
    free(table);
    return st;
}

/* Every capacity below the size needed fails cleanly and touches nothing
 * past it; every prefix table size gives a map that decodes the same. */
static void check_sizes(const char *id, const btp_image_map *m)
{
    unsigned char *full;
    size_t len = 0;
    CHECK(encode(m, BTP_CIF_ENC_SWIFT, &full, &len) == BTP_OK, "%s: encode", id);
    /* fewer known prefixes make the encoding longer: room for literals */
    size_t room = 4 * len + 1024;
    unsigned char *buf = malloc(room);
    size_t bound = btp_cif_prefix_bound(m);
    btp_cif_prefix *table = malloc(bound * sizeof *table);
    for (size_t cap = 0; cap < len; cap++) {
        size_t got = 1, needed = 0;
        memset(buf, SENTINEL, len + 16);
        btp_status st = btp_cif_encode(m, BTP_CIF_ENC_SWIFT, table, bound, buf, cap, &got,
                                       &needed);
        int clean = 1;
        for (size_t i = cap; i < len + 16; i++)
            clean &= buf[i] == SENTINEL;
        CHECK(st == BTP_E_BUFFER_TOO_SMALL && got == 0 && needed == len && clean,
              "%s: capacity %zu: %s, needed %zu, untouched past it %d", id, cap,
              btp_status_name(st), needed, clean);
    }
    for (size_t t = 0; t <= bound; t += 1 + bound / 40) {
        size_t n = 0;
        btp_status st = btp_cif_encode(m, BTP_CIF_ENC_SWIFT, t ? table : NULL, t, buf, room,
                                       &n, NULL);
        decoded d;
        decode(buf, n, BTP_CIF_POLICY_STRICT, &d);
        CHECK(st == BTP_OK && d.st == BTP_OK && cif_same_map(&d.map, m),
              "%s: prefix table of %zu: %s, decodes %s", id, t, btp_status_name(st),
              btp_status_name(d.st));
        CHECK(t < bound || (n == len && memcmp(buf, full, len) == 0),
              "%s: a full table gives other bytes", id);
        release(&d);
    }
    /* Every arena size: too small fails cleanly, enough succeeds. */
    decoded ref;
    decode(full, len, 0, &ref);
    size_t need = ref.info.arena_used;
    unsigned char *arena = malloc(need + 16);
    btp_image *ims = malloc(BTP_CIF_MAX_IMAGES(len) * sizeof *ims);
    for (size_t a = 0; a <= need + 8; a += 1 + need / 200) {
        btp_image_map mm;
        btp_cif_info info;
        btp_status st = btp_cif_decode(full, len, 0, ims, BTP_CIF_MAX_IMAGES(len), arena, a,
                                       &mm, &info);
        if (st == BTP_OK)
            CHECK(cif_same_map(&mm, m), "%s: arena %zu: other map", id, a);
        else
            CHECK(st == BTP_E_BUFFER_TOO_SMALL && info.error_offset <= len && a < need + 8,
                  "%s: arena %zu of %zu: %s at %zu", id, a, need, btp_status_name(st),
                  info.error_offset);
    }
    release(&ref);
    free(arena);
    free(ims);
    free(buf);
    free(table);
    free(full);
}

static void run_vector(const json_value *v)
{
    const char *id = json_str(json_get(v, "id"), NULL);
    const char *kind = json_str(json_get(v, "kind"), NULL);
    const json_value *expect = json_get(v, "expect"), *swift = json_get(v, "swift_6_3_1");
    size_t n;
    unsigned char *in = unhex(json_str(json_get(v, "hex"), NULL), &n);
    static const struct {
        const char *name;
        unsigned policy;
    } policies[] = {{"default", BTP_CIF_POLICY_DEFAULT},
                    {"strict", BTP_CIF_POLICY_STRICT},
                    {"swift", BTP_CIF_POLICY_SWIFT}};
    for (size_t p = 0; p < 3; p++) {
        const json_value *e = json_get(expect, policies[p].name);
        const char *want = json_str(json_at(e, 0), NULL);
        uint64_t off = 0;
        json_u64(json_at(e, 1), &off);
        decoded d;
        decode(in, n, policies[p].policy, &d);
        size_t got_off = d.st == BTP_OK ? d.info.consumed : d.info.error_offset;
        CHECK(strcmp(btp_status_name(d.st), want) == 0 && got_off == off,
              "%s, %s policy: %s at %zu, want %s at %llu", id, policies[p].name,
              btp_status_name(d.st), got_off, want, (unsigned long long)off);
        char why[300];
        const json_value *agrees = json_get(v, "swift_agrees");
        if (d.st == BTP_OK && p == 2 && json_bool(agrees) == 1 &&
            strcmp(json_str(json_get(swift, "result"), NULL), "map") == 0)
            CHECK(same_as_swift(&d.map, swift, why, sizeof why), "%s: not what Swift decoded: %s",
                  id, why);
        if (strcmp(kind, "valid") == 0 && p == 0 && d.st == BTP_OK) {
            CHECK(same_as_swift(&d.map, swift, why, sizeof why), "%s: not what Swift decoded: %s",
                  id, why);
            size_t rn, ln, bn;
            unsigned char *re = unhex(json_str(json_get(swift, "reencoded"), NULL), &rn);
            unsigned char *mine, *minimal, *bugs;
            CHECK(encode(&d.map, BTP_CIF_ENC_SWIFT, &mine, &ln) == BTP_OK, "%s: encode", id);
            CHECK(encode(&d.map, BTP_CIF_ENC_SWIFT | BTP_CIF_ENC_SWIFT_BUGS, &bugs, &bn) ==
                      BTP_OK, "%s: encode with Swift's bugs", id);
            int bug = json_get(v, "swift_bug") != NULL;
            CHECK(bn == rn && memcmp(bugs, re, rn) == 0,
                  "%s: the Swift-bugs mode differs from Swift's bytes", id);
            CHECK(bug == !(ln == rn && memcmp(mine, re, rn) == 0),
                  "%s: Swift mode %s Swift's bytes (swift_bug %d)", id,
                  ln == rn && !memcmp(mine, re, rn) ? "equals" : "differs from", bug);
            size_t mn;
            CHECK(encode(&d.map, 0, &minimal, &mn) == BTP_OK && mn <= ln,
                  "%s: minimal %zu bytes, Swift's %zu", id, mn, ln);
            decoded a, b;
            decode(mine, ln, BTP_CIF_POLICY_STRICT, &a);
            decode(minimal, mn, BTP_CIF_POLICY_STRICT, &b);
            CHECK(a.st == BTP_OK && b.st == BTP_OK && cif_same_map(&a.map, &d.map) &&
                      cif_same_map(&b.map, &d.map), "%s: re-encodings decode differently", id);
            release(&a);
            release(&b);
            check_sizes(id, &d.map);
            free(re);
            free(mine);
            free(minimal);
            free(bugs);
        }
        release(&d);
    }
    free(in);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: test_cif_vectors cif-swift.jsonl\n");
        return 2;
    }
    FILE *f = fopen(argv[1], "r");
    if (!f) {
        fprintf(stderr, "%s: %s\n", argv[1], strerror(errno));
        return 1;
    }
    static char line[1 << 20];
    size_t count = 0;
    while (fgets(line, sizeof line, f)) {
        json_error err;
        json_value *v = json_parse(line, strlen(line), &err);
        CHECK(v != NULL, "vector %zu: %s", count + 1, err.msg);
        if (v)
            run_vector(v);
        json_free(v);
        count++;
    }
    fclose(f);
    CHECK(count >= 50, "only %zu vectors", count);
    printf("%zu vectors\n", count);
    return check_finish();
}
