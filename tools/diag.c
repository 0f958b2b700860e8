/* Message printing and progress (see diag.h). */
#include "diag.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "input.h"

void diag(int level, const char *name, const src_loc *loc, const char *fmt, ...)
{
    va_list ap;
    fflush(stdout); /* keep messages in order with output on a terminal */
    progress_done();
    fputs("btpack: ", stderr);
    if (level == DIAG_WARNING)
        fputs("warning: ", stderr);
    if (name) {
        fputs(name, stderr);
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

typedef struct repeat {
    char key[128];      /* the cause: the message, numbers replaced by '#' */
    const char *input;
    unsigned long long shown, hidden;
    char first[400];    /* the first hidden message */
    src_loc from, to;   /* the first and last hidden place */
} repeat;

static repeat repeats[DIAG_REPEAT_CAUSES + 1]; /* the last: every other cause */
static size_t n_repeats;
static unsigned long long repeat_shown = DIAG_REPEAT_SHOWN; /* 0: no limit */

void diag_repeat_limit(unsigned long long n)
{
    repeat_shown = n;
}

/* msg with every run of digits (and a 0x before hex digits) as one '#'. */
static void cause_key(const char *msg, char *key, size_t cap)
{
    size_t k = 0;
    for (const char *p = msg; *p && k + 1 < cap; p++) {
        if (*p >= '0' && *p <= '9') {
            if (p[0] == '0' && p[1] == 'x')
                p++;
            while ((p[1] >= '0' && p[1] <= '9') || (p[1] >= 'a' && p[1] <= 'f'))
                p++;
            key[k++] = '#';
        } else {
            key[k++] = *p;
        }
    }
    key[k] = 0;
}

static int same_input(const char *a, const char *b)
{
    return a == b || (a && b && strcmp(a, b) == 0);
}

void diag_repeat(const char *name, const src_loc *loc, const char *fmt, ...)
{
    char msg[400], key[sizeof repeats[0].key];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    cause_key(msg, key, sizeof key);
    repeat *r = NULL;
    for (size_t i = 0; i < n_repeats && !r; i++)
        if (same_input(repeats[i].input, name) && strcmp(repeats[i].key, key) == 0)
            r = &repeats[i];
    if (!r) {
        r = &repeats[n_repeats < DIAG_REPEAT_CAUSES ? n_repeats++ : DIAG_REPEAT_CAUSES];
        if (r == &repeats[DIAG_REPEAT_CAUSES] && r->shown + r->hidden == 0)
            snprintf(r->key, sizeof r->key, "(other causes)");
        else if (r != &repeats[DIAG_REPEAT_CAUSES])
            snprintf(r->key, sizeof r->key, "%s", key);
        r->input = name;
    }
    if (!repeat_shown || r->shown < repeat_shown) {
        r->shown++;
        diag(DIAG_WARNING, name, loc, "%s", msg);
        return;
    }
    src_loc none = {0};
    if (!r->hidden++) {
        snprintf(r->first, sizeof r->first, "%s", msg);
        r->from = loc ? *loc : none;
    }
    r->to = loc ? *loc : none;
}

void diag_bad(int keep_going, const char *name, const src_loc *loc, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (keep_going)
        diag_repeat(name, loc, "%s", msg);
    else
        diag(DIAG_ERROR, name, loc, "%s", msg);
}

void diag_repeat_summary(void)
{
    for (size_t i = 0; i <= DIAG_REPEAT_CAUSES; i++) {
        repeat *r = &repeats[i];
        if (r->hidden) {
            char where[96] = "";
            if (r->from.line && r->from.line == r->to.line)
                snprintf(where, sizeof where, " (line %zu)", r->from.line);
            else if (r->from.line)
                snprintf(where, sizeof where, " (lines %zu to %zu)", r->from.line, r->to.line);
            else if (r->from.has_offset && r->from.offset == r->to.offset)
                snprintf(where, sizeof where, " (byte offset %llu)",
                         (unsigned long long)r->from.offset);
            else if (r->from.has_offset)
                snprintf(where, sizeof where, " (byte offsets %llu to %llu)",
                         (unsigned long long)r->from.offset, (unsigned long long)r->to.offset);
            diag(DIAG_WARNING, r->input, NULL, "%llu more warning%s like \"%s\"%s not shown",
                 r->hidden, r->hidden == 1 ? "" : "s", r->first, where);
        }
        memset(r, 0, sizeof *r);
    }
    n_repeats = 0;
}

/* Progress of the input being read (progress_begin() .. progress_end()). */
static struct {
    int on;                   /* -v/--progress, and stderr is a terminal */
    const struct input *in;
    uint64_t t0, last;        /* ms: the input's start, the last line shown */
    unsigned long long records;
    int dirty;                /* a line is on the terminal, without newline */
} prog;

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void progress_enable(int on)
{
    prog.on = on && isatty(2);
}

void progress_begin(const struct input *in)
{
    prog.in = in;
    prog.t0 = prog.last = now_ms();
    prog.records = 0;
}

/* "1.5 MiB" and the like. */
static void human(char *buf, size_t cap, double bytes)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    size_t u = 0;
    while (bytes >= 1024 && u + 1 < sizeof units / sizeof units[0]) {
        bytes /= 1024;
        u++;
    }
    snprintf(buf, cap, u ? "%.1f %s" : "%.0f %s", bytes, units[u]);
}

/* The line: where the input is, its bytes and records, and their rates. */
static void progress_line(uint64_t now, int final)
{
    double secs = (double)(now - prog.t0 ? now - prog.t0 : 1) / 1000.0;
    uint64_t bytes = prog.in->bytes_in;
    char done[32], rate[32], pct[16] = "";
    human(done, sizeof done, (double)bytes);
    human(rate, sizeof rate, (double)bytes / secs);
    if (prog.in->size && !final)
        snprintf(pct, sizeof pct, "%3.0f%%  ", 100.0 * (double)bytes / (double)prog.in->size);
    fprintf(stderr, "\rbtpack: %s: %s%s, %llu records%s%.1f s, %s/s, %.0f records/s\033[K%s",
            prog.in->name, pct, done, prog.records, final ? " in " : ", ", secs, rate,
            (double)prog.records / secs, final ? "\n" : "");
    prog.dirty = !final;
}

void progress_tick(unsigned long long records)
{
    prog.records = records;
    if (!prog.on || !prog.in || (records & 63) != 0)
        return;
    uint64_t now = now_ms();
    if (now - prog.last < 500) /* a few updates a second at most */
        return;
    prog.last = now;
    progress_line(now, 0);
}

void progress_end(void)
{
    if (prog.on && prog.in)
        progress_line(now_ms(), 1);
    prog.in = NULL;
}

void progress_done(void)
{
    if (prog.dirty) {
        fputs("\r\033[K", stderr);
        prog.dirty = 0;
    }
}
