/* btpack heapmap: what libwebsockets' contrib/heapmap.sh means to do. For
 * every `~m#` record in a log: the allocation size and the frames
 * symbolized with addr2line (function, file:line); the total; then the
 * allocations grouped by allocating stack, largest first. */
#include "cli.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "addr2line.h"
#include "diag.h"
#include "output.h"

static const char heapmap_help[] =
    "usage: btpack heapmap --elf FILE [options] [LOG]\n"
    "\n"
    "Read every libwebsockets ~m# record in LOG (default stdin; any text around\n"
    "the records is fine), symbolize its frames with addr2line against FILE (run\n"
    "once for all addresses) and print, per record, the allocation size and its\n"
    "frames (function, file:line), then the total, then a summary grouped by\n"
    "allocating stack: bytes and count per stack, largest first.\n"
    "Frames are return addresses: each is looked up at address - 1, the call\n"
    "instruction, so the line shown is the call's.\n"
    "\n"
    "options:\n"
    "  --elf FILE         the program the addresses belong to (with -g for lines)\n"
    "  --word-bits N      32 for logs from 32-bit devices (default 64)\n"
    "  --addr2line PROG   addr2line to run (default: addr2line from PATH)\n"
    "  --keep-going       skip bad records with a warning (exit status 1 at the end)\n"
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

/* The address to look up for a return address: the call before it. */
static uint64_t lookup_addr(uint64_t ra)
{
    return ra ? ra - 1 : 0;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
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

static void print_frames(const heap *h, const record *r, const uint64_t *addrs,
                         const symbol *syms, size_t nsyms)
{
    for (size_t i = 0; i < r->n; i++) {
        uint64_t a = lookup_addr(h->pool[r->first + i]);
        const uint64_t *k = bsearch(&a, addrs, nsyms, sizeof *addrs, cmp_u64);
        const symbol *s = k ? &syms[k - addrs] : NULL;
        printf("  #%-2zu 0x%llx %s %s\n", i, (unsigned long long)h->pool[r->first + i],
               s ? s->function : "??", s ? s->location : "??:0");
    }
}

static void print_bytes(uint64_t bytes, int overflow)
{
    printf("%s%llu bytes", overflow ? "more than " : "", (unsigned long long)bytes);
}

static int report(heap *h, const char *a2l, const char *elf)
{
    /* Every distinct lookup address once, sorted. */
    uint64_t *addrs = malloc((h->npool ? h->npool : 1) * sizeof *addrs);
    symbol *syms = NULL;
    group *groups = NULL;
    int rc = -1;
    if (!addrs)
        goto out;
    for (size_t i = 0; i < h->npool; i++)
        addrs[i] = lookup_addr(h->pool[i]);
    qsort(addrs, h->npool, sizeof *addrs, cmp_u64);
    size_t n = 0;
    for (size_t i = 0; i < h->npool; i++)
        if (n == 0 || addrs[n - 1] != addrs[i])
            addrs[n++] = addrs[i];
    syms = calloc(n ? n : 1, sizeof *syms);
    if (!syms || (n && addr2line_run(a2l, elf, addrs, n, syms) < 0))
        goto out;

    uint64_t total = 0;
    int overflow = 0;
    for (size_t i = 0; i < h->nrecs; i++) {
        const record *r = &h->recs[i];
        printf("line %zu: %llu bytes\n", r->line, (unsigned long long)r->size);
        print_frames(h, r, addrs, syms, n);
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
        print_frames(h, &h->recs[groups[i].rec], addrs, syms, n);
    }
    rc = 0;
out:
    if (syms)
        symbols_free(syms, n);
    free(syms);
    free(addrs);
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
        {"help", no_argument, NULL, 'h'},
        {0, 0, 0, 0},
    };
    cli_options opt = {.word_bits = 64, .max_frames = CLI_DEFAULT_MAX_FRAMES};
    const char *elf = NULL, *a2l = "addr2line";
    int ch;
    opterr = 0;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
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
        default:
            switch (cli_read_option("heapmap", ch, optarg, &opt)) {
            case 1:
                break;
            case 0:
                return cli_bad_option("heapmap", argv);
            default:
                return EXIT_USAGE;
            }
        }
    }
    if (!elf)
        return cli_usage_error("heapmap", "--elf FILE is required");
    if (argc - optind > 1)
        return cli_usage_error("heapmap", "one log at most, got %d", argc - optind);
    if (access(elf, R_OK) != 0) {
        diag(DIAG_ERROR, elf, NULL, "cannot read the ELF file");
        return EXIT_BAD_INPUT;
    }
    heap h = {0};
    int rc = read_traces(format_find("lws"), &opt, optind < argc ? argv[optind] : NULL, collect,
                         &h);
    if (rc == EXIT_OK || opt.keep_going) {
        fflush(stdout);
        if (report(&h, a2l, elf) < 0)
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
