/* Allocation sites: stacks identified by content (a log's stack numbers
 * are only unique within a segment), with per-site counters, and their
 * symbolization through a log's stored maps (or --elf). Shared by `btpack
 * stats` on a log and `btpack heap report|map`. */
#ifndef BTPACK_TOOLS_SITES_H
#define BTPACK_TOOLS_SITES_H

#include <btpack/btpack.h>
#include <stdio.h>

#include "strbuf.h"

typedef struct site {
    uint64_t count, bytes, live_count, live_bytes;
    uint64_t temp_count;             /* freed before any other allocation */
    uint64_t peak_count, peak_bytes; /* live at the heap's peak */
    btp_frame *frames;
    size_t n;
    uint64_t hash;
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

/* Symbolization: file mappings from /proc/PID/maps texts, and what
 * addr2line said about the frames asked for. */
typedef struct mapping {
    uint64_t start, end, offset;
    char *path;
} mapping;

typedef struct symbols {
    mapping *maps;
    size_t n_maps;
    const char *elf; /* --elf: addresses no mapping covers */
    uint64_t *addr;  /* address -> "function file:line" */
    char **text;
    size_t n, cap;
} symbols;

/* Add the executable file mappings of a maps text. Earlier calls win where
 * mappings overlap: add the newest maps first. */
void symbols_add_maps(symbols *sy, const char *text, size_t len);
/* Add every `maps` metadata block of a log, newest first. */
void symbols_add_log_maps(symbols *sy, const btp_log_reader *r);
/* Look up every address frame of shown[0..n) with addr2line (one run per
 * file; addresses already known are skipped). */
void symbols_resolve(symbols *sy, const site *const *shown, size_t n);
/* "function file:line" for an address looked up before, or NULL. */
const char *symbols_lookup(const symbols *sy, uint64_t addr);
/* The mapping holding addr, or NULL. */
const mapping *symbols_mapping(const symbols *sy, uint64_t addr);
/* One frame as text: "0xADDR  file+0xOFF  function file:line" (the parts
 * known), or "(N frames omitted)". */
void symbols_frame_text(const symbols *sy, const btp_frame *f, strbuf *out);
void symbols_free_all(symbols *sy);

#endif
