/* The trace log API's edges: NULL and empty arguments never crash; blocks
 * are flushed by time (flush_interval_ms, btp_log_writer_poll) as well as
 * by size; an empty stack reads back as an empty, non-NULL stack; stacks
 * that differ in a kind only, and deep bins, read back as written; metadata
 * can be released; the reader's limits stop a log with the status that
 * names them. */
#include <btpack/btpack.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "membuf.h"

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

/* A 64-bit writer of uncompressed blocks (so that the tests also run in a
 * build without zlib) appending to log. */
static btp_log_writer *open_writer(membuf *log)
{
    btp_log_writer *w = NULL;
    btp_log_writer_options opt;
    btp_log_writer_options_init(&opt, 64);
    opt.flags = BTP_LOG_WRITE_NO_ZLIB;
    CHECK(btp_log_writer_open(&w, mb_sink, log, &opt) == BTP_OK, "open");
    return w;
}

/* Sink that counts the pieces written. */
typedef struct counting {
    membuf buf;
    unsigned pieces;
} counting;

static btp_status count_sink(void *ctx, const void *data, size_t len)
{
    counting *c = ctx;
    c->pieces++;
    mb_put(&c->buf, data, len);
    return BTP_OK;
}

static void test_null_arguments(void)
{
    btp_log_writer_options_init(NULL, 64); /* once crashed */
    btp_log_reader_options_init(NULL);
    uint32_t wait = 0;
    CHECK(btp_log_writer_poll(NULL, &wait) == BTP_E_INVALID_ARGUMENT && wait == UINT32_MAX,
          "poll(NULL)");
    btp_log_loss loss;
    CHECK(btp_log_reader_last_loss(NULL, &loss) == BTP_E_INVALID_ARGUMENT, "last_loss(NULL)");
    btp_log_reader_meta_release(NULL, 3);
    btp_log_reader *r = (btp_log_reader *)1;
    CHECK(btp_log_reader_open_source(&r, NULL, NULL, NULL) == BTP_E_INVALID_ARGUMENT && !r,
          "open_source without a source");
    CHECK(btp_log_reader_open_opts(NULL, "", 0, NULL) == BTP_E_INVALID_ARGUMENT, "open_opts");
    btp_log_reader_options o;
    btp_log_reader_options_init(&o);
    o.max_nodes = 0;
    CHECK(btp_log_reader_open_opts(&r, "", 0, &o) == BTP_E_INVALID_ARGUMENT, "max_nodes 0");
    /* An option from a newer header (a reserved word set) is refused, not
     * ignored, by both ends. */
    btp_log_reader_options_init(&o);
    o.reserved[BTP_RESERVED_WORDS - 1] = 1;
    CHECK(btp_log_reader_open_opts(&r, "", 0, &o) == BTP_E_UNSUPPORTED && !r, "reader reserved");
    btp_log_writer_options wo;
    btp_log_writer_options_init(&wo, 64);
    wo.reserved[0] = 1;
    btp_log_writer *w = (btp_log_writer *)1;
    CHECK(btp_log_writer_open(&w, count_sink, NULL, &wo) == BTP_E_UNSUPPORTED && !w,
          "writer reserved");
}

/* A block goes out once its first record is flush_interval_ms old: when a
 * later record comes, or when the caller polls. */
static void test_flush_by_time(void)
{
    counting c = {0};
    btp_log_writer_options opt;
    btp_log_writer_options_init(&opt, 64);
    CHECK(opt.flush_interval_ms == 1000, "default interval 1 s: %u", opt.flush_interval_ms);
    opt.flush_interval_ms = 60;
    opt.flags = BTP_LOG_WRITE_NO_ZLIB;
    btp_log_writer *w;
    CHECK(btp_log_writer_open(&w, count_sink, &c, &opt) == BTP_OK, "open");
    btp_frame f = {0x1000, BTP_FRAME_RA};
    unsigned header = c.pieces;
    CHECK(btp_log_writer_alloc(w, 16, 0x10, &f, 1) == BTP_OK, "alloc");
    uint32_t wait = 0;
    CHECK(btp_log_writer_poll(w, &wait) == BTP_OK && wait > 0 && wait <= 60 &&
              c.pieces == header,
          "not due yet: wait %u ms, %u pieces", wait, c.pieces - header);
    sleep_ms(80);
    CHECK(btp_log_writer_alloc(w, 16, 0x20, &f, 1) == BTP_OK && c.pieces > header,
          "a record after the interval flushes the block");
    unsigned after = c.pieces;
    CHECK(btp_log_writer_poll(w, &wait) == BTP_OK && wait == UINT32_MAX, "nothing pending");
    CHECK(btp_log_writer_free(w, 0x10) == BTP_OK && c.pieces == after, "free held");
    sleep_ms(80);
    CHECK(btp_log_writer_poll(w, &wait) == BTP_OK && c.pieces > after && wait == UINT32_MAX,
          "poll flushes a due block");
    CHECK(btp_log_writer_close(w) == BTP_OK, "close");
    /* every record is in the log, exactly once */
    btp_log_reader *r;
    CHECK(btp_log_reader_open(&r, c.buf.p, c.buf.len, 0) == BTP_OK, "read back");
    btp_log_record rec;
    unsigned n = 0;
    btp_status st;
    while ((st = btp_log_reader_next(r, &rec)) == BTP_OK)
        n++;
    CHECK(st == BTP_END && n == 3, "3 records: %u, %s", n, btp_status_name(st));
    btp_log_reader_close(r);
    free(c.buf.p);

    /* interval 0: by size only */
    c = (counting){0};
    opt.flush_interval_ms = 0;
    CHECK(btp_log_writer_open(&w, count_sink, &c, &opt) == BTP_OK, "open");
    header = c.pieces;
    btp_log_writer_alloc(w, 16, 0x10, &f, 1);
    sleep_ms(20);
    CHECK(btp_log_writer_poll(w, &wait) == BTP_OK && wait == UINT32_MAX && c.pieces == header,
          "interval 0: nothing flushed by time");
    btp_log_writer_abandon(w);
    free(c.buf.p);
}

/* The first record's stack is empty: it reads back as 0 frames, not as a
 * stack lost to damage (and no memcpy on NULL under UBSan). */
static void test_empty_stack(void)
{
    membuf log = {0};
    btp_log_writer *w = open_writer(&log);
    btp_frame f = {0x1000, BTP_FRAME_RA};
    CHECK(btp_log_writer_alloc(w, 16, 0x1000, NULL, 0) == BTP_OK, "empty stack");
    CHECK(btp_log_writer_alloc(w, 8, 0x2000, &f, 1) == BTP_OK, "one frame");
    CHECK(btp_log_writer_trace(w, NULL, 0, 0) == BTP_OK, "empty trace");
    CHECK(btp_log_writer_close(w) == BTP_OK, "close");
    btp_log_reader *r;
    CHECK(btp_log_reader_open(&r, log.p, log.len, 0) == BTP_OK, "open");
    btp_log_record rec;
    CHECK(btp_log_reader_next(r, &rec) == BTP_OK && rec.flags == 0 && rec.n_frames == 0 &&
              rec.frames != NULL && rec.size == 16,
          "empty stack back: flags %u, %zu frames", rec.flags, rec.n_frames);
    CHECK(btp_log_reader_next(r, &rec) == BTP_OK && rec.n_frames == 1, "then one frame");
    CHECK(btp_log_reader_next(r, &rec) == BTP_OK && rec.kind == BTP_LOG_TRACE &&
              rec.n_frames == 0 && rec.flags == 0,
          "empty trace back");
    CHECK(btp_log_reader_next(r, &rec) == BTP_END, "end");
    btp_log_reader_close(r);
    free(log.p);
}

/* Stacks that differ only in a frame's kind (the first a pc or a return
 * address, a later one an async resume point), in a value, or in depth,
 * come back as written, each time, once the writer knows them (its check
 * of a recurring stack against a flat copy); and pointers freed into one
 * size class far past a bin's depth (120), then taken again from its top,
 * its middle and its oldest end, come back as written (the bins' ring). */
static void test_stack_kinds_and_bins(void)
{
    const btp_frame s[][4] = {
        {{0x1000, BTP_FRAME_PC}, {0x2000, BTP_FRAME_RA}, {0x3000, BTP_FRAME_RA}},
        {{0x1000, BTP_FRAME_RA}, {0x2000, BTP_FRAME_RA}, {0x3000, BTP_FRAME_RA}},
        {{0x1000, BTP_FRAME_PC}, {0x2000, BTP_FRAME_RA}, {0x3000, BTP_FRAME_ASYNC}},
        {{0x1000, BTP_FRAME_PC}, {0x2000, BTP_FRAME_RA}},
        {{0x1000, BTP_FRAME_PC}, {0x2000, BTP_FRAME_RA}, {0x3008, BTP_FRAME_RA}},
        {{0x1000, BTP_FRAME_PC}, {0x2000, BTP_FRAME_OMIT}, {0x3000, BTP_FRAME_RA}},
    };
    const size_t depth[] = {3, 3, 3, 2, 3, 3};
    /* each round: a stack right after one with the same addresses */
    const unsigned order[] = {0, 2, 0, 5, 1, 0, 3, 4};
    enum { N_STACKS = 6, N_ORDER = 8, ROUNDS = 30, REUSE = 120, ALL = ROUNDS * N_ORDER };
    /* the records: allocations through the stacks (ALL of them, of one size
     * class), then the frees of all (the bin keeps the last 120: 120..239),
     * then allocations of freed pointers taken from the bin's top (239 on
     * down), its middle (180 on down) and its oldest end (120 on up) in turn */
    static uint64_t ptr[2 * ALL + REUSE];
    static unsigned kind[2 * ALL + REUSE], stk[2 * ALL + REUSE];
    size_t n = 0;
    for (unsigned r = 0; r < ROUNDS; r++)
        for (unsigned k = 0; k < N_ORDER; k++, n++)
            ptr[n] = 0x100000 + 0x40 * n, kind[n] = BTP_LOG_ALLOC, stk[n] = order[k];
    for (unsigned i = 0; i < ALL; i++, n++)
        ptr[n] = 0x100000 + 0x40 * i, kind[n] = BTP_LOG_FREE, stk[n] = 0;
    for (unsigned i = 0; i < REUSE; i++, n++) {
        unsigned at = i % 3 == 0 ? ALL - 1 - i / 3 : i % 3 == 1 ? 180 - i / 3 : 120 + i / 3;
        ptr[n] = 0x100000 + 0x40 * at, kind[n] = BTP_LOG_ALLOC, stk[n] = i % N_STACKS;
    }
    membuf log = {0};
    btp_log_writer *w = open_writer(&log);
    for (size_t i = 0; i < n; i++) {
        btp_status st = kind[i] == BTP_LOG_FREE
                            ? btp_log_writer_free(w, ptr[i])
                            : btp_log_writer_alloc(w, 48, ptr[i], s[stk[i]], depth[stk[i]]);
        CHECK(st == BTP_OK, "record %zu: %d", i, (int)st);
    }
    CHECK(btp_log_writer_close(w) == BTP_OK, "close");
    btp_log_reader *r;
    CHECK(btp_log_reader_open(&r, log.p, log.len, 0) == BTP_OK, "open");
    btp_log_record rec;
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        if (btp_log_reader_next(r, &rec) != BTP_OK || (unsigned)rec.kind != kind[i] ||
            rec.ptr != ptr[i]) {
            bad++;
            continue;
        }
        if (kind[i] != BTP_LOG_ALLOC)
            continue;
        const btp_frame *f = s[stk[i]];
        int same = rec.n_frames == depth[stk[i]];
        for (size_t j = 0; same && j < rec.n_frames; j++)
            same = rec.frames[j].value == f[j].value && rec.frames[j].kind == f[j].kind;
        bad += !same;
    }
    CHECK(bad == 0, "%zu of %zu records came back otherwise", bad, n);
    CHECK(btp_log_reader_next(r, &rec) == BTP_END, "end");
    btp_log_reader_close(r);
    free(log.p);
}

/* Metadata: released items are freed; the rest keep their indexes. */
static void test_meta_release(void)
{
    membuf log = {0};
    btp_log_writer *w = open_writer(&log);
    btp_log_writer_meta(w, "maps", "m", 1);
    btp_log_writer_meta(w, "comment", "a", 1);
    btp_log_writer_meta(w, "comment", "b", 1);
    btp_log_writer_close(w);
    btp_log_reader *r;
    CHECK(btp_log_reader_open(&r, log.p, log.len, 0) == BTP_OK, "open");
    btp_log_record rec;
    CHECK(btp_log_reader_next(r, &rec) == BTP_END, "no records");
    const char *key;
    const void *data;
    size_t len;
    btp_log_reader_meta_release(r, 2);
    CHECK(btp_log_reader_meta(r, 1, &key, &data, &len, NULL) == BTP_E_INVALID_ARGUMENT,
          "released item");
    CHECK(btp_log_reader_meta(r, 2, &key, &data, &len, NULL) == BTP_OK && len == 1 &&
              memcmp(data, "b", 1) == 0,
          "item 2 keeps its index");
    CHECK(btp_log_reader_meta_find(r, "maps", &data, &len) == BTP_END, "maps released");
    btp_log_reader_close(r);
    free(log.p);

    /* BTP_LOG_META_RECORDS: each item among the records, in file order */
    log = (membuf){0};
    w = open_writer(&log);
    btp_frame f = {0x1000, BTP_FRAME_RA};
    btp_log_writer_alloc(w, 1, 0x10, &f, 1);
    btp_log_writer_meta(w, "comment", "a", 1); /* flushes the record first */
    btp_log_writer_alloc(w, 2, 0x20, &f, 1);
    btp_log_writer_meta(w, "comment", "b", 1);
    btp_log_writer_close(w);
    btp_log_reader_options o;
    btp_log_reader_options_init(&o);
    o.flags = BTP_LOG_META_RECORDS;
    CHECK(btp_log_reader_open_opts(&r, log.p, log.len, &o) == BTP_OK, "open");
    char order[8] = "";
    size_t k = 0;
    while (k < sizeof order - 1 && btp_log_reader_next(r, &rec) == BTP_OK) {
        if (rec.kind == BTP_LOG_META &&
            btp_log_reader_meta(r, rec.meta, &key, &data, &len, NULL) == BTP_OK && len == 1) {
            order[k++] = *(const char *)data;
            btp_log_reader_meta_release(r, rec.meta + 1);
        } else if (rec.kind == BTP_LOG_ALLOC) {
            order[k++] = (char)('0' + rec.size);
        }
    }
    CHECK(strcmp(order, "1a2b") == 0, "records and metadata in file order: %s", order);
    btp_log_reader_close(r);
    CHECK(btp_log_reader_open(&r, log.p, log.len, BTP_LOG_META_RECORDS) ==
              BTP_E_INVALID_ARGUMENT && !r,
          "META_RECORDS only through the options");
    free(log.p);
}

/* A log with many nodes, many live allocations and deep stacks repeated:
 * each reader limit, set low, stops it with its own status. */
static void test_limits(void)
{
    membuf log = {0};
    btp_log_writer *w = open_writer(&log);
    btp_frame deep[4096];
    for (size_t i = 0; i < 4096; i++)
        deep[i] = (btp_frame){0x400000 + 16 * i, BTP_FRAME_RA};
    for (uint64_t i = 0; i < 3000; i++) /* never freed: all live */
        btp_log_writer_alloc(w, 32, 0x100000 + 64 * i, deep, 4096);
    CHECK(btp_log_writer_close(w) == BTP_OK, "close");
    struct {
        btp_log_reader_options o;
        btp_status want;
    } cases[4];
    for (int i = 0; i < 4; i++)
        btp_log_reader_options_init(&cases[i].o);
    cases[0].o.max_nodes = 1000, cases[0].want = BTP_E_NODES_LIMIT;
    cases[1].o.max_live = 1000, cases[1].want = BTP_E_LIVE_LIMIT;
    cases[2].o.max_expansion = 64, cases[2].want = BTP_E_EXPANSION_LIMIT; /* 12M frames */
    cases[3].o.max_expansion = 0, cases[3].want = BTP_END;
    for (int i = 0; i < 4; i++) {
        btp_log_reader *r;
        CHECK(btp_log_reader_open_opts(&r, log.p, log.len, &cases[i].o) == BTP_OK, "open");
        btp_log_record rec;
        btp_status st;
        uint64_t n = 0;
        while ((st = btp_log_reader_next(r, &rec)) == BTP_OK)
            n++;
        CHECK(st == cases[i].want && (st == BTP_END) == (n == 3000),
              "limit %d: %s after %llu records (log %zu bytes)", i, btp_status_name(st),
              (unsigned long long)n, log.len);
        CHECK(btp_log_reader_next(r, &rec) == st, "limit %d: final", i);
        btp_log_reader_close(r);
    }
    free(log.p);
}

int main(void)
{
    test_null_arguments();
    test_flush_by_time();
    test_empty_stack();
    test_stack_kinds_and_bins();
    test_meta_release();
    test_limits();
    return check_finish();
}
