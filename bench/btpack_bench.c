/*
 * btpack_bench: size and speed of the ways to store a backtrace, on real
 * corpora, in one process.
 *
 *   btpack_bench [--json] [--reps N] [--budget SECONDS] [--codecs a,b,...]
 *                [--ir] CORPUS...
 *   btpack_bench --list
 *
 * For each corpus file (record format of tests/data/corpus/README.md, xz or
 * plain text) and each codec: encode and decode the whole corpus once as a
 * warm-up, then N rounds, each of which times every codec's encode and
 * decode once, codec after codec; the figures are the median, minimum and
 * maximum of the rounds. Decoded frames are compared with the originals
 * after the warm-up and after the last round (outside the timing), so a
 * codec that loses or invents a frame fails the run instead of printing a
 * figure.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "codec.h"

#if BENCH_HAVE_CALLGRIND
#include <valgrind/callgrind.h>
#endif

static const bench_codec *const codecs[] = {
    &bench_codec_raw,
    &bench_codec_varint,
    &bench_codec_gwp_asan,
    &bench_codec_cbf,
    &bench_codec_cbf_addr,
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

#define MAX_REPS 101

/* One codec on one corpus: its buffers and the time of every round. */
typedef struct run {
    const bench_codec *k;
    const bench_corpus *c; /* the corpus it runs on (all, or a subset) */
    int ok;                /* 0: n/a (unavailable, or failed) */
    const char *why;       /* when !ok */
    bench_scratch s;
    bench_encoded enc;
    size_t bytes;
    int n_enc, n_dec; /* rounds it gets (slow codecs fewer) */
    double enc_ns[MAX_REPS], dec_ns[MAX_REPS];
} run;

/* Targets printed with each corpus: b's time over a's must be at least
 * `factor` (sizes: a's bytes times `factor` strictly below b's). */
enum metric { ENCODE_NS, DECODE_NS, BYTES };
typedef struct target {
    const char *text;
    const char *a, *b;
    enum metric metric;
    double factor;
} target;

static const target targets[] = {
    {"cbf encode at most 0.5x the time of gwp-asan (address arrays)", "cbf-addr", "gwp-asan",
     ENCODE_NS, 2},
    {"cbf decode at most 0.5x the time of gwp-asan (address arrays)", "cbf-addr", "gwp-asan",
     DECODE_NS, 2},
    {"cbf encode at most 0.5x the time of gwp-asan (btp_frame)", "cbf", "gwp-asan", ENCODE_NS, 2},
    {"cbf decode at most 0.5x the time of gwp-asan (btp_frame)", "cbf", "gwp-asan", DECODE_NS, 2},
    {"lws encode at least 10x faster than lws-bitwise", "lws", "lws-bitwise", ENCODE_NS, 10},
    {"lws decode at least 15x faster than lws-bitwise", "lws", "lws-bitwise", DECODE_NS, 15},
    {"log-zlib smaller than xz-raw", "log-zlib", "xz-raw", BYTES, 1},
};

typedef struct options {
    int json;
    int reps;
    double budget;
    int ir;           /* --ir: dump callgrind counts of each codec's first round */
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

/* Median, min and max of v[0..n) (n >= 1; sorts a copy). */
typedef struct spread {
    double med, min, max;
} spread;

static spread spread_of(const double *v, int n)
{
    double s[MAX_REPS];
    memcpy(s, v, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, cmp_double);
    spread r = {n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2, s[0], s[n - 1]};
    return r;
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

/* How many timed rounds: `reps`, but when one run is slow stop once the
 * budget is spent, never below 3 so the median means something. */
static int reps_for(const options *o, double warmup_ns)
{
    double fit = o->budget * 1e9 / (warmup_ns > 1 ? warmup_ns : 1);
    if (fit < 3)
        fit = 3;
    return fit < o->reps ? (int)fit : o->reps;
}

/* Decoder output shared by every codec of a corpus, so each writes the
 * same memory: words, or btp_frame for the library's decoders. */
typedef struct outbufs {
    uint64_t *words;
    btp_frame *bframes;
} outbufs;

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

/* Poison the output (outside the timing) so that a decoder that skips
 * frames cannot pass on what the previous codec left. */
static void poison(const run *r, const outbufs *b, int byte)
{
    if (r->k->decode_trace_b)
        memset(b->bframes, byte, r->c->nframes * sizeof *b->bframes);
    else
        memset(b->words, byte, r->c->nframes * sizeof *b->words);
}

/* One timed encode or decode of r's whole corpus; returns its time, or a
 * negative value with a message in err. Under --ir the first round of each
 * codec and direction is also counted by callgrind, in a dump of its own
 * named "<corpus> <codec> <encode|decode> <frames>" (bench/ir.py reads
 * them). */
static double timed(const options *o, run *r, int decode, const outbufs *b, int round, char *err,
                    size_t errlen)
{
    int counted = o->ir && round == 0;
#if BENCH_HAVE_CALLGRIND
    if (counted)
        CALLGRIND_ZERO_STATS;
#endif
    double t0 = now_ns();
    int rc = decode ? bench_decode(r->k, r->c, &r->enc, b->words, b->bframes, &r->s, err, errlen)
                    : bench_encode(r->k, r->c, &r->enc, &r->s, err, errlen);
    double t = now_ns() - t0;
#if BENCH_HAVE_CALLGRIND
    if (counted) {
        char name[256];
        snprintf(name, sizeof name, "%s %s %s %zu", r->c->name, r->k->name,
                 decode ? "decode" : "encode", r->c->nframes);
        CALLGRIND_DUMP_STATS_AT(name);
    }
#else
    (void)counted;
#endif
    return rc == 0 ? t : -1;
}

/* Buffers, one warm-up encode and decode (checked), and the number of
 * rounds. Returns 0 (r->ok says whether the codec runs), or -1 with a
 * message (a codec that fails is an error of the whole run: its figures
 * would lie). */
static int prepare(const options *o, run *r, const outbufs *b, char *err, size_t errlen)
{
    if ((r->why = r->k->unavailable) != NULL)
        return 0;
    if (r->c->ntraces == 0) {
        r->why = "no trace fits the format";
        return 0;
    }
    r->enc.cap = r->k->bound(r->c);
    r->enc.data = malloc(r->enc.cap ? r->enc.cap : 1);
    r->enc.ends = malloc(r->c->ntraces * sizeof *r->enc.ends);
    if (!r->enc.data || !r->enc.ends)
        return bench_fail(err, errlen, "out of memory");
    double t0 = now_ns();
    if (bench_encode(r->k, r->c, &r->enc, &r->s, err, errlen) != 0)
        return -1;
    r->n_enc = reps_for(o, now_ns() - t0);
    r->bytes = r->enc.len;
    poison(r, b, 0xa5);
    t0 = now_ns();
    if (bench_decode(r->k, r->c, &r->enc, b->words, b->bframes, &r->s, err, errlen) != 0)
        return -1;
    r->n_dec = reps_for(o, now_ns() - t0);
    if (verify(r->c, b->words, r->k->decode_trace_b ? b->bframes : NULL, r->k->name, err,
               errlen) != 0)
        return -1;
    r->ok = 1;
    return 0;
}

/* Round i of codec r: an encode, then a decode (each if r still has
 * rounds to make), the encoded size checked, the decoded frames after the
 * last decode. */
static int round_of(const options *o, run *r, const outbufs *b, int i, char *err, size_t errlen)
{
    if (i < r->n_enc) {
        double t = timed(o, r, 0, b, i, err, errlen);
        if (t < 0)
            return -1;
        if (r->enc.len != r->bytes)
            return bench_fail(err, errlen, "%s: encoded size changed between runs", r->k->name);
        r->enc_ns[i] = t;
    }
    if (i < r->n_dec) {
        poison(r, b, 0x5a + i);
        double t = timed(o, r, 1, b, i, err, errlen);
        if (t < 0)
            return -1;
        r->dec_ns[i] = t;
        if (i == r->n_dec - 1 &&
            verify(r->c, b->words, r->k->decode_trace_b ? b->bframes : NULL, r->k->name, err,
                   errlen) != 0)
            return -1;
    }
    return 0;
}

static void run_free(run *r)
{
    free(r->enc.data);
    free(r->enc.ends);
    free(r->s.p);
}

static const run *find(const run *runs, const char *name)
{
    for (size_t i = 0; i < NCODECS; i++)
        if (strcmp(codecs[i]->name, name) == 0)
            return runs[i].ok ? &runs[i] : NULL;
    return NULL;
}

static void print_targets(FILE *f, const run *runs, const bench_corpus *c)
{
    fprintf(f, "targets (%s):\n", c->name);
    for (size_t i = 0; i < sizeof targets / sizeof *targets; i++) {
        const target *t = &targets[i];
        const run *a = find(runs, t->a), *b = find(runs, t->b);
        if (!a || !b) {
            fprintf(f, "  n/a   %s (%s not measured)\n", t->text, !a ? t->a : t->b);
            continue;
        }
        if (t->metric == BYTES) {
            double x = (double)a->bytes, y = (double)b->bytes;
            fprintf(f, "  %s  %s: %s %.0f, %s %.0f bytes (ratio %.2f)\n",
                    x * t->factor < y ? "PASS" : "FAIL", t->text, t->a, x, t->b, y,
                    x > 0 ? y / x : 0.0);
            continue;
        }
        /* Per frame (each codec over the frames it ran on); the verdict
         * on the ratio of the medians; the spread of the ratio from the
         * rounds both made, each pair timed back to back. */
        int dec = t->metric == DECODE_NS;
        const double *ta = dec ? a->dec_ns : a->enc_ns, *tb = dec ? b->dec_ns : b->enc_ns;
        int na = dec ? a->n_dec : a->n_enc, nb = dec ? b->n_dec : b->n_enc;
        double fa = (double)a->c->nframes, fb = (double)b->c->nframes;
        double x = spread_of(ta, na).med / fa, y = spread_of(tb, nb).med / fb;
        double ratios[MAX_REPS];
        int np = na < nb ? na : nb;
        for (int r = 0; r < np; r++)
            ratios[r] = (tb[r] / fb) / (ta[r] / fa);
        spread s = spread_of(ratios, np);
        fprintf(f, "  %s  %s: %s %.3f, %s %.3f ns/frame (ratio %.2f; per round %.2f-%.2f)\n",
                x * t->factor <= y ? "PASS" : "FAIL", t->text, t->a, x, t->b, y,
                x > 0 ? y / x : 0.0, s.min, s.max);
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

static void print_row(const options *o, const run *r, int subset)
{
    const bench_corpus *c = r->c;
    double frames = (double)c->nframes, traces = (double)c->ntraces;
    spread e = {0, 0, 0}, d = {0, 0, 0};
    int ok = r->ok && c->nframes;
    if (ok) {
        e = spread_of(r->enc_ns, r->n_enc);
        d = spread_of(r->dec_ns, r->n_dec);
    }
    if (o->json) {
        printf("{\"corpus\":");
        json_string(c->name);
        printf(",\"codec\":");
        json_string(r->k->name);
        if (ok)
            printf(",\"bytes_per_frame\":%.4f,\"bytes_per_trace\":%.3f,"
                   "\"encode_ns_per_frame\":%.3f,\"decode_ns_per_frame\":%.3f,"
                   "\"encode_ns_per_frame_min\":%.3f,\"encode_ns_per_frame_max\":%.3f,"
                   "\"decode_ns_per_frame_min\":%.3f,\"decode_ns_per_frame_max\":%.3f,"
                   "\"encode_rounds\":%d,\"decode_rounds\":%d}\n",
                   r->bytes / frames, r->bytes / traces, e.med / frames, d.med / frames,
                   e.min / frames, e.max / frames, d.min / frames, d.max / frames, r->n_enc,
                   r->n_dec);
        else
            printf(",\"bytes_per_frame\":null,\"bytes_per_trace\":null,"
                   "\"encode_ns_per_frame\":null,\"decode_ns_per_frame\":null,"
                   "\"encode_ns_per_frame_min\":null,\"encode_ns_per_frame_max\":null,"
                   "\"decode_ns_per_frame_min\":null,\"decode_ns_per_frame_max\":null,"
                   "\"encode_rounds\":null,\"decode_rounds\":null}\n");
    } else if (ok) {
        printf("%-12s %11.3f %11.1f %8.2f %7.2f-%-7.2f %8.2f %7.2f-%-7.2f%s\n", r->k->name,
               r->bytes / frames, r->bytes / traces, e.med / frames, e.min / frames,
               e.max / frames, d.med / frames, d.min / frames, d.max / frames,
               subset ? " *" : "");
    } else {
        printf("%-12s %11s %11s %8s %15s %8s   (%s)\n", r->k->name, "n/a", "n/a", "n/a", "",
               "n/a", r->why ? r->why : "no frames");
    }
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

/*
 * Every selected codec on one corpus. The timed repetitions are
 * interleaved: round i times each codec's encode and decode once, codec
 * after codec, so a slow spell of the machine hits all codecs of a round
 * alike instead of one codec's whole series.
 */
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
        fflush(stdout);
    }
    static run runs[NCODECS];
    memset(runs, 0, sizeof runs);
    outbufs b = {malloc((c.nframes ? c.nframes : 1) * sizeof *b.words),
                 malloc((c.nframes ? c.nframes : 1) * sizeof *b.bframes)};
    int rc = 0, rounds = 0;
    if (!b.words || !b.bframes) {
        fprintf(stderr, "btpack_bench: out of memory\n");
        rc = -1;
    }
    for (size_t i = 0; i < NCODECS && rc == 0; i++) {
        runs[i].k = codecs[i];
        runs[i].c = &c;
        if (!selected(o, codecs[i]->name)) {
            runs[i].k = NULL;
            continue;
        }
        if (!(runs[i].c = corpus_for(codecs[i], &c, &sub, &sub_depth))) {
            fprintf(stderr, "btpack_bench: out of memory\n");
            rc = -1;
        } else if (prepare(o, &runs[i], &b, err, sizeof err) != 0) {
            fprintf(stderr, "btpack_bench: %s: %s: %s\n", c.name, codecs[i]->name, err);
            runs[i].ok = 0;
            runs[i].why = "failed";
            rc = -1;
        }
        if (runs[i].ok) {
            rounds = runs[i].n_enc > rounds ? runs[i].n_enc : rounds;
            rounds = runs[i].n_dec > rounds ? runs[i].n_dec : rounds;
        }
    }
    for (int r = 0; r < rounds && rc == 0; r++)
        for (size_t i = 0; i < NCODECS; i++)
            if (runs[i].k && runs[i].ok && round_of(o, &runs[i], &b, r, err, sizeof err) != 0) {
                fprintf(stderr, "btpack_bench: %s: %s: %s\n", c.name, codecs[i]->name, err);
                runs[i].ok = 0;
                runs[i].why = "failed";
                rc = -1;
            }
    if (!o->json)
        printf("%-12s %11s %11s %8s %-15s %8s %-15s\n", "codec", "bytes/frame", "bytes/trace",
               "encode", " ns/frame min-max", "decode", " ns/frame min-max");
    for (size_t i = 0; i < NCODECS; i++)
        if (runs[i].k)
            print_row(o, &runs[i], runs[i].c != &c);
    if (sub_depth) {
        /* Say which traces the starred rows left out. */
        fprintf(o->json ? stderr : stdout,
                "* %s: over the %zu traces (%zu frames) of at most %zu frames; the other "
                "%zu (%zu frames) are deeper than the format holds\n",
                c.name, sub.ntraces, sub.nframes, sub_depth, c.ntraces - sub.ntraces,
                c.nframes - sub.nframes);
    }
    /* JSON Lines on stdout hold rows only; the verdicts go to stderr. */
    print_targets(o->json ? stderr : stdout, runs, &c);
    fflush(stdout);
    for (size_t i = 0; i < NCODECS; i++)
        run_free(&runs[i]);
    if (sub_depth)
        bench_corpus_free(&sub);
    free(b.words);
    free(b.bframes);
    bench_corpus_free(&c);
    return rc;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: btpack_bench [--json] [--reps N] [--budget SECONDS] [--codecs a,b,...] "
            "[--ir] CORPUS...\n"
            "       btpack_bench --list\n"
            "CORPUS: a file in the stkshim record format (xz-compressed or plain text).\n"
            "--reps N         timed rounds after the warm-up (default 21, max %d)\n"
            "--budget SECONDS give a slow codec only the rounds that fit this long (default\n"
            "                 1; at least 3 rounds are always made)\n"
            "--codecs a,b,... run only these codecs (--list names them)\n"
            "--ir             under valgrind --tool=callgrind, dump the instructions of\n"
            "                 each codec's first round (bench/ir.py runs and reads this)\n",
            MAX_REPS);
}

int main(int argc, char **argv)
{
    options o = {.json = 0, .reps = 21, .budget = 1.0, .ir = 0, .only = NULL};
    int first = argc;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--json") == 0) {
            o.json = 1;
        } else if (strcmp(a, "--ir") == 0) {
            if (!BENCH_HAVE_CALLGRIND) {
                fprintf(stderr, "btpack_bench: --ir: built without valgrind/callgrind.h\n");
                return 2;
            }
            o.ir = 1;
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
