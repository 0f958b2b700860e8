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
