/*
 * A small JSON reader (RFC 8259) for the tool, the tests and the fuzz
 * targets, in two layers:
 *  - a cursor (json_cursor) that walks one value in place, building
 *    nothing: the JSON Lines trace reader takes a line's frames straight
 *    into the trace with it, so memory per line is a small multiple of the
 *    line whatever it holds;
 *  - a tree (json_value), built on the cursor, for golden test vectors.
 *
 * Hostile input: the reader never reads outside text[0..len), nesting is
 * limited to JSON_MAX_DEPTH, input is limited to JSON_MAX_TEXT bytes, every
 * allocation is bounded by the input length, and numbers are kept as their
 * exact text so json_u64() can convert integers up to 2^64-1 without going
 * through a double. Not thread-safe per cursor or tree; distinct ones are
 * independent.
 */
#ifndef BTPACK_TOOLS_JSON_H
#define BTPACK_TOOLS_JSON_H

#include <stddef.h>
#include <stdint.h>

#define JSON_MAX_DEPTH 64
#define JSON_MAX_TEXT ((size_t)256 << 20) /* 256 MiB */
/* Values in one tree: each costs ~100 bytes, so this bounds the memory a
 * hostile "[0,0,0,...]" can claim (4M values: room for a trace of 1M frames
 * written as JSON). */
#define JSON_MAX_VALUES ((size_t)1 << 22)

typedef enum json_type {
    JSON_NULL,
    JSON_BOOL,
    JSON_NUMBER,
    JSON_STRING,
    JSON_ARRAY,
    JSON_OBJECT
} json_type;

typedef struct json_value json_value;

/* Where and why parsing failed. */
typedef struct json_error {
    size_t offset;   /* byte offset of the fault in the text */
    const char *msg; /* static English text */
} json_error;

/*
 * Parse exactly one JSON value from text[0..len) (white space around it is
 * allowed, anything else after it is an error). Returns the tree, to be
 * released with json_free(), or NULL with *err (may be NULL) filled: syntax
 * errors, invalid UTF-8 escapes, nesting deeper than JSON_MAX_DEPTH, input
 * longer than JSON_MAX_TEXT, more than JSON_MAX_VALUES values, or out of
 * memory.
 */
json_value *json_parse(const char *text, size_t len, json_error *err);

/* json_parse() with another limit on the number of values (>= 1). */
json_value *json_parse_limited(const char *text, size_t len, size_t max_values, json_error *err);

/* json_parse() of one line of input, its values limited by its length (one
 * per 8 bytes, and 64; real JSON Lines have one per 20 to 40), so that the
 * tree costs a small multiple of the line whatever the line holds. */
json_value *json_parse_line(const char *text, size_t len, json_error *err);

/* ---- cursor ----------------------------------------------------------- */

typedef struct json_cursor {
    const char *text;
    size_t len, pos;
    unsigned depth;       /* containers entered and not left */
    uint64_t object;      /* bit d: the container at depth d+1 is an object */
    uint64_t started;     /* bit d: it has had a member or element */
    json_error err;       /* the first error */
    int failed;
    char *buf;            /* the last string read (decoded, NUL-terminated) */
    size_t buf_cap;
} json_cursor;

/* Start at text[0..len) (an error at once if longer than JSON_MAX_TEXT). */
void json_cursor_init(json_cursor *c, const char *text, size_t len);
void json_cursor_free(json_cursor *c);

/* The first character of the next value (white space skipped), or -1 at
 * the end of the text. Tells which reader to call. */
int json_peek(json_cursor *c);

/* Enter the object or array that comes next ('{' or '['). Returns 0 or -1. */
int json_enter(json_cursor *c);

/* The next member (object: *key, *klen get its key, valid until the next
 * string is read; array: key is not touched, may be NULL) of the container
 * entered last: 1 with the cursor before its value, 0 at its end (the
 * container is left), -1 on a syntax error. */
int json_next(json_cursor *c, const char **key, size_t *klen);

/* Read a string value: 0 with *s (decoded, NUL-terminated, valid until the
 * next string is read) and *n, or -1. */
int json_string(json_cursor *c, const char **s, size_t *n);

/* Read a number value: 0 with its exact text in *text, *n, or -1. */
int json_number(json_cursor *c, const char **text, size_t *n);

/* Read true, false or null: 0 with *type (JSON_BOOL or JSON_NULL) and
 * *b, or -1. */
int json_literal(json_cursor *c, json_type *type, int *b);

/* Read and check any value, keeping nothing. 0 or -1. */
int json_skip(json_cursor *c);

/* After the value: only white space may follow. 0 or -1. */
int json_end(json_cursor *c);

/* Read a text that should hold one object: each member's key (valid until
 * the next string is read) goes to fn, which reads or skips its value and
 * returns 0, or -1 on a syntax error. Returns 1 for an object, 0 for
 * another value (checked and skipped), -1 on a syntax error (c->err); the
 * text is checked to its end (json_end) either way. */
typedef int (*json_member_fn)(void *ctx, json_cursor *c, const char *key, size_t klen);
int json_members(json_cursor *c, json_member_fn fn, void *ctx);

/* The value of a number's text that is a non-negative integer written
 * without fraction or exponent and fits 64 bits: 0 with *out, else -1. */
int json_text_u64(const char *text, size_t n, uint64_t *out);

/* ---- tree --------------------------------------------------------------- */

/* Release a tree (NULL is fine). */
void json_free(json_value *v);

/* The type of v (JSON_NULL for a NULL pointer). */
json_type json_type_of(const json_value *v);

/* The member `key` of object obj (the first one if the key is repeated), or
 * NULL when obj is not an object or has no such member. */
const json_value *json_get(const json_value *obj, const char *key);

/* Number of elements of an array or members of an object; 0 otherwise. */
size_t json_len(const json_value *v);

/* Element i of an array, or the value of member i of an object; NULL when out
 * of range or not a container. */
const json_value *json_at(const json_value *v, size_t i);

/* Key of member i of an object, or NULL. */
const char *json_key_at(const json_value *v, size_t i);

/*
 * The value of a number that is a non-negative integer written without
 * fraction or exponent and fits 64 bits. Returns 0 and sets *out on
 * success, -1 otherwise (not a number, negative, fractional, too large).
 */
int json_u64(const json_value *v, uint64_t *out);

/* The exact text of a number as written in the input, or NULL. */
const char *json_number_text(const json_value *v);

/* The decoded string (NUL-terminated; *len_out, may be NULL, gets its length,
 * which counts any embedded NUL from \u0000), or NULL if v is not a string. */
const char *json_str(const json_value *v, size_t *len_out);

/* 1 for true, 0 for false, -1 if v is not a boolean. */
int json_bool(const json_value *v);

/* Writing (json_write.c). */
struct strbuf;

enum {
    /* Write '/' as "\/", as Foundation's JSONEncoder does by default. */
    JSON_ESCAPE_SLASH = 1u << 0
};

/*
 * Append s[0..n) as a JSON string with its quotes: '"' and '\' escaped,
 * \b \f \n \r \t, other bytes below 0x20 as \u00xx (lower-case hex), the
 * rest as is, as Foundation and swift-backtrace write them. Bytes that are
 * not UTF-8 become U+FFFD (JSON text must be UTF-8).
 */
void json_put_string(struct strbuf *sb, const char *s, size_t n, unsigned flags);

/* 1 if s[0..n) is well-formed UTF-8 (what JSON text must be; the parser
 * does not check raw bytes itself). */
int json_utf8_valid(const char *s, size_t n);

#endif
