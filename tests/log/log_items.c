/* Several metadata items in one block (btp_log_writer_meta_items) and the
 * log's last items in its end block (btp_log_writer_close_items): what the
 * writer writes (one block header, the ITEMS flag only for several), that
 * every way of reading returns each item once, in order, at its record
 * position (those of the end block before BTP_END), and that a damaged,
 * cut or malformed block of items loses all of its items and nothing
 * else. spec/log.md, "META payload" and "END payload". */
#include <btpack/btpack.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "log/crc32.h"
#include "membuf.h"

#define HS 80u        /* version 2 block header */
#define F_ZLIB 0x01u  /* block flags (spec/log.md, "Block header") */
#define F_ITEMS 0x80u
enum { K_META = 1, K_RECORDS = 2, K_END = 3 };

static uint32_t le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static void put32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

/* The blocks of a log: offsets of their headers. */
typedef struct blocks {
    size_t at[16];
    size_t n;
} blocks;

static blocks walk(const membuf *log)
{
    blocks b = {{0}, 0};
    for (size_t off = 32; off + HS <= log->len && b.n < 16;) {
        b.at[b.n++] = off;
        off += HS + le32(log->p + off + 8);
    }
    return b;
}

/* Fix the CRCs of the block at `off` after its bytes were changed. */
static void fix_block(unsigned char *p, size_t off)
{
    put32(p + off + 60, btp_crc32_update(0, p + off + HS, le32(p + off + 8)));
    put32(p + off + HS - 4, btp_crc32_update(0, p + off, HS - 4));
}

static btp_log_writer *open_writer(membuf *log, unsigned flags)
{
    btp_log_writer *w = NULL;
    btp_log_writer_options opt;
    btp_log_writer_options_init(&opt, 64);
    opt.flags = BTP_LOG_WRITE_NO_ZLIB | flags; /* readable bytes, and builds without zlib */
    opt.flush_interval_ms = 0;
    CHECK(btp_log_writer_open(&w, mb_sink, log, &opt) == BTP_OK, "open");
    return w;
}

static const btp_frame frame = {0x401000, BTP_FRAME_RA};

/* The log the tests read: three items up front (one with NUL bytes, one
 * empty), a record, two items, a record, a single item, and the end block
 * with two. Expected, in file order: each record as its size digit, each
 * item as its key's first letter. */
static const char want_order[] = "tce1ab2s3yz";
static const char *const want_keys[] = {"tracer", "cmdline", "empty", "a", "b", "single",
                                        "y", "z"};
static const uint64_t want_at[] = {0, 0, 0, 1, 1, 2, 3, 3};
#define N_ITEMS 8

static void write_log(membuf *log, unsigned flags)
{
    btp_log_writer *w = open_writer(log, flags);
    btp_log_meta_item start[] = {{"tracer", "pid=1\n", 6}, {"cmdline", "a\0b\0", 4},
                                 {"empty", NULL, 0}};
    CHECK(btp_log_writer_meta_items(w, start, 3) == BTP_OK, "start items");
    CHECK(btp_log_writer_alloc(w, 1, 0x1000, &frame, 1) == BTP_OK, "alloc 1");
    btp_log_meta_item mid[] = {{"a", "A", 1}, {"b", "BB", 2}};
    CHECK(btp_log_writer_meta_items(w, mid, 2) == BTP_OK, "items flush the record first");
    CHECK(btp_log_writer_alloc(w, 2, 0x2000, &frame, 1) == BTP_OK, "alloc 2");
    CHECK(btp_log_writer_meta(w, "single", "S", 1) == BTP_OK, "one item");
    CHECK(btp_log_writer_alloc(w, 3, 0x3000, &frame, 1) == BTP_OK, "alloc 3");
    btp_log_meta_item end[] = {{"y", "Y", 1}, {"z", "end=exit\n", 9}};
    CHECK(btp_log_writer_close_items(w, end, 2) == BTP_OK, "close with items");
}

/* One item is the block btp_log_writer_meta() writes; several set ITEMS. */
static void test_blocks(void)
{
    membuf log = {0};
    write_log(&log, 0);
    blocks b = walk(&log);
    static const unsigned char kinds[] = {K_META, K_RECORDS, K_META, K_RECORDS, K_META,
                                          K_RECORDS, K_END};
    CHECK(b.n == sizeof kinds, "%zu blocks", b.n);
    for (size_t i = 0; i < b.n && i < sizeof kinds; i++) {
        const unsigned char *h = log.p + b.at[i];
        int several = i == 0 || i == 2 || i == 6;
        CHECK(h[4] == kinds[i] && !!(h[5] & F_ITEMS) == several, "block %zu: kind %u flags %#x",
              i, h[4], h[5]);
    }
    /* the single item: byte for byte what btp_log_writer_meta() writes */
    membuf one = {0}, items = {0};
    btp_log_writer *w = open_writer(&one, 0);
    btp_log_writer_meta(w, "k", "data", 4);
    btp_log_writer_close(w);
    w = open_writer(&items, 0);
    btp_log_meta_item it = {"k", "data", 4};
    btp_log_writer_meta_items(w, &it, 1);
    CHECK(btp_log_writer_close_items(w, NULL, 0) == BTP_OK, "close without items");
    CHECK(one.len == items.len && memcmp(one.p, items.p, one.len) == 0,
          "one item, one way of writing it");
    free(one.p);
    free(items.p);
    free(log.p);
}

/* Read through a source in pieces of `piece` bytes (0: from memory). */
typedef struct src {
    const membuf *log;
    size_t pos, piece;
} src;

static long src_read(void *ctx, void *buf, size_t cap)
{
    src *s = ctx;
    size_t n = s->log->len - s->pos;
    if (n > cap)
        n = cap;
    if (n > s->piece)
        n = s->piece;
    memcpy(buf, s->log->p + s->pos, n);
    s->pos += n;
    return (long)n;
}

static btp_log_reader *open_reader(const membuf *log, unsigned flags, src *s)
{
    btp_log_reader_options o;
    btp_log_reader_options_init(&o);
    o.flags = flags;
    btp_log_reader *r = NULL;
    btp_status st = s && s->piece ? btp_log_reader_open_source(&r, src_read, s, &o)
                                  : btp_log_reader_open_opts(&r, log->p, log->len, &o);
    CHECK(st == BTP_OK, "open reader: %s", btp_strerror(st));
    return r;
}

/* Every item, with its key, data and record position. */
static void check_items(btp_log_reader *r, size_t from)
{
    for (size_t i = from; i < N_ITEMS; i++) {
        const char *key;
        const void *data;
        size_t len;
        uint64_t at = 99;
        btp_status st = btp_log_reader_meta(r, i, &key, &data, &len, &at);
        CHECK(st == BTP_OK && !strcmp(key, want_keys[i]) && at == want_at[i],
              "item %zu: %s at %llu", i, st == BTP_OK ? key : btp_strerror(st),
              (unsigned long long)at);
    }
    const char *key;
    const void *data;
    size_t len;
    CHECK(btp_log_reader_meta(r, N_ITEMS, &key, &data, &len, NULL) == BTP_END, "no more items");
    CHECK(btp_log_reader_meta(r, 1, &key, &data, &len, NULL) != BTP_OK || len == 4,
          "cmdline's NUL bytes kept");
}

static void test_read(void)
{
    membuf log = {0};
    write_log(&log, 0);
    for (size_t piece = 0; piece <= 97; piece += 97) { /* memory; a stream in pieces */
        /* the items up front are known at open (not streamed); the end
         * block's once the end is reached */
        src s = {&log, 0, piece};
        btp_log_reader *r = open_reader(&log, 0, &s);
        const char *key;
        const void *data;
        size_t len;
        CHECK(btp_log_reader_meta_find(r, "cmdline", &data, &len) == BTP_OK && len == 4 &&
                  !memcmp(data, "a\0b\0", 4),
              "leading items at open (piece %zu)", piece);
        btp_log_record rec;
        int n = 0;
        btp_status st;
        while ((st = btp_log_reader_next(r, &rec)) == BTP_OK)
            n++;
        CHECK(st == BTP_END && n == 3, "3 records then the end: %d, %s", n, btp_strerror(st));
        check_items(r, 0);
        CHECK(btp_log_reader_meta(r, 7, &key, &data, &len, NULL) == BTP_OK && len == 9 &&
                  !memcmp(data, "end=exit\n", 9),
              "end block item's data");
        btp_log_reader_close(r);

        /* BTP_LOG_META_RECORDS: one at a time, among the records; the end
         * block's before BTP_END; releasing each as it comes */
        s.pos = 0;
        r = open_reader(&log, BTP_LOG_META_RECORDS, &s);
        char order[32] = "";
        size_t k = 0;
        while (k < sizeof order - 1 && (st = btp_log_reader_next(r, &rec)) == BTP_OK) {
            if (rec.kind == BTP_LOG_META) {
                uint64_t at;
                CHECK(btp_log_reader_meta(r, rec.meta, &key, &data, &len, &at) == BTP_OK &&
                          at == rec.index,
                      "item %zu", rec.meta);
                order[k++] = key[0];
                btp_log_reader_meta_release(r, rec.meta + 1);
            } else {
                order[k++] = (char)('0' + rec.size);
            }
        }
        CHECK(st == BTP_END && !strcmp(order, want_order), "order %s, then %s", order,
              btp_strerror(st));
        CHECK(btp_log_reader_next(r, &rec) == BTP_END, "the end stays the end");
        btp_log_reader_close(r);
    }

    /* Items released before next() returned them (a caller releasing all
     * it has) are not returned: the next record comes. */
    btp_log_reader *r = open_reader(&log, BTP_LOG_META_RECORDS, NULL);
    btp_log_record rec;
    CHECK(btp_log_reader_next(r, &rec) == BTP_OK && rec.kind == BTP_LOG_META && rec.meta == 0,
          "first item");
    btp_log_reader_meta_release(r, SIZE_MAX);
    CHECK(btp_log_reader_next(r, &rec) == BTP_OK && rec.kind == BTP_LOG_ALLOC && rec.size == 1,
          "the record after the released items");
    btp_log_reader_close(r);

    /* A seek replays blocks of items without returning them. */
    r = open_reader(&log, BTP_LOG_META_RECORDS, NULL);
    CHECK(btp_log_reader_seek_block(r, 3) == BTP_OK, "seek");
    CHECK(btp_log_reader_next(r, &rec) == BTP_OK && rec.kind == BTP_LOG_ALLOC && rec.size == 2,
          "after a seek: the block's record, not the items before it");
    btp_log_reader_close(r);
    free(log.p);
}

/* The same log written through held blocks (packed by the caller) is the
 * same bytes, the end block's items included. */
static void test_hold(void)
{
    membuf a = {0}, b = {0};
    write_log(&a, 0);
    write_log(&b, BTP_LOG_WRITE_HOLD); /* close writes the held blocks, in order */
    CHECK(a.len == b.len && memcmp(a.p, b.p, a.len) == 0, "held: same bytes");
    free(a.p);
    free(b.p);
}

/* Arguments the writer refuses, writing nothing (close_items: the log is
 * ended without the items). */
static void test_invalid(void)
{
    membuf log = {0};
    btp_log_writer *w = open_writer(&log, 0);
    size_t before = log.len;
    char key256[257];
    memset(key256, 'k', 256);
    key256[256] = 0;
    btp_log_meta_item ok = {"k", "d", 1};
    btp_log_meta_item many[BTP_LOG_MAX_META_ITEMS + 1];
    for (size_t i = 0; i <= BTP_LOG_MAX_META_ITEMS; i++)
        many[i] = ok;
    btp_log_meta_item bad[][2] = {
        {ok, {"", "d", 1}},        /* empty key */
        {ok, {key256, "d", 1}},    /* key of 256 bytes */
        {ok, {NULL, "d", 1}},      /* no key */
        {ok, {"k", NULL, 1}},      /* no data */
        {{"k", "d", BTP_LOG_MAX_BLOCK / 2}, {"k", "d", 1}}, /* data beyond half a block */
    };
    CHECK(btp_log_writer_meta_items(NULL, &ok, 1) == BTP_E_INVALID_ARGUMENT, "NULL writer");
    CHECK(btp_log_writer_meta_items(w, &ok, 0) == BTP_E_INVALID_ARGUMENT, "no items");
    CHECK(btp_log_writer_meta_items(w, NULL, 1) == BTP_E_INVALID_ARGUMENT, "NULL items");
    CHECK(btp_log_writer_meta_items(w, many, BTP_LOG_MAX_META_ITEMS + 1) ==
              BTP_E_INVALID_ARGUMENT,
          "too many items");
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK(btp_log_writer_meta_items(w, bad[i], 2) == BTP_E_INVALID_ARGUMENT, "bad item %zu",
              i);
    CHECK(log.len == before, "nothing written");
    CHECK(btp_log_writer_meta_items(w, many, BTP_LOG_MAX_META_ITEMS) == BTP_OK,
          "the most items, and the writer still works");
    CHECK(btp_log_writer_close_items(w, bad[0], 2) == BTP_E_INVALID_ARGUMENT, "close, bad item");
    btp_log_reader *r = open_reader(&log, 0, NULL);
    btp_log_record rec;
    CHECK(btp_log_reader_next(r, &rec) == BTP_END, "the log is complete");
    const char *key;
    const void *data;
    size_t len;
    CHECK(btp_log_reader_meta(r, BTP_LOG_MAX_META_ITEMS - 1, &key, &data, &len, NULL) == BTP_OK &&
              btp_log_reader_meta(r, BTP_LOG_MAX_META_ITEMS, &key, &data, &len, NULL) == BTP_END,
          "the good block's items, none of the refused ones");
    btp_log_reader_close(r);
    CHECK(btp_log_writer_close_items(NULL, &ok, 1) == BTP_OK, "close NULL");
    free(log.p);
}

/* Read a (changed) log to its end; the statuses met, in order, one letter
 * each (O: a record, M: an item, E: end, T: truncated, C: corrupt, V: bad
 * version, L: records lost, ?: other), and the items known at the end. */
static void read_statuses(const membuf *log, unsigned flags, char *out, size_t cap,
                          size_t *items)
{
    btp_log_reader *r = open_reader(log, flags, NULL);
    size_t k = 0;
    *items = 0;
    if (!r) {
        out[0] = 0;
        return;
    }
    btp_log_record rec;
    for (int guard = 0; guard < 64 && k < cap - 1; guard++) {
        btp_status st = btp_log_reader_next(r, &rec);
        char c = st == BTP_OK ? (rec.kind == BTP_LOG_META ? 'M' : 'O')
                 : st == BTP_END ? 'E'
                 : st == BTP_E_TRUNCATED_FILE ? 'T'
                 : st == BTP_E_CORRUPT ? 'C'
                 : st == BTP_E_BAD_LOG_VERSION ? 'V'
                 : st == BTP_E_RECORDS_LOST ? 'L'
                                            : '?';
        out[k++] = c;
        if (c == 'E' || c == 'T' || (c != 'O' && c != 'M' && !(flags & BTP_LOG_KEEP_GOING)))
            break;
    }
    out[k] = 0;
    const char *key;
    const void *data;
    size_t len;
    while (btp_log_reader_meta(r, *items, &key, &data, &len, NULL) == BTP_OK)
        (*items)++;
    btp_log_reader_close(r);
}

static void test_damage(void)
{
    membuf log = {0};
    write_log(&log, 0);
    blocks b = walk(&log);
    const size_t meta0 = b.at[0], rec0 = b.at[1], end = b.at[6];
    unsigned char *orig = malloc(log.len);
    memcpy(orig, log.p, log.len);
    char got[64];
    size_t items;
    const unsigned flags = BTP_LOG_META_RECORDS;

    read_statuses(&log, flags, got, sizeof got, &items);
    CHECK(!strcmp(got, "MMMOMMOMOMME") && items == N_ITEMS, "clean: %s, %zu items", got, items);

    /* cut anywhere in the end block: every record, none of its items */
    for (size_t cut = end; cut < log.len; cut++) {
        membuf c = {log.p, cut, cut};
        read_statuses(&c, flags, got, sizeof got, &items);
        CHECK(!strcmp(got, "MMMOMMOMOT") && items == N_ITEMS - 2, "cut at %zu: %s, %zu items",
              cut, got, items);
    }

    /* an item's data length one more than there is: the block's items are
     * all lost, the records are not; strict reading stops there */
    size_t p = meta0 + HS;
    p += 1 + 6;              /* "tracer" */
    log.p[p] = 6 + 1;        /* its data length */
    fix_block(log.p, meta0);
    read_statuses(&log, flags | BTP_LOG_KEEP_GOING, got, sizeof got, &items);
    CHECK(!strcmp(got, "COMMOMOMME") && items == N_ITEMS - 3, "bad length, keep going: %s, %zu",
          got, items);
    read_statuses(&log, flags, got, sizeof got, &items);
    CHECK(!strcmp(got, "C") && items == 0, "bad length, strict: %s, %zu", got, items);

    /* without ITEMS a payload is one item: several are corrupt */
    memcpy(log.p, orig, log.len);
    log.p[meta0 + 5] &= (unsigned char)~F_ITEMS;
    fix_block(log.p, meta0);
    read_statuses(&log, flags | BTP_LOG_KEEP_GOING, got, sizeof got, &items);
    CHECK(!strcmp(got, "COMMOMOMME"), "several items without ITEMS: %s", got);

    /* ITEMS on a record block is a flag this reader does not know there */
    memcpy(log.p, orig, log.len);
    log.p[rec0 + 5] |= F_ITEMS;
    fix_block(log.p, rec0);
    read_statuses(&log, flags, got, sizeof got, &items);
    CHECK(!strcmp(got, "MMMV"), "ITEMS on RECORDS: %s", got);

    /* an end block flagged ITEMS must hold at least one; one not flagged
     * none: both are a damaged end block (every record was read) */
    memcpy(log.p, orig, log.len);
    put32(log.p + end + 8, 2); /* its two counts only */
    put32(log.p + end + 12, 2);
    fix_block(log.p, end);
    membuf c = {log.p, end + HS + 2, end + HS + 2};
    read_statuses(&c, flags, got, sizeof got, &items);
    CHECK(!strcmp(got, "MMMOMMOMOC"), "ITEMS and no items: %s", got);
    log.p[end + 5] &= (unsigned char)~F_ITEMS;
    fix_block(log.p, end);
    read_statuses(&c, flags, got, sizeof got, &items);
    CHECK(!strcmp(got, "MMMOMMOMOE") && items == N_ITEMS - 2, "plain end block: %s", got);
    memcpy(log.p, orig, log.len);
    log.p[end + 5] &= (unsigned char)~F_ITEMS;
    fix_block(log.p, end);
    read_statuses(&log, flags, got, sizeof got, &items);
    CHECK(!strcmp(got, "MMMOMMOMOC"), "items without ITEMS: %s", got);

    /* records cut out before the end block: the loss, then its items */
    memcpy(log.p, orig, log.len);
    size_t rec2 = b.at[5];
    membuf gap = {0};
    mb_put(&gap, log.p, rec2);
    mb_put(&gap, log.p + end, log.len - end);
    read_statuses(&gap, flags | BTP_LOG_KEEP_GOING, got, sizeof got, &items);
    CHECK(!strcmp(got, "MMMOMMOMLMME") && items == N_ITEMS, "a block cut out: %s, %zu", got,
          items);
    read_statuses(&gap, flags, got, sizeof got, &items);
    CHECK(!strcmp(got, "MMMOMMOML"), "a block cut out, strict: %s", got);
    free(gap.p);
    free(orig);
    free(log.p);
}

int main(void)
{
    test_blocks();
    test_read();
    test_hold();
    test_invalid();
    test_damage();
    return check_finish();
}
