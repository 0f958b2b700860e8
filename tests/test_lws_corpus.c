/*
 * Real allocation backtraces (tests/data/corpus, 64-bit PIE and library
 * addresses, 32-bit i386) through the libwebsockets codec and CBF: for every
 * trace of depth <= 31,
 *   frames -> lws blob (libwebsockets mode) -> frames is exact, also through
 *   the ~m# text; the optimal mode is exact and never longer; and
 *   frames -> CBF -> frames -> lws blob gives the same blob, lws -> CBF the
 *   same CBF bytes.
 * Usage: test_lws_corpus XZ FILE.trace.xz...  (exit 77 = skipped: no xz)
 */
#include <btpack/btpack.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

enum { MAX_DEPTH = 256 };

static unsigned long traces, skipped_deep, saved_bits;

static int same(const btp_frame *a, const btp_frame *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (a[i].value != b[i].value || b[i].kind != BTP_FRAME_RA)
            return 0;
    return 1;
}

static void one(const btp_frame *f, size_t n, uint64_t size, unsigned wb, const char *where)
{
    uint8_t blob[BTP_LWS_BLOB_MAX], opt[BTP_LWS_BLOB_MAX], again[BTP_LWS_BLOB_MAX];
    size_t blen = 0, olen = 0, alen = 0;
    btp_frame back[BTP_LWS_MAX_FRAMES];
    btp_lws_info info;
    traces++;

    btp_status st = btp_lws_encode(f, n, size, wb, 0, blob, sizeof blob, &blen, NULL);
    CHECK(st == BTP_OK, "%s: encode %s", where, btp_status_name(st));
    st = btp_lws_decode(blob, blen, wb, back, BTP_LWS_MAX_FRAMES, &info);
    CHECK(st == BTP_OK && info.depth == n && info.alloc_size == size && same(f, back, n),
          "%s: lws round trip (%s)", where, btp_status_name(st));

    char line[BTP_LWS_M_LINE_MAX];
    size_t llen = 0;
    CHECK(btp_lws_m_format(blob, blen, line, sizeof line, &llen) == BTP_OK, "%s: format", where);
    st = btp_lws_m_decode(line, llen, wb, back, BTP_LWS_MAX_FRAMES, &info);
    CHECK(st == BTP_OK && info.depth == n && same(f, back, n), "%s: ~m# round trip", where);

    st = btp_lws_encode(f, n, size, wb, BTP_LWS_ENC_OPTIMAL, opt, sizeof opt, &olen, NULL);
    CHECK(st == BTP_OK && olen <= blen, "%s: optimal %zu vs %zu", where, olen, blen);
    st = btp_lws_decode(opt, olen, wb, back, BTP_LWS_MAX_FRAMES, &info);
    CHECK(st == BTP_OK && info.depth == n && info.alloc_size == size && same(f, back, n),
          "%s: optimal round trip", where);
    saved_bits += (blen - olen) * 8;

    /* Through CBF and back. */
    uint8_t cbf[BTP_CBF_BOUND(BTP_LWS_MAX_FRAMES)], cbf2[sizeof cbf];
    size_t clen = 0, clen2 = 0;
    btp_frame mid[BTP_LWS_MAX_FRAMES];
    btp_cbf_info ci;
    CHECK(btp_cbf_encode(f, n, 0, wb, 0, cbf, sizeof cbf, &clen, NULL) == BTP_OK, "%s: cbf", where);
    st = btp_cbf_decode(cbf, clen, BTP_CBF_POLICY_STRICT, mid, BTP_LWS_MAX_FRAMES, &ci);
    CHECK(st == BTP_OK && ci.frames == n && same(f, mid, n), "%s: cbf round trip", where);
    st = btp_lws_encode(mid, ci.frames, size, wb, 0, again, sizeof again, &alen, NULL);
    CHECK(st == BTP_OK && alen == blen && !memcmp(blob, again, blen), "%s: cbf -> lws", where);
    st = btp_lws_decode(blob, blen, wb, back, BTP_LWS_MAX_FRAMES, &info);
    CHECK(st == BTP_OK && btp_cbf_encode(back, info.depth, 0, wb, 0, cbf2, sizeof cbf2, &clen2,
                                         NULL) == BTP_OK &&
              clen2 == clen && !memcmp(cbf, cbf2, clen),
          "%s: lws -> cbf", where);
}

static void corpus(const char *xz, const char *path)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "'%s' -dc '%s'", xz, path);
    FILE *p = popen(cmd, "r");
    CHECK(p != NULL, "cannot run %s", cmd);
    if (!p)
        return;
    char *line = NULL;
    size_t cap = 0, lineno = 0;
    unsigned wb = 0;
    unsigned long before = traces;
    static btp_frame f[MAX_DEPTH + 1];
    while (getline(&line, &cap, p) > 0) {
        lineno++;
        if (!strncmp(line, "# stkshim", 9)) {
            char *w = strstr(line, " word=");
            wb = w ? (unsigned)atoi(w + 6) : 0;
            continue;
        }
        if (line[0] != 'm')
            continue;
        char *s = line + 1, *end;
        uint64_t size = strtoull(s, &end, 10);
        (void)strtoull(end, &s, 16); /* the returned pointer */
        size_t n = 0;
        for (;;) {
            uint64_t v = strtoull(s, &end, 16);
            if (end == s)
                break;
            s = end;
            if (n <= MAX_DEPTH)
                f[n] = (btp_frame){v, BTP_FRAME_RA};
            n++;
        }
        if (n > BTP_LWS_MAX_FRAMES) {
            skipped_deep++;
            continue;
        }
        char where[600];
        snprintf(where, sizeof where, "%s:%zu", path, lineno);
        one(f, n, size, wb, where);
    }
    free(line);
    CHECK(pclose(p) == 0, "%s: xz failed", path);
    CHECK(wb == 32 || wb == 64, "%s: no word size", path);
    CHECK(traces > before, "%s: no traces", path);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: test_lws_corpus XZ FILE...\n");
        return 77;
    }
    for (int i = 2; i < argc; i++)
        corpus(argv[1], argv[i]);
    printf("%lu traces of depth <= 31 round-tripped (%lu deeper ones not representable), "
           "optimal mode saved %lu bits in total\n",
           traces, skipped_deep, saved_bits);
    return check_finish();
}
