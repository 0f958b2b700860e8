/* The read loop every subcommand uses: input, line reader or whole binary
 * input, the format's reader, error reporting and --keep-going. */
#include "cli.h"

#include <string.h>

#include "diag.h"
#include "lines.h"

const char *input_name(const char *path)
{
    return !path || strcmp(path, "-") == 0 ? "<stdin>" : path;
}

/* One non-blank text line through the format. */
static int read_one_line(reader *r, const char *line, size_t len, trace *t, strbuf *bytes)
{
    if (r->fmt->read_line)
        return r->fmt->read_line(r, line, len, t);
    sb_clear(bytes);
    if (r->fmt->line_bytes(r, line, len, bytes) < 0)
        return -1;
    size_t used;
    /* A line is one stream: --strict rejects bytes after its end. */
    if (cbf_to_trace(r, (const uint8_t *)bytes->data, bytes->len, cbf_policy(r->opt), 0, t,
                     &used) < 0)
        return -1;
    return 1;
}

/* A bad record, or damage to the input (r->not_a_record: counted apart,
 * as no one record was skipped). */
static int report_bad(reader *r, unsigned long long *bad, int *damaged)
{
    if (r->in_failed)
        return -1; /* the input reported it */
    if (r->not_a_record)
        *damaged = 1;
    else
        (*bad)++;
    if (r->opt->keep_going && !r->fatal) {
        diag_repeat(r->name, &r->err_loc, "%s%s", r->msg, r->not_a_record ? "" : "; trace skipped");
        return 0;
    }
    diag(DIAG_ERROR, r->name, &r->err_loc, "%s", r->msg);
    if (r->fatal && r->opt->keep_going)
        diag(DIAG_ERROR, r->name, NULL, "cannot read past this fault; stopping");
    return -1;
}

int read_input(const format *fmt, const cli_options *opt, input *in, trace_sink sink, void *ctx)
{
    reader r = {.name = in->name, .opt = opt, .word_bits = opt->word_bits, .in = in};
    trace t;
    strbuf bytes = STRBUF_INIT;
    line_reader lr;
    const char *line = NULL;
    size_t len = 0;
    unsigned long long bad = 0, count = 0;
    int failed = 0, damaged = 0;

    if (!fmt && !(fmt = format_detect(in)))
        return EXIT_BAD_INPUT;
    if (opt->thread_given && strcmp(fmt->name, "swift-crashlog") != 0) {
        diag(DIAG_ERROR, in->name, NULL, "--thread applies to swift-crashlog input, not %s",
             fmt->name);
        return EXIT_USAGE;
    }
    if (format_check_text(in, fmt) < 0)
        return EXIT_BAD_INPUT;
    r.fmt = fmt;
    progress_begin(in);
    trace_init(&t, opt->max_frames);
    lines_init(&lr, in);
    if (fmt->open && fmt->open(&r) < 0) {
        diag(DIAG_ERROR, r.name, NULL, "%s", r.msg);
        failed = 1;
        goto out;
    }
    for (;;) {
        int rc;
        r.msg[0] = 0;
        r.not_a_record = 0;
        if (fmt->binary) {
            r.loc = (src_loc){.offset = r.pos, .has_offset = 1};
            rc = fmt->read_next(&r, &t);
            if (rc == 0)
                break;
        } else {
            /* A format with several records on a line (lws) gets the same
             * line again while it says there are more. */
            if (!r.more) {
                int got = lines_next(&lr, &line, &len);
                if (got < 0) {
                    failed = 1;
                    break;
                }
                if (got == 0)
                    break;
                if (line_is_blank(line, len))
                    continue;
            }
            r.more = 0;
            r.loc = (src_loc){.line = lr.lineno};
            rc = read_one_line(&r, line, len, &t, &bytes);
            if (rc == 0 && opt->comments && opt->comments->len >= COMMENTS_AT_MOST) {
                trace_reset(&t, r.word_bits);
                t.event = TRACE_COMMENTS;
                t.loc = r.loc;
                rc = 1; /* to the sink: the writer takes them */
            }
            if (rc == 0)
                continue;
        }
        if (rc < 0) {
            if (report_bad(&r, &bad, &damaged) < 0) {
                failed = 1;
                break;
            }
            continue;
        }
        if (t.event == TRACE_COMMENTS) {
            t.input = r.name;
            if (sink(ctx, &t) < 0) {
                failed = 1;
                break;
            }
            continue;
        }
        if (!t.has_alloc_size && opt->alloc_size_set) {
            t.has_alloc_size = 1;
            t.alloc_size = opt->alloc_size;
        }
        progress_tick(++count);
        t.input = r.name;
        int s = sink(ctx, &t);
        if (s < 0) {
            failed = 1;
            break;
        }
        if (s > 0) {
            bad++;
            if (!opt->keep_going) {
                failed = 1;
                break;
            }
        }
    }
out:
    progress_end();
    if (fmt->close)
        fmt->close(&r);
    diag_repeat_summary();
    if (bad && opt->keep_going && !failed)
        diag(DIAG_WARNING, r.name, NULL, "%llu bad record%s skipped", bad, bad == 1 ? "" : "s");
    lines_free(&lr);
    sb_free(&bytes);
    sb_free(&r.win);
    trace_free(&t);
    return failed || bad || damaged ? EXIT_BAD_INPUT : EXIT_OK;
}

int read_traces(const format *fmt, const cli_options *opt, char *const *paths, int n,
                trace_sink sink, void *ctx)
{
    int rc = EXIT_OK;
    for (int i = 0; i < (n ? n : 1); i++) {
        input in;
        int one = EXIT_BAD_INPUT;
        if (input_open(&in, n ? paths[i] : NULL) == 0) {
            in.idle = opt->idle;
            in.idle_ctx = opt->idle_ctx;
            one = read_input(fmt, opt, &in, sink, ctx);
        }
        input_close(&in);
        rc = one > rc ? one : rc;
        /* as with a bad record: stop, unless told to go on */
        if (one != EXIT_OK && !opt->keep_going)
            break;
    }
    return rc;
}
