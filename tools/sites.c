/* Allocation sites and their symbolization (sites.h). */
#include "sites.h"

#include <stdlib.h>
#include <string.h>

#include "diag.h"

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

/* The site of a stack, by content (a stack number is only unique within a
 * segment). Returns index + 1, or 0 when out of memory. */
uint32_t sites_of_record(sites *p, const btp_log_record *rec)
{
    if (rec->segment != p->segment) {
        p->segment = rec->segment;
        if (p->seg_map) /* memset(NULL, 0, 0) is undefined */
            memset(p->seg_map, 0, p->seg_cap * sizeof *p->seg_map);
    }
    size_t had = p->seg_cap;
    if (array_grow(&p->seg_map, &p->seg_cap, (size_t)rec->stack_id + 1, sizeof *p->seg_map) < 0)
        return 0;
    memset(p->seg_map + had, 0, (p->seg_cap - had) * sizeof *p->seg_map);
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
    if (array_grow(&p->sites, &p->cap_sites, p->n_sites + 1, sizeof *p->sites) < 0)
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
    for (size_t i = 0; i < p->n_sites; i++) {
        free(p->sites[i].frames);
        free(p->sites[i].sym);
    }
    free(p->sites);
    free(p->by_hash);
    free(p->seg_map);
    memset(p, 0, sizeof *p);
    p->segment = UINT32_MAX;
}

/* ---- symbolization ---------------------------------------------------- */

void site_syms_init(site_syms *ss, const char *elf, unsigned word_bits)
{
    memset(ss, 0, sizeof *ss);
    ss->elf = elf;
    log_map_init(&ss->map, word_bits);
}

void site_syms_take(site_syms *ss, const char *key, const void *data, size_t len)
{
    log_map_take(&ss->map, key, data, len); /* a bad item: reported once read */
}

void site_syms_check_map(const site_syms *ss, const char *name)
{
    btp_status st = ss->map.st;
    if (st != BTP_OK && st != BTP_END)
        diag(DIAG_WARNING, name, NULL, "stored image map unusable (%s at byte %zu of its "
             "block): not symbolized", btp_strerror(st), ss->map.err_off);
}

void site_syms_resolve(site_syms *ss, site *const *shown, size_t n)
{
    if (!ss->sy) {
        sym_options so = {.elf = ss->elf};
        char why[256];
        ss->sy = sym_new(&so, why, sizeof why);
        if (!ss->sy) {
            diag(DIAG_ERROR, NULL, NULL, "%s", why);
            return;
        }
        if (sym_set_map(ss->sy, log_map_get(&ss->map)) < 0)
            goto oom;
    }
    for (size_t i = 0; i < n; i++) {
        site *s = shown[i];
        if (s->sym || !s->n)
            continue;
        if (!(s->sym = malloc(s->n * sizeof *s->sym)))
            goto oom;
        for (size_t j = 0; j < s->n; j++)
            if ((s->sym[j] = sym_add(ss->sy, s->frames[j].value, s->frames[j].kind)) < 0 &&
                s->frames[j].kind != BTP_FRAME_OMIT)
                goto oom;
    }
    if (sym_resolve(ss->sy) == 0) {
        sym_backends_failed("symbols", ss->sy); /* said; the report goes on */
        return;
    }
oom:
    diag(DIAG_ERROR, NULL, NULL, "out of memory: frames not symbolized");
    sym_free(ss->sy);
    ss->sy = NULL;
}

void site_syms_get(const site_syms *ss, const site *s, size_t j, sym_answer *a)
{
    sym_get(ss->sy, ss->sy && s->sym ? s->sym[j] : -1, a);
}

void site_syms_frame_text(const site_syms *ss, const site *s, size_t j, strbuf *out)
{
    const btp_frame *f = &s->frames[j];
    if (f->kind == BTP_FRAME_OMIT) {
        sb_printf(out, "(%llu frames omitted)", (unsigned long long)f->value);
        return;
    }
    sym_answer a;
    site_syms_get(ss, s, j, &a);
    sym_answer_line(out, f->value, &a);
}

void site_syms_free(site_syms *ss)
{
    sym_free(ss->sy);
    log_map_free(&ss->map);
    memset(ss, 0, sizeof *ss);
}
