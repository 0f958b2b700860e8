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
        diag(DIAG_WARNING, r->name, &r->err_loc, "%s%s", r->msg,
             r->not_a_record ? "" : "; trace skipped");
        return 0;
    }
    diag(DIAG_ERROR, r->name, &r->err_loc, "%s", r->msg);
    if (r->fatal && r->opt->keep_going)
        diag(DIAG_ERROR, r->name, NULL, "cannot read past this fault; stopping");
    return -1;
}

int read_traces(const format *fmt, const cli_options *opt, const char *path, trace_sink sink,
                void *ctx)
{
    input in;
    reader r = {.fmt = fmt, .name = input_name(path), .opt = opt, .word_bits = opt->word_bits};
    trace t;
    strbuf bytes = STRBUF_INIT;
    line_reader lr;
    const char *line = NULL;
    size_t len = 0;
    unsigned long long bad = 0, count = 0;
    int failed = 0, damaged = 0;

    if (input_open(&in, path) < 0)
        return EXIT_BAD_INPUT;
    in.idle = opt->idle;
    in.idle_ctx = opt->idle_ctx;
    r.in = &in;
    trace_init(&t, opt->max_frames);
    lines_init(&lr, &in);
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
        progress_tick(++count, "records");
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
    progress_done();
    if (fmt->close)
        fmt->close(&r);
    if (bad && opt->keep_going && !failed)
        diag(DIAG_WARNING, r.name, NULL, "%llu bad record%s skipped", bad, bad == 1 ? "" : "s");
    lines_free(&lr);
    sb_free(&bytes);
    sb_free(&r.win);
    trace_free(&t);
    input_close(&in);
    return failed || bad || damaged ? EXIT_BAD_INPUT : EXIT_OK;
}
