/* The trace log reader on hostile input: blocks whose payload or header
 * fields were changed and whose checksums were then fixed, so the reader
 * cannot lean on the CRCs. Whatever it returns, it must not crash, overrun
 * (run it under ASan), loop or allocate without bound; it must end with
 * BTP_END or an error status. Also a few hand-made cases. */
#include <btpack/btpack.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "log/crc32.h"
#include "log_synth.h"
#include "membuf.h"

static uint32_t le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static void put32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

/* Recompute every block's payload and header CRC (layout: spec/log.md,
 * version 2: 80-byte block headers, their CRC in the last 4 bytes). */
#define HS 80
static void fix_crcs(unsigned char *p, size_t len)
{
    for (size_t off = 32; off + HS <= len;) {
        uint32_t stored = le32(p + off + 8);
        if (stored > len - off - HS)
            break;
        put32(p + off + 60, btp_crc32_update(0, p + off + HS, stored));
        put32(p + off + HS - 4, btp_crc32_update(0, p + off, HS - 4));
        off += HS + stored;
    }
}

static synth mut; /* its random numbers choose the mutations */
static uint64_t rnd(void)
{
    return synth_rand(&mut);
}

/* Read everything; count outcomes. */
static int read_all(const unsigned char *p, size_t len, unsigned flags)
{
    btp_log_reader *r;
    btp_log_reader_options o;
    btp_log_reader_options_init(&o);
    o.flags = flags;
    btp_status st = btp_log_reader_open_opts(&r, p, len, &o);
    if (st != BTP_OK)
        return st >= BTP_E_FIRST;
    btp_log_record rec;
    unsigned long n = 0;
    int ok = 1;
    for (int guard = 0; guard < 1000000; guard++) {
        st = btp_log_reader_next(r, &rec);
        if (st == BTP_OK) {
            n++;
            if (rec.n_frames > BTP_LOG_MAX_DEPTH || (rec.n_frames && !rec.frames))
                ok = 0;
            continue;
        }
        if (st == BTP_END || st == BTP_E_TRUNCATED_FILE || !(flags & BTP_LOG_KEEP_GOING))
            break;
        if (st < BTP_E_FIRST)
            ok = 0;
    }
    if (st == BTP_OK) /* the guard ran out: the reader looped */
        ok = 0;
    btp_log_stats s;
    btp_log_reader_stats(r, &s);
    btp_log_reader_close(r);
    return ok;
}

int main(void)
{
    membuf log = {0};
    btp_log_writer_options opt;
    btp_log_writer_options_init(&opt, 64);
    opt.flags = BTP_LOG_WRITE_NO_ZLIB;
    opt.block_bytes = 500;
    opt.max_nodes = 400;
    opt.max_live = 100;
    btp_log_writer *w;
    CHECK(btp_log_writer_open(&w, mb_sink, &log, &opt) == BTP_OK, "open");
    CHECK(btp_log_writer_meta(w, "maps", "x", 1) == BTP_OK, "meta");
    synth s;
    synth_init(&s, 11, 64, 0);
    synth_rec rec;
    /* blocks of several items, among the records and in the end block */
    btp_log_meta_item items[] = {{"a", "1", 1}, {"bb", "22", 2}, {"c", "", 0}};
    for (int i = 0; i < 1500; i++) {
        synth_next(&s, &rec, (i & 7) == 0);
        CHECK(synth_put(w, &rec) == BTP_OK, "put %d", i);
        if (i % 500 == 250)
            CHECK(btp_log_writer_meta_items(w, items, 3) == BTP_OK, "items");
    }
    synth_free_all(&s);
    CHECK(btp_log_writer_close_items(w, items, 2) == BTP_OK, "close");
    CHECK(read_all(log.p, log.len, 0), "clean log");

    synth_init(&mut, 99, 64, 0);
    unsigned char *m = malloc(log.len);
    unsigned long bad = 0;
    const int rounds = 4000;
    for (int round = 0; round < rounds; round++) {
        memcpy(m, log.p, log.len);
        int edits = 1 + (int)(rnd() % 4);
        for (int e = 0; e < edits; e++) {
            size_t at = 32 + rnd() % (log.len - 32);
            switch (rnd() % 4) {
            case 0: m[at] ^= (unsigned char)(1u << (rnd() % 8)); break;
            case 1: m[at] = (unsigned char)rnd(); break;
            case 2: m[at] = 0xff; break;
            default: m[at] = 0x80; break; /* varint continuation */
            }
        }
        fix_crcs(m, log.len);
        if (!read_all(m, log.len, 0) || !read_all(m, log.len, BTP_LOG_KEEP_GOING) ||
            !read_all(m, log.len, BTP_LOG_KEEP_GOING | BTP_LOG_META_RECORDS))
            bad++;
    }
    CHECK(bad == 0, "%lu of %d mutated logs misbehaved", bad, rounds);

    /* hand-made: a file header claiming the largest limits, then nothing */
    memcpy(m, log.p, 32);
    put32(m + 12, BTP_LOG_MAX_NODES_LIMIT);
    put32(m + 16, BTP_LOG_MAX_LIVE_LIMIT);
    put32(m + 28, btp_crc32_update(0, m, 28));
    CHECK(read_all(m, 32, 0), "header only");
    /* limits beyond the format's */
    put32(m + 12, BTP_LOG_MAX_NODES_LIMIT + 1);
    put32(m + 28, btp_crc32_update(0, m, 28));
    btp_log_reader *r;
    CHECK(btp_log_reader_open(&r, m, 32, 0) == BTP_E_BAD_LOG_VERSION, "limit beyond the format");
    free(m);
    free(log.p);
    return check_finish();
}
