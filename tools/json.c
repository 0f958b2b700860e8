/*
 * JSON reader: a cursor that walks a value in place, and a tree built on it
 * by recursive descent with an explicit depth limit.
 *
 * Every read goes through peek()/the bounds in the cursor, so the reader
 * never looks past text[len). Strings are decoded into one buffer the
 * cursor reuses; containers of the tree grow geometrically, their size
 * bounded by the number of bytes in the input, which is bounded by
 * JSON_MAX_TEXT. Recursion depth (tree, skip and free) is bounded by
 * JSON_MAX_DEPTH.
 */
#include "json.h"

#include <stdlib.h>
#include <string.h>

struct json_value {
    json_type type;
    int boolean;
    char *str;        /* string contents or number text (NUL-terminated) */
    size_t str_len;
    json_value **items; /* array elements / object values */
    char **keys;        /* object keys (NULL for arrays) */
    size_t n, cap;
};

/* ---- cursor ----------------------------------------------------------- */

static int fail(json_cursor *c, size_t at, const char *msg)
{
    if (!c->failed) {
        c->failed = 1;
        c->err.offset = at;
        c->err.msg = msg;
    }
    return -1;
}

static int peek_char(const json_cursor *c)
{
    return c->pos < c->len ? (unsigned char)c->text[c->pos] : -1;
}

static void skip_ws(json_cursor *c)
{
    while (c->pos < c->len) {
        char ch = c->text[c->pos];
        if (ch != ' ' && ch != '\t' && ch != '\n' && ch != '\r')
            break;
        c->pos++;
    }
}

void json_cursor_init(json_cursor *c, const char *text, size_t len)
{
    memset(c, 0, sizeof *c);
    c->text = text;
    c->len = len;
    if (!text && len)
        fail(c, 0, "no text");
    else if (len > JSON_MAX_TEXT)
        fail(c, 0, "text too long");
}

void json_cursor_free(json_cursor *c)
{
    free(c->buf);
    c->buf = NULL;
    c->buf_cap = 0;
}

int json_peek(json_cursor *c)
{
    if (c->failed)
        return -1;
    skip_ws(c);
    return peek_char(c);
}

int json_enter(json_cursor *c)
{
    int ch = json_peek(c);
    if (ch != '{' && ch != '[')
        return fail(c, c->pos, ch == -1 ? "unexpected end of input" : "unexpected character");
    if (c->depth >= JSON_MAX_DEPTH)
        return fail(c, c->pos, "nesting too deep");
    uint64_t bit = (uint64_t)1 << c->depth;
    c->object = ch == '{' ? c->object | bit : c->object & ~bit;
    c->started &= ~bit;
    c->depth++;
    c->pos++;
    return 0;
}

static int hex4(json_cursor *c, size_t at, unsigned *out)
{
    if (c->len - at < 4)
        return fail(c, at, "truncated \\u escape");
    unsigned v = 0;
    for (size_t i = 0; i < 4; i++) {
        char ch = c->text[at + i];
        unsigned d;
        if (ch >= '0' && ch <= '9')
            d = (unsigned)(ch - '0');
        else if (ch >= 'a' && ch <= 'f')
            d = (unsigned)(ch - 'a' + 10);
        else if (ch >= 'A' && ch <= 'F')
            d = (unsigned)(ch - 'A' + 10);
        else
            return fail(c, at + i, "bad hex digit in \\u escape");
        v = v << 4 | d;
    }
    *out = v;
    return 0;
}

static size_t put_utf8(char *o, unsigned cp)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xc0 | cp >> 6);
        o[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xe0 | cp >> 12);
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        o[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    o[0] = (char)(0xf0 | cp >> 18);
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
    o[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

/* Decode the string at c->pos (which is '"') into c->buf. The decoded text
 * is never longer than the quoted text, so one buffer of that size
 * suffices. */
static int read_string(json_cursor *c, const char **s, size_t *len_out)
{
    size_t start = ++c->pos, end = start;
    while (end < c->len && c->text[end] != '"') {
        if (c->text[end] == '\\')
            end++;
        end++;
    }
    if (end >= c->len)
        return fail(c, start - 1, "unterminated string");
    if (end - start + 1 > c->buf_cap) {
        char *b = realloc(c->buf, end - start + 1);
        if (!b)
            return fail(c, start, "out of memory");
        c->buf = b;
        c->buf_cap = end - start + 1;
    }
    char *out = c->buf;
    size_t o = 0, i = start;
    while (i < end) {
        unsigned char ch = (unsigned char)c->text[i];
        if (ch < 0x20)
            return fail(c, i, "control character in string");
        if (ch != '\\') {
            out[o++] = (char)ch;
            i++;
            continue;
        }
        char e = c->text[i + 1]; /* i + 1 < end: the scan above paired it */
        const char *simple = strchr("\"\\/bfnrt", e);
        if (e && simple) {
            static const char repl[] = "\"\\/\b\f\n\r\t";
            out[o++] = repl[simple - "\"\\/bfnrt"];
            i += 2;
            continue;
        }
        if (e != 'u')
            return fail(c, i, "bad escape in string");
        unsigned cp;
        if (hex4(c, i + 2, &cp) < 0)
            return -1;
        size_t esc = 6;
        if (cp >= 0xdc00 && cp <= 0xdfff)
            return fail(c, i, "lone low surrogate in string");
        if (cp >= 0xd800 && cp <= 0xdbff) {
            unsigned lo;
            if (end - i < 12 || c->text[i + 6] != '\\' || c->text[i + 7] != 'u')
                return fail(c, i, "lone high surrogate in string");
            if (hex4(c, i + 8, &lo) < 0)
                return -1;
            if (lo < 0xdc00 || lo > 0xdfff)
                return fail(c, i + 6, "bad low surrogate in string");
            cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
            esc = 12;
        }
        /* 6 escape bytes give at most 3 UTF-8 bytes, 12 give 4. */
        o += put_utf8(out + o, cp);
        i += esc;
    }
    out[o] = 0;
    *s = out;
    *len_out = o;
    c->pos = end + 1;
    return 0;
}

int json_next(json_cursor *c, const char **key, size_t *klen)
{
    if (c->failed || c->depth == 0)
        return -1;
    uint64_t bit = (uint64_t)1 << (c->depth - 1);
    int object = (c->object & bit) != 0;
    char close = object ? '}' : ']';
    skip_ws(c);
    int ch = peek_char(c);
    if (ch == close) {
        c->pos++;
        c->depth--;
        return 0;
    }
    if (c->started & bit) {
        if (ch != ',')
            return fail(c, c->pos, object ? "',' or '}' expected" : "',' or ']' expected");
        c->pos++;
    }
    c->started |= bit;
    if (!object)
        return 1;
    skip_ws(c);
    if (peek_char(c) != '"')
        return fail(c, c->pos, "object key expected");
    const char *k;
    size_t n;
    if (read_string(c, &k, &n) < 0)
        return -1;
    skip_ws(c);
    if (peek_char(c) != ':')
        return fail(c, c->pos, "':' expected");
    c->pos++;
    if (key)
        *key = k;
    if (klen)
        *klen = n;
    return 1;
}

int json_string(json_cursor *c, const char **s, size_t *n)
{
    int ch = json_peek(c);
    if (ch != '"')
        return fail(c, c->pos, ch == -1 ? "unexpected end of input" : "string expected");
    return read_string(c, s, n);
}

static int is_digit(int ch)
{
    return ch >= '0' && ch <= '9';
}

int json_number(json_cursor *c, const char **text, size_t *n)
{
    if (json_peek(c) == -1 && !c->failed)
        return fail(c, c->pos, "unexpected end of input");
    if (c->failed)
        return -1;
    size_t start = c->pos;
    if (peek_char(c) == '-')
        c->pos++;
    if (peek_char(c) == '0') {
        c->pos++;
    } else if (is_digit(peek_char(c))) {
        while (is_digit(peek_char(c)))
            c->pos++;
    } else {
        return fail(c, c->pos, "bad number");
    }
    if (peek_char(c) == '.') {
        c->pos++;
        if (!is_digit(peek_char(c)))
            return fail(c, c->pos, "bad number: digit expected after '.'");
        while (is_digit(peek_char(c)))
            c->pos++;
    }
    if (peek_char(c) == 'e' || peek_char(c) == 'E') {
        c->pos++;
        if (peek_char(c) == '+' || peek_char(c) == '-')
            c->pos++;
        if (!is_digit(peek_char(c)))
            return fail(c, c->pos, "bad number: digit expected in exponent");
        while (is_digit(peek_char(c)))
            c->pos++;
    }
    *text = c->text + start;
    *n = c->pos - start;
    return 0;
}

int json_literal(json_cursor *c, json_type *type, int *b)
{
    static const struct {
        const char *word;
        json_type type;
        int b;
    } lits[] = {{"true", JSON_BOOL, 1}, {"false", JSON_BOOL, 0}, {"null", JSON_NULL, 0}};
    if (json_peek(c) == -1)
        return fail(c, c->pos, "unexpected end of input");
    for (size_t i = 0; i < sizeof lits / sizeof lits[0]; i++) {
        size_t n = strlen(lits[i].word);
        if (c->text[c->pos] == lits[i].word[0] && c->len - c->pos >= n &&
            memcmp(c->text + c->pos, lits[i].word, n) == 0) {
            c->pos += n;
            *type = lits[i].type;
            *b = lits[i].b;
            return 0;
        }
    }
    return fail(c, c->pos, "unexpected character");
}

int json_skip(json_cursor *c)
{
    int ch = json_peek(c);
    const char *s;
    size_t n;
    json_type t;
    int b;
    switch (ch) {
    case -1:
        return fail(c, c->pos, "unexpected end of input");
    case '{':
    case '[': {
        if (json_enter(c) < 0)
            return -1;
        int more;
        while ((more = json_next(c, NULL, NULL)) == 1)
            if (json_skip(c) < 0) /* depth: bounded by JSON_MAX_DEPTH */
                return -1;
        return more;
    }
    case '"':
        return read_string(c, &s, &n);
    case 't':
    case 'f':
    case 'n':
        return json_literal(c, &t, &b);
    default:
        if (ch == '-' || is_digit(ch))
            return json_number(c, &s, &n);
        return fail(c, c->pos, "unexpected character");
    }
}

int json_end(json_cursor *c)
{
    if (c->failed)
        return -1;
    skip_ws(c);
    return c->pos == c->len ? 0 : fail(c, c->pos, "unexpected text after the value");
}

int json_members(json_cursor *c, json_member_fn fn, void *ctx)
{
    int is_object = json_peek(c) == '{', more;
    if (is_object) {
        const char *key;
        size_t klen;
        if (json_enter(c) < 0)
            return -1;
        while ((more = json_next(c, &key, &klen)) == 1)
            if (fn(ctx, c, key, klen) < 0)
                return -1;
        if (more < 0)
            return -1;
    } else if (json_skip(c) < 0) {
        return -1;
    }
    return json_end(c) < 0 ? -1 : is_object;
}

int json_text_u64(const char *text, size_t n, uint64_t *out)
{
    uint64_t x = 0;
    if (n == 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        char ch = text[i];
        if (!is_digit((unsigned char)ch))
            return -1; /* '-', '.', 'e' */
        unsigned d = (unsigned)(ch - '0');
        if (x > (UINT64_MAX - d) / 10)
            return -1;
        x = x * 10 + d;
    }
    *out = x;
    return 0;
}

/* ---- tree ------------------------------------------------------------- */

typedef struct builder {
    json_cursor c;
    size_t values, max_values; /* values made so far, and the limit */
} builder;

void json_free(json_value *v)
{
    if (!v)
        return;
    for (size_t i = 0; i < v->n; i++) {
        json_free(v->items[i]);
        if (v->keys)
            free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    free(v->str);
    free(v);
}

static json_value *new_value(builder *b, json_type t)
{
    json_value *v = calloc(1, sizeof *v);
    if (!v) {
        fail(&b->c, b->c.pos, "out of memory");
        return NULL;
    }
    v->type = t;
    return v;
}

static char *copy_text(builder *b, const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (!d) {
        fail(&b->c, b->c.pos, "out of memory");
        return NULL;
    }
    memcpy(d, s, n);
    d[n] = 0;
    return d;
}

/* Append item (and key for objects) to container c; takes ownership. */
static int append(builder *b, json_value *c, char *key, json_value *item)
{
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 4;
        json_value **items = realloc(c->items, cap * sizeof *items);
        if (!items)
            goto oom;
        c->items = items;
        if (c->type == JSON_OBJECT) {
            char **keys = realloc(c->keys, cap * sizeof *keys);
            if (!keys)
                goto oom;
            c->keys = keys;
        }
        c->cap = cap;
    }
    c->items[c->n] = item;
    if (c->type == JSON_OBJECT)
        c->keys[c->n] = key;
    c->n++;
    return 0;
oom:
    free(key);
    json_free(item);
    return fail(&b->c, b->c.pos, "out of memory");
}

static json_value *build(builder *b)
{
    json_cursor *c = &b->c;
    int ch = json_peek(c);
    if (ch != -1 && b->values++ >= b->max_values) {
        fail(c, c->pos, "too many values");
        return NULL;
    }
    const char *s;
    size_t n;
    json_value *v = NULL;
    switch (ch) {
    case -1:
        fail(c, c->pos, "unexpected end of input");
        return NULL;
    case '{':
    case '[': {
        if (!(v = new_value(b, ch == '{' ? JSON_OBJECT : JSON_ARRAY)))
            return NULL;
        if (json_enter(c) < 0)
            break;
        int more;
        while ((more = json_next(c, &s, &n)) == 1) {
            char *key = NULL;
            if (v->type == JSON_OBJECT && !(key = copy_text(b, s, n)))
                break;
            json_value *item = build(b); /* depth: bounded by JSON_MAX_DEPTH */
            if (!item) {
                free(key);
                break;
            }
            if (append(b, v, key, item) < 0)
                break;
        }
        if (more == 0)
            return v;
        break;
    }
    case '"':
        if (!(v = new_value(b, JSON_STRING)) || json_string(c, &s, &n) < 0 ||
            !(v->str = copy_text(b, s, n)))
            break;
        v->str_len = n;
        return v;
    case 't':
    case 'f':
    case 'n': {
        json_type t;
        int bo;
        if (json_literal(c, &t, &bo) < 0 || !(v = new_value(b, t)))
            break;
        v->boolean = bo;
        return v;
    }
    default:
        if (ch != '-' && !is_digit(ch)) {
            fail(c, c->pos, "unexpected character");
            return NULL;
        }
        if (json_number(c, &s, &n) < 0 || !(v = new_value(b, JSON_NUMBER)) ||
            !(v->str = copy_text(b, s, n)))
            break;
        v->str_len = n;
        return v;
    }
    json_free(v);
    return NULL;
}

json_value *json_parse(const char *text, size_t len, json_error *err)
{
    return json_parse_limited(text, len, JSON_MAX_VALUES, err);
}

json_value *json_parse_limited(const char *text, size_t len, size_t max_values, json_error *err)
{
    builder b = {.max_values = max_values};
    json_cursor_init(&b.c, text, len);
    json_value *v = b.c.failed ? NULL : build(&b);
    if (v && json_end(&b.c) < 0) {
        json_free(v);
        v = NULL;
    }
    if (!v && err)
        *err = b.c.err;
    json_cursor_free(&b.c);
    return v;
}

json_value *json_parse_line(const char *text, size_t len, json_error *err)
{
    return json_parse_limited(text, len, len / 8 + 64, err);
}

json_type json_type_of(const json_value *v)
{
    return v ? v->type : JSON_NULL;
}

const json_value *json_get(const json_value *obj, const char *key)
{
    if (!obj || obj->type != JSON_OBJECT || !key)
        return NULL;
    for (size_t i = 0; i < obj->n; i++)
        if (strcmp(obj->keys[i], key) == 0)
            return obj->items[i];
    return NULL;
}

size_t json_len(const json_value *v)
{
    return v && (v->type == JSON_ARRAY || v->type == JSON_OBJECT) ? v->n : 0;
}

const json_value *json_at(const json_value *v, size_t i)
{
    return i < json_len(v) ? v->items[i] : NULL;
}

const char *json_key_at(const json_value *v, size_t i)
{
    return v && v->type == JSON_OBJECT && i < v->n ? v->keys[i] : NULL;
}

int json_u64(const json_value *v, uint64_t *out)
{
    if (!v || v->type != JSON_NUMBER || !out)
        return -1;
    return json_text_u64(v->str, v->str_len, out);
}

const char *json_number_text(const json_value *v)
{
    return v && v->type == JSON_NUMBER ? v->str : NULL;
}

const char *json_str(const json_value *v, size_t *len_out)
{
    if (!v || v->type != JSON_STRING)
        return NULL;
    if (len_out)
        *len_out = v->str_len;
    return v->str;
}

int json_bool(const json_value *v)
{
    return v && v->type == JSON_BOOL ? v->boolean : -1;
}
