/*
 * Fuzz target: CIF decoding under one policy (FUZZ_CIF_POLICY, set by the
 * build: default, strict or swift).
 *
 * Input: byte 0 chooses the arena (its size, as a multiple of the input's
 * length plus a little, so that full arenas are reached too); the rest is
 * the CIF map. The image array and the arena end at guard pages.
 * Properties:
 *  - only documented statuses; an error's offset lies within the input;
 *    success consumes at most the input and gives a map of the input's
 *    word size;
 *  - every image: addresses within the word, end of text not below the
 *    base (unless the Swift policy), path and name NUL-terminated inside
 *    the arena with the name a suffix of the path after its last separator
 *    (or both absent), build ID inside the arena;
 *  - the walk reports fields in input order within the input and gives the
 *    same result;
 *  - a big enough arena never fails where this one succeeded, and the
 *    policies nest: strict-accepted maps are accepted, equal, by default,
 *    and default-accepted maps by swift.
 */
#include "fuzz.h"
#include "guard.h"

#include <btpack/btpack.h>
#include <string.h>

#ifndef FUZZ_CIF_POLICY
#error "build with -DFUZZ_CIF_POLICY=<policy flags>"
#endif

static fuzz_guard in_guard, img_guard, arena_guard, img2_guard, arena2_guard;

typedef struct walk_state {
    size_t len, last, count;
} walk_state;

static void on_field(void *ctx, const btp_cif_event *ev)
{
    walk_state *w = ctx;
    if (ev->field != BTP_CIF_F_PATH_DEFINE && ev->field != BTP_CIF_F_PATH &&
        ev->field != BTP_CIF_F_PATH_DROPPED) {
        FUZZ_CHECK(ev->offset >= w->last, "field %d at %zu after %zu", ev->field, ev->offset,
                   w->last);
        w->last = ev->offset;
    }
    FUZZ_CHECK(ev->offset + ev->len <= w->len || ev->field == BTP_CIF_F_PATH_DROPPED,
               "field %d at %zu+%zu past %zu", ev->field, ev->offset, ev->len, w->len);
    w->count++;
}

static int documented(btp_status st)
{
    switch (st) {
    case BTP_OK: case BTP_E_EMPTY_INPUT: case BTP_E_CIF_BAD_VERSION: case BTP_E_CIF_RESERVED_SIZE:
    case BTP_E_CIF_TRUNCATED: case BTP_E_CIF_COUNT_TOO_WIDE: case BTP_E_LIMIT:
    case BTP_E_CIF_BAD_PREFIX: case BTP_E_CIF_NUL_IN_STRING: case BTP_E_CIF_BAD_RANGE:
    case BTP_E_BUFFER_TOO_SMALL: case BTP_E_TRAILING_BYTES: case BTP_E_CIF_RESERVED_BIT:
    case BTP_E_CIF_EMPTY_TEXT: case BTP_E_CIF_BAD_UTF8: case BTP_E_CIF_BUILD_ID_TOO_LONG:
        return 1;
    default:
        return 0;
    }
}

static int inside(const void *p, const uint8_t *arena, size_t size)
{
    return (const uint8_t *)p >= arena && (const uint8_t *)p < arena + size;
}

static void check_map(const btp_image_map *m, const uint8_t *arena, size_t size, unsigned policy)
{
    uint64_t mask = btp_word_mask(m->word_bits);
    FUZZ_CHECK(btp_word_bits_valid(m->word_bits), "word bits %u", m->word_bits);
    if (m->platform) {
        size_t room = size - (size_t)((const uint8_t *)m->platform - arena);
        FUZZ_CHECK(inside(m->platform, arena, size) && memchr(m->platform, 0, room),
                   "platform outside the arena");
    }
    for (size_t i = 0; i < m->n_images; i++) {
        const btp_image *im = &m->images[i];
        FUZZ_CHECK(im->base <= mask && im->end_of_text <= mask, "image %zu beyond the word", i);
        if (!(policy & BTP_CIF_LENIENT))
            FUZZ_CHECK(im->end_of_text >= im->base, "image %zu: end below base", i);
        FUZZ_CHECK(!im->path == !im->name, "image %zu: path xor name", i);
        if (im->path) {
            size_t room = size - (size_t)((const uint8_t *)im->path - arena);
            FUZZ_CHECK(inside(im->path, arena, size) && memchr(im->path, 0, room),
                       "image %zu: path outside the arena", i);
            size_t n = strlen(im->path);
            FUZZ_CHECK(n > 0 && im->name >= im->path && im->name <= im->path + n,
                       "image %zu: name not in path", i);
            for (const char *c = im->name; *c; c++)
                FUZZ_CHECK(*c != '/' && *c != '\\', "image %zu: separator in name", i);
            FUZZ_CHECK(im->name == im->path || im->name[-1] == '/' || im->name[-1] == '\\',
                       "image %zu: name not after a separator", i);
        }
        if (im->build_id_len)
            FUZZ_CHECK(inside(im->build_id, arena, size) &&
                           im->build_id_len <= size -
                               (size_t)(im->build_id - (const unsigned char *)arena),
                       "image %zu: build ID outside the arena", i);
        else
            FUZZ_CHECK(im->build_id == NULL, "image %zu: empty build ID with a pointer", i);
    }
}

static int same_map(const btp_image_map *a, const btp_image_map *b)
{
    if (a->word_bits != b->word_bits || a->n_images != b->n_images ||
        !a->platform != !b->platform || (a->platform && strcmp(a->platform, b->platform) != 0))
        return 0;
    for (size_t i = 0; i < a->n_images; i++) {
        const btp_image *x = &a->images[i], *y = &b->images[i];
        if (x->base != y->base || x->end_of_text != y->end_of_text || !x->path != !y->path ||
            (x->path && strcmp(x->path, y->path) != 0) || x->build_id_len != y->build_id_len ||
            (x->build_id_len && memcmp(x->build_id, y->build_id, x->build_id_len) != 0))
            return 0;
    }
    return 1;
}

static btp_status decode_with(const uint8_t *in, size_t len, unsigned policy, size_t arena_size,
                              btp_image_map *m, btp_cif_info *info)
{
    size_t max = BTP_CIF_MAX_IMAGES(len);
    btp_image *ims = (btp_image *)fuzz_guard_buf(&img2_guard, max * sizeof *ims);
    uint8_t *arena = fuzz_guard_buf(&arena2_guard, arena_size);
    return btp_cif_decode(in, len, policy, ims, max, arena, arena_size, m, info);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t len = size - 1;
    const uint8_t *in = fuzz_guard_copy(&in_guard, data + 1, len);
    size_t arena_size = (size_t)(data[0] & 7) * len + (size_t)(data[0] >> 3) * 4;
    size_t max = BTP_CIF_MAX_IMAGES(len);
    btp_image *ims = (btp_image *)fuzz_guard_buf(&img_guard, max * sizeof *ims);
    uint8_t *arena = fuzz_guard_buf(&arena_guard, arena_size);
    btp_image_map m;
    btp_cif_info info;
    btp_status st = btp_cif_decode(in, len, FUZZ_CIF_POLICY, ims, max, arena, arena_size, &m,
                                   &info);
    FUZZ_CHECK(documented(st), "status %d", st);
    if (st != BTP_OK) {
        FUZZ_CHECK(info.error_offset <= len, "error offset %zu past %zu", info.error_offset, len);
        FUZZ_CHECK(m.n_images == 0, "images on error");
    } else {
        FUZZ_CHECK(info.consumed <= len && info.arena_used <= arena_size, "consumed %zu of %zu",
                   info.consumed, len);
        FUZZ_CHECK(m.word_bits == info.word_bits, "map word size");
        if (FUZZ_CIF_POLICY & BTP_CIF_REJECT_TRAILING)
            FUZZ_CHECK(info.consumed == len, "trailing bytes accepted");
        check_map(&m, arena, arena_size, FUZZ_CIF_POLICY);
    }

    /* The walk: same result, fields in order. */
    walk_state w = {.len = len};
    btp_image_map wm;
    btp_cif_info winfo;
    btp_status wst = btp_cif_walk(in, len, FUZZ_CIF_POLICY, ims, max, arena, arena_size, &wm,
                                  &winfo, on_field, &w);
    FUZZ_CHECK(wst == st && winfo.consumed == info.consumed &&
                   winfo.error_offset == info.error_offset, "walk differs");

    /* Enough arena: the same result where this one sufficed. */
    btp_image_map big;
    btp_cif_info binfo;
    size_t big_size = 64 * len + 4096;
    btp_status bst = decode_with(in, len, FUZZ_CIF_POLICY, big_size, &big, &binfo);
    if (st == BTP_OK)
        FUZZ_CHECK(bst == BTP_OK && same_map(&m, &big), "a bigger arena changed the result");
    else if (st != BTP_E_BUFFER_TOO_SMALL)
        FUZZ_CHECK(bst == st && binfo.error_offset == info.error_offset,
                   "a bigger arena changed the error");

    /* Policies nest. */
    if (bst == BTP_OK && !(FUZZ_CIF_POLICY & BTP_CIF_LENIENT)) {
        btp_image_map lax;
        unsigned next = (FUZZ_CIF_POLICY == BTP_CIF_POLICY_STRICT) ? BTP_CIF_POLICY_DEFAULT
                                                                    : BTP_CIF_POLICY_SWIFT;
        /* decode_with reuses the guards, so compare against a copy of big's
         * result by decoding it again into the first guards */
        btp_status s1 = btp_cif_decode(in, len, FUZZ_CIF_POLICY, ims, max,
                                       fuzz_guard_buf(&arena_guard, big_size), big_size, &m,
                                       &info);
        btp_status s2 = decode_with(in, len, next, big_size, &lax, &binfo);
        FUZZ_CHECK(s1 == BTP_OK && s2 == BTP_OK && same_map(&m, &lax),
                   "policy %u accepted, %u gives %d", FUZZ_CIF_POLICY, next, s2);
    }
    return 0;
}
