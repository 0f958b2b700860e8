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
 * their paths, where they are the files mapped (`images`, crash-record
 * image lines); without it the image
 * maps the input gives with its traces are stored as `images` (store_map).
 * Comment lines of the input are kept; blocks are zlib-compressed (LZMA2
 * with `--compress lzma`; `--no-zlib` stores them uncompressed). One log
 * has one word size. */
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
    log_map map;      /* the stored image map so far, given with every record */
    size_t next_meta; /* metadata handed on so far */
    int synthetic;    /* said so once */
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
        log_map_free(&s->map);
    }
    free(s);
    r->state = NULL;
}

/* Hand the comment metadata read so far to the writer (and take the
 * image maps and the synthetic mark), and let the library forget what was
 * handed on (a long log's metadata must not pile up). */
static void pass_comments(reader *r, log_rstate *s)
{
    const char *key;
    const void *data;
    size_t len;
    if (!s->lr)
        return;
    while (btp_log_reader_meta(s->lr, s->next_meta, &key, &data, &len, NULL) == BTP_OK) {
        if (r->opt->comments && strcmp(key, "comment") == 0)
            sb_add(r->opt->comments, data, len);
        if (!s->synthetic && log_meta_synthetic(key, data, len)) {
            s->synthetic = 1;
            if (r->opt->synthetic)
                *r->opt->synthetic = 1;
            diag(DIAG_WARNING, r->name, NULL, "recorded with --no-addresses: its allocation "
                 "and free pointers are synthetic, not heap addresses");
        }
        btp_status ms = log_map_take(&s->map, key, data, len);
        if (ms != BTP_OK && ms != BTP_END) /* the records are still good */
            diag(DIAG_WARNING, r->name, NULL, "stored image map unusable (%s at byte %zu of "
                 "its block)", btp_strerror(ms), s->map.err_off);
        s->next_meta++;
    }
    btp_log_reader_meta_release(s->lr, s->next_meta);
}

int log_meta_synthetic(const char *key, const void *data, size_t len)
{
    /* the tracer writes `synthetic`; a trailing newline is allowed */
    if (len && ((const char *)data)[len - 1] == '\n')
        len--;
    return strcmp(key, "addresses") == 0 && len == 9 && memcmp(data, "synthetic", 9) == 0;
}

/* The library reads the log through this: straight from the input, so
 * that memory does not grow with the log. */
static long log_source(void *ctx, void *buf, size_t cap)
{
    reader *r = ctx;
    long got = input_read(r->in, buf, cap);
    if (got < 0)
        r->in_failed = 1; /* the input said why */
    return got;
}

int log_status(reader *r, btp_log_reader *lr, btp_status st)
{
    uint64_t off = btp_log_reader_error_offset(lr);
    btp_log_loss loss;
    int have_loss = btp_log_reader_last_loss(lr, &loss) == BTP_OK;
    const char *limit = st == BTP_E_NODES_LIMIT       ? "--max-nodes"
                        : st == BTP_E_LIVE_LIMIT      ? "--max-live"
                        : st == BTP_E_EXPANSION_LIMIT ? "--max-expansion"
                                                      : NULL;
    r->not_a_record = 1;
    if (st == BTP_E_TRUNCATED_FILE || st == BTP_E_IO || limit || st == BTP_E_META_LIMIT ||
        st == BTP_E_OUT_OF_MEMORY || !r->opt->keep_going)
        r->fatal = 1;
    if (st == BTP_E_IO && r->in_failed)
        return -1;
    if (st == BTP_E_RECORDS_LOST && have_loss && loss.to > loss.from)
        return rd_error_at(r, loss.from, "%llu record%s lost (records %llu to %llu, in bytes "
                           "%llu to %llu)", (unsigned long long)loss.records,
                           loss.records == 1 ? "" : "s", (unsigned long long)loss.first_record,
                           (unsigned long long)(loss.first_record + loss.records - 1),
                           (unsigned long long)loss.from, (unsigned long long)loss.to);
    if (st == BTP_E_RECORDS_LOST && have_loss)
        return rd_error_at(r, loss.from, "%llu record%s lost (records %llu to %llu): the block "
                           "that held them is missing here", (unsigned long long)loss.records,
                           loss.records == 1 ? "" : "s", (unsigned long long)loss.first_record,
                           (unsigned long long)(loss.first_record + loss.records - 1));
    if (st == BTP_E_TRUNCATED_FILE && have_loss && loss.known && loss.records)
        return rd_error_at(r, off, "%s: the log is cut short in bytes %llu to %llu, losing its "
                           "%llu record%s from record %llu on", btp_strerror(st),
                           (unsigned long long)loss.from, (unsigned long long)loss.to,
                           (unsigned long long)loss.records, loss.records == 1 ? "" : "s",
                           (unsigned long long)loss.first_record);
    if (st == BTP_E_TRUNCATED_FILE && have_loss && loss.to > loss.from)
        return rd_error_at(r, off, "%s: the log is cut short in bytes %llu to %llu; the records "
                           "from record %llu on are lost", btp_strerror(st),
                           (unsigned long long)loss.from, (unsigned long long)loss.to,
                           (unsigned long long)loss.first_record);
    if (st == BTP_E_TRUNCATED_FILE)
        return rd_error_at(r, off, "%s: the log has no end block (its writer did not finish "
                           "it); records after record %llu may be missing", btp_strerror(st),
                           (unsigned long long)(have_loss ? loss.first_record : 0));
    if (limit)
        return rd_error_at(r, off, "%s (see %s)", btp_strerror(st), limit);
    if (off == 0) /* read on from the block headers */
        return rd_error_at(r, 0, "file header: %s; reading on with the log's parameters from "
                           "its block headers", st == BTP_E_CHECKSUM ? "checksum mismatch"
                                                                     : btp_strerror(st));
    return rd_error_at(r, off, "%s%s", btp_strerror(st),
                       st == BTP_E_NO_ZLIB   ? " (rebuild btpack with zlib to read it)"
                       : st == BTP_E_NO_LZMA ? " (rebuild btpack with liblzma to read it)"
                                             : "");
}

btp_status log_next_record(reader *r, btp_log_reader *lr, btp_log_record *rec, log_meta_fn meta,
                           void *ctx, const char *cut_note)
{
    btp_status st;
    while ((st = btp_log_reader_next(lr, rec)) == BTP_OK && rec->kind == BTP_LOG_META) {
        /* used as it comes, then forgotten: memory does not grow with the
         * log's metadata */
        const char *key;
        const void *data;
        size_t len;
        uint64_t at;
        if (meta && btp_log_reader_meta(lr, rec->meta, &key, &data, &len, &at) == BTP_OK)
            meta(ctx, key, data, len, at);
        btp_log_reader_meta_release(lr, rec->meta + 1);
    }
    if (st == BTP_OK || st == BTP_END)
        return st;
    r->fatal = 0;
    log_status(r, lr, st);
    if (r->in_failed)
        return st; /* the input said why */
    if (st == BTP_E_TRUNCATED_FILE && cut_note)
        diag(DIAG_WARNING, r->name, &r->err_loc, "%s %s", r->msg, cut_note);
    else if (r->fatal)
        diag(DIAG_ERROR, r->name, &r->err_loc, "%s", r->msg);
    else
        diag_repeat(r->name, &r->err_loc, "%s", r->msg);
    return st;
}

btp_status log_open_reader(reader *r, btp_log_reader **out)
{
    btp_log_reader_options o;
    btp_log_reader_options_init(&o);
    /* metadata as it comes, so that it can be handed on and released */
    o.flags = BTP_LOG_META_RECORDS | (r->opt->keep_going ? BTP_LOG_KEEP_GOING : 0);
    if (r->opt->log_max_nodes)
        o.max_nodes = r->opt->log_max_nodes;
    if (r->opt->log_max_live)
        o.max_live = r->opt->log_max_live;
    if (r->opt->log_max_expansion_set)
        o.max_expansion = r->opt->log_max_expansion;
    btp_status st = btp_log_reader_open_source(out, log_source, r, &o);
    if (st != BTP_OK) {
        r->fatal = 1;
        if (!r->in_failed)
            rd_error_at(r, 0, "not a readable btpack log: %s%s",
                        st == BTP_E_CHECKSUM ? "file header checksum mismatch" : btp_strerror(st),
                        st == BTP_E_CHECKSUM && !r->opt->keep_going
                            ? " (--keep-going reads on from the block headers)" : "");
    }
    return st;
}

static int log_read_next(reader *r, trace *t)
{
    log_rstate *s = r->state;
    if (s->done)
        return 0;
    if (!s->lr) {
        if (log_open_reader(r, &s->lr) != BTP_OK) {
            s->done = 1;
            return -1;
        }
        r->word_bits = btp_log_reader_word_bits(s->lr);
        log_map_init(&s->map, r->word_bits);
    }
    btp_log_record rec;
    btp_status st;
    while ((st = btp_log_reader_next(s->lr, &rec)) == BTP_OK && rec.kind == BTP_LOG_META) {
        pass_comments(r, s);
        if (r->opt->comments && r->opt->comments->len >= COMMENTS_AT_MOST) {
            trace_reset(t, r->word_bits); /* a run of comments: to the writer now */
            t->event = TRACE_COMMENTS;
            return 1;
        }
    }
    if (st == BTP_END) {
        pass_comments(r, s);
        s->done = 1;
        return 0;
    }
    if (st != BTP_OK) {
        log_status(r, s->lr, st);
        if (r->fatal) {
            s->done = 1;
            pass_comments(r, s);
        }
        return -1;
    }
    /* no pass_comments() here: the reader hands each metadata item over as
     * a META record when it reads it (BTP_LOG_META_RECORDS), so none is
     * left for a record; the call cost 3.8 % of a log to text */
    trace_reset(t, r->word_bits);
    t->image_map = log_map_get(&s->map);
    t->loc = (src_loc){.offset = rec.index, .has_offset = 0};
    if (rec.flags) {
        r->loc = (src_loc){0}; /* a record of the log, at no byte offset of its own */
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
    /* the log numbers the stacks of a segment: writers may reuse their
     * work on a stack they have seen (trace.h) */
    t->has_stack_key = 1;
    t->stack_key = (uint64_t)rec.segment << 32 | rec.stack_id;
    /* a stack the writer has: its frames were checked when it had them */
    const cli_options *o = r->opt;
    if (o->stack_known && rec.n_frames <= t->max_frames &&
        o->stack_known(o->stack_known_ctx, t->stack_key)) {
        t->n = rec.n_frames;
        t->frames_elided = 1;
        return 1;
    }
    /* the whole stack in one step; on a failure (such as --max-frames)
     * frame by frame, so that rd_add_frame words it for the frame at fault */
    if (rec.n_frames && trace_add_frames(t, rec.frames, rec.n_frames) != BTP_OK)
        for (size_t i = 0; i < rec.n_frames; i++)
            if (rd_add_frame(r, t, rec.frames[i], 1) < 0)
                return -1;
    return 1;
}

/* ---- writing ---------------------------------------------------------- */

typedef struct log_wstate {
    btp_log_writer *lw;
    writer *w;
    strbuf *out;      /* where the library's bytes go during the current call */
    unsigned word_bits;
    /* The input's image map stored last, by address (a reader gives a map
     * that changed at another address: formats/README.md), and its image
     * lines, so that a reader's new copy of the same map is not stored
     * again. */
    const btp_image_map *map;
    strbuf images;
    int synthetic; /* the `addresses synthetic` item is stored */
} log_wstate;

/* The library emits only whole pieces of the file (header, blocks of
 * records it accepted, metadata): each belongs to the output even if the
 * record being written is then refused. */
static btp_status to_strbuf(void *ctx, const void *data, size_t len)
{
    log_wstate *s = ctx;
    sb_add(s->out, data, len);
    if (s->out->oom)
        return BTP_E_OUT_OF_MEMORY;
    s->w->committed = s->out->len;
    return BTP_OK;
}

static int log_begin(writer *w, strbuf *out)
{
    (void)out;
    log_wstate *s = calloc(1, sizeof(log_wstate));
    if (!s)
        return wr_error(w, "out of memory");
    s->w = w;
    w->state = s;
    return 0;
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
    o.flush_interval_ms = w->opt->flush_interval_ms;
    /* Input that is all there (no flush interval) goes into the largest
     * blocks: the allocator's reuse of freed chunks is coded within a
     * block, and each block's coders learn afresh (1.05-1.1x smaller on the
     * bundled corpora than 128 KiB blocks). A live writer keeps the default
     * blocks, so that a crash loses less. */
    if (w->opt->log_block_bytes)
        o.block_bytes = w->opt->log_block_bytes;
    else if (!o.flush_interval_ms)
        o.block_bytes = BTP_LOG_MAX_BLOCK / 2;
    /* zlib 9 by default: a log gives its text back faster than `xz -dc`
     * (bench/README.md, "Trace logs against xz"); LZMA2 (preset 6, xz's
     * default: the higher ones differ only in dictionaries larger than a
     * block) stores it in 5-10 % fewer bytes (heap logs: up to 2.8x fewer)
     * and takes about 15 ms more per MiB of payload to read. */
    int c = w->opt->log_compress;
    if (c == CLI_COMPRESS_DEFAULT)
        c = btp_log_have_zlib() ? CLI_COMPRESS_ZLIB : CLI_COMPRESS_NONE;
    if ((c == CLI_COMPRESS_LZMA && !btp_log_have_lzma()) ||
        (c == CLI_COMPRESS_ZLIB && !btp_log_have_zlib()))
        return wr_error(w, "--compress %s: this btpack is built without %s",
                        c == CLI_COMPRESS_LZMA ? "lzma" : "zlib",
                        c == CLI_COMPRESS_LZMA ? "liblzma" : "zlib");
    if (c == CLI_COMPRESS_LZMA) {
        o.flags |= BTP_LOG_WRITE_LZMA;
        o.zlib_level = 6;
    } else if (c == CLI_COMPRESS_NONE) {
        o.flags |= BTP_LOG_WRITE_NO_ZLIB;
    }
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

/* The image map the input gives with a trace (Swift JSON, crash records
 * and logs, another log) as an `images` item whenever it changes: without
 * it the log would lose what symbolizes its frames. Records are placed by
 * the items before them, so a record that came without a map gets the one
 * in effect (a log holds one process's images). --maps, given, is the
 * log's map instead. A build ID longer than image lines hold
 * (BTP_IMAGE_MAX_BUILD_ID; CIF allows more) is left out with a warning:
 * its image is still placed and named. The map's platform goes with it as
 * a `platform` line. */
static int store_map(writer *w, log_wstate *s, const trace *t)
{
    const btp_image_map *m = t->image_map;
    if (!m || m == s->map || w->opt->maps_path)
        return 0;
    if (m->word_bits != s->word_bits)
        return wr_error(w, "the image map is %u-bit, the log %u-bit", m->word_bits,
                        s->word_bits);
    s->map = m;
    strbuf lines = STRBUF_INIT;
    if (m->platform && *m->platform)
        platform_line_append(&lines, m->platform);
    for (size_t i = 0; i < m->n_images; i++) {
        btp_image im = m->images[i];
        if (im.build_id_len > BTP_IMAGE_MAX_BUILD_ID) {
            diag_repeat(t->input, &t->loc,
                        "image %zu (%s): its build ID of %zu bytes is longer than a log's "
                        "image lines hold (%d): stored without it",
                        i + 1, im.path && *im.path ? im.path : im.name ? im.name : "no path",
                        im.build_id_len, BTP_IMAGE_MAX_BUILD_ID);
            im.build_id = NULL;
            im.build_id_len = 0;
        }
        image_line_append(&lines, &im);
    }
    int rc = 0;
    if (lines.oom)
        rc = wr_error(w, "out of memory");
    else if (lines.len && (lines.len != s->images.len ||
                           memcmp(lines.data, s->images.data, lines.len) != 0)) {
        rc = put_meta(w, s, "images", lines.data, lines.len);
        strbuf old = s->images;
        s->images = lines;
        lines = old;
    }
    sb_free(&lines);
    return rc;
}

/* The pending comment lines as "comment" metadata, in pieces of at most
 * 1 MiB (a reader hands them on in order, so a line may straddle two). */
static int take_comments(writer *w, log_wstate *s)
{
    strbuf *c = w->opt->comments;
    int rc = 0;
    if (!c || !c->len)
        return 0;
    for (size_t at = 0; at < c->len && rc == 0; at += (size_t)1 << 20) {
        size_t n = c->len - at < ((size_t)1 << 20) ? c->len - at : (size_t)1 << 20;
        rc = put_meta(w, s, "comment", c->data + at, n);
    }
    sb_clear(c);
    return rc;
}

static int log_write(writer *w, const trace *t, strbuf *out)
{
    log_wstate *s = w->state;
    s->out = out;
    if (!s->lw && start(w, s, t->word_bits) < 0)
        return -1;
    if (t->event == TRACE_COMMENTS)
        return take_comments(w, s);
    if (t->word_bits != s->word_bits)
        return wr_error(w, "a log holds one word size: this trace is %u-bit, the log %u-bit",
                        t->word_bits, s->word_bits);
    if (take_comments(w, s) < 0 || store_map(w, s, t) < 0)
        return -1;
    if (!s->synthetic && w->opt->synthetic && *w->opt->synthetic) {
        /* a log recorded without addresses stays one: its pointers are
         * not heap addresses, and the next reader must know it too */
        if (put_meta(w, s, "addresses", "synthetic", 9) < 0)
            return -1;
        s->synthetic = 1;
    }
    if (t->n > BTP_LOG_MAX_DEPTH)
        return wr_error(w, "%zu frames: a log holds stacks of at most %u frames", t->n,
                        BTP_LOG_MAX_DEPTH);
    btp_status st;
    const btp_frame *frames = trace_frames(t); /* at most 4096 */
    if (!frames)
        return wr_error(w, "out of memory");
    if (t->event == TRACE_FREE) {
        st = btp_log_writer_free(s->lw, t->pointer);
    } else if (t->event == TRACE_ALLOC || t->has_alloc_size) {
        if (t->truncated)
            return wr_error(w, "a log cannot mark an allocation's stack as truncated");
        st = btp_log_writer_alloc(s->lw, t->alloc_size, t->has_pointer ? t->pointer : 0, frames,
                                  t->n);
    } else {
        st = btp_log_writer_trace(s->lw, frames, t->n, t->truncated);
    }
    return st == BTP_OK ? 0 : wr_error(w, "%s", btp_strerror(st));
}

/* Time passes: the pending block goes out once it is due. */
static int log_tick(writer *w, strbuf *out, uint32_t *wait_ms)
{
    log_wstate *s = w->state;
    *wait_ms = UINT32_MAX;
    if (!s || !s->lw)
        return 0;
    s->out = out;
    btp_status st = btp_log_writer_poll(s->lw, wait_ms);
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
    sb_free(&s->images);
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
    .tick = log_tick,
};
