/* btpack heap report: peak, leaks and top stacks of a heap's history. */
#include "cli.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "diag.h"
#include "heap_cmd.h"
#include "output.h"

static const char report_help[] =
    "usage: btpack heap report [--json] [--top N] [--elf FILE] [--from log|csv|lws] [IN]\n"
    "\n"
    "What a heap did: allocations and bytes in total, the peak (bytes live at once,\n"
    "and when), the leaks (live at the end) grouped by allocating stack, and the top\n"
    "stacks by allocations, by bytes, by temporary allocations (freed before any other\n"
    "allocation) and by bytes live at the peak. Frames are symbolized (function,\n"
    "file:line, inlined calls) through the images the log stored, with debug files\n"
    "found by path or build ID, or --elf for addresses they do not cover.\n"
    "IN (default stdin) is a trace log from `btpack heap record`, or a text log with\n"
    "CSV records (m,SIZE,PTR  c,SIZE,PTR  f,,PTR: frees get their size from the\n"
    "allocation; frees that match nothing and addresses allocated twice are counted,\n"
    "not guessed; an allocation may carry its stack as a fourth field, a CBF stream\n"
    "in hex: m,SIZE,PTR,CBF, as btp_cm_record_alloc_line writes on a Cortex-M) or\n"
    "libwebsockets ~m# records (live allocations with stacks, no addresses or frees).\n"
    "Detected input in which no line is a record is an error (--from csv: read anyway).\n"
    "\n"
    "options:\n"
    "  --json           one JSON object instead of text (for scripts)\n"
    "  --top N          stacks per list (default 10)\n"
    "  --elf FILE       the program, for inputs without maps (CSV, lws)\n"
    "  --from FMT       log, csv or lws (default: detected)\n"
    "  --word-bits N    32 for lws records of 32-bit devices (default 64)\n"
    "  --keep-going     report damaged input with warnings and go on (exit status 1)\n"
    "  --max-warnings N warnings of one cause shown (default 3; 0: all)\n"
    "  -v, --progress   while reading, show on stderr (when it is a terminal)\n"
    "                   where the input is: bytes, records and their rates\n"
    "  -h, --help       this help\n";

/* after the log limits (cli_log_limits_help) */
static const char report_examples[] =
    "\n"
    "examples:\n"
    "  btpack heap report tests/data/log/synthetic-zlib.btlog\n"
    "  btpack heap report --json tests/data/log/synthetic-zlib.btlog | python3 -m json.tool\n"
    "  btpack heap report --elf ./firmware.elf uart.log\n"
    "  printf 'm,0x64,0x20000958,011909ca2100de21012e00\\n' | btpack heap report\n";

int heap_read_option(const char *cmd, int ch, const char *arg, heap_read_opts *o)
{
    switch (ch) {
    case 'F':
        if (!strcmp(arg, "log"))
            o->from = HEAP_IN_LOG;
        else if (!strcmp(arg, "csv"))
            o->from = HEAP_IN_CSV;
        else if (!strcmp(arg, "lws"))
            o->from = HEAP_IN_LWS;
        else
            return cli_usage_error(cmd, "--from takes log, csv or lws"), -1;
        return 1;
    case 'E': o->elf = arg; return 1;
    case 'w': {
        unsigned wb;
        if (cli_word_bits_arg(cmd, arg, &wb) < 0)
            return -1;
        o->cli.word_bits = wb;
        return 1;
    }
    case 'k': o->cli.keep_going = 1; return 1;
    }
    return cli_read_option(cmd, ch, arg, &o->cli); /* the log limits */
}

static const char *const kind_names[] = {"auto", "log", "csv", "lws"};

typedef struct list {
    const char *title, *key;
    heap_order order;
    site **v;
    size_t n;
} list;

static void text_site(const heap_model *m, const site *s, size_t rank)
{
    printf("  #%zu  %llu allocations, %llu bytes; %llu temporary; live at peak %llu (%llu "
           "bytes); leaked %llu (%llu bytes)\n",
           rank, (unsigned long long)s->count, (unsigned long long)s->bytes,
           (unsigned long long)s->temp_count, (unsigned long long)s->peak_count,
           (unsigned long long)s->peak_bytes, (unsigned long long)s->live_count,
           (unsigned long long)s->live_bytes);
    strbuf line = STRBUF_INIT;
    if (s->n == 0)
        printf("        (no stack)\n");
    for (size_t j = 0; j < s->n; j++) {
        sb_clear(&line);
        site_syms_frame_text(&m->sy, s, j, &line);
        printf("        %s\n", line.data ? line.data : "");
    }
    sb_free(&line);
}

static void json_site(strbuf *o, const heap_model *m, const site *s)
{
    sb_printf(o,
              "{\"allocations\":%llu,\"bytes\":%llu,\"temporary\":%llu,\"peak_allocations\":%llu,"
              "\"peak_bytes\":%llu,\"leaked_allocations\":%llu,\"leaked_bytes\":%llu,\"frames\":[",
              (unsigned long long)s->count, (unsigned long long)s->bytes,
              (unsigned long long)s->temp_count, (unsigned long long)s->peak_count,
              (unsigned long long)s->peak_bytes, (unsigned long long)s->live_count,
              (unsigned long long)s->live_bytes);
    for (size_t j = 0; j < s->n; j++) {
        const btp_frame *f = &s->frames[j];
        if (j)
            sb_addc(o, ',');
        if (f->kind == BTP_FRAME_OMIT) {
            sb_printf(o, "{\"omit\":%llu}", (unsigned long long)f->value);
            continue;
        }
        sym_answer a;
        site_syms_get(&m->sy, s, j, &a);
        sb_adds(o, "{\"addr\":\"");
        sb_hex_u64(o, f->value);
        sb_addc(o, '"');
        sym_answer_json(o, &a);
        sb_addc(o, '}');
    }
    sb_adds(o, "]}");
}

static void print_peak_time(const heap_model *m)
{
    double s = heap_model_peak_seconds(m);
    if (s >= 0)
        printf(" (t = %.3f s)", s);
}

int heap_report(int argc, char **argv)
{
    static const struct option opts[] = {{"json", no_argument, NULL, 'j'},
                                         {"top", required_argument, NULL, 't'},
                                         HEAP_READ_LONGOPTS,
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    heap_read_opts ro = {HEAP_IN_AUTO, NULL,
                         {.word_bits = 64, .max_frames = CLI_DEFAULT_MAX_FRAMES}};
    int json = 0, ch;
    size_t top = 10;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "hv", opts, NULL)) != -1) {
        int r = heap_read_option("heap report", ch, optarg, &ro);
        if (r < 0)
            return EXIT_USAGE;
        if (r)
            continue;
        switch (ch) {
        case 'j': json = 1; break;
        case 't':
            if (cli_count_arg("heap report", "--top", optarg, &top) < 0)
                return EXIT_USAGE;
            break;
        case 'h':
            fputs(report_help, stdout);
            fputs(cli_log_limits_help, stdout);
            fputs(report_examples, stdout);
            return EXIT_OK;
        default: return cli_bad_option("heap report", argv);
        }
    }
    if (argc - optind > 1)
        return cli_usage_error("heap report", "one input at a time");
    if (ro.elf && cli_check_elf(ro.elf) < 0)
        return EXIT_BAD_INPUT;
    const char *path = optind < argc ? argv[optind] : NULL;
    heap_model m;
    int rc = heap_model_load(&m, path, ro.from, &ro.cli, ro.elf, 0);
    if (rc < 0) {
        diag(DIAG_ERROR, NULL, NULL, "out of memory");
        heap_model_free(&m);
        return EXIT_BAD_INPUT;
    }
    if (rc != EXIT_OK && !ro.cli.keep_going) {
        heap_model_free(&m);
        return rc;
    }
    heap_model_site_totals(&m);
    list lists[] = {
        {"leaks (live at the end) by stack, most bytes first", "leaks", BY_LIVE, NULL, 0},
        {"peak consumers: bytes live at the peak by stack", "peak_consumers", BY_PEAK, NULL, 0},
        {"most allocations", "by_allocations", BY_COUNT, NULL, 0},
        {"most bytes allocated", "by_bytes", BY_BYTES, NULL, 0},
        {"most temporary allocations", "by_temporary", BY_TEMP, NULL, 0},
    };
    size_t nl = sizeof lists / sizeof lists[0];
    site **shown = malloc((nl * top + 1) * sizeof *shown);
    size_t n_shown = 0;
    for (size_t i = 0; i < nl && shown; i++) {
        lists[i].v = heap_model_sorted(&m, lists[i].order);
        if (!lists[i].v)
            continue;
        while (lists[i].n < top && lists[i].n < m.st.n_sites &&
               heap_site_value(lists[i].v[lists[i].n], lists[i].order))
            lists[i].n++;
        memcpy(shown + n_shown, lists[i].v, lists[i].n * sizeof *shown);
        n_shown += lists[i].n;
    }
    if (shown)
        site_syms_resolve(&m.sy, shown, n_shown);
    uint64_t allocs = m.allocs, leaked_sites = 0;
    for (size_t i = 0; i < m.st.n_sites; i++)
        leaked_sites += m.st.sites[i].live_count != 0;
    if (json) {
        strbuf o = STRBUF_INIT;
        sb_adds(&o, "{\"input\":");
        sb_json_string(&o, m.name, strlen(m.name));
        sb_printf(&o, ",\"format\":\"%s\",\"word_bits\":%u,\"complete\":%s", kind_names[m.kind],
                  m.word_bits, m.kind != HEAP_IN_LOG || m.complete ? "true" : "false");
        sb_printf(&o, ",\"addresses\":\"%s\"",
                  m.synthetic ? "synthetic" : m.kind == HEAP_IN_LWS ? "none" : "real");
        sb_printf(&o,
                  ",\"events\":%llu,\"allocations\":%llu,\"frees\":%llu,\"bytes_allocated\":%llu,"
                  "\"temporary\":%llu,\"peak\":{\"bytes\":%llu,\"allocations\":%llu,\"event\":%llu",
                  (unsigned long long)m.events, (unsigned long long)allocs,
                  (unsigned long long)m.frees, (unsigned long long)m.total_bytes,
                  (unsigned long long)m.temporary, (unsigned long long)m.peak_bytes,
                  (unsigned long long)m.peak_count, (unsigned long long)m.peak_t);
        double secs = heap_model_peak_seconds(&m);
        if (secs >= 0)
            sb_printf(&o, ",\"seconds\":%.6f", secs);
        sb_printf(&o,
                  "},\"leaked\":{\"bytes\":%llu,\"allocations\":%llu,\"stacks\":%llu},"
                  "\"unmatched_frees\":%llu,\"frees_missing\":%llu,\"failed_allocations\":%llu,"
                  "\"damaged_records\":%llu,\"bad_lines\":%llu,\"stacks\":%zu",
                  (unsigned long long)m.live_bytes, (unsigned long long)m.live_count,
                  (unsigned long long)leaked_sites, (unsigned long long)m.unmatched_frees,
                  (unsigned long long)m.free_missing, (unsigned long long)m.failed,
                  (unsigned long long)m.damaged, (unsigned long long)m.bad_lines,
                  m.st.n_sites);
        if (m.tracer_end) {
            sb_adds(&o, ",\"tracer\":");
            sb_json_string(&o, m.tracer_end, strcspn(m.tracer_end, "\n"));
        }
        for (size_t i = 0; i < nl; i++) {
            sb_printf(&o, ",\"%s\":[", lists[i].key);
            for (size_t k = 0; k < lists[i].n; k++) {
                if (k)
                    sb_addc(&o, ',');
                json_site(&o, &m, lists[i].v[k]);
            }
            sb_addc(&o, ']');
        }
        sb_adds(&o, "}\n");
        if (o.oom) {
            diag(DIAG_ERROR, NULL, NULL, "out of memory");
            rc = EXIT_BAD_INPUT;
        } else {
            fwrite(o.data, 1, o.len, stdout);
        }
        sb_free(&o);
    } else {
        const char *kind = m.kind == HEAP_IN_LOG   ? "btpack trace log"
                           : m.kind == HEAP_IN_CSV ? "CSV heap records"
                                                   : "libwebsockets ~m# records";
        printf("heap report: %s (%s", m.name, kind);
        printf(", %u-bit)\n", m.word_bits);
        if (m.tracer)
            printf("recorded:    %.*s\n", (int)strcspn(m.tracer, "\n"), m.tracer);
        if (m.kind == HEAP_IN_LOG && !m.complete)
            printf("NOTE:        the log has no end block: the process crashed, was killed or is "
                   "still running\n");
        if (m.exec_note)
            printf("NOTE:        the process ended its recording with %.*s\n",
                   (int)strcspn(m.exec_note, "\n"), m.exec_note);
        if (m.synthetic)
            printf("NOTE:        recorded with --no-addresses: the log's heap addresses are "
                   "synthetic (allocations, frees, peak, leaks and stacks are as recorded)\n");
        if (m.kind == HEAP_IN_LWS)
            printf("NOTE:        ~m# records list live allocations (no addresses, no frees): "
                   "every record counts as live\n");
        printf("allocations: %llu (%llu bytes), frees: %llu, temporary: %llu\n",
               (unsigned long long)allocs, (unsigned long long)m.total_bytes,
               (unsigned long long)m.frees, (unsigned long long)m.temporary);
        printf("peak heap:   %llu bytes in %llu allocations at event %llu",
               (unsigned long long)m.peak_bytes, (unsigned long long)m.peak_count,
               (unsigned long long)m.peak_t);
        print_peak_time(&m);
        printf("\nleaked:      %llu bytes in %llu allocations from %llu stacks (live at the end)\n",
               (unsigned long long)m.live_bytes, (unsigned long long)m.live_count,
               (unsigned long long)leaked_sites);
        if (m.unmatched_frees)
            printf("unmatched:   %llu frees of pointers not allocated in the input (first at %s "
                   "%llu)\n",
                   (unsigned long long)m.unmatched_frees,
                   m.kind == HEAP_IN_LOG ? "record" : "line",
                   (unsigned long long)m.first_unmatched);
        if (m.free_missing)
            printf("unmatched:   %llu allocations whose address was allocated again without a "
                   "free (free missing from the input; not counted as leaks)\n",
                   (unsigned long long)m.free_missing);
        if (m.failed)
            printf("failed:      %llu allocation records of a NULL pointer\n",
                   (unsigned long long)m.failed);
        if (m.damaged || m.bad_lines)
            printf("damaged:     %llu records skipped\n",
                   (unsigned long long)(m.damaged + m.bad_lines));
        if (m.tracer_end)
            printf("tracer:      %.*s\n", (int)strcspn(m.tracer_end, "\n"), m.tracer_end);
        for (size_t i = 0; i < nl; i++) {
            if (!lists[i].n)
                continue;
            printf("\n%s:\n", lists[i].title);
            for (size_t k = 0; k < lists[i].n; k++)
                text_site(&m, lists[i].v[k], k + 1);
        }
    }
    for (size_t i = 0; i < nl; i++)
        free(lists[i].v);
    free(shown);
    heap_model_free(&m);
    output out;
    output_stdio(&out);
    if (output_close(&out, 1) < 0) /* stdout checked: a full disk is an error */
        rc = EXIT_BAD_INPUT;
    return rc;
}
