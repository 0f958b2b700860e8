/* A growable byte buffer: each trace is formatted into one before anything
 * is written, so a trace that fails half-way leaves no partial output. */
#ifndef BTPACK_TOOLS_STRBUF_H
#define BTPACK_TOOLS_STRBUF_H

#include <stddef.h>
#include <stdint.h>

typedef struct strbuf {
    char *data; /* always NUL-terminated once anything was added */
    size_t len, cap;
    int oom;    /* sticky: an allocation failed, the content is incomplete */
} strbuf;

#define STRBUF_INIT {0}

/* Make room for n more bytes; returns a pointer to them or NULL (oom set). */
char *sb_reserve(strbuf *sb, size_t n);
void sb_add(strbuf *sb, const void *p, size_t n);
void sb_addc(strbuf *sb, char c);
void sb_adds(strbuf *sb, const char *s);
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
void sb_printf(strbuf *sb, const char *fmt, ...);
/* "0x" and the lowercase hex digits of v, no leading zeros: printf's
 * "0x%llx" without its cost (trace text is millions of addresses). The
 * fmt_ forms write to d (room for 18 / 20 bytes) and return the end. */
char *fmt_hex_u64(char *d, uint64_t v);
char *fmt_dec_u64(char *d, uint64_t v);
void sb_hex_u64(strbuf *sb, uint64_t v);
void sb_dec_u64(strbuf *sb, uint64_t v);
/* Lowercase hex of bytes p[0..n). */
void sb_hex(strbuf *sb, const void *p, size_t n);
void sb_clear(strbuf *sb);
/* s[0..n) as a JSON string literal, quotes included: `"` and `\` escaped,
 * control bytes and 0x7f as \u00XX, other bytes as they are (paths are
 * bytes). */
void sb_json_string(strbuf *sb, const char *s, size_t n);

/* Grow the array *pp of elem-byte entries (capacity *cap) to hold at
 * least need entries, doubling. 0, or -1 when out of memory (the array is
 * then unchanged). */
int array_grow(void *pp, size_t *cap, size_t need, size_t elem);
void sb_free(strbuf *sb);

#endif
