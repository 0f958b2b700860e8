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

typedef enum heap_input { HEAP_IN_AUTO, HEAP_IN_LOG, HEAP_IN_CSV, HEAP_IN_LWS } heap_input;

typedef struct heap_model {
    const char *name;
    heap_input kind;
    unsigned word_bits;
    sites st;
    site_syms sy;
    heap_alloc *a;
    size_t n, cap;
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
    uint64_t *clock_t, *clock_ns; /* event number -> ns since start (log `clock`) */
    size_t n_clock;
    int complete;                 /* a log's END block was read */
    char *tracer, *tracer_end, *exec_note; /* log notes, NUL-terminated */
    int has_stacks;
    /* live pointers -> allocation index + 1 (open addressing, linear probe) */
    uint64_t *h_ptr;
    uint32_t *h_idx;
    size_t h_cap, h_used;
    size_t last_alloc; /* index + 1 of the latest allocation, for temporaries */
} heap_model;

/* Read `path` into *m (format from kind, or detected: the log magic, else
 * text with `~m#` records is lws, else CSV). Bad input is reported with
 * diag(); returns EXIT_OK, EXIT_BAD_INPUT (the model holds what could be
 * read when keep_going), or -1 on out of memory. `elf` symbolizes what the
 * input's maps do not cover (CSV and lws inputs have none). */
int heap_model_load(heap_model *m, const char *path, heap_input kind, const cli_options *opt,
                    const char *elf);
void heap_model_free(heap_model *m);

/* Seconds since start at event t, from the clock marks; -1 when unknown. */
double heap_model_seconds(const heap_model *m, uint64_t t);

/* Fill the per-site counters (count, bytes, live_*, peak_*; temp_count is
 * kept while loading). */
void heap_model_site_totals(heap_model *m);

/* The sites sorted by a key, largest first; returns a malloc'd array of n
 * site pointers (NULL on out of memory). */
typedef enum { BY_COUNT, BY_BYTES, BY_LIVE, BY_PEAK, BY_TEMP } heap_order;
site **heap_model_sorted(const heap_model *m, heap_order key);
/* A site's value of a key (its count, bytes, ...). */
uint64_t heap_site_value(const site *s, heap_order key);

#endif
