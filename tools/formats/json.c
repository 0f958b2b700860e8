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

static int read_frames(reader *r, const json_value *frames, trace *t)
{
    for (size_t i = 0; i < json_len(frames); i++) {
        const json_value *f = json_at(frames, i);
        const char *type = json_str(json_get(f, "type"), NULL);
        btp_frame fr = {0};
        if (!type || frame_kind(type, &fr.kind) < 0)
            return rd_error(r, "frame %zu: \"type\" must be \"pc\", \"ra\", \"async\" or \"omit\"",
                            i + 1);
        if (fr.kind == BTP_FRAME_OMIT) {
            if (json_u64(json_get(f, "count"), &fr.value) < 0)
                return rd_error(r, "frame %zu: \"count\" must be an integer 1..2^64-1", i + 1);
        } else {
            size_t n = 0;
            const char *a = json_str(json_get(f, "addr"), &n);
            if (!a || parse_hex_u64(a, n, &fr.value) < 0)
                return rd_error(r, "frame %zu: \"addr\" must be a string \"0x<hex>\" of 64 bits "
                                   "at most", i + 1);
        }
        if (rd_add_frame(r, t, fr, 1) < 0)
            return -1;
    }
    return 0;
}

static int json_read_line(reader *r, const char *line, size_t len, trace *t)
{
    json_error err = {0};
    json_value *v = json_parse(line, len, &err);
    if (!v)
        return rd_error(r, "column %zu: %s", err.offset + 1, err.msg);
    int rc = -1;
    uint64_t u = r->word_bits, alloc_size = 0;
    const json_value *wb = json_get(v, "word_bits");
    const json_value *frames = json_get(v, "frames");
    const json_value *tr = json_get(v, "truncated");
    const json_value *size = json_get(v, "alloc_size");
    if (json_type_of(v) != JSON_OBJECT)
        rd_error(r, "a trace must be a JSON object");
    else if (wb && (json_u64(wb, &u) < 0 || u > 64 || !btp_word_bits_valid((unsigned)u)))
        rd_error(r, "\"word_bits\" must be 16, 32 or 64");
    else if (json_type_of(frames) != JSON_ARRAY)
        rd_error(r, "\"frames\" must be an array");
    else if (tr && json_bool(tr) < 0)
        rd_error(r, "\"truncated\" must be true or false");
    else if (size && json_u64(size, &alloc_size) < 0)
        rd_error(r, "\"alloc_size\" must be an integer 0..2^64-1");
    else {
        trace_reset(t, (unsigned)u);
        t->loc = r->loc;
        t->truncated = tr ? json_bool(tr) : 0;
        t->has_alloc_size = size != NULL;
        t->alloc_size = alloc_size;
        rc = read_frames(r, frames, t) < 0 ? -1 : 1;
    }
    json_free(v);
    return rc;
}

static int json_write(writer *w, const trace *t, strbuf *out)
{
    sb_printf(out, "{\"word_bits\":%u,\"frames\":[", t->word_bits);
    for (size_t i = 0; i < t->n; i++) {
        btp_frame f = t->frames[i];
        if (f.kind == BTP_FRAME_OMIT)
            sb_printf(out, "%s{\"type\":\"omit\",\"count\":%llu}", i ? "," : "",
                      (unsigned long long)f.value);
        else
            sb_printf(out, "%s{\"type\":\"%s\",\"addr\":\"0x%llx\"}", i ? "," : "",
                      trace_kind_name(f.kind), (unsigned long long)f.value);
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
