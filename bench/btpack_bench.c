/*
 * btpack_bench: size and speed of the ways to store a backtrace, on real
 * corpora, in one process.
 *
 *   btpack_bench [--json] [--reps N] [--budget SECONDS] [--codecs a,b,...]
 *                CORPUS...
 *   btpack_bench --list
 *
 * For each corpus file (record format of tests/data/corpus/README.md, xz or
 * plain text) and each codec: encode the whole corpus once as a warm-up,
 * then N more times and take the median; the same for decoding. Decoded
 * frames are compared with the originals after the warm-up and after the
 * last repetition (outside the timing), so a codec that loses or invents a
 * frame fails the run instead of printing a figure.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "codec.h"

static const bench_codec *const codecs[] = {
    &bench_codec_raw,
    &bench_codec_varint,
    &bench_codec_cbf,
    &bench_codec_cbf_swift,
    &bench_codec_lws,
    &bench_codec_lws_optimal,
    &bench_codec_lws_bitwise,
    &bench_codec_log,
    &bench_codec_log_zlib,
    &bench_codec_zlib_raw,
    &bench_codec_xz_raw,
};
#define NCODECS (sizeof codecs / sizeof *codecs)

/* One row: NaN-free; `ok` is 0 for n/a (unavailable, or failed). */
typedef struct result {
    int ok;
    const char *why; /* when !ok */
    size_t bytes;
    size_t nframes;        /* frames of the corpus it ran on */
    double enc_ns, dec_ns; /* median per run, whole corpus */
} result;

/* Targets printed with each corpus: a's metric times `factor` must be at
 * most b's (strictly less when `strict`). */
enum metric { ENCODE_NS, DECODE_NS, BYTES };
typedef struct target {
    const char *text;
    const char *a, *b;
    enum metric metric;
    double factor;
    int strict;
} target;

static const target targets[] = {
    {"cbf encode at least as fast as varint", "cbf", "varint", ENCODE_NS, 1, 0},
    {"cbf decode at least as fast as varint", "cbf", "varint", DECODE_NS, 1, 0},
    {"lws decode at least 20x faster than lws-bitwise", "lws", "lws-bitwise", DECODE_NS, 20, 0},
    {"log-zlib smaller than xz-raw", "log-zlib", "xz-raw", BYTES, 1, 1},
};

typedef struct options {
    int json;
    int reps;
    double budget;
    const char *only; /* comma-separated codec names, or NULL for all */
} options;

/* CPU time of this thread, not wall time: the codecs are single-threaded
 * CPU work, and on a shared machine wall time also counts the time other
 * processes hold the core. */
static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int selected(const options *o, const char *name)
{
    if (!o->only)
        return 1;
    size_t n = strlen(name);
    for (const char *p = o->only; *p;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (len == n && memcmp(p, name, n) == 0)
            return 1;
        p += len + (comma != NULL);
    }
    return 0;
}

#define MAX_REPS 101

/* How many timed repetitions: `reps`, but when one run is slow stop once
 * the budget is spent, never below 3 so the median means something. */
static int reps_for(const options *o, double warmup_ns)
{
    double fit = o->budget * 1e9 / (warmup_ns > 1 ? warmup_ns : 1);
    if (fit < 3)
        fit = 3;
    return fit < o->reps ? (int)fit : o->reps;
}

/* Check the decoded frames: words, or btp_frame (address and kind) when
 * bgot is not NULL. */
static int verify(const bench_corpus *c, const uint64_t *got, const btp_frame *bgot,
                  const char *codec, char *err, size_t errlen)
{
    for (size_t i = 0; i < c->nframes; i++) {
        uint64_t v = bgot ? bgot[i].value : got[i];
        if (v != c->frames[i])
            return bench_fail(err, errlen, "%s decoded frame %zu as 0x%llx, expected 0x%llx",
                              codec, i, (unsigned long long)v, (unsigned long long)c->frames[i]);
        if (bgot && bgot[i].kind != c->bframes[i].kind)
            return bench_fail(err, errlen, "%s decoded frame %zu as kind %d, expected %d",
                              codec, i, (int)bgot[i].kind, (int)c->bframes[i].kind);
    }
    return 0;
}

/* Measure one codec on one corpus. Returns 0, or -1 with a message (a
 * codec that fails is an error of the whole run: its figures would lie). */
static int measure(const options *o, const bench_codec *k, const bench_corpus *c, result *r,
                   char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    if ((r->why = k->unavailable) != NULL)
        return 0;
    if (c->ntraces == 0) {
        r->why = "no trace fits the format";
        return 0;
    }
    int rc = -1;
    bench_scratch s = {0};
    bench_encoded enc = {0};
    enc.cap = k->bound(c);
    enc.data = malloc(enc.cap ? enc.cap : 1);
    enc.ends = malloc(c->ntraces * sizeof *enc.ends);
    uint64_t *dec = malloc((c->nframes ? c->nframes : 1) * sizeof *dec);
    /* Decoders whose output is btp_frame write there instead. */
    btp_frame *bdec = NULL;
    size_t dec_size = c->nframes * sizeof *dec;
    if (k->decode_trace_b) {
        bdec = malloc((c->nframes ? c->nframes : 1) * sizeof *bdec);
        dec_size = c->nframes * sizeof *bdec;
    }
    void *dec_out = bdec ? (void *)bdec : (void *)dec;
    double times[MAX_REPS];
    if (!enc.data || !enc.ends || !dec || (k->decode_trace_b && !bdec)) {
        bench_fail(err, errlen, "out of memory");
        goto out;
    }

    double t0 = now_ns();
    if (bench_encode(k, c, &enc, &s, err, errlen) != 0)
        goto out;
    double warm = now_ns() - t0;
    size_t len = enc.len;
    int n = reps_for(o, warm);
    for (int i = 0; i < n; i++) {
        t0 = now_ns();
        if (bench_encode(k, c, &enc, &s, err, errlen) != 0)
            goto out;
        times[i] = now_ns() - t0;
        if (enc.len != len) {
            bench_fail(err, errlen, "%s: encoded size changed between runs", k->name);
            goto out;
        }
    }
    r->enc_ns = median(times, n);
    r->bytes = len;

    /* Poison the output so a decoder that skips frames cannot pass on
     * leftovers. */
    memset(dec_out, 0xa5, dec_size);
    t0 = now_ns();
    if (bench_decode(k, c, &enc, dec, bdec, &s, err, errlen) != 0)
        goto out;
    warm = now_ns() - t0;
    if (verify(c, dec, bdec, k->name, err, errlen) != 0)
        goto out;
    memset(dec_out, 0x5a, dec_size);
    n = reps_for(o, warm);
    for (int i = 0; i < n; i++) {
        t0 = now_ns();
        if (bench_decode(k, c, &enc, dec, bdec, &s, err, errlen) != 0)
            goto out;
        times[i] = now_ns() - t0;
    }
    if (verify(c, dec, bdec, k->name, err, errlen) != 0)
        goto out;
    r->dec_ns = median(times, n);
    r->nframes = c->nframes;
    r->ok = 1;
    rc = 0;
out:
    free(enc.data);
    free(enc.ends);
    free(dec);
    free(bdec);
    free(s.p);
    return rc;
}

static const result *find(const result *res, const char *name)
{
    for (size_t i = 0; i < NCODECS; i++)
        if (strcmp(codecs[i]->name, name) == 0)
            return res[i].ok ? &res[i] : NULL;
    return NULL;
}

/* Per frame for times (each codec over the frames it ran on), whole bytes
 * for sizes (targets on sizes compare codecs over the same traces). */
static double metric_of(const result *r, enum metric m)
{
    double frames = r->nframes ? (double)r->nframes : 1;
    return m == ENCODE_NS ? r->enc_ns / frames
           : m == DECODE_NS ? r->dec_ns / frames
                            : (double)r->bytes;
}

static void print_targets(FILE *f, const result *res, const bench_corpus *c)
{
    fprintf(f, "targets (%s):\n", c->name);
    for (size_t i = 0; i < sizeof targets / sizeof *targets; i++) {
        const target *t = &targets[i];
        const result *a = find(res, t->a), *b = find(res, t->b);
        if (!a || !b) {
            fprintf(f, "  n/a   %s (%s not measured)\n", t->text, !a ? t->a : t->b);
            continue;
        }
        double x = metric_of(a, t->metric), y = metric_of(b, t->metric);
        int pass = t->strict ? x * t->factor < y : x * t->factor <= y;
        int bytes = t->metric == BYTES;
        fprintf(f, "  %s  %s: %s %.*f, %s %.*f %s (ratio %.2f)\n", pass ? "PASS" : "FAIL",
                t->text, t->a, bytes ? 0 : 3, x, t->b, bytes ? 0 : 3, y,
                bytes ? "bytes" : "ns/frame", x > 0 ? y / x : 0.0);
    }
}

/* JSON string: the name comes from a file name, so escape it. */
static void json_string(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            printf("\\%c", ch);
        else if (ch < 0x20)
            printf("\\u%04x", ch);
        else
            putchar(ch);
    }
    putchar('"');
}

static void print_row(const options *o, const bench_corpus *c, const bench_codec *k,
                      const result *r, int subset)
{
    double frames = (double)c->nframes, traces = (double)c->ntraces;
    if (o->json) {
        printf("{\"corpus\":");
        json_string(c->name);
        printf(",\"codec\":");
        json_string(k->name);
        if (r->ok && c->nframes)
            printf(",\"bytes_per_frame\":%.4f,\"bytes_per_trace\":%.3f,"
                   "\"encode_ns_per_frame\":%.3f,\"decode_ns_per_frame\":%.3f}\n",
                   r->bytes / frames, r->bytes / traces, r->enc_ns / frames,
                   r->dec_ns / frames);
        else
            printf(",\"bytes_per_frame\":null,\"bytes_per_trace\":null,"
                   "\"encode_ns_per_frame\":null,\"decode_ns_per_frame\":null}\n");
    } else if (r->ok && c->nframes) {
        printf("%-12s %12.3f %12.1f %16.2f %16.2f%s\n", k->name, r->bytes / frames,
               r->bytes / traces, r->enc_ns / frames, r->dec_ns / frames, subset ? "  *" : "");
    } else {
        printf("%-12s %12s %12s %16s %16s   (%s)\n", k->name, "n/a", "n/a", "n/a", "n/a",
               r->why ? r->why : "no frames");
    }
    fflush(stdout);
}

/* The corpus a codec runs on: all of c, or its traces of at most
 * k->max_depth frames (made once, kept in *sub). NULL when out of memory. */
static const bench_corpus *corpus_for(const bench_codec *k, const bench_corpus *c,
                                      bench_corpus *sub, size_t *sub_depth)
{
    if (!k->max_depth || c->max_depth <= k->max_depth)
        return c;
    if (*sub_depth != k->max_depth) {
        if (*sub_depth)
            bench_corpus_free(sub);
        *sub_depth = 0;
        if (bench_corpus_subset(c, k->max_depth, sub) != 0)
            return NULL;
        *sub_depth = k->max_depth;
    }
    return sub;
}

static int run_corpus(const options *o, const char *path)
{
    char err[512];
    bench_corpus c, sub;
    size_t sub_depth = 0;
    double t0 = now_ns();
    if (bench_corpus_load(path, &c, err, sizeof err) != 0) {
        fprintf(stderr, "btpack_bench: %s: %s\n", path, err);
        return -1;
    }
    if (!o->json) {
        printf("\ncorpus %s: %zu traces, %zu frames, %u-bit words, depth max %zu "
               "(loaded in %.1f s)\n",
               c.name, c.ntraces, c.nframes, c.word_bits, c.max_depth, (now_ns() - t0) / 1e9);
        printf("%-12s %12s %12s %16s %16s\n", "codec", "bytes/frame", "bytes/trace",
               "encode ns/frame", "decode ns/frame");
    }
    result res[NCODECS];
    int rc = 0;
    for (size_t i = 0; i < NCODECS; i++) {
        memset(&res[i], 0, sizeof res[i]);
        if (!selected(o, codecs[i]->name))
            continue;
        const bench_corpus *cc = corpus_for(codecs[i], &c, &sub, &sub_depth);
        if (!cc) {
            fprintf(stderr, "btpack_bench: out of memory\n");
            rc = -1;
            break;
        }
        if (measure(o, codecs[i], cc, &res[i], err, sizeof err) != 0) {
            fprintf(stderr, "btpack_bench: %s: %s: %s\n", c.name, codecs[i]->name, err);
            res[i].why = "failed";
            rc = -1;
        }
        print_row(o, cc, codecs[i], &res[i], cc != &c);
    }
    if (sub_depth) {
        /* Say which traces the starred rows left out. */
        fprintf(o->json ? stderr : stdout,
                "* %s: over the %zu traces (%zu frames) of at most %zu frames; the other "
                "%zu (%zu frames) are deeper than the format holds\n",
                c.name, sub.ntraces, sub.nframes, sub_depth, c.ntraces - sub.ntraces,
                c.nframes - sub.nframes);
        bench_corpus_free(&sub);
    }
    /* JSON Lines on stdout hold rows only; the verdicts go to stderr. */
    print_targets(o->json ? stderr : stdout, res, &c);
    bench_corpus_free(&c);
    return rc;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: btpack_bench [--json] [--reps N] [--budget SECONDS] [--codecs a,b,...] "
            "CORPUS...\n"
            "       btpack_bench --list\n"
            "CORPUS: a file in the stkshim record format (xz-compressed or plain text).\n"
            "--reps N         timed repetitions after the warm-up (default 7, max %d)\n"
            "--budget SECONDS stop repeating a slow codec after this long (default 1; at\n"
            "                 least 3 repetitions are always made)\n",
            MAX_REPS);
}

int main(int argc, char **argv)
{
    options o = {.json = 0, .reps = 7, .budget = 1.0, .only = NULL};
    int first = argc;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--json") == 0) {
            o.json = 1;
        } else if (strcmp(a, "--list") == 0) {
            for (size_t k = 0; k < NCODECS; k++) {
                const char *why = codecs[k]->unavailable;
                printf("%-12s %s%s%s%s\n", codecs[k]->name, codecs[k]->what, why ? " [" : "",
                       why ? why : "", why ? "]" : "");
            }
            return 0;
        } else if ((strcmp(a, "--reps") == 0 || strcmp(a, "--budget") == 0 ||
                    strcmp(a, "--codecs") == 0) &&
                   i + 1 < argc) {
            const char *v = argv[++i];
            char *end;
            errno = 0;
            if (strcmp(a, "--codecs") == 0) {
                o.only = v;
            } else if (strcmp(a, "--reps") == 0) {
                long n = strtol(v, &end, 10);
                if (*end || errno || n < 1 || n > MAX_REPS) {
                    usage(stderr);
                    return 2;
                }
                o.reps = (int)n;
            } else {
                o.budget = strtod(v, &end);
                if (*end || errno || !(o.budget >= 0)) {
                    usage(stderr);
                    return 2;
                }
            }
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(a, "--") == 0) {
            first = i + 1;
            break;
        } else if (a[0] == '-') {
            usage(stderr);
            return 2;
        } else {
            first = i;
            break;
        }
    }
    if (first >= argc) {
        usage(stderr);
        return 2;
    }
    int rc = 0;
    for (int i = first; i < argc; i++)
        if (run_corpus(&o, argv[i]) != 0)
            rc = 1;
    return rc;
}
