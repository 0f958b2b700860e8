/* btpack stats on a trace log: what the log holds and what it costs
 * (records, stacks, tree nodes, bytes per section), and a heap profile
 * summary: the top allocation stacks by count and by bytes, with what is
 * still live at the end, symbolized with addr2line when --elf or the
 * stored maps point at readable files. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "addr2line.h"
#include "diag.h"

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

/* ---- symbolization ---------------------------------------------------- */

typedef struct mapping {
    uint64_t start, end, offset;
    char *path;
} mapping;

typedef struct symbols {
    mapping *maps;
    size_t n_maps;
    const char *elf;
    /* address -> "function file:line" for the frames shown */
    uint64_t *addr;
    char **text;
    size_t n, cap;
} symbols;

static void parse_maps(symbols *sy, const char *text, size_t len)
{
    const char *p = text, *end = text + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        char line[1024];
        size_t n = (size_t)(le - p) < sizeof line - 1 ? (size_t)(le - p) : sizeof line - 1;
        memcpy(line, p, n);
        line[n] = 0;
        unsigned long long s, e, off;
        char perms[8];
        int path_at = 0;
        if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %n", &s, &e, perms, &off, &path_at) >= 4 &&
            path_at > 0 && line[path_at] == '/' && perms[2] == 'x') {
            mapping *m = realloc(sy->maps, (sy->n_maps + 1) * sizeof *m);
            if (m) {
                sy->maps = m;
                m[sy->n_maps++] = (mapping){s, e, off, strdup(line + path_at)};
            }
        }
        p = le + 1;
    }
}

static const char *sym_lookup(const symbols *sy, uint64_t a)
{
    for (size_t i = 0; i < sy->n; i++)
        if (sy->addr[i] == a)
            return sy->text[i];
    return NULL;
}

/* Run addr2line on `file` for lookups[0..n) (file-relative addresses) and
 * store what it knows under the original addresses. */
static void run_addr2line(symbols *sy, const char *file, const uint64_t *orig,
                          const uint64_t *lookup, size_t n)
{
    if (!n || access(file, R_OK) != 0)
        return;
    symbol *syms = calloc(n, sizeof *syms);
    if (!syms || addr2line_run("addr2line", file, lookup, n, syms) < 0) {
        free(syms);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        if (!syms[i].function || strcmp(syms[i].function, "??") == 0)
            continue;
        if (grow((void **)&sy->addr, &sy->cap, sizeof *sy->addr, sy->n + 1, 0) < 0)
            break;
        char **t = realloc(sy->text, sy->cap * sizeof *t);
        if (!t)
            break;
        sy->text = t;
        const char *loc = syms[i].location && strncmp(syms[i].location, "??", 2) != 0
                              ? syms[i].location : "";
        size_t len = strlen(syms[i].function) + strlen(loc) + 2;
        char *s = malloc(len);
        if (!s)
            break;
        snprintf(s, len, "%s%s%s", syms[i].function, *loc ? " " : "", loc);
        sy->addr[sy->n] = orig[i];
        sy->text[sy->n++] = s;
    }
    symbols_free(syms, n);
    free(syms);
}

static void symbolize(symbols *sy, const site *const *shown, size_t n_shown)
{
    /* one addr2line run per file */
    size_t total = 0;
    for (size_t i = 0; i < n_shown; i++)
        total += shown[i]->n;
    uint64_t *orig = malloc((total + 1) * sizeof *orig), *look = malloc((total + 1) * sizeof *look);
    if (!orig || !look)
        goto out;
    for (size_t m = 0; m <= sy->n_maps; m++) {
        const char *file = m < sy->n_maps ? sy->maps[m].path : sy->elf;
        if (!file || (m < sy->n_maps && m > 0 && strcmp(file, sy->maps[m - 1].path) == 0))
            continue; /* consecutive mappings of one file are handled together */
        size_t k = 0;
        for (size_t i = 0; i < n_shown; i++)
            for (size_t j = 0; j < shown[i]->n; j++) {
                const btp_frame *f = &shown[i]->frames[j];
                if (f->kind == BTP_FRAME_OMIT)
                    continue;
                uint64_t a = f->value, where = 0;
                int hit = 0;
                for (size_t q = 0; q < sy->n_maps; q++)
                    if (a >= sy->maps[q].start && a < sy->maps[q].end) {
                        hit = m < sy->n_maps && strcmp(sy->maps[q].path, file) == 0;
                        where = a - sy->maps[q].start + sy->maps[q].offset;
                        if (m == sy->n_maps)
                            hit = -1; /* covered by the maps: not for --elf */
                        break;
                    }
                if (m == sy->n_maps && hit == 0) /* --elf: addresses the maps do not cover */
                    hit = 1, where = a;
                if (hit != 1 || sym_lookup(sy, a))
                    continue;
                /* a return address points after the call: look up the call */
                orig[k] = a;
                look[k++] = where - (f->kind == BTP_FRAME_RA && where > 0);
            }
        run_addr2line(sy, file, orig, look, k);
    }
out:
    free(orig);
    free(look);
}

static void print_site(const symbols *sy, const site *s, int rank, uint64_t total_count,
                       uint64_t total_bytes)
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
        const char *where = "";
        uint64_t off = 0;
        for (size_t q = 0; q < sy->n_maps; q++)
            if (f->value >= sy->maps[q].start && f->value < sy->maps[q].end) {
                where = sy->maps[q].path;
                off = f->value - sy->maps[q].start + sy->maps[q].offset;
                break;
            }
        const char *name = sym_lookup(sy, f->value);
        const char *base = strrchr(where, '/');
        printf("        0x%llx", (unsigned long long)f->value);
        if (*where)
            printf("  %s+0x%llx", base ? base + 1 : where, (unsigned long long)off);
        if (name)
            printf("  %s", name);
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

/* Keep the first "maps" metadata (for symbolizing) and let the reader
 * forget the rest as it comes, so that memory does not grow with the log. */
static void take_meta(btp_log_reader *r, size_t *next, strbuf *maps, int *have_maps)
{
    const char *key;
    const void *data;
    size_t len;
    while (btp_log_reader_meta(r, *next, &key, &data, &len, NULL) == BTP_OK) {
        if (!*have_maps && strcmp(key, "maps") == 0) {
            sb_add(maps, data, len);
            *have_maps = 1;
        }
        ++*next;
    }
    btp_log_reader_meta_release(r, *next);
}

int log_stats(input *in, const cli_options *opt, const char *elf, size_t top)
{
    const char *name = in->name;
    reader rd = {.name = name, .opt = opt, .in = in};
    btp_log_reader *r;
    if (log_open_reader(&rd, &r) != BTP_OK) {
        if (!rd.in_failed)
            diag(DIAG_ERROR, name, &rd.err_loc, "%s", rd.msg);
        return EXIT_BAD_INPUT;
    }
    profile p = {0};
    p.segment = UINT32_MAX;
    uint64_t total_count = 0, total_bytes = 0, unknown = 0;
    int rc = EXIT_OK, have_maps = 0;
    strbuf maps = STRBUF_INIT;
    size_t next_meta = 0;
    btp_status st;
    btp_log_record rec;
    for (;;) {
        st = btp_log_reader_next(r, &rec);
        take_meta(r, &next_meta, &maps, &have_maps);
        if (st == BTP_END)
            break;
        if (st != BTP_OK) {
            rd.fatal = 0;
            log_status(&rd, r, st);
            rc = EXIT_BAD_INPUT;
            if (rd.in_failed)
                break;
            diag(rd.fatal ? DIAG_ERROR : DIAG_WARNING, name, &rd.err_loc, "%s", rd.msg);
            if (rd.fatal)
                break;
            continue;
        }
        if (rec.kind == BTP_LOG_META) /* taken by take_meta() */
            continue;
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
    symbols sy = {0};
    sy.elf = elf;
    if (have_maps)
        parse_maps(&sy, maps.data ? maps.data : "", maps.len);
    sb_free(&maps);
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
        symbolize(&sy, (const site *const *)shown, 2 * n_top);
        printf("top %zu allocation stacks by count:\n", n_top);
        for (size_t i = 0; i < n_top; i++)
            print_site(&sy, shown[i], (int)i + 1, total_count, total_bytes);
        printf("top %zu allocation stacks by bytes:\n", n_top);
        for (size_t i = 0; i < n_top; i++)
            print_site(&sy, shown[n_top + i], (int)i + 1, total_count, total_bytes);
    }
    free(order);
    free(shown);
    for (size_t i = 0; i < sy.n_maps; i++)
        free(sy.maps[i].path);
    free(sy.maps);
    for (size_t i = 0; i < sy.n; i++)
        free(sy.text[i]);
    free(sy.text);
    free(sy.addr);
    for (size_t i = 0; i < p.n_sites; i++)
        free(p.sites[i].frames);
    free(p.sites);
    free(p.by_hash);
    free(p.seg_map);
    btp_log_reader_close(r);
    return rc;
}
