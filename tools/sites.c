/* Allocation sites and their symbolization (sites.h). The one place the
 * tools run addr2line for log frames: run_addr2line() is the function to
 * switch when another symbolizer takes over. */
#include "sites.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "addr2line.h"

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
uint32_t sites_of_record(sites *p, const btp_log_record *rec)
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
    uint32_t s = sites_of_frames(p, rec->frames, rec->n_frames);
    return p->seg_map[rec->stack_id] = s;
}

uint32_t sites_of_frames(sites *p, const btp_frame *frames, size_t n)
{
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
    uint64_t h = hash_frames(frames, n);
    size_t j = h & (p->hash_cap - 1);
    for (; p->by_hash[j]; j = (j + 1) & (p->hash_cap - 1)) {
        site *s = &p->sites[p->by_hash[j] - 1];
        if (s->hash == h && s->n == n &&
            (n == 0 || memcmp(s->frames, frames, n * sizeof *frames) == 0))
            return p->by_hash[j];
    }
    if (grow((void **)&p->sites, &p->cap_sites, sizeof *p->sites, p->n_sites + 1, 0) < 0)
        return 0;
    site *s = &p->sites[p->n_sites];
    memset(s, 0, sizeof *s);
    s->hash = h;
    s->n = n;
    s->frames = malloc(s->n ? s->n * sizeof *s->frames : 1);
    if (!s->frames)
        return 0;
    if (s->n) /* an empty stack may come with no frame array */
        memcpy(s->frames, frames, s->n * sizeof *s->frames);
    p->by_hash[j] = (uint32_t)++p->n_sites;
    return (uint32_t)p->n_sites;
}

uint32_t sites_of_freed(const sites *p, const btp_log_record *rec)
{
    if (!rec->matched || rec->segment != p->segment || rec->stack_id >= p->seg_cap)
        return 0;
    return p->seg_map[rec->stack_id];
}

void sites_free(sites *p)
{
    for (size_t i = 0; i < p->n_sites; i++)
        free(p->sites[i].frames);
    free(p->sites);
    free(p->by_hash);
    free(p->seg_map);
    memset(p, 0, sizeof *p);
    p->segment = UINT32_MAX;
}

/* ---- symbolization ---------------------------------------------------- */

void symbols_add_maps(symbols *sy, const char *text, size_t len)
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

const char *symbols_lookup(const symbols *sy, uint64_t a)
{
    for (size_t i = 0; i < sy->n; i++)
        if (sy->addr[i] == a)
            return sy->text[i];
    return NULL;
}

/* The one call into the symbolizer: run addr2line on `file` for lookups[0..n) (file-relative addresses) and
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

void symbols_resolve(symbols *sy, const site *const *shown, size_t n_shown)
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
                if (hit != 1 || symbols_lookup(sy, a))
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


void symbols_add_log_maps(symbols *sy, const btp_log_reader *r)
{
    size_t n = 0;
    const char *key;
    const void *data;
    size_t len;
    while (btp_log_reader_meta(r, n, &key, &data, &len, NULL) == BTP_OK)
        n++;
    for (size_t i = n; i-- > 0;)
        if (btp_log_reader_meta(r, i, &key, &data, &len, NULL) == BTP_OK &&
            strcmp(key, "maps") == 0)
            symbols_add_maps(sy, data, len);
}

const mapping *symbols_mapping(const symbols *sy, uint64_t a)
{
    for (size_t q = 0; q < sy->n_maps; q++)
        if (a >= sy->maps[q].start && a < sy->maps[q].end)
            return &sy->maps[q];
    return NULL;
}

void symbols_frame_text(const symbols *sy, const btp_frame *f, strbuf *out)
{
    if (f->kind == BTP_FRAME_OMIT) {
        sb_printf(out, "(%llu frames omitted)", (unsigned long long)f->value);
        return;
    }
    sb_hex_u64(out, f->value);
    const mapping *m = symbols_mapping(sy, f->value);
    if (m) {
        const char *base = strrchr(m->path, '/');
        sb_printf(out, "  %s+0x%llx", base ? base + 1 : m->path,
                  (unsigned long long)(f->value - m->start + m->offset));
    }
    const char *name = symbols_lookup(sy, f->value);
    if (name)
        sb_printf(out, "  %s", name);
}

void symbols_free_all(symbols *sy)
{
    for (size_t i = 0; i < sy->n_maps; i++)
        free(sy->maps[i].path);
    free(sy->maps);
    for (size_t i = 0; i < sy->n; i++)
        free(sy->text[i]);
    free(sy->text);
    free(sy->addr);
    memset(sy, 0, sizeof *sy);
}
