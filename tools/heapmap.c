/* btpack heapmap: what libwebsockets' contrib/heapmap.sh means to do. For
 * every `~m#` record in a log: the allocation size and the frames
 * symbolized with addr2line (function, file:line); the total; then the
 * allocations grouped by allocating stack, largest first. */
#include "cli.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "diag.h"
#include "output.h"
#include "symbolize/symbolizer.h"

static const char heapmap_help[] =
    "usage: btpack heapmap --elf FILE [options] [LOG...]\n"
    "\n"
    "Read every libwebsockets ~m# record in LOG (default stdin; several are read\n"
    "in order as one; any text around the records is fine; none at all is an\n"
    "error), symbolize its frames against FILE (as btpack symbolize does:\n"
    "in-process with libdw when built with it, else one addr2line run) and print,\n"
    "per record, the allocation size and its frames (function, file:line), then\n"
    "the total, then a summary grouped by allocating stack: bytes and count per\n"
    "stack, largest first.\n"
    "Frames are return addresses: each is looked up at address - 1, the call\n"
    "instruction, so the line shown is the call's.\n"
    "\n"
    "options:\n"
    "  --elf FILE         the program the addresses belong to (with -g for lines)\n"
    "  --word-bits N      32 for logs from 32-bit devices (default 64)\n"
    "  --addr2line PROG   symbolize with this addr2line program instead (if it\n"
    "                     fails: names without lines, exit status 1 at the end)\n"
    "  --keep-going       skip bad records with a warning (exit status 1 at the end)\n"
    "  -v, --progress     show progress on stderr when it is a terminal\n"
    "  --max-warnings N   warnings of one cause shown (default 3; 0: all)\n"
    "  -h, --help         this help\n"
    "\n"
    "example:\n"
    "  btpack heapmap --elf ./myapp device.log\n";

typedef struct record {
    uint64_t size;
    size_t line;
    size_t first, n; /* frames pool[first..first+n) */
} record;

typedef struct heap {
    record *recs;
    size_t nrecs, cap;
    uint64_t *pool;
    size_t npool, pool_cap;
} heap;

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap : 64;
    while (c < need)
        c *= 2;
    void *np = realloc(*p, c * elem);
    if (!np) {
        diag(DIAG_ERROR, NULL, NULL, "out of memory");
        return -1;
    }
    *p = np;
    *cap = c;
    return 0;
}

static int collect(void *ctx, trace *t)
{
    heap *h = ctx;
    if (grow((void **)&h->recs, &h->cap, h->nrecs + 1, sizeof *h->recs) < 0 ||
        grow((void **)&h->pool, &h->pool_cap, h->npool + t->n, sizeof *h->pool) < 0)
        return -1;
    h->recs[h->nrecs++] = (record){t->alloc_size, t->loc.line, h->npool, t->n};
    for (size_t i = 0; i < t->n_runs; i++) /* lws records: at most 31 frames */
        for (uint64_t c = 0; c < t->runs[i].count; c++)
            h->pool[h->npool++] = t->runs[i].frame.value;
    return 0;
}

static const heap *sort_heap; /* qsort has no context argument */

static int cmp_stack(const void *a, const void *b)
{
    const record *x = a, *y = b;
    size_t n = x->n < y->n ? x->n : y->n;
    for (size_t i = 0; i < n; i++) {
        uint64_t u = sort_heap->pool[x->first + i], v = sort_heap->pool[y->first + i];
        if (u != v)
            return u < v ? -1 : 1;
    }
    return x->n < y->n ? -1 : x->n > y->n;
}

typedef struct group {
    size_t rec;     /* a record with this stack */
    uint64_t bytes; /* saturating */
    size_t count;
    int overflow;
} group;

static int cmp_group(const void *a, const void *b)
{
    const group *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes > y->bytes ? -1 : 1;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return x->rec < y->rec ? -1 : x->rec > y->rec;
}

/* Each frame: number, address, function, file:line (addr2line's "??" and
 * "??:0" when unknown, then why in brackets). */
static void print_frames(const heap *h, const record *r, const symbolizer *sy,
                         const long *handles)
{
    for (size_t i = 0; i < r->n; i++) {
        sym_answer a;
        sym_get(sy, handles[r->first + i], &a);
        const sym_loc *l = a.n_locs ? &a.locs[0] : NULL;
        printf("  #%-2zu 0x%llx %s ", i, (unsigned long long)h->pool[r->first + i],
               l && l->function ? l->function : "??");
        if (l && l->file)
            printf("%s:%u", l->file, l->line);
        else
            fputs("??:0", stdout);
        if (a.note)
            printf("  [%s]", a.note);
        putchar('\n');
    }
}

static void print_bytes(uint64_t bytes, int overflow)
{
    printf("%s%llu bytes", overflow ? "more than " : "", (unsigned long long)bytes);
}

static int report(heap *h, const char *a2l, const char *elf)
{
    /* every frame is a return address: looked up at address - 1, the call */
    sym_options so = {.backend = a2l ? "addr2line" : NULL, .addr2line = a2l, .elf = elf};
    char why[256];
    long *handles = malloc((h->npool ? h->npool : 1) * sizeof *handles);
    symbolizer *sy = sym_new(&so, why, sizeof why);
    group *groups = NULL;
    int rc = -1;
    if (!sy)
        diag(DIAG_ERROR, NULL, NULL, "%s", why);
    if (!handles || !sy)
        goto out;
    for (size_t i = 0; i < h->npool; i++)
        if ((handles[i] = sym_add(sy, h->pool[i], BTP_FRAME_RA)) < 0)
            goto out;
    if (sym_resolve(sy) < 0)
        goto out;

    uint64_t total = 0;
    int overflow = 0;
    for (size_t i = 0; i < h->nrecs; i++) {
        const record *r = &h->recs[i];
        printf("line %zu: %llu bytes\n", r->line, (unsigned long long)r->size);
        print_frames(h, r, sy, handles);
        overflow |= total + r->size < total;
        total = overflow ? UINT64_MAX : total + r->size;
    }
    printf("total: ");
    print_bytes(total, overflow);
    printf(" in %zu allocation%s\n", h->nrecs, h->nrecs == 1 ? "" : "s");

    /* Group identical stacks: sort by stack, then merge neighbours. */
    sort_heap = h;
    qsort(h->recs, h->nrecs, sizeof *h->recs, cmp_stack);
    groups = calloc(h->nrecs ? h->nrecs : 1, sizeof *groups);
    if (!groups)
        goto out;
    size_t ng = 0;
    for (size_t i = 0; i < h->nrecs; i++) {
        if (ng == 0 || cmp_stack(&h->recs[groups[ng - 1].rec], &h->recs[i]) != 0)
            groups[ng++] = (group){i, 0, 0, 0};
        group *g = &groups[ng - 1];
        g->overflow |= g->bytes + h->recs[i].size < g->bytes;
        g->bytes = g->overflow ? UINT64_MAX : g->bytes + h->recs[i].size;
        g->count++;
    }
    qsort(groups, ng, sizeof *groups, cmp_group);
    printf("\nby allocating stack, largest first (%zu stack%s):\n", ng, ng == 1 ? "" : "s");
    for (size_t i = 0; i < ng; i++) {
        print_bytes(groups[i].bytes, groups[i].overflow);
        printf(" in %zu allocation%s\n", groups[i].count, groups[i].count == 1 ? "" : "s");
        print_frames(h, &h->recs[groups[i].rec], sy, handles);
    }
    rc = sym_backends_failed("heapmap", sy) ? 1 : 0;
out:
    if (rc < 0 && sy)
        diag(DIAG_ERROR, NULL, NULL, "out of memory");
    sym_free(sy);
    free(handles);
    free(groups);
    return rc;
}

int cmd_heapmap(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"elf", required_argument, NULL, 'e'},
        {"word-bits", required_argument, NULL, 'w'},
        {"addr2line", required_argument, NULL, 'a'},
        {"keep-going", no_argument, NULL, 'k'},
        {"progress", no_argument, NULL, 'v'},
        {"max-warnings", required_argument, NULL, 'W'},
        {"help", no_argument, NULL, 'h'},
        {0, 0, 0, 0},
    };
    cli_options opt = {.word_bits = 64, .max_frames = CLI_DEFAULT_MAX_FRAMES};
    const char *elf = NULL, *a2l = NULL;
    int ch;
    opterr = 0;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "hv", longopts, NULL)) != -1) {
        switch (ch) {
        case 'e':
            elf = optarg;
            break;
        case 'a':
            a2l = optarg;
            break;
        case 'h':
            fputs(heapmap_help, stdout);
            return EXIT_OK;
        default: {
            int rc = cli_shared_option("heapmap", ch, optarg, &opt, argv);
            if (rc >= 0)
                return rc;
        }
        }
    }
    if (!elf)
        return cli_usage_error("heapmap", "--elf FILE is required");
    if (cli_check_elf(elf) < 0)
        return EXIT_BAD_INPUT;
    heap h = {0};
    int rc = read_traces(format_find("lws"), &opt, argv + optind, argc - optind, collect, &h);
    if (rc == EXIT_OK && h.nrecs == 0) {
        /* a wrong file, not a heap of 0 bytes */
        diag(DIAG_ERROR, argc - optind <= 1 ? input_name(argv[optind]) : NULL, NULL,
             "no libwebsockets ~m# record in %s", argc - optind > 1 ? "the logs" : "the log");
        rc = EXIT_BAD_INPUT;
    } else if (rc == EXIT_OK || opt.keep_going) {
        fflush(stdout);
        if (report(&h, a2l, elf) != 0) /* -1 out of memory, 1 the back end failed */
            rc = EXIT_BAD_INPUT;
    }
    output out;
    output_stdio(&out);
    if (output_close(&out, 1) < 0)
        rc = EXIT_BAD_INPUT;
    free(h.recs);
    free(h.pool);
    return rc;
}
