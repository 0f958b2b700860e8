/* The trace model (see trace.h). */
#include "trace.h"

#include <stdlib.h>
#include <string.h>

void trace_init(trace *t, size_t max_frames)
{
    *t = (trace){0};
    t->max_frames = max_frames;
    t->word_bits = 64;
}

/* Field by field, not by assigning a zeroed struct: that became a string
 * store (`rep stos`) whose start-up cost was 6 % of turning a log back into
 * text, where this runs once per record. Keep it in step with trace.h. */
void trace_reset(trace *t, unsigned word_bits)
{
    t->event = TRACE_PLAIN;
    t->word_bits = word_bits;
    t->truncated = 0;
    t->n_runs = 0;
    t->n = 0;
    t->has_alloc_size = 0;
    t->alloc_size = 0;
    t->has_pointer = 0;
    t->pointer = 0;
    t->loc = (src_loc){0};
    t->input = NULL;
    t->image_map = NULL;
    t->context = NULL;
    t->arch = NULL;
    t->thread_name = NULL;
    t->crashed = 0;
    t->has_stack_key = 0;
    t->stack_key = 0;
    t->frames_elided = 0;
}

/* Room for `runs` more runs. */
static btp_status reserve_runs(trace *t, size_t runs)
{
    if (t->n_runs + runs <= t->cap)
        return BTP_OK;
    size_t cap = t->cap ? t->cap : 64;
    while (cap < t->n_runs + runs) {
        if (cap > SIZE_MAX / 2 / sizeof *t->runs)
            return BTP_E_OUT_OF_MEMORY;
        cap *= 2;
    }
    trace_run *p = realloc(t->runs, cap * sizeof *p);
    if (!p)
        return BTP_E_OUT_OF_MEMORY;
    t->runs = p;
    t->cap = cap;
    return BTP_OK;
}

/* Append copies of f (checked), merging with the last run when equal. */
static void append(trace *t, btp_frame f, uint64_t copies)
{
    trace_run *last = t->n_runs ? &t->runs[t->n_runs - 1] : NULL;
    if (last && last->frame.kind == f.kind && last->frame.value == f.value)
        last->count += copies;
    else
        t->runs[t->n_runs++] = (trace_run){f, copies};
    t->n += (size_t)copies;
}

btp_status trace_add(trace *t, btp_frame f, uint64_t copies)
{
    uint64_t mask = btp_word_mask(t->word_bits);
    /* An omit of 0 frames is kept: the CBF decoder's default policy returns
     * one for an external count of 0 (spec/cbf.md D4), and --strict is what
     * refuses it. Writers that cannot express it (CBF) report it. */
    if (copies == 0)
        return BTP_E_ZERO_COUNT;
    if (f.value > mask)
        return BTP_E_VALUE_TOO_WIDE;
    if (copies > t->max_frames - t->n)
        return BTP_E_LIMIT;
    btp_status st = reserve_runs(t, 1);
    if (st != BTP_OK)
        return st;
    append(t, f, copies);
    return BTP_OK;
}

btp_status trace_add_frames(trace *t, const btp_frame *f, size_t n)
{
    uint64_t wide = 0, mask = btp_word_mask(t->word_bits);
    for (size_t i = 0; i < n; i++)
        wide |= f[i].value;
    if (wide > mask)
        return BTP_E_VALUE_TOO_WIDE;
    if (n > t->max_frames - t->n)
        return BTP_E_LIMIT;
    btp_status st = reserve_runs(t, n);
    if (st != BTP_OK || n == 0)
        return st;
    /* append() frame by frame reloads and stores the trace's counts around
     * every run it writes (they may alias the runs): a sixth of the
     * instructions of turning a log back into text went here. Locals. */
    trace_run *first = t->runs, *w = first + t->n_runs;
    size_t i = 0;
    if (w == first)
        *w++ = (trace_run){f[i++], 1};
    for (; i < n; i++) {
        if (w[-1].frame.value == f[i].value && w[-1].frame.kind == f[i].kind)
            w[-1].count++;
        else
            *w++ = (trace_run){f[i], 1};
    }
    t->n_runs = (size_t)(w - first);
    t->n += n;
    return BTP_OK;
}

const btp_frame *trace_frames(const trace *ct)
{
    trace *t = (trace *)ct; /* only the cache changes */
    if (t->n > t->flat_cap) {
        if (t->n > SIZE_MAX / sizeof *t->flat)
            return NULL;
        btp_frame *p = realloc(t->flat, t->n * sizeof *p);
        if (!p)
            return NULL;
        t->flat = p;
        t->flat_cap = t->n;
    }
    size_t k = 0;
    for (size_t i = 0; i < t->n_runs; i++)
        for (uint64_t c = 0; c < t->runs[i].count; c++)
            t->flat[k++] = t->runs[i].frame;
    /* never NULL for an empty trace: callers pass it on with a count of 0 */
    static const btp_frame none;
    return t->flat ? t->flat : &none;
}

void trace_free(trace *t)
{
    free(t->runs);
    free(t->flat);
    t->runs = NULL;
    t->flat = NULL;
    t->n = t->n_runs = t->cap = t->flat_cap = 0;
}

const char *trace_kind_name(btp_frame_kind k)
{
    switch (k) {
    case BTP_FRAME_PC:
        return "pc";
    case BTP_FRAME_RA:
        return "ra";
    case BTP_FRAME_ASYNC:
        return "async";
    case BTP_FRAME_OMIT:
        return "omit";
    }
    return "?";
}
