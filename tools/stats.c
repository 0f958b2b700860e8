/* btpack stats: how many traces and frames, what CBF makes of them, and
 * the depth distribution. */
#include "cli.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "diag.h"
#include "output.h"

static const char stats_help[] =
    "usage: btpack stats [--from FMT] [--word-bits N] [--strict] [--keep-going]\n"
    "                    [--max-frames N] [--thread N|crashed|all] [--elf FILE]\n"
    "                    [--top N] [IN]\n"
    "\n"
    "Read traces and print: traces, frames, truncated traces, the bytes their\n"
    "minimal CBF encoding takes (total, per frame, per trace) next to raw words,\n"
    "and the depth distribution (min/median/mean/max and a histogram in\n"
    "power-of-two buckets). Free records of allocation logs are counted apart.\n"
    "IN defaults to stdin; xz-compressed input is decompressed on the fly.\n"
    "Options are those of `btpack convert`; --from defaults to hex, or to log\n"
    "when IN is a btpack trace log.\n"
    "\n"
    "For a trace log (--from log): records, distinct stacks, tree nodes, bytes per\n"
    "section and per trace, then a heap profile: the top allocation stacks by count\n"
    "and by bytes, with what is still live at the end, symbolized with addr2line\n"
    "where the stored maps point at readable files (the files now at those paths).\n"
    "  --elf FILE        also symbolize addresses outside the stored maps (or all,\n"
    "                    when the log has none) in FILE\n"
    "  --top N           stacks to show in each list (default 10)\n"
    "\n"
    "input formats:\n";

static const char stats_examples[] =
    "\n"
    "examples:\n"
    "  btpack stats --from trace tests/data/corpus/sqlite3_i386.trace.xz\n"
    "  btpack stats --from cbf traces.cbf\n"
    "  btpack stats app.btlog\n";

typedef struct stats {
    unsigned long long traces, frames, truncated, frees, cbf_bytes, raw_bytes;
    unsigned word_sizes; /* bit set of 16/32/64 seen */
    size_t *depths;
    size_t n, cap;
    int oom;
} stats;

static int stats_sink(void *ctx, trace *t)
{
    stats *s = ctx;
    if (t->event == TRACE_FREE) {
        s->frees++;
        return 0;
    }
    size_t len = 0, needed = 0;
    /* Size only: with no buffer the encoder counts the bytes it needs. */
    btp_status st = btp_cbf_encode(t->frames, t->n, t->truncated, t->word_bits, 0, NULL, 0, &len,
                                   &needed);
    if (st != BTP_OK && st != BTP_E_BUFFER_TOO_SMALL) {
        diag(DIAG_ERROR, NULL, &t->loc, "cannot encode as CBF: %s", btp_strerror(st));
        return 1;
    }
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 1024;
        size_t *d = realloc(s->depths, cap * sizeof *d);
        if (!d) {
            diag(DIAG_ERROR, NULL, NULL, "out of memory");
            return -1;
        }
        s->depths = d;
        s->cap = cap;
    }
    s->depths[s->n++] = t->n;
    s->traces++;
    s->frames += t->n;
    s->truncated += t->truncated != 0;
    s->cbf_bytes += st == BTP_OK ? len : needed;
    s->raw_bytes += (unsigned long long)t->n * (t->word_bits / 8);
    s->word_sizes |= t->word_bits;
    return 0;
}

static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
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
    qsort(s->depths, s->n, sizeof *s->depths, cmp_size);
    printf("depth           min %zu  median %zu  mean %.1f  max %zu\n", s->depths[0],
           s->depths[s->n / 2], ratio(s->frames, s->traces), s->depths[s->n - 1]);
    /* Buckets 0, 1, 2-3, 4-7, ...: bucket b > 0 holds depths [2^(b-1), 2^b). */
    unsigned long long buckets[66] = {0}, most = 0;
    unsigned top = 0;
    for (size_t i = 0; i < s->n; i++) {
        unsigned b = 0;
        for (size_t d = s->depths[i]; d; d >>= 1)
            b++;
        buckets[b]++;
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
        {"word-bits", required_argument, NULL, 'w'},
        {"strict", no_argument, NULL, 's'},
        {"keep-going", no_argument, NULL, 'k'},
        {"max-frames", required_argument, NULL, 'm'},
        {"thread", required_argument, NULL, 'R'},
        {"help", no_argument, NULL, 'h'},
        {"elf", required_argument, NULL, 'E'},
        {"top", required_argument, NULL, 'T'},
        {0, 0, 0, 0},
    };
    cli_options opt = {.word_bits = 64, .max_frames = CLI_DEFAULT_MAX_FRAMES};
    const format *from = format_find("hex");
    const char *elf = NULL;
    size_t top = 10;
    int from_given = 0;
    int ch;
    opterr = 0;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
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
            cli_list_formats(stdout, 1, 0);
            fputs(stats_examples, stdout);
            return EXIT_OK;
        default:
            switch (cli_read_option("stats", ch, optarg, &opt)) {
            case 1:
                break;
            case 0:
                return cli_bad_option("stats", argv);
            default:
                return EXIT_USAGE;
            }
        }
    }
    if (argc - optind > 1)
        return cli_usage_error("stats", "one input at most, got %d", argc - optind);
    if (cli_check_thread_option("stats", &opt, from))
        return EXIT_USAGE;
    const char *path = optind < argc ? argv[optind] : NULL;
    if (!from_given && path && strcmp(path, "-") != 0) {
        FILE *f = fopen(path, "rb");
        unsigned char head[8];
        if (f) {
            if (fread(head, 1, sizeof head, f) == sizeof head && btp_log_probe(head, sizeof head))
                from = format_find("log");
            fclose(f);
        }
    }
    output out;
    output_stdio(&out);
    int rc;
    if (from == format_find("log")) {
        input in;
        strbuf data = STRBUF_INIT;
        if (input_open(&in, path) < 0)
            return EXIT_BAD_INPUT;
        rc = input_read_all(&in, &data) < 0 ? EXIT_BAD_INPUT
                                             : log_stats(path, &data, &opt, elf, top);
        input_close(&in);
        sb_free(&data);
    } else {
        stats s = {0};
        rc = read_traces(from, &opt, path, stats_sink, &s);
        if (rc == EXIT_OK || opt.keep_going)
            print_stats(&s);
        free(s.depths);
    }
    if (output_close(&out, 1) < 0)
        rc = EXIT_BAD_INPUT;
    return rc;
}
