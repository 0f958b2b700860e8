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

char *fmt_hex_u64(char *d, uint64_t v)
{
    /* two digits per step from a table of "00".."ff" */
    static const char pairs[513] =
        "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
        "202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f"
        "404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f"
        "606162636465666768696a6b6c6d6e6f707172737475767778797a7b7c7d7e7f"
        "808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f"
        "a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebf"
        "c0c1c2c3c4c5c6c7c8c9cacbcccdcecfd0d1d2d3d4d5d6d7d8d9dadbdcdddedf"
        "e0e1e2e3e4e5e6e7e8e9eaebecedeeeff0f1f2f3f4f5f6f7f8f9fafbfcfdfeff";
    unsigned n = v ? (unsigned)(67 - __builtin_clzll(v)) / 4 : 1; /* hex digits */
    d[0] = '0';
    d[1] = 'x';
    char *end = d + 2 + n, *e = end;
    for (; e - d > 3; v >>= 8) {
        e -= 2;
        memcpy(e, pairs + 2 * (v & 0xff), 2);
    }
    if (e - d == 3)
        *--e = "0123456789abcdef"[v & 15];
    return end;
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

void sb_free(strbuf *sb)
{
    free(sb->data);
    *sb = (strbuf)STRBUF_INIT;
}
