/* Writing JSON strings (see json.h). */
#include "json.h"

#include "strbuf.h"

/* Length of the well-formed UTF-8 sequence at s[0..n) (1..4), or 0. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    size_t k;
    unsigned cp, min;
    if (c < 0x80)
        return 1;
    if ((c & 0xe0) == 0xc0)
        k = 1, cp = c & 0x1fu, min = 0x80;
    else if ((c & 0xf0) == 0xe0)
        k = 2, cp = c & 0x0fu, min = 0x800;
    else if ((c & 0xf8) == 0xf0)
        k = 3, cp = c & 0x07u, min = 0x10000;
    else
        return 0;
    if (n <= k)
        return 0;
    for (size_t i = 1; i <= k; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (s[i] & 0x3fu);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return k + 1;
}

int json_utf8_valid(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        size_t k = utf8_seq(p + i, n - i);
        if (!k)
            return 0;
        i += k;
    }
    return 1;
}

void json_put_string(strbuf *sb, const char *s, size_t n, unsigned flags)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *)s;
    sb_addc(sb, '"');
    size_t i = 0;
    while (i < n) {
        unsigned char c = p[i];
        if (c >= 0x80) {
            size_t k = utf8_seq(p + i, n - i);
            if (k) {
                sb_add(sb, p + i, k);
                i += k;
            } else {
                sb_adds(sb, "\xef\xbf\xbd");
                i++;
            }
            continue;
        }
        i++;
        switch (c) {
        case '"': sb_adds(sb, "\\\""); break;
        case '\\': sb_adds(sb, "\\\\"); break;
        case '\b': sb_adds(sb, "\\b"); break;
        case '\f': sb_adds(sb, "\\f"); break;
        case '\n': sb_adds(sb, "\\n"); break;
        case '\r': sb_adds(sb, "\\r"); break;
        case '\t': sb_adds(sb, "\\t"); break;
        case '/':
            sb_adds(sb, (flags & JSON_ESCAPE_SLASH) ? "\\/" : "/");
            break;
        default:
            if (c < 0x20) {
                char u[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
                sb_add(sb, u, 6);
            } else {
                sb_addc(sb, (char)c);
            }
        }
    }
    sb_addc(sb, '"');
}
