/* Trace log crash tolerance: a log cut at every byte, and a flipped byte in
 * each kind of block (file header, block header, metadata, records, end),
 * a whole block cut out, with exactly what must be recovered and the lost
 * records reported (count and byte range). Every case is read both from
 * memory and through the streaming reader fed in small uneven pieces,
 * which must agree. Also: a stored compressed log of format version 1 is
 * read (or, in a build without zlib, refused with BTP_E_NO_ZLIB). */
#include <btpack/btpack.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "log_synth.h"
#include "membuf.h"
#include "pieces.h"

#define N_RECORDS 3000

/* Cuts past the first 2 KiB (every byte of which is cut) come every
 * CUT_STRIDE bytes, and every block boundary is cut within +-CUT_EDGE. Each
 * cut reads the log up to it, so the work grows with the square of the
 * log. The plain build makes the full sweep; under sanitizers, which make
 * every read several times dearer, it is a sample with a wider stride and
 * narrower edges: the same kinds of cut (every byte of the file header and
 * the first blocks, inside every block's header and payload, every block
 * boundary and the byte on each side of it, from memory and as a stream),
 * fewer of them. The test prints which sweep it made. */
#ifdef BTP_TEST_SANITIZED
#define CUT_STRIDE 61
#define CUT_EDGE 1
#define CUT_SWEEP "the sanitizer build's sample (the plain build cuts every 13 bytes, +-2 at block ends)"
#else
#define CUT_STRIDE 13
#define CUT_EDGE 2
#define CUT_SWEEP "the plain build's sweep"
#endif

static synth_rec want[N_RECORDS];

/* Block layout as spec/log.md gives it, found by walking the headers. */
typedef struct blk {
    size_t off, end;
    unsigned kind, flags;
    uint32_t records;
    uint64_t first;
} blk;
static blk blocks[4096];
static size_t n_blocks;
static size_t hs; /* block header size: 72 in version 1, 80 in version 2 */

static uint32_t le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void find_blocks(const membuf *log)
{
    n_blocks = 0;
    hs = log->len > 8 && log->p[8] == 1 ? 72 : 80;
    for (size_t off = 32; off + hs <= log->len && n_blocks < 4096;) {
        blk *b = &blocks[n_blocks++];
        b->off = off;
        b->kind = log->p[off + 4];
        b->flags = log->p[off + 5];
        b->records = le32(log->p + off + 20);
        b->first = le32(log->p + off + 32) | (uint64_t)le32(log->p + off + 36) << 32;
        b->end = off + hs + le32(log->p + off + 8);
        off = b->end;
    }
}

static int same(const btp_log_record *r, const synth_rec *w, int allow_unknown)
{
    if (r->kind != w->kind)
        return 0;
    if (r->flags && !allow_unknown)
        return 0;
    if (!(r->flags & BTP_LOG_REC_PTR_UNKNOWN) && r->ptr != w->ptr)
        return 0;
    if (w->kind == BTP_LOG_FREE)
        return 1;
    if (r->size != w->size || r->truncated != w->truncated)
        return 0;
    if (r->flags & BTP_LOG_REC_STACK_UNKNOWN)
        return r->n_frames == 0;
    if (r->n_frames != w->n)
        return 0;
    for (size_t i = 0; i < w->n; i++)
        if (r->frames[i].value != w->frames[i].value || r->frames[i].kind != w->frames[i].kind)
            return 0;
    return 1;
}

static void make_log(membuf *log, unsigned flags, uint32_t max_nodes, uint32_t max_live)
{
    btp_log_writer_options opt;
    btp_log_writer_options_init(&opt, 32);
    opt.flags = flags;
    opt.block_bytes = 700; /* many small blocks */
    opt.flush_interval_ms = 0; /* and no others */
    opt.max_nodes = max_nodes;
    opt.max_live = max_live;
    btp_log_writer *w;
    log->len = 0;
    btp_status st = btp_log_writer_open(&w, mb_sink, log, &opt);
    CHECK(st == BTP_OK, "open: %s", btp_strerror(st));
    if (st)
        return;
    CHECK(btp_log_writer_meta(w, "comment", "# synthetic\n", 12) == BTP_OK, "meta");
    CHECK(btp_log_writer_meta(w, "maps", "00400000-00500000 r-xp 0 0:0 0 /bin/x\n", 38) ==
              BTP_OK, "meta");
    synth s;
    synth_init(&s, 7, 32, 0);
    for (int i = 0; i < N_RECORDS && st == BTP_OK; i++) {
        synth_next(&s, &want[i], 0);
        st = synth_put(w, &want[i]);
    }
    synth_free_all(&s);
    CHECK(st == BTP_OK, "write: %s", btp_strerror(st));
    st = btp_log_writer_close(w);
    CHECK(st == BTP_OK, "close: %s", btp_strerror(st));
    find_blocks(log);
}

/* Open p[0..len) from memory (stream 0) or as a stream (src: its state). */
static btp_status open_log(btp_log_reader **r, const unsigned char *p, size_t len, unsigned flags,
                           int stream, piece_src *src)
{
    if (!stream)
        return btp_log_reader_open(r, p, len, flags);
    *src = (piece_src){p, len, 0, len, 5000};
    btp_log_reader_options o;
    btp_log_reader_options_init(&o);
    o.flags = flags;
    return btp_log_reader_open_source(r, pieces, src, &o);
}

/* Records in record blocks that end at or before `cut`. */
static uint64_t complete_records(size_t cut)
{
    uint64_t n = 0;
    for (size_t i = 0; i < n_blocks; i++)
        if (blocks[i].kind == 2 && blocks[i].end <= cut)
            n += blocks[i].records;
    return n;
}

/* Cut the log at `cut`: every record of every complete block, exactly, then
 * BTP_E_TRUNCATED_FILE. */
static int check_cut(const membuf *log, size_t cut, int stream)
{
    btp_log_reader *r;
    piece_src src;
    btp_status st = open_log(&r, log->p, cut, 0, stream, &src);
    if (cut < 32)
        return st == BTP_E_TRUNCATED_FILE;
    if (st != BTP_OK)
        return 0;
    btp_log_record rec;
    uint64_t n = 0;
    int ok = 1;
    while ((st = btp_log_reader_next(r, &rec)) == BTP_OK) {
        if (n >= N_RECORDS || rec.index != n || !same(&rec, &want[n], 0))
            ok = 0;
        n++;
    }
    /* the loss: from the end of the last complete block to the cut; the
     * records of the block cut short when its header is there */
    btp_log_loss loss;
    int lost_ok = btp_log_reader_last_loss(r, &loss) == BTP_OK && loss.first_record == n &&
                  loss.to == cut;
    for (size_t i = 0; i < n_blocks && lost_ok; i++)
        if (blocks[i].off < cut && blocks[i].end > cut) {
            lost_ok = loss.from == blocks[i].off;
            if (blocks[i].kind == 2 && cut >= blocks[i].off + hs)
                lost_ok &= loss.known && loss.records == blocks[i].records;
            else
                lost_ok &= !loss.known;
        }
    btp_log_reader_close(r);
    if (ok && lost_ok && st == BTP_E_TRUNCATED_FILE && n == complete_records(cut))
        return 1;
    fprintf(stderr, "cut %zu (%s): %s after %llu records (want %llu), loss %s\n", cut,
            stream ? "stream" : "memory", btp_status_name(st), (unsigned long long)n,
            (unsigned long long)complete_records(cut), lost_ok ? "right" : "wrong");
    return 0;
}

static void test_truncation(const membuf *log, const char *what)
{
    unsigned long bad = 0, tried = 0;
    /* every byte of the start, then a stride, and every block boundary */
    for (size_t cut = 0; cut < log->len; cut += cut < 2048 ? 1 : CUT_STRIDE) {
        tried++;
        bad += !check_cut(log, cut, (cut & 7) == 3); /* every 8th through a stream */
    }
    for (size_t i = 0; i < n_blocks; i++)
        for (size_t d = 0; d <= 2 * CUT_EDGE; d++) {
            size_t cut = blocks[i].end + d - CUT_EDGE;
            if (cut < log->len) {
                tried += 2;
                bad += !check_cut(log, cut, 0);
                bad += !check_cut(log, cut, 1);
            }
        }
    CHECK(bad == 0, "%lu of %lu cuts wrong", bad, tried);
    printf("cuts of the %s log (%zu bytes, %zu blocks): %lu, %s: every byte of the first "
           "2048, every %d after, +-%d around each block end\n",
           what, log->len, n_blocks, tried, CUT_SWEEP, CUT_STRIDE, CUT_EDGE);
}

/* Read everything in keep-going mode; count records exactly right, records
 * with unknown parts (which must agree where known), and errors. */
typedef struct outcome {
    uint64_t exact, partial, wrong, errors, lost;
    btp_status first_error;
    uint64_t first_error_offset;
    btp_status last;
    btp_log_loss loss; /* of the last BTP_E_RECORDS_LOST */
    int losses;        /* BTP_E_RECORDS_LOST reports */
} outcome;

static outcome read_one(const membuf *log, unsigned flags, int stream)
{
    outcome o = {0};
    btp_log_reader *r;
    piece_src src;
    btp_status st = open_log(&r, log->p, log->len, flags, stream, &src);
    if (st != BTP_OK) {
        o.last = st;
        return o;
    }
    btp_log_record rec;
    for (int guard = 0; guard < 100000; guard++) {
        st = btp_log_reader_next(r, &rec);
        if (st == BTP_OK) {
            if (rec.index >= N_RECORDS || !same(&rec, &want[rec.index], 1))
                o.wrong++;
            else if (rec.flags)
                o.partial++;
            else
                o.exact++;
            continue;
        }
        if (st == BTP_E_RECORDS_LOST) {
            o.losses++;
            CHECK(btp_log_reader_last_loss(r, &o.loss) == BTP_OK, "loss told");
        }
        if (st == BTP_END || st == BTP_E_TRUNCATED_FILE || !(flags & BTP_LOG_KEEP_GOING))
            break;
        if (!o.errors++) {
            o.first_error = st;
            o.first_error_offset = btp_log_reader_error_offset(r);
        }
    }
    if (!(flags & BTP_LOG_KEEP_GOING) && st != BTP_END && st != BTP_OK) {
        o.errors = 1;
        o.first_error = st;
        o.first_error_offset = btp_log_reader_error_offset(r);
    }
    o.last = st;
    o.lost = btp_log_reader_lost_records(r);
    btp_log_reader_close(r);
    return o;
}

/* Read from memory and as a stream: the two must agree exactly. */
static outcome read_all(const membuf *log, unsigned flags)
{
    outcome a = read_one(log, flags, 0), b = read_one(log, flags, 1);
    CHECK(a.exact == b.exact && a.partial == b.partial && a.wrong == b.wrong &&
              a.errors == b.errors && a.lost == b.lost && a.first_error == b.first_error &&
              a.first_error_offset == b.first_error_offset && a.last == b.last &&
              a.losses == b.losses && memcmp(&a.loss, &b.loss, sizeof a.loss) == 0,
          "memory and stream readers agree: exact %llu/%llu errors %llu/%llu last %s/%s",
          (unsigned long long)a.exact, (unsigned long long)b.exact,
          (unsigned long long)a.errors, (unsigned long long)b.errors, btp_status_name(a.last),
          btp_status_name(b.last));
    return a;
}

static size_t block_of_kind(unsigned kind, size_t nth)
{
    for (size_t i = 0; i < n_blocks; i++)
        if (blocks[i].kind == kind && nth-- == 0)
            return i;
    return SIZE_MAX;
}

static void test_flips(membuf *log)
{
    /* file header: strict stops; keep-going reads every record from the
     * parameters the block headers repeat, reporting the damage first */
    static const size_t header_bytes[] = {0, 8, 9, 12, 16, 28};
    for (size_t i = 0; i < sizeof header_bytes / sizeof header_bytes[0]; i++) {
        size_t at = header_bytes[i];
        log->p[at] ^= 0x40;
        btp_log_reader *r;
        btp_status st = btp_log_reader_open(&r, log->p, log->len, 0);
        CHECK(st == (at == 0 ? BTP_E_BAD_MAGIC : BTP_E_CHECKSUM), "file header byte %zu flip: %s",
              at, btp_status_name(st));
        outcome o = read_all(log, BTP_LOG_KEEP_GOING);
        CHECK(o.exact == N_RECORDS && o.wrong == 0 && o.errors == 1 && o.first_error_offset == 0 &&
                  o.first_error == (at == 0 ? BTP_E_BAD_MAGIC : BTP_E_CHECKSUM) &&
                  o.last == BTP_END,
              "file header byte %zu flip, keep going: exact %llu errors %llu %s", at,
              (unsigned long long)o.exact, (unsigned long long)o.errors,
              btp_status_name(o.first_error));
        log->p[at] ^= 0x40;
    }

    /* metadata block payload: records all intact, metadata error reported */
    size_t b = block_of_kind(1, 1);
    log->p[blocks[b].off + hs + 3] ^= 0x10;
    outcome o = read_all(log, 0);
    CHECK(o.exact == 0 && o.first_error == BTP_E_CHECKSUM && o.first_error_offset == blocks[b].off,
          "meta flip, strict: %s at %llu", btp_status_name(o.first_error),
          (unsigned long long)o.first_error_offset);
    o = read_all(log, BTP_LOG_KEEP_GOING);
    CHECK(o.exact == N_RECORDS && o.wrong == 0 && o.errors == 1 && o.last == BTP_END,
          "meta flip, keep going: exact %llu wrong %llu errors %llu",
          (unsigned long long)o.exact, (unsigned long long)o.wrong,
          (unsigned long long)o.errors);
    log->p[blocks[b].off + hs + 3] ^= 0x10;

    /* a record block in the middle: payload, then header */
    size_t mid = block_of_kind(2, 20);
    CHECK(mid != SIZE_MAX, "enough record blocks");
    for (int where = 0; where < 2 && mid != SIZE_MAX; where++) {
        size_t at = where ? blocks[mid].off + 21 : blocks[mid].off + hs + 5;
        log->p[at] ^= 0x01;
        o = read_all(log, 0);
        CHECK(o.exact == blocks[mid].first && o.wrong == 0 && o.first_error == BTP_E_CHECKSUM &&
                  o.first_error_offset == blocks[mid].off,
              "record %s flip, strict: exact %llu (want %llu) %s at %llu",
              where ? "header" : "payload", (unsigned long long)o.exact,
              (unsigned long long)blocks[mid].first, btp_status_name(o.first_error),
              (unsigned long long)o.first_error_offset);
        /* keep going: the damage, then the lost records with their range
         * (from the damaged block to the next sound one) */
        o = read_all(log, BTP_LOG_KEEP_GOING);
        CHECK(o.wrong == 0 && o.errors == 2 && o.losses == 1 && o.last == BTP_END &&
                  o.exact + o.partial == N_RECORDS - blocks[mid].records &&
                  o.exact > blocks[mid].first && o.lost == blocks[mid].records &&
                  o.loss.known && o.loss.first_record == blocks[mid].first &&
                  o.loss.records == blocks[mid].records && o.loss.from == blocks[mid].off &&
                  o.loss.to == blocks[mid].end,
              "record %s flip, keep going: exact %llu partial %llu wrong %llu errors %llu "
              "lost %llu (want %u) at %llu..%llu",
              where ? "header" : "payload", (unsigned long long)o.exact,
              (unsigned long long)o.partial, (unsigned long long)o.wrong,
              (unsigned long long)o.errors, (unsigned long long)o.lost, blocks[mid].records,
              (unsigned long long)o.loss.from, (unsigned long long)o.loss.to);
        log->p[at] ^= 0x01;
    }

    /* end block: every record, then the error */
    b = block_of_kind(3, 0);
    log->p[blocks[b].off + hs] ^= 0x01;
    o = read_all(log, 0);
    CHECK(o.exact == N_RECORDS && o.first_error == BTP_E_CHECKSUM, "end flip");
    log->p[blocks[b].off + hs] ^= 0x01;
    o = read_all(log, 0);
    CHECK(o.exact == N_RECORDS && o.errors == 0 && o.last == BTP_END, "restored log reads");
}

/* A whole record block cut out: strict reading stops at the next block
 * with BTP_E_RECORDS_LOST; keep-going reports the loss once (count, first
 * record, byte range) and reads every other record. */
static void test_missing_block(const membuf *log)
{
    size_t mid = block_of_kind(2, 10);
    CHECK(mid != SIZE_MAX, "enough record blocks");
    if (mid == SIZE_MAX)
        return;
    membuf cut = {0};
    mb_put(&cut, log->p, blocks[mid].off);
    mb_put(&cut, log->p + blocks[mid].end, log->len - blocks[mid].end);
    outcome o = read_all(&cut, 0);
    CHECK(o.exact == blocks[mid].first && o.first_error == BTP_E_RECORDS_LOST &&
              o.first_error_offset == blocks[mid].off && o.loss.records == blocks[mid].records,
          "block cut out, strict: %llu records, %s at %llu", (unsigned long long)o.exact,
          btp_status_name(o.first_error), (unsigned long long)o.first_error_offset);
    o = read_all(&cut, BTP_LOG_KEEP_GOING);
    CHECK(o.wrong == 0 && o.errors == 1 && o.losses == 1 && o.last == BTP_END &&
              o.exact + o.partial == N_RECORDS - blocks[mid].records &&
              o.lost == blocks[mid].records && o.loss.known &&
              o.loss.first_record == blocks[mid].first && o.loss.from == blocks[mid].off &&
              o.loss.to == blocks[mid].off,
          "block cut out, keep going: exact %llu partial %llu errors %llu lost %llu",
          (unsigned long long)o.exact, (unsigned long long)o.partial,
          (unsigned long long)o.errors, (unsigned long long)o.lost);
    /* the last record block cut out: the end block says how many are missing */
    size_t last = SIZE_MAX;
    for (size_t i = 0; i < n_blocks; i++)
        if (blocks[i].kind == 2)
            last = i;
    cut.len = 0;
    mb_put(&cut, log->p, blocks[last].off);
    mb_put(&cut, log->p + blocks[last].end, log->len - blocks[last].end);
    o = read_all(&cut, BTP_LOG_KEEP_GOING);
    CHECK(o.exact + o.partial == N_RECORDS - blocks[last].records && o.losses == 1 &&
              o.loss.records == blocks[last].records && o.last == BTP_END,
          "last record block cut out: %llu records, %d losses, %s",
          (unsigned long long)(o.exact + o.partial), o.losses, btp_status_name(o.last));
    free(cut.p);
}

/* Seek to every block: the next record is that block's first (or, for a
 * metadata block, the next record block's), and reading goes on exactly. */
static void test_seek(const membuf *log)
{
    btp_log_reader *r;
    CHECK(btp_log_reader_open(&r, log->p, log->len, 0) == BTP_OK, "open");
    unsigned long bad = 0;
    for (size_t b = n_blocks; b-- > 0;) { /* backwards: every seek goes back */
        btp_status st = btp_log_reader_seek_block(r, b);
        uint64_t first = N_RECORDS;
        for (size_t k = b; k < n_blocks; k++)
            if (blocks[k].kind == 2) {
                first = blocks[k].first;
                break;
            }
        btp_log_record rec;
        if (first == N_RECORDS) {
            bad += !((st == BTP_END || st == BTP_OK) && btp_log_reader_next(r, &rec) == BTP_END);
            continue;
        }
        uint64_t want_n = first + 50 < N_RECORDS ? 50 : N_RECORDS - first;
        for (uint64_t i = 0; i < want_n; i++)
            if (st != BTP_OK || btp_log_reader_next(r, &rec) != BTP_OK ||
                rec.index != first + i || !same(&rec, &want[first + i], 0)) {
                bad++;
                break;
            }
    }
    CHECK(bad == 0, "%lu of %zu seeks wrong", bad, n_blocks);
    CHECK(btp_log_reader_seek_block(r, n_blocks + 5) == BTP_END, "seek past the end");
    btp_log_reader_close(r);
}

static void test_stored(const char *path)
{
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL, "open %s", path);
    if (!f)
        return;
    membuf m = {0};
    unsigned char tmp[4096];
    size_t n;
    while ((n = fread(tmp, 1, sizeof tmp, f)) > 0)
        mb_put(&m, tmp, n);
    fclose(f);
    find_blocks(&m);
    outcome o = read_all(&m, 0);
    if (btp_log_have_zlib())
        CHECK(o.exact == N_RECORDS && o.last == BTP_END, "stored log: %s, %llu exact",
              btp_status_name(o.last), (unsigned long long)o.exact);
    else
        CHECK(o.exact == 0 && o.last == BTP_E_NO_ZLIB, "stored log without zlib: %s",
              btp_status_name(o.last));
    free(m.p);
}

int main(int argc, char **argv)
{
    membuf log = {0};
    /* uncompressed, plain */
    make_log(&log, BTP_LOG_WRITE_NO_ZLIB, 1u << 20, 1u << 20);
    test_seek(&log);
    test_truncation(&log, "uncompressed");
    test_flips(&log);
    test_missing_block(&log);
    /* small caps: several segments and evicted live allocations */
    make_log(&log, BTP_LOG_WRITE_NO_ZLIB, 300, 50);
    test_seek(&log);
    outcome o = read_all(&log, 0);
    CHECK(o.exact == N_RECORDS && o.last == BTP_END, "small caps: %s, %llu exact",
          btp_status_name(o.last), (unsigned long long)o.exact);
    test_truncation(&log, "small-caps");
    test_flips(&log);
    if (btp_log_have_zlib()) {
        make_log(&log, 0, 1u << 20, 1u << 20);
        test_truncation(&log, "compressed");
        test_flips(&log);
        if (argc > 2) { /* regenerate the stored compressed log */
            FILE *f = fopen(argv[2], "wb");
            if (f) {
                fwrite(log.p, 1, log.len, f);
                fclose(f);
            }
        }
    }
    if (btp_log_have_lzma()) {
        /* LZMA2 blocks: cut anywhere and flipped bits are found as in the
         * others (a bad stream is BTP_E_LZMA, then the block is skipped) */
        make_log(&log, BTP_LOG_WRITE_LZMA, 1u << 20, 1u << 20);
        size_t lz = 0;
        for (size_t i = 0; i < n_blocks; i++)
            lz += (blocks[i].flags & 0x40) != 0;
        CHECK(lz > 0, "no LZMA2 block among %zu", n_blocks);
        o = read_all(&log, 0);
        CHECK(o.exact == N_RECORDS && o.last == BTP_END, "lzma: %s, %llu exact",
              btp_status_name(o.last), (unsigned long long)o.exact);
        test_truncation(&log, "lzma");
        test_flips(&log);
    } else {
        btp_log_writer_options opt;
        btp_log_writer_options_init(&opt, 64);
        opt.flags = BTP_LOG_WRITE_LZMA;
        btp_log_writer *w = NULL;
        CHECK(btp_log_writer_open(&w, mb_sink, &log, &opt) == BTP_E_UNSUPPORTED && !w,
              "LZMA2 asked for in a build without liblzma");
    }
    if (argc > 1)
        test_stored(argv[1]);
    free(log.p);
    return check_finish();
}
