/*
 * btpack_capture_bench: what a stack capture costs per frame with each
 * method, next to the unwinder it is built on called directly, in one
 * process, in interleaved rounds.
 *
 *   btpack_capture_bench [--depth N] [--rounds N] [--ms N] [--rows a,b,...]
 *                        [--ir] [--json] [--list]
 *
 * The stack is a chain of `depth` frames through four functions that call
 * each other in turn (so consecutive return addresses differ, as in real
 * stacks), built with frame pointers so that every method sees the same
 * frames. At its bottom every row captures repeatedly; a round times each
 * row once for about --ms milliseconds (calibrated once), and the rows'
 * order is the same in every round, so a slow spell of the shared machine
 * hits all rows of a round alike. Times are the thread's CPU time. Each
 * row reports ns per capture and ns per frame (min / median / max over the
 * rounds); each comparison row the ratio to its peer computed per round
 * (min / median / max), or for the CBF rows the ns per frame they add to
 * the capture alone. The fp rows (fp-bare, fp, fp-cbf) call their walk
 * straight from the timing loop, at the same depth, and the bare walk
 * takes as many records as btpack's: both report the same frames.
 *
 * --ir: instructions per frame under callgrind instead of times: run
 * under `valgrind --tool=callgrind`, it dumps the counts of a fixed number
 * of captures per row, which bench/capture_ir.py reads.
 */
#include <btpack/btpack.h>

#include <dlfcn.h>
#include <gnu/lib-names.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if BENCH_HAVE_LIBUNWIND
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#endif
#if BENCH_HAVE_LIBGCC
#include <unwind.h>
#endif
#if BENCH_HAVE_CALLGRIND
#include <valgrind/callgrind.h>
#endif

#define NOINL __attribute__((noinline))
#define BARRIER() __asm__ volatile("" ::: "memory")
#define CAP 256

/* The CBF rows' stream starts a page (bytes, first): where it crossed
 * one, as it did where the linker put this struct (its 40th byte on the
 * next page), the encoders' unaligned 8-byte stores that straddle the
 * boundary cost fp-cbf 7 ns and cfi-cbf 30 ns a capture at depth 10
 * (bench/history/capture.md, "CBF: the collector's frames and the
 * memo's instructions"), with no change to btpack's code. */
typedef struct job {
    _Alignas(4096) uint8_t bytes[BTP_CBF_BOUND(BTP_CAPTURE_CBF_MAX_FRAMES)];
    btp_capture_options opt;
    void *addrs[CAP];
    btp_frame f[CAP];
} job;

/* ------------------------------------------------------------------ */
/* Baselines: the unwinders called directly                             */
/* ------------------------------------------------------------------ */

/* The frame the chain starts from. */
static void *chain_root;

/* The bare walk: no bounds, no alignment, no progress check; `max`
 * records from its own. It has no way to know where the stack ends:
 * time_row gives it as many records as btpack's fp walk found from the
 * same frame (or up to the chain's root). */
static NOINL __attribute__((aligned(64))) size_t bare_walk(void **out, size_t max)
{
    void **fp = __builtin_frame_address(0);
    size_t n = 0;
    while (fp && n < max) {
        out[n++] = fp[1];
        fp = fp[0];
    }
    return n;
}

/* Records from this function's own up to the chain's root. */
static NOINL size_t records_to_root(void)
{
    void **fp = __builtin_frame_address(0);
    size_t n = 0;
    while (fp && fp != chain_root && n < CAP) {
        n++;
        fp = fp[0];
    }
    return n;
}

/* glibc's backtrace() and libgcc's _Unwind_Backtrace, looked up in their own
 * libraries: libunwind (linked here for unw_backtrace) exports both names
 * too. */
typedef int (*backtrace_fn)(void **, int);
static backtrace_fn glibc_backtrace;

static NOINL size_t direct_backtrace(job *j)
{
    return (size_t)glibc_backtrace(j->addrs, CAP);
}

#if BENCH_HAVE_LIBGCC
typedef _Unwind_Reason_Code (*unwind_backtrace_fn)(_Unwind_Trace_Fn, void *);
typedef _Unwind_Ptr (*unwind_getip_fn)(struct _Unwind_Context *);
static unwind_backtrace_fn gcc_backtrace;
static unwind_getip_fn gcc_getip;

typedef struct gcc_walk {
    void **out;
    size_t n;
} gcc_walk;

static _Unwind_Reason_Code gcc_frame(struct _Unwind_Context *ctx, void *arg)
{
    gcc_walk *w = arg;
    if (w->n == CAP)
        return _URC_END_OF_STACK;
    w->out[w->n++] = (void *)gcc_getip(ctx);
    return _URC_NO_REASON;
}

static NOINL size_t direct_unwind_backtrace(job *j)
{
    gcc_walk w = {j->addrs, 0};
    gcc_backtrace(gcc_frame, &w);
    return w.n;
}
#endif

#if BENCH_HAVE_LIBUNWIND
static NOINL size_t direct_unw_backtrace(job *j)
{
    int n = unw_backtrace(j->addrs, CAP);
    return n > 0 ? (size_t)n : 0;
}
#endif

/* ------------------------------------------------------------------ */
/* btpack                                                               */
/* ------------------------------------------------------------------ */

/* The fp rows' functions, as rows: time_row calls what they call
 * directly instead (see there). */
static NOINL size_t bare_fp(job *j)
{
    return bare_walk(j->addrs, records_to_root());
}

static NOINL size_t btp_array(job *j)
{
    size_t n = 0;
    btp_capture(&j->opt, j->f, CAP, &n);
    return n;
}

static NOINL size_t btp_cbf(job *j)
{
    size_t len = 0;
    btp_capture_cbf(&j->opt, NULL, j->bytes, sizeof j->bytes, &len);
    return len;
}

/* ------------------------------------------------------------------ */
/* Rows                                                                 */
/* ------------------------------------------------------------------ */

enum compare { NONE, RATIO, ADDED_NS };

typedef struct row {
    const char *name;
    btp_capture_method method; /* for btpack rows */
    size_t (*fn)(job *);
    const char *peer;     /* the row it is compared with */
    enum compare compare; /* how */
    double goal;          /* ratio at most / ns per frame added at most */
    const char *what;
    /* filled in */
    int available;
    size_t frames;
    long iters;
    double *ns; /* per round: ns per capture */
} row;

#define ROW(n, m, f, p, c, g, w)                                                             \
    {.name = n, .method = m, .fn = f, .peer = p, .compare = c, .goal = g, .what = w}

static row rows[] = {
    ROW("fp-bare", 0, bare_fp, NULL, NONE, 0, "frame-pointer walk, nothing checked"),
    ROW("fp", BTP_CAPTURE_FP, btp_array, "fp-bare", RATIO, 1.5, "btp_capture, fp"),
    ROW("fp-cbf", BTP_CAPTURE_FP, btp_cbf, "fp", ADDED_NS, 1.0, "btp_capture_cbf, fp"),
    ROW("unw_backtrace", 0, NULL, NULL, NONE, 0, "libunwind's unw_backtrace (its trace cache)"),
    ROW("libunwind", BTP_CAPTURE_LIBUNWIND, btp_array, "unw_backtrace", RATIO, 1.5,
     "btp_capture, libunwind"),
    ROW("libunwind-cbf", BTP_CAPTURE_LIBUNWIND, btp_cbf, "libunwind", ADDED_NS, 1.0,
     "btp_capture_cbf, libunwind"),
    ROW("cfi", BTP_CAPTURE_CFI, btp_array, "unw_backtrace", RATIO, 1.5, "btp_capture, cfi"),
    ROW("cfi-cbf", BTP_CAPTURE_CFI, btp_cbf, "cfi", ADDED_NS, 1.0, "btp_capture_cbf, cfi"),
    ROW("_Unwind_Backtrace", 0, NULL, NULL, NONE, 0, "libgcc_s's _Unwind_Backtrace, one callback"),
    ROW("libgcc", BTP_CAPTURE_LIBGCC, btp_array, "_Unwind_Backtrace", RATIO, 1.2,
     "btp_capture, libgcc"),
    ROW("libgcc-cbf", BTP_CAPTURE_LIBGCC, btp_cbf, "libgcc", ADDED_NS, 1.0, "btp_capture_cbf, libgcc"),
    ROW("backtrace", 0, direct_backtrace, NULL, NONE, 0, "glibc's backtrace()"),
    ROW("glibc", BTP_CAPTURE_GLIBC, btp_array, "backtrace", RATIO, 1.2, "btp_capture, glibc"),
    ROW("glibc-cbf", BTP_CAPTURE_GLIBC, btp_cbf, "glibc", ADDED_NS, 1.0, "btp_capture_cbf, glibc"),
    ROW("default", BTP_CAPTURE_DEFAULT, btp_array, "unw_backtrace", RATIO, 1.5,
     "btp_capture, the build's default method"),
};
#define NROWS (sizeof rows / sizeof rows[0])

static row *find_row(const char *name)
{
    for (size_t i = 0; i < NROWS; i++)
        if (name && strcmp(rows[i].name, name) == 0)
            return &rows[i];
    return NULL;
}

/* CPU time of the process (one thread: this one), not wall time: on a
 * shared machine wall time also counts the time others hold the core. A
 * microsecond's resolution is enough for windows of a millisecond or
 * more. */
static double now_ns(void)
{
    return (double)clock() * (1e9 / CLOCKS_PER_SEC);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef struct stats {
    double min, med, max;
} stats;

static stats stats_of(double *v, int n)
{
    double *s = malloc((size_t)n * sizeof *s);
    if (!s)
        abort();
    memcpy(s, v, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, cmp_double);
    stats r = {s[0], n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2, s[n - 1]};
    free(s);
    return r;
}

typedef struct options {
    int depth, rounds, ms, ir, json;
    const char *only;
} options;

static options opt = {30, 21, 4, 0, 0, NULL};
static job the_job;

static int selected(const row *r)
{
    if (!opt.only)
        return 1;
    size_t len = strlen(r->name);
    for (const char *p = opt.only; *p;) {
        const char *e = strchr(p, ',');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n == len && strncmp(p, r->name, n) == 0)
            return 1;
        p += n + (e ? 1 : 0);
    }
    return 0;
}

static double time_row(row *r, long iters);

/* Frames a row reports (CBF rows: those of the array row of the method). */
static size_t count_frames(row *r)
{
    job *j = &the_job;
    j->opt = (btp_capture_options){0};
    j->opt.method = r->method;
    if (r->fn == bare_fp || r->method == BTP_CAPTURE_FP) {
        time_row(r, 0); /* sets r->frames */
        return r->frames;
    }
    return r->fn == btp_cbf ? btp_array(j) : r->fn(j);
}

static double time_row(row *r, long iters)
{
    job *j = &the_job;
    j->opt = (btp_capture_options){0};
    j->opt.method = r->method;
    size_t (*fn)(job *) = r->fn;
    double t0;
    /* The fp rows call the walk from this frame, with no function of the
     * bench's between (the library's entry points are called as a
     * program calls them): the same call depth for the bare walk and
     * btpack's, so both read the same records and report the same frames
     * (the bare walk as many as btpack's fp walk finds from here: it has
     * no other way to know where the stack ends). */
    if (fn == bare_fp || r->method == BTP_CAPTURE_FP) {
        /* what btpack's fp walk reports from here (the CBF row's frames,
         * the bare walk's length) */
        size_t n = 0, len;
        if (find_row("fp")->available) {
            btp_capture_options o = {.method = BTP_CAPTURE_FP};
#if BENCH_HAVE_CALLGRIND
            CALLGRIND_TOGGLE_COLLECT; /* (--ir: not one of the row's captures) */
#endif
            if (btp_capture(&o, j->f, CAP, &n) != BTP_OK)
                n = 0;
#if BENCH_HAVE_CALLGRIND
            CALLGRIND_TOGGLE_COLLECT;
#endif
        }
        if (fn == bare_fp) {
            /* (records_to_root, called from here, starts where the bare
             * walk does) */
            size_t max = n > 0 ? n : records_to_root();
            t0 = now_ns();
            for (long i = 0; i < iters; i++) {
                n = bare_walk(j->addrs, max);
                BARRIER();
            }
            if (iters == 0)
                n = bare_walk(j->addrs, max);
        } else if (fn == btp_array) {
            t0 = now_ns();
            for (long i = 0; i < iters; i++) {
                btp_capture(&j->opt, j->f, CAP, &n);
                BARRIER();
            }
        } else {
            t0 = now_ns();
            for (long i = 0; i < iters; i++) {
                btp_capture_cbf(&j->opt, NULL, j->bytes, sizeof j->bytes, &len);
                BARRIER();
            }
        }
        double t = iters > 0 ? (now_ns() - t0) / (double)iters : 0;
        r->frames = n;
        return t;
    }
    t0 = now_ns();
    for (long i = 0; i < iters; i++) {
        fn(j);
        BARRIER();
    }
    return (now_ns() - t0) / (double)iters;
}

/* ------------------------------------------------------------------ */
/* The measurement, at the bottom of the chain                          */
/* ------------------------------------------------------------------ */

/* Rows measured: those printed and their peers. */
static int wanted(const row *r)
{
    if (selected(r))
        return 1;
    for (size_t i = 0; i < NROWS; i++)
        if (selected(&rows[i]) && rows[i].peer && strcmp(rows[i].peer, r->name) == 0)
            return 1;
    return 0;
}

#if BENCH_HAVE_CALLGRIND
/* --ir: the instructions of 1000 captures per row (after a warm-up that
 * fills every cache), dumped as "capture <row> <frames> <captures>". */
static void count_instructions(void)
{
    for (size_t i = 0; i < NROWS; i++) {
        row *r = &rows[i];
        if (!r->available || !wanted(r))
            continue;
        long n = 1000;
        time_row(r, 10);
        CALLGRIND_ZERO_STATS;
        time_row(r, n);
        char name[128];
        snprintf(name, sizeof name, "capture %s %zu %ld", r->name, r->frames, n);
        CALLGRIND_DUMP_STATS_AT(name);
    }
}
#endif

static void measure(void)
{
    for (size_t i = 0; i < NROWS; i++) {
        row *r = &rows[i];
        if (!r->available || !wanted(r))
            continue;
        r->frames = count_frames(r);
        if (r->frames == 0)
            r->available = 0;
    }
#if BENCH_HAVE_CALLGRIND
    if (opt.ir) {
        count_instructions();
        return;
    }
#endif
    /* Calibrate: iterations for about --ms milliseconds of each row. */
    for (size_t i = 0; i < NROWS; i++) {
        row *r = &rows[i];
        if (!r->available || !wanted(r))
            continue;
        double per = time_row(r, 20);
        per = time_row(r, 20);
        r->iters = (long)(opt.ms * 1e6 / (per > 1 ? per : 1));
        if (r->iters < 5)
            r->iters = 5;
        r->ns = calloc((size_t)opt.rounds, sizeof *r->ns);
        if (!r->ns)
            abort();
    }
    for (int round = 0; round < opt.rounds; round++)
        for (size_t i = 0; i < NROWS; i++)
            if (rows[i].available && rows[i].ns)
                rows[i].ns[round] = time_row(&rows[i], rows[i].iters);
}

/* Four functions calling each other in turn: consecutive frames have
 * different return addresses, as in a real stack. Each stores its own
 * number after the call: with identical bodies the compiler folds the four
 * into one function calling itself (identical code folding), and every
 * return address of the chain would be the same one, which flatters the
 * CBF rows (a repeated address is the cheapest frame) and the unwinders'
 * caches alike. */
static NOINL void level0(int d);
static NOINL void level1(int d);
static NOINL void level2(int d);
static NOINL void level3(int d);
static volatile int level_sink;

#define LEVEL(self, next, k)                                                                 \
    static NOINL void self(int d)                                                            \
    {                                                                                        \
        if (d > 0)                                                                           \
            next(d - 1);                                                                     \
        else                                                                                 \
            measure();                                                                       \
        level_sink = k;                                                                      \
        BARRIER();                                                                           \
    }
LEVEL(level0, level1, 0)
LEVEL(level1, level2, 1)
LEVEL(level2, level3, 2)
LEVEL(level3, level0, 3)
#undef LEVEL

static NOINL void run_chain(int depth)
{
    chain_root = __builtin_frame_address(0);
    /* depth frames below this one: level0 .. measure counts as 2 more */
    level0(depth > 2 ? depth - 2 : 0);
    BARRIER();
}

/* ------------------------------------------------------------------ */
/* Output                                                               */
/* ------------------------------------------------------------------ */

static void report(void)
{
    if (!opt.json) {
        printf("capture at depth %d: %d rounds, CPU time; ns per capture and per frame "
               "as min / median / max over the rounds\n",
               opt.depth, opt.rounds);
        printf("%-18s %6s %28s %26s   %s\n", "row", "frames", "ns/capture", "ns/frame",
               "compared (per round: min / median / max)");
    }
    for (size_t i = 0; i < NROWS; i++) {
        row *r = &rows[i];
        if (!selected(r))
            continue;
        if (!r->available) {
            if (opt.json)
                printf("{\"row\":\"%s\",\"available\":false}\n", r->name);
            else
                printf("%-18s %6s   not available in this build\n", r->name, "-");
            continue;
        }
        double per_frame[1024];
        int nr = opt.rounds < 1024 ? opt.rounds : 1024;
        for (int k = 0; k < nr; k++)
            per_frame[k] = r->ns[k] / (double)r->frames;
        stats cap = stats_of(r->ns, nr), fr = stats_of(per_frame, nr);
        row *p = find_row(r->peer);
        char cmp[160] = "";
        stats c = {0, 0, 0};
        int have_cmp = p && p->available && r->compare != NONE;
        if (have_cmp) {
            double v[1024];
            for (int k = 0; k < nr; k++)
                v[k] = r->compare == RATIO
                           ? (r->ns[k] / (double)r->frames) / (p->ns[k] / (double)p->frames)
                           : (r->ns[k] - p->ns[k]) / (double)p->frames;
            c = stats_of(v, nr);
            int pass = c.med <= r->goal;
            if (r->compare == RATIO)
                snprintf(cmp, sizeof cmp, "%.2f / %.2f / %.2fx %s (goal <= %.1fx) %s", c.min,
                         c.med, c.max, p->name, r->goal, pass ? "PASS" : "FAIL");
            else
                snprintf(cmp, sizeof cmp, "%+.2f / %+.2f / %+.2f ns/frame over %s (goal <= %.1f) %s",
                         c.min, c.med, c.max, p->name, r->goal, pass ? "PASS" : "FAIL");
        } else if (r->peer) {
            snprintf(cmp, sizeof cmp, "(%s not available)", r->peer);
        }
        if (opt.json) {
            printf("{\"row\":\"%s\",\"available\":true,\"frames\":%zu,\"rounds\":%d,"
                   "\"ns_per_capture\":[%.1f,%.1f,%.1f],\"ns_per_frame\":[%.3f,%.3f,%.3f]",
                   r->name, r->frames, nr, cap.min, cap.med, cap.max, fr.min, fr.med, fr.max);
            if (have_cmp)
                printf(",\"peer\":\"%s\",\"%s\":[%.3f,%.3f,%.3f],\"goal\":%.2f", p->name,
                       r->compare == RATIO ? "ratio" : "added_ns_per_frame", c.min, c.med,
                       c.max, r->goal);
            printf("}\n");
        } else {
            printf("%-18s %6zu %8.1f %8.1f %9.1f  %7.2f %7.2f %8.2f   %s\n", r->name, r->frames,
                   cap.min, cap.med, cap.max, fr.min, fr.med, fr.max, cmp);
        }
    }
}

static int usage(FILE *f)
{
    fputs("usage: btpack_capture_bench [--depth N] [--rounds N] [--ms N] [--rows a,b,...]\n"
          "                            [--ir] [--json] [--list]\n"
          "  --depth N    frames of the chain captured (default 30)\n"
          "  --rounds N   interleaved rounds (default 21)\n"
          "  --ms N       milliseconds per row per round (default 4)\n"
          "  --rows LIST  measure and print only these rows (and measure their peers)\n"
          "  --ir         count instructions under callgrind instead of timing\n"
          "               (bench/capture_ir.py runs and reads this)\n"
          "  --json       one JSON object per row\n"
          "  --list       the rows and whether this build has them\n"
          "example: btpack_capture_bench --rounds 31 --rows fp-bare,fp,fp-cbf\n",
          f);
    return f == stdout ? 0 : 2;
}

static void resolve_baselines(void)
{
    /* Whatever the link order, each baseline from its own library. */
    void *libc = dlopen(LIBC_SO, RTLD_LAZY | RTLD_NOLOAD);
    glibc_backtrace = libc ? (backtrace_fn)dlsym(libc, "backtrace") : NULL;
    find_row("backtrace")->available = glibc_backtrace != NULL;
#if BENCH_HAVE_LIBGCC
    void *gcc = dlopen(LIBGCC_S_SO, RTLD_LAZY);
    if (gcc) {
        gcc_backtrace = (unwind_backtrace_fn)dlsym(gcc, "_Unwind_Backtrace");
        gcc_getip = (unwind_getip_fn)dlsym(gcc, "_Unwind_GetIP");
    }
    find_row("_Unwind_Backtrace")->fn = direct_unwind_backtrace;
    find_row("_Unwind_Backtrace")->available = gcc_backtrace && gcc_getip;
#endif
#if BENCH_HAVE_LIBUNWIND
    find_row("unw_backtrace")->fn = direct_unw_backtrace;
    find_row("unw_backtrace")->available = 1;
#endif
    find_row("fp-bare")->available = 1;
    for (size_t i = 0; i < NROWS; i++)
        if (rows[i].fn == btp_array || rows[i].fn == btp_cbf)
            rows[i].available = btp_capture_method_available(rows[i].method);
}

int main(int argc, char **argv)
{
    int list = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--depth") == 0 && v) {
            opt.depth = atoi(v);
            i++;
        } else if (strcmp(a, "--rounds") == 0 && v) {
            opt.rounds = atoi(v);
            i++;
        } else if (strcmp(a, "--ms") == 0 && v) {
            opt.ms = atoi(v);
            i++;
        } else if (strcmp(a, "--rows") == 0 && v) {
            opt.only = v;
            i++;
        } else if (strcmp(a, "--ir") == 0) {
            opt.ir = 1;
        } else if (strcmp(a, "--json") == 0) {
            opt.json = 1;
        } else if (strcmp(a, "--list") == 0) {
            list = 1;
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            return usage(stdout);
        } else {
            fprintf(stderr, "btpack_capture_bench: bad argument '%s'\n", a);
            return usage(stderr);
        }
    }
    if (opt.depth < 3 || opt.depth > 200 || opt.rounds < 1 || opt.rounds > 1000 || opt.ms < 1) {
        fprintf(stderr, "btpack_capture_bench: --depth 3..200, --rounds 1..1000, --ms >= 1\n");
        return 2;
    }
#if !BENCH_HAVE_CALLGRIND
    if (opt.ir) {
        fprintf(stderr, "btpack_capture_bench: --ir: built without valgrind/callgrind.h\n");
        return 2;
    }
#endif
    resolve_baselines();
    if (list) {
        for (size_t i = 0; i < NROWS; i++)
            printf("%-18s %-3s %s\n", rows[i].name, rows[i].available ? "yes" : "no",
                   rows[i].what);
        return 0;
    }
    /* Each method's first call (libraries an unwinder loads on first use). */
    btp_capture_options o;
    for (int m = BTP_CAPTURE_FP; m <= BTP_CAPTURE_CFI; m++) {
        if (!btp_capture_method_available((btp_capture_method)m))
            continue;
        btp_capture_options_init(&o);
        o.method = (btp_capture_method)m;
        btp_frame f[4];
        size_t n;
        btp_capture(&o, f, 4, &n);
    }
    run_chain(opt.depth);
    if (!opt.ir)
        report();
    return 0;
}
