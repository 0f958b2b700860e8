/* Image maps in CIF for the CLI (see cif_map.h). */
#include "cif_map.h"

#include <stdlib.h>

unsigned cif_map_policy(int strict)
{
    return strict ? BTP_CIF_POLICY_STRICT : BTP_CIF_POLICY_DEFAULT;
}

static int grow(void **p, size_t *have, size_t want, size_t elem)
{
    if (*have >= want)
        return 0;
    void *q = realloc(*p, want * elem);
    if (!q)
        return -1;
    *p = q;
    *have = want;
    return 0;
}

btp_status cif_map_decode(cif_map *m, const uint8_t *p, size_t len, unsigned policy,
                          btp_cif_info *info)
{
    /* Everything is bounded by len: images by BTP_CIF_MAX_IMAGES, the
     * arena by CIF_MAP_ARENA_MAX. */
    size_t images = BTP_CIF_MAX_IMAGES(len);
    if (len > CIF_MAP_ARENA_MAX ||
        grow((void **)&m->images, &m->max_images, images, sizeof(btp_image)) < 0)
        return BTP_E_OUT_OF_MEMORY;
    size_t arena = 4 * len + 256;
    for (;;) {
        if (arena > CIF_MAP_ARENA_MAX)
            arena = CIF_MAP_ARENA_MAX;
        if (grow((void **)&m->arena, &m->arena_size, arena, 1) < 0)
            return BTP_E_OUT_OF_MEMORY;
        btp_status st = btp_cif_decode(p, len, policy, m->images, m->max_images, m->arena,
                                       m->arena_size, &m->map, info);
        if (st != BTP_E_BUFFER_TOO_SMALL || m->arena_size >= CIF_MAP_ARENA_MAX)
            return st;
        arena = m->arena_size * 2;
    }
}

void cif_map_free(cif_map *m)
{
    free(m->images);
    free(m->arena);
    *m = (cif_map){0};
}

btp_status cif_map_encode(const btp_image_map *map, unsigned flags, strbuf *out)
{
    size_t n_table = btp_cif_prefix_bound(map), needed = 0, len = 0;
    if (n_table > SIZE_MAX / sizeof(btp_cif_prefix))
        return BTP_E_OUT_OF_MEMORY;
    btp_cif_prefix *table = malloc(n_table * sizeof *table);
    if (!table)
        return BTP_E_OUT_OF_MEMORY;
    btp_status st = btp_cif_encode(map, flags, table, n_table, NULL, 0, NULL, &needed);
    if (st == BTP_E_BUFFER_TOO_SMALL) {
        char *d = sb_reserve(out, needed + 1);
        st = d ? btp_cif_encode(map, flags, table, n_table, d, needed, &len, NULL)
               : BTP_E_OUT_OF_MEMORY;
        if (st == BTP_OK) {
            out->len += len;
            out->data[out->len] = 0;
        }
    }
    free(table);
    return st;
}
