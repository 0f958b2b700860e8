/*
 * A known call chain captured by every method built in, checked against the
 * functions' address ranges; snipping; deep stacks (head, omit, tail);
 * CBF output; method selection from the environment.
 *
 * Built twice: with frame pointers (CHAIN_WITH_FP=1, all methods) and without
 * (CHAIN_WITH_FP=0: the fp method is then only required not to crash and to
 * report its first frame, which it takes from the library's own frame).
 */
#include "../check.h"
#include "chain.h"

#include <btpack/btpack.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef CHAIN_WITH_FP
#error "build with -DCHAIN_WITH_FP=0 or 1"
#endif

#define MAXF 1024

typedef struct result {
    btp_capture_options opt;
    int cbf;     /* capture as CBF instead of frames */
    size_t bcap; /* bytes of `bytes` to give it (0: all) */
    size_t cap;
    btp_frame f[MAXF];
    size_t n;
    uint8_t bytes[BTP_CBF_BOUND(BTP_CAPTURE_CBF_MAX_FRAMES)];
    size_t len;
    btp_status st;
} result;

/* Exported (export_dynamic) so dladdr can name them. */
void chain_c(result *r);
void chain_b(result *r);
void chain_a(result *r);
void chain_top(result *r);
void deep(result *r, unsigned d);

NOINL void chain_c(result *r)
{
    if (r->cbf)
        r->st = btp_capture_cbf(&r->opt, NULL, r->bytes, r->bcap ? r->bcap : sizeof r->bytes,
                                &r->len);
    else
        r->st = btp_capture(&r->opt, r->f, r->cap, &r->n);
    BARRIER();
}

NOINL void chain_b(result *r)
{
    chain_c(r);
    BARRIER();
}

NOINL void chain_a(result *r)
{
    chain_b(r);
    BARRIER();
}

NOINL void chain_top(result *r)
{
    chain_a(r);
    BARRIER();
}

NOINL void deep(result *r, unsigned d)
{
    if (d == 0 && r->cbf)
        r->st = btp_capture_cbf(&r->opt, NULL, r->bytes, r->bcap ? r->bcap : sizeof r->bytes,
                                &r->len);
    else if (d == 0)
        r->st = btp_capture(&r->opt, r->f, r->cap, &r->n);
    else
        deep(r, d - 1);
    BARRIER();
}

/* A capture from the bottom of a chain of d calls, each through mix_a or
 * mix_b as the bits of `path` say: the stream (r->bytes) or the frames
 * (r->f), as r->cbf says. */
void mix_a(result *r, unsigned d, unsigned path);
void mix_b(result *r, unsigned d, unsigned path);
void mix_bottom(result *r);

NOINL void mix_bottom(result *r)
{
    if (r->cbf)
        r->st = btp_capture_cbf(&r->opt, NULL, r->bytes, sizeof r->bytes, &r->len);
    else
        r->st = btp_capture(&r->opt, r->f, r->cap, &r->n);
    BARRIER();
}

NOINL void mix_a(result *r, unsigned d, unsigned path)
{
    if (d == 0)
        mix_bottom(r);
    else if (path & 1)
        mix_b(r, d - 1, path >> 1);
    else
        mix_a(r, d - 1, path >> 1);
    BARRIER();
}

NOINL void mix_b(result *r, unsigned d, unsigned path)
{
    if (d == 0)
        mix_bottom(r);
    else if (path & 1)
        mix_a(r, d - 1, path >> 1);
    else
        mix_b(r, d - 1, path >> 1);
    BARRIER();
}

static const char *const chain_names[] = {"chain_c", "chain_b", "chain_a", "chain_top"};

static void check_chain(const char *what, const btp_frame *f, size_t n, size_t from)
{
    CHECK(n >= 4 - from, "%s: %zu frames", what, n);
    for (size_t i = 0; i + from < 4 && i < n; i++) {
        CHECK(frame_in(f[i], chain_names[i + from], 0), "%s: frame %zu is 0x%llx in %s, not %s",
              what, i, (unsigned long long)f[i].value, function_at((uintptr_t)f[i].value - 1),
              chain_names[i + from]);
        CHECK(f[i].kind == (i == 0 ? BTP_FRAME_PC : BTP_FRAME_RA), "%s: frame %zu kind %d", what,
              i, (int)f[i].kind);
    }
}

/* Frames of two captures agree: same addresses, except the return address
 * into test_method, which depends on which line of it started the chain. */
static int same(const btp_frame *a, const btp_frame *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (a[i].value != b[i].value &&
            !(frame_in(a[i], "test_method", 0) && frame_in(b[i], "test_method", 0)))
            return 0;
    return 1;
}

static result r, full, small;

void test_method(btp_capture_method m);

NOINL void test_method(btp_capture_method m)
{
    const char *name = btp_capture_method_name(m);
    int walks_chain = CHAIN_WITH_FP || m != BTP_CAPTURE_FP;

    memset(&r, 0, sizeof r);
    r.opt.method = m;
    r.cap = 64;
    chain_top(&r);
    CHECK(r.st == BTP_OK, "%s: status %s", name, btp_status_name(r.st));
    if (walks_chain) {
        check_chain(name, r.f, r.n, 0);
        CHECK(r.n >= 5 && frame_in(r.f[4], "test_method", 0), "%s: frame 4 in %s", name,
              r.n >= 5 ? function_at((uintptr_t)r.f[4].value - 1) : "-");
    } else {
        /* Without frame pointers the fp walk may stop anywhere, but the first
         * frame comes from the library's own frame record. */
        CHECK(r.n >= 1 && frame_in(r.f[0], "chain_c", 0), "%s (no fp): first frame", name);
    }
    if (!walks_chain)
        return;
    size_t n0 = r.n;
    btp_frame f0[64];
    memcpy(f0, r.f, sizeof f0);

    /* snip_pre drops innermost frames, snip_post outermost ones. */
    memset(&r, 0, sizeof r);
    r.opt.method = m;
    r.opt.snip_pre = 2;
    r.cap = 64;
    chain_top(&r);
    check_chain(name, r.f, r.n, 2);
    CHECK(r.n == n0 - 2, "%s: snip_pre 2 gave %zu of %zu", name, r.n, n0);

    memset(&r, 0, sizeof r);
    r.opt.method = m;
    r.opt.snip_post = 1;
    r.cap = 64;
    chain_top(&r);
    CHECK(r.n == n0 - 1 && same(r.f, f0, r.n), "%s: snip_post 1 gave %zu of %zu", name, r.n, n0);

    /* A tiny buffer: cap 1 keeps the innermost frame only. */
    memset(&r, 0, sizeof r);
    r.opt.method = m;
    r.cap = 1;
    chain_top(&r);
    CHECK(r.n == 1 && frame_in(r.f[0], "chain_c", 0), "%s: cap 1 gave %zu", name, r.n);

    /* Deep stack: 200 frames of deep(). With cap 16 we keep 8 innermost, an
     * omit, 7 outermost. */
    memset(&full, 0, sizeof full);
    full.opt.method = m;
    full.cap = MAXF;
    deep(&full, 200);
    CHECK(full.st == BTP_OK && full.n > 200 && full.n < MAXF, "%s: deep full %zu", name, full.n);
    for (size_t i = 1; i < 200 && i < full.n; i++)
        if (!frame_in(full.f[i], "deep", 0)) {
            CHECK(0, "%s: deep frame %zu not in deep()", name, i);
            break;
        }
    memset(&small, 0, sizeof small);
    small.opt.method = m;
    small.cap = 16;
    deep(&small, 200);
    CHECK(small.n == 16, "%s: deep small %zu", name, small.n);
    if (small.n == 16 && full.n > 16) {
        CHECK(same(small.f, full.f, 8), "%s: deep head differs", name);
        CHECK(small.f[8].kind == BTP_FRAME_OMIT && small.f[8].value == full.n - 15,
              "%s: omit %d %llu, expected %zu", name, (int)small.f[8].kind,
              (unsigned long long)small.f[8].value, full.n - 15);
        CHECK(same(small.f + 9, full.f + full.n - 7, 7), "%s: deep tail differs", name);
    }
    /* ... and snip_post then eats the tail. */
    memset(&small, 0, sizeof small);
    small.opt.method = m;
    small.opt.snip_post = 2;
    small.cap = 16;
    deep(&small, 200);
    CHECK(small.n == 14, "%s: deep small snip_post %zu", name, small.n);
    if (small.n == 14 && full.n > 16) {
        CHECK(small.f[8].kind == BTP_FRAME_OMIT && small.f[8].value == full.n - 15,
              "%s: omit with snip_post", name);
        CHECK(same(small.f + 9, full.f + full.n - 7, 5), "%s: snipped tail differs", name);
    }

    /* Every cap around the stack's depth, with and without snip_post: the
     * collector keeps a stack of up to cap-1 frames in order and shortens a
     * deeper one to head, omit, ring only then; the result must be what
     * shortening the full capture gives. */
    memset(&full, 0, sizeof full);
    full.opt.method = m;
    full.cap = MAXF;
    deep(&full, 40);
    size_t nf = full.n;
    for (size_t cap = 2; cap <= nf + 2 && full.st == BTP_OK; cap++) {
        for (unsigned post = 0; post <= 3; post += 3) {
            memset(&small, 0, sizeof small);
            small.opt.method = m;
            small.opt.snip_post = post;
            small.cap = cap;
            deep(&small, 40);
            btp_frame want[MAXF];
            size_t nw = 0;
            if (nf <= cap - 1) {
                nw = nf - (post < nf ? post : nf);
                memcpy(want, full.f, nw * sizeof *want);
            } else {
                size_t ring = (cap - 1) / 2, head = cap - 1 - ring, r_kept = ring;
                uint64_t omitted = nf - head - ring, p = post, d;
                d = p < r_kept ? p : r_kept;
                r_kept -= (size_t)d;
                p -= d;
                d = p < omitted ? p : omitted;
                omitted -= d;
                p -= d;
                head -= (size_t)(p < head ? p : head);
                memcpy(want, full.f, head * sizeof *want);
                nw = head;
                if (omitted)
                    want[nw++] = (btp_frame){omitted, BTP_FRAME_OMIT};
                memcpy(want + nw, full.f + nf - ring, r_kept * sizeof *want);
                nw += r_kept;
            }
            int ok = small.st == BTP_OK && small.n == nw;
            for (size_t i = 0; ok && i < nw; i++)
                ok = small.f[i].kind == want[i].kind &&
                     (small.f[i].value == want[i].value || want[i].kind != BTP_FRAME_OMIT) &&
                     same(small.f + i, want + i, 1);
            CHECK(ok, "%s: depth %zu, cap %zu, snip_post %u: %zu frames, expected %zu", name, nf,
                  cap, post, small.n, nw);
        }
    }

    /* Straight into CBF from deeper than half its frames (kept whole) and
     * from deeper than all of them (head, omit, tail). */
    for (unsigned depth = 100; depth <= 200; depth += 100) {
        memset(&full, 0, sizeof full);
        full.opt.method = m;
        full.cap = BTP_CAPTURE_CBF_MAX_FRAMES;
        deep(&full, depth);
        memset(&small, 0, sizeof small);
        small.opt.method = m;
        small.cbf = 1;
        deep(&small, depth);
        btp_frame got[BTP_CAPTURE_CBF_MAX_FRAMES];
        btp_cbf_info gi;
        btp_status gs = btp_cbf_decode(small.bytes, small.len, BTP_CBF_POLICY_STRICT, got,
                                       BTP_CAPTURE_CBF_MAX_FRAMES, &gi);
        /* The first frame is a call of its own in deep(): its function only. */
        int ok = full.st == BTP_OK && small.st == BTP_OK && gs == BTP_OK &&
                 gi.frames == full.n && full.n > 0 && got[0].kind == BTP_FRAME_PC &&
                 frame_in(got[0], "deep", 0);
        for (size_t i = 1; ok && i < full.n; i++)
            ok = got[i].kind == full.f[i].kind && same(got + i, full.f + i, 1) &&
                 (got[i].kind != BTP_FRAME_OMIT || got[i].value == full.f[i].value);
        CHECK(ok, "%s: deep %u as CBF: %s, %zu frames, capture %zu", name, depth,
              btp_status_name(gs), gs == BTP_OK ? gi.frames : 0, full.n);
    }

    /* Straight into CBF: decodes to the same chain. */
    memset(&r, 0, sizeof r);
    r.opt.method = m;
    r.cbf = 1;
    chain_top(&r);
    CHECK(r.st == BTP_OK && r.len >= 2, "%s: cbf %s len %zu", name, btp_status_name(r.st), r.len);
    btp_frame dec[BTP_CAPTURE_CBF_MAX_FRAMES];
    btp_cbf_info info;
    btp_status ds = btp_cbf_decode(r.bytes, r.len, BTP_CBF_POLICY_STRICT, dec,
                                   BTP_CAPTURE_CBF_MAX_FRAMES, &info);
    CHECK(ds == BTP_OK && info.word_bits == 8 * sizeof(void *) && !info.truncated,
          "%s: cbf decode %s", name, btp_status_name(ds));
    if (ds == BTP_OK) {
        check_chain(name, dec, info.frames, 0);
        CHECK(info.frames == n0, "%s: cbf has %zu frames, capture %zu", name, info.frames, n0);
    }
    /* The very bytes btp_cbf_encode makes of the frames (decoded from the
     * first capture, the whole buffer), in a buffer of every size up to
     * the stream's (cut by trunc, same status), whichever way the capture
     * got there. Every capture from this one line: the return address into
     * this function is a frame too. */
    btp_frame whole[BTP_CAPTURE_CBF_MAX_FRAMES];
    size_t nwhole = 0, last = 0;
    for (size_t bcap = 0; bcap <= last; bcap = bcap ? bcap + 1 : 2) {
        result *c = &small;
        memset(c, 0, sizeof *c);
        c->opt.method = m;
        c->cbf = 1;
        c->bcap = bcap;
        chain_top(c);
        if (bcap == 0) {
            btp_cbf_info wi;
            btp_status s = btp_cbf_decode(c->bytes, c->len, BTP_CBF_POLICY_STRICT, whole,
                                          BTP_CAPTURE_CBF_MAX_FRAMES, &wi);
            CHECK(c->st == BTP_OK && s == BTP_OK, "%s: cbf %s, decode %s", name,
                  btp_status_name(c->st), btp_status_name(s));
            nwhole = s == BTP_OK ? wi.frames : 0;
            last = s == BTP_OK ? c->len + 1 : 0;
            /* In the whole buffer too, the very bytes of the encoder (the
             * fp walk writes them as it goes: only this size reaches it). */
            uint8_t want[sizeof c->bytes];
            size_t wlen = 0;
            btp_status ws = btp_cbf_encode(whole, nwhole, 0, 8 * sizeof(void *),
                                           BTP_CBF_ENC_TRUNCATE_ON_FULL, want, sizeof want, &wlen,
                                           NULL);
            CHECK(ws == BTP_OK && c->len == wlen && memcmp(c->bytes, want, wlen) == 0,
                  "%s: cbf in the whole buffer: %zu bytes; encoder %s, %zu", name, c->len,
                  btp_status_name(ws), wlen);
            continue;
        }
        uint8_t want[sizeof c->bytes];
        size_t wlen = 0;
        btp_status ws = btp_cbf_encode(whole, nwhole, 0, 8 * sizeof(void *),
                                       BTP_CBF_ENC_TRUNCATE_ON_FULL, want, bcap, &wlen, NULL);
        CHECK(c->st == ws && c->len == wlen && memcmp(c->bytes, want, wlen) == 0,
              "%s: cbf in %zu bytes: %s, %zu bytes; encoder %s, %zu", name, bcap,
              btp_status_name(c->st), c->len, btp_status_name(ws), wlen);
    }
    /* A buffer too small for it: a valid stream cut by trunc. */
    uint8_t tiny[6];
    size_t tlen = 0;
    btp_status ts = btp_capture_cbf(&r.opt, NULL, tiny, sizeof tiny, &tlen);
    CHECK(ts == BTP_E_BUFFER_TOO_SMALL && tlen >= 2 && tlen <= sizeof tiny, "%s: tiny cbf %s",
          name, btp_status_name(ts));
    ds = btp_cbf_decode(tiny, tlen, BTP_CBF_POLICY_STRICT, dec, BTP_CAPTURE_CBF_MAX_FRAMES, &info);
    CHECK(ds == BTP_OK && info.truncated, "%s: tiny cbf decode %s", name, btp_status_name(ds));
}

/*
 * Straight into CBF, capture after capture, from stacks that share some of
 * their frames and differ in others (depth, and which of two functions
 * makes each call): each stream decodes to the frames a capture of frames
 * gets from the same place (all but the first, the return address of the
 * call into the library), in the very bytes btp_cbf_encode makes of them.
 * The streams first, one after the other, then the frames: the cfi walk
 * takes the frames above where it joins its last walk from its memo, whose
 * instructions it keeps from one capture into CBF to the next, and those
 * of frames that changed since must not be taken.
 */
void test_cbf_sequence(btp_capture_method m);

NOINL void test_cbf_sequence(btp_capture_method m)
{
    static const struct {
        unsigned depth, path;
    } seq[] = {{3, 0},   {3, 0},  {3, 5},   {3, 5},         {3, 0},  {12, 0}, {12, 0},
               {12, 0x155}, {12, 0}, {12, 16}, {12, 16},   {5, 0},  {12, 16}, {12, 0x800},
               {12, 0x400}, {12, 0x400}, {40, 0}, {40, 0}, {40, 1}, {40, 1u << 30},
               {40, 1u << 30}, {40, 0}, {0, 0}, {0, 0}, {7, 0x7f}, {7, 0}, {30, 3}, {30, 3},
               {30, 2}, {1, 0}, {30, 3}, {30, 0x3000}, {30, 0x7000}, {30, 0x3000}};
    enum { N = sizeof seq / sizeof seq[0] };
    static result streams[N];
    const char *name = btp_capture_method_name(m);
    for (size_t t = 0; t < 2 * N; t++) {
        size_t i = t % N;
        result *x = t < N ? &streams[i] : &r;
        memset(x, 0, sizeof *x);
        x->opt.method = m;
        x->cbf = t < N;
        x->cap = BTP_CAPTURE_CBF_MAX_FRAMES;
        mix_a(x, seq[i].depth, seq[i].path);
        if (t < N)
            continue;
        const result *c = &streams[i];
        btp_frame got[BTP_CAPTURE_CBF_MAX_FRAMES];
        btp_cbf_info gi;
        btp_status gs = btp_cbf_decode(c->bytes, c->len, BTP_CBF_POLICY_STRICT, got,
                                       BTP_CAPTURE_CBF_MAX_FRAMES, &gi);
        int ok = r.st == BTP_OK && c->st == BTP_OK && gs == BTP_OK && gi.frames == r.n &&
                 r.n > 0 && got[0].kind == BTP_FRAME_PC && frame_in(got[0], "mix_bottom", 0);
        /* (but the return address into this function: the compiler
         * makes a call of its own for each loop) */
        for (size_t k = 1; ok && k < r.n; k++)
            ok = got[k].kind == r.f[k].kind &&
                 (got[k].value == r.f[k].value ||
                  (frame_in(got[k], "test_cbf_sequence", 0) &&
                   frame_in(r.f[k], "test_cbf_sequence", 0)));
        CHECK(ok, "%s: cbf sequence %zu (depth %u, path 0x%x): %s/%s, %zu frames, capture %zu",
              name, i, seq[i].depth, seq[i].path, btp_status_name(c->st), btp_status_name(gs),
              gs == BTP_OK ? gi.frames : 0, r.n);
        uint8_t want[sizeof c->bytes];
        size_t wlen = 0;
        btp_status ws = btp_cbf_encode(got, gs == BTP_OK ? gi.frames : 0, 0, 8 * sizeof(void *),
                                       BTP_CBF_ENC_TRUNCATE_ON_FULL, want, sizeof want, &wlen,
                                       NULL);
        CHECK(ws == BTP_OK && wlen == c->len && memcmp(want, c->bytes, wlen) == 0,
              "%s: cbf sequence %zu: %zu bytes, encoder %zu", name, i, c->len, wlen);
    }
}

/*
 * Three functions that call each other, never themselves: a chain of them
 * has no two frames the same (no `rep`), so a CBF capture from its bottom
 * is written by the walk (the cfi memo's instructions, and where the last
 * captures took the same frames below the memo's, their stream too:
 * cfi.c memo_cbf()). The bits of `path`, the outermost call's first, pick
 * which of the two others each one calls.
 */
void hd_a(result *r, unsigned d, unsigned path);
void hd_b(result *r, unsigned d, unsigned path);
void hd_c(result *r, unsigned d, unsigned path);

NOINL void hd_a(result *x, unsigned d, unsigned path)
{
    if (d == 0)
        mix_bottom(x);
    else if (path & 1)
        hd_c(x, d - 1, path >> 1);
    else
        hd_b(x, d - 1, path >> 1);
    BARRIER();
}

NOINL void hd_b(result *x, unsigned d, unsigned path)
{
    if (d == 0)
        mix_bottom(x);
    else if (path & 1)
        hd_a(x, d - 1, path >> 1);
    else
        hd_c(x, d - 1, path >> 1);
    BARRIER();
}

NOINL void hd_c(result *x, unsigned d, unsigned path)
{
    if (d == 0)
        mix_bottom(x);
    else if (path & 1)
        hd_b(x, d - 1, path >> 1);
    else
        hd_a(x, d - 1, path >> 1);
    BARRIER();
}

/*
 * Straight into CBF, capture after capture, from chains of hd_a/b/c whose
 * innermost calls differ: each the same several times in a row (the memo
 * keeps the frames below its own, then their stream, then copies it),
 * then two in turn that the memo's note of them does not tell apart (the
 * same function calls the one that captures, from the same place: the
 * last two choices 01 and 10), after a run of one of them and in turn,
 * then other depths. Each stream decodes to the frames a capture of
 * frames gets from the same place, in the bytes btp_cbf_encode makes.
 */
void test_cbf_heads(btp_capture_method m);

NOINL void test_cbf_heads(btp_capture_method m)
{
    enum { D = 12, N = 92 };
    static unsigned depth[N], path[N];
    size_t len = 0;
    /* the last two choices (bits D-2 and D-1) of the chain's: 00, 01, 10,
     * 11 six times each (the memo keeps the stream from about the fourth);
     * 01 six times, then 10, 01, 10, 01, 10 six times, 01 four times */
    static const unsigned last2[] = {0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2,
                                     3, 3, 3, 3, 3, 3, 1, 1, 1, 1, 1, 1, 2, 1, 2, 1,
                                     2, 2, 2, 2, 2, 2, 1, 1, 1, 1};
    for (size_t i = 0; i < sizeof last2 / sizeof last2[0]; i++, len++) {
        depth[len] = D;
        path[len] = ((last2[i] & 1) << (D - 2)) | ((last2[i] >> 1) << (D - 1));
    }
    /* the same two in turn, a pair of choices further out (bits D-2-q and
     * D-1-q: the frames differ from the (2+q)th on), after a run of one */
    for (unsigned q = 1; q <= 4; q++)
        for (unsigned i = 0; i < 8; i++, len++) {
            depth[len] = D;
            path[len] = (i < 5 || i == 6 ? 1u : 2u) << (D - 2 - q);
        }
    for (; len < N; len++) {
        depth[len] = len < N - 4 ? D - 1 - (unsigned)(len % 3) : D;
        path[len] = len < N - 4 ? 1u << (depth[len] - 1) : 2u << (D - 2);
    }
    static result streams[N];
    const char *name = btp_capture_method_name(m);
    size_t written = 0;
    for (size_t t = 0; t < 2 * N; t++) {
        size_t i = t % N;
        result *x = t < N ? &streams[i] : &r;
        memset(x, 0, sizeof *x);
        x->opt.method = m;
        x->cbf = t < N;
        x->cap = BTP_CAPTURE_CBF_MAX_FRAMES;
        hd_a(x, depth[i], path[i]); /* (one call for both: the same frames above) */
        if (t < N)
            continue;
        const result *c = &streams[i];
        btp_frame got[BTP_CAPTURE_CBF_MAX_FRAMES];
        btp_cbf_info gi;
        btp_status gs = btp_cbf_decode(c->bytes, c->len, BTP_CBF_POLICY_STRICT, got,
                                       BTP_CAPTURE_CBF_MAX_FRAMES, &gi);
        int ok = r.st == BTP_OK && c->st == BTP_OK && gs == BTP_OK && gi.frames == r.n &&
                 r.n > 0 && frame_in(got[0], "mix_bottom", 0);
        /* (but the first: mix_bottom calls each entry point from a place
         * of its own; and the return address into this function, as in
         * test_cbf_sequence) */
        for (size_t k = 1; ok && k < r.n; k++)
            ok = got[k].kind == r.f[k].kind &&
                 (got[k].value == r.f[k].value || (frame_in(got[k], "test_cbf_heads", 0) &&
                                                   frame_in(r.f[k], "test_cbf_heads", 0)));
        CHECK(ok, "%s: cbf heads %zu (depth %u, path 0x%x): %s/%s, %zu frames, capture %zu",
              name, i, depth[i], path[i], btp_status_name(c->st), btp_status_name(gs),
              gs == BTP_OK ? gi.frames : 0, r.n);
        uint8_t want[sizeof c->bytes];
        size_t wlen = 0;
        btp_status ws = btp_cbf_encode(got, gs == BTP_OK ? gi.frames : 0, 0, 8 * sizeof(void *),
                                       BTP_CBF_ENC_TRUNCATE_ON_FULL, want, sizeof want, &wlen,
                                       NULL);
        CHECK(ws == BTP_OK && wlen == c->len && memcmp(want, c->bytes, wlen) == 0,
              "%s: cbf heads %zu: %zu bytes, encoder %zu", name, i, c->len, wlen);
        written += ok;
    }
    CHECK(written == N, "%s: cbf heads: %zu of %d", name, written, (int)N);
}

/* The environment picks the method; verbose lists them on stderr. */
static void test_environment(void)
{
    btp_capture_options o;
    setenv("BTPACK_STACKTRACE_METHOD", "fp", 1);
    CHECK(btp_capture_options_init(&o) == BTP_OK && o.method == BTP_CAPTURE_FP, "env fp");
    setenv("BTPACK_STACKTRACE_METHOD", "bogus", 1);
    fflush(stderr);
    int saved = dup(2);
    FILE *tmp = tmpfile();
    CHECK(tmp != NULL, "tmpfile");
    if (!tmp || saved < 0)
        return;
    dup2(fileno(tmp), 2);
    CHECK(btp_capture_options_init(&o) == BTP_E_NO_METHOD &&
              o.method == btp_capture_method_default(),
          "env bogus");
    setenv("BTPACK_STACKTRACE_METHOD", "glibc", 1);
    setenv("BTPACK_STACKTRACE_METHOD_VERBOSE", "1", 1);
    btp_status st = btp_capture_options_init(&o);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    char text[1024] = {0};
    rewind(tmp);
    size_t got = fread(text, 1, sizeof text - 1, tmp);
    fclose(tmp);
    text[got] = 0;
    CHECK(strstr(text, "BTPACK_STACKTRACE_METHOD=bogus is not available") != NULL,
          "no complaint: %s", text);
    CHECK(strstr(text, "available: fp") != NULL, "no list: %s", text);
    if (btp_capture_method_available(BTP_CAPTURE_GLIBC)) {
        CHECK(st == BTP_OK && o.method == BTP_CAPTURE_GLIBC, "env glibc");
        CHECK(strstr(text, "using glibc") != NULL, "verbose: %s", text);
    }
    unsetenv("BTPACK_STACKTRACE_METHOD");
    unsetenv("BTPACK_STACKTRACE_METHOD_VERBOSE");
    CHECK(btp_capture_options_init(&o) == BTP_OK && o.method == btp_capture_method_default(),
          "env unset");
}

static void test_names(void)
{
    btp_capture_method m;
    for (int i = BTP_CAPTURE_DEFAULT; i <= BTP_CAPTURE_CFI; i++) {
        const char *n = btp_capture_method_name((btp_capture_method)i);
        CHECK(n && btp_capture_method_parse(n, &m) == BTP_OK && (int)m == i, "name %d", i);
    }
    CHECK(btp_capture_method_name((btp_capture_method)99) == NULL, "name 99");
    CHECK(btp_capture_method_parse("FP", &m) == BTP_E_SYNTAX, "parse is exact");
    btp_frame f[4];
    size_t n;
    btp_capture_options o = {0};
    o.method = (btp_capture_method)99;
    CHECK(btp_capture(&o, f, 4, &n) == BTP_E_INVALID_ARGUMENT, "bad method");
    CHECK(btp_capture(NULL, f, 0, &n) == BTP_E_INVALID_ARGUMENT, "cap 0");
    CHECK(btp_capture(NULL, NULL, 4, &n) == BTP_E_INVALID_ARGUMENT, "NULL frames");
    CHECK(btp_capture(NULL, f, 4, &n) == BTP_OK && n >= 1, "defaults");
    /* The unwinder the libgcc method calls really is libgcc's: libunwind
     * exports _Unwind_Backtrace too. */
    if (btp_capture_method_available(BTP_CAPTURE_LIBGCC)) {
        const char *lib = btp_capture_method_library(BTP_CAPTURE_LIBGCC);
        CHECK(lib && strstr(lib, "libgcc_s"), "libgcc from %s", lib ? lib : "(null)");
    }
    if (btp_capture_method_available(BTP_CAPTURE_LIBUNWIND)) {
        const char *lib = btp_capture_method_library(BTP_CAPTURE_LIBUNWIND);
        CHECK(lib && strstr(lib, "libunwind"), "libunwind from %s", lib ? lib : "(null)");
    }
}

/* Every method from a second thread (its own stack, its own bounds). */
static void *in_thread(void *arg)
{
    static result tr;
    for (int m = BTP_CAPTURE_FP; m <= BTP_CAPTURE_CFI; m++) {
        if (!btp_capture_method_available((btp_capture_method)m) ||
            (!CHAIN_WITH_FP && m == BTP_CAPTURE_FP))
            continue;
        memset(&tr, 0, sizeof tr);
        tr.opt.method = (btp_capture_method)m;
        tr.cap = 64;
        chain_top(&tr);
        CHECK(tr.st == BTP_OK, "thread: %s", btp_status_name(tr.st));
        check_chain(btp_capture_method_name((btp_capture_method)m), tr.f, tr.n, 0);
    }
    return arg;
}

int main(void)
{
    pthread_t t;
    CHECK(pthread_create(&t, NULL, in_thread, NULL) == 0, "pthread_create");
    CHECK(pthread_join(t, NULL) == 0, "pthread_join");
    int ran = 0;
    for (int m = BTP_CAPTURE_FP; m <= BTP_CAPTURE_CFI; m++) {
        if (!btp_capture_method_available((btp_capture_method)m))
            continue;
        printf("method %s\n", btp_capture_method_name((btp_capture_method)m));
        test_method((btp_capture_method)m);
        if (CHAIN_WITH_FP || m != BTP_CAPTURE_FP)
            test_cbf_sequence((btp_capture_method)m);
        if (CHAIN_WITH_FP || m != BTP_CAPTURE_FP)
            test_cbf_heads((btp_capture_method)m);
        ran++;
    }
    CHECK(ran >= 1, "no method built in");
    test_names();
    test_environment();
    return check_finish();
}
