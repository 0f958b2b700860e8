/* Image maps: lookup (imagemap.h). */
#include "image/image_internal.h"

const btp_image *btp_image_map_find(const btp_image_map *map, uint64_t addr)
{
    const btp_image *best = NULL;
    if (!map || !map->images)
        return NULL;
    for (size_t i = 0; i < map->n_images; i++) {
        const btp_image *im = &map->images[i];
        if (addr >= im->base && addr < im->end_of_text && (!best || im->base > best->base))
            best = im;
    }
    return best;
}
