/* json: JSON Lines, one trace per line:
 *   {"word_bits":64,"frames":[{"type":"pc","addr":"0x1000"},
 *    {"type":"omit","count":5}],"truncated":false}
 * plus "alloc_size":N when the trace carries one. Other keys are ignored on
 * input (so the golden vector files read directly). */
#include "format.h"

#include <string.h>

#include "json.h"

static int frame_kind(const char *s, btp_frame_kind *k)
{
    static const btp_frame_kind kinds[] = {BTP_FRAME_PC, BTP_FRAME_RA, BTP_FRAME_ASYNC,
                                           BTP_FRAME_OMIT};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (strcmp(s, trace_kind_name(kinds[i])) == 0) {
            *k = kinds[i];
            return 0;
        }
    return -1;
}

/* A syntax error at the cursor. */
static int syntax_error(reader *r, const json_cursor *c)
{
    return rd_error(r, "column %zu: %s", c->err.offset + 1, c->err.msg);
}

/* Read a number member's value as an integer 0..2^64-1: 1, 0 when it is
 * some other valid value, -1 on a syntax error. */
static int read_u64(json_cursor *c, uint64_t *v)
{
    const char *text;
    size_t n;
    if (json_peek(c) == '-' || (json_peek(c) >= '0' && json_peek(c) <= '9'))
        return json_number(c, &text, &n) < 0 ? -1 : json_text_u64(text, n, v) == 0;
    return json_skip(c) < 0 ? -1 : 0;
}

/* One element of "frames" into t: each key is read where it stands (the
 * first of a repeated key counts, as json_get() would have it), the frame
 * is judged once the object is read. Returns 0, -1 (rd_error). */
static int read_frame(reader *r, json_cursor *c, size_t i, trace *t)
{
    char type[8] = "";      /* up to "async"; longer is no kind */
    int have_type = 0, addr_state = 0, count_state = 0; /* 0 absent, 1 good, 2 bad */
    uint64_t addr = 0, count = 0;
    if (json_peek(c) == '{') {
        const char *key, *str;
        size_t klen, n;
        int more;
        if (json_enter(c) < 0)
            return syntax_error(r, c);
        while ((more = json_next(c, &key, &klen)) == 1) {
            int which = klen == 4 && memcmp(key, "type", 4) == 0    ? 1
                        : klen == 4 && memcmp(key, "addr", 4) == 0  ? 2
                        : klen == 5 && memcmp(key, "count", 5) == 0 ? 3
                                                                    : 0;
            if ((which == 1 && have_type) || (which == 2 && addr_state) ||
                (which == 3 && count_state))
                which = 0; /* a repeated key: the first counts */
            if (which == 1 || which == 2) {
                if (json_peek(c) != '"') {
                    if (json_skip(c) < 0)
                        return syntax_error(r, c);
                    if (which == 1)
                        have_type = 2;
                    else
                        addr_state = 2;
                    continue;
                }
                if (json_string(c, &str, &n) < 0)
                    return syntax_error(r, c);
                if (which == 1) {
                    have_type = n < sizeof type && strlen(str) == n ? 1 : 2;
                    if (have_type == 1)
                        memcpy(type, str, n + 1);
                } else {
                    addr_state = parse_hex_u64(str, n, &addr) == 0 ? 1 : 2;
                }
            } else if (which == 3) {
                int got = read_u64(c, &count);
                if (got < 0)
                    return syntax_error(r, c);
                count_state = got ? 1 : 2;
            } else if (json_skip(c) < 0) {
                return syntax_error(r, c);
            }
        }
        if (more < 0)
            return syntax_error(r, c);
    } else if (json_skip(c) < 0) {
        return syntax_error(r, c);
    }
    btp_frame fr = {0};
    if (have_type != 1 || frame_kind(type, &fr.kind) < 0)
        return rd_error(r, "frame %zu: \"type\" must be \"pc\", \"ra\", \"async\" or \"omit\"",
                        i + 1);
    if (fr.kind == BTP_FRAME_OMIT) {
        if (count_state != 1)
            return rd_error(r, "frame %zu: \"count\" must be an integer 1..2^64-1", i + 1);
        fr.value = count;
    } else {
        if (addr_state != 1)
            return rd_error(r, "frame %zu: \"addr\" must be a string \"0x<hex>\" of 64 bits "
                               "at most", i + 1);
        fr.value = addr;
    }
    return rd_add_frame(r, t, fr, 1);
}

/* The scalar members of a line, and where its frames are. Members: 0
 * absent, 1 present and good, 2 present and bad (the first of a key counts). */
typedef struct line_members {
    int wb, fr, tr, sz;
    uint64_t u, alloc_size, frames_at;
    int truncated;
} line_members;

static int take_member(void *ctx, json_cursor *c, const char *key, size_t klen)
{
    line_members *m = ctx;
    int k = klen == 9 && memcmp(key, "word_bits", 9) == 0      ? (m->wb ? 0 : 1)
            : klen == 6 && memcmp(key, "frames", 6) == 0       ? (m->fr ? 0 : 2)
            : klen == 9 && memcmp(key, "truncated", 9) == 0    ? (m->tr ? 0 : 3)
            : klen == 10 && memcmp(key, "alloc_size", 10) == 0 ? (m->sz ? 0 : 4)
                                                               : 0;
    int got = 0;
    if (k == 1 || k == 4) {
        got = read_u64(c, k == 1 ? &m->u : &m->alloc_size);
        if (k == 1 && got == 1 && (m->u > 64 || !btp_word_bits_valid((unsigned)m->u)))
            got = 0;
        if (k == 1)
            m->wb = got ? 1 : 2;
        else
            m->sz = got ? 1 : 2;
    } else if (k == 2) {
        m->fr = json_peek(c) == '[' ? 1 : 2;
        m->frames_at = c->pos;
        got = json_skip(c) < 0 ? -1 : 1;
    } else if (k == 3) {
        json_type type;
        int b = 0;
        int ch = json_peek(c);
        if (ch == 't' || ch == 'f' || ch == 'n')
            got = json_literal(c, &type, &b) < 0 ? -1 : type == JSON_BOOL;
        else
            got = json_skip(c) < 0 ? -1 : 0;
        m->tr = got ? 1 : 2;
        m->truncated = b;
    } else {
        got = json_skip(c) < 0 ? -1 : 1;
    }
    return got < 0 ? -1 : 0;
}

/*
 * A line is read twice with a cursor, building nothing: first the whole
 * object is checked and its scalar members taken (word_bits must be known
 * before frames are checked against it, and it may come after them), then
 * the frames go one by one into the trace. Memory: the line and the trace.
 */
static int json_read_line(reader *r, const char *line, size_t len, trace *t)
{
    json_cursor c;
    json_cursor_init(&c, line, len);
    int rc = -1, more;
    line_members m = {.u = r->word_bits};
    int is_object = json_members(&c, take_member, &m);
    if (is_object < 0)
        goto syntax;
    if (!is_object)
        rd_error(r, "a trace must be a JSON object");
    else if (m.wb == 2)
        rd_error(r, "\"word_bits\" must be 16, 32 or 64");
    else if (m.fr != 1)
        rd_error(r, "\"frames\" must be an array");
    else if (m.tr == 2)
        rd_error(r, "\"truncated\" must be true or false");
    else if (m.sz == 2)
        rd_error(r, "\"alloc_size\" must be an integer 0..2^64-1");
    else {
        trace_reset(t, (unsigned)m.u);
        t->loc = r->loc;
        t->truncated = m.truncated;
        t->has_alloc_size = m.sz == 1;
        t->alloc_size = m.alloc_size;
        /* second pass: the frames, straight into the trace */
        json_cursor_free(&c);
        json_cursor_init(&c, line, len);
        c.pos = (size_t)m.frames_at;
        if (json_enter(&c) < 0)
            goto syntax;
        size_t i = 0;
        while ((more = json_next(&c, NULL, NULL)) == 1)
            if (read_frame(r, &c, i++, t) < 0)
                goto out;
        rc = more < 0 ? syntax_error(r, &c) : 1;
    }
    goto out;
syntax:
    syntax_error(r, &c);
out:
    json_cursor_free(&c);
    return rc;
}

static int json_write(writer *w, const trace *t, strbuf *out)
{
    sb_printf(out, "{\"word_bits\":%u,\"frames\":[", t->word_bits);
    const char *sep = "";
    for (size_t i = 0; i < t->n_runs; i++) {
        btp_frame f = t->runs[i].frame;
        for (uint64_t c = 0; c < t->runs[i].count; c++) {
            if (f.kind == BTP_FRAME_OMIT)
                sb_printf(out, "%s{\"type\":\"omit\",\"count\":%llu}", sep,
                          (unsigned long long)f.value);
            else
                sb_printf(out, "%s{\"type\":\"%s\",\"addr\":\"0x%llx\"}", sep,
                          trace_kind_name(f.kind), (unsigned long long)f.value);
            sep = ",";
            if ((c & 4095) == 4095 && wr_spill(w, out) < 0)
                return -1;
        }
        if (wr_spill(w, out) < 0)
            return -1;
    }
    sb_printf(out, "],\"truncated\":%s", t->truncated ? "true" : "false");
    if (t->has_alloc_size)
        sb_printf(out, ",\"alloc_size\":%llu", (unsigned long long)t->alloc_size);
    sb_adds(out, "}\n");
    return 0;
}

const format fmt_json = {
    .name = "json",
    .help = "JSON Lines: {\"word_bits\":64,\"frames\":[{\"type\":\"pc\",\"addr\":\"0x1000\"},...],"
            "\"truncated\":false}",
    .read_line = json_read_line,
    .write = json_write,
};
