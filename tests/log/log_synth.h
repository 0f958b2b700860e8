/* A deterministic synthetic allocation stream for the trace log tests:
 * stacks drawn from a small tree (so they share outer frames), frees of
 * recent and old allocations, now and then a free of an unknown pointer. */
#ifndef BTPACK_TESTS_LOG_SYNTH_H
#define BTPACK_TESTS_LOG_SYNTH_H

#include <btpack/btpack.h>
#include <stdlib.h>
#include <string.h>

typedef struct synth_rec {
    btp_log_kind kind;
    uint64_t size, ptr;
    int truncated;
    size_t n;
    btp_frame frames[24];
} synth_rec;

typedef struct synth {
    uint64_t rng;
    uint64_t *live;
    size_t n_live, cap_live;
    uint64_t next_ptr;
    unsigned word_bits;
    int leak; /* never free: the live set only grows */
} synth;

static uint64_t synth_rand(synth *s)
{
    s->rng ^= s->rng << 13;
    s->rng ^= s->rng >> 7;
    s->rng ^= s->rng << 17;
    return s->rng;
}

static void synth_init(synth *s, uint64_t seed, unsigned word_bits, int leak)
{
    memset(s, 0, sizeof *s);
    s->rng = seed * 2654435761u + 1;
    s->word_bits = word_bits;
    s->next_ptr = 0x10000;
    s->leak = leak;
}

static void synth_free_all(synth *s)
{
    free(s->live);
}

/* Append r to the log. */
static btp_status synth_put(btp_log_writer *w, const synth_rec *r)
{
    switch (r->kind) {
    case BTP_LOG_ALLOC:
        return btp_log_writer_alloc(w, r->size, r->ptr, r->frames, r->n);
    case BTP_LOG_TRACE:
        return btp_log_writer_trace(w, r->frames, r->n, r->truncated);
    default:
        return btp_log_writer_free(w, r->ptr);
    }
}

/* The next record; `unique` makes most stacks new (to stress the dictionary). */
static void synth_next(synth *s, synth_rec *r, int unique)
{
    uint64_t x = synth_rand(s);
    r->truncated = 0;
    r->size = 0;
    uint64_t mask = btp_word_mask(s->word_bits);
    if (!s->leak && s->n_live > 0 && x % 5 < 2) {
        size_t i = (x >> 8) % 7 == 0 ? (size_t)((x >> 16) % s->n_live) : s->n_live - 1;
        r->kind = BTP_LOG_FREE;
        r->ptr = s->live[i];
        s->live[i] = s->live[--s->n_live];
        r->n = 0;
        return;
    }
    if (!s->leak && x % 97 == 3) { /* a free of something never allocated */
        r->kind = BTP_LOG_FREE;
        r->ptr = (x >> 20) & mask;
        r->n = 0;
        return;
    }
    r->kind = x % 53 == 5 ? BTP_LOG_TRACE : BTP_LOG_ALLOC;
    r->truncated = r->kind == BTP_LOG_TRACE && (x >> 9) % 2;
    r->size = (x >> 4) % 3 ? 16 * ((x >> 12) % 8 + 1) : (x >> 20) % 100000;
    s->next_ptr += 16 * ((x >> 40) % 64 + 1);
    r->ptr = s->next_ptr & mask;
    r->n = (size_t)((x >> 30) % 20) + 1;
    uint64_t y = synth_rand(s);
    for (size_t i = 0; i < r->n; i++) {
        /* outer frames come from few choices, inner ones from more */
        size_t depth_from_root = r->n - 1 - i;
        uint64_t choice = unique ? synth_rand(s) : (y >> (depth_from_root % 16 * 4)) % (depth_from_root < 3 ? 2 : 5);
        r->frames[i].value = (0x400000 + depth_from_root * 0x1000 + choice * 0x10) & mask;
        r->frames[i].kind = BTP_FRAME_RA;
    }
    if (r->n > 2 && (y & 0xff) == 7) { /* an omit run now and then */
        r->frames[1].kind = BTP_FRAME_OMIT;
        r->frames[1].value = 3;
    }
    if (r->kind == BTP_LOG_TRACE) {
        r->size = r->ptr = 0;
        return;
    }
    if (!s->leak) {
        if (s->n_live == s->cap_live) {
            s->cap_live = s->cap_live ? s->cap_live * 2 : 1024;
            s->live = realloc(s->live, s->cap_live * sizeof *s->live);
            if (!s->live)
                abort();
        }
        s->live[s->n_live++] = r->ptr;
    }
}

#endif
