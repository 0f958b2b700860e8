/* Reading a heap's history into the model (heap_model.h), as the input
 * streams by. */
#include "heap_model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "diag.h"
#include "input.h"
#include "lines.h"

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
    size_t nc = m->live_cap ? m->live_cap * 2 : 4096;
    heap_live *t = calloc(nc, sizeof *t);
    if (!t)
        return -1;
    for (size_t i = 0; i < m->live_cap; i++)
        if (m->live[i].ptr) {
            size_t j = h_slot(m->live[i].ptr, nc);
            while (t[j].ptr)
                j = (j + 1) & (nc - 1);
            t[j] = m->live[i];
        }
    free(m->live);
    m->live = t;
    m->live_cap = nc;
    return 0;
}

/* Slot of p, or of the empty slot where it would go. */
static size_t h_find(const heap_model *m, uint64_t p)
{
    size_t j = h_slot(p, m->live_cap);
    while (m->live[j].ptr && m->live[j].ptr != p)
        j = (j + 1) & (m->live_cap - 1);
    return j;
}

/* Remove slot j, shifting later entries of its cluster back (no tombstones). */
static void h_remove(heap_model *m, size_t j)
{
    size_t cap = m->live_cap;
    m->live[j].ptr = 0;
    m->live_used--;
    for (size_t k = (j + 1) & (cap - 1); m->live[k].ptr; k = (k + 1) & (cap - 1)) {
        size_t home = h_slot(m->live[k].ptr, cap);
        /* move k to j when its home is not in (j, k] cyclically */
        if ((j < k) ? (home <= j || home > k) : (home <= j && home > k)) {
            m->live[j] = m->live[k];
            m->live[k].ptr = 0;
            j = k;
        }
    }
}

/* ---- events --------------------------------------------------------------- */

/* A site's live counters are about to change at the current event. What
 * was live at the peak is what the site had when it last changed at or
 * before the peak's event: kept here, so that no allocation's history is
 * needed to know it (heap_model_site_totals() completes the others). */
static void site_change(heap_model *m, site *s)
{
    if (s->touched && s->touched - 1 <= m->peak_t && m->peak_bytes) {
        s->peak_count = s->live_count;
        s->peak_bytes = s->live_bytes;
    }
    s->touched = m->events + 1;
}

/* The live allocation e ends at the current event. */
static void live_end(heap_model *m, const heap_live *e)
{
    site *s = &m->st.sites[e->site];
    site_change(m, s);
    s->live_count--;
    s->live_bytes -= e->size;
    m->live_bytes -= e->size;
    m->live_count--;
}

/* where: the record (log) or line (text) of the allocation. */
static int on_alloc(heap_model *m, uint64_t ptr, uint64_t size, uint32_t site_ix, uint32_t flags,
                    uint64_t where)
{
    if (!(flags & HA_NO_ADDRESS) && (m->live_used + 1) * 2 > m->live_cap && h_grow(m) < 0)
        return -1;
    /* (kept allocations are numbered in 32 bits: heap_live.ai) */
    if (m->keep_allocs &&
        (m->n >= UINT32_MAX - 1 || array_grow(&m->a, &m->cap, m->n + 1, sizeof *m->a) < 0))
        return -1;
    if (!(flags & HA_NO_ADDRESS)) {
        size_t j = h_find(m, ptr);
        if (m->live[j].ptr) {
            /* The address came back without a free: the input lost it. The
             * old allocation ends here, flagged, and is not a leak. */
            const heap_live *old = &m->live[j];
            if (old->ai) {
                m->a[old->ai - 1].t1 = m->events;
                m->a[old->ai - 1].flags |= HA_FREE_MISSING;
            }
            m->free_missing++;
            live_end(m, old);
            h_remove(m, j);
            j = h_find(m, ptr);
        }
        m->live[j] = (heap_live){ptr, size, m->allocs + 1,
                                 m->keep_allocs ? (uint32_t)m->n + 1 : 0, site_ix};
        m->live_used++;
    }
    if (m->keep_allocs)
        m->a[m->n++] = (heap_alloc){ptr, size, m->events, HEAP_LIVE, site_ix, flags};
    site *s = &m->st.sites[site_ix];
    site_change(m, s);
    s->count++;
    s->bytes += size;
    s->live_count++;
    s->live_bytes += size;
    m->allocs++;
    m->events++;
    m->total_bytes += size;
    m->live_bytes += size;
    m->live_count++;
    if (m->live_bytes > m->peak_bytes) {
        m->peak_bytes = m->live_bytes;
        m->peak_count = m->live_count;
        m->peak_t = m->events - 1;
        m->peak_where = where;
        /* the clock samples around it: the latest so far, and what comes */
        m->clock_lo = m->clock_last;
        m->clock_hi.have = 0;
    }
    return 0;
}

/* where: the line or record number, for the first unmatched free. */
static void on_free(heap_model *m, uint64_t ptr, uint64_t where)
{
    if (ptr == 0)
        return; /* free(NULL) */
    size_t j = m->live_cap ? h_find(m, ptr) : 0;
    if (!m->live_cap || !m->live[j].ptr) {
        if (!m->unmatched_frees++)
            m->first_unmatched = where;
        m->events++;
        return;
    }
    const heap_live *e = &m->live[j];
    if (e->ai)
        m->a[e->ai - 1].t1 = m->events;
    m->frees++;
    /* Temporary: freed before any other allocation was made (heaptrack's
     * definition), so the memory was never needed alongside another. */
    if (e->seq == m->allocs) {
        m->temporary++;
        m->st.sites[e->site].temp_count++;
    }
    live_end(m, e);
    m->events++;
    h_remove(m, j);
}

/* ---- trace logs ------------------------------------------------------------ */

/* A `clock` note: lines "RECORD NS" (the records written before the
 * sample, nanoseconds since start), or one number NS placed by the note's
 * own position (`rec` records before it). Samples must not go back in
 * records; others are ignored (never guessed). Only the samples around
 * the peak are kept: the last at or before its record, and the next. */
static void take_clock(heap_model *m, const char *d, size_t len, uint64_t rec)
{
    const char *p = d, *end = d + len;
    while (p < end) {
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
        if (a > rec || (m->clock_last.have && a < m->clock_last.rec))
            continue;
        heap_clock c = {a, b, 1};
        m->clock_last = c;
        if (!m->peak_bytes)
            continue; /* the peak, when it comes, starts from this one */
        if (a <= m->peak_where) {
            m->clock_lo = c;
            m->clock_hi.have = 0;
        } else if (!m->clock_lo.have) {
            m->clock_lo = c; /* none before the peak: the first one stands */
        } else if (!m->clock_hi.have) {
            m->clock_hi = c;
        }
    }
}

/* A metadata item of the log, as it streams by. */
static void take_meta(void *ctx, const char *key, const void *d, size_t len, uint64_t rec)
{
    heap_model *m = ctx;
    char **note = !strcmp(key, "tracer")       ? &m->tracer
                  : !strcmp(key, "tracer-end") ? &m->tracer_end
                  : !strcmp(key, "exec")       ? &m->exec_note
                                               : NULL;
    if (note && !*note) /* the first of each */
        *note = strndup(d, len);
    else if (!strcmp(key, "clock"))
        take_clock(m, d, len, rec);
    else if (log_meta_synthetic(key, d, len))
        m->synthetic = 1;
    else
        site_syms_take(&m->sy, key, d, len);
}

/* Records of a log go through a short queue before the model takes them:
 * each one's slot of the live pointer table is prefetched when it is
 * queued, so that by its turn the cache miss that slot costs (the table is
 * far larger than the cache, and pointers hash all over it) has been paid
 * in parallel with the others'. Order is kept: the queue is emptied before
 * a metadata item is taken, and at the end. */
#define LOG_AHEAD 16

typedef struct log_pending {
    uint64_t ptr, size, where;
    uint32_t site;
    int is_free;
} log_pending;

typedef struct log_queue {
    heap_model *m;
    log_pending q[LOG_AHEAD];
    unsigned head, n;
    int failed; /* out of memory in on_alloc */
} log_queue;

static void queue_take_one(log_queue *lq)
{
    const log_pending *p = &lq->q[lq->head];
    lq->head = (lq->head + 1) % LOG_AHEAD;
    lq->n--;
    if (lq->failed)
        return;
    if (p->is_free)
        on_free(lq->m, p->ptr, p->where);
    else if (on_alloc(lq->m, p->ptr, p->size, p->site, 0, p->where) < 0)
        lq->failed = 1;
}

static void queue_drain(log_queue *lq)
{
    while (lq->n)
        queue_take_one(lq);
}

static void queue_put(log_queue *lq, log_pending p)
{
    if (lq->n == LOG_AHEAD)
        queue_take_one(lq);
    const heap_model *m = lq->m;
    if (m->live_cap)
        __builtin_prefetch(&m->live[h_slot(p.ptr, m->live_cap)]);
    lq->q[(lq->head + lq->n) % LOG_AHEAD] = p;
    lq->n++;
}

static void take_meta_in_order(void *ctx, const char *key, const void *d, size_t len,
                               uint64_t rec)
{
    log_queue *lq = ctx;
    queue_drain(lq);
    take_meta(lq->m, key, d, len, rec);
}

static int load_log(heap_model *m, input *in, const cli_options *opt)
{
    log_queue lq = {.m = m};
    reader rd = {.name = m->name, .opt = opt, .in = in};
    btp_log_reader *r;
    if (log_open_reader(&rd, &r) != BTP_OK) {
        if (!rd.in_failed)
            diag(DIAG_ERROR, m->name, &rd.err_loc, "%s", rd.msg);
        return EXIT_BAD_INPUT;
    }
    m->word_bits = btp_log_reader_word_bits(r);
    site_syms_init(&m->sy, m->sy.elf, m->word_bits);
    int rc = EXIT_OK;
    btp_log_record rec;
    for (unsigned long long n_read = 0;; progress_tick(++n_read)) {
        btp_status st = log_next_record(&rd, r, &rec, take_meta_in_order, &lq,
                                        "(the process crashed, was killed, or is still "
                                        "running): reporting the records before it");
        if (st == BTP_END) {
            m->complete = 1;
            break;
        }
        /* a log cut short is what a crash or a kill leaves: not an error */
        if (st == BTP_E_TRUNCATED_FILE && !rd.in_failed)
            break;
        if (st != BTP_OK) {
            rc = EXIT_BAD_INPUT;
            if (rd.fatal)
                break;
            continue;
        }
        if (rec.flags & BTP_LOG_REC_PTR_UNKNOWN) {
            m->damaged++;
            continue;
        }
        if (rec.kind == BTP_LOG_FREE) {
            queue_put(&lq, (log_pending){rec.ptr, 0, rec.index, 0, 1});
        } else if (rec.kind == BTP_LOG_ALLOC) {
            if (rec.ptr == 0) {
                m->failed++;
                continue;
            }
            uint32_t s = sites_of_record(&m->st, &rec);
            if (!s) {
                rc = -1;
                break;
            }
            queue_put(&lq, (log_pending){rec.ptr, rec.size, rec.index, s - 1, 0});
            if (rec.n_frames)
                m->has_stacks = 1;
        }
        if (lq.failed) {
            rc = -1;
            break;
        }
    }
    queue_drain(&lq);
    if (lq.failed)
        rc = -1;
    site_syms_check_map(&m->sy, m->name);
    btp_log_reader_close(r);
    return rc;
}

/* ---- text: CSV records and lws ~m# records --------------------------------- */

/* A number of s[0..n): hex with 0x, or when `hex` says so; else decimal.
 * Returns 0, or -1 (empty, bad digit, wider than 64 bits). */
static int parse_num(const char *s, size_t n, int hex, uint64_t *out)
{
    if (n >= 2 && s[0] == '0' && (s[1] | 0x20) == 'x')
        return parse_hex_digits_u64(s + 2, n - 2, out);
    return hex ? parse_hex_digits_u64(s, n, out) : parse_dec_u64(s, n, out);
}

/* Sizes are decimal as the seed's records show (`m,12,0x50000000`), hex
 * when written with 0x, with hex letters, or zero-padded to 8+ digits (the
 * `%8.8x` its wrapper printed). */
static int size_is_hex(const char *s, size_t n)
{
    if (n >= 8 && s[0] == '0')
        return 1;
    for (size_t i = 0; i < n; i++)
        if (hex_digit(s[i]) > 9)
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
static int parse_csv3(const char *s, size_t n, char *kind, uint64_t *size, int *has_size,
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
    while (b > 0 && (hex_digit(s[b - 1]) >= 0 || (s[b - 1] | 0x20) == 'x'))
        b--;
    if (b == e || b < 3 || s[b - 1] != ',')
        return looks ? -1 : 0;
    size_t se = b - 1, sb = se;
    while (sb > 0 && (hex_digit(s[sb - 1]) >= 0 || (s[sb - 1] | 0x20) == 'x'))
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

/* parse_csv3, and an allocation's stack as a fourth field (`m,SIZE,PTR,HEX`:
 * the allocating chain as a CBF stream in hex digits, as devices write it
 * with btp_cm_record_alloc_line): *stack and *stack_len name the digits, or
 * are NULL/0. The fourth field is tried only when the line does not end in
 * a three-field record. */
static int parse_csv(const char *s, size_t n, char *kind, uint64_t *size, int *has_size,
                     uint64_t *ptr, const char **stack, size_t *stack_len)
{
    *stack = NULL;
    *stack_len = 0;
    int got = parse_csv3(s, n, kind, size, has_size, ptr);
    if (got == 1)
        return 1;
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
        n--;
    size_t b = n;
    while (b > 0 && hex_digit(s[b - 1]) >= 0)
        b--;
    if (b == n || b == 0 || s[b - 1] != ',')
        return got;
    char k;
    int has;
    uint64_t sz, p;
    if (parse_csv3(s, b - 1, &k, &sz, &has, &p) != 1 || k == 'f')
        return got;
    *kind = k, *size = sz, *has_size = has, *ptr = p;
    *stack = s + b;
    *stack_len = n - b;
    return 1;
}

/* Most frames of a CSV record's stack, and bytes of its CBF stream. */
#define CSV_STACK_FRAMES 1024u
#define CSV_STACK_BYTES 4096u

/* The frames of a CSV record's stack field (hex digits of one CBF stream).
 * Returns 0 with *n set, or -1 with the cause in *why. */
static int csv_stack(heap_model *m, const char *hex, size_t len, btp_frame *frames, size_t *n,
                     const char **why)
{
    uint8_t bytes[CSV_STACK_BYTES];
    if (len % 2) {
        *why = "odd number of hex digits";
        return -1;
    }
    if (len / 2 > sizeof bytes) {
        *why = "longer than 4096 bytes";
        return -1;
    }
    for (size_t i = 0; i < len; i += 2)
        bytes[i / 2] = (uint8_t)(hex_digit(hex[i]) << 4 | hex_digit(hex[i + 1]));
    btp_cbf_info info;
    btp_status st = btp_cbf_decode(bytes, len / 2, BTP_CBF_POLICY_DEFAULT, frames,
                                   CSV_STACK_FRAMES, &info);
    if (st == BTP_OK && info.consumed != len / 2)
        st = BTP_E_TRAILING_BYTES;
    if (st != BTP_OK) {
        *why = btp_strerror(st);
        return -1;
    }
    m->word_bits = info.word_bits;
    *n = info.frames;
    return 0;
}

static int load_text(heap_model *m, input *in, const cli_options *opt, heap_input kind)
{
    int rc = EXIT_OK;
    uint32_t nostack = sites_of_frames(&m->st, NULL, 0);
    if (!nostack)
        return -1;
    uint64_t synthetic = 0x1000; /* lws: records laid out one after another */
    btp_frame frames[BTP_LWS_MAX_FRAMES];
    btp_frame *csv_frames = NULL;
    if (kind == HEAP_IN_CSV && !(csv_frames = malloc(CSV_STACK_FRAMES * sizeof *csv_frames)))
        return -1;
    line_reader lr;
    lines_init(&lr, in);
    const char *line;
    size_t len;
    int got_line;
    while ((got_line = lines_next(&lr, &line, &len)) > 0) {
        size_t lineno = lr.lineno;
        progress_tick(lineno); /* lines, for text */
        src_loc loc = {.line = lineno};
        if (kind == HEAP_IN_LWS) {
            size_t pos = 0, start, rl;
            while (btp_lws_scan(line, len, &pos, &start, &rl) == BTP_OK) {
                btp_lws_info info;
                btp_status st = btp_lws_m_decode(line + start, rl, m->word_bits, frames,
                                                 BTP_LWS_MAX_FRAMES, &info);
                if (st != BTP_OK) {
                    diag_bad(opt->keep_going, m->name, &loc, "bad ~m# record: %s",
                             btp_strerror(st));
                    m->bad_lines++;
                    rc = EXIT_BAD_INPUT;
                    if (!opt->keep_going)
                        goto out;
                    continue;
                }
                uint32_t s = sites_of_frames(&m->st, frames, info.depth);
                if (!s || on_alloc(m, synthetic, info.alloc_size, s - 1, HA_NO_ADDRESS,
                                   lineno) < 0) {
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
        const char *stack;
        size_t stack_len;
        int got = parse_csv(line, len, &k, &size, &has_size, &ptr, &stack, &stack_len);
        if (got == 0)
            continue; /* other log text */
        uint32_t site_ix = nostack;
        const char *why = NULL;
        size_t nf = 0;
        if (got > 0 && stack && csv_stack(m, stack, stack_len, csv_frames, &nf, &why) < 0)
            got = -1;
        if (got < 0) {
            if (why)
                diag_bad(opt->keep_going, m->name, &loc,
                         "bad stack in heap record (column %zu): %s", (size_t)(stack - line) + 1,
                         why);
            else
                diag_bad(opt->keep_going, m->name, &loc,
                         "malformed heap record (expected m,SIZE,PTR[,STACK]  c,SIZE,PTR[,STACK]  "
                         "or f,,PTR)");
            m->bad_lines++;
            rc = EXIT_BAD_INPUT;
            if (!opt->keep_going)
                break;
            continue;
        }
        if (stack) {
            site_ix = sites_of_frames(&m->st, csv_frames, nf);
            if (!site_ix) {
                rc = -1;
                break;
            }
            m->has_stacks |= nf > 0;
        }
        if (k == 'f') {
            on_free(m, ptr, lineno);
        } else if (ptr == 0) {
            m->failed++;
        } else if (on_alloc(m, ptr, size, site_ix - 1, 0, lineno) < 0) {
            rc = -1;
            break;
        }
    }
    if (got_line < 0 && rc == EXIT_OK)
        rc = EXIT_BAD_INPUT; /* reported by the line reader */
out:
    free(csv_frames);
    lines_free(&lr);
    return rc;
}

/* Does the text hold `~m#` records? */
static int text_has_lws(const char *head, size_t len)
{
    size_t pos = 0, start, rl;
    return btp_lws_scan(head, len, &pos, &start, &rl) == BTP_OK;
}

int heap_model_load(heap_model *m, const char *path, heap_input kind, const cli_options *opt,
                    const char *elf, int keep_allocs)
{
    memset(m, 0, sizeof *m);
    m->st = (sites)SITES_INIT;
    m->name = input_name(path);
    m->word_bits = opt->word_bits ? opt->word_bits : 64;
    m->keep_allocs = keep_allocs;
    site_syms_init(&m->sy, elf, m->word_bits);
    input in;
    if (input_open(&in, path) < 0)
        return EXIT_BAD_INPUT;
    /* the log magic from the first bytes, lws records from the first MiB */
    const void *head;
    int detected = kind == HEAP_IN_AUTO;
    long hn = kind == HEAP_IN_AUTO ? input_peek(&in, 8, &head) : 0;
    if (hn >= 0 && kind == HEAP_IN_AUTO && btp_log_probe(head, (size_t)hn))
        kind = HEAP_IN_LOG;
    if (hn >= 0 && kind == HEAP_IN_AUTO && (hn = input_peek(&in, (size_t)1 << 20, &head)) >= 0)
        kind = text_has_lws(head, (size_t)hn) ? HEAP_IN_LWS : HEAP_IN_CSV;
    int rc = EXIT_BAD_INPUT;
    m->kind = kind;
    /* Text is CSV when it is nothing else; a file in which no line is a
     * record (a wrong file, a log whose magic is damaged) is said to be
     * one rather than reported as a heap that never allocated. */
    int guessed = detected && kind == HEAP_IN_CSV;
    int binary = guessed && hn > 0 && memchr(head, 0, (size_t)hn) != NULL;
    progress_begin(&in);
    if (hn >= 0)
        rc = kind == HEAP_IN_LOG ? load_log(m, &in, opt) : load_text(m, &in, opt, kind);
    if (rc == EXIT_OK && guessed &&
        m->allocs + m->frees + m->unmatched_frees + m->failed + m->bad_lines == 0) {
        diag(DIAG_ERROR, m->name, NULL,
             "%s: no heap records in it (a trace log from `btpack heap record`, CSV records "
             "m,SIZE,PTR  c,SIZE,PTR  f,,PTR, or ~m# records); --from csv reads it as CSV",
             hn == 0 ? "empty input" : binary ? "binary data that is not a btpack trace log"
                                              : "not a heap log");
        rc = EXIT_BAD_INPUT;
    }
    progress_end();
    diag_repeat_summary();
    input_close(&in);
    return rc;
}

void heap_model_free(heap_model *m)
{
    sites_free(&m->st);
    site_syms_free(&m->sy);
    free(m->a);
    free(m->tracer);
    free(m->tracer_end);
    free(m->exec_note);
    free(m->live);
    memset(m, 0, sizeof *m);
}

double heap_model_peak_seconds(const heap_model *m)
{
    const heap_clock *lo = &m->clock_lo, *hi = &m->clock_hi;
    if (!lo->have || !m->peak_bytes)
        return -1;
    /* between the samples around it, in proportion to the records */
    uint64_t t = m->peak_where;
    double ns = (double)lo->ns;
    if (hi->have && hi->rec > lo->rec && hi->ns >= lo->ns && t >= lo->rec)
        ns += (double)(hi->ns - lo->ns) * (double)(t - lo->rec) / (double)(hi->rec - lo->rec);
    return ns / 1e9;
}

void heap_model_site_totals(heap_model *m)
{
    if (!m->keep_allocs) {
        /* counted while loading; what was live at the peak is what a site
         * had when it last changed at or before it */
        for (size_t i = 0; i < m->st.n_sites; i++) {
            site *s = &m->st.sites[i];
            if (s->touched && s->touched - 1 <= m->peak_t && m->peak_bytes) {
                s->peak_count = s->live_count;
                s->peak_bytes = s->live_bytes;
            }
        }
        return;
    }
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
