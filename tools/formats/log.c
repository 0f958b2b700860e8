/* log: btpack trace logs (spec/log.md), through the library's streaming
 * writer and reader (include/btpack/log.h).
 *
 * Reading: allocations become TRACE_ALLOC (size, pointer, stack), frees
 * TRACE_FREE, plain backtraces TRACE_PLAIN. With --keep-going a damaged
 * block is reported and skipped and reading goes on; records that lost
 * their pointer or stack to the damage are reported and skipped.
 * Writing: TRACE_ALLOC and TRACE_FREE as allocation records; a plain trace
 * with an allocation size (json "alloc_size") as an allocation at pointer
 * 0; other plain traces as backtrace records. `--maps FILE` stores the
 * maps text (`maps`) and its images with the build IDs of the files now at
 * their paths (`images`, crash-record image lines), comment lines of the input are kept, `--no-zlib` stores the
 * blocks uncompressed. One log has one word size. */
#include "format.h"
#include "imagemap_text.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diag.h"

/* ---- reading ---------------------------------------------------------- */

typedef struct log_rstate {
    btp_log_reader *lr;
    owned_map map;    /* the stored image map, given with every record */
    int have_map;
    size_t next_meta; /* metadata handed on so far */
    int done;
} log_rstate;

static int log_open(reader *r)
{
    r->state = calloc(1, sizeof(log_rstate));
    return r->state ? 0 : rd_error(r, "out of memory");
}

static void log_close(reader *r)
{
    log_rstate *s = r->state;
    if (s) {
        btp_log_reader_close(s->lr);
        owned_map_free(&s->map);
    }
    free(s);
    r->state = NULL;
}

/* Hand the comment metadata written before record `upto` to the writer. */
static void pass_comments(reader *r, log_rstate *s, uint64_t upto)
{
    const char *key;
    const void *data;
    size_t len;
    uint64_t at;
    while (btp_log_reader_meta(s->lr, s->next_meta, &key, &data, &len, &at) == BTP_OK &&
           at <= upto) {
        if (r->opt->comments && strcmp(key, "comment") == 0)
            sb_add(r->opt->comments, data, len);
        s->next_meta++;
    }
}

static int log_read_next(reader *r, trace *t)
{
    log_rstate *s = r->state;
    if (s->done)
        return 0;
    if (!s->lr) {
        btp_status st = btp_log_reader_open(&s->lr, r->data, r->len,
                                            r->opt->keep_going ? BTP_LOG_KEEP_GOING : 0);
        if (st != BTP_OK) {
            r->fatal = 1;
            s->done = 1;
            return rd_error_at(r, 0, "not a readable btpack log: %s", btp_strerror(st));
        }
        r->word_bits = btp_log_reader_word_bits(s->lr);
        size_t off = 0;
        btp_status ms = owned_map_from_log(&s->map, s->lr, &off);
        s->have_map = ms == BTP_OK;
        if (ms != BTP_OK && ms != BTP_END) /* the records are still good */
            diag(DIAG_WARNING, r->name, NULL, "stored image map unusable (%s at byte %zu)",
                 btp_strerror(ms), off);
    }
    btp_log_record rec;
    btp_status st = btp_log_reader_next(s->lr, &rec);
    if (st == BTP_END) {
        pass_comments(r, s, UINT64_MAX);
        s->done = 1;
        return 0;
    }
    if (st != BTP_OK) {
        uint64_t off = btp_log_reader_error_offset(s->lr);
        r->pos = r->len;
        if (st == BTP_E_TRUNCATED_FILE || !r->opt->keep_going) {
            r->fatal = 1;
            s->done = 1;
            pass_comments(r, s, UINT64_MAX);
        }
        return rd_error_at(r, off, "%s%s", btp_strerror(st),
                           st == BTP_E_NO_ZLIB ? " (rebuild btpack with zlib to read it)" : "");
    }
    pass_comments(r, s, rec.index);
    trace_reset(t, r->word_bits);
    t->image_map = s->have_map ? &s->map.map : NULL;
    t->loc = (src_loc){.offset = rec.index, .has_offset = 0};
    if (rec.flags) {
        return rd_error(r, "record %llu: its %s was lost with a damaged block",
                        (unsigned long long)rec.index,
                        rec.flags & BTP_LOG_REC_PTR_UNKNOWN ? "pointer" : "stack");
    }
    switch (rec.kind) {
    case BTP_LOG_FREE:
        t->event = TRACE_FREE;
        t->has_pointer = 1;
        t->pointer = rec.ptr;
        return 1;
    case BTP_LOG_ALLOC:
        t->event = TRACE_ALLOC;
        t->has_pointer = 1;
        t->pointer = rec.ptr;
        t->has_alloc_size = 1;
        t->alloc_size = rec.size;
        break;
    default:
        t->truncated = rec.truncated;
        break;
    }
    /* the whole stack in one step; on a failure (such as --max-frames)
     * frame by frame, so that rd_add_frame words it for the frame at fault */
    if (trace_add_frames(t, rec.frames, rec.n_frames) != BTP_OK)
        for (size_t i = 0; i < rec.n_frames; i++)
            if (rd_add_frame(r, t, rec.frames[i], 1) < 0)
                return -1;
    return 1;
}

/* ---- writing ---------------------------------------------------------- */

typedef struct log_wstate {
    btp_log_writer *lw;
    strbuf *out;      /* where the library's bytes go during the current call */
    unsigned word_bits;
} log_wstate;

static btp_status to_strbuf(void *ctx, const void *data, size_t len)
{
    log_wstate *s = ctx;
    sb_add(s->out, data, len);
    return s->out->oom ? BTP_E_OUT_OF_MEMORY : BTP_OK;
}

static int log_begin(writer *w, strbuf *out)
{
    (void)out;
    w->state = calloc(1, sizeof(log_wstate));
    return w->state ? 0 : wr_error(w, "out of memory");
}

static int put_meta(writer *w, log_wstate *s, const char *key, const void *data, size_t len)
{
    btp_status st = btp_log_writer_meta(s->lw, key, data, len);
    return st == BTP_OK ? 0 : wr_error(w, "cannot store %s: %s", key, btp_strerror(st));
}

/* Open the library writer (the file header needs the word size, known
 * with the first record) and store the maps. */
static int start(writer *w, log_wstate *s, unsigned word_bits)
{
    btp_log_writer_options o;
    btp_log_writer_options_init(&o, word_bits);
    if (w->opt->no_zlib || !btp_log_have_zlib())
        o.flags |= BTP_LOG_WRITE_NO_ZLIB;
    btp_status st = btp_log_writer_open(&s->lw, to_strbuf, s, &o);
    if (st != BTP_OK)
        return wr_error(w, "cannot start the log: %s", btp_strerror(st));
    s->word_bits = word_bits;
    if (w->opt->maps_path) {
        FILE *f = fopen(w->opt->maps_path, "rb");
        if (!f)
            return wr_error(w, "--maps %s: %s", w->opt->maps_path, strerror(errno));
        strbuf m = STRBUF_INIT;
        char tmp[8192];
        size_t n;
        while ((n = fread(tmp, 1, sizeof tmp, f)) > 0 && m.len <= BTP_LOG_MAX_BLOCK / 2)
            sb_add(&m, tmp, n);
        int bad = ferror(f);
        fclose(f);
        int rc = bad ? wr_error(w, "--maps %s: read error", w->opt->maps_path)
                 : m.len > BTP_LOG_MAX_BLOCK / 2 ? wr_error(w, "--maps %s: larger than %u bytes",
                                                             w->opt->maps_path,
                                                             BTP_LOG_MAX_BLOCK / 2)
                                                 : put_meta(w, s, "maps", m.data, m.len);
        /* the images with their build IDs: what makes the maps usable once
         * the files have changed */
        strbuf im = STRBUF_INIT;
        size_t off = 0;
        btp_status ist = rc < 0 ? BTP_OK
                                : image_lines_from_procmaps(m.data, m.len, word_bits, &im, &off);
        if (ist != BTP_OK)
            rc = wr_error(w, "--maps %s: byte offset %zu: %s", w->opt->maps_path, off,
                          btp_strerror(ist));
        else if (rc == 0 && im.len)
            rc = put_meta(w, s, "images", im.data, im.len);
        sb_free(&im);
        sb_free(&m);
        if (rc < 0)
            return rc;
    }
    return 0;
}

static int take_comments(writer *w, log_wstate *s)
{
    strbuf *c = w->opt->comments;
    if (!c || !c->len)
        return 0;
    int rc = put_meta(w, s, "comment", c->data, c->len);
    sb_clear(c);
    return rc;
}

static int log_write(writer *w, const trace *t, strbuf *out)
{
    log_wstate *s = w->state;
    s->out = out;
    if (!s->lw && start(w, s, t->word_bits) < 0)
        return -1;
    if (t->word_bits != s->word_bits)
        return wr_error(w, "a log holds one word size: this trace is %u-bit, the log %u-bit",
                        t->word_bits, s->word_bits);
    if (take_comments(w, s) < 0)
        return -1;
    btp_status st;
    if (t->event == TRACE_FREE) {
        st = btp_log_writer_free(s->lw, t->pointer);
    } else if (t->event == TRACE_ALLOC || t->has_alloc_size) {
        if (t->truncated)
            return wr_error(w, "a log cannot mark an allocation's stack as truncated");
        st = btp_log_writer_alloc(s->lw, t->alloc_size, t->has_pointer ? t->pointer : 0,
                                  t->frames, t->n);
    } else {
        st = btp_log_writer_trace(s->lw, t->frames, t->n, t->truncated);
    }
    return st == BTP_OK ? 0 : wr_error(w, "%s", btp_strerror(st));
}

static int log_end(writer *w, strbuf *out)
{
    log_wstate *s = w->state;
    int rc = 0;
    if (!s)
        return 0;
    s->out = out;
    if (!s->lw)
        rc = start(w, s, w->opt->word_bits);
    if (rc == 0)
        rc = take_comments(w, s);
    btp_status st = btp_log_writer_close(s->lw);
    if (rc == 0 && st != BTP_OK)
        rc = wr_error(w, "cannot finish the log: %s", btp_strerror(st));
    free(s);
    w->state = NULL;
    return rc;
}

const format fmt_log = {
    .name = "log",
    .help = "btpack trace log (binary; spec/log.md): allocations, frees, backtraces, maps",
    .binary = 1,
    .events = 1,
    .comments = 1,
    .open = log_open,
    .close = log_close,
    .read_next = log_read_next,
    .write = log_write,
    .begin = log_begin,
    .end = log_end,
};
