/* swift-crashlog: the JSON crash log Swift's swift-backtrace writes
 * (SWIFT_BACKTRACE=enable=yes,format=json), one per line.
 *
 * Reading: lines that do not start with '{' are skipped (the runtime's
 * "*** Signal 11: Backtracing ..." banner and the program's own output go
 * to the same stream); a line that does must be a crash log
 * ("kind":"crashReport"). Each thread becomes a trace, the crashed one
 * first, then the others in the log's order (--thread crashed: only the
 * crashed one; --thread N: thread N of the log, counted from 0). The log's
 * images are every trace's image map (its platform the log's); frames
 * marked "inlined" are left out (symbolication repeats the captured
 * address once per inlined function, the last copy being the real frame);
 * a "truncated" frame, which must be last, marks the trace truncated; an
 * address written "null" is 0. Word size: from the architecture (x86_64,
 * arm64: 64; i386, arm: 32), else --word-bits.
 *
 * Writing: the layout of swift-backtrace 6.3.1, field for field, with what
 * a trace carries: threads (name, crashed, frames as kind and address) and
 * every image of the image map. Consecutive traces from one input line
 * with one image map (the threads of one crash log) make one log; other
 * traces one log each. What btpack does not know is written as such:
 * timestamp 1970-01-01T00:00:00.000000Z, description "Backtrace",
 * faultAddress 0, backtraceTime 0.0. */
#include "format.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "swift_common.h"

/* ---- reading ---------------------------------------------------------- */

/* A crash log read, and its image map (which points into it). */
typedef struct crash_log {
    json_value *tree;
    int have_map;
    btp_image_map map;
    btp_image *images;
    unsigned char *ids;   /* the images' build IDs */
} crash_log;

typedef struct crash_rstate {
    /* The log being handed out, thread by thread, in the one of the two not
     * handed out last: the map given with the last thread stays as it was
     * until a thread of another log is given (a symbolizer compares the two
     * to see a change: sym_set_map()). */
    crash_log logs[2];
    int cur, given;       /* given: -1 before the first thread */
    size_t *order;        /* indexes of its threads still to hand out */
    size_t n_order, next;
    unsigned word_bits;
    const char *arch;
} crash_rstate;

static int crash_open(reader *r)
{
    crash_rstate *s = calloc(1, sizeof(crash_rstate));
    r->state = s;
    if (!s)
        return rd_error(r, "out of memory");
    s->given = -1;
    return 0;
}

static void free_log(crash_log *l)
{
    json_free(l->tree);
    free(l->images);
    free(l->ids);
    memset(l, 0, sizeof *l);
}

/* Done with the current log (the one handed out last is kept). */
static void forget_log(crash_rstate *s)
{
    if (s->cur != s->given)
        free_log(&s->logs[s->cur]);
    free(s->order);
    s->order = NULL;
    s->n_order = s->next = 0;
}

static void crash_close(reader *r)
{
    crash_rstate *s = r->state;
    if (s) {
        forget_log(s);
        free_log(&s->logs[0]);
        free_log(&s->logs[1]);
    }
    free(s);
    r->state = NULL;
}

/* A string member (NULL when absent or empty); a present one must be a
 * UTF-8 string without NUL bytes (Swift's JSON decoder refuses other
 * bytes too). */
static int opt_str(reader *r, const json_value *obj, const char *key, const char *what,
                   const char **out)
{
    const json_value *v = json_get(obj, key);
    size_t n = 0;
    *out = NULL;
    if (!v)
        return 0;
    const char *s = json_str(v, &n);
    if (!s || strlen(s) != n || !json_utf8_valid(s, n))
        return rd_error(r, "%s: \"%s\" must be a UTF-8 string without NUL", what, key);
    *out = n ? s : NULL;
    return 0;
}

/* "0x" and 1..16 hex digits that fit the word size. */
static int hex_addr(reader *r, const json_value *v, unsigned word_bits, const char *what,
                    uint64_t *out)
{
    size_t n = 0;
    const char *s = json_str(v, &n);
    if (!s || parse_hex_u64(s, n, out) < 0)
        return rd_error(r, "%s must be a string \"0x<hex>\" of 64 bits at most", what);
    if (*out > btp_word_mask(word_bits))
        return rd_error(r, "%s 0x%llx does not fit %u bits", what, (unsigned long long)*out,
                        word_bits);
    return 0;
}

static int read_images(reader *r, crash_rstate *s, crash_log *l, const json_value *list)
{
    size_t n = json_len(list), id_bytes = 0;
    for (size_t i = 0; i < n; i++) {
        size_t len = 0;
        if (json_str(json_get(json_at(list, i), "buildId"), &len))
            id_bytes += len / 2;
    }
    l->images = calloc(n ? n : 1, sizeof *l->images);
    l->ids = malloc(id_bytes ? id_bytes : 1);
    if (!l->images || !l->ids)
        return rd_error(r, "out of memory");
    unsigned char *id = l->ids;
    for (size_t i = 0; i < n; i++) {
        const json_value *im = json_at(list, i);
        btp_image *out = &l->images[i];
        char what[48];
        snprintf(what, sizeof what, "image %zu", i);
        if (json_type_of(im) != JSON_OBJECT)
            return rd_error(r, "%s must be an object", what);
        if (opt_str(r, im, "name", what, &out->name) < 0 ||
            opt_str(r, im, "path", what, &out->path) < 0)
            return -1;
        snprintf(what, sizeof what, "image %zu: \"baseAddress\"", i);
        if (hex_addr(r, json_get(im, "baseAddress"), s->word_bits, what, &out->base) < 0)
            return -1;
        snprintf(what, sizeof what, "image %zu: \"endOfText\"", i);
        if (hex_addr(r, json_get(im, "endOfText"), s->word_bits, what, &out->end_of_text) < 0)
            return -1;
        if (out->end_of_text < out->base)
            return rd_error(r, "image %zu: \"endOfText\" is below \"baseAddress\"", i);
        size_t len = 0;
        const json_value *bid = json_get(im, "buildId");
        const char *hex = json_str(bid, &len);
        if (bid && (!hex || len % 2))
            return rd_error(r, "image %zu: \"buildId\" must be a string of hex digit pairs", i);
        if (len / 2 > BTP_IMAGE_MAX_BUILD_ID)
            return rd_error(r, "image %zu: \"buildId\" of %zu bytes, longer than the %d btpack keeps",
                            i, len / 2, BTP_IMAGE_MAX_BUILD_ID);
        out->build_id = len ? id : NULL;
        out->build_id_len = len / 2;
        for (size_t k = 0; k < len; k += 2) {
            int hi = hex_digit(hex[k]), lo = hex_digit(hex[k + 1]);
            if (hi < 0 || lo < 0)
                return rd_error(r, "image %zu: \"buildId\" must be a string of hex digit pairs",
                                i);
            *id++ = (unsigned char)(hi << 4 | lo);
        }
    }
    l->map.images = l->images;
    l->map.n_images = n;
    return 0;
}

/* The threads to hand out, in order. */
static int choose_threads(reader *r, crash_rstate *s, const json_value *threads)
{
    size_t n = json_len(threads), crashed = n;
    for (size_t i = 0; i < n; i++) {
        const json_value *c = json_get(json_at(threads, i), "crashed");
        if (c && json_bool(c) < 0)
            return rd_error(r, "thread %zu: \"crashed\" must be true or false", i);
        if (c && json_bool(c) == 1 && crashed == n)
            crashed = i;
    }
    s->order = malloc((n ? n : 1) * sizeof *s->order);
    if (!s->order)
        return rd_error(r, "out of memory");
    switch (r->opt->thread_sel) {
    case CLI_THREADS_CRASHED:
        if (crashed == n)
            return rd_error(r, "no thread is marked \"crashed\" (see --thread)");
        s->order[s->n_order++] = crashed;
        break;
    case CLI_THREADS_INDEX:
        if (r->opt->thread_index >= n)
            return rd_error(r, "--thread %zu: the log has %zu thread%s", r->opt->thread_index, n,
                            n == 1 ? "" : "s");
        s->order[s->n_order++] = r->opt->thread_index;
        break;
    default:
        if (crashed < n)
            s->order[s->n_order++] = crashed;
        for (size_t i = 0; i < n; i++)
            if (i != crashed)
                s->order[s->n_order++] = i;
    }
    return 0;
}

static int start_log(reader *r, crash_rstate *s, const char *line, size_t len)
{
    json_error err = {0};
    forget_log(s);
    s->cur = s->given == 0;
    crash_log *l = &s->logs[s->cur];
    free_log(l);
    l->tree = json_parse_line(line, len, &err);
    if (!l->tree)
        return rd_error(r, "column %zu: %s", err.offset + 1, err.msg);
    const json_value *log = l->tree, *threads = json_get(log, "threads"),
                     *images = json_get(log, "images");
    size_t n = 0;
    const char *kind = json_str(json_get(log, "kind"), &n);
    if (json_type_of(log) != JSON_OBJECT || !kind || strcmp(kind, "crashReport") != 0)
        return rd_error(r, "not a swift-backtrace crash log (needs \"kind\": \"crashReport\")");
    if (opt_str(r, log, "architecture", "crash log", &s->arch) < 0)
        return -1;
    if (!s->arch)
        return rd_error(r, "crash log: \"architecture\" is missing");
    s->word_bits = swift_arch_word_bits(s->arch);
    if (!s->word_bits)
        s->word_bits = r->word_bits;
    if (json_type_of(threads) != JSON_ARRAY)
        return rd_error(r, "crash log: \"threads\" must be an array");
    l->map = (btp_image_map){.word_bits = s->word_bits};
    if (opt_str(r, log, "platform", "crash log", &l->map.platform) < 0)
        return -1;
    l->have_map = images != NULL;
    if (images && json_type_of(images) != JSON_ARRAY)
        return rd_error(r, "crash log: \"images\" must be an array");
    if (images && read_images(r, s, l, images) < 0)
        return -1;
    return choose_threads(r, s, threads);
}

static const struct {
    const char *name;
    btp_frame_kind kind;
} frame_kinds[] = {
    {"programCounter", BTP_FRAME_PC},
    {"returnAddress", BTP_FRAME_RA},
    {"asyncResumePoint", BTP_FRAME_ASYNC},
    {"omittedFrames", BTP_FRAME_OMIT},
};

static int read_thread(reader *r, crash_rstate *s, size_t index, trace *t)
{
    crash_log *l = &s->logs[s->cur];
    const json_value *th = json_at(json_get(l->tree, "threads"), index);
    const json_value *frames = json_get(th, "frames");
    trace_reset(t, s->word_bits);
    t->loc = r->loc;
    if (json_type_of(th) != JSON_OBJECT || json_type_of(frames) != JSON_ARRAY)
        return rd_error(r, "thread %zu: needs a \"frames\" array", index);
    char what[64];
    snprintf(what, sizeof what, "thread %zu", index);
    if (opt_str(r, th, "name", what, &t->thread_name) < 0)
        return -1;
    t->crashed = json_bool(json_get(th, "crashed")) == 1;
    for (size_t i = 0; i < json_len(frames); i++) {
        const json_value *f = json_at(frames, i);
        const char *kind = json_str(json_get(f, "kind"), NULL);
        if (!kind)
            return rd_error(r, "thread %zu, frame %zu: \"kind\" must be a string", index, i);
        if (t->truncated)
            return rd_error(r, "thread %zu, frame %zu: frames after \"truncated\"", index, i);
        if (strcmp(kind, "truncated") == 0) {
            t->truncated = 1;
            continue;
        }
        const json_value *inl = json_get(f, "inlined");
        if (inl && json_bool(inl) < 0)
            return rd_error(r, "thread %zu, frame %zu: \"inlined\" must be true or false",
                            index, i);
        if (json_bool(inl) == 1)
            continue; /* the real frame follows, with the same address */
        size_t k = 0;
        while (k < sizeof frame_kinds / sizeof frame_kinds[0] &&
               strcmp(kind, frame_kinds[k].name) != 0)
            k++;
        if (k == sizeof frame_kinds / sizeof frame_kinds[0])
            return rd_error(r, "thread %zu, frame %zu: unknown kind \"%s\"", index, i, kind);
        btp_frame fr = {.kind = frame_kinds[k].kind};
        if (fr.kind == BTP_FRAME_OMIT) {
            if (json_u64(json_get(f, "count"), &fr.value) < 0)
                return rd_error(r, "thread %zu, frame %zu: \"count\" must be an integer 0..2^64-1",
                                index, i);
        } else {
            size_t n = 0;
            const char *a = json_str(json_get(f, "address"), &n);
            if (!a || (strcmp(a, "null") != 0 && parse_hex_u64(a, n, &fr.value) < 0))
                return rd_error(r, "thread %zu, frame %zu: \"address\" must be \"null\" or "
                                   "\"0x<hex>\" of 64 bits at most", index, i);
        }
        if (rd_add_frame(r, t, fr, 1) < 0)
            return -1;
    }
    t->arch = s->arch;
    t->image_map = l->have_map ? &l->map : NULL;
    s->given = s->cur;
    return 1;
}

static int crash_read_line(reader *r, const char *line, size_t len, trace *t)
{
    crash_rstate *s = r->state;
    if (s->next >= s->n_order || !s->logs[s->cur].tree) {
        size_t i = 0;
        while (i < len && (line[i] == ' ' || line[i] == '\t'))
            i++;
        if (i == len || line[i] != '{')
            return 0;
        if (start_log(r, s, line, len) < 0) {
            forget_log(s);
            return -1;
        }
        if (s->n_order == 0)
            return 0;
    }
    size_t index = s->order[s->next++];
    r->more = s->next < s->n_order;
    return read_thread(r, s, index, t);
}

/* ---- writing ---------------------------------------------------------- */

/* A crash log is written as its threads come: its start with the first,
 * its end (the images) once a trace of another log arrives, or at the end
 * of the output. */
typedef struct crash_wstate {
    size_t n_threads;    /* of the log being written */
    size_t line;         /* its group: input line ... */
    const btp_image_map *map; /* ... and image map */
    strbuf tail;         /* the log after the threads */
} crash_wstate;

static void put_addr(strbuf *out, uint64_t v, unsigned word_bits)
{
    static const char hex[] = "0123456789abcdef";
    char d[19] = "0x";
    unsigned digits = word_bits / 4;
    for (unsigned i = 0; i < digits; i++)
        d[2 + i] = hex[(v >> (4 * (digits - 1 - i))) & 15];
    sb_addc(out, '"');
    sb_add(out, d, 2 + digits);
    sb_addc(out, '"');
}

static void put_str(strbuf *out, const char *s)
{
    json_put_string(out, s, strlen(s), 0);
}

/* The thread, straight to out: a long run streams out (wr_spill). */
static int put_thread(writer *w, const trace *t, strbuf *out)
{
    static const char *const kinds[] = {"programCounter", "returnAddress", "asyncResumePoint"};
    sb_adds(out, "{ ");
    if (t->thread_name && t->thread_name[0]) {
        sb_adds(out, "\"name\": ");
        put_str(out, t->thread_name);
        sb_adds(out, ", ");
    }
    if (t->crashed)
        sb_adds(out, "\"crashed\": true, ");
    sb_adds(out, "\"frames\": [ ");
    const char *sep = "";
    for (size_t i = 0; i < t->n_runs; i++) {
        btp_frame f = t->runs[i].frame;
        for (uint64_t c = 0; c < t->runs[i].count; c++) {
            sb_adds(out, sep);
            sep = ", ";
            if (f.kind == BTP_FRAME_OMIT) {
                sb_adds(out, "{ \"kind\": \"omittedFrames\", \"count\": ");
                sb_dec_u64(out, f.value);
                sb_adds(out, " }");
            } else {
                sb_adds(out, "{ \"kind\": \"");
                sb_adds(out, kinds[f.kind]);
                sb_adds(out, "\", \"address\": ");
                if (f.value == 0)
                    sb_adds(out, "\"null\"");
                else
                    put_addr(out, f.value, t->word_bits);
                sb_adds(out, " }");
            }
            if ((c & 4095) == 4095 && wr_spill(w, out) < 0)
                return -1;
        }
        if (wr_spill(w, out) < 0)
            return -1;
    }
    if (t->truncated)
        sb_adds(out, t->n ? ", { \"kind\": \"truncated\" }" : "{ \"kind\": \"truncated\" }");
    sb_adds(out, " ] }");
    return 0;
}

static void put_image(const btp_image *im, unsigned word_bits, strbuf *out)
{
    const char *name = im->name;
    if (!name && im->path) {
        name = im->path;
        for (const char *p = im->path; *p; p++)
            if (*p == '/' || *p == '\\')
                name = p + 1;
    }
    sb_adds(out, "{ ");
    if (name && *name) {
        sb_adds(out, "\"name\": ");
        put_str(out, name);
        sb_adds(out, ", ");
    }
    if (im->build_id && im->build_id_len) {
        sb_adds(out, "\"buildId\": \"");
        sb_hex(out, im->build_id, im->build_id_len);
        sb_adds(out, "\", ");
    }
    if (im->path && *im->path) {
        sb_adds(out, "\"path\": ");
        put_str(out, im->path);
        sb_adds(out, ", ");
    }
    sb_adds(out, "\"baseAddress\": ");
    put_addr(out, im->base, word_bits);
    sb_adds(out, ", \"endOfText\": ");
    put_addr(out, im->end_of_text, word_bits);
    sb_adds(out, " }");
}

static int crash_begin(writer *w, strbuf *out)
{
    w->state = calloc(1, sizeof(crash_wstate));
    return w->state ? 0 : wr_error(w, "out of memory");
}

/* End the log being written, if any. */
static void flush_log(crash_wstate *s, strbuf *out)
{
    if (!s->n_threads)
        return;
    sb_add(out, s->tail.data, s->tail.len);
    sb_clear(&s->tail);
    s->n_threads = 0;
}

static int crash_write(writer *w, const trace *t, strbuf *out)
{
    crash_wstate *s = w->state;
    int same = s->n_threads && t->loc.line && t->loc.line == s->line && t->image_map == s->map;
    if (t->image_map && t->image_map->word_bits != t->word_bits)
        return wr_error(w, "the image map is %u-bit, the trace %u-bit: a crash log has one "
                           "word size", t->image_map->word_bits, t->word_bits);
    if (!same) {
        flush_log(s, out);
        w->committed = out->len; /* the end of the last log is owed whatever comes */
        const btp_image_map *m = t->image_map;
        const char *arch = t->arch ? t->arch : swift_default_arch(t->word_bits);
        sb_adds(out, "{ \"timestamp\": \"1970-01-01T00:00:00.000000Z\", \"kind\": "
                     "\"crashReport\", \"description\": \"Backtrace\", \"faultAddress\": "
                     "\"0x0000000000000000\", \"platform\": ");
        put_str(out, m && m->platform ? m->platform : "");
        sb_adds(out, ", \"architecture\": ");
        put_str(out, arch);
        sb_adds(out, ", \"threads\": [ ");
        sb_adds(&s->tail, " ]");
        if (m) {
            sb_adds(&s->tail, ", \"images\": [ ");
            for (size_t i = 0; i < m->n_images; i++) {
                if (i)
                    sb_adds(&s->tail, ", ");
                put_image(&m->images[i], m->word_bits, &s->tail);
            }
            sb_adds(&s->tail, " ] ");
        }
        sb_adds(&s->tail, ", \"backtraceTime\": 0.0 }\n");
        s->line = t->loc.line;
        s->map = m;
    } else {
        sb_adds(out, ", ");
    }
    s->n_threads++; /* from here on the log is begun: its end is owed */
    if (put_thread(w, t, out) < 0)
        return -1;
    if (out->oom || s->tail.oom)
        return wr_error(w, "out of memory");
    return 0;
}

static int crash_end(writer *w, strbuf *out)
{
    crash_wstate *s = w->state;
    if (!s)
        return 0;
    flush_log(s, out);
    sb_free(&s->tail);
    free(s);
    w->state = NULL;
    return 0;
}

const format fmt_swift_crashlog = {
    .name = "swift-crashlog",
    .help = "swift-backtrace's JSON crash log (SWIFT_BACKTRACE=format=json), a trace per thread",
    .open = crash_open,
    .close = crash_close,
    .read_line = crash_read_line,
    .write = crash_write,
    .begin = crash_begin,
    .end = crash_end,
};
