/*
 * Fuzz target: CIF decode -> encode -> decode.
 *
 * Input: byte 0 chooses the encoder's prefix table size (0: none, up to
 * the full bound); the rest is decoded under the default policy. When it
 * decodes, the map is encoded again, minimal and in Swift mode, and each
 * encoding must:
 *  - need exactly the bytes it writes, fit a buffer of exactly that size
 *    (ending at a guard page) and fail cleanly, writing nothing past the
 *    end, in one byte less;
 *  - decode under the default policy to the same map (platform, images,
 *    paths, build IDs, addresses), consuming all of it;
 *  - with the full table, Swift mode is never shorter than minimal and
 *    differs from it only in count encodings (so by at most one byte per
 *    count).
 * The only maps that cannot be encoded again are those the encoder refuses
 * by contract: an end of text below the base never decodes under the
 * default policy, so every decoded map must encode.
 */
#include "fuzz.h"
#include "guard.h"

#include <btpack/btpack.h>
#include <string.h>

static fuzz_guard in_guard, out_guard, table_guard;
static btp_image images[8192], images2[8192];
static uint8_t arena[1 << 20], arena2[1 << 20];

static int same_map(const btp_image_map *a, const btp_image_map *b)
{
    const char *pa = a->platform ? a->platform : "", *pb = b->platform ? b->platform : "";
    if (a->word_bits != b->word_bits || a->n_images != b->n_images || strcmp(pa, pb) != 0)
        return 0;
    for (size_t i = 0; i < a->n_images; i++) {
        const btp_image *x = &a->images[i], *y = &b->images[i];
        const char *xp = x->path ? x->path : "", *yp = y->path ? y->path : "";
        if (x->base != y->base || x->end_of_text != y->end_of_text || strcmp(xp, yp) != 0 ||
            x->build_id_len != y->build_id_len ||
            (x->build_id_len && memcmp(x->build_id, y->build_id, x->build_id_len) != 0))
            return 0;
    }
    return 1;
}

static size_t encode(const btp_image_map *m, unsigned flags, btp_cif_prefix *table, size_t tcap)
{
    size_t needed = 0, len = 0;
    btp_status st = btp_cif_encode(m, flags, table, tcap, NULL, 0, &len, &needed);
    FUZZ_CHECK(st == BTP_E_BUFFER_TOO_SMALL && needed >= 3, "size query: %d, %zu", st, needed);
    uint8_t *small = fuzz_guard_buf(&out_guard, needed - 1);
    size_t n2 = 0;
    st = btp_cif_encode(m, flags, table, tcap, small, needed - 1, &len, &n2);
    FUZZ_CHECK(st == BTP_E_BUFFER_TOO_SMALL && len == 0 && n2 == needed, "one byte short: %d",
               st);
    uint8_t *out = fuzz_guard_buf(&out_guard, needed);
    st = btp_cif_encode(m, flags, table, tcap, out, needed, &len, NULL);
    FUZZ_CHECK(st == BTP_OK && len == needed, "exact size: %d, %zu of %zu", st, len, needed);
    btp_image_map back;
    btp_cif_info info;
    st = btp_cif_decode(out, len, BTP_CIF_POLICY_DEFAULT, images2, 8192, arena2, sizeof arena2,
                        &back, &info);
    FUZZ_CHECK(st == BTP_OK && info.consumed == len, "re-encoding decodes with %d at %zu", st,
               info.error_offset);
    FUZZ_CHECK(same_map(m, &back), "re-encoding decodes to another map");
    return len;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const uint8_t *in = fuzz_guard_copy(&in_guard, data + 1, size - 1);
    btp_image_map m;
    btp_cif_info info;
    if (btp_cif_decode(in, size - 1, BTP_CIF_POLICY_DEFAULT, images, 8192, arena, sizeof arena,
                       &m, &info) != BTP_OK)
        return 0;
    size_t bound = btp_cif_prefix_bound(&m);
    size_t tcap = data[0] == 255 ? bound : bound * data[0] / 255;
    btp_cif_prefix *table =
        (btp_cif_prefix *)fuzz_guard_buf(&table_guard, bound * sizeof(btp_cif_prefix));
    size_t minimal = encode(&m, 0, tcap ? table : NULL, tcap);
    size_t swift = encode(&m, BTP_CIF_ENC_SWIFT, tcap ? table : NULL, tcap);
    FUZZ_CHECK(swift >= minimal && swift - minimal <= 1 + m.n_images,
               "Swift mode %zu bytes, minimal %zu", swift, minimal);
    return 0;
}
