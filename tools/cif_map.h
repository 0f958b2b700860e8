/*
 * Image maps in CIF for the CLI: decoding into storage a reader owns (grown
 * as needed, within bounds), encoding into a strbuf.
 */
#ifndef BTPACK_TOOLS_CIF_MAP_H
#define BTPACK_TOOLS_CIF_MAP_H

#include <btpack/btpack.h>

#include "strbuf.h"

/* A decoded map and the memory it points into. Zero-initialise. */
typedef struct cif_map {
    btp_image_map map;
    btp_image *images;
    size_t max_images;
    unsigned char *arena;
    size_t arena_size;
} cif_map;

/* Arena limit per decode: expansion-heavy (hostile) maps fail beyond it. */
#define CIF_MAP_ARENA_MAX ((size_t)256 << 20)

/*
 * Decode p[0..len) into m->map (valid until the next decode or
 * cif_map_free). The image array is sized from len; the arena starts at a
 * few times len and doubles while the decoder reports it full, up to
 * CIF_MAP_ARENA_MAX. Returns the decoder's status (BTP_E_OUT_OF_MEMORY when
 * memory runs out) with *info filled.
 */
btp_status cif_map_decode(cif_map *m, const uint8_t *p, size_t len, unsigned policy,
                          btp_cif_info *info);

void cif_map_free(cif_map *m);

/* Append the CIF encoding of map to out (flags: BTP_CIF_ENC_*). Returns
 * BTP_OK, an encoder error, or BTP_E_OUT_OF_MEMORY. */
btp_status cif_map_encode(const btp_image_map *map, unsigned flags, strbuf *out);

/* The decoder policy the CLI options ask for (--strict). */
unsigned cif_map_policy(int strict);

#endif
