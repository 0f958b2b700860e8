/* btpack stats: how many traces and frames, what CBF makes of them, and
 * the depth distribution. */
#include "cli.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "diag.h"
#include "output.h"

static const char stats_help[] =
    "usage: btpack stats [--from FMT] [--word-bits N] [--strict] [--keep-going] [-v]\n"
    "                    [--max-frames N] [--thread N|crashed|all] [--elf FILE]\n"
    "                    [--top N] [IN...]\n"
    "\n"
    "Read traces and print: traces, frames, truncated traces, the bytes their\n"
    "minimal CBF encoding takes (total, per frame, per trace) next to raw words,\n"
    "and the depth distribution (min/median/mean/max and a histogram in\n"
    "power-of-two buckets). Free records of allocation logs are counted apart.\n"
    "IN defaults to stdin; xz-compressed input is decompressed on the fly.\n"
    "The traces of several inputs are counted together; each trace log gets\n"
    "a report of its own (headed `==> NAME <==`).\n"
    "Options are those of `btpack convert`; without --from the format is read\n"
    "from each input (see `btpack convert --help`).\n"
    "\n"
    "For a trace log (--from log): records, distinct stacks, tree nodes, bytes per\n"
    "section and per trace, then a heap profile: the top allocation stacks by count\n"
    "and by bytes, with what is still live at the end, symbolized with addr2line\n"
    "where the stored maps point at readable files (the files now at those paths).\n";

/* after the log limits (cli_log_limits_help) */
static const char stats_help_more[] =
    "  -v, --progress    show progress on stderr when it is a terminal (as convert)\n"
    "  --max-warnings N  warnings of one cause shown per input (as convert)\n"
    "  --elf FILE        also symbolize addresses outside the stored maps (or all,\n"
    "                    when the log has none) in FILE (which must be readable)\n"
    "  --top N           stacks to show in each list (default 10)\n"
    "\n"
    "input formats:\n";

static const char stats_examples[] =
    "\n"
    "examples:\n"
    "  btpack stats --from trace tests/data/corpus/sqlite3_i386.trace.xz\n"
    "  btpack stats --from cbf traces.cbf\n"
    "  btpack stats traces.cbf stacks.txt   (formats detected, counted together)\n"
    "  btpack stats tests/data/log/synthetic-zlib.btlog\n";

/* How many traces had each depth: an open-addressing table keyed by
 * depth + 1 (0: empty). Distinct depths are few (k distinct depths need at
 * least k^2/2 frames), so memory does not grow with the number of traces. */
typedef struct depth_count {
    size_t key; /* depth + 1 */
    unsigned long long count;
} depth_count;

typedef struct stats {
    unsigned long long traces, frames, truncated, frees, cbf_bytes, raw_bytes;
    unsigned word_sizes; /* bit set of 16/32/64 seen */
    depth_count *depths;
    size_t n, cap;       /* distinct depths, table size (a power of two) */
} stats;

static depth_count *depth_slot(depth_count *t, size_t cap, size_t key)
{
    size_t i = (key * 0x9E3779B97F4A7C15ull) & (cap - 1);
    while (t[i].key && t[i].key != key)
        i = (i + 1) & (cap - 1);
    return &t[i];
}

static int count_depth(stats *s, size_t depth)
{
    if ((s->n + 1) * 2 > s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 256;
        depth_count *t = calloc(cap, sizeof *t);
        if (!t)
            return -1;
        for (size_t i = 0; i < s->cap; i++)
            if (s->depths[i].key)
                *depth_slot(t, cap, s->depths[i].key) = s->depths[i];
        free(s->depths);
        s->depths = t;
        s->cap = cap;
    }
    depth_count *d = depth_slot(s->depths, s->cap, depth + 1);
    if (!d->key) {
        d->key = depth + 1;
        s->n++;
    }
    d->count++;
    return 0;
}

static int stats_sink(void *ctx, trace *t)
{
    stats *s = ctx;
    if (t->event == TRACE_FREE) {
        s->frees++;
        return 0;
    }
    size_t len = 0;
    /* Size only: with no buffer the encoder counts the bytes it needs,
     * taking each run whole. */
    btp_cbf_encoder e;
    btp_status st = btp_cbf_encoder_init(&e, NULL, 0, t->word_bits, 0);
    for (size_t i = 0; st == BTP_OK && i < t->n_runs; i++)
        st = btp_cbf_encoder_add(&e, t->runs[i].frame, t->runs[i].count);
    if (st == BTP_OK)
        st = btp_cbf_encoder_finish(&e, t->truncated, &len);
    if (st != BTP_OK && st != BTP_E_BUFFER_TOO_SMALL) {
        diag(DIAG_ERROR, NULL, &t->loc, "cannot encode as CBF: %s", btp_strerror(st));
        return 1;
    }
    size_t needed = btp_cbf_encoder_needed(&e);
    if (count_depth(s, t->n) < 0) {
        diag(DIAG_ERROR, NULL, NULL, "out of memory");
        return -1;
    }
    s->traces++;
    s->frames += t->n;
    s->truncated += t->truncated != 0;
    s->cbf_bytes += needed;
    s->raw_bytes += (unsigned long long)t->n * (t->word_bits / 8);
    s->word_sizes |= t->word_bits;
    return 0;
}

static int cmp_depth(const void *a, const void *b)
{
    size_t x = ((const depth_count *)a)->key, y = ((const depth_count *)b)->key;
    return x < y ? -1 : x > y;
}

static double ratio(unsigned long long a, unsigned long long b)
{
    return b ? (double)a / (double)b : 0.0;
}

static void print_stats(stats *s)
{
    printf("traces          %llu\n", s->traces);
    printf("frames          %llu\n", s->frames);
    printf("truncated       %llu\n", s->truncated);
    if (s->frees)
        printf("free records    %llu (not traces)\n", s->frees);
    printf("word size      ");
    for (unsigned b = 16; b <= 64; b *= 2)
        if (s->word_sizes & b)
            printf(" %u", b);
    printf("%s\n", s->word_sizes ? "" : " -");
    printf("CBF bytes       %llu\n", s->cbf_bytes);
    printf("bytes/frame     %.3f  (raw words %.3f)\n", ratio(s->cbf_bytes, s->frames),
           ratio(s->raw_bytes, s->frames));
    printf("bytes/trace     %.1f  (raw words %.1f)\n", ratio(s->cbf_bytes, s->traces),
           ratio(s->raw_bytes, s->traces));
    if (!s->n)
        return;
    /* the distinct depths in order, at the front of the table */
    size_t k = 0;
    for (size_t i = 0; i < s->cap; i++)
        if (s->depths[i].key)
            s->depths[k++] = s->depths[i];
    qsort(s->depths, k, sizeof *s->depths, cmp_depth);
    /* the median: the depth of trace number traces/2 (from 0) in order */
    size_t median = 0;
    unsigned long long seen = 0;
    for (size_t i = 0; i < k; i++) {
        seen += s->depths[i].count;
        if (seen > s->traces / 2) {
            median = s->depths[i].key - 1;
            break;
        }
    }
    printf("depth           min %zu  median %zu  mean %.1f  max %zu\n", s->depths[0].key - 1,
           median, ratio(s->frames, s->traces), s->depths[k - 1].key - 1);
    /* Buckets 0, 1, 2-3, 4-7, ...: bucket b > 0 holds depths [2^(b-1), 2^b). */
    unsigned long long buckets[66] = {0}, most = 0;
    unsigned top = 0;
    for (size_t i = 0; i < k; i++) {
        unsigned b = 0;
        for (size_t d = s->depths[i].key - 1; d; d >>= 1)
            b++;
        buckets[b] += s->depths[i].count;
        top = b > top ? b : top;
    }
    for (unsigned b = 0; b <= top; b++)
        most = buckets[b] > most ? buckets[b] : most;
    printf("depth histogram\n");
    for (unsigned b = 0; b <= top; b++) {
        char range[48];
        if (b <= 1)
            snprintf(range, sizeof range, "%u", b);
        else
            snprintf(range, sizeof range, "%llu-%llu", 1ull << (b - 1), (1ull << b) - 1);
        int bar = (int)(40.0 * ratio(buckets[b], most) + 0.5);
        if (buckets[b] && bar == 0)
            bar = 1;
        printf("  %13s %10llu%s%.*s\n", range, buckets[b], bar ? "  " : "", bar,
               "########################################");
    }
}

int cmd_stats(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"from", required_argument, NULL, 'f'},
        CLI_READ_LONGOPTS,
        CLI_LOG_LIMIT_LONGOPTS,
        {"help", no_argument, NULL, 'h'},
        {"elf", required_argument, NULL, 'E'},
        {"top", required_argument, NULL, 'T'},
        {0, 0, 0, 0},
    };
    cli_options opt = {.word_bits = 64, .max_frames = CLI_DEFAULT_MAX_FRAMES};
    const format *from = NULL;
    const char *elf = NULL;
    size_t top = 10;
    int from_given = 0;
    int ch;
    opterr = 0;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "hv", longopts, NULL)) != -1) {
        switch (ch) {
        case 'f':
            if (cli_format_arg("stats", optarg, 1, 0, &from) < 0)
                return EXIT_USAGE;
            from_given = 1;
            break;
        case 'E':
            elf = optarg;
            break;
        case 'T':
            if (cli_count_arg("stats", "--top", optarg, &top) < 0)
                return EXIT_USAGE;
            break;
        case 'h':
            fputs(stats_help, stdout);
            fputs(cli_log_limits_help, stdout);
            fputs(stats_help_more, stdout);
            cli_list_formats(stdout, 1, 0);
            fputs(stats_examples, stdout);
            return EXIT_OK;
        default: {
            int rc = cli_shared_option("stats", ch, optarg, &opt, argv);
            if (rc >= 0)
                return rc;
        }
        }
    }
    if (from_given && cli_check_thread_option("stats", &opt, from))
        return EXIT_USAGE;
    if (elf && cli_check_elf(elf) < 0)
        return EXIT_BAD_INPUT;
    output out;
    output_stdio(&out);
    /* Traces of every input go into one summary; a trace log has a report
     * of its own. */
    const format *log = format_find("log");
    int n = argc - optind, rc = EXIT_OK, logs = 0, traces = 0;
    stats s = {0};
    for (int i = 0; i < (n ? n : 1); i++) {
        input in;
        int one = EXIT_BAD_INPUT;
        if (input_open(&in, n ? argv[optind + i] : NULL) == 0) {
            const format *f = from_given ? from : format_detect(&in);
            if (f == log) {
                if (n > 1)
                    printf("%s==> %s <==\n", logs++ || traces ? "\n" : "", in.name);
                one = log_stats(&in, &opt, elf, top);
            } else if (f) {
                traces = 1;
                one = read_input(f, &opt, &in, stats_sink, &s);
            }
        }
        input_close(&in);
        rc = one > rc ? one : rc;
        if (one != EXIT_OK && !opt.keep_going)
            break;
    }
    if (traces && (rc == EXIT_OK || opt.keep_going)) {
        if (logs)
            printf("\n==> the other inputs <==\n");
        print_stats(&s);
    }
    free(s.depths);
    if (output_close(&out, 1) < 0)
        rc = EXIT_BAD_INPUT;
    return rc;
}
