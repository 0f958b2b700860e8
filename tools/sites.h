/* Allocation sites: stacks identified by content (a log's stack numbers
 * are only unique within a segment), with per-site counters, and their
 * symbolization through the shared symbolizer. Shared by `btpack stats` on
 * a log and `btpack heap report|map`. */
#ifndef BTPACK_TOOLS_SITES_H
#define BTPACK_TOOLS_SITES_H

#include <btpack/btpack.h>
#include <stdio.h>

#include "imagemap_text.h"
#include "strbuf.h"
#include "symbolize/symbolizer.h"

typedef struct site {
    uint64_t count, bytes, live_count, live_bytes;
    uint64_t temp_count;             /* freed before any other allocation */
    uint64_t peak_count, peak_bytes; /* live at the heap's peak */
    uint64_t touched;                /* heap model: event of the last change + 1 (0: none) */
    btp_frame *frames;
    size_t n;
    uint64_t hash;
    long *sym; /* symbolizer handle per frame, once resolved (site_syms) */
} site;

typedef struct sites {
    site *sites;
    size_t n_sites, cap_sites;
    uint32_t *by_hash; /* open addressing over sites: index + 1 */
    size_t hash_cap;
    uint32_t *seg_map; /* stack id of the current segment -> site + 1 */
    size_t seg_cap;
    uint32_t segment;
} sites;

#define SITES_INIT {NULL, 0, 0, NULL, 0, NULL, 0, UINT32_MAX}

/* The site of frames[0..n), by content. Returns index + 1, or 0 when out
 * of memory. */
uint32_t sites_of_frames(sites *p, const btp_frame *frames, size_t n);
/* The site of a log record's stack (cached per segment stack number). */
uint32_t sites_of_record(sites *p, const btp_log_record *rec);
/* The site (index + 1) a matched free's allocation came from, or 0. */
uint32_t sites_of_freed(const sites *p, const btp_log_record *rec);
void sites_free(sites *p);

/* Symbolization of the sites shown, through the shared symbolizer
 * (tools/symbolize): a log's stored image map (log_map, taken from its
 * metadata as it streams by), and --elf for addresses it does not cover
 * (or inputs without one). */
typedef struct site_syms {
    const char *elf; /* --elf, or NULL */
    log_map map;
    symbolizer *sy;  /* made by site_syms_resolve; NULL: addresses only */
} site_syms;

/* Start with no map; elf as above; word_bits the input's. */
void site_syms_init(site_syms *ss, const char *elf, unsigned word_bits);
/* A metadata item of the log (the reader may release it afterwards). */
void site_syms_take(site_syms *ss, const char *key, const void *data, size_t len);
/* Once the log is read: a stored map that cannot be used is reported with
 * a warning naming `name`. */
void site_syms_check_map(const site_syms *ss, const char *name);
/* Symbolize every frame of shown[0..n) (one back-end run per file; sites
 * asked for before are skipped). Failures are reported once; the frames
 * then stay addresses. */
void site_syms_resolve(site_syms *ss, site *const *shown, size_t n);
/* What is known of frame j of s (nothing unless s was resolved). */
void site_syms_get(const site_syms *ss, const site *s, size_t j, sym_answer *a);
/* Frame j as one line (sym_answer_line), or "(N frames omitted)". */
void site_syms_frame_text(const site_syms *ss, const site *s, size_t j, strbuf *out);
void site_syms_free(site_syms *ss);

#endif
