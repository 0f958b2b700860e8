/* Image maps from and to text for the CLI (imagemap_text.h). */
#include "imagemap_text.h"

#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "format.h" /* parse_hex_digits_u64, parse_dec_u64 */
#include "symbolize/elf.h"

void owned_map_clear(owned_map *m, unsigned word_bits)
{
    m->buf.n_images = m->buf.n_bytes = 0;
    m->map = (btp_image_map){.word_bits = word_bits};
    free(m->platform);
    m->platform = NULL;
}

void owned_map_free(owned_map *m)
{
    free(m->buf.images);
    free(m->buf.bytes);
    free(m->platform);
    memset(m, 0, sizeof *m);
}

/* m's platform: a copy of p[0..len). */
static int set_platform(owned_map *m, const char *p, size_t len)
{
    char *c = malloc(len + 1);
    if (!c)
        return -1;
    memcpy(c, p, len);
    c[len] = 0;
    free(m->platform);
    m->platform = c;
    m->map.platform = c;
    return 0;
}

/* A platform line's text is an image line's path field: it is written and
 * read through an image line with this start, so that both escape alike. */
static const char platform_as_image[] = "image 0x0 0x0 - ";
#define PLATFORM_AS_IMAGE (sizeof platform_as_image - 1)

void platform_line_append(strbuf *out, const char *platform)
{
    btp_image im = {.path = platform};
    strbuf line = STRBUF_INIT;
    image_line_append(&line, &im);
    if (line.len > PLATFORM_AS_IMAGE && memcmp(line.data, platform_as_image, PLATFORM_AS_IMAGE) == 0) {
        sb_adds(out, "platform ");
        sb_add(out, line.data + PLATFORM_AS_IMAGE, line.len - PLATFORM_AS_IMAGE);
    } else if (line.oom) {
        out->oom = 1;
    }
    sb_free(&line);
}

/* The platform of a `platform` line (text[0..len), after "platform "). */
static btp_status take_platform(owned_map *m, const char *text, size_t len, size_t *err_off)
{
    owned_map one = {0};
    strbuf line = STRBUF_INIT;
    sb_add(&line, platform_as_image, PLATFORM_AS_IMAGE);
    sb_add(&line, text, len);
    size_t off = 0;
    btp_status st = line.oom ? BTP_E_OUT_OF_MEMORY
                             : (owned_map_clear(&one, m->map.word_bits),
                                owned_map_image_line(&one, line.data, line.len, &off));
    if (st == BTP_OK) {
        const char *p = one.map.images[0].path;
        if (set_platform(m, p ? p : "", p ? strlen(p) : 0) < 0)
            st = BTP_E_OUT_OF_MEMORY;
    } else if (off >= PLATFORM_AS_IMAGE) {
        *err_off = off - PLATFORM_AS_IMAGE;
    }
    sb_free(&line);
    owned_map_free(&one);
    return st;
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
        size_t off = 0;
        btp_status st = BTP_OK;
        if (e - b >= 6 && memcmp(text + b, "image ", 6) == 0)
            st = owned_map_image_line(m, text + b, e - b, &off);
        else if (e - b >= 9 && memcmp(text + b, "platform ", 9) == 0) {
            st = take_platform(m, text + b + 9, e - b - 9, &off);
            off += 9;
        }
        if (st != BTP_OK) {
            *err_off = b + off;
            return st;
        }
        b = e + 1;
    }
    finish(m);
    return BTP_OK;
}

/* Append a copy of im: its path and build ID into m's bytes. */
static int add_copy(owned_map *m, const btp_image *im)
{
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

void log_map_init(log_map *lm, unsigned word_bits)
{
    memset(lm, 0, sizeof *lm);
    for (int i = 0; i < 3; i++)
        owned_map_clear(&lm->maps[i], word_bits);
    lm->given = -1;
    lm->st = BTP_END;
}

void log_map_free(log_map *lm)
{
    for (int i = 0; i < 3; i++)
        owned_map_free(&lm->maps[i]);
    owned_map_free(&lm->item);
    memset(lm, 0, sizeof *lm);
    lm->given = -1;
    lm->st = BTP_END;
}

const btp_image_map *log_map_get(log_map *lm)
{
    if (lm->st != BTP_OK)
        return NULL;
    lm->given = lm->cur;
    return &lm->maps[lm->cur].map;
}

/* A map neither the current one nor the one handed out, emptied. */
static owned_map *spare(log_map *lm, int *ix)
{
    int i = 0;
    while (i == lm->cur || i == lm->given)
        i++;
    *ix = i;
    owned_map_clear(&lm->maps[i], lm->maps[lm->cur].map.word_bits);
    return &lm->maps[i];
}

typedef struct span {
    uint64_t base, end;
} span;

static int by_base(const void *a, const void *b)
{
    const span *x = a, *y = b;
    return (x->base > y->base) - (x->base < y->base);
}

/* Whether [base, end) overlaps one of s[0..n) (sorted by base; end_max[i]
 * the largest end among s[0..i]): one of the spans that start before
 * `end` must reach past `base`. */
static int overlaps(const span *s, const uint64_t *end_max, size_t n, uint64_t base,
                    uint64_t end)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s[mid].base < end)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo > 0 && end_max[lo - 1] > base;
}

static size_t map_bytes(const owned_map *m)
{
    return m->buf.n_images * sizeof(btp_image) + m->buf.n_bytes;
}

/* A new map: the item's images, then the images of the map so far that
 * overlap none of them. It becomes the map so far (the old one is kept
 * while it is the one handed out). */
static btp_status merge(log_map *lm)
{
    const btp_image_map *item = &lm->item.map, *old = &lm->maps[lm->cur].map;
    size_t n = item->n_images;
    span *s = malloc((n + 1) * sizeof *s);
    uint64_t *end_max = malloc((n + 1) * sizeof *end_max);
    btp_status st = s && end_max ? BTP_OK : BTP_E_OUT_OF_MEMORY;
    for (size_t i = 0; st == BTP_OK && i < n; i++)
        s[i] = (span){item->images[i].base, item->images[i].end_of_text};
    if (st == BTP_OK && n) {
        qsort(s, n, sizeof *s, by_base);
        end_max[0] = s[0].end;
        for (size_t i = 1; i < n; i++)
            end_max[i] = s[i].end > end_max[i - 1] ? s[i].end : end_max[i - 1];
    }
    int ix;
    owned_map *nx = spare(lm, &ix);
    for (size_t i = 0; st == BTP_OK && i < n + old->n_images; i++) {
        const btp_image *im = i < n ? &item->images[i] : &old->images[i - n];
        if (i >= n && overlaps(s, end_max, n, im->base, im->end_of_text))
            continue;
        if (add_copy(nx, im) < 0)
            st = BTP_E_OUT_OF_MEMORY;
        else if (map_bytes(nx) > LOG_MAP_MAX_BYTES)
            st = BTP_E_META_LIMIT;
    }
    free(s);
    free(end_max);
    /* the item's platform, else the one so far */
    const char *pl = item->platform ? item->platform : old->platform;
    if (st == BTP_OK && pl && set_platform(nx, pl, strlen(pl)) < 0)
        st = BTP_E_OUT_OF_MEMORY;
    if (st == BTP_OK) {
        finish(nx);
        lm->cur = ix;
    }
    return st;
}

btp_status log_map_take(log_map *lm, const char *key, const void *data, size_t len)
{
    int kind = strcmp(key, "images") == 0 ? 2 : strcmp(key, "maps") == 0 ? 1 : 0;
    if (!kind || kind < lm->from ||
        (kind == lm->from && lm->st != BTP_OK && lm->st != BTP_END))
        return BTP_END;
    unsigned wb = lm->maps[lm->cur].map.word_bits;
    size_t off = 0;
    btp_status st = kind == 2 ? owned_map_image_lines(&lm->item, data, len, wb, &off)
                              : owned_map_procmaps(&lm->item, data, len, wb, &off);
    int ix;
    if (kind > lm->from) { /* the first item, or images replacing maps */
        spare(lm, &ix);
        lm->cur = ix;
        lm->from = kind;
    }
    if (st == BTP_OK)
        st = merge(lm);
    lm->err_off = off; /* 0 unless the item's text is at fault */
    lm->st = st;
    if (st != BTP_OK) { /* an empty map (the one handed out is left alone) */
        spare(lm, &ix);
        lm->cur = ix;
    }
    return st;
}

void image_line_append(strbuf *out, const btp_image *im)
{
    size_t n = 0;
    btp_image_line_format(im, NULL, 0, &n);
    char *d = sb_reserve(out, n + 1);
    if (d && btp_image_line_format(im, d, n, NULL) == BTP_OK) {
        d[n] = '\n';
        out->len += n + 1;
    }
}

/* A line of /proc/PID/maps text that names a file: its path (into the
 * text), the device and inode it shows, and its place in the text. */
typedef struct maps_file {
    const char *path;
    size_t len, line;
    uint64_t maj, min, ino;
} maps_file;

static int by_path_then_line(const void *a, const void *b)
{
    const maps_file *x = a, *y = b;
    int c = memcmp(x->path, y->path, x->len < y->len ? x->len : y->len);
    if (c != 0)
        return c;
    if (x->len != y->len)
        return x->len < y->len ? -1 : 1;
    return (x->line > y->line) - (x->line < y->line);
}

/* The lines of maps text t[0..len) that name a file (`START-END PERMS
 * OFFSET MAJ:MIN INODE PATH`), sorted by path and then by place: read once,
 * so that finding each image's file costs a search, not a pass over the
 * text. The text has passed the parser; each line is still read with
 * bounds, and one whose device or inode does not read is left out. NULL
 * with *n 0 when there is none; NULL with *n 1 when memory ran out. */
static maps_file *maps_files(const char *t, size_t len, size_t *n)
{
    size_t lines = 1;
    for (const char *q = t; (q = memchr(q, '\n', len - (size_t)(q - t))) != NULL; q++)
        lines++;
    maps_file *v = malloc(lines * sizeof *v);
    *n = !v;
    if (!v)
        return NULL;
    size_t k = 0;
    for (size_t b = 0, line = 0; b < len; line++) {
        const char *nl = memchr(t + b, '\n', len - b);
        size_t e = nl ? (size_t)(nl - t) : len, i = b, next = nl ? e + 1 : len;
        if (e > b && t[e - 1] == '\r')
            e--;
        const char *fld[5];
        size_t fl[5];
        for (int f = 0; f < 5; f++) {
            while (i < e && t[i] == ' ')
                i++;
            fld[f] = t + i;
            while (i < e && t[i] != ' ')
                i++;
            fl[f] = (size_t)(t + i - fld[f]);
        }
        while (i < e && (t[i] == ' ' || t[i] == '\t'))
            i++;
        const char *colon = memchr(fld[3], ':', fl[3]);
        maps_file m = {t + i, e - i, line, 0, 0, 0};
        if (i < e && colon &&
            parse_hex_digits_u64(fld[3], (size_t)(colon - fld[3]), &m.maj) == 0 &&
            parse_hex_digits_u64(colon + 1, (size_t)(fld[3] + fl[3] - colon - 1), &m.min) == 0 &&
            parse_dec_u64(fld[4], fl[4], &m.ino) == 0)
            v[k++] = m;
        b = next;
    }
    qsort(v, k, sizeof *v, by_path_then_line);
    *n = k;
    if (k == 0) {
        free(v);
        v = NULL;
    }
    return v;
}

struct maps_index {
    maps_file *files; /* maps_files() */
    size_t n;
};

maps_index *maps_index_new(const char *text, size_t len)
{
    maps_index *x = calloc(1, sizeof *x);
    if (!x)
        return NULL;
    x->files = maps_files(text, len, &x->n);
    if (!x->files && x->n) {
        free(x);
        return NULL;
    }
    return x;
}

void maps_index_free(maps_index *x)
{
    if (x)
        free(x->files);
    free(x);
}

/* The first line naming the path by a search of the sorted lines; see
 * imagemap_text.h for the answer, and why an anonymous device (major 0:
 * overlayfs, btrfs subvolumes, NFS, FUSE) leaves the inode alone to
 * decide: /proc/PID/maps shows a device there that stat() does not give. */
int maps_index_same_file(const maps_index *x, const char *path, uint64_t dev, uint64_t ino)
{
    const maps_file *files = x->files;
    size_t n = x->n;
    maps_file key = {path, strlen(path), 0, 0, 0, 0};
    size_t lo = 0, hi = n; /* the first entry not before (path, line 0) */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (by_path_then_line(&files[mid], &key) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == n || files[lo].len != key.len || memcmp(files[lo].path, path, key.len) != 0)
        return -1;
    const maps_file *m = &files[lo];
    if (m->ino == 0)
        return -1; /* no inode shown: nothing to compare */
    if (m->ino != ino)
        return 0;
    dev_t d = (dev_t)dev;
    return major(d) == 0 || (m->maj == major(d) && m->min == minor(d));
}

btp_status image_lines_from_procmaps(const char *text, size_t len, unsigned word_bits,
                                     strbuf *out, size_t *err_off)
{
    owned_map m = {0};
    btp_status st = owned_map_procmaps(&m, text, len, word_bits, err_off);
    maps_index *files = st == BTP_OK ? maps_index_new(text, len) : NULL;
    if (st == BTP_OK && !files)
        st = BTP_E_OUT_OF_MEMORY;
    for (size_t i = 0; st == BTP_OK && i < m.map.n_images; i++) {
        btp_image im = m.map.images[i];
        elf_file f;
        char why[128];
        int have = im.path && elf_open(&f, im.path, why, sizeof why) == 0;
        /* a build ID names a file: only the one that was mapped (maps text
         * from another machine, or from before the file was replaced, names
         * files this machine may hold other versions of) */
        if (have && f.build_id && maps_index_same_file(files, im.path, f.dev, f.ino) == 1) {
            im.build_id = f.build_id;
            im.build_id_len = f.build_id_len;
        }
        image_line_append(out, &im);
        if (have)
            elf_close(&f);
    }
    maps_index_free(files);
    owned_map_free(&m);
    return out->oom ? BTP_E_OUT_OF_MEMORY : st;
}
