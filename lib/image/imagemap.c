/* Image maps: lookup and the storage the parsers fill (imagemap.h). */
#include "image/image_internal.h"

char *btp_image_buf_bytes(btp_image_buf *buf, size_t n)
{
    size_t at = buf->n_bytes;
    buf->n_bytes += n;
    if (!buf->bytes || at > buf->max_bytes || n > buf->max_bytes - at)
        return NULL;
    return buf->bytes + at;
}

btp_image *btp_image_buf_image(btp_image_buf *buf)
{
    size_t at = buf->n_images++;
    return buf->images && at < buf->max_images ? &buf->images[at] : NULL;
}

int btp_image_parse_hex(const char *p, size_t end, size_t *i, uint64_t *out)
{
    uint64_t v = 0;
    size_t k = *i, digits = 0;
    for (; k < end; k++, digits++) {
        char c = p[k];
        unsigned d;
        if (c >= '0' && c <= '9')
            d = (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            d = (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            d = (unsigned)(c - 'A' + 10);
        else
            break;
        if (digits == 16)
            return -1;
        v = v << 4 | d;
    }
    if (!digits)
        return -1;
    *i = k;
    *out = v;
    return 0;
}

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
