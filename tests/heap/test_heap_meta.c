/* The allocation metadata API (include/btpack/heap.h): attach/detach over a
 * real allocator, walks, lock hooks, realloc, damage detection, and the
 * lws/JSON/log dumps read back with the library's own decoders. */
#include <btpack/btpack.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

static int locks, unlocks, depth;

static void lk(void *ctx)
{
    (void)ctx;
    locks++;
    depth++;
    CHECK(depth == 1, "lock taken twice");
}

static void ulk(void *ctx)
{
    (void)ctx;
    unlocks++;
    depth--;
}

static void *h_malloc(btp_heap *h, size_t size, const btp_frame *f, size_t n)
{
    void *raw = aligned_alloc(16, (btp_heap_overhead(h) + size + 15) & ~(size_t)15);
    void *user = NULL;
    CHECK(btp_heap_attach(h, raw, size, f, n, &user) == BTP_OK, "attach");
    CHECK(((uintptr_t)user & 15) == 0, "user pointer keeps the alignment");
    return user;
}

static void h_free(btp_heap *h, void *user)
{
    void *raw;
    size_t size;
    btp_status st = btp_heap_detach(h, user, &raw, &size);
    CHECK(st == BTP_OK, "detach: %s", btp_status_name(st));
    free(raw);
}

typedef struct seen {
    size_t n;
    size_t sizes[16];
    btp_frame frames[16][40];
    size_t nf[16];
    int trunc[16];
} seen;

static int collect(void *ctx, const btp_heap_alloc *a)
{
    seen *s = ctx;
    if (s->n < 16) {
        s->sizes[s->n] = a->size;
        s->trunc[s->n] = a->truncated;
        btp_status st = btp_heap_frames(a, s->frames[s->n], 40, &s->nf[s->n]);
        CHECK(st == BTP_OK, "frames: %s", btp_status_name(st));
    }
    s->n++;
    return 0;
}

typedef struct text {
    char buf[8192];
    size_t len;
} text;

static int emit(void *ctx, const char *s, size_t n)
{
    text *t = ctx;
    if (t->len + n > sizeof t->buf)
        return 1;
    memcpy(t->buf + t->len, s, n);
    t->len += n;
    return 0;
}

static void stack(btp_frame *f, size_t n, uint64_t seed)
{
    for (size_t i = 0; i < n; i++)
        f[i] = (btp_frame){0x400000 + seed * 0x1000 + i * 0x37 + (i * i * 13) % 97,
                           i ? BTP_FRAME_RA : BTP_FRAME_PC};
}

static void test_codec(btp_heap_codec codec)
{
    btp_heap h;
    btp_heap_config cfg = {.codec = codec, .word_bits = 64, .slot_bytes = 64, .align = 16,
                           .lock = lk, .unlock = ulk};
    CHECK(btp_heap_init(&h, &cfg) == BTP_OK, "init");
    CHECK(btp_heap_overhead(&h) % 16 == 0 && btp_heap_overhead(&h) >= sizeof(btp_heap_hdr) + 64,
          "overhead %zu", btp_heap_overhead(&h));
    btp_frame f[3][40];
    size_t depth_of[3] = {4, 9, 40};
    for (int i = 0; i < 3; i++)
        stack(f[i], depth_of[i], (uint64_t)i);
    void *p0 = h_malloc(&h, 10, f[0], 4);
    void *p1 = h_malloc(&h, 200, f[1], 9);
    void *p2 = h_malloc(&h, 7, f[2], 40);
    memset(p0, 0xAA, 10);
    memset(p1, 0xBB, 200);
    CHECK(h.count == 3 && h.bytes == 217 && h.peak_bytes == 217, "counters");
    seen s = {0};
    CHECK(btp_heap_walk(&h, collect, &s) == BTP_OK && s.n == 3, "walk");
    CHECK(s.sizes[0] == 10 && s.sizes[1] == 200 && s.sizes[2] == 7, "oldest first");
    for (int i = 0; i < 2; i++) {
        CHECK(s.nf[i] == depth_of[i] && !s.trunc[i], "depth %zu", s.nf[i]);
        for (size_t k = 0; k < s.nf[i] && k < depth_of[i]; k++)
            CHECK(s.frames[i][k].value == f[i][k].value, "frame %d/%zu", i, k);
    }
    /* 40 frames never fit 64 bytes: cut, innermost kept */
    CHECK(s.trunc[2] && s.nf[2] > 0 && s.nf[2] < 40, "cut stack: %zu", s.nf[2]);
    for (size_t k = 0; k < s.nf[2]; k++)
        CHECK(s.frames[2][k].value == f[2][k].value, "cut frame %zu", k);

    /* JSON dump: one line per allocation, each with its size */
    text t = {{0}, 0};
    CHECK(btp_heap_dump_json(&h, emit, &t) == BTP_OK, "json dump");
    t.buf[t.len] = 0;
    CHECK(strstr(t.buf, "\"alloc_size\":200,") && strstr(t.buf, "\"addr\":\"0x401044\""),
          "json: %s", t.buf);
    size_t lines = 0;
    for (size_t i = 0; i < t.len; i++)
        lines += t.buf[i] == '\n';
    CHECK(lines == 3, "json lines %zu", lines);

    /* lws dump: each line decodes to the size and the frames */
    t.len = 0;
    CHECK(btp_heap_dump_lws(&h, emit, &t) == BTP_OK, "lws dump");
    size_t pos = 0, start, len, k = 0;
    while (btp_lws_scan(t.buf, t.len, &pos, &start, &len) == BTP_OK) {
        btp_frame out[31];
        btp_lws_info info;
        btp_status st = btp_lws_m_decode(t.buf + start, len, 64, out, 31, &info);
        CHECK(st == BTP_OK, "m decode %s", btp_status_name(st));
        CHECK(info.alloc_size == s.sizes[k], "lws size %llu", (unsigned long long)info.alloc_size);
        size_t want = s.nf[k] < 31 ? s.nf[k] : 31;
        CHECK(info.depth == want, "lws depth %zu want %zu", info.depth, want);
        for (size_t j = 0; j < want && j < info.depth; j++)
            CHECK(out[j].value == s.frames[k][j].value, "lws frame %zu", j);
        k++;
    }
    CHECK(k == 3, "lws records %zu", k);

    /* realloc: detach, move, reattach keeps the backtrace */
    void *raw;
    size_t sz;
    CHECK(btp_heap_detach(&h, p1, &raw, &sz) == BTP_OK && sz == 200, "detach for realloc");
    void *nraw = aligned_alloc(16, btp_heap_overhead(&h) + 4096);
    memcpy(nraw, raw, btp_heap_overhead(&h) + 200);
    free(raw);
    void *np1;
    CHECK(btp_heap_reattach(&h, nraw, 4000, &np1) == BTP_OK, "reattach");
    CHECK(((unsigned char *)np1)[199] == 0xBB, "contents kept");
    memset(&s, 0, sizeof s);
    CHECK(btp_heap_walk(&h, collect, &s) == BTP_OK && s.n == 3, "walk after realloc");
    CHECK(s.sizes[2] == 4000 && s.nf[2] == 9 && s.frames[2][8].value == f[1][8].value,
          "realloc kept the stack");

    /* double free and foreign pointers are refused, nothing changes */
    /* (the second detach comes before the real free: reading freed memory
     * is what an allocator's own metadata may do, not a test) */
    void *raw0;
    CHECK(btp_heap_detach(&h, p0, &raw0, NULL) == BTP_OK, "detach p0");
    CHECK(btp_heap_detach(&h, p0, &raw, NULL) == BTP_E_HEAP_FOREIGN && raw == NULL,
          "double free");
    free(raw0);
    unsigned char foreign[256] = {0};
    CHECK(btp_heap_detach(&h, foreign + 200, &raw, NULL) == BTP_E_HEAP_FOREIGN, "foreign");
    CHECK(h.count == 2, "count after refusals");

    /* an underrun over a header's links: detach and walk report damage */
    btp_heap_hdr *hd = (btp_heap_hdr *)((unsigned char *)p2 - btp_heap_overhead(&h));
    btp_heap_link saved = hd->link;
    hd->link.next = (btp_heap_link *)foreign;
    CHECK(btp_heap_detach(&h, p2, &raw, NULL) == BTP_E_HEAP_CORRUPT, "broken links");
    hd->link = saved;
    /* a cycle: the walk stops after count nodes */
    btp_heap_hdr *hd1 = (btp_heap_hdr *)((unsigned char *)np1 - btp_heap_overhead(&h));
    btp_heap_link *next0 = hd->link.next, *next1 = hd1->link.next;
    hd1->link.next = &hd->link;
    memset(&s, 0, sizeof s);
    CHECK(btp_heap_walk(&h, collect, &s) == BTP_E_HEAP_CORRUPT && s.n <= 2, "cycle %zu", s.n);
    hd->link.next = next0;
    hd1->link.next = next1;

    /* a trace log dump reads back as ALLOC records */
    btp_log_writer *w;
    char path[] = "/tmp/btpack-heapmeta-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0, "mkstemp");
    CHECK(btp_log_writer_open_fd(&w, fd, NULL) == BTP_OK, "writer");
    CHECK(btp_heap_dump_log(&h, w) == BTP_OK, "log dump");
    CHECK(btp_log_writer_close(w) == BTP_OK, "close");
    FILE *fp = fopen(path, "rb");
    static unsigned char logbuf[1 << 16];
    size_t ln = fp ? fread(logbuf, 1, sizeof logbuf, fp) : 0;
    if (fp)
        fclose(fp);
    unlink(path);
    btp_log_reader *r;
    CHECK(btp_log_reader_open(&r, logbuf, ln, 0) == BTP_OK, "reader");
    btp_log_record rec;
    size_t recs = 0;
    while (btp_log_reader_next(r, &rec) == BTP_OK) {
        CHECK(rec.kind == BTP_LOG_ALLOC, "kind");
        CHECK(rec.ptr == (uintptr_t)(recs == 0 ? p2 : np1), "ptr");
        recs++;
    }
    btp_log_reader_close(r);
    CHECK(recs == 2, "log records %zu", recs);

    h_free(&h, p2);
    h_free(&h, np1);
    CHECK(h.count == 0 && h.bytes == 0 && h.peak_bytes >= 4007, "empty");
    CHECK(locks == unlocks && depth == 0, "lock balance");
}

static void test_small_slots(void)
{
    btp_heap h;
    btp_heap_config cfg = {.codec = BTP_HEAP_CBF, .word_bits = 32, .slot_bytes = 2};
    cfg.reserved[1] = 1; /* an option from a newer header: refused, not ignored */
    CHECK(btp_heap_init(&h, &cfg) == BTP_E_UNSUPPORTED, "reserved word set");
    cfg.reserved[1] = 0;
    CHECK(btp_heap_init(&h, &cfg) == BTP_OK, "2-byte slot");
    btp_frame f[2] = {{0x1000, BTP_FRAME_RA}, {0x2000, BTP_FRAME_RA}};
    void *p = h_malloc(&h, 1, f, 2);
    seen s = {0};
    btp_heap_walk(&h, collect, &s);
    CHECK(s.n == 1 && s.trunc[0] && s.nf[0] == 0, "nothing fits: truncated, empty");
    h_free(&h, p);
    /* a frame wider than the word ends the stack */
    btp_frame wide[2] = {{0x1000, BTP_FRAME_RA}, {0x100000000ull, BTP_FRAME_RA}};
    cfg.slot_bytes = 32;
    CHECK(btp_heap_init(&h, &cfg) == BTP_OK, "init");
    p = h_malloc(&h, 1, wide, 2);
    memset(&s, 0, sizeof s);
    btp_heap_walk(&h, collect, &s);
    CHECK(s.trunc[0] && s.nf[0] == 1, "wide frame cut: %zu", s.nf[0]);
    h_free(&h, p);
    cfg.codec = BTP_HEAP_LWS;
    cfg.slot_bytes = 8;
    CHECK(btp_heap_init(&h, &cfg) == BTP_OK, "lws 8-byte slot");
    btp_frame many[20];
    stack(many, 20, 3);
    p = h_malloc(&h, 5, many, 20);
    memset(&s, 0, sizeof s);
    btp_heap_walk(&h, collect, &s);
    CHECK(s.trunc[0] && s.nf[0] < 20, "lws cut to the slot: %zu", s.nf[0]);
    h_free(&h, p);
    /* bad configurations */
    btp_heap_config bad = {.align = 24};
    CHECK(btp_heap_init(&h, &bad) == BTP_E_INVALID_ARGUMENT, "align");
    bad = (btp_heap_config){.codec = BTP_HEAP_LWS, .word_bits = 16};
    CHECK(btp_heap_init(&h, &bad) == BTP_E_INVALID_ARGUMENT, "lws 16");
    bad = (btp_heap_config){.lock = lk};
    CHECK(btp_heap_init(&h, &bad) == BTP_E_INVALID_ARGUMENT, "one hook");
    bad = (btp_heap_config){.slot_bytes = BTP_HEAP_SLOT_MAX + 1};
    CHECK(btp_heap_init(&h, &bad) == BTP_E_INVALID_ARGUMENT, "slot");
}

__attribute__((noinline)) static void test_attach_here(void)
{
    btp_heap h;
    CHECK(btp_heap_init(&h, NULL) == BTP_OK, "defaults");
    void *raw = malloc(btp_heap_overhead(&h) + 32), *user;
    btp_status st = btp_heap_attach_here(&h, NULL, raw, 32, &user);
    CHECK(st == BTP_OK, "attach_here %s", btp_status_name(st));
    seen s = {0};
    btp_heap_walk(&h, collect, &s);
    /* the first frame is our own call site: inside this function */
    CHECK(s.n == 1 && s.nf[0] >= 1, "captured %zu", s.nf[0]);
    CHECK(s.frames[0][0].value > (uintptr_t)test_attach_here &&
              s.frames[0][0].value < (uintptr_t)test_attach_here + 4096,
          "first frame in the caller");
    h_free(&h, user);
}

int main(void)
{
    test_codec(BTP_HEAP_CBF);
    test_codec(BTP_HEAP_LWS);
    test_small_slots();
    test_attach_here();
    return check_finish();
}
