/* /proc/PID/maps text -> image map (imagemap.h). Freestanding: the
 * grouping of mappings into images keeps a few open candidates on the
 * stack and copies a path into the caller's storage only once its image is
 * known to hold code. */
#include "image/image_internal.h"

#include <string.h>

/* Images still being built (a file's mappings are consecutive in practice;
 * looking back this far also covers a few interleaved ones). */
#define OPEN_MAX 8

typedef struct candidate {
    const char *path; /* into the text; NULL for [vdso] */
    size_t path_len;
    uint64_t inode;
    uint64_t base, end_of_text;
    int has_exec;
    size_t last_line; /* line number of its latest mapping */
} candidate;

typedef struct parse {
    btp_image_buf *buf;
    candidate open[OPEN_MAX];
    size_t n_open;
} parse;

static void commit(parse *ps, const candidate *c)
{
    if (!c->has_exec)
        return; /* data files: not code, not an image */
    btp_image *im = btp_image_buf_image(ps->buf);
    char *path = NULL;
    if (c->path) {
        path = btp_image_buf_bytes(ps->buf, c->path_len + 1);
        if (path) {
            memcpy(path, c->path, c->path_len);
            path[c->path_len] = 0;
        }
    }
    if (!im)
        return;
    memset(im, 0, sizeof *im);
    im->name = c->path ? NULL : "[vdso]";
    im->path = path;
    im->base = c->base;
    im->end_of_text = c->end_of_text;
}

/* A new open candidate, committing the oldest when all slots are taken. */
static candidate *open_candidate(parse *ps)
{
    if (ps->n_open == OPEN_MAX) {
        commit(ps, &ps->open[0]);
        /* One at a time, no memmove (see btp_image_same_bytes). */
        for (size_t k = 1; k < OPEN_MAX; k++) {
            BTP_OPAQUE(k);
            ps->open[k - 1] = ps->open[k];
        }
        ps->n_open--;
    }
    candidate *c = &ps->open[ps->n_open++];
    memset(c, 0, sizeof *c);
    return c;
}

static int same_file(const candidate *c, const char *path, size_t len, uint64_t inode)
{
    if (!c->path || !path)
        return !c->path && !path;
    return c->inode == inode && c->path_len == len && btp_image_same_bytes(c->path, path, len);
}

static int is_space(char c)
{
    return c == ' ' || c == '\t';
}

btp_status btp_procmaps_line(const char *t, size_t b, size_t e, unsigned word_bits,
                             btp_procmaps_fields *f, size_t *at)
{
    uint64_t dev;
    size_t i = b;
    const uint64_t mask = btp_word_mask(word_bits);
    if (e > b && t[e - 1] == '\r')
        e--;
#define EXPECT(cond)                                                                               \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            *at = i;                                                                               \
            return BTP_E_MAPS_SYNTAX;                                                              \
        }                                                                                          \
    } while (0)
    EXPECT(btp_image_parse_hex(t, e, &i, &f->start) == 0);
    EXPECT(i < e && t[i] == '-');
    i++;
    size_t end_at = i;
    EXPECT(btp_image_parse_hex(t, e, &i, &f->end) == 0);
    if (f->start > mask || f->end > mask) {
        *at = f->start > mask ? b : end_at;
        return BTP_E_VALUE_TOO_WIDE;
    }
    if (f->start >= f->end) {
        *at = end_at;
        return BTP_E_MAPS_SYNTAX;
    }
    EXPECT(i < e && t[i] == ' ');
    i++;
    EXPECT(e - i >= 4);
    const char *perm = t + i;
    EXPECT((perm[0] == 'r' || perm[0] == '-') && (perm[1] == 'w' || perm[1] == '-') &&
           (perm[2] == 'x' || perm[2] == '-') && (perm[3] == 'p' || perm[3] == 's'));
    memcpy(f->perms, perm, 4);
    i += 4;
    EXPECT(i < e && t[i] == ' ');
    i++;
    EXPECT(btp_image_parse_hex(t, e, &i, &f->offset) == 0);
    EXPECT(i < e && t[i] == ' ');
    i++;
    EXPECT(btp_image_parse_hex(t, e, &i, &dev) == 0);
    EXPECT(i < e && t[i] == ':');
    i++;
    EXPECT(btp_image_parse_hex(t, e, &i, &dev) == 0);
    EXPECT(i < e && t[i] == ' ');
    i++;
    size_t digits = 0;
    f->inode = 0;
    for (; i < e && t[i] >= '0' && t[i] <= '9'; i++, digits++) {
        EXPECT(digits < 20 && f->inode <= (UINT64_MAX - 9) / 10);
        f->inode = f->inode * 10 + (uint64_t)(t[i] - '0');
    }
    EXPECT(digits > 0);
    EXPECT(i == e || is_space(t[i]));
#undef EXPECT
    while (i < e && is_space(t[i]))
        i++;
    for (size_t k = i; k < e; k++)
        if (t[k] == 0) { /* the kernel never writes one; a C string would be cut there */
            *at = k;
            return BTP_E_MAPS_SYNTAX;
        }
    f->path = t + i;
    f->path_len = e - i;
    return BTP_OK;
}

/* One line text[b..e) (no newline). Returns BTP_OK or an error with *at. */
static btp_status parse_line(parse *ps, const char *t, size_t b, size_t e, unsigned word_bits,
                             size_t lineno, size_t *at)
{
    btp_procmaps_fields f;
    btp_status st = btp_procmaps_line(t, b, e, word_bits, &f, at);
    if (st != BTP_OK)
        return st;
    const uint64_t start = f.start, end = f.end, offset = f.offset, inode = f.inode;
    const int exec = f.perms[2] == 'x';
    const char *path = f.path;
    size_t path_len = f.path_len;
    int vdso = path_len == 6 && btp_image_same_bytes(path, "[vdso]", 6);
    if (!vdso && (path_len == 0 || path[0] != '/'))
        return BTP_OK; /* anonymous memory, [heap], [stack], [vvar], ... */
    if (vdso)
        path = NULL, path_len = 0;

    candidate *c = NULL;
    if (offset != 0 || vdso) {
        /* a file's later mappings lie above where it starts; one below
         * cannot be of the same load (and would end the image's text
         * before its base) */
        for (size_t k = ps->n_open; k-- > 0;)
            if (same_file(&ps->open[k], path, path_len, inode) && start >= ps->open[k].base) {
                c = &ps->open[k];
                break;
            }
    } else if (!exec && ps->n_open) {
        /* a file smaller than a page maps its data at offset 0 again, on
         * the line after its code */
        candidate *last = &ps->open[ps->n_open - 1];
        if (last->has_exec && last->last_line + 1 == lineno &&
            same_file(last, path, path_len, inode))
            c = last;
    }
    if (!c) {
        c = open_candidate(ps);
        c->path = path;
        c->path_len = path_len;
        c->inode = inode;
        /* without its offset-0 mapping: where offset 0 would be */
        c->base = offset <= start ? start - offset : start;
    }
    c->last_line = lineno;
    if (exec) {
        c->has_exec = 1;
        if (end > c->end_of_text)
            c->end_of_text = end;
    }
    return BTP_OK;
}

btp_status btp_image_map_from_procmaps(const char *text, size_t len, unsigned word_bits,
                                       btp_image_buf *buf, btp_image_map *map,
                                       size_t *error_offset)
{
    if (!buf || !map || (!text && len) || !btp_word_bits_valid(word_bits))
        return BTP_E_INVALID_ARGUMENT;
    parse ps;
    memset(&ps, 0, sizeof ps);
    ps.buf = buf;
    size_t lineno = 0, at = 0;
    btp_status st = BTP_OK;
    for (size_t b = 0; b < len && st == BTP_OK; lineno++) {
        size_t e = b;
        while (e < len && text[e] != '\n')
            e++;
        size_t k = b;
        while (k < e && (is_space(text[k]) || text[k] == '\r'))
            k++;
        if (k < e) /* not blank */
            st = parse_line(&ps, text, b, e, word_bits, lineno, &at);
        b = e + 1;
    }
    if (st != BTP_OK) {
        if (error_offset)
            *error_offset = at;
        return st;
    }
    for (size_t k = 0; k < ps.n_open; k++)
        commit(&ps, &ps.open[k]);
    return btp_image_buf_finish(buf, word_bits, map);
}
