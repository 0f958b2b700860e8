/* MODEL4 (spec/log.md): the range-coded dictionary and tags.
 *  - round trips of random stacks of every frame kind (omit counts up to
 *    the word's mask, values 0 and the mask, recursion, an empty stack,
 *    stacks 4096 deep) on 16-, 32- and 64-bit words, in small and large
 *    blocks and small dictionaries (segments), referenced in runs, cycles
 *    and at random, by traces, allocations and frees: every record comes
 *    back (the tags range-coded, or as bytes when deflate does better);
 *  - a block cut out: the next block's dictionary entry on a node of the
 *    lost block, and every entry after it, give unknown stacks (never
 *    wrong frames); stacks of earlier blocks stay exact. */
#include <btpack/btpack.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "membuf.h"
#include "test_rng.h"

#define MAX_DEPTH 4096

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void)
{
    return test_rng(&rng);
}

typedef struct stk {
    size_t n;
    btp_frame *f;
} stk;

/* A frame of kind k on a word of `bits`, near `near` (shared callee chains
 * and nearby addresses) or anywhere. */
static btp_frame frame(unsigned bits, uint64_t near)
{
    uint64_t mask = btp_word_mask(bits);
    btp_frame f;
    unsigned r = (unsigned)(rnd() % 16);
    f.kind = r == 0 ? BTP_FRAME_OMIT : r == 1 ? BTP_FRAME_PC : r == 2 ? BTP_FRAME_ASYNC
                                                                      : BTP_FRAME_RA;
    switch (rnd() % 6) {
    case 0:
        f.value = mask;
        break;
    case 1:
        f.value = rnd() & mask;
        break;
    case 2:
        f.value = (near + (rnd() % 4096) - 2048) & mask;
        break;
    default:
        f.value = (0x400000 + (rnd() % 64) * 0x40) & mask; /* a few hot frames */
        break;
    }
    if (f.kind == BTP_FRAME_OMIT && f.value == 0)
        f.value = 1;
    if (f.kind != BTP_FRAME_OMIT && rnd() % 8 == 0)
        f.value = 0;
    return f;
}

/* Stacks that share outer frames: each from an earlier one's outer part
 * plus new or repeated frames. */
static void make_stacks(stk *s, size_t count, unsigned bits)
{
    for (size_t i = 0; i < count; i++) {
        size_t n = i == 0 ? 0 : i == 1 ? MAX_DEPTH : 1 + (size_t)(rnd() % 40);
        s[i].n = n;
        s[i].f = malloc((n ? n : 1) * sizeof *s[i].f);
        if (!s[i].f)
            exit(2);
        const stk *base = i > 2 ? &s[rnd() % i] : NULL;
        size_t keep = base && base->n && base->n < n ? (size_t)(rnd() % base->n) : 0;
        /* outer frames: the last `keep` of base */
        for (size_t k = 0; k < keep; k++)
            s[i].f[n - keep + k] = base->f[base->n - keep + k];
        for (size_t k = n - keep; k-- > 0;) {
            uint64_t near = k + 1 < n ? s[i].f[k + 1].value : 0x400000;
            s[i].f[k] = rnd() % 6 == 0 && k + 1 < n ? s[i].f[k + 1] : frame(bits, near);
        }
    }
}

static int same_frames(const btp_log_record *r, const stk *s)
{
    if (r->n_frames != s->n || (s->n && !r->frames))
        return 0;
    for (size_t k = 0; k < s->n; k++)
        if (r->frames[k].kind != s->f[k].kind || r->frames[k].value != s->f[k].value)
            return 0;
    return 1;
}

static void round_trip(unsigned bits, size_t block, uint32_t max_nodes, int zlib)
{
    enum { STACKS = 300, RECORDS = 6000 };
    stk s[STACKS];
    make_stacks(s, STACKS, bits);
    size_t *order = malloc(RECORDS * sizeof *order);
    if (!order)
        exit(2);
    for (size_t i = 0; i < RECORDS; i++) {
        switch ((i / 200) % 3) {
        case 0: /* a cycle of a few stacks (the order-2 table) */
            order[i] = (i % 7) * 13 % STACKS;
            break;
        case 1: /* pairs that follow each other (the successor lists) */
            order[i] = i % 2 ? (order[i - 1] + 1) % STACKS : rnd() % 30;
            break;
        default:
            order[i] = rnd() % STACKS;
        }
    }
    membuf log = {0};
    btp_log_writer_options opt;
    btp_log_writer_options_init(&opt, bits);
    opt.block_bytes = block;
    opt.max_nodes = max_nodes;
    opt.flush_interval_ms = 0;
    if (!zlib)
        opt.flags = BTP_LOG_WRITE_NO_ZLIB;
    btp_log_writer *w = NULL;
    btp_status st = btp_log_writer_open(&w, mb_sink, &log, &opt);
    CHECK(st == BTP_OK, "open: %s", btp_status_name(st));
    if (st != BTP_OK)
        return;
    size_t written = 0;
    for (size_t i = 0; i < RECORDS; i++) {
        const stk *x = &s[order[i]];
        /* traces, allocations (sizes by stack: tags that repeat) and frees
         * of the allocation before */
        if (i % 4 == 1)
            st = btp_log_writer_alloc(w, 16 * (order[i] % 7) + 1, 0x10000 + 64 * i, x->f, x->n);
        else if (i % 4 == 2)
            st = btp_log_writer_free(w, 0x10000 + 64 * (i - 1));
        else
            st = btp_log_writer_trace(w, x->f, x->n, (int)(i % 5 == 0));
        CHECK(st == BTP_OK, "record %zu: %s", i, btp_status_name(st));
        written += st == BTP_OK;
    }
    CHECK(btp_log_writer_close(w) == BTP_OK, "close");
    btp_log_reader_options ro;
    btp_log_reader_options_init(&ro);
    btp_log_reader *r = NULL;
    st = btp_log_reader_open_opts(&r, log.p, log.len, &ro);
    CHECK(st == BTP_OK, "reader: %s", btp_status_name(st));
    size_t got = 0, good = 0;
    btp_log_record rec;
    while (r && (st = btp_log_reader_next(r, &rec)) == BTP_OK) {
        if (got < RECORDS && !rec.flags &&
            (got % 4 == 2 ? rec.kind == BTP_LOG_FREE && rec.ptr == 0x10000 + 64 * (got - 1)
             : got % 4 == 1
                 ? rec.kind == BTP_LOG_ALLOC && rec.size == 16 * (order[got] % 7) + 1 &&
                       rec.ptr == 0x10000 + 64 * got && same_frames(&rec, &s[order[got]])
                 : rec.kind == BTP_LOG_TRACE && rec.truncated == (got % 5 == 0) &&
                       same_frames(&rec, &s[order[got]])))
            good++;
        got++;
    }
    CHECK(st == BTP_END && got == written && good == written,
          "%u-bit, %zu-byte blocks, %u nodes: %zu of %zu records back, %zu right (%s)", bits,
          block, max_nodes, got, written, good, btp_status_name(st));
    btp_log_reader_close(r);
    free(log.p);
    free(order);
    for (size_t i = 0; i < STACKS; i++)
        free(s[i].f);
}

static uint32_t get32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Stacks A..E (innermost first): block 1 defines A (a1 r0) and B (b1 r0),
 * block 2 C (c2 c1 r0), block 3 D (d1 c2 c1 r0: on block 2's nodes), then
 * E (e1 a1 r0: on block 1's), then uses A and B again. Block 2 cut out. */
static void lost_block(void)
{
    static const uint64_t A[] = {0x1a1, 0x100}, B[] = {0x1b1, 0x100}, C[] = {0x1c2, 0x1c1, 0x100},
                          D[] = {0x1d1, 0x1c2, 0x1c1, 0x100}, E[] = {0x1e1, 0x1a1, 0x100};
    const struct {
        const uint64_t *v;
        size_t n;
    } stacks[] = {{A, 2}, {B, 2}, {C, 3}, {D, 4}, {E, 3}};
    /* stack per record; -1: flush the block */
    static const int plan[] = {0, 1, 0, -1, 2, 2, -1, 3, 4, 0, 1, 3, 4};
    membuf log = {0};
    btp_log_writer_options opt;
    btp_log_writer_options_init(&opt, 64);
    opt.flags = BTP_LOG_WRITE_NO_ZLIB;
    opt.flush_interval_ms = 0;
    btp_log_writer *w = NULL;
    CHECK(btp_log_writer_open(&w, mb_sink, &log, &opt) == BTP_OK, "open");
    if (!w)
        return;
    for (size_t i = 0; i < sizeof plan / sizeof plan[0]; i++) {
        if (plan[i] < 0) {
            CHECK(btp_log_writer_flush(w) == BTP_OK, "flush");
            continue;
        }
        btp_frame f[4];
        for (size_t k = 0; k < stacks[plan[i]].n; k++)
            f[k] = (btp_frame){stacks[plan[i]].v[k], BTP_FRAME_RA};
        CHECK(btp_log_writer_trace(w, f, stacks[plan[i]].n, 0) == BTP_OK, "trace");
    }
    CHECK(btp_log_writer_close(w) == BTP_OK, "close");
    /* the blocks: 32-byte file header, then 80-byte headers + payloads */
    size_t at = 32, rec_block = 0, cut_from = 0, cut_to = 0;
    while (at + 80 <= log.len) {
        size_t end = at + 80 + get32(log.p + at + 8);
        if (log.p[at + 4] == 2 && ++rec_block == 2) {
            cut_from = at;
            cut_to = end;
        }
        at = end;
    }
    CHECK(rec_block == 3 && cut_to > cut_from, "three record blocks (%zu)", rec_block);
    memmove(log.p + cut_from, log.p + cut_to, log.len - cut_to);
    log.len -= cut_to - cut_from;
    btp_log_reader *r = NULL;
    CHECK(btp_log_reader_open(&r, log.p, log.len, BTP_LOG_KEEP_GOING) == BTP_OK, "reader");
    /* records 0-2 exact, 3-4 lost, then D and E unknown, A and B exact, D
     * and E unknown */
    static const int want[] = {0, 1, 0, 3, 4, 0, 1, 3, 4};
    size_t got = 0, lost = 0;
    btp_status st;
    btp_log_record rec;
    while (r && (st = btp_log_reader_next(r, &rec)) != BTP_END) {
        if (st == BTP_E_RECORDS_LOST) {
            lost++;
            continue;
        }
        CHECK(st == BTP_OK, "next: %s", btp_status_name(st));
        if (st != BTP_OK || got >= sizeof want / sizeof want[0])
            break;
        int s = want[got];
        if (s >= 3) {
            CHECK(rec.flags & BTP_LOG_REC_STACK_UNKNOWN, "record %zu (stack %c): unknown",
                  got, 'A' + s);
        } else {
            int same = !rec.flags && rec.n_frames == stacks[s].n;
            for (size_t k = 0; same && k < stacks[s].n; k++)
                same = rec.frames[k].value == stacks[s].v[k];
            CHECK(same, "record %zu (stack %c): exact frames", got, 'A' + s);
        }
        got++;
    }
    CHECK(got == sizeof want / sizeof want[0] && lost == 1, "%zu records, %zu losses", got,
          lost);
    btp_log_reader_close(r);
    free(log.p);
}

int main(void)
{
    static const unsigned bits[] = {16, 32, 64};
    for (size_t i = 0; i < 3; i++) {
        round_trip(bits[i], 2u << 20, 1u << 20, 0);
        round_trip(bits[i], 512, 1u << 20, 0);
        round_trip(bits[i], 4096, 5000, 0); /* several segments */
    }
    if (btp_log_have_zlib())
        round_trip(64, 128u << 10, 1u << 20, 1);
    lost_block();
    return check_finish();
}
