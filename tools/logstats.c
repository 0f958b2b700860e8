/* btpack stats on a trace log: what the log holds and what it costs
 * (records, stacks, tree nodes, bytes per section), and a heap profile
 * summary: the top allocation stacks by count and by bytes, with what is
 * still live at the end, symbolized (tools/symbolize) through the stored
 * image map or --elf. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "diag.h"
#include "imagemap_text.h"
#include "symbolize/symbolizer.h"

typedef struct site {
    uint64_t count, bytes, live_count, live_bytes;
    btp_frame *frames;
    size_t n;
    uint64_t hash;
} site;

typedef struct profile {
    site *sites;
    size_t n_sites, cap_sites;
    uint32_t *by_hash;        /* open addressing over sites: index + 1 */
    size_t hash_cap;
    uint32_t *seg_map;        /* stack id of the current segment -> site + 1 */
    size_t seg_cap;
    uint32_t segment;
} profile;

static uint64_t hash_frames(const btp_frame *f, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull ^ n;
    for (size_t i = 0; i < n; i++) {
        h ^= f[i].value + (uint64_t)f[i].kind * 0x9E3779B97F4A7C15ull;
        h *= 0x100000001b3ull;
        h ^= h >> 31;
    }
    return h;
}

static int grow(void **p, size_t *cap, size_t elem, size_t need, int zero)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap : 1024;
    while (c < need)
        c *= 2;
    unsigned char *q = realloc(*p, c * elem);
    if (!q)
        return -1;
    if (zero)
        memset(q + *cap * elem, 0, (c - *cap) * elem);
    *p = q;
    *cap = c;
    return 0;
}

/* The site of a stack, by content (a stack number is only unique within a
 * segment). Returns index + 1, or 0 when out of memory. */
static uint32_t site_of(profile *p, const btp_log_record *rec)
{
    if (rec->segment != p->segment) {
        p->segment = rec->segment;
        if (p->seg_map) /* memset(NULL, 0, 0) is undefined */
            memset(p->seg_map, 0, p->seg_cap * sizeof *p->seg_map);
    }
    if (grow((void **)&p->seg_map, &p->seg_cap, sizeof *p->seg_map, (size_t)rec->stack_id + 1,
             1) < 0)
        return 0;
    if (p->seg_map[rec->stack_id])
        return p->seg_map[rec->stack_id];
    if ((p->n_sites + 1) * 2 > p->hash_cap) {
        size_t nc = p->hash_cap ? p->hash_cap * 2 : 1024;
        uint32_t *t = calloc(nc, sizeof *t);
        if (!t)
            return 0;
        for (size_t i = 0; i < p->n_sites; i++) {
            size_t j = p->sites[i].hash & (nc - 1);
            while (t[j])
                j = (j + 1) & (nc - 1);
            t[j] = (uint32_t)i + 1;
        }
        free(p->by_hash);
        p->by_hash = t;
        p->hash_cap = nc;
    }
    uint64_t h = hash_frames(rec->frames, rec->n_frames);
    size_t j = h & (p->hash_cap - 1);
    for (; p->by_hash[j]; j = (j + 1) & (p->hash_cap - 1)) {
        site *s = &p->sites[p->by_hash[j] - 1];
        if (s->hash == h && s->n == rec->n_frames &&
            memcmp(s->frames, rec->frames, s->n * sizeof *s->frames) == 0)
            return p->seg_map[rec->stack_id] = p->by_hash[j];
    }
    if (grow((void **)&p->sites, &p->cap_sites, sizeof *p->sites, p->n_sites + 1, 0) < 0)
        return 0;
    site *s = &p->sites[p->n_sites];
    memset(s, 0, sizeof *s);
    s->hash = h;
    s->n = rec->n_frames;
    s->frames = malloc(s->n ? s->n * sizeof *s->frames : 1);
    if (!s->frames)
        return 0;
    if (s->n) /* an empty stack may come with no frame array */
        memcpy(s->frames, rec->frames, s->n * sizeof *s->frames);
    p->by_hash[j] = (uint32_t)++p->n_sites;
    return p->seg_map[rec->stack_id] = (uint32_t)p->n_sites;
}

/* A free the log matched with its allocation: that allocation is no longer
 * live. (Frees it could not match, of pointers it never saw allocated or
 * forgot past its live table cap, leave the allocation counted as live.) */
static void free_matched(profile *p, const btp_log_record *rec)
{
    if (!rec->matched || rec->segment != p->segment || rec->stack_id >= p->seg_cap ||
        !p->seg_map[rec->stack_id])
        return;
    site *s = &p->sites[p->seg_map[rec->stack_id] - 1];
    s->live_count--;
    s->live_bytes -= rec->size;
}

/* ---- symbolization: the shared symbolizer, one run per file ---------- */

/* Ask for every frame of the shown sites; handles[] follows their frames. */
static long *ask(symbolizer *sy, const site *const *shown, size_t n_shown)
{
    size_t total = 0;
    for (size_t i = 0; i < n_shown; i++)
        total += shown[i]->n;
    long *h = malloc((total + 1) * sizeof *h);
    if (!h)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n_shown; i++)
        for (size_t j = 0; j < shown[i]->n; j++, k++)
            h[k] = shown[i]->frames[j].kind == BTP_FRAME_OMIT
                       ? -1
                       : sym_add(sy, shown[i]->frames[j].value, shown[i]->frames[j].kind);
    if (sym_resolve(sy) < 0) {
        free(h);
        return NULL;
    }
    return h;
}

static void print_site(const symbolizer *sy, const long *handles, const site *s, int rank,
                       uint64_t total_count, uint64_t total_bytes)
{
    printf("  #%d  %llu allocations (%.1f%%), %llu bytes (%.1f%%), live at end %llu (%llu bytes)\n",
           rank, (unsigned long long)s->count, total_count ? 100.0 * s->count / total_count : 0.0,
           (unsigned long long)s->bytes, total_bytes ? 100.0 * s->bytes / total_bytes : 0.0,
           (unsigned long long)s->live_count, (unsigned long long)s->live_bytes);
    for (size_t j = 0; j < s->n; j++) {
        const btp_frame *f = &s->frames[j];
        if (f->kind == BTP_FRAME_OMIT) {
            printf("        (%llu frames omitted)\n", (unsigned long long)f->value);
            continue;
        }
        sym_answer a;
        sym_get(sy, handles ? handles[j] : -1, &a);
        printf("        0x%llx", (unsigned long long)f->value);
        if (a.image && a.base) { /* not for --elf, whose offsets are the addresses */
            const char *base = strrchr(a.image, '/');
            printf("  %s+0x%llx", base ? base + 1 : a.image, (unsigned long long)a.offset);
        }
        if (a.n_locs && a.locs[0].function) {
            printf("  %s", a.locs[0].function);
            if (a.locs[0].file)
                printf(" %s:%u", a.locs[0].file, a.locs[0].line);
            if (a.n_locs > 1 && a.locs[a.n_locs - 1].function)
                printf(" (inlined into %s)", a.locs[a.n_locs - 1].function);
        }
        putchar('\n');
    }
}

static int by_count(const void *a, const void *b)
{
    const site *x = *(const site *const *)a, *y = *(const site *const *)b;
    return x->count != y->count ? (x->count < y->count ? 1 : -1)
                                : (x->bytes < y->bytes) - (x->bytes > y->bytes);
}

static int by_bytes(const void *a, const void *b)
{
    const site *x = *(const site *const *)a, *y = *(const site *const *)b;
    return x->bytes != y->bytes ? (x->bytes < y->bytes ? 1 : -1)
                                : (x->count < y->count) - (x->count > y->count);
}

int log_stats(const char *path, const strbuf *data, const cli_options *opt, const char *elf,
              size_t top)
{
    const char *name = input_name(path);
    btp_log_reader *r;
    btp_status st = btp_log_reader_open(&r, data->data, data->len,
                                        opt->keep_going ? BTP_LOG_KEEP_GOING : 0);
    if (st != BTP_OK) {
        diag(DIAG_ERROR, name, NULL, "not a readable btpack log: %s", btp_strerror(st));
        return EXIT_BAD_INPUT;
    }
    profile p = {0};
    p.segment = UINT32_MAX;
    uint64_t total_count = 0, total_bytes = 0, unknown = 0;
    int rc = EXIT_OK;
    btp_log_record rec;
    for (;;) {
        st = btp_log_reader_next(r, &rec);
        if (st == BTP_END)
            break;
        if (st != BTP_OK) {
            src_loc loc = {.offset = btp_log_reader_error_offset(r), .has_offset = 1};
            int go_on = opt->keep_going && st != BTP_E_TRUNCATED_FILE;
            diag(go_on ? DIAG_WARNING : DIAG_ERROR, name, &loc, "%s%s", btp_strerror(st),
                 go_on ? "; block skipped" : "");
            rc = EXIT_BAD_INPUT;
            if (!go_on)
                break;
            continue;
        }
        if (rec.flags) {
            unknown++;
            if (rec.kind != BTP_LOG_ALLOC || (rec.flags & BTP_LOG_REC_STACK_UNKNOWN))
                continue;
        }
        if (rec.kind == BTP_LOG_FREE) {
            free_matched(&p, &rec);
            continue;
        }
        uint32_t s = site_of(&p, &rec);
        if (!s) {
            diag(DIAG_ERROR, NULL, NULL, "out of memory");
            rc = EXIT_BAD_INPUT;
            break;
        }
        if (rec.kind == BTP_LOG_ALLOC) {
            p.sites[s - 1].count++;
            p.sites[s - 1].bytes += rec.size;
            p.sites[s - 1].live_count++;
            p.sites[s - 1].live_bytes += rec.size;
            total_count++;
            total_bytes += rec.size;
        }
    }
    btp_log_stats s;
    btp_log_reader_stats(r, &s);
    uint64_t live_count = 0, live_bytes = 0;
    for (size_t i = 0; i < p.n_sites; i++) {
        live_count += p.sites[i].live_count;
        live_bytes += p.sites[i].live_bytes;
    }
    printf("log             %s\n", name);
    printf("word size       %u\n", btp_log_reader_word_bits(r));
    printf("records         %llu (%llu allocations, %llu frees, %llu backtraces)\n",
           (unsigned long long)s.records, (unsigned long long)s.allocs,
           (unsigned long long)s.frees, (unsigned long long)s.traces);
    if (btp_log_reader_lost_records(r) || unknown)
        printf("damage          %llu records lost, %llu with unknown parts\n",
               (unsigned long long)btp_log_reader_lost_records(r), (unsigned long long)unknown);
    printf("distinct stacks %llu (%zu by content)\n", (unsigned long long)s.stacks, p.n_sites);
    printf("tree nodes      %llu\n", (unsigned long long)s.nodes);
    printf("segments        %llu\n", (unsigned long long)s.segments);
    printf("blocks          %llu (%llu of records)\n", (unsigned long long)s.blocks,
           (unsigned long long)s.record_blocks);
    printf("file bytes      %llu\n", (unsigned long long)s.file_bytes);
    printf("  headers       %llu\n", (unsigned long long)s.header_bytes);
    printf("  metadata      %llu\n", (unsigned long long)s.meta_bytes);
    printf("  records       %llu\n", (unsigned long long)s.record_bytes);
    static const char *const sec[BTP_LOG_SEC_COUNT] = {"dictionary", "tags", "stack refs",
                                                        "sizes", "pointers", "frees"};
    printf("record sections before zlib:\n");
    for (int i = 0; i < BTP_LOG_SEC_COUNT; i++)
        printf("  %-13s %llu\n", sec[i], (unsigned long long)s.raw_section_bytes[i]);
    uint64_t traces = s.allocs + s.traces;
    printf("bytes/record    %.3f\n", s.records ? (double)s.file_bytes / (double)s.records : 0.0);
    printf("bytes/trace     %.3f  (file bytes per allocation or backtrace)\n",
           traces ? (double)s.file_bytes / (double)traces : 0.0);
    printf("allocated       %llu bytes in %llu allocations\n", (unsigned long long)total_bytes,
           (unsigned long long)total_count);
    printf("live at end     %llu bytes in %llu allocations (not freed in the log)\n",
           (unsigned long long)live_bytes, (unsigned long long)live_count);
    owned_map map = {0};
    size_t bad_at = 0;
    btp_status mst = owned_map_from_log(&map, r, &bad_at);
    if (mst != BTP_OK && mst != BTP_END)
        diag(DIAG_WARNING, name, NULL, "stored maps unusable (%s at byte %zu): not symbolized",
             btp_strerror(mst), bad_at);
    sym_options so = {.elf = elf};
    char why[256];
    symbolizer *sy = sym_new(&so, why, sizeof why);
    if (!sy)
        diag(DIAG_ERROR, NULL, NULL, "%s", why);
    if (sy && sym_set_map(sy, mst == BTP_OK ? &map.map : NULL) < 0) {
        sym_free(sy);
        sy = NULL;
    }
    size_t n_top = p.n_sites < top ? p.n_sites : top;
    site **order = malloc((p.n_sites + 1) * sizeof *order);
    site **shown = malloc((2 * n_top + 1) * sizeof *shown);
    if (order && shown && n_top) {
        for (size_t i = 0; i < p.n_sites; i++)
            order[i] = &p.sites[i];
        qsort(order, p.n_sites, sizeof *order, by_count);
        memcpy(shown, order, n_top * sizeof *shown);
        qsort(order, p.n_sites, sizeof *order, by_bytes);
        memcpy(shown + n_top, order, n_top * sizeof *shown);
        long *handles = sy ? ask(sy, (const site *const *)shown, 2 * n_top) : NULL;
        size_t at = 0;
        for (size_t i = 0; i < 2 * n_top; i++) {
            if (i == 0)
                printf("top %zu allocation stacks by count:\n", n_top);
            if (i == n_top)
                printf("top %zu allocation stacks by bytes:\n", n_top);
            print_site(sy, handles ? handles + at : NULL, shown[i], (int)(i % n_top) + 1,
                       total_count, total_bytes);
            at += shown[i]->n;
        }
        free(handles);
    }
    free(order);
    free(shown);
    sym_free(sy);
    owned_map_free(&map);
    for (size_t i = 0; i < p.n_sites; i++)
        free(p.sites[i].frames);
    free(p.sites);
    free(p.by_hash);
    free(p.seg_map);
    btp_log_reader_close(r);
    return rc;
}
