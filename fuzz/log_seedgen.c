/*
 * Seed generator for the log_read fuzz target (run by make_seeds.py, not a
 * test): writes a small trace log of the synthetic allocation stream of
 * tests/log/log_synth.h with the library's own writer.
 *
 *   log_seedgen OUT SEED WORD_BITS RECORDS BLOCK_BYTES MAX_NODES ZLIB(0|1) [ITEMS(0|1)]
 *
 * Small blocks and a small dictionary cap give several blocks and segments
 * in a few hundred bytes, so the fuzzer starts from every block kind. With
 * ITEMS 1 the metadata comes as blocks of several items (at the start and
 * among the records) and items in the end block, as the heap tracer writes
 * it (btp_log_writer_meta_items, btp_log_writer_close_items).
 */
#include <btpack/btpack.h>
#include <stdio.h>
#include <stdlib.h>

#include "log/log_synth.h"

static btp_status to_file(void *ctx, const void *data, size_t len)
{
    return fwrite(data, 1, len, ctx) == len ? BTP_OK : BTP_E_IO;
}

int main(int argc, char **argv)
{
    if (argc != 8 && argc != 9) {
        fprintf(stderr, "usage: %s OUT SEED WORD_BITS RECORDS BLOCK_BYTES MAX_NODES ZLIB [ITEMS]\n",
                argv[0]);
        return 2;
    }
    int items = argc == 9 && atoi(argv[8]) != 0;
    static const btp_log_meta_item start[] = {
        {"comment", "# seed\n", 7}, {"tracer", "pid=1 exe=/bin/seed method=fp\n", 30},
        {"cmdline", "seed\0-x\0", 8}};
    static const btp_log_meta_item middle[] = {{"clock", "0 1000\n3 2000\n", 14},
                                               {"images", "", 0}};
    static const btp_log_meta_item end[] = {{"clock", "9 9000\n", 7},
                                            {"tracer-end", "end=exit lost=0\n", 16}};
    unsigned word_bits = (unsigned)atoi(argv[3]);
    int records = atoi(argv[4]);
    btp_log_writer_options opt;
    btp_log_writer_options_init(&opt, word_bits);
    opt.block_bytes = (size_t)atol(argv[5]);
    opt.flush_interval_ms = 0; /* the same seeds every time */
    opt.max_nodes = (uint32_t)atol(argv[6]);
    if (atoi(argv[7]) == 0 || !btp_log_have_zlib())
        opt.flags |= BTP_LOG_WRITE_NO_ZLIB;
    FILE *f = fopen(argv[1], "wb");
    if (!f) {
        perror(argv[1]);
        return 1;
    }
    btp_log_writer *w;
    btp_status st = btp_log_writer_open(&w, to_file, f, &opt);
    if (st == BTP_OK)
        st = items ? btp_log_writer_meta_items(w, start, 3)
                   : btp_log_writer_meta(w, "comment", "# seed\n", 7);
    synth s;
    synth_rec rec;
    synth_init(&s, (uint64_t)atol(argv[2]), word_bits, 0);
    for (int i = 0; i < records && st == BTP_OK; i++) {
        synth_next(&s, &rec, i % 3 == 0);
        st = synth_put(w, &rec);
        if (items && st == BTP_OK && i == records / 2)
            st = btp_log_writer_meta_items(w, middle, 2);
    }
    synth_free_all(&s);
    if (w)
        st = st == BTP_OK ? btp_log_writer_close_items(w, end, items ? 2 : 0)
                          : (btp_log_writer_abandon(w), st);
    if (fclose(f) != 0 && st == BTP_OK)
        st = BTP_E_IO;
    if (st != BTP_OK) {
        fprintf(stderr, "%s: %s\n", argv[1], btp_strerror(st));
        return 1;
    }
    return 0;
}
