/* Message printing and progress (see diag.h). */
#include "diag.h"

#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

void diag(int level, const char *input, const src_loc *loc, const char *fmt, ...)
{
    va_list ap;
    fflush(stdout); /* keep messages in order with output on a terminal */
    progress_done();
    fputs("btpack: ", stderr);
    if (level == DIAG_WARNING)
        fputs("warning: ", stderr);
    if (input) {
        fputs(input, stderr);
        if (loc && loc->line)
            fprintf(stderr, ":%zu", loc->line);
        fputs(": ", stderr);
    }
    if (loc && loc->has_offset)
        fprintf(stderr, "byte offset %llu: ", (unsigned long long)loc->offset);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

static int progress_shown = -1; /* -1: not decided yet; 0: no terminal */
static int progress_dirty;

void progress_tick(unsigned long long count, const char *what)
{
    if (count % 16384 != 0)
        return;
    if (progress_shown < 0)
        progress_shown = isatty(2);
    if (!progress_shown)
        return;
    fprintf(stderr, "\rbtpack: %llu %s...", count, what);
    progress_dirty = 1;
}

void progress_done(void)
{
    if (progress_dirty) {
        fputs("\r\033[K", stderr);
        progress_dirty = 0;
    }
}
