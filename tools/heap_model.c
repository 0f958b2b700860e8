/* Reading a heap's history into the model (heap_model.h). */
#include "heap_model.h"

#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "diag.h"
#include "input.h"

/* ---- live pointer table ------------------------------------------------- */

static size_t h_slot(uint64_t p, size_t cap)
{
    p ^= p >> 33;
    p *= 0xff51afd7ed558ccdull;
    p ^= p >> 33;
    return (size_t)p & (cap - 1);
}

static int h_grow(heap_model *m)
{
    size_t nc = m->h_cap ? m->h_cap * 2 : 4096;
    uint64_t *np = malloc(nc * sizeof *np);
    uint32_t *ni = calloc(nc, sizeof *ni);
    if (!np || !ni) {
        free(np);
        free(ni);
        return -1;
    }
    for (size_t i = 0; i < m->h_cap; i++)
        if (m->h_idx[i]) {
            size_t j = h_slot(m->h_ptr[i], nc);
            while (ni[j])
                j = (j + 1) & (nc - 1);
            np[j] = m->h_ptr[i];
            ni[j] = m->h_idx[i];
        }
    free(m->h_ptr);
    free(m->h_idx);
    m->h_ptr = np;
    m->h_idx = ni;
    m->h_cap = nc;
    return 0;
}

/* Slot of p, or of the empty slot where it would go. */
static size_t h_find(const heap_model *m, uint64_t p)
{
    size_t j = h_slot(p, m->h_cap);
    while (m->h_idx[j] && m->h_ptr[j] != p)
        j = (j + 1) & (m->h_cap - 1);
    return j;
}

/* Remove slot j, shifting later entries of its cluster back (no tombstones). */
static void h_remove(heap_model *m, size_t j)
{
    size_t cap = m->h_cap;
    m->h_idx[j] = 0;
    m->h_used--;
    for (size_t k = (j + 1) & (cap - 1); m->h_idx[k]; k = (k + 1) & (cap - 1)) {
        size_t home = h_slot(m->h_ptr[k], cap);
        /* move k to j when its home is not in (j, k] cyclically */
        if ((j < k) ? (home <= j || home > k) : (home <= j && home > k)) {
            m->h_ptr[j] = m->h_ptr[k];
            m->h_idx[j] = m->h_idx[k];
            m->h_idx[k] = 0;
            j = k;
        }
    }
}

/* ---- events --------------------------------------------------------------- */

static int on_alloc(heap_model *m, uint64_t ptr, uint64_t size, uint32_t site_ix, uint32_t flags)
{
    if ((m->h_used + 1) * 2 > m->h_cap && h_grow(m) < 0)
        return -1;
    if (m->n == m->cap) {
        size_t nc = m->cap ? m->cap * 2 : 4096;
        heap_alloc *na = realloc(m->a, nc * sizeof *na);
        if (!na)
            return -1;
        m->a = na;
        m->cap = nc;
    }
    if (!(flags & HA_NO_ADDRESS)) {
        size_t j = h_find(m, ptr);
        if (m->h_idx[j]) {
            /* The address came back without a free: the input lost it. The
             * old allocation ends here, flagged, and is not a leak. */
            heap_alloc *old = &m->a[m->h_idx[j] - 1];
            old->t1 = m->events;
            old->flags |= HA_FREE_MISSING;
            m->free_missing++;
            m->live_bytes -= old->size;
            m->live_count--;
            h_remove(m, j);
            j = h_find(m, ptr);
        }
        m->h_ptr[j] = ptr;
        m->h_idx[j] = (uint32_t)m->n + 1;
        m->h_used++;
    }
    m->a[m->n] = (heap_alloc){ptr, size, m->events, HEAP_LIVE, site_ix, flags};
    m->n++;
    m->last_alloc = m->n;
    m->events++;
    m->total_bytes += size;
    m->live_bytes += size;
    m->live_count++;
    if (m->live_bytes > m->peak_bytes) {
        m->peak_bytes = m->live_bytes;
        m->peak_count = m->live_count;
        m->peak_t = m->events - 1;
    }
    return 0;
}

/* where: the line or record number, for the first unmatched free. */
static void on_free(heap_model *m, uint64_t ptr, uint64_t where)
{
    if (ptr == 0)
        return; /* free(NULL) */
    size_t j = m->h_cap ? h_find(m, ptr) : 0;
    if (!m->h_cap || !m->h_idx[j]) {
        if (!m->unmatched_frees++)
            m->first_unmatched = where;
        m->events++;
        return;
    }
    size_t i = m->h_idx[j] - 1;
    heap_alloc *a = &m->a[i];
    a->t1 = m->events++;
    m->frees++;
    m->live_bytes -= a->size;
    m->live_count--;
    /* Temporary: freed before any other allocation was made (heaptrack's
     * definition), so the memory was never needed alongside another. */
    if (m->last_alloc == i + 1) {
        m->temporary++;
        m->st.sites[a->site].temp_count++;
    }
    h_remove(m, j);
}

/* ---- trace logs ------------------------------------------------------------ */

static char *meta_text(const btp_log_reader *r, const char *key)
{
    const void *d;
    size_t len;
    if (btp_log_reader_meta_find(r, key, &d, &len) != BTP_OK)
        return NULL;
    return strndup(d, len);
}

/* The log's `clock` notes: lines "RECORD NS" (the records written before
 * the sample, nanoseconds since start), or one number NS placed by the
 * note's own position. Samples must not go back in records; others are
 * ignored (never guessed). */
static void load_clock(heap_model *m, const btp_log_reader *r)
{
    const char *key;
    const void *d;
    size_t len;
    uint64_t rec;
    size_t count = 0;
    for (size_t i = 0; btp_log_reader_meta(r, i, &key, &d, &len, &rec) == BTP_OK; i++)
        if (!strcmp(key, "clock"))
            for (size_t k = 0; k < len; k++)
                count += ((const char *)d)[k] == '\n' || k + 1 == len;
    m->clock_t = malloc((count + 1) * sizeof *m->clock_t);
    m->clock_ns = malloc((count + 1) * sizeof *m->clock_ns);
    if (!m->clock_t || !m->clock_ns)
        return;
    for (size_t i = 0; btp_log_reader_meta(r, i, &key, &d, &len, &rec) == BTP_OK; i++) {
        if (strcmp(key, "clock"))
            continue;
        const char *p = d, *end = p + len;
        while (p < end && m->n_clock < count) {
            const char *nl = memchr(p, '\n', (size_t)(end - p));
            const char *le = nl ? nl : end;
            char line[64];
            size_t k = (size_t)(le - p) < sizeof line - 1 ? (size_t)(le - p) : sizeof line - 1;
            memcpy(line, p, k);
            line[k] = 0;
            p = le + 1;
            unsigned long long a, b;
            char extra;
            int got = sscanf(line, "%llu %llu %c", &a, &b, &extra);
            if (got == 1)
                b = a, a = rec;
            else if (got != 2)
                continue;
            if (a > rec || (m->n_clock && a < m->clock_t[m->n_clock - 1]))
                continue;
            m->clock_t[m->n_clock] = a;
            m->clock_ns[m->n_clock++] = b;
        }
    }
}

static int load_log(heap_model *m, const strbuf *data, const cli_options *opt)
{
    btp_log_reader *r;
    btp_status st = btp_log_reader_open(&r, data->data, data->len,
                                        opt->keep_going ? BTP_LOG_KEEP_GOING : 0);
    if (st != BTP_OK) {
        diag(DIAG_ERROR, m->name, NULL, "not a readable btpack log: %s", btp_strerror(st));
        return EXIT_BAD_INPUT;
    }
    m->word_bits = btp_log_reader_word_bits(r);
    int rc = EXIT_OK;
    btp_log_record rec;
    for (;;) {
        st = btp_log_reader_next(r, &rec);
        if (st == BTP_END) {
            m->complete = 1;
            break;
        }
        if (st == BTP_E_TRUNCATED_FILE) {
            /* A crash, a kill or a recording still going on: everything of
             * every complete block was read; say so, do not fail. */
            src_loc loc = {.offset = btp_log_reader_error_offset(r), .has_offset = 1};
            diag(DIAG_WARNING, m->name, &loc,
                 "the log ends without its end block (the process crashed, was killed, or is "
                 "still running): reporting the records before it");
            break;
        }
        if (st != BTP_OK) {
            src_loc loc = {.offset = btp_log_reader_error_offset(r), .has_offset = 1};
            diag(opt->keep_going ? DIAG_WARNING : DIAG_ERROR, m->name, &loc, "%s%s",
                 btp_strerror(st), opt->keep_going ? "; block skipped" : "");
            rc = EXIT_BAD_INPUT;
            if (!opt->keep_going)
                break;
            continue;
        }
        if (rec.flags & BTP_LOG_REC_PTR_UNKNOWN) {
            m->damaged++;
            continue;
        }
        if (rec.kind == BTP_LOG_FREE) {
            on_free(m, rec.ptr, rec.index);
        } else if (rec.kind == BTP_LOG_ALLOC) {
            if (rec.ptr == 0) {
                m->failed++;
                continue;
            }
            uint32_t s = sites_of_record(&m->st, &rec);
            if (!s || on_alloc(m, rec.ptr, rec.size, s - 1, 0) < 0) {
                rc = -1;
                break;
            }
            if (rec.n_frames)
                m->has_stacks = 1;
        }
    }
    site_syms_set_log(&m->sy, m->name, r);
    load_clock(m, r);
    m->tracer = meta_text(r, "tracer");
    m->tracer_end = meta_text(r, "tracer-end");
    m->exec_note = meta_text(r, "exec");
    btp_log_reader_close(r);
    return rc;
}

/* ---- text: CSV records and lws ~m# records --------------------------------- */

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c = (char)(c | 0x20);
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* A number of s[0..n): hex with 0x, or when `hex` says so; else decimal.
 * Returns 0, or -1 (empty, bad digit, wider than 64 bits). */
static int parse_num(const char *s, size_t n, int hex, uint64_t *out)
{
    if (n >= 2 && s[0] == '0' && (s[1] | 0x20) == 'x')
        s += 2, n -= 2, hex = 1;
    if (n == 0)
        return -1;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        int d = hexval(s[i]);
        if (d < 0 || (!hex && d > 9))
            return -1;
        unsigned base = hex ? 16 : 10;
        if (v > (UINT64_MAX - (uint64_t)d) / base)
            return -1;
        v = v * base + (uint64_t)d;
    }
    *out = v;
    return 0;
}

/* Sizes are decimal as the seed's records show (`m,12,0x50000000`), hex
 * when written with 0x, with hex letters, or zero-padded to 8+ digits (the
 * `%8.8x` its wrapper printed). */
static int size_is_hex(const char *s, size_t n)
{
    if (n >= 8 && s[0] == '0')
        return 1;
    for (size_t i = 0; i < n; i++)
        if (hexval(s[i]) > 9)
            return 1;
    return 0;
}

static int is_word(char c)
{
    return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') || c == '_';
}

/* A CSV record at the end of the line s[0..n) (other text may come before
 * it, after a non-word character). Returns 1 with the fields, 0 when the
 * line holds no record, -1 when it starts like one but is malformed. */
static int parse_csv(const char *s, size_t n, char *kind, uint64_t *size, int *has_size,
                     uint64_t *ptr)
{
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
        n--;
    size_t lead = 0;
    while (lead < n && (s[lead] == ' ' || s[lead] == '\t'))
        lead++;
    int looks = n - lead >= 2 && (s[lead] == 'm' || s[lead] == 'c' || s[lead] == 'f') &&
                s[lead + 1] == ',';
    /* the pointer: trailing hex digits (and 0x) */
    size_t e = n, b = n;
    while (b > 0 && (hexval(s[b - 1]) >= 0 || (s[b - 1] | 0x20) == 'x'))
        b--;
    if (b == e || b < 3 || s[b - 1] != ',')
        return looks ? -1 : 0;
    size_t se = b - 1, sb = se;
    while (sb > 0 && (hexval(s[sb - 1]) >= 0 || (s[sb - 1] | 0x20) == 'x'))
        sb--;
    if (sb < 2 || s[sb - 1] != ',')
        return looks ? -1 : 0;
    char k = s[sb - 2];
    if ((k != 'm' && k != 'c' && k != 'f') || (sb >= 3 && is_word(s[sb - 3])))
        return looks ? -1 : 0;
    if (parse_num(s + b, e - b, 1, ptr) < 0)
        return -1;
    *has_size = se > sb;
    if (*has_size && parse_num(s + sb, se - sb, size_is_hex(s + sb, se - sb), size) < 0)
        return -1;
    if (!*has_size && k != 'f')
        return -1;
    *kind = k;
    return 1;
}

static int load_text(heap_model *m, const strbuf *text, const cli_options *opt, heap_input kind)
{
    int rc = EXIT_OK;
    size_t lineno = 0;
    uint32_t nostack = sites_of_frames(&m->st, NULL, 0);
    if (!nostack)
        return -1;
    uint64_t synthetic = 0x1000; /* lws: records laid out one after another */
    btp_frame frames[BTP_LWS_MAX_FRAMES];
    for (size_t at = 0; at < text->len;) {
        const char *line = text->data + at;
        const char *nl = memchr(line, '\n', text->len - at);
        size_t len = nl ? (size_t)(nl - line) : text->len - at;
        at += len + (nl != NULL);
        src_loc loc = {.line = ++lineno};
        if (kind == HEAP_IN_LWS) {
            size_t pos = 0, start, rl;
            while (btp_lws_scan(line, len, &pos, &start, &rl) == BTP_OK) {
                btp_lws_info info;
                btp_status st = btp_lws_m_decode(line + start, rl, m->word_bits, frames,
                                                 BTP_LWS_MAX_FRAMES, &info);
                if (st != BTP_OK) {
                    diag(opt->keep_going ? DIAG_WARNING : DIAG_ERROR, m->name, &loc,
                         "bad ~m# record: %s", btp_strerror(st));
                    m->bad_lines++;
                    rc = EXIT_BAD_INPUT;
                    if (!opt->keep_going)
                        goto out;
                    continue;
                }
                uint32_t s = sites_of_frames(&m->st, frames, info.depth);
                if (!s || on_alloc(m, synthetic, info.alloc_size, s - 1, HA_NO_ADDRESS) < 0) {
                    rc = -1;
                    goto out;
                }
                m->has_stacks |= info.depth > 0;
                synthetic += (info.alloc_size + 15) & ~(uint64_t)15;
                if (synthetic > (UINT64_MAX >> 1))
                    synthetic = 0x1000;
            }
            continue;
        }
        char k;
        uint64_t size = 0, ptr = 0;
        int has_size = 0;
        int got = parse_csv(line, len, &k, &size, &has_size, &ptr);
        if (got == 0)
            continue; /* other log text */
        if (got < 0) {
            diag(opt->keep_going ? DIAG_WARNING : DIAG_ERROR, m->name, &loc,
                 "malformed heap record (expected m,SIZE,PTR  c,SIZE,PTR  or f,,PTR)");
            m->bad_lines++;
            rc = EXIT_BAD_INPUT;
            if (!opt->keep_going)
                break;
            continue;
        }
        if (k == 'f') {
            on_free(m, ptr, lineno);
        } else if (ptr == 0) {
            m->failed++;
        } else if (on_alloc(m, ptr, size, nostack - 1, 0) < 0) {
            rc = -1;
            break;
        }
    }
out:
    return rc;
}

/* Does the text hold `~m#` records? (Looks at the first 1 MiB.) */
static int text_has_lws(const strbuf *head)
{
    size_t pos = 0, start, len;
    return btp_lws_scan(head->data, head->len, &pos, &start, &len) == BTP_OK;
}

int heap_model_load(heap_model *m, const char *path, heap_input kind, const cli_options *opt,
                    const char *elf)
{
    memset(m, 0, sizeof *m);
    m->st = (sites)SITES_INIT;
    m->name = input_name(path);
    m->word_bits = opt->word_bits ? opt->word_bits : 64;
    m->sy.elf = elf;
    input in;
    if (input_open(&in, path) < 0)
        return EXIT_BAD_INPUT;
    strbuf data = STRBUF_INIT;
    int rc = input_read_all(&in, &data);
    input_close(&in);
    if (rc < 0) {
        sb_free(&data);
        return EXIT_BAD_INPUT;
    }
    if (kind == HEAP_IN_AUTO)
        kind = btp_log_probe(data.data, data.len) ? HEAP_IN_LOG
               : text_has_lws(&data)             ? HEAP_IN_LWS
                                                  : HEAP_IN_CSV;
    m->kind = kind;
    rc = kind == HEAP_IN_LOG ? load_log(m, &data, opt) : load_text(m, &data, opt, kind);
    sb_free(&data);
    return rc;
}

void heap_model_free(heap_model *m)
{
    sites_free(&m->st);
    site_syms_free(&m->sy);
    free(m->a);
    free(m->clock_t);
    free(m->clock_ns);
    free(m->tracer);
    free(m->tracer_end);
    free(m->exec_note);
    free(m->h_ptr);
    free(m->h_idx);
    memset(m, 0, sizeof *m);
}

double heap_model_seconds(const heap_model *m, uint64_t t)
{
    if (m->n_clock == 0)
        return -1;
    /* the mark at or before t, and the next one: interpolate */
    size_t lo = 0, hi = m->n_clock;
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (m->clock_t[mid] <= t)
            lo = mid;
        else
            hi = mid;
    }
    double ns = (double)m->clock_ns[lo];
    if (lo + 1 < m->n_clock && m->clock_t[lo + 1] > m->clock_t[lo] && t >= m->clock_t[lo])
        ns += (double)(m->clock_ns[lo + 1] - m->clock_ns[lo]) * (double)(t - m->clock_t[lo]) /
              (double)(m->clock_t[lo + 1] - m->clock_t[lo]);
    return ns / 1e9;
}

void heap_model_site_totals(heap_model *m)
{
    for (size_t i = 0; i < m->st.n_sites; i++) {
        site *s = &m->st.sites[i];
        s->count = s->bytes = s->live_count = s->live_bytes = s->peak_count = s->peak_bytes = 0;
    }
    for (size_t i = 0; i < m->n; i++) {
        const heap_alloc *a = &m->a[i];
        site *s = &m->st.sites[a->site];
        s->count++;
        s->bytes += a->size;
        if (a->t1 == HEAP_LIVE) {
            s->live_count++;
            s->live_bytes += a->size;
        }
        if (a->t0 <= m->peak_t && a->t1 > m->peak_t && m->peak_bytes) {
            s->peak_count++;
            s->peak_bytes += a->size;
        }
    }
}

static heap_order sort_key;

uint64_t heap_site_value(const site *s, heap_order key)
{
    switch (key) {
    case BY_COUNT: return s->count;
    case BY_BYTES: return s->bytes;
    case BY_LIVE: return s->live_bytes;
    case BY_PEAK: return s->peak_bytes;
    case BY_TEMP: return s->temp_count;
    }
    return 0;
}

static int cmp_sites(const void *a, const void *b)
{
    const site *x = *(const site *const *)a, *y = *(const site *const *)b;
    uint64_t kx = heap_site_value(x, sort_key), ky = heap_site_value(y, sort_key);
    if (kx != ky)
        return kx < ky ? 1 : -1;
    return (x->count < y->count) - (x->count > y->count);
}

site **heap_model_sorted(const heap_model *m, heap_order key)
{
    site **v = malloc((m->st.n_sites + 1) * sizeof *v);
    if (!v)
        return NULL;
    for (size_t i = 0; i < m->st.n_sites; i++)
        v[i] = &m->st.sites[i];
    sort_key = key;
    qsort(v, m->st.n_sites, sizeof *v, cmp_sites);
    return v;
}
