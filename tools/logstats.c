/* btpack stats on a trace log: what the log holds and what it costs
 * (records, stacks, tree nodes, bytes per section), and a heap profile
 * summary: the top allocation stacks by count and by bytes, with what is
 * still live at the end, symbolized (tools/symbolize) through the stored
 * image map or --elf. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

#include "diag.h"
#include "sites.h"

/* A free the log matched with its allocation: that allocation is no longer
 * live. (Frees it could not match, of pointers it never saw allocated or
 * forgot past its live table cap, leave the allocation counted as live.) */
static void free_matched(sites *p, const btp_log_record *rec)
{
    uint32_t k = sites_of_freed(p, rec);
    if (!k)
        return;
    site *s = &p->sites[k - 1];
    s->live_count--;
    s->live_bytes -= rec->size;
}

static void print_site(const site_syms *sy, const site *s, int rank, uint64_t total_count,
                       uint64_t total_bytes)
{
    printf("  #%d  %llu allocations (%.1f%%), %llu bytes (%.1f%%), live at end %llu (%llu bytes)\n",
           rank, (unsigned long long)s->count, total_count ? 100.0 * s->count / total_count : 0.0,
           (unsigned long long)s->bytes, total_bytes ? 100.0 * s->bytes / total_bytes : 0.0,
           (unsigned long long)s->live_count, (unsigned long long)s->live_bytes);
    strbuf line = STRBUF_INIT;
    for (size_t j = 0; j < s->n; j++) {
        sb_clear(&line);
        site_syms_frame_text(sy, s, j, &line);
        printf("        %s\n", line.data ? line.data : "");
    }
    sb_free(&line);
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

/* The stored image map, taken as the metadata streams by. */
static void take_meta(void *ctx, const char *key, const void *data, size_t len, uint64_t record)
{
    (void)record;
    site_syms_take(ctx, key, data, len);
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
    sites p = SITES_INIT;
    uint64_t total_count = 0, total_bytes = 0, unknown = 0;
    int rc = EXIT_OK;
    site_syms sy;
    site_syms_init(&sy, elf, btp_log_reader_word_bits(r));
    btp_status st;
    btp_log_record rec;
    unsigned long long n_read = 0;
    progress_begin(in);
    for (;;) {
        st = log_next_record(&rd, r, &rec, take_meta, &sy, NULL);
        progress_tick(++n_read);
        if (st == BTP_END)
            break;
        if (st != BTP_OK) {
            rc = EXIT_BAD_INPUT;
            if (rd.fatal)
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
        uint32_t s = sites_of_record(&p, &rec);
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
    progress_end();
    diag_repeat_summary();
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
    site_syms_check_map(&sy, name);
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
        site_syms_resolve(&sy, shown, 2 * n_top);
        printf("top %zu allocation stacks by count:\n", n_top);
        for (size_t i = 0; i < n_top; i++)
            print_site(&sy, shown[i], (int)i + 1, total_count, total_bytes);
        printf("top %zu allocation stacks by bytes:\n", n_top);
        for (size_t i = 0; i < n_top; i++)
            print_site(&sy, shown[n_top + i], (int)i + 1, total_count, total_bytes);
    }
    free(order);
    free(shown);
    site_syms_free(&sy);
    sites_free(&p);
    btp_log_reader_close(r);
    return rc;
}
