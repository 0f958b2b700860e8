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

void trace_reset(trace *t, unsigned word_bits)
{
    btp_frame *frames = t->frames;
    size_t cap = t->cap, max = t->max_frames;
    *t = (trace){0};
    t->frames = frames;
    t->cap = cap;
    t->max_frames = max;
    t->word_bits = word_bits;
}

/* Room for `copies` more frames (checked against max_frames first). */
static btp_status reserve(trace *t, uint64_t copies)
{
    if (copies > t->max_frames - t->n)
        return BTP_E_LIMIT;
    size_t need = t->n + (size_t)copies;
    if (need > t->cap) {
        size_t cap = t->cap ? t->cap : 64;
        while (cap < need)
            cap = cap > SIZE_MAX / 2 ? need : cap * 2;
        if (cap > t->max_frames)
            cap = t->max_frames;
        if (cap > SIZE_MAX / sizeof *t->frames)
            return BTP_E_OUT_OF_MEMORY;
        btp_frame *p = realloc(t->frames, cap * sizeof *p);
        if (!p)
            return BTP_E_OUT_OF_MEMORY;
        t->frames = p;
        t->cap = cap;
    }
    return BTP_OK;
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
    btp_status st = reserve(t, copies);
    if (st != BTP_OK)
        return st;
    for (uint64_t i = 0; i < copies; i++)
        t->frames[t->n++] = f;
    return BTP_OK;
}

btp_status trace_add_frames(trace *t, const btp_frame *f, size_t n)
{
    uint64_t wide = 0, mask = btp_word_mask(t->word_bits);
    for (size_t i = 0; i < n; i++)
        wide |= f[i].value;
    if (wide > mask)
        return BTP_E_VALUE_TOO_WIDE;
    btp_status st = reserve(t, n);
    if (st != BTP_OK)
        return st;
    if (n)
        memcpy(t->frames + t->n, f, n * sizeof *f);
    t->n += n;
    return BTP_OK;
}

void trace_free(trace *t)
{
    free(t->frames);
    t->frames = NULL;
    t->n = t->cap = 0;
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
