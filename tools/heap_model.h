/* `btpack heap report|map`: one model of a heap's history, read from a
 * trace log (`heap record`), seed-style CSV records (`m,SIZE,PTR`,
 * `c,SIZE,PTR`, `f,,PTR` among other log text) or libwebsockets `~m#`
 * dumps. Every allocation with its lifetime in events, its site (stack),
 * and what could not be matched (never guessed; see spec/heap.md). */
#ifndef BTPACK_TOOLS_HEAP_MODEL_H
#define BTPACK_TOOLS_HEAP_MODEL_H

#include <stdint.h>

#include "format.h"
#include "sites.h"
#include "strbuf.h"

#define HEAP_LIVE UINT64_MAX /* t1 of an allocation never freed */

enum {
    HA_FREE_MISSING = 1u << 0, /* its address was allocated again before a free */
    HA_NO_ADDRESS = 1u << 1    /* the input has no addresses (lws): ptr is synthetic */
};

typedef struct heap_alloc {
    uint64_t ptr, size;
    uint64_t t0, t1; /* event numbers: allocated, freed (HEAP_LIVE: never) */
    uint32_t site;   /* index into sites */
    uint32_t flags;  /* HA_* */
} heap_alloc;

/* A live allocation, by pointer. */
typedef struct heap_live {
    uint64_t ptr;   /* never 0 for a live allocation: 0 marks an empty slot */
    uint64_t size;
    uint64_t seq;   /* its number among the allocations (1, 2, ...) */
    uint32_t ai;    /* with every allocation kept: index + 1 into a[] */
    uint32_t site;
} heap_live;        /* 32 bytes: two to a cache line */

/* A clock sample of a log: `rec` records were written before it, `ns`
 * nanoseconds after the start. */
typedef struct heap_clock {
    uint64_t rec, ns;
    int have;
} heap_clock;

typedef enum heap_input { HEAP_IN_AUTO, HEAP_IN_LOG, HEAP_IN_CSV, HEAP_IN_LWS } heap_input;

/*
 * The model is built as the input streams by. Its memory is the sites (one
 * per distinct stack), the live allocations, and, only when every
 * allocation is kept (heap map, which draws each one), a[]: never the
 * input itself, its metadata or its clock samples.
 */
typedef struct heap_model {
    const char *name;
    heap_input kind;
    unsigned word_bits;
    int keep_allocs;          /* a[]: every allocation with its lifetime */
    sites st;                 /* counters kept as allocations come and go */
    site_syms sy;
    heap_alloc *a;
    size_t n, cap;
    uint64_t allocs;          /* allocations read */
    uint64_t events;          /* allocations + frees, in order */
    uint64_t frees;           /* matched frees */
    uint64_t unmatched_frees; /* of pointers not live in the input */
    uint64_t first_unmatched; /* line (text) or record (log) of the first one */
    uint64_t free_missing;    /* allocations whose address came back before a free */
    uint64_t failed;          /* allocation records of a NULL pointer */
    uint64_t damaged;         /* log records with unknown parts, skipped */
    uint64_t bad_lines;       /* text lines that look like records but are not */
    uint64_t temporary;
    uint64_t total_bytes, live_bytes, live_count;
    uint64_t peak_bytes, peak_count, peak_t;
    uint64_t peak_where;      /* record (log) or line (text) of the peak's allocation */
    heap_clock clock_last;    /* the latest clock sample (log `clock` notes) */
    heap_clock clock_lo, clock_hi; /* the samples around the peak */
    int complete;             /* a log's END block was read */
    char *tracer, *tracer_end, *exec_note; /* log notes, NUL-terminated */
    int synthetic;            /* the log's `addresses` note says `synthetic`
                                 (heap record --no-addresses) */
    int has_stacks;
    heap_live *live;          /* open addressing by pointer, linear probing */
    size_t live_cap, live_used;
} heap_model;

/* Read `path` into *m (format from kind, or detected: the log magic, else
 * text with `~m#` records in its first MiB is lws, else CSV), streaming.
 * keep_allocs: keep every allocation in m->a (heap map). Bad input is
 * reported with diag(); returns EXIT_OK, EXIT_BAD_INPUT (the model holds
 * what could be read when keep_going), or -1 on out of memory. `elf`
 * symbolizes what the input's maps do not cover (CSV and lws inputs have
 * none). */
int heap_model_load(heap_model *m, const char *path, heap_input kind, const cli_options *opt,
                    const char *elf, int keep_allocs);
void heap_model_free(heap_model *m);

/* Seconds since the start at the peak, from the log's clock samples; -1
 * when unknown. */
double heap_model_peak_seconds(const heap_model *m);

/* Complete the per-site counters (count, bytes, live_*, peak_*;
 * temp_count is kept while loading): from a[] when every allocation was
 * kept (after a regrouping of the sites too), else from what was counted
 * while loading. */
void heap_model_site_totals(heap_model *m);

/* The sites sorted by a key, largest first; returns a malloc'd array of n
 * site pointers (NULL on out of memory). */
typedef enum { BY_COUNT, BY_BYTES, BY_LIVE, BY_PEAK, BY_TEMP } heap_order;
site **heap_model_sorted(const heap_model *m, heap_order key);
/* A site's value of a key (its count, bytes, ...). */
uint64_t heap_site_value(const site *s, heap_order key);

#endif
