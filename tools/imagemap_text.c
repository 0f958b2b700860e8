/* Image maps from and to text for the CLI (imagemap_text.h). */
#include "imagemap_text.h"

#include <stdlib.h>
#include <string.h>

#include "symbolize/elf.h"

void owned_map_clear(owned_map *m, unsigned word_bits)
{
    m->buf.n_images = m->buf.n_bytes = 0;
    m->map = (btp_image_map){.word_bits = word_bits};
}

void owned_map_free(owned_map *m)
{
    free(m->buf.images);
    free(m->buf.bytes);
    memset(m, 0, sizeof *m);
}

/* Give buf room for `images` more images and `bytes` more bytes. Image
 * strings point into bytes, so growing bytes moves them: they are fixed up. */
static int reserve(owned_map *m, size_t images, size_t bytes)
{
    btp_image_buf *b = &m->buf;
    if (b->n_images + images > b->max_images) {
        size_t c = b->max_images ? b->max_images : 16;
        while (c < b->n_images + images)
            c *= 2;
        btp_image *p = realloc(b->images, c * sizeof *p);
        if (!p)
            return -1;
        b->images = p;
        b->max_images = c;
    }
    if (b->n_bytes + bytes > b->max_bytes) {
        size_t c = b->max_bytes ? b->max_bytes : 1024;
        while (c < b->n_bytes + bytes)
            c *= 2;
        uintptr_t old = (uintptr_t)b->bytes; /* as a number: only offsets from it are used */
        char *p = realloc(b->bytes, c);
        if (!p)
            return -1;
        for (size_t i = 0; old && i < b->n_images; i++) {
            btp_image *im = &b->images[i];
            if (im->path)
                im->path = p + ((uintptr_t)im->path - old);
            if (im->build_id)
                im->build_id = (unsigned char *)p + ((uintptr_t)im->build_id - old);
        }
        b->bytes = p;
        b->max_bytes = c;
    }
    return 0;
}

static void finish(owned_map *m)
{
    m->map.images = m->buf.images;
    m->map.n_images = m->buf.n_images;
}

btp_status owned_map_procmaps(owned_map *m, const char *text, size_t len, unsigned word_bits,
                              size_t *err_off)
{
    for (int attempt = 0; attempt < 2; attempt++) {
        owned_map_clear(m, word_bits);
        btp_image_buf probe = m->buf;
        btp_status st = btp_image_map_from_procmaps(text, len, word_bits, &probe, &m->map, err_off);
        if (st != BTP_E_BUFFER_TOO_SMALL) {
            m->buf = probe;
            if (st == BTP_OK)
                finish(m);
            else
                owned_map_clear(m, word_bits);
            return st;
        }
        /* the parser counted what it needs: make room and parse again */
        if (reserve(m, probe.n_images, probe.n_bytes) < 0)
            return BTP_E_OUT_OF_MEMORY;
    }
    return BTP_E_OUT_OF_MEMORY;
}

btp_status owned_map_image_line(owned_map *m, const char *line, size_t len, size_t *err_off)
{
    /* an image line needs at most one image and its length in bytes */
    if (reserve(m, 1, len + 1) < 0)
        return BTP_E_OUT_OF_MEMORY;
    btp_status st = btp_image_line_parse(line, len, m->map.word_bits, &m->buf, err_off);
    finish(m);
    return st;
}

btp_status owned_map_image_lines(owned_map *m, const char *text, size_t len, unsigned word_bits,
                                 size_t *err_off)
{
    owned_map_clear(m, word_bits);
    for (size_t b = 0; b < len;) {
        const char *nl = memchr(text + b, '\n', len - b);
        size_t e = nl ? (size_t)(nl - text) : len;
        if (e - b >= 6 && memcmp(text + b, "image ", 6) == 0) {
            size_t off = 0;
            btp_status st = owned_map_image_line(m, text + b, e - b, &off);
            if (st != BTP_OK) {
                *err_off = b + off;
                return st;
            }
        }
        b = e + 1;
    }
    finish(m);
    return BTP_OK;
}

/* Append a copy of im unless an image already in m overlaps it. */
static int add_unless_covered(owned_map *m, const btp_image *im)
{
    for (size_t i = 0; i < m->buf.n_images; i++) {
        const btp_image *o = &m->buf.images[i];
        if (im->base < o->end_of_text && o->base < im->end_of_text)
            return 0;
    }
    size_t pl = im->path ? strlen(im->path) + 1 : 0;
    if (reserve(m, 1, pl + im->build_id_len) < 0)
        return -1;
    btp_image *d = &m->buf.images[m->buf.n_images++];
    *d = *im; /* name: NULL or a parser's static "[vdso]" */
    char *bytes = m->buf.bytes + m->buf.n_bytes;
    if (pl) {
        memcpy(bytes, im->path, pl);
        d->path = bytes;
        bytes += pl;
    }
    if (im->build_id_len) {
        memcpy(bytes, im->build_id, im->build_id_len);
        d->build_id = (const unsigned char *)bytes;
    }
    m->buf.n_bytes += pl + im->build_id_len;
    return 0;
}

btp_status owned_map_from_log(owned_map *m, btp_log_reader *lr, size_t *err_off)
{
    const void *d;
    size_t n;
    unsigned wb = btp_log_reader_word_bits(lr);
    owned_map_clear(m, wb);
    const char *want = btp_log_reader_meta_find(lr, "images", &d, &n) == BTP_OK ? "images"
                       : btp_log_reader_meta_find(lr, "maps", &d, &n) == BTP_OK ? "maps"
                                                                                 : NULL;
    if (!want)
        return BTP_END;
    size_t count = 0;
    const char *key;
    while (btp_log_reader_meta(lr, count, &key, &d, &n, NULL) == BTP_OK)
        count++;
    owned_map one = {0};
    btp_status st = BTP_OK;
    for (size_t i = count; i-- > 0 && st == BTP_OK;) { /* newest first */
        if (btp_log_reader_meta(lr, i, &key, &d, &n, NULL) != BTP_OK || strcmp(key, want) != 0)
            continue;
        st = want[0] == 'i' ? owned_map_image_lines(&one, d, n, wb, err_off)
                            : owned_map_procmaps(&one, d, n, wb, err_off);
        for (size_t k = 0; st == BTP_OK && k < one.map.n_images; k++)
            if (add_unless_covered(m, &one.map.images[k]) < 0)
                st = BTP_E_OUT_OF_MEMORY;
    }
    owned_map_free(&one);
    if (st != BTP_OK) {
        owned_map_clear(m, wb);
        return st;
    }
    finish(m);
    return BTP_OK;
}

btp_status image_lines_from_procmaps(const char *text, size_t len, unsigned word_bits,
                                     strbuf *out, size_t *err_off)
{
    owned_map m = {0};
    btp_status st = owned_map_procmaps(&m, text, len, word_bits, err_off);
    for (size_t i = 0; st == BTP_OK && i < m.map.n_images; i++) {
        btp_image im = m.map.images[i];
        elf_file f;
        char why[128];
        int have = im.path && elf_open(&f, im.path, why, sizeof why) == 0;
        if (have && f.build_id) {
            im.build_id = f.build_id;
            im.build_id_len = f.build_id_len;
        }
        size_t n = 0;
        btp_image_line_format(&im, NULL, 0, &n);
        char *d = sb_reserve(out, n + 1);
        if (d && btp_image_line_format(&im, d, n, NULL) == BTP_OK) {
            d[n] = '\n';
            out->len += n + 1;
        }
        if (have)
            elf_close(&f);
    }
    owned_map_free(&m);
    return out->oom ? BTP_E_OUT_OF_MEMORY : st;
}
