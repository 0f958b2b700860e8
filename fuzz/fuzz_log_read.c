/*
 * Fuzz target: the trace-log reader on truncated and corrupted files.
 *
 * Input: byte 0 holds options (bit 0: BTP_LOG_KEEP_GOING; bits 1-7: where
 * to cut the log for the truncation check, in 128ths of its length, and
 * which block to seek to); the rest is the log, in a buffer ending at a
 * guard page. Properties:
 *  - open and next return documented statuses only; records are well formed
 *    (kind, frames within the word and the depth limit, no frames on frees,
 *    the truncated flag only on plain traces,
 *    increasing indexes, flags only in keep-going mode); the reader ends
 *    (END, TRUNCATED_FILE, or a sticky error without keep-going) within a
 *    bounded number of calls, and error offsets lie inside the log;
 *  - the log cut at any byte yields a prefix of the records of the whole
 *    log, and a sound log cut short ends with BTP_E_TRUNCATED_FILE;
 *  - after seeking to a block the records are the whole log's records from
 *    the index the seek lands on;
 *  - the streaming reader fed in pieces gives the same records, errors and
 *    end as the reader over memory; every loss of records says which and
 *    where; it also returns the metadata items among the records
 *    (BTP_LOG_META_RECORDS): each once, in order, at its record position,
 *    and of a log read to its end without error every item the reader over
 *    memory kept;
 *  - metadata and statistics can be read at any time.
 */
#include "fuzz.h"
#include "guard.h"
#include "runs.h"

#include <btpack/log.h>
#include <string.h>

#include "../tests/log/pieces.h"

/* Records compared at most (the rest is only checked for form). */
#define MAX_KEPT 4096
/* Calls to next() before the harness gives up on a huge (zlib) log: not a
 * failure, the work per call is what matters. */
#define MAX_CALLS 200000

typedef struct kept {
    btp_log_record rec;
    size_t first; /* index into frames_kept */
} kept;

static fuzz_guard in_guard, cut_guard;
static kept recs[MAX_KEPT];
static size_t n_recs;
static size_t n_meta_recs; /* metadata items returned as records (META_RECORDS) */
static btp_frame *frames_kept;
static size_t n_frames, cap_frames;

static int log_error(btp_status st)
{
    switch (st) {
    case BTP_E_BAD_MAGIC: /* keep-going: a damaged file header, read past */
    case BTP_E_TRUNCATED_FILE:
    case BTP_E_CHECKSUM:
    case BTP_E_CORRUPT:
    case BTP_E_BAD_LOG_VERSION:
    case BTP_E_NO_ZLIB:
    case BTP_E_ZLIB:
    case BTP_E_OUT_OF_MEMORY:
    case BTP_E_RECORDS_LOST:
    case BTP_E_NODES_LIMIT:
    case BTP_E_LIVE_LIMIT:
    case BTP_E_EXPANSION_LIMIT:
    case BTP_E_META_LIMIT:
        return 1;
    default:
        return 0;
    }
}

static void check_record(const btp_log_reader *r, const btp_log_record *rec, unsigned flags,
                         uint64_t min_index)
{
    uint64_t mask = btp_word_mask(btp_log_reader_word_bits(r));
    FUZZ_CHECK(rec->kind == BTP_LOG_ALLOC || rec->kind == BTP_LOG_FREE ||
                   rec->kind == BTP_LOG_TRACE,
               "kind %d", rec->kind);
    FUZZ_CHECK(rec->index >= min_index, "index %llu after %llu", (unsigned long long)rec->index,
               (unsigned long long)min_index);
    FUZZ_CHECK((rec->flags & ~(unsigned)(BTP_LOG_REC_PTR_UNKNOWN | BTP_LOG_REC_STACK_UNKNOWN)) ==
                   0,
               "flags 0x%x", rec->flags);
    if (!(flags & BTP_LOG_KEEP_GOING))
        FUZZ_CHECK(rec->flags == 0, "damage flags without keep-going");
    FUZZ_CHECK(rec->n_frames <= BTP_LOG_MAX_DEPTH, "%zu frames", rec->n_frames);
    if (rec->kind == BTP_LOG_FREE)
        FUZZ_CHECK(rec->n_frames == 0, "a free with frames");
    if (rec->kind != BTP_LOG_TRACE)
        FUZZ_CHECK(!rec->truncated, "truncated flag on an allocation or free");
    if (rec->kind != BTP_LOG_FREE)
        FUZZ_CHECK(!rec->matched, "matched flag on an allocation or trace");
    FUZZ_CHECK(rec->ptr <= mask, "pointer beyond the word");
    for (size_t i = 0; i < rec->n_frames; i++) {
        btp_frame f = rec->frames[i];
        FUZZ_CHECK((unsigned)f.kind <= BTP_FRAME_OMIT, "frame kind %d", f.kind);
        FUZZ_CHECK(f.value <= mask, "frame %zu beyond the word", i);
        if (f.kind == BTP_FRAME_OMIT)
            FUZZ_CHECK(f.value >= 1, "omit 0");
    }
}

static void keep(const btp_log_record *rec)
{
    if (n_recs == MAX_KEPT)
        return;
    frames_kept = fuzz_reserve(frames_kept, &cap_frames, n_frames + rec->n_frames,
                               sizeof *frames_kept);
    if (rec->n_frames)
        memcpy(frames_kept + n_frames, rec->frames, rec->n_frames * sizeof *rec->frames);
    recs[n_recs].rec = *rec;
    recs[n_recs].rec.frames = NULL;
    recs[n_recs].first = n_frames;
    n_frames += rec->n_frames;
    n_recs++;
}

static int same_record(const kept *k, const btp_log_record *rec)
{
    return k->rec.kind == rec->kind && k->rec.index == rec->index && k->rec.size == rec->size &&
           k->rec.ptr == rec->ptr && k->rec.flags == rec->flags &&
           k->rec.truncated == rec->truncated && k->rec.matched == rec->matched &&
           k->rec.n_frames == rec->n_frames &&
           /* no frames kept yet leaves frames_kept NULL: no pointer made from it */
           (rec->n_frames == 0 ||
            fuzz_frames_equal(frames_kept + k->first, rec->frames, rec->n_frames));
}

/* The kept record with this index, if any (indexes increase). */
static const kept *find(uint64_t index)
{
    size_t lo = 0, hi = n_recs;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (recs[mid].rec.index < index)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n_recs && recs[lo].rec.index == index ? &recs[lo] : NULL;
}

/* Read to the end, keeping the records (record) or comparing each with
 * the kept one of the same index (compare). Returns BTP_END, or the last
 * error (*errors counts them; in keep-going mode reading goes on after
 * all but TRUNCATED_FILE). */
static btp_status read_all(btp_log_reader *r, unsigned flags, size_t len, int record,
                           int compare, unsigned *errors)
{
    btp_log_record rec;
    uint64_t min_index = 0;
    btp_status st = BTP_OK, last = BTP_END;
    *errors = 0;
    for (size_t calls = 0; calls < MAX_CALLS; calls++) {
        st = btp_log_reader_next(r, &rec);
        if (st == BTP_OK && rec.kind == BTP_LOG_META) {
            /* each item once, in file order, where the records put it */
            const char *key;
            const void *data;
            size_t mlen;
            uint64_t at;
            FUZZ_CHECK(rec.meta == n_meta_recs &&
                           btp_log_reader_meta(r, rec.meta, &key, &data, &mlen, &at) == BTP_OK &&
                           at == rec.index && rec.index >= min_index,
                       "metadata record %zu (item %zu)", n_meta_recs, rec.meta);
            n_meta_recs++;
            continue;
        }
        if (st == BTP_OK) {
            check_record(r, &rec, flags, min_index);
            min_index = rec.index + 1;
            if (record)
                keep(&rec);
            /* The reference holds this index unless it stopped earlier
             * (kept list full, or an error first). */
            const kept *k = compare ? find(rec.index) : NULL;
            if (k)
                FUZZ_CHECK(same_record(k, &rec), "record %llu differs",
                           (unsigned long long)rec.index);
            continue;
        }
        if (st == BTP_END)
            return last;
        last = st;
        ++*errors;
        FUZZ_CHECK(log_error(st), "undocumented status %d", st);
        FUZZ_CHECK(btp_log_reader_error_offset(r) <= len, "error offset %llu of %zu",
                   (unsigned long long)btp_log_reader_error_offset(r), len);
        if (st == BTP_E_RECORDS_LOST) {
            btp_log_loss loss;
            FUZZ_CHECK(btp_log_reader_last_loss(r, &loss) == BTP_OK && loss.known &&
                           loss.records > 0 && loss.first_record >= min_index &&
                           loss.from <= loss.to && loss.to <= len,
                       "records lost, but what and where is not told");
        }
        int final = st == BTP_E_TRUNCATED_FILE || st == BTP_E_NODES_LIMIT ||
                    st == BTP_E_LIVE_LIMIT || st == BTP_E_EXPANSION_LIMIT ||
                    st == BTP_E_META_LIMIT;
        if (final || !(flags & BTP_LOG_KEEP_GOING)) {
            FUZZ_CHECK(btp_log_reader_next(r, &rec) == st || (flags & BTP_LOG_KEEP_GOING),
                       "error not sticky");
            return st;
        }
    }
    return st;
}

/* Check the items kept; returns how many. */
static size_t read_meta(const btp_log_reader *r)
{
    const char *key;
    const void *data;
    size_t len, i;
    uint64_t before = 0, record;
    for (i = 0; btp_log_reader_meta(r, i, &key, &data, &len, &record) == BTP_OK; i++) {
        FUZZ_CHECK(i < (size_t)1 << 20, "endless metadata");
        FUZZ_CHECK(strlen(key) >= 1 && strlen(key) <= 255, "key length");
        FUZZ_CHECK(record >= before, "metadata out of file order");
        before = record;
    }
    btp_log_stats stats;
    btp_log_reader_stats(r, &stats);
    return i;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    unsigned flags = (data[0] & 1) ? BTP_LOG_KEEP_GOING : 0;
    unsigned where = data[0] >> 1;
    size_t len = size - 1;
    const uint8_t *log = fuzz_guard_copy(&in_guard, data + 1, len);

    btp_log_reader *r = NULL;
    btp_status st = btp_log_reader_open(&r, log, len, flags);
    if (st != BTP_OK) {
        FUZZ_CHECK(r == NULL, "reader set on error");
        FUZZ_CHECK(st == BTP_E_BAD_MAGIC || st == BTP_E_BAD_LOG_VERSION ||
                       st == BTP_E_CHECKSUM || st == BTP_E_TRUNCATED_FILE ||
                       st == BTP_E_OUT_OF_MEMORY,
                   "open status %d", st);
        return 0;
    }
    unsigned word_bits = btp_log_reader_word_bits(r);
    FUZZ_CHECK(btp_word_bits_valid(word_bits), "word bits %u", word_bits);
    n_recs = n_frames = 0;
    unsigned errors, cut_errors;
    btp_status end = read_all(r, flags, len, 1, 0, &errors);
    size_t items = read_meta(r);
    btp_log_stats whole;
    btp_log_reader_stats(r, &whole); /* file_bytes: where its END block ends */
    btp_log_reader_close(r);

    /* The streaming reader, fed in pieces of varying size, gives the same
     * records and the same end, and the metadata among them (kept, not
     * released: the same metadata limit applies). */
    piece_src src = {log, len, 0, (uint64_t)len * 2654435761u + where, 300};
    btp_log_reader_options o;
    btp_log_reader_options_init(&o);
    o.flags = flags | BTP_LOG_META_RECORDS;
    if (btp_log_reader_open_source(&r, pieces, &src, &o) == BTP_OK) {
        unsigned stream_errors;
        n_meta_recs = 0;
        btp_status stream_end = read_all(r, flags, len, 0, 1, &stream_errors);
        FUZZ_CHECK(stream_end == end && stream_errors == errors,
                   "stream reader ends with %d after %u errors, memory with %d after %u",
                   stream_end, stream_errors, end, errors);
        FUZZ_CHECK(n_meta_recs <= items && (end != BTP_END || errors || n_meta_recs == items),
                   "%zu metadata records, %zu items", n_meta_recs, items);
        btp_log_reader_close(r);
    } else {
        FUZZ_CHECK(0, "the stream reader cannot open what the memory reader did");
    }

    /* Cut it short: a prefix of the records, and a sound log reports the cut. */
    size_t cut = len * where / 128;
    const uint8_t *prefix = fuzz_guard_copy(&cut_guard, log, cut);
    st = btp_log_reader_open(&r, prefix, cut, 0);
    if (st == BTP_OK) {
        btp_status cut_end = read_all(r, 0, cut, 0, 1, &cut_errors);
        /* bytes after the END block are not read: a cut there is no cut */
        if (end == BTP_END && errors == 0 && cut < whole.file_bytes)
            FUZZ_CHECK(cut_end == BTP_E_TRUNCATED_FILE,
                       "sound log cut at %zu of %zu ends with %d", cut, len, cut_end);
        read_meta(r);
        btp_log_reader_close(r);
    }

    /* Seek to a block: the records from there are the whole log's. */
    if (btp_log_reader_open(&r, log, len, flags) == BTP_OK) {
        st = btp_log_reader_seek_block(r, where % 16);
        FUZZ_CHECK(st == BTP_OK || st == BTP_END || log_error(st), "seek status %d", st);
        if (st == BTP_OK && !(flags & BTP_LOG_KEEP_GOING))
            read_all(r, flags, len, 0, 1, &cut_errors);
        btp_log_reader_close(r);
    }
    return 0;
}
