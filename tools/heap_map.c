/* btpack heap map: the heap drawn with addresses on one axis and time on
 * the other (tools/heap_map.html is the page; this fills in its data), or a
 * static SVG of the same picture. */
#include "cli.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "diag.h"
#include "heap_cmd.h"
#include "output.h"

#if BTP_CLI_HAVE_ZLIB
#include <zlib.h>
#endif

extern const char heap_map_html[]; /* tools/heap_map.html, embedded at build time */

static const char map_help[] =
    "usage: btpack heap map [-o heap.html|heap.svg] [--elf FILE] [--from log|csv|lws] [IN]\n"
    "\n"
    "Draw the heap: addresses go up, time (allocation events) goes right, each\n"
    "allocation a bar from its malloc to its free, coloured by allocating stack, so\n"
    "fragmentation and leaks show at a glance; heap in use over time below.\n"
    "HTML (default): one self-contained file (no network), zoom with the wheel, pan\n"
    "by dragging, hover an allocation for its size and symbolized stack. Where\n"
    "bars share a pixel the latest allocation shows. Zoomed out, the page draws\n"
    "from an aggregate built once at load (the latest allocation per cell of a\n"
    "grid over the whole history), so a draw costs the pixels, not the\n"
    "allocations; zoomed in, only the allocations in view are drawn (see\n"
    "bench/heap/README.md for a million allocations).\n"
    "SVG (-o FILE.svg): a static picture of the whole history, 1200x600.\n"
    "Address ranges with nothing allocated (more than 1 MiB between allocations)\n"
    "are cut out of the address axis. Inputs as for `btpack heap report`; a log\n"
    "recorded with --no-addresses has no addresses to draw and is refused.\n"
    "\n"
    "options:\n"
    "  -o FILE          output (default stdout, HTML)\n"
    "  --elf FILE       the program, for inputs without maps (CSV, lws)\n"
    "  --from FMT       log, csv or lws (default: detected)\n"
    "  --word-bits N    32 for lws records of 32-bit devices (default 64)\n"
    "  --keep-going     draw what damaged input still holds (exit status 1)\n"
    "  --max-warnings N warnings of one cause shown (default 3; 0: all)\n"
    "  -v, --progress   while reading, show on stderr (when it is a terminal)\n"
    "                   where the input is: bytes, records and their rates\n"
    "  -h, --help       this help\n";

/* after the log limits (cli_log_limits_help) */
static const char map_examples[] =
    "\n"
    "examples:\n"
    "  btpack heap map -o heap.html tests/data/log/synthetic-zlib.btlog\n"
    "  btpack heap map -o uart.svg uart.log\n";

#define GAP ((uint64_t)1 << 20) /* address gaps larger than this are cut out */
#define SYMBOLIZED_SITES 300    /* stacks symbolized for hovering (largest first) */
#define NAMED_SITES 12          /* stacks with their own colour and legend entry */

typedef struct region {
    uint64_t start, y0; /* y0 in bytes of the compacted axis */
} region;

typedef struct layout {
    uint64_t *y;     /* per allocation, compacted address in bytes */
    region *regions;
    size_t n_regions;
    uint64_t y_total;
} layout;

static const heap_model *sort_model;

static int by_ptr(const void *a, const void *b)
{
    uint64_t x = sort_model->a[*(const size_t *)a].ptr, y = sort_model->a[*(const size_t *)b].ptr;
    return (x > y) - (x < y);
}

/* Cut the address space down to the ranges something was allocated in. */
static int lay_out(const heap_model *m, layout *L)
{
    memset(L, 0, sizeof *L);
    size_t *ord = malloc((m->n + 1) * sizeof *ord);
    L->y = malloc((m->n + 1) * sizeof *L->y);
    L->regions = malloc((m->n + 1) * sizeof *L->regions);
    if (!ord || !L->y || !L->regions) {
        free(ord);
        return -1;
    }
    for (size_t i = 0; i < m->n; i++)
        ord[i] = i;
    sort_model = m;
    qsort(ord, m->n, sizeof *ord, by_ptr);
    uint64_t end = 0, y = 0;
    for (size_t k = 0; k < m->n; k++) {
        const heap_alloc *a = &m->a[ord[k]];
        if (k == 0 || a->ptr > end + GAP) {
            if (k)
                y += (end - L->regions[L->n_regions - 1].start) + 4096; /* a visible seam */
            L->regions[L->n_regions++] = (region){a->ptr, y};
            end = a->ptr;
        }
        const region *r = &L->regions[L->n_regions - 1];
        L->y[ord[k]] = r->y0 + (a->ptr - r->start);
        uint64_t e = a->ptr + (a->size ? a->size : 1);
        if (e > end)
            end = e;
    }
    if (L->n_regions)
        y += end - L->regions[L->n_regions - 1].start;
    L->y_total = y;
    free(ord);
    return 0;
}

/* A JSON string safe inside <script>: '<' escaped too. */
static void html_json_string(strbuf *o, const char *s, size_t n)
{
    strbuf t = STRBUF_INIT;
    sb_json_string(&t, s, n);
    for (size_t i = 0; i < t.len; i++) {
        if (t.data[i] == '<')
            sb_adds(o, "\\u003c");
        else
            sb_addc(o, t.data[i]);
    }
    sb_free(&t);
}

/* Inputs without stacks (CSV) are coloured by size class instead: the
 * sites are then one per class, their one frame holding the class k (sizes
 * 2^k .. 2^(k+1)-1). */
static int by_class;

static int size_class(uint64_t size)
{
    int k = 0;
    while (size > 1)
        size >>= 1, k++;
    return k;
}

static void class_text(const site *s, strbuf *out)
{
    uint64_t k = s->n ? s->frames[0].value : 0;
    sb_printf(out, "%llu..%llu bytes", (unsigned long long)(k ? 1ull << k : 0),
              (unsigned long long)((2ull << k) - 1));
}

static void site_stack_text(const heap_model *m, const site *s, strbuf *out)
{
    if (by_class) {
        sb_adds(out, "(no stacks in the input; coloured by size: ");
        class_text(s, out);
        sb_addc(out, ')');
        return;
    }
    if (s->n == 0)
        sb_adds(out, "(no stack)");
    for (size_t j = 0; j < s->n && j < 64; j++) {
        if (j)
            sb_addc(out, '\n');
        site_syms_frame_text(&m->sy, s, j, out);
    }
}

/* A short name for the legend: the first frame's function, else its file. */
static void site_name(const heap_model *m, const site *s, strbuf *out)
{
    if (by_class) {
        class_text(s, out);
        return;
    }
    for (size_t j = 0; j < s->n; j++) {
        if (s->frames[j].kind == BTP_FRAME_OMIT)
            continue;
        sym_answer a;
        site_syms_get(&m->sy, s, j, &a);
        if (a.n_locs && a.locs[0].function) {
            sb_adds(out, a.locs[0].function);
            return;
        }
    }
    if (s->n)
        site_syms_frame_text(&m->sy, s, 0, out);
    else
        sb_adds(out, "(no stack)");
}

/* LEB128 of v; p has room for 10 bytes. */
static size_t put_varint(unsigned char *p, uint64_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        p[n++] = (unsigned char)(v | 0x80);
        v >>= 7;
    }
    p[n++] = (unsigned char)v;
    return n;
}

static uint64_t zigzag(int64_t d)
{
    return ((uint64_t)d << 1) ^ (uint64_t)(d >> 63);
}

/* The allocations as six columns of varints, one column after the other
 * (spec/heap.md section 4): consecutive allocations are close in time and
 * often in address, so the deltas are a byte or two and deflate finds the
 * repeats. Values the page keeps as u32 are clamped as before. */
static int encode_columns(const heap_model *m, const layout *L, uint64_t unit, unsigned char **out,
                          size_t *out_len)
{
    unsigned char *p = malloc(m->n * 6 * 10 + 1);
    if (!p)
        return -1;
    size_t k = 0;
    uint64_t prev = 0;
    for (size_t i = 0; i < m->n; i++) { /* address (units), delta from the previous */
        uint64_t y = L->y[i] / unit;
        k += put_varint(p + k, zigzag((int64_t)(y - prev)));
        prev = y;
    }
    for (size_t i = 0; i < m->n; i++) { /* height (units) */
        uint64_t h = (m->a[i].size + unit - 1) / unit;
        k += put_varint(p + k, h ? (h > 0xffffffffu ? 0xffffffffu : h) : 1);
    }
    prev = 0;
    for (size_t i = 0; i < m->n; i++) { /* allocating event, delta from the previous */
        uint64_t t0 = m->a[i].t0 > 0xfffffffeu ? 0xfffffffeu : m->a[i].t0;
        k += put_varint(p + k, zigzag((int64_t)(t0 - prev)));
        prev = t0;
    }
    for (size_t i = 0; i < m->n; i++) { /* lifetime + 1; 0: never freed */
        const heap_alloc *a = &m->a[i];
        uint64_t t0 = a->t0 > 0xfffffffeu ? 0xfffffffeu : a->t0;
        uint64_t t1 = a->t1 > 0xfffffffeu ? 0xfffffffeu : a->t1;
        k += put_varint(p + k, a->t1 == HEAP_LIVE ? 0 : t1 >= t0 ? t1 - t0 + 1 : 1);
    }
    for (size_t i = 0; i < m->n; i++) /* site */
        k += put_varint(p + k, m->a[i].site);
    for (size_t i = 0; i < m->n; i++) /* size (bytes) */
        k += put_varint(p + k, m->a[i].size > 0xffffffffu ? 0xffffffffu : m->a[i].size);
    *out = p;
    *out_len = k;
    return 0;
}

static int write_html(const heap_model *m, const layout *L, const uint32_t *rank, output *out)
{
    uint64_t unit = 1;
    while (L->y_total / unit >= 0xfffffff0u)
        unit *= 2;
    strbuf o = STRBUF_INIT;
    sb_adds(&o, "{\"title\":");
    char title[512];
    snprintf(title, sizeof title, "%s: %zu allocations, peak %llu bytes, %llu bytes leaked",
             m->name, m->n, (unsigned long long)m->peak_bytes, (unsigned long long)m->live_bytes);
    html_json_string(&o, title, strlen(title));
    sb_printf(&o, ",\"n\":%zu,\"t_end\":%llu,\"unit\":%llu,\"y_total\":%llu,\"peak_bytes\":%llu,"
                  "\"peak_t\":%llu,\"regions\":[",
              m->n, (unsigned long long)m->events, (unsigned long long)unit,
              (unsigned long long)(L->y_total / unit + 1), (unsigned long long)m->peak_bytes,
              (unsigned long long)m->peak_t);
    for (size_t i = 0; i < L->n_regions; i++)
        sb_printf(&o, "%s[\"%llu\",%llu]", i ? "," : "", (unsigned long long)L->regions[i].start,
                  (unsigned long long)(L->regions[i].y0 / unit));
    sb_adds(&o, "],\"sites\":[");
    strbuf t = STRBUF_INIT;
    for (size_t i = 0; i < m->st.n_sites; i++) {
        const site *s = &m->st.sites[i];
        sb_printf(&o, "%s{\"rank\":%u,\"count\":%llu,\"bytes\":%llu,\"stack\":", i ? "," : "",
                  rank[i], (unsigned long long)s->count, (unsigned long long)s->bytes);
        sb_clear(&t);
        site_stack_text(m, s, &t);
        html_json_string(&o, t.data ? t.data : "", t.len);
        if (rank[i] < NAMED_SITES) {
            sb_clear(&t);
            site_name(m, s, &t);
            sb_adds(&o, ",\"name\":");
            html_json_string(&o, t.data ? t.data : "", t.len);
        }
        sb_addc(&o, '}');
    }
    sb_free(&t);
    sb_adds(&o, "],\"notes\":");
    char notes[512] = "";
    if (m->kind == HEAP_IN_LWS)
        snprintf(notes, sizeof notes, "~m# records carry no addresses or frees: the "
                                      "allocations are laid out in log order, all live.");
    else if (m->unmatched_frees || m->free_missing)
        snprintf(notes, sizeof notes, "%llu frees matched no allocation; %llu allocations lost "
                                      "their free (address reused).",
                 (unsigned long long)m->unmatched_frees, (unsigned long long)m->free_missing);
    html_json_string(&o, notes, strlen(notes));
    unsigned char *raw = NULL, *packed = NULL;
    size_t raw_len = 0, packed_len = 0;
    const char *enc = "raw";
    if (encode_columns(m, L, unit, &raw, &raw_len) < 0) {
        sb_free(&o);
        diag(DIAG_ERROR, NULL, NULL, "out of memory");
        return -1;
    }
    packed = raw, packed_len = raw_len;
#if BTP_CLI_HAVE_ZLIB
    /* The page inflates it with the browser's DecompressionStream; level 1:
     * the varints leave little for higher levels to find (1-2 %), at a
     * third of the time. */
    uLongf cap = compressBound((uLong)raw_len);
    unsigned char *z = malloc(cap);
    if (z && compress2(z, &cap, raw, (uLong)raw_len, 1) == Z_OK) {
        packed = z, packed_len = cap, enc = "deflate";
    } else {
        free(z);
    }
#endif
    sb_printf(&o, ",\"enc\":\"%s\",\"raw_len\":%zu,\"cols\":\"", enc, raw_len);
    char *b64 = sb_reserve(&o, BTP_BASE64_ENCODED_LEN(packed_len) + 1);
    size_t b64_len = 0;
    if (b64)
        btp_base64_encode(packed, packed_len, b64, BTP_BASE64_ENCODED_LEN(packed_len) + 1,
                          BTP_B64_PAD, &b64_len);
    if (packed != raw)
        free(packed);
    free(raw);
    if (!b64) { /* a page without its data would draw an empty heap */
        sb_free(&o);
        diag(DIAG_ERROR, NULL, NULL, "out of memory");
        return -1;
    }
    o.len += b64_len;
    sb_adds(&o, "\"}");
    const char *mark = strstr(heap_map_html, "/*BTPACK_HEAP_DATA*/");
    int rc = 0;
    if (o.oom || !mark) {
        diag(DIAG_ERROR, NULL, NULL, "out of memory");
        rc = -1;
    } else if (output_write(out, heap_map_html, (size_t)(mark - heap_map_html)) < 0 ||
               output_write(out, o.data, o.len) < 0 ||
               output_write(out, mark + 20, strlen(mark + 20)) < 0) {
        rc = -1;
    }
    sb_free(&o);
    return rc;
}

static const uint32_t palette[NAMED_SITES] = {0x1f77b4, 0xff7f0e, 0x2ca02c, 0xd62728,
                                               0x9467bd, 0x8c564b, 0xe377c2, 0x17becf,
                                               0xbcbd22, 0x7f7f7f, 0x393b79, 0xad494a};

static uint32_t site_colour(uint32_t s, uint32_t r)
{
    if (r < NAMED_SITES)
        return palette[r];
    uint32_t h = s * 2654435761u;
    return (((h >> 16) & 0x7f) + 96) << 16 | (((h >> 8) & 0x7f) + 96) << 8 | ((h & 0x7f) + 96);
}

/* The same picture as the page's first view, rasterized here and written
 * as one rect per run of equal pixels in a row. */
static int write_svg(const heap_model *m, const layout *L, const uint32_t *rank, output *out)
{
    enum { W = 1200, H = 600 };
    uint32_t *px = malloc((size_t)W * H * sizeof *px);
    if (!px) {
        diag(DIAG_ERROR, NULL, NULL, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < (size_t)W * H; i++)
        px[i] = 0xffffffu;
    double tend = m->events ? (double)m->events : 1, ymax = L->y_total ? (double)L->y_total : 1;
    for (size_t i = 0; i < m->n; i++) {
        const heap_alloc *a = &m->a[i];
        double t1 = a->t1 == HEAP_LIVE ? tend : (double)a->t1;
        int x0 = (int)((double)a->t0 / tend * W), x1 = (int)(t1 / tend * W + 0.999);
        int r1 = H - (int)((double)L->y[i] / ymax * H);
        int r0 = H - (int)((double)(L->y[i] + a->size) / ymax * H + 0.999);
        if (x1 <= x0)
            x1 = x0 + 1;
        if (r1 <= r0)
            r1 = r0 + 1;
        x0 = x0 < 0 ? 0 : x0, x1 = x1 > W ? W : x1, r0 = r0 < 0 ? 0 : r0, r1 = r1 > H ? H : r1;
        uint32_t c = site_colour(a->site, rank[a->site]);
        for (int r = r0; r < r1; r++)
            for (int x = x0; x < x1; x++)
                px[(size_t)r * W + (size_t)x] = c;
    }
    strbuf o = STRBUF_INIT;
    sb_printf(&o,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d "
            "%d\" shape-rendering=\"crispEdges\">\n<title>btpack heap map: %zu allocations, peak "
            "%llu bytes</title>\n<rect width=\"%d\" height=\"%d\" fill=\"#fff\"/>\n",
            W, H + 20, W, H + 20, m->n, (unsigned long long)m->peak_bytes, W, H + 20);
    for (int r = 0; r < H; r++)
        for (int x = 0; x < W;) {
            uint32_t c = px[(size_t)r * W + (size_t)x];
            int e = x + 1;
            while (e < W && px[(size_t)r * W + (size_t)e] == c)
                e++;
            if (c != 0xffffffu)
                sb_printf(&o,
                          "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"1\" fill=\"#%06x\"/>\n",
                          x, r, e - x, c);
            x = e;
            if (o.len >= 65536 && !o.oom) { /* in pieces: a busy map is megabytes */
                output_write(out, o.data, o.len);
                sb_clear(&o);
            }
        }
    sb_printf(&o, "<text x=\"4\" y=\"%d\" font-family=\"sans-serif\" font-size=\"12\">addresses "
               "(up) over %llu allocation events (right); peak %llu bytes at event %llu</text>\n"
               "</svg>\n",
            H + 15, (unsigned long long)m->events, (unsigned long long)m->peak_bytes,
            (unsigned long long)m->peak_t);
    free(px);
    int rc = 0;
    if (o.oom) {
        diag(DIAG_ERROR, NULL, NULL, "out of memory");
        rc = -1;
    } else if (output_write(out, o.data, o.len) < 0) {
        rc = -1;
    }
    sb_free(&o);
    return rc;
}

static const heap_model *rank_model;

static int by_site_bytes(const void *a, const void *b)
{
    const site *x = &rank_model->st.sites[*(const uint32_t *)a],
               *y = &rank_model->st.sites[*(const uint32_t *)b];
    return (x->bytes < y->bytes) - (x->bytes > y->bytes);
}

int heap_map(int argc, char **argv)
{
    static const struct option opts[] = {{"output", required_argument, NULL, 'o'},
                                         HEAP_READ_LONGOPTS,
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    heap_read_opts ro = {HEAP_IN_AUTO, NULL,
                         {.word_bits = 64, .max_frames = CLI_DEFAULT_MAX_FRAMES}};
    const char *out = NULL;
    int ch;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "o:hv", opts, NULL)) != -1) {
        int r = heap_read_option("heap map", ch, optarg, &ro);
        if (r < 0)
            return EXIT_USAGE;
        if (r)
            continue;
        switch (ch) {
        case 'o': out = optarg; break;
        case 'h':
            fputs(map_help, stdout);
            fputs(cli_log_limits_help, stdout);
            fputs(map_examples, stdout);
            return EXIT_OK;
        default: return cli_bad_option("heap map", argv);
        }
    }
    if (argc - optind > 1)
        return cli_usage_error("heap map", "one input at a time");
    if (ro.elf && cli_check_elf(ro.elf) < 0)
        return EXIT_BAD_INPUT;
    size_t ol = out ? strlen(out) : 0;
    int svg = ol > 4 && strcasecmp(out + ol - 4, ".svg") == 0; /* map.SVG too */
    heap_model m;
    int rc = heap_model_load(&m, optind < argc ? argv[optind] : NULL, ro.from, &ro.cli, ro.elf,
                             1);
    if (rc < 0 || (rc != EXIT_OK && !ro.cli.keep_going)) {
        if (rc < 0)
            diag(DIAG_ERROR, NULL, NULL, "out of memory");
        heap_model_free(&m);
        return EXIT_BAD_INPUT;
    }
    if (m.synthetic) {
        /* the address axis is the picture: a bump counter's would be a lie */
        diag(DIAG_ERROR, m.name, NULL,
             "recorded with --no-addresses: the log has no heap addresses to map "
             "(record again without --no-addresses; heap report works on it)");
        heap_model_free(&m);
        return EXIT_BAD_INPUT;
    }
    if (!m.has_stacks && m.n) {
        /* Colour by size class: replace the one empty stack by classes. */
        sites cls = SITES_INIT;
        for (size_t i = 0; i < m.n; i++) {
            btp_frame f = {(uint64_t)size_class(m.a[i].size), BTP_FRAME_PC};
            uint32_t k = sites_of_frames(&cls, &f, 1);
            if (!k) {
                diag(DIAG_ERROR, NULL, NULL, "out of memory");
                sites_free(&cls);
                heap_model_free(&m);
                return EXIT_BAD_INPUT;
            }
            m.a[i].site = k - 1;
        }
        sites_free(&m.st);
        m.st = cls;
        by_class = 1;
    }
    heap_model_site_totals(&m);
    /* Rank the stacks by bytes: the largest get colours of their own, and
     * a symbolized stack for hovering. */
    uint32_t *ord = malloc((m.st.n_sites + 1) * sizeof *ord);
    uint32_t *rank = malloc((m.st.n_sites + 1) * sizeof *rank);
    site **shown = malloc((SYMBOLIZED_SITES + 1) * sizeof *shown);
    layout L;
    if (!ord || !rank || !shown || lay_out(&m, &L) < 0) {
        diag(DIAG_ERROR, NULL, NULL, "out of memory");
        free(ord), free(rank), free(shown);
        heap_model_free(&m);
        return EXIT_BAD_INPUT;
    }
    for (uint32_t i = 0; i < m.st.n_sites; i++)
        ord[i] = i;
    rank_model = &m;
    qsort(ord, m.st.n_sites, sizeof *ord, by_site_bytes);
    size_t n_shown = 0;
    for (uint32_t k = 0; k < m.st.n_sites; k++) {
        rank[ord[k]] = k;
        if (k < SYMBOLIZED_SITES)
            shown[n_shown++] = &m.st.sites[ord[k]];
    }
    if (!svg && !by_class)
        site_syms_resolve(&m.sy, shown, n_shown);
    output o;
    if (output_open(&o, out, argv + optind, argc - optind, 0) != 0) {
        rc = EXIT_BAD_INPUT;
    } else {
        int wrc = svg ? write_svg(&m, &L, rank, &o) : write_html(&m, &L, rank, &o);
        if (output_close(&o, wrc == 0) < 0 || wrc < 0)
            rc = EXIT_BAD_INPUT;
    }
    free(L.y);
    free(L.regions);
    free(ord);
    free(rank);
    free(shown);
    heap_model_free(&m);
    return rc;
}
