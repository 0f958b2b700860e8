/* trace: the allocation record format of the bundled corpora
 * (tests/data/corpus/README.md):
 *   # stkshim v1 method=... word=<64|32> ...
 *   m <size> <ptr> <addr0> ... <addrK>     an allocation and its stack
 *   f <ptr>                                a free
 * The word size comes from the header line (`word=`), else --word-bits.
 * `m` records become TRACE_ALLOC with the size; `f` records TRACE_FREE,
 * which formats that hold only traces skip. Comment lines go to the writer
 * when it keeps them (log, trace).
 * Writing: allocation records only (size and pointer needed; frames must be
 * return addresses), as the lines above, so that trace -> log -> trace gives
 * the same text back. */
#include "format.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The last `word=N` in comment text (one line, or several joined by
 * newlines): 1 with *word set, 0 if there is none, -1 with *bad and *bad_len
 * naming the value if one is not 16, 32 or 64. Shared by the reader, for
 * which it sets the word size, and the writer, which must know what a
 * reader of its output will take the word size to be. */
static int find_word(const char *text, size_t len, unsigned *word, const char **bad,
                     size_t *bad_len)
{
    int found = 0;
    for (size_t i = 0; i + 5 <= len; i++) {
        if ((i == 0 || text[i - 1] == ' ' || text[i - 1] == '\n') &&
            memcmp(text + i, "word=", 5) == 0) {
            size_t b = i + 5, e = b;
            uint64_t v;
            while (e < len && text[e] != ' ' && text[e] != '\n')
                e++;
            if (parse_dec_u64(text + b, e - b, &v) < 0 || v > 64 ||
                !btp_word_bits_valid((unsigned)v)) {
                *bad = text + b;
                *bad_len = e - b;
                return -1;
            }
            *word = (unsigned)v;
            found = 1;
        }
    }
    return found;
}

/* `word=N` in a comment line sets the word size. */
static int header(reader *r, const char *line, size_t len)
{
    const char *bad;
    size_t bad_len;
    if (find_word(line, len, &r->word_bits, &bad, &bad_len) < 0)
        return rd_error(r, "header: word=%.*s is not 16, 32 or 64", (int)bad_len, bad);
    return 0;
}

/* Next space-separated field of line[*i..len) into tok/n; 0 if none. */
static int field(const char *line, size_t len, size_t *i, const char **tok, size_t *n)
{
    while (*i < len && line[*i] == ' ')
        (*i)++;
    if (*i >= len)
        return 0;
    size_t b = *i;
    while (*i < len && line[*i] != ' ')
        (*i)++;
    *tok = line + b;
    *n = *i - b;
    return 1;
}

static int trace_read_line(reader *r, const char *line, size_t len, trace *t)
{
    if (line[0] == '#') {
        if (r->opt->comments) {
            sb_add(r->opt->comments, line, len);
            sb_addc(r->opt->comments, '\n');
        }
        return header(r, line, len) < 0 ? -1 : 0;
    }
    const char *tok;
    size_t n, i = 1, k = 0;
    if (len < 2 || (line[0] != 'm' && line[0] != 'f') || line[1] != ' ')
        return rd_error(r, "expected an `m` or `f` record or a `#` comment");
    trace_reset(t, r->word_bits);
    t->loc = r->loc;
    t->event = line[0] == 'm' ? TRACE_ALLOC : TRACE_FREE;
    if (t->event == TRACE_ALLOC) {
        if (!field(line, len, &i, &tok, &n) || parse_dec_u64(tok, n, &t->alloc_size) < 0)
            return rd_error(r, "`m` record: size must be a decimal number");
        t->has_alloc_size = 1;
    }
    if (!field(line, len, &i, &tok, &n) || parse_hex_u64(tok, n, &t->pointer) < 0)
        return rd_error(r, "record: pointer must be 0xHEX");
    t->has_pointer = 1;
    while (field(line, len, &i, &tok, &n)) {
        btp_frame f = {.kind = BTP_FRAME_RA};
        k++;
        if (t->event == TRACE_FREE)
            return rd_error(r, "`f` record: unexpected text after the pointer");
        if (parse_hex_u64(tok, n, &f.value) < 0)
            return rd_error(r, "`m` record: address %zu `%.*s` is not 0xHEX", k,
                            (int)(n > 40 ? 40 : n), tok);
        if (rd_add_frame(r, t, f, 1) < 0)
            return -1;
    }
    return 1;
}

/* Text of the stacks already written, by stack key (trace.h): a log
 * repeats a few thousand stacks over hundreds of thousands of records, and
 * formatting each frame again was most of the time it took to turn a log
 * back into text. Bounded: stacks numbered past STACK_CACHE_IDS, or met
 * once the cache holds STACK_CACHE_BYTES of text, are formatted each time. */
#define STACK_CACHE_IDS (1u << 22)
#define STACK_CACHE_BYTES ((size_t)64 << 20)

typedef struct stack_text {
    uint32_t off, len; /* in text; len 0: not cached */
} stack_text;

typedef struct trace_wstate {
    unsigned word; /* the word size a reader of the output is at (0: none yet) */
    uint32_t gen;       /* the generation the cache is for */
    stack_text *ids;    /* by stack number */
    size_t n_ids;
    strbuf text;        /* " 0x..." of each cached stack, back to back */
} trace_wstate;

/* Forget the cache when a new generation of stack numbers starts. */
static void cache_gen(trace_wstate *s, uint32_t gen)
{
    if (gen == s->gen)
        return;
    s->gen = gen;
    if (s->ids)
        memset(s->ids, 0, s->n_ids * sizeof *s->ids);
    sb_clear(&s->text);
}

/* The cached text of stack `id`, or NULL. */
static const stack_text *cache_get(const trace_wstate *s, uint32_t id)
{
    return id < s->n_ids && s->ids[id].len ? &s->ids[id] : NULL;
}

/* Keep text[0..len) as stack `id`'s text, if the bounds allow. */
static void cache_put(trace_wstate *s, uint32_t id, const char *text, size_t len)
{
    if (id >= STACK_CACHE_IDS || len == 0 || s->text.len + len > STACK_CACHE_BYTES)
        return;
    if (id >= s->n_ids) {
        size_t n = s->n_ids ? s->n_ids : 1024;
        while (n <= id)
            n *= 2;
        stack_text *p = realloc(s->ids, n * sizeof *p);
        if (!p)
            return; /* a cache: formatting goes on without it */
        memset(p + s->n_ids, 0, (n - s->n_ids) * sizeof *p);
        s->ids = p;
        s->n_ids = n;
    }
    size_t off = s->text.len;
    sb_add(&s->text, text, len);
    if (s->text.oom) {
        s->text.oom = 0;
        s->text.len = off;
        return;
    }
    s->ids[id] = (stack_text){(uint32_t)off, (uint32_t)len};
}

static int trace_begin(writer *w, strbuf *out)
{
    (void)out;
    w->state = calloc(1, sizeof(trace_wstate));
    return w->state ? 0 : wr_error(w, "out of memory");
}

static int trace_has_stack(writer *w, uint64_t key)
{
    const trace_wstate *s = w->state;
    /* a key of another generation would clear the cache (cache_gen) */
    return s && (uint32_t)(key >> 32) == s->gen && cache_get(s, (uint32_t)key) != NULL;
}

static void take_comments(writer *w, strbuf *out)
{
    trace_wstate *s = w->state;
    strbuf *c = w->opt->comments;
    if (!c || !c->len)
        return;
    const char *bad;
    size_t bad_len;
    find_word(c->data, c->len, &s->word, &bad, &bad_len); /* the reader checked it */
    sb_add(out, c->data, c->len);
    sb_clear(c);
}

static int trace_write(writer *w, const trace *t, strbuf *out)
{
    trace_wstate *s = w->state;
    const stack_text *hit = NULL;
    if (t->event == TRACE_COMMENTS) {
        take_comments(w, out);
        return 0;
    }
    if (t->event == TRACE_FREE) {
        if (!t->has_pointer)
            return wr_error(w, "a free record needs a pointer");
    } else {
        if (!t->has_alloc_size || !t->has_pointer)
            return wr_error(w, "the trace format holds allocation records (size and pointer)");
        if (t->truncated)
            return wr_error(w, "the trace format cannot mark a stack as truncated");
        if (t->has_stack_key) { /* a stack cached is one checked */
            cache_gen(s, (uint32_t)(t->stack_key >> 32));
            hit = cache_get(s, (uint32_t)t->stack_key);
        }
        if (!hit && t->frames_elided)
            return wr_error(w, "a stack without its frames that was not written before");
        for (size_t i = 0, at = 0; !hit && i < t->n_runs; at += (size_t)t->runs[i++].count)
            if (t->runs[i].frame.kind != BTP_FRAME_RA)
                return wr_error(w, "frame %zu is %s: the trace format holds return addresses",
                                at, trace_kind_name(t->runs[i].frame.kind));
    }
    take_comments(w, out);
    /* Whenever the record's word size is not the one a reader would be at
     * (no header yet, or traces of several word sizes), say it. */
    if (t->word_bits != s->word) {
        sb_printf(out, "# btpack word=%u\n", t->word_bits);
        s->word = t->word_bits;
    }
    /* "m ", size, pointer, then the frames: one reservation per 4096
     * frames at most (19 bytes each), handed on as they fill */
    char *d = sb_reserve(out, 64), *p = d;
    if (!d)
        return wr_error(w, "out of memory");
    *p++ = t->event == TRACE_FREE ? 'f' : 'm';
    *p++ = ' ';
    if (t->event != TRACE_FREE) {
        p = fmt_dec_u64(p, t->alloc_size);
        *p++ = ' ';
    }
    p = fmt_hex_u64(p, t->pointer);
    out->len += (size_t)(p - d);
    size_t frames_at = out->len;
    if (hit) {
        if (!(d = sb_reserve(out, (size_t)hit->len + 1)))
            return wr_error(w, "out of memory");
        memcpy(d, s->text.data + hit->off, hit->len);
        d[hit->len] = '\n';
        out->len += (size_t)hit->len + 1;
        return wr_spill(w, out) < 0 ? -1 : 0;
    }
    int spilled = 0;
    for (size_t i = 0; i < t->n_runs; i++) {
        for (uint64_t left = t->runs[i].count; left > 0;) {
            size_t k = left < 4096 ? (size_t)left : 4096;
            if (!(d = p = sb_reserve(out, 19 * k)))
                return wr_error(w, "out of memory");
            for (size_t j = 0; j < k; j++) {
                *p++ = ' ';
                p = fmt_hex_u64(p, t->runs[i].frame.value);
            }
            out->len += (size_t)(p - d);
            left -= k;
            size_t before = out->len;
            if (wr_spill(w, out) < 0)
                return -1;
            spilled |= out->len != before;
        }
    }
    /* a stack spilled to the output in pieces is not in `out` whole */
    if (t->has_stack_key && !spilled && t->event != TRACE_FREE)
        cache_put(s, (uint32_t)t->stack_key, out->data + frames_at, out->len - frames_at);
    sb_addc(out, '\n');
    return out->oom ? wr_error(w, "out of memory") : 0;
}

static int trace_end(writer *w, strbuf *out)
{
    trace_wstate *s = w->state;
    if (s) {
        take_comments(w, out);
        free(s->ids);
        sb_free(&s->text);
    }
    free(w->state);
    w->state = NULL;
    return 0;
}

const format fmt_trace = {
    .name = "trace",
    .help = "allocation records: `m SIZE PTR ADDR...`, `f PTR`, `# ... word=N`",
    .events = 1,
    .comments = 1,
    .read_line = trace_read_line,
    .write = trace_write,
    .has_stack = trace_has_stack,
    .begin = trace_begin,
    .end = trace_end,
};
