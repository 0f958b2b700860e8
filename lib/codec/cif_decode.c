/*
 * CIF v0 decoder (spec/cif.md). Freestanding: no allocation, no libc; the
 * caller gives the image array and one arena for everything else.
 *
 * Arena layout: strings and build IDs grow from the front, the prefix
 * table (offset and length of each dynamic prefix's bytes in the arena)
 * from the back; they meet when the arena is full. Prefixes are bytes of
 * paths already decoded, so an expansion copies arena bytes from below the
 * write position to it, and never overlaps.
 *
 * Every read goes through need(), which checks the bytes left; counts are
 * checked against the caller's limits before they are used, and the work
 * is one step per input byte plus the bytes copied into the arena.
 */
#include "cif_internal.h"

#include "common/compiler.h"

typedef struct cif_entry {
    uint32_t off, len;
} cif_entry;

typedef struct dec {
    const uint8_t *in;
    size_t len, pos;
    unsigned policy;
    unsigned word_bits;
    uint8_t *arena;
    size_t arena_size;
    size_t used;          /* front: strings and build IDs */
    size_t n_entries;     /* back: the prefix table */
    size_t err_offset;
    size_t image;         /* image being decoded */
    size_t dropped;
    btp_cif_visitor visit;
    void *ctx;
} dec;

/* The arena holds at most 4 GiB (table entries store 32-bit offsets). */
#define CIF_ARENA_MAX ((size_t)UINT32_MAX)

static btp_status fail(dec *d, btp_status st, size_t offset)
{
    d->err_offset = offset;
    return st;
}

static void event(dec *d, btp_cif_field f, size_t offset, uint64_t value, const void *text,
                  size_t text_len)
{
    if (!d->visit)
        return;
    btp_cif_event ev = {.field = f,
                        .offset = offset,
                        .len = d->pos - offset,
                        .image = d->image,
                        .value = value,
                        .text = text,
                        .text_len = text_len};
    d->visit(d->ctx, &ev);
}

static int need(const dec *d, size_t n)
{
    return d->len - d->pos >= n;
}

static size_t arena_free(const dec *d)
{
    return d->arena_size - d->n_entries * sizeof(cif_entry) - d->used;
}

static cif_entry *entry_at(dec *d, size_t i)
{
    return (cif_entry *)(void *)(d->arena + d->arena_size - (i + 1) * sizeof(cif_entry));
}

/* Copy n bytes to the arena's front; the caller checked arena_free. */
static void arena_put(dec *d, const void *src, size_t n)
{
    const uint8_t *s = src;
    uint8_t *p = d->arena + d->used;
    for (size_t i = 0; i < n; i++)
        p[i] = s[i];
    d->used += n;
}

/*
 * A count: big-endian groups of 7 bits, bit 7 set on all but the last.
 * *wrapped gets the value as Swift computes it in a 64-bit signed integer
 * (bits shifted out are lost); the return is BTP_E_CIF_COUNT_TOO_WIDE when
 * the true value needs more than 63 bits.
 */
static btp_status read_count(dec *d, uint64_t *value, uint64_t *wrapped)
{
    size_t start = d->pos;
    uint64_t v = 0, w = 0;
    int wide = 0;
    for (;;) {
        if (!need(d, 1))
            return fail(d, BTP_E_CIF_TRUNCATED, start);
        uint8_t b = d->in[d->pos++];
        if (v >> 56)
            wide = 1;
        v = v << 7 | (b & 0x7f);
        w = w << 7 | (b & 0x7f);
        if (!(b & 0x80))
            break;
    }
    *value = v;
    *wrapped = w;
    if (wide || (v >> 63))
        return fail(d, BTP_E_CIF_COUNT_TOO_WIDE, start);
    return BTP_OK;
}

/* n (1..8) big-endian bytes, sign-extended from the first byte's top bit. */
static uint64_t read_signed(dec *d, unsigned n)
{
    const uint8_t *p = d->in + d->pos;
    uint64_t v = (p[0] & 0x80) ? ~(uint64_t)0xff | p[0] : p[0];
    for (unsigned i = 1; i < n; i++)
        v = v << 8 | p[i];
    d->pos += n;
    return v;
}

/* Well-formed UTF-8 (no overlong forms, surrogates or values past
 * U+10FFFF). */
static int valid_utf8(const uint8_t *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        uint8_t c = s[i];
        size_t k;
        uint32_t cp, min;
        if (c < 0x80) {
            i++;
            continue;
        } else if ((c & 0xe0) == 0xc0) {
            k = 1, cp = c & 0x1f, min = 0x80;
        } else if ((c & 0xf0) == 0xe0) {
            k = 2, cp = c & 0x0f, min = 0x800;
        } else if ((c & 0xf8) == 0xf0) {
            k = 3, cp = c & 0x07, min = 0x10000;
        } else {
            return 0;
        }
        if (n - i <= k)
            return 0;
        for (size_t j = 1; j <= k; j++) {
            if ((s[i + j] & 0xc0) != 0x80)
                return 0;
            cp = cp << 6 | (s[i + j] & 0x3f);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return 0;
        i += k + 1;
    }
    return 1;
}

static int has_nul(const uint8_t *s, size_t n, size_t *at)
{
    for (size_t i = 0; i < n; i++) {
        BTP_OPAQUE(i); /* not memchr: freestanding */
        if (s[i] == 0) {
            *at = i;
            return 1;
        }
    }
    return 0;
}

/* Append a prefix's bytes to the path being built. */
static btp_status expand(dec *d, uint64_t code, size_t op_offset)
{
    const uint8_t *src;
    size_t n;
    if (code < CIF_FIXED_PREFIXES) {
        src = (const uint8_t *)cif_fixed_prefixes[code];
        n = cif_fixed_prefix_len[code];
    } else if (code >= CIF_FIRST_DYNAMIC && code - CIF_FIRST_DYNAMIC < d->n_entries) {
        const cif_entry *en = entry_at(d, (size_t)(code - CIF_FIRST_DYNAMIC));
        src = d->arena + en->off;
        n = en->len;
    } else {
        return fail(d, BTP_E_CIF_BAD_PREFIX, op_offset);
    }
    if (arena_free(d) < n)
        return fail(d, BTP_E_BUFFER_TOO_SMALL, op_offset);
    arena_put(d, src, n);
    return BTP_OK;
}

/*
 * One path into the arena from d->used. Literal bytes define prefixes at
 * each separator whose position, counted from where the path's first
 * literal began, is 1 or more (the table is shared by the whole map).
 * Returns BTP_OK with *start and *n set (n == 0: no path), or the fault.
 */
static btp_status read_path_ops(dec *d, size_t *start, size_t *n, size_t *nul_at, int *nul)
{
    size_t begin = d->used, lit = 0;
    int have_lit = 0;
    *start = begin;
    *n = 0;
    *nul = 0;
    if (!need(d, 1))
        return fail(d, BTP_E_CIF_TRUNCATED, d->pos);
    if (d->in[d->pos] == CIF_OP_END) {
        d->pos++;
        event(d, BTP_CIF_F_PATH_END, d->pos - 1, 0, NULL, 0);
        return BTP_OK;
    }
    for (;;) {
        size_t op_at = d->pos;
        if (!need(d, 1))
            return fail(d, BTP_E_CIF_TRUNCATED, op_at);
        uint8_t op = d->in[d->pos++];
        if (op == CIF_OP_END) {
            event(d, BTP_CIF_F_PATH_END, op_at, 0, NULL, 0);
            break;
        }
        if (op <= CIF_OP_STR_MAX) {
            if (!need(d, op))
                return fail(d, BTP_E_CIF_TRUNCATED, op_at);
            const uint8_t *s = d->in + d->pos;
            if (d->visit) {
                btp_cif_event ev = {.field = BTP_CIF_F_PATH_STR, .offset = op_at, .len = 1u + op,
                                    .image = d->image, .value = op, .text = (const char *)s,
                                    .text_len = op};
                d->visit(d->ctx, &ev);
            }
            if (!have_lit) {
                have_lit = 1;
                lit = d->used;
            }
            for (size_t i = 0; i < op; i++) {
                if (arena_free(d) < 1)
                    return fail(d, BTP_E_BUFFER_TOO_SMALL, op_at);
                if (s[i] == 0 && !*nul) {
                    *nul = 1;
                    *nul_at = d->pos + i;
                }
                if (cif_is_separator(s[i]) && d->used > lit) {
                    /* the table entry and the byte itself */
                    if (arena_free(d) < sizeof(cif_entry) + 1)
                        return fail(d, BTP_E_BUFFER_TOO_SMALL, op_at);
                    cif_entry *en = entry_at(d, d->n_entries++);
                    en->off = (uint32_t)lit;
                    en->len = (uint32_t)(d->used - lit);
                    if (d->visit) {
                        btp_cif_event ev = {.field = BTP_CIF_F_PATH_DEFINE,
                                            .offset = d->pos + i,
                                            .image = d->image,
                                            .value = CIF_FIRST_DYNAMIC + d->n_entries - 1,
                                            .text = (const char *)d->arena + lit,
                                            .text_len = en->len};
                        d->visit(d->ctx, &ev);
                    }
                }
                d->arena[d->used++] = s[i];
            }
            d->pos += op;
        } else if (op < CIF_OP_EXPAND) {
            size_t nl = (size_t)(op & 0x3f) + 1;
            if (!need(d, 1 + nl))
                return fail(d, BTP_E_CIF_TRUNCATED, op_at);
            const uint8_t *v = d->in + d->pos, *name = v + 1;
            size_t total = 2 * nl + 23, at;
            if (arena_free(d) < total)
                return fail(d, BTP_E_BUFFER_TOO_SMALL, op_at);
            if (!*nul && has_nul(v, 1 + nl, &at)) {
                *nul = 1;
                *nul_at = d->pos + at;
            }
            size_t from = d->used;
            arena_put(d, "/", 1);
            arena_put(d, name, nl);
            arena_put(d, CIF_FRAMEWORK_MID, CIF_FRAMEWORK_MID_LEN);
            arena_put(d, v, 1);
            arena_put(d, "/", 1);
            arena_put(d, name, nl);
            d->pos += 1 + nl;
            event(d, BTP_CIF_F_PATH_FRAMEWORK, op_at, v[0], d->arena + from, total);
            break; /* the shortcut ends the path */
        } else {
            uint64_t code = op & 0x3f;
            if (op >= CIF_OP_EXPAND_LONG) {
                size_t k = (size_t)(op & 0x3f) + 1;
                if (!need(d, k))
                    return fail(d, BTP_E_CIF_TRUNCATED, op_at);
                uint64_t v = 0;
                int wide = 0;
                for (size_t i = 0; i < k; i++) {
                    if (v >> 56)
                        wide = 1;
                    v = v << 8 | d->in[d->pos + i];
                }
                d->pos += k;
                if (wide || v > UINT64_MAX - CIF_SHORT_CODES)
                    return fail(d, BTP_E_CIF_BAD_PREFIX, op_at);
                code = v + CIF_SHORT_CODES;
            }
            size_t from = d->used, at;
            btp_status st = expand(d, code, op_at);
            if (st != BTP_OK)
                return st;
            /* a prefix defined by a path the Swift policy dropped for its NUL
             * byte carries the NUL along */
            if (!*nul && has_nul(d->arena + from, d->used - from, &at)) {
                *nul = 1;
                *nul_at = op_at;
            }
            event(d, BTP_CIF_F_PATH_EXPAND, op_at, code, d->arena + from, d->used - from);
        }
    }
    *n = d->used - begin;
    return BTP_OK;
}

/* A path and its name into im. */
static btp_status read_path(dec *d, btp_image *im)
{
    size_t path_at = d->pos, start, n, nul_at = 0;
    size_t entries_before = d->n_entries;
    int nul;
    im->path = im->name = NULL;
    btp_status st = read_path_ops(d, &start, &n, &nul_at, &nul);
    if (st == BTP_OK && nul)
        st = fail(d, BTP_E_CIF_NUL_IN_STRING, nul_at);
    if (st == BTP_OK && n && (d->policy & BTP_CIF_REJECT_BAD_UTF8) &&
        !valid_utf8(d->arena + start, n))
        st = fail(d, BTP_E_CIF_BAD_UTF8, path_at);
    if (st == BTP_OK && n) {
        if (arena_free(d) < 1)
            return fail(d, BTP_E_BUFFER_TOO_SMALL, d->pos);
        d->arena[d->used++] = 0;
        const char *p = (const char *)d->arena + start;
        size_t i = n;
        while (i > 0 && !cif_is_separator((unsigned char)p[i - 1]))
            i--;
        im->path = p;
        im->name = p + i;
    }
    if (st == BTP_OK) {
        event(d, BTP_CIF_F_PATH, path_at, 0, n ? d->arena + start : NULL, n);
        return BTP_OK;
    }
    /* Swift drops an undecodable path and reads on from where it stopped
     * (prefixes the path defined stay defined, so their bytes stay). A
     * full arena is not the input's fault and always fails. */
    if (!(d->policy & BTP_CIF_LENIENT) || st == BTP_E_BUFFER_TOO_SMALL ||
        st == BTP_E_CIF_BAD_UTF8)
        return st;
    if (st == BTP_E_CIF_TRUNCATED)
        d->pos = d->len;
    if (d->n_entries == entries_before)
        d->used = start;
    d->dropped++;
    event(d, BTP_CIF_F_PATH_DROPPED, d->err_offset, st, NULL, 0);
    return BTP_OK;
}

/* Big-endian operand of n bytes, sign-extended. */
static btp_status read_operand(dec *d, unsigned n, uint64_t *v)
{
    if (!need(d, n))
        return fail(d, BTP_E_CIF_TRUNCATED, d->pos);
    *v = read_signed(d, n);
    return BTP_OK;
}

static btp_status read_image(dec *d, btp_image *im, uint64_t *prev)
{
    uint64_t mask = btp_word_mask(d->word_bits);
    size_t at = d->pos;
    if (!need(d, 1))
        return fail(d, BTP_E_CIF_TRUNCATED, at);
    uint8_t h = d->in[d->pos++];
    event(d, BTP_CIF_F_HEADER, at, h, NULL, 0);
    if ((h & CIF_HEADER_RESERVED) && (d->policy & BTP_CIF_REJECT_RESERVED_BIT))
        return fail(d, BTP_E_CIF_RESERVED_BIT, at);
    unsigned an = ((h >> 3) & 7) + 1, en = (h & 7) + 1;
    uint64_t a, off;
    at = d->pos;
    btp_status st = read_operand(d, an, &a);
    if (st != BTP_OK)
        return st;
    /* Arithmetic modulo 2^64, reduced to the word at the end: the low bits
     * are the same whether a 32-bit value was sign-extended or not. */
    uint64_t base = (h & CIF_HEADER_RELATIVE) ? *prev + a : a;
    *prev = base;
    im->base = base & mask;
    if (d->visit) {
        btp_cif_event ev = {.field = BTP_CIF_F_BASE, .offset = at, .len = an, .image = d->image,
                            .value = im->base, .relative = (h & CIF_HEADER_RELATIVE) != 0};
        d->visit(d->ctx, &ev);
    }
    at = d->pos;
    st = read_operand(d, en, &off);
    if (st != BTP_OK)
        return st;
    im->end_of_text = (base + off) & mask;
    event(d, BTP_CIF_F_END, at, im->end_of_text, NULL, 0);
    if (im->end_of_text < im->base && !(d->policy & BTP_CIF_LENIENT))
        return fail(d, BTP_E_CIF_BAD_RANGE, at);
    if (im->end_of_text == im->base && (d->policy & BTP_CIF_REJECT_EMPTY_TEXT))
        return fail(d, BTP_E_CIF_EMPTY_TEXT, at);

    at = d->pos;
    uint64_t n, wrapped;
    st = read_count(d, &n, &wrapped);
    if (st == BTP_E_CIF_COUNT_TOO_WIDE && (d->policy & BTP_CIF_LENIENT) && (wrapped >> 63)) {
        /* Swift reads a length that wrapped negative as "no build ID" */
        st = BTP_OK;
        n = 0;
    } else if (st == BTP_E_CIF_COUNT_TOO_WIDE && (d->policy & BTP_CIF_LENIENT)) {
        n = wrapped; /* what Swift would try to read: too much, surely */
        st = BTP_OK;
    }
    if (st != BTP_OK)
        return st;
    if (n > BTP_CIF_MAX_BUILD_ID && (d->policy & BTP_CIF_REJECT_LONG_BUILD_ID))
        return fail(d, BTP_E_CIF_BUILD_ID_TOO_LONG, at);
    if (!need(d, n))
        return fail(d, BTP_E_CIF_TRUNCATED, at);
    im->build_id = NULL;
    im->build_id_len = (size_t)n;
    if (n) {
        if (arena_free(d) < n)
            return fail(d, BTP_E_BUFFER_TOO_SMALL, at);
        im->build_id = d->arena + d->used;
        arena_put(d, d->in + d->pos, (size_t)n);
        d->pos += (size_t)n;
    }
    event(d, BTP_CIF_F_BUILD_ID, at, n, im->build_id, (size_t)n);
    return read_path(d, im);
}

static btp_status decode(dec *d, btp_image *images, size_t max_images, btp_image_map *map)
{
    if (d->len == 0)
        return fail(d, BTP_E_EMPTY_INPUT, 0);
    uint8_t info = d->in[0];
    if ((info & 3) == 3)
        return fail(d, BTP_E_CIF_RESERVED_SIZE, 0);
    if (info >> 2)
        return fail(d, BTP_E_CIF_BAD_VERSION, 0);
    d->word_bits = (info & 3) == 0 ? 16 : (info & 3) == 1 ? 32 : 64;
    d->pos = 1;
    event(d, BTP_CIF_F_INFO, 0, d->word_bits, NULL, 0);

    size_t at = d->pos;
    if (!need(d, 1) || !need(d, 1 + (size_t)d->in[at]))
        return fail(d, BTP_E_CIF_TRUNCATED, at);
    size_t plen = d->in[at], nul_at;
    const uint8_t *plat = d->in + at + 1;
    d->pos += 1 + plen;
    event(d, BTP_CIF_F_PLATFORM, at, plen, plat, plen);
    map->platform = NULL;
    if (has_nul(plat, plen, &nul_at)) {
        if (!(d->policy & BTP_CIF_LENIENT))
            return fail(d, BTP_E_CIF_NUL_IN_STRING, at + 1 + nul_at);
    } else {
        if ((d->policy & BTP_CIF_REJECT_BAD_UTF8) && !valid_utf8(plat, plen))
            return fail(d, BTP_E_CIF_BAD_UTF8, at);
        if (arena_free(d) < plen + 1)
            return fail(d, BTP_E_BUFFER_TOO_SMALL, at);
        map->platform = (const char *)d->arena + d->used;
        arena_put(d, plat, plen);
        arena_put(d, "", 1);
    }

    at = d->pos;
    uint64_t count, wrapped;
    btp_status st = read_count(d, &count, &wrapped);
    if (st != BTP_OK)
        return st;
    event(d, BTP_CIF_F_COUNT, at, count, NULL, 0);
    map->word_bits = d->word_bits;
    map->images = images;
    map->n_images = 0;
    uint64_t prev = 0;
    /* A count is not trusted to size anything: images are checked against
     * max_images as they come, and a count the input cannot hold runs out
     * of input first (every image takes 5 bytes or more). */
    for (uint64_t i = 0; i < count; i++) {
        if (i >= max_images)
            return fail(d, BTP_E_LIMIT, d->pos);
        d->image = (size_t)i;
        st = read_image(d, &images[i], &prev);
        if (st != BTP_OK)
            return st;
        map->n_images = (size_t)i + 1;
    }
    if (d->pos < d->len && (d->policy & BTP_CIF_REJECT_TRAILING))
        return fail(d, BTP_E_TRAILING_BYTES, d->pos);
    return BTP_OK;
}

btp_status btp_cif_walk(const void *buf, size_t len, unsigned policy, btp_image *images,
                        size_t max_images, void *arena, size_t arena_size, btp_image_map *map,
                        btp_cif_info *info, btp_cif_visitor visit, void *ctx)
{
    if (info)
        *info = (btp_cif_info){0};
    if (!map || (!buf && len) || (!images && max_images) || (!arena && arena_size))
        return BTP_E_INVALID_ARGUMENT;
    *map = (btp_image_map){.word_bits = 64};
    /* The table's entries must be aligned; the front needs no alignment. */
    size_t usable = arena_size < CIF_ARENA_MAX ? arena_size : CIF_ARENA_MAX;
    size_t misalign = (size_t)(((uintptr_t)arena + usable) % _Alignof(cif_entry));
    usable = usable >= misalign ? usable - misalign : 0;
    dec d = {.in = buf, .len = len, .policy = policy, .arena = arena, .arena_size = usable,
             .visit = visit, .ctx = ctx};
    btp_status st = decode(&d, images, max_images, map);
    if (info) {
        info->word_bits = d.word_bits;
        info->consumed = d.pos;
        info->error_offset = st == BTP_OK ? 0 : d.err_offset;
        info->arena_used = d.used + d.n_entries * sizeof(cif_entry);
        info->paths_dropped = d.dropped;
    }
    if (st != BTP_OK)
        map->n_images = 0;
    return st;
}

btp_status btp_cif_decode(const void *buf, size_t len, unsigned policy, btp_image *images,
                          size_t max_images, void *arena, size_t arena_size, btp_image_map *map,
                          btp_cif_info *info)
{
    return btp_cif_walk(buf, len, policy, images, max_images, arena, arena_size, map, info, NULL,
                        NULL);
}
