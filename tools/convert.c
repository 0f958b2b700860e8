/* btpack convert: any input format to any output format through the trace
 * model. */
#include "cli.h"

#include <getopt.h>
#include <string.h>

#include "diag.h"
#include "output.h"

static const char convert_help[] =
    "usage: btpack convert [--from FMT] --to FMT [options] [IN...]\n"
    "\n"
    "Convert backtraces between formats. Every input format is read into one\n"
    "trace model and every output format is written from it, so any pair works.\n"
    "Several inputs are read in order into one output, as if concatenated; IN\n"
    "defaults to stdin (`-` names it); xz-compressed input is decompressed on\n"
    "the fly. Without --keep-going the first bad input stops the conversion.\n"
    "\n"
    "options:\n"
    "  --from FMT        input format (default: read from each input, see below)\n"
    "  --to FMT          output format (required)\n"
    "  --word-bits N     16, 32 or 64: word size for formats that do not carry\n"
    "                    one (addrs, trace without header, json without\n"
    "                    word_bits); CBF takes it from its information byte.\n"
    "                    Default 64.\n"
    "  --strict          strict CBF decoding: first address absolute, no zero\n"
    "                    counts, no bytes after end/trunc on a hex/b64 line\n"
    "  --keep-going      skip bad traces with a warning; exit status 1 at the end\n"
    "  --max-warnings N  warnings of one cause shown per input (default 3; 0: all);\n"
    "                    then one line says how many more there were and where\n"
    "  -v, --progress    while reading, show on stderr (when it is a terminal)\n"
    "                    bytes and records read and per second; a last line\n"
    "                    per input with the totals\n"
    "  --max-frames N    frames per trace after expanding repeats (default 1048576);\n"
    "                    more is an error\n"
    "  --thread N|crashed|all\n"
    "                    (swift-crashlog) which threads of a crash log become\n"
    "                    traces: thread N (from 0, the log's order), the crashed\n"
    "                    one, or all (default; the crashed one first)\n";

/* after the log limits (cli_log_limits_help) */
static const char convert_help_output[] =
    "  --maps FILE       (to log) store FILE, the /proc/PID/maps of the traced\n"
    "                    process, so that addresses can be symbolized later,\n"
    "                    with the build IDs of the files it maps where this\n"
    "                    machine holds those very files (same inode);\n"
    "                    without it the image maps the input carries (Swift\n"
    "                    JSON, crash records and logs, logs) are stored\n"
    "  --compress zlib|lzma|none\n"
    "                    (to log) how blocks are compressed: zlib (default),\n"
    "                    LZMA2 (5-10 % smaller trace logs, up to 2.8x smaller\n"
    "                    heap logs, slower to read), or stored\n"
    "  --no-zlib         (to log) the same as --compress none\n"
    "  --block-size N    (to log) flush a block when its records take N bytes\n"
    "                    before compression (1..2097152; default 2097152 with\n"
    "                    no flush interval, as for a file, else 131072): larger\n"
    "                    blocks are smaller on disk, smaller ones lose less to\n"
    "                    damage\n"
    "  --flush-interval S  output held back (a log's block, buffered text) is\n"
    "                    written within S seconds (default 1 when IN is a pipe\n"
    "                    or terminal, 0 for a file; 0: only when a buffer or\n"
    "                    block is full), so that a writer killed while reading\n"
    "                    a pipe loses at most S seconds of records\n"
    "  --alloc-size N    allocation size of traces whose input has none (lws\n"
    "                    writes one per record; default 0)\n"
    "  --allow-truncated write truncated traces (CBF trunc) into lws/lws-b with a\n"
    "                    warning instead of failing (lws cannot mark truncation)\n"
    "  --lws-optimal     lws output: the smallest encoding instead of\n"
    "                    libwebsockets' own choices (libwebsockets reads both)\n"
    "  -o, --output OUT  write to OUT instead of stdout: to a temporary file beside\n"
    "                    it, renamed over OUT only when the conversion succeeded\n"
    "                    (OUT may not be the input)\n"
    "  --keep-partial    on failure keep what was written in OUT (default: remove it)\n"
    "  --force           write binary output (cbf, log) to a terminal\n"
    "  -h, --help        this help\n"
    "\n"
    "input formats:\n";

static const char convert_examples[] =
    "\n"
    "Bad input: a message `btpack: <input>:<line>: <cause>` (or `byte offset N`\n"
    "for binary input), nothing written for that trace, exit status 1.\n"
    "Blank lines are skipped. Exit status 2 for usage errors.\n"
    "\n"
    "examples:\n"
    "  echo 02191000201021ff0001 | btpack convert --from hex --to json\n"
    "  btpack convert --from trace --to cbf -o out.cbf tests/data/corpus/sqlite3_i386.trace.xz\n"
    "  btpack convert --from cbf --to addrs out.cbf\n"
    "  btpack convert --to json out.cbf tests/data/log/synthetic-zlib.btlog   (detected)\n"
    "  btpack convert --from addrs --to b64 --word-bits 32 stacks.txt\n"
    "  btpack convert --from lws --to lws-b device.log   (every ~m# record in a log)\n"
    "  btpack convert --from lws --to json --word-bits 32 esp32.log\n"
    "  btpack convert --from trace --to log --maps tests/data/corpus/sqlite3_i386.maps \\\n"
    "      -o sqlite3.btlog tests/data/corpus/sqlite3_i386.trace.xz\n"
    "  btpack convert --from log --to trace sqlite3.btlog\n"
    "  btpack convert --from swift-crashlog --to swift --thread crashed crash.log\n"
    "  btpack convert --from swift --to addrs backtraces.jsonl\n";

typedef struct convert_ctx {
    const format *to;
    writer w;
    output out;
    strbuf buf;
    uint64_t buf_since; /* clock (ms) when buf got its oldest byte */
    int failed;         /* a write to the output failed (reported) */
} convert_ctx;

/* Output collects in c->buf and goes out in chunks of about this size:
 * one fwrite per trace costs more than formatting a short one. */
#define FLUSH_AT (1u << 16)

static int flush_buf(convert_ctx *c)
{
    int rc = 0;
    if (c->buf.oom) {
        diag(DIAG_ERROR, NULL, NULL, "out of memory");
        rc = -1;
    } else if (c->buf.len && output_write(&c->out, c->buf.data, c->buf.len) < 0) {
        rc = -1;
    }
    /* emptied either way, so that a failure is reported once */
    if (rc < 0) {
        sb_free(&c->buf);
        c->failed = 1;
    } else {
        sb_clear(&c->buf);
    }
    return rc;
}

/* A writer streams a long record out (writer.spill). */
static int convert_spill(void *ctx)
{
    return flush_buf(ctx);
}

/* The input is about to read (input.h): output held back goes out when
 * the input has to wait for data, or once it is --flush-interval old; a
 * log's pending block once the library says it is due. */
static long convert_idle(void *ctx, int waiting)
{
    convert_ctx *c = ctx;
    uint32_t interval = c->w.opt->flush_interval_ms, wait = UINT32_MAX;
    if (c->failed)
        return -1;
    if (c->to->tick) {
        c->w.msg[0] = 0;
        size_t mark = c->buf.len;
        if (c->to->tick(&c->w, &c->buf, &wait) < 0) {
            diag(DIAG_ERROR, c->out.name, NULL, "%s", c->w.msg);
            c->failed = 1;
            return -1;
        }
        if (c->buf.len > mark)
            waiting = 1; /* a block: out with it */
    }
    if (c->buf.len) {
        uint64_t age = output_clock_ms() - c->buf_since;
        if (waiting || (interval && age >= interval)) {
            if (flush_buf(c) < 0)
                return -1;
        } else if (interval && interval - age < wait) {
            wait = (uint32_t)(interval - age);
        }
    }
    return wait == UINT32_MAX ? -1 : (long)wait;
}

static int convert_stack_known(void *ctx, uint64_t key)
{
    convert_ctx *c = ctx;
    return c->to->has_stack(&c->w, key);
}

static int convert_sink(void *ctx, trace *t)
{
    convert_ctx *c = ctx;
    if ((t->event == TRACE_FREE && !c->to->events) ||
        (t->event == TRACE_COMMENTS && !c->to->comments))
        return 0;
    size_t mark = c->buf.len; /* a trace that fails leaves nothing behind */
    if (c->failed)
        return -1;
    c->w.msg[0] = 0;
    c->w.committed = mark;
    int failed = c->to->write(&c->w, t, &c->buf) < 0;
    if (c->failed)
        return -1; /* the output failed while the writer streamed (reported) */
    /* a streaming writer's blocks go out at once: a crash loses no more */
    int emitted = c->w.committed > mark;
    if (failed) {
        int warn = c->w.opt->keep_going;
        if (c->w.committed > mark)
            mark = c->w.committed; /* what the writer emitted stays */
        if (!c->buf.oom && c->buf.len > mark) {
            c->buf.len = mark;
            c->buf.data[mark] = 0;
        }
        diag_bad(warn, t->input, &t->loc, "cannot write as %s: %s%s", c->to->name, c->w.msg,
                 warn ? "; trace skipped" : "");
        if (emitted && flush_buf(c) < 0)
            return -1;
        return 1;
    }
    if (mark == 0 && c->buf.len)
        c->buf_since = output_clock_ms();
    return c->buf.oom || c->buf.len >= FLUSH_AT || emitted ? flush_buf(c) : 0;
}

int cmd_convert(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"from", required_argument, NULL, 'f'},
        {"to", required_argument, NULL, 't'},
        CLI_READ_LONGOPTS,
        {"alloc-size", required_argument, NULL, 'a'},
        {"allow-truncated", no_argument, NULL, 'T'},
        {"lws-optimal", no_argument, NULL, 'O'},
        {"output", required_argument, NULL, 'o'},
        {"maps", required_argument, NULL, 'M'},
        {"no-zlib", no_argument, NULL, 'Z'},
        {"compress", required_argument, NULL, 'C'},
        {"block-size", required_argument, NULL, 'B'},
        {"force", no_argument, NULL, 'F'},
        {"keep-partial", no_argument, NULL, 'P'},
        {"flush-interval", required_argument, NULL, 'I'},
        CLI_LOG_LIMIT_LONGOPTS,
        {"help", no_argument, NULL, 'h'},
        {0, 0, 0, 0},
    };
    cli_options opt = {.word_bits = 64, .max_frames = CLI_DEFAULT_MAX_FRAMES,
                       .flush_interval_ms = 1000};
    const format *from = NULL, *to = NULL;
    const char *out_path = NULL;
    unsigned out_flags = 0;
    int ch, interval_given = 0;
    opterr = 0;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "ho:v", longopts, NULL)) != -1) {
        switch (ch) {
        case 'f':
            if (cli_format_arg("convert", optarg, 1, 0, &from) < 0)
                return EXIT_USAGE;
            break;
        case 't':
            if (cli_format_arg("convert", optarg, 0, 1, &to) < 0)
                return EXIT_USAGE;
            break;
        case 'a':
            if (parse_dec_u64(optarg, strlen(optarg), &opt.alloc_size) < 0)
                return cli_usage_error("convert", "--alloc-size: `%s` is not a decimal number "
                                       "0..2^64-1", optarg);
            opt.alloc_size_set = 1;
            break;
        case 'T':
            opt.allow_truncated = 1;
            break;
        case 'O':
            opt.lws_optimal = 1;
            break;
        case 'o':
            out_path = optarg;
            break;
        case 'M':
            opt.maps_path = optarg;
            break;
        case 'Z':
            opt.log_compress = CLI_COMPRESS_NONE;
            break;
        case 'C':
            if (strcmp(optarg, "lzma") == 0)
                opt.log_compress = CLI_COMPRESS_LZMA;
            else if (strcmp(optarg, "zlib") == 0)
                opt.log_compress = CLI_COMPRESS_ZLIB;
            else if (strcmp(optarg, "none") == 0)
                opt.log_compress = CLI_COMPRESS_NONE;
            else
                return cli_usage_error("convert", "--compress takes lzma, zlib or none, not `%s`",
                                       optarg);
            break;
        case 'B':
            if (cli_count_arg("convert", "--block-size", optarg, &opt.log_block_bytes) < 0)
                return EXIT_USAGE;
            if (opt.log_block_bytes < 1 || opt.log_block_bytes > BTP_LOG_MAX_BLOCK / 2)
                return cli_usage_error("convert", "--block-size: %zu is not 1..%u",
                                       opt.log_block_bytes, BTP_LOG_MAX_BLOCK / 2);
            break;
        case 'F':
            out_flags |= OUTPUT_FORCE;
            break;
        case 'P':
            out_flags |= OUTPUT_KEEP_PARTIAL;
            break;
        case 'I':
            if (cli_seconds_arg("convert", "--flush-interval", optarg, &opt.flush_interval_ms) < 0)
                return EXIT_USAGE;
            interval_given = 1;
            break;
        case 'h':
            fputs(convert_help, stdout);
            fputs(cli_log_limits_help, stdout);
            fputs(convert_help_output, stdout);
            cli_list_formats(stdout, 1, 0);
            fputs("\noutput formats:\n", stdout);
            cli_list_formats(stdout, 0, 1);
            fputc('\n', stdout);
            fputs(format_detect_help, stdout);
            fputs(convert_examples, stdout);
            return EXIT_OK;
        default: {
            int rc = cli_shared_option("convert", ch, optarg, &opt, argv);
            if (rc >= 0)
                return rc;
        }
        }
    }
    if (!to)
        return cli_usage_error("convert", "--to is required");
    if (from && cli_check_thread_option("convert", &opt, from))
        return EXIT_USAGE;

    char **ins = argv + optind;
    int n_ins = argc - optind;
    /* Files are all there: blocks by size only, so that the same files
     * always give the same log. Time counts for input that arrives. */
    int all_files = 1;
    for (int i = 0; i < (n_ins ? n_ins : 1); i++)
        all_files &= input_is_file(n_ins ? ins[i] : NULL);
    if (!interval_given && all_files)
        opt.flush_interval_ms = 0;
    convert_ctx c = {.to = to};
    c.w = (writer){.fmt = to, .opt = &opt, .spill = convert_spill, .spill_ctx = &c};
    strbuf comments = STRBUF_INIT;
    if (to->comments)
        opt.comments = &comments;
    int synthetic = 0; /* a log's `addresses synthetic` item, carried into a log */
    opt.synthetic = &synthetic;
    opt.idle = convert_idle;
    opt.idle_ctx = &c;
    if (to->has_stack) {
        opt.stack_known = convert_stack_known;
        opt.stack_known_ctx = &c;
    }

    int rc = output_open(&c.out, out_path, ins, n_ins,
                         out_flags | (to->binary ? OUTPUT_BINARY : 0));
    if (rc != 0)
        return rc;
    if (to->begin) {
        if (to->begin(&c.w, &c.buf) < 0) {
            diag(DIAG_ERROR, c.out.name, NULL, "%s", c.w.msg);
            rc = EXIT_BAD_INPUT;
        } else if (flush_buf(&c) < 0) {
            rc = EXIT_BAD_INPUT;
        }
    }
    if (rc == EXIT_OK)
        rc = read_traces(from, &opt, ins, n_ins, convert_sink, &c);
    /* With --keep-going the traces read are the result even when some were
     * bad; otherwise a failure makes the output incomplete. */
    int complete = rc == EXIT_OK || opt.keep_going;
    /* the traces written before a failure still go out (kept with
     * --keep-partial) */
    if (flush_buf(&c) < 0)
        rc = EXIT_BAD_INPUT;
    if (to->end) {
        if (to->end(&c.w, &c.buf) < 0) {
            diag(DIAG_ERROR, c.out.name, NULL, "%s", c.w.msg);
            rc = EXIT_BAD_INPUT;
            complete = 0;
        } else if (flush_buf(&c) < 0) {
            rc = EXIT_BAD_INPUT;
        }
    }
    if (output_close(&c.out, complete) < 0)
        rc = EXIT_BAD_INPUT;
    sb_free(&c.buf);
    sb_free(&comments);
    return rc;
}
