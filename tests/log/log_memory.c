/* The writer's memory stays bounded on a long stream whose live set and
 * distinct stacks grow without end: with small caps it must start new
 * segments and forget old allocations instead of growing. Measured with
 * glibc's mallinfo2 (allocated bytes in use). The log is then read back and
 * compared with the stream. */
#include <btpack/btpack.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "log_synth.h"
#include "membuf.h"

static size_t out_bytes;
static btp_status count_sink(void *ctx, const void *data, size_t len)
{
    (void)ctx, (void)data;
    out_bytes += len;
    return BTP_OK;
}

/* Write `total` records of a leaking stream (every allocation stays live,
 * most stacks new) and sample the heap in use: at `checkpoint` and the
 * peak after it. */
static void measure(const btp_log_writer_options *opt, long total, long checkpoint,
                    size_t *at_checkpoint, size_t *peak_after)
{
    btp_log_writer *w;
    btp_status st = btp_log_writer_open(&w, count_sink, NULL, opt);
    CHECK(st == BTP_OK, "open: %s", btp_strerror(st));
    synth s;
    synth_init(&s, 3, 64, 1);
    synth_rec r;
    *at_checkpoint = *peak_after = 0;
    out_bytes = 0;
    for (long i = 0; i < total && st == BTP_OK; i++) {
        synth_next(&s, &r, (i & 3) == 0);
        st = synth_put(w, &r);
        if ((i & 1023) == 0) {
            struct mallinfo2 mi = mallinfo2();
            size_t used = mi.uordblks + mi.hblkhd; /* small chunks + mmapped ones */
            if (i == checkpoint)
                *at_checkpoint = used;
            else if (i > checkpoint && used > *peak_after)
                *peak_after = used;
        }
    }
    CHECK(st == BTP_OK, "write: %s", btp_strerror(st));
    CHECK(btp_log_writer_close(w) == BTP_OK, "close");
    synth_free_all(&s);
    printf("caps %u nodes, %u live: heap in use after %ld records: %zu bytes; peak over the "
           "next %ld: %zu bytes; log %zu bytes\n", opt->max_nodes, opt->max_live, checkpoint,
           *at_checkpoint, total - checkpoint, *peak_after, out_bytes);
}

int main(void)
{
    btp_log_writer_options opt;
    btp_log_writer_options_init(&opt, 64);
    opt.block_bytes = 64 << 10;
    opt.flags = btp_log_have_zlib() ? 0 : BTP_LOG_WRITE_NO_ZLIB;
    const long checkpoint = 98 * 1024;

    /* 0. control: with the default caps (far above this stream) the heap
     * grows with the live set and the dictionary, so the measure works */
    size_t at_checkpoint, peak_after;
    measure(&opt, 300000, checkpoint, &at_checkpoint, &peak_after);
    int measured = at_checkpoint > 0; /* a sanitizer's allocator reports nothing */
    if (measured)
        CHECK(peak_after > at_checkpoint && peak_after > 8u << 20,
              "uncapped writer heap should grow past the capped bound: %zu -> %zu",
              at_checkpoint, peak_after);

    /* 1. small caps: the same kind of stream, twice as long, stays bounded */
    opt.max_nodes = 20000;
    opt.max_live = 5000;
    measure(&opt, 600000, checkpoint, &at_checkpoint, &peak_after);
    measured = measured && at_checkpoint > 0;
    /* caps: 20000 nodes, 5000 live, 64 KiB blocks; allow the tables' doubling */
    if (measured) {
        CHECK(peak_after < 8u << 20, "writer heap %zu bytes", peak_after);
        CHECK(peak_after < at_checkpoint * 2 + (1u << 20), "writer heap grew: %zu -> %zu",
              at_checkpoint, peak_after);
    }

    /* 2. the same caps on a smaller stream with frees, read back exactly */
    membuf log = {0};
    btp_log_writer *w;
    synth s;
    synth_rec r;
    btp_status st = btp_log_writer_open(&w, mb_sink, &log, &opt);
    synth_init(&s, 5, 64, 0);
    const long n2 = 200000;
    for (long i = 0; i < n2 && st == BTP_OK; i++) {
        synth_next(&s, &r, (i & 7) == 0);
        st = synth_put(w, &r);
    }
    CHECK(st == BTP_OK && btp_log_writer_close(w) == BTP_OK, "write 2");
    synth_free_all(&s);
    btp_log_reader *rd;
    st = btp_log_reader_open(&rd, log.p, log.len, 0);
    CHECK(st == BTP_OK, "reader: %s", btp_strerror(st));
    synth_init(&s, 5, 64, 0);
    long good = 0;
    btp_log_record rec;
    while (st == BTP_OK && (st = btp_log_reader_next(rd, &rec)) == BTP_OK) {
        synth_next(&s, &r, (good & 7) == 0);
        int ok = rec.kind == r.kind && rec.ptr == r.ptr && rec.flags == 0 &&
                 rec.truncated == r.truncated;
        if (ok && r.kind != BTP_LOG_FREE) {
            ok = rec.size == r.size && rec.n_frames == r.n;
            for (size_t k = 0; ok && k < r.n; k++)
                ok = rec.frames[k].value == r.frames[k].value &&
                     rec.frames[k].kind == r.frames[k].kind;
        }
        if (!ok) {
            fprintf(stderr, "record %ld: kind %d/%d ptr %llx/%llx flags %u trunc %d/%d n %zu/%zu\n",
                    good, rec.kind, r.kind, (unsigned long long)rec.ptr,
                    (unsigned long long)r.ptr, rec.flags, rec.truncated, r.truncated,
                    rec.n_frames, r.n);
            break;
        }
        good++;
    }
    CHECK(st == BTP_END && good == n2, "read back %ld of %ld, %s", good, n2, btp_status_name(st));
    btp_log_stats stats;
    btp_log_reader_stats(rd, &stats);
    CHECK(stats.segments > 1, "several segments (%llu)", (unsigned long long)stats.segments);
    btp_log_reader_close(rd);
    synth_free_all(&s);
    free(log.p);
    if (!measured && !check_failed_) {
        printf("skip: mallinfo2 reports no heap use (sanitizer allocator?): the memory bound "
               "was not measured (the read-back passed)\n");
        return 77;
    }
    return check_finish();
}
