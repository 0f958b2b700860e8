/*
 * A small generic JSON reader (RFC 8259) for the tool, the tests and the
 * fuzz targets: JSON Lines traces, golden test vectors.
 *
 * Hostile input: the parser never reads outside text[0..len), nesting is
 * limited to JSON_MAX_DEPTH, input is limited to JSON_MAX_TEXT bytes, every
 * allocation is bounded by the input length, and numbers are kept as their
 * exact text so json_u64() can convert integers up to 2^64-1 without going
 * through a double. Not thread-safe per tree; distinct trees are independent.
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
