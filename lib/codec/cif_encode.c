/*
 * CIF v0 encoder. Async-signal-safe by construction: no allocation, no
 * locks, no libc calls (bytes are compared and copied by hand); only the
 * map (read), the caller's prefix table and buffer are touched.
 *
 * The choices are Swift's (spec/cif.md, "Encoder"), because they are also
 * the shortest the format's greedy path compression allows: per image the
 * shorter of absolute and relative base (absolute on a tie), minimal
 * two's-complement operands, the longest known prefix first, the framework
 * shortcut when nothing matches. The one place Swift is not minimal, its
 * counts with a redundant leading 0x80, is copied only under
 * BTP_CIF_ENC_SWIFT.
 */
#include "cif_internal.h"

#include "common/compiler.h"

/* The order is the format's: a prefix's code is its index. Code 11 has no
 * trailing backslash (an old version of Swift's document showed one; its
 * code never had it). Defined here so that the encoder stands alone. */
const char *const cif_fixed_prefixes[CIF_FIXED_PREFIXES] = {
    "/lib",
    "/usr/lib",
    "/usr/local/lib",
    "/opt/lib",
    "/System/Library/Frameworks",
    "/System/Library/PrivateFrameworks",
    "/System/iOSSupport",
    "/Library/Frameworks",
    "/System/Applications",
    "/Applications",
    "C:\\Windows\\System32",
    "C:\\Program Files",
};

const unsigned char cif_fixed_prefix_len[CIF_FIXED_PREFIXES] = {4, 8, 14, 8, 26, 33,
                                                                 18, 19, 20, 13, 19, 16};

const char *btp_cif_fixed_prefix(unsigned code)
{
    return code < CIF_FIXED_PREFIXES ? cif_fixed_prefixes[code] : NULL;
}

typedef struct enc {
    uint8_t *buf;
    size_t cap;
    size_t needed;          /* bytes of the encoding so far (also past cap) */
    unsigned flags;
    btp_cif_prefix *table;  /* dynamic prefixes known, code CIF_FIRST_DYNAMIC + i */
    size_t table_cap;
    size_t n_table;
    size_t n_defined;       /* dynamic prefixes defined (the decoder's count) */
} enc;

static unsigned bit_length(uint64_t v)
{
    return v ? 64 - btp_clz64(v) : 0;
}

/* Fewest bytes n (1..8) whose big-endian value, sign-extended to 64 bits,
 * equals v: the magnitude's bits plus a sign bit, rounded up to bytes. */
static unsigned signed_bytes(uint64_t v)
{
    uint64_t mag = v ^ (0 - (v >> 63));
    return (72 - btp_clz64(mag | 1)) / 8;
}

/* Bytes are counted always and stored while they fit: one pass gives both
 * the encoding and, when the buffer is short, the size it needs. */
static void put(enc *e, uint8_t b)
{
    if (e->needed < e->cap)
        e->buf[e->needed] = b;
    e->needed++;
}

static void put_bytes(enc *e, const void *p, size_t n)
{
    const uint8_t *s = p;
    for (size_t i = 0; i < n; i++)
        put(e, s[i]);
}

/* Big-endian, low n bytes of v. */
static void put_be(enc *e, uint64_t v, unsigned n)
{
    while (n--)
        put(e, (uint8_t)(v >> (8 * n)));
}

/* A count in big-endian groups of 7 bits, bit 7 set on all but the last.
 * Swift starts at group bit_length / 7, so a bit length that is a
 * multiple of 7 gets a leading empty group (0x80); minimal starts at the
 * first non-empty one. */
static void put_count(enc *e, uint64_t n)
{
    unsigned bits = bit_length(n);
    unsigned groups = (e->flags & BTP_CIF_ENC_SWIFT) ? bits / 7 + 1 : bits ? (bits + 6) / 7 : 1;
    while (groups--) {
        uint8_t b = (uint8_t)((n >> (7 * groups)) & 0x7f);
        put(e, groups ? (uint8_t)(b | 0x80) : b);
    }
}

static size_t str_len(const char *s)
{
    size_t n = 0;
    if (s)
        while (s[n]) {
            n++;
            BTP_OPAQUE(n);
        }
    return n;
}

static int same(const char *a, const char *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (a[i] != b[i])
            return 0;
    return 1;
}

/* A reference to prefix `code`: short for 0..63, else the long form with
 * (code - 64) in the fewest bytes, or, copying Swift's bug, in
 * max(bit_length / 8, 1) bytes (too few when the bit length is not a
 * multiple of 8; the value is cut to its low bytes). */
static void put_code(enc *e, size_t code)
{
    if (code < CIF_SHORT_CODES) {
        put(e, (uint8_t)(CIF_OP_EXPAND | code));
        return;
    }
    uint64_t v = (uint64_t)code - CIF_SHORT_CODES;
    unsigned bits = bit_length(v);
    unsigned k = (e->flags & BTP_CIF_ENC_SWIFT_BUGS) ? bits / 8 : (bits + 7) / 8;
    if (k == 0)
        k = 1;
    put(e, (uint8_t)(CIF_OP_EXPAND_LONG | (k - 1)));
    put_be(e, v, k);
}

/* Define the prefixes of a literal: at every separator past its first
 * byte, the bytes before it. Entries that do not fit the table are only
 * counted (codes must match the decoder's), never referred to. */
static void define_prefixes(enc *e, const char *lit, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        if (!cif_is_separator((unsigned char)lit[i]))
            continue;
        if (e->n_table < e->table_cap && e->n_table == e->n_defined) {
            e->table[e->n_table].s = lit;
            e->table[e->n_table].len = i;
            e->n_table++;
        }
        e->n_defined++;
    }
}

/* The longest table entry that is a byte prefix of rem (earliest on a tie);
 * returns its length and sets *code, or 0. */
static size_t longest_prefix(const enc *e, const char *rem, size_t n, size_t *code)
{
    size_t best = 0;
    for (unsigned i = 0; i < CIF_FIXED_PREFIXES; i++) {
        size_t l = cif_fixed_prefix_len[i];
        if (l > best && l <= n && rem[0] == cif_fixed_prefixes[i][0] &&
            same(rem, cif_fixed_prefixes[i], l)) {
            best = l;
            *code = i;
        }
    }
    for (size_t i = 0; i < e->n_table; i++) {
        size_t l = e->table[i].len;
        if (l > best && l <= n && rem[0] == e->table[i].s[0] && same(rem, e->table[i].s, l)) {
            best = l;
            *code = CIF_FIRST_DYNAMIC + i;
        }
    }
    return best;
}

/* The image's name as a decoder will give it back: its own, or the text
 * after the last separator of its path. */
static const char *image_name(const btp_image *im, const char *path, size_t path_len, size_t *len)
{
    if (im->name) {
        *len = str_len(im->name);
        return im->name;
    }
    size_t i = path_len;
    while (i > 0 && !cif_is_separator((unsigned char)path[i - 1]))
        i--;
    *len = path_len - i;
    return path + i;
}

/* rem is exactly "/" name ".framework/Versions/" V "/" name. Names longer
 * than 64 bytes do not fit the opcode: Swift writes the opcode anyway, cut
 * to 8 bits (corrupt; it traps past 256 bytes), which only
 * BTP_CIF_ENC_SWIFT_BUGS copies. */
static int is_framework(const enc *e, const char *rem, size_t n, const char *name, size_t nl)
{
    size_t max = (e->flags & BTP_CIF_ENC_SWIFT_BUGS) ? 256 : 64;
    if (nl < 1 || nl > max || n != 2 * nl + 23)
        return 0;
    const char *mid = rem + 1 + nl;
    return rem[0] == '/' && same(rem + 1, name, nl) &&
           same(mid, CIF_FRAMEWORK_MID, CIF_FRAMEWORK_MID_LEN) &&
           mid[CIF_FRAMEWORK_MID_LEN + 1] == '/' && same(mid + CIF_FRAMEWORK_MID_LEN + 2, name, nl);
}

static void put_path(enc *e, const btp_image *im)
{
    const char *rem = im->path;
    size_t n = str_len(rem);
    if (n == 0) {
        put(e, CIF_OP_END);
        return;
    }
    size_t name_len;
    const char *name = image_name(im, rem, n, &name_len);
    while (n > 0) {
        size_t code = 0, l = longest_prefix(e, rem, n, &code);
        if (l) {
            put_code(e, code);
            rem += l;
            n -= l;
            continue;
        }
        if (is_framework(e, rem, n, name, name_len)) {
            put(e, (uint8_t)((CIF_OP_FRAMEWORK | (name_len - 1)) & 0xff));
            put(e, (uint8_t)rem[1 + name_len + CIF_FRAMEWORK_MID_LEN]);
            put_bytes(e, name, name_len);
            return; /* the shortcut ends the path: no `end` */
        }
        define_prefixes(e, rem, n);
        while (n > 0) {
            size_t chunk = n < CIF_OP_STR_MAX ? n : CIF_OP_STR_MAX;
            put(e, (uint8_t)chunk);
            put_bytes(e, rem, chunk);
            rem += chunk;
            n -= chunk;
        }
    }
    put(e, CIF_OP_END);
}

/* Sign-extend a word-sized value to 64 bits, as Swift does before its
 * arithmetic (so 32-bit addresses from 0x80000000 up are negative). */
static uint64_t sign_extend(uint64_t v, unsigned word_bits)
{
    uint64_t sign = (uint64_t)1 << (word_bits - 1);
    return (v ^ sign) - sign;
}

size_t btp_cif_prefix_bound(const btp_image_map *map)
{
    size_t n = 1;
    if (!map || !map->images)
        return n;
    for (size_t i = 0; i < map->n_images; i++) {
        const char *p = map->images[i].path;
        if (p)
            for (; *p; p++)
                n += cif_is_separator((unsigned char)*p);
    }
    return n;
}

btp_status btp_cif_encode(const btp_image_map *map, unsigned flags, btp_cif_prefix *table,
                          size_t table_cap, void *buf, size_t cap, size_t *len_out,
                          size_t *needed_out)
{
    if (len_out)
        *len_out = 0;
    if (needed_out)
        *needed_out = 0;
    if (!map || !btp_word_bits_valid(map->word_bits) || (!map->images && map->n_images) ||
        (!buf && cap) || (!table && table_cap))
        return BTP_E_INVALID_ARGUMENT;
    unsigned w = map->word_bits;
    uint64_t mask = btp_word_mask(w);
    /* Check every image before writing: a bad one leaves nothing behind. */
    for (size_t i = 0; i < map->n_images; i++) {
        const btp_image *im = &map->images[i];
        if ((im->base & ~mask) || (im->end_of_text & ~mask))
            return BTP_E_VALUE_TOO_WIDE;
        if (im->end_of_text < im->base)
            return BTP_E_CIF_BAD_RANGE;
    }
    size_t plat_len = str_len(map->platform);
    if (plat_len > 255)
        return BTP_E_CIF_STRING_TOO_LONG;

    enc e = {.buf = buf, .cap = cap, .flags = flags, .table = table, .table_cap = table_cap};
    put(&e, (uint8_t)cif_size_code(w)); /* version 0 */
    put(&e, (uint8_t)plat_len);
    put_bytes(&e, map->platform, plat_len);
    put_count(&e, map->n_images);
    uint64_t prev = 0;
    for (size_t i = 0; i < map->n_images; i++) {
        const btp_image *im = &map->images[i];
        uint64_t base = sign_extend(im->base, w), eot = sign_extend(im->end_of_text, w);
        uint64_t delta = base - prev, offset = eot - base;
        unsigned abs_n = signed_bytes(base), rel_n = signed_bytes(delta);
        int relative = rel_n < abs_n; /* ties go absolute */
        unsigned an = relative ? rel_n : abs_n, en = signed_bytes(offset);
        put(&e, (uint8_t)((relative ? CIF_HEADER_RELATIVE : 0) | (an - 1) << 3 | (en - 1)));
        put_be(&e, relative ? delta : base, an);
        put_be(&e, offset, en);
        prev = base;
        size_t id_len = im->build_id ? im->build_id_len : 0;
        put_count(&e, id_len);
        put_bytes(&e, im->build_id, id_len);
        put_path(&e, im);
    }
    if (needed_out)
        *needed_out = e.needed;
    if (e.needed > cap)
        return BTP_E_BUFFER_TOO_SMALL;
    if (len_out)
        *len_out = e.needed;
    return BTP_OK;
}
