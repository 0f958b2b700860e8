/* The tool's JSON reader: values, exact integers, escapes, and hostile input
 * (depth, truncation, garbage) rejected with an offset. */
#include "check.h"
#include "json.h"

#include <stdlib.h>
#include <string.h>

static json_value *parse(const char *s)
{
    json_error e = {0};
    return json_parse(s, strlen(s), &e);
}

static void rejects(const char *s, size_t want_offset)
{
    json_error e = {0};
    json_value *v = json_parse(s, strlen(s), &e);
    CHECK(v == NULL, "accepted %s", s);
    CHECK(e.msg != NULL, "no message for %s", s);
    CHECK(e.offset == want_offset, "%s: offset %zu, want %zu (%s)", s, e.offset, want_offset,
          e.msg ? e.msg : "");
    json_free(v);
}

int main(void)
{
    json_value *v = parse(" {\"word_bits\":64,\"frames\":[{\"type\":\"pc\",\"addr\":\"0x1000\"},"
                          "{\"type\":\"omit\",\"count\":5}],\"truncated\":false, \"x\":null} ");
    CHECK(v && json_type_of(v) == JSON_OBJECT, "object");
    uint64_t u = 0;
    CHECK(json_u64(json_get(v, "word_bits"), &u) == 0 && u == 64, "word_bits %llu",
          (unsigned long long)u);
    const json_value *fr = json_get(v, "frames");
    CHECK(json_type_of(fr) == JSON_ARRAY && json_len(fr) == 2, "frames");
    CHECK(strcmp(json_str(json_get(json_at(fr, 0), "addr"), NULL), "0x1000") == 0, "addr");
    CHECK(json_u64(json_get(json_at(fr, 1), "count"), &u) == 0 && u == 5, "count");
    CHECK(json_at(fr, 2) == NULL, "out of range");
    CHECK(json_bool(json_get(v, "truncated")) == 0, "truncated");
    CHECK(json_type_of(json_get(v, "x")) == JSON_NULL && json_get(v, "x") != NULL, "null");
    CHECK(json_get(v, "nope") == NULL, "missing key");
    CHECK(json_len(v) == 4 && strcmp(json_key_at(v, 3), "x") == 0, "keys");
    json_free(v);

    /* Exact 64-bit integers, and what is not one. */
    v = parse("[18446744073709551615, 18446744073709551616, -1, 1.0, 1e3, 0]");
    CHECK(v && json_len(v) == 6, "numbers");
    CHECK(json_u64(json_at(v, 0), &u) == 0 && u == UINT64_MAX, "2^64-1");
    CHECK(json_u64(json_at(v, 1), &u) == -1, "2^64 overflows");
    CHECK(json_u64(json_at(v, 2), &u) == -1, "negative");
    CHECK(json_u64(json_at(v, 3), &u) == -1, "fraction");
    CHECK(json_u64(json_at(v, 4), &u) == -1, "exponent");
    CHECK(json_u64(json_at(v, 5), &u) == 0 && u == 0, "zero");
    CHECK(strcmp(json_number_text(json_at(v, 4)), "1e3") == 0, "number text");
    json_free(v);

    /* Escapes, including a surrogate pair and an embedded NUL. */
    v = parse("\"a\\n\\u00e9\\ud83d\\ude00\\u0000z\\\"\"");
    size_t n = 0;
    const char *s = json_str(v, &n);
    CHECK(s && n == 11 && memcmp(s, "a\n\xc3\xa9\xf0\x9f\x98\x80\0z\"", 11) == 0, "escapes (%zu)",
          n);
    json_free(v);

    rejects("", 0);
    rejects("{", 1);
    rejects("[1,]", 3);
    rejects("{\"a\" 1}", 5);
    rejects("\"abc", 0);
    rejects("\"\\ud800\"", 1);
    rejects("\"\\q\"", 1);
    rejects("01", 1);
    rejects("1 2", 2);
    rejects("tru", 0);
    rejects("-", 1);
    rejects("\"a\x01\"", 2);

    /* The value limit: 1 array + 3 numbers is 4 values. */
    {
        json_error e = {0};
        const char *four = "[1, 2, 3]";
        v = json_parse_limited(four, strlen(four), 4, &e);
        CHECK(v != NULL, "4 values within a limit of 4");
        json_free(v);
        CHECK(json_parse_limited(four, strlen(four), 3, &e) == NULL && e.offset == 7 &&
                  strcmp(e.msg, "too many values") == 0,
              "4 values over a limit of 3: %zu %s", e.offset, e.msg);
    }

    /* Nesting beyond the limit fails cleanly instead of exhausting the stack. */
    size_t deep = 100000;
    char *d = malloc(deep);
    CHECK(d != NULL, "malloc");
    if (d) {
        memset(d, '[', deep);
        json_error e = {0};
        CHECK(json_parse(d, deep, &e) == NULL && e.offset == JSON_MAX_DEPTH, "depth %zu",
              e.offset);
        free(d);
    }
    return check_finish();
}
