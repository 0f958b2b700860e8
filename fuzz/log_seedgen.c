/*
 * Seed generator for the log_read fuzz target (run by make_seeds.py, not a
 * test): writes a small trace log of the synthetic allocation stream of
 * tests/log/log_synth.h with the library's own writer.
 *
 *   log_seedgen OUT SEED WORD_BITS RECORDS BLOCK_BYTES MAX_NODES PACK
 *
 * PACK: 0 stored blocks, 1 zlib, 2 LZMA2 (stored where the build lacks it).
 *
 * Small blocks and a small dictionary cap give several blocks and segments
 * in a few hundred bytes, so the fuzzer starts from every block kind.
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
    if (argc != 8) {
        fprintf(stderr, "usage: %s OUT SEED WORD_BITS RECORDS BLOCK_BYTES MAX_NODES PACK\n",
                argv[0]);
        return 2;
    }
    unsigned word_bits = (unsigned)atoi(argv[3]);
    int records = atoi(argv[4]);
    btp_log_writer_options opt;
    btp_log_writer_options_init(&opt, word_bits);
    opt.block_bytes = (size_t)atol(argv[5]);
    opt.flush_interval_ms = 0; /* the same seeds every time */
    opt.max_nodes = (uint32_t)atol(argv[6]);
    int pack = atoi(argv[7]);
    if (pack == 2 && btp_log_have_lzma())
        opt.flags |= BTP_LOG_WRITE_LZMA;
    else if (pack != 1 || !btp_log_have_zlib())
        opt.flags |= BTP_LOG_WRITE_NO_ZLIB;
    FILE *f = fopen(argv[1], "wb");
    if (!f) {
        perror(argv[1]);
        return 1;
    }
    btp_log_writer *w;
    btp_status st = btp_log_writer_open(&w, to_file, f, &opt);
    if (st == BTP_OK)
        st = btp_log_writer_meta(w, "comment", "# seed\n", 7);
    synth s;
    synth_rec rec;
    synth_init(&s, (uint64_t)atol(argv[2]), word_bits, 0);
    for (int i = 0; i < records && st == BTP_OK; i++) {
        synth_next(&s, &rec, i % 3 == 0);
        st = synth_put(w, &rec);
    }
    synth_free_all(&s);
    if (w)
        st = st == BTP_OK ? btp_log_writer_close(w) : (btp_log_writer_abandon(w), st);
    if (fclose(f) != 0 && st == BTP_OK)
        st = BTP_E_IO;
    if (st != BTP_OK) {
        fprintf(stderr, "%s: %s\n", argv[1], btp_strerror(st));
        return 1;
    }
    return 0;
}
