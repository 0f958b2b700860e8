/* Growable byte buffer (see strbuf.h). */
#include "strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *sb_reserve(strbuf *sb, size_t n)
{
    if (sb->oom)
        return NULL;
    if (n >= SIZE_MAX / 2 - sb->len) {
        sb->oom = 1;
        return NULL;
    }
    if (sb->len + n + 1 > sb->cap) {
        size_t cap = sb->cap ? sb->cap : 256;
        while (cap < sb->len + n + 1)
            cap *= 2;
        char *d = realloc(sb->data, cap);
        if (!d) {
            sb->oom = 1;
            return NULL;
        }
        sb->data = d;
        sb->cap = cap;
    }
    return sb->data + sb->len;
}

void sb_add(strbuf *sb, const void *p, size_t n)
{
    char *d = sb_reserve(sb, n);
    if (!d)
        return;
    if (n)
        memcpy(d, p, n);
    sb->len += n;
    sb->data[sb->len] = 0;
}

void sb_addc(strbuf *sb, char c)
{
    sb_add(sb, &c, 1);
}

void sb_adds(strbuf *sb, const char *s)
{
    sb_add(sb, s, strlen(s));
}

void sb_printf(strbuf *sb, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
        sb->oom = 1;
        return;
    }
    char *d = sb_reserve(sb, (size_t)n);
    if (!d)
        return;
    va_start(ap, fmt);
    vsnprintf(d, (size_t)n + 1, fmt, ap);
    va_end(ap);
    sb->len += (size_t)n;
}

/* The 8 hex digits of x (32 bits) as ASCII bytes, most significant
 * digit in the most significant byte. SWAR: spread the nibbles to one per
 * byte, then add '0', plus 'a' - '0' - 10 where a nibble is over 9. */
static uint64_t hex8(uint32_t x)
{
    uint64_t v = x;
    v = (v | v << 16) & 0x0000ffff0000ffffull;
    v = (v | v << 8) & 0x00ff00ff00ff00ffull;
    v = (v | v << 4) & 0x0f0f0f0f0f0f0f0full;
    uint64_t over9 = ((v + 0x0606060606060606ull) >> 4) & 0x0101010101010101ull;
    return v + 0x3030303030303030ull + over9 * ('a' - '0' - 10);
}

/* v as 8 bytes, most significant first: one store */
static void put_be64(char *d, uint64_t v)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    v = __builtin_bswap64(v);
    memcpy(d, &v, 8);
#elif defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    memcpy(d, &v, 8);
#else
    for (int i = 0; i < 8; i++)
        d[i] = (char)(v >> (56 - 8 * i));
#endif
}

char *fmt_hex_u64(char *d, uint64_t v)
{
    /* The digits go out in at most two 8-byte stores, each shifted so that
     * its first byte is a significant digit (d has room for 18 bytes): no
     * loop per digit, no scratch buffer to read back. */
    unsigned n = v ? (unsigned)(67 - __builtin_clzll(v)) / 4 : 1; /* hex digits */
    d[0] = '0';
    d[1] = 'x';
    if (n <= 8) {
        put_be64(d + 2, hex8((uint32_t)v) << (8 * (8 - n)));
    } else {
        put_be64(d + 2, hex8((uint32_t)(v >> 32)) << (8 * (16 - n)));
        put_be64(d + 2 + (n - 8), hex8((uint32_t)v));
    }
    return d + 2 + n;
}

char *fmt_dec_u64(char *d, uint64_t v)
{
    char t[20];
    unsigned n = 0;
    do {
        t[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (unsigned i = 0; i < n; i++)
        d[i] = t[n - 1 - i];
    return d + n;
}

void sb_hex_u64(strbuf *sb, uint64_t v)
{
    char *d = sb_reserve(sb, 18);
    if (d) {
        sb->len += (size_t)(fmt_hex_u64(d, v) - d);
        sb->data[sb->len] = 0;
    }
}

void sb_dec_u64(strbuf *sb, uint64_t v)
{
    char *d = sb_reserve(sb, 20);
    if (d) {
        sb->len += (size_t)(fmt_dec_u64(d, v) - d);
        sb->data[sb->len] = 0;
    }
}

void sb_hex(strbuf *sb, const void *p, size_t n)
{
    static const char digits[] = "0123456789abcdef";
    const uint8_t *b = p;
    char *d = sb_reserve(sb, 2 * n);
    if (!d)
        return;
    for (size_t i = 0; i < n; i++) {
        d[2 * i] = digits[b[i] >> 4];
        d[2 * i + 1] = digits[b[i] & 15];
    }
    sb->len += 2 * n;
    sb->data[sb->len] = 0;
}

void sb_clear(strbuf *sb)
{
    sb->len = 0;
    if (sb->data)
        sb->data[0] = 0;
}

void sb_json_string(strbuf *sb, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    sb_addc(sb, '"');
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') {
            sb_addc(sb, '\\');
            sb_addc(sb, (char)c);
        } else if (c < 0x20 || c == 0x7f) {
            char e[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
            sb_add(sb, e, 6);
        } else {
            sb_addc(sb, (char)c);
        }
    }
    sb_addc(sb, '"');
}

void sb_free(strbuf *sb)
{
    free(sb->data);
    *sb = (strbuf)STRBUF_INIT;
}

int array_grow(void *pp, size_t *cap, size_t need, size_t elem)
{
    void **p = pp;
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap : 64;
    while (c < need) {
        if (c > SIZE_MAX / 2 / elem)
            return -1;
        c *= 2;
    }
    void *q = realloc(*p, c * elem);
    if (!q)
        return -1;
    *p = q;
    *cap = c;
    return 0;
}
