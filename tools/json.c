/*
 * JSON reader: recursive descent with an explicit depth limit.
 *
 * Every read goes through peek()/the bounds in the parser struct, so the
 * parser never looks past text[len). Containers grow geometrically; their
 * size is bounded by the number of bytes in the input, which is bounded by
 * JSON_MAX_TEXT. Recursion depth (parse and free) is bounded by
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

typedef struct parser {
    const char *text;
    size_t len, pos;
    size_t values, max_values; /* values made so far, and the limit */
    json_error err;
    int failed;
} parser;

static json_value *fail(parser *p, size_t at, const char *msg)
{
    if (!p->failed) {
        p->failed = 1;
        p->err.offset = at;
        p->err.msg = msg;
    }
    return NULL;
}

static int peek(const parser *p)
{
    return p->pos < p->len ? (unsigned char)p->text[p->pos] : -1;
}

static void skip_ws(parser *p)
{
    while (p->pos < p->len) {
        char c = p->text[p->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
            break;
        p->pos++;
    }
}

static json_value *new_value(parser *p, json_type t)
{
    json_value *v = calloc(1, sizeof *v);
    if (!v)
        return fail(p, p->pos, "out of memory");
    v->type = t;
    return v;
}

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

/* Append item (and key for objects) to container c; takes ownership. */
static int append(parser *p, json_value *c, char *key, json_value *item)
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
    fail(p, p->pos, "out of memory");
    return -1;
}

static int hex4(parser *p, size_t at, unsigned *out)
{
    if (p->len - at < 4) {
        fail(p, at, "truncated \\u escape");
        return -1;
    }
    unsigned v = 0;
    for (size_t i = 0; i < 4; i++) {
        char c = p->text[at + i];
        unsigned d;
        if (c >= '0' && c <= '9')
            d = (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            d = (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            d = (unsigned)(c - 'A' + 10);
        else {
            fail(p, at + i, "bad hex digit in \\u escape");
            return -1;
        }
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

/* Parse a string at p->pos (which is '"'). The decoded text is never longer
 * than the quoted text, so one allocation of that size suffices. */
static char *parse_string(parser *p, size_t *len_out)
{
    size_t start = ++p->pos, end = start;
    while (end < p->len && p->text[end] != '"') {
        if (p->text[end] == '\\')
            end++;
        end++;
    }
    if (end >= p->len) {
        fail(p, start - 1, "unterminated string");
        return NULL;
    }
    char *out = malloc(end - start + 1);
    if (!out) {
        fail(p, start, "out of memory");
        return NULL;
    }
    size_t o = 0, i = start;
    while (i < end) {
        unsigned char c = (unsigned char)p->text[i];
        if (c < 0x20) {
            fail(p, i, "control character in string");
            goto bad;
        }
        if (c != '\\') {
            out[o++] = (char)c;
            i++;
            continue;
        }
        char e = p->text[i + 1]; /* i + 1 < end: the scan above paired it */
        const char *simple = strchr("\"\\/bfnrt", e);
        if (e && simple) {
            static const char repl[] = "\"\\/\b\f\n\r\t";
            out[o++] = repl[simple - "\"\\/bfnrt"];
            i += 2;
            continue;
        }
        if (e != 'u') {
            fail(p, i, "bad escape in string");
            goto bad;
        }
        unsigned cp;
        if (hex4(p, i + 2, &cp) < 0)
            goto bad;
        size_t esc = 6;
        if (cp >= 0xdc00 && cp <= 0xdfff) {
            fail(p, i, "lone low surrogate in string");
            goto bad;
        }
        if (cp >= 0xd800 && cp <= 0xdbff) {
            unsigned lo;
            if (end - i < 12 || p->text[i + 6] != '\\' || p->text[i + 7] != 'u') {
                fail(p, i, "lone high surrogate in string");
                goto bad;
            }
            if (hex4(p, i + 8, &lo) < 0)
                goto bad;
            if (lo < 0xdc00 || lo > 0xdfff) {
                fail(p, i + 6, "bad low surrogate in string");
                goto bad;
            }
            cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
            esc = 12;
        }
        /* 6 escape bytes give at most 3 UTF-8 bytes, 12 give 4. */
        o += put_utf8(out + o, cp);
        i += esc;
    }
    out[o] = 0;
    *len_out = o;
    p->pos = end + 1;
    return out;
bad:
    free(out);
    return NULL;
}

static int is_digit(int c)
{
    return c >= '0' && c <= '9';
}

static json_value *parse_number(parser *p)
{
    size_t start = p->pos;
    if (peek(p) == '-')
        p->pos++;
    if (peek(p) == '0') {
        p->pos++;
    } else if (is_digit(peek(p))) {
        while (is_digit(peek(p)))
            p->pos++;
    } else {
        return fail(p, p->pos, "bad number");
    }
    if (peek(p) == '.') {
        p->pos++;
        if (!is_digit(peek(p)))
            return fail(p, p->pos, "bad number: digit expected after '.'");
        while (is_digit(peek(p)))
            p->pos++;
    }
    if (peek(p) == 'e' || peek(p) == 'E') {
        p->pos++;
        if (peek(p) == '+' || peek(p) == '-')
            p->pos++;
        if (!is_digit(peek(p)))
            return fail(p, p->pos, "bad number: digit expected in exponent");
        while (is_digit(peek(p)))
            p->pos++;
    }
    json_value *v = new_value(p, JSON_NUMBER);
    if (!v)
        return NULL;
    v->str_len = p->pos - start;
    v->str = malloc(v->str_len + 1);
    if (!v->str) {
        json_free(v);
        return fail(p, start, "out of memory");
    }
    memcpy(v->str, p->text + start, v->str_len);
    v->str[v->str_len] = 0;
    return v;
}

static json_value *parse_value(parser *p, unsigned depth);

static json_value *parse_container(parser *p, unsigned depth, json_type t)
{
    char close = t == JSON_ARRAY ? ']' : '}';
    if (depth >= JSON_MAX_DEPTH)
        return fail(p, p->pos, "nesting too deep");
    json_value *c = new_value(p, t);
    if (!c)
        return NULL;
    p->pos++;
    skip_ws(p);
    if (peek(p) == close) {
        p->pos++;
        return c;
    }
    for (;;) {
        char *key = NULL;
        skip_ws(p);
        if (t == JSON_OBJECT) {
            size_t klen;
            if (peek(p) != '"') {
                fail(p, p->pos, "object key expected");
                break;
            }
            if (!(key = parse_string(p, &klen)))
                break;
            skip_ws(p);
            if (peek(p) != ':') {
                free(key);
                fail(p, p->pos, "':' expected");
                break;
            }
            p->pos++;
        }
        json_value *item = parse_value(p, depth + 1);
        if (!item) {
            free(key);
            break;
        }
        if (append(p, c, key, item) < 0)
            break;
        skip_ws(p);
        if (peek(p) == ',') {
            p->pos++;
            continue;
        }
        if (peek(p) == close) {
            p->pos++;
            return c;
        }
        fail(p, p->pos, t == JSON_ARRAY ? "',' or ']' expected" : "',' or '}' expected");
        break;
    }
    json_free(c);
    return NULL;
}

static json_value *parse_literal(parser *p, const char *word, json_type t, int b)
{
    size_t n = strlen(word);
    if (p->len - p->pos < n || memcmp(p->text + p->pos, word, n) != 0)
        return fail(p, p->pos, "unexpected character");
    p->pos += n;
    json_value *v = new_value(p, t);
    if (v)
        v->boolean = b;
    return v;
}

static json_value *parse_value(parser *p, unsigned depth)
{
    skip_ws(p);
    int c = peek(p);
    if (c != -1 && p->values++ >= p->max_values)
        return fail(p, p->pos, "too many values");
    switch (c) {
    case -1:
        return fail(p, p->pos, "unexpected end of input");
    case '{':
        return parse_container(p, depth, JSON_OBJECT);
    case '[':
        return parse_container(p, depth, JSON_ARRAY);
    case '"': {
        size_t at = p->pos, n;
        char *s = parse_string(p, &n);
        if (!s)
            return NULL;
        json_value *v = new_value(p, JSON_STRING);
        if (!v) {
            free(s);
            return fail(p, at, "out of memory");
        }
        v->str = s;
        v->str_len = n;
        return v;
    }
    case 't':
        return parse_literal(p, "true", JSON_BOOL, 1);
    case 'f':
        return parse_literal(p, "false", JSON_BOOL, 0);
    case 'n':
        return parse_literal(p, "null", JSON_NULL, 0);
    default:
        if (c == '-' || is_digit(c))
            return parse_number(p);
        return fail(p, p->pos, "unexpected character");
    }
}

json_value *json_parse(const char *text, size_t len, json_error *err)
{
    return json_parse_limited(text, len, JSON_MAX_VALUES, err);
}

json_value *json_parse_limited(const char *text, size_t len, size_t max_values, json_error *err)
{
    parser p = {.text = text, .len = len, .max_values = max_values};
    json_value *v = NULL;
    if (!text && len)
        fail(&p, 0, "no text");
    else if (len > JSON_MAX_TEXT)
        fail(&p, 0, "text too long");
    else if ((v = parse_value(&p, 0)) != NULL) {
        skip_ws(&p);
        if (p.pos != p.len) {
            json_free(v);
            v = fail(&p, p.pos, "unexpected text after the value");
        }
    }
    if (!v && err)
        *err = p.err;
    return v;
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
    uint64_t x = 0;
    for (size_t i = 0; i < v->str_len; i++) {
        char c = v->str[i];
        if (!is_digit((unsigned char)c))
            return -1; /* '-', '.', 'e' */
        unsigned d = (unsigned)(c - '0');
        if (x > (UINT64_MAX - d) / 10)
            return -1;
        x = x * 10 + d;
    }
    *out = x;
    return 0;
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
