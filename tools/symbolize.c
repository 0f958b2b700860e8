/* btpack symbolize: every frame of every trace as image, function (with
 * inlined frames) and file:line, in text, JSON Lines or LLVM symbolizer
 * markup. Input in any format the CLI reads, or crash records. All traces
 * are read first so that each file's debug information is read (or its
 * addr2line started) once for the whole input. */
#include "cli.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "diag.h"
#include "imagemap_text.h"
#include "input.h"
#include "output.h"
#include "symbolize/symbolizer.h"

static const char symbolize_help[] =
    "usage: btpack symbolize [--from FMT] [--to text|json|markup] [--maps FILE]\n"
    "                        [--elf FILE] [--debug-dir DIR]... [--backend NAME]\n"
    "                        [--addr2line PROG] [options] [IN...]\n"
    "\n"
    "Print every frame of every trace in IN (default stdin; several are read\n"
    "in order, traces numbered on across them) with its index,\n"
    "address, image (file + offset from where it was loaded), function\n"
    "(demangled C++), the functions inlined at that point and file:line.\n"
    "A return address is looked up at address - 1, the call it returns from.\n"
    "\n"
    "Addresses are placed in images with the image map the input carries (a\n"
    "crash record's image or map lines, a trace log's stored maps), else\n"
    "--maps. Debug information is found in the image's file when it has DWARF,\n"
    "else by build ID in DIR/.build-id/xx/yyyy.debug, by its .gnu_debuglink\n"
    "and by path under DIR, for each --debug-dir DIR and /usr/lib/debug. A file\n"
    "whose build ID differs from the one recorded is not used. Maps text has\n"
    "no build IDs: a file whose inode is not the one its maps line shows is\n"
    "read all the same, and each of its frames says its names may be another\n"
    "version's. What cannot be\n"
    "known (missing file, wrong build ID, stripped binary, an address in no\n"
    "image) is said in a note on the frame, never guessed. When the back end\n"
    "fails on a file (cannot run, dies), its frames keep the function names\n"
    "of the symbol table, say why they have no line, and the exit status is 1.\n"
    "\n"
    "options:\n"
    "  --from FMT        input format (below); without it, read from each input\n"
    "                    as `btpack convert --help` says\n"
    "  --to FORMAT       text (default on a terminal), json (JSON Lines: one\n"
    "                    line per trace, the default otherwise) or markup (LLVM\n"
    "                    symbolizer markup: {{{module}}}, {{{mmap}}}, {{{bt}}},\n"
    "                    for llvm-symbolizer --filter-markup and the like)\n"
    "  --maps FILE       /proc/PID/maps text of the process (instead of the\n"
    "                    input's own image map)\n"
    "  --elf FILE        addresses in no image (or all, without a map) are\n"
    "                    FILE's addresses as linked (FILE must be readable)\n"
    "  --debug-dir DIR   also look for debug files here (before /usr/lib/debug)\n"
    "  --backend NAME    libdw (in-process DWARF; the default when built in) or\n"
    "                    addr2line (one process per file); this build has: %s\n"
    "  --addr2line PROG  the addr2line back end, running PROG\n"
    "  --word-bits N, --strict, --keep-going, -v, --progress, --max-warnings N,\n"
    "  --max-frames N, --thread N|crashed|all:\n"
    "                    as for convert\n"
    "\n"
    "input formats:\n";

static const char symbolize_examples[] =
    "\n"
    "examples:\n"
    "  build/tools/crash_example segv crash.txt; btpack symbolize crash.txt\n"
    "  btpack symbolize --to json crash.txt\n"
    "  btpack symbolize --from addrs --maps app.maps stack.txt\n"
    "  btpack symbolize --from trace --maps tests/data/corpus/py311_regrtest.maps \\\n"
    "      tests/data/corpus/py311_regrtest.trace.xz | head\n"
    "  btpack symbolize --to markup crash.txt | llvm-symbolizer --filter-markup\n";

typedef enum out_kind { OUT_TEXT, OUT_JSON, OUT_MARKUP } out_kind;

/* A trace kept until the symbolizer has run. */
typedef struct kept {
    size_t first, n;   /* frames[first..first+n), handles alike */
    unsigned word_bits;
    int truncated;
    char *context;
    src_loc loc;
} kept;

typedef struct run {
    symbolizer *sy;
    const btp_image_map *override; /* --maps */
    kept *traces;
    size_t n_traces, cap_traces;
    btp_frame *frames;
    long *handles;
    size_t n_frames, cap_frames, cap_handles;
} run;

static int keep(void *ctx, trace *t)
{
    run *r = ctx;
    if (t->event == TRACE_FREE)
        return 0;
    if (array_grow(&r->traces, &r->cap_traces, r->n_traces + 1, sizeof *r->traces) < 0 ||
        array_grow(&r->frames, &r->cap_frames, r->n_frames + t->n, sizeof *r->frames) < 0 ||
        array_grow(&r->handles, &r->cap_handles, r->n_frames + t->n, sizeof *r->handles) < 0)
        goto oom;
    if (sym_set_map(r->sy, r->override ? r->override : t->image_map) < 0)
        goto oom;
    kept *k = &r->traces[r->n_traces];
    *k = (kept){r->n_frames, t->n, t->word_bits, t->truncated, NULL, t->loc};
    if (t->context && !(k->context = strdup(t->context)))
        goto oom;
    for (size_t i = 0, at = r->n_frames; i < t->n_runs; i++) {
        btp_frame f = t->runs[i].frame;
        long h = -1;
        if (f.kind != BTP_FRAME_OMIT && (h = sym_add(r->sy, f.value, f.kind)) < 0) {
            free(k->context);
            goto oom;
        }
        for (uint64_t c = 0; c < t->runs[i].count; c++, at++) {
            r->frames[at] = f;
            r->handles[at] = h;
        }
    }
    r->n_frames += t->n;
    r->n_traces++;
    return 0;
oom:
    diag(DIAG_ERROR, NULL, NULL, "out of memory");
    return -1;
}

static int same_file(void *ctx, const char *path, uint64_t dev, uint64_t ino)
{
    return maps_index_same_file(ctx, path, dev, ino);
}

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

static const char *kind_name(btp_frame_kind k)
{
    return trace_kind_name(k);
}

/* ---- text ---------------------------------------------------------------- */

static void put_text(strbuf *o, const run *r, const kept *k, size_t ti)
{
    if (k->context)
        sb_printf(o, "%s\n", k->context);
    else if (r->n_traces > 1)
        sb_printf(o, "trace %zu\n", ti + 1);
    int width = k->word_bits / 4;
    for (size_t i = 0; i < k->n; i++) {
        btp_frame f = r->frames[k->first + i];
        if (f.kind == BTP_FRAME_OMIT) {
            sb_printf(o, "    (%llu frames omitted)\n", (unsigned long long)f.value);
            continue;
        }
        sym_answer a;
        sym_get(r->sy, r->handles[k->first + i], &a);
        const sym_loc *l = a.n_locs ? &a.locs[0] : NULL;
        sb_printf(o, "#%-2zu 0x%0*llx in %s", i, width, (unsigned long long)f.value,
                  l && l->function ? l->function : "??");
        if (l && l->file)
            sb_printf(o, " at %s:%u", l->file, l->line);
        if (a.image)
            sb_printf(o, " (%s+0x%llx)", base_name(a.image), (unsigned long long)a.offset);
        if (f.kind == BTP_FRAME_ASYNC)
            sb_adds(o, " [async]");
        if (a.note)
            sb_printf(o, " [%s]", a.note);
        sb_addc(o, '\n');
        for (size_t j = 1; j < a.n_locs; j++) {
            l = &a.locs[j];
            sb_printf(o, "    inlined into %s", l->function ? l->function : "??");
            if (l->file)
                sb_printf(o, " at %s:%u", l->file, l->line);
            sb_addc(o, '\n');
        }
    }
    if (k->truncated)
        sb_adds(o, "    (truncated: the stack goes on)\n");
    sb_addc(o, '\n');
}

/* ---- JSON Lines ------------------------------------------------------------ */

static void put_json(strbuf *o, const run *r, const kept *k, size_t ti)
{
    sb_printf(o, "{\"trace\":%zu,", ti + 1);
    if (k->context) {
        sb_adds(o, "\"context\":");
        sb_json_string(o, k->context, strlen(k->context));
        sb_addc(o, ',');
    }
    sb_printf(o, "\"word_bits\":%u,\"truncated\":%s,\"frames\":[", k->word_bits,
              k->truncated ? "true" : "false");
    for (size_t i = 0; i < k->n; i++) {
        btp_frame f = r->frames[k->first + i];
        if (i)
            sb_addc(o, ',');
        sb_printf(o, "{\"index\":%zu,\"type\":\"%s\",", i, kind_name(f.kind));
        if (f.kind == BTP_FRAME_OMIT) {
            sb_printf(o, "\"count\":%llu}", (unsigned long long)f.value);
            continue;
        }
        sym_answer a;
        sym_get(r->sy, r->handles[k->first + i], &a);
        sb_printf(o, "\"addr\":\"0x%llx\"", (unsigned long long)f.value);
        sym_answer_json(o, &a);
        sb_addc(o, '}');
    }
    sb_adds(o, "]}\n");
}

/* ---- LLVM symbolizer markup --------------------------------------------------- */

/* The images this trace's frames are in, as module + mmap elements, then a
 * bt element per frame (pc or ra, so a consumer subtracts 1 from return
 * addresses itself). Symbolization is the consumer's: it finds the files by
 * build ID, so images without one get no module element. */
static void put_markup(strbuf *o, const run *r, const kept *k)
{
    sb_adds(o, "{{{reset}}}\n");
    const char *seen[64];
    uint64_t seen_base[64];
    size_t n_seen = 0;
    for (size_t i = 0; i < k->n; i++) {
        btp_frame f = r->frames[k->first + i];
        sym_answer a;
        if (f.kind == BTP_FRAME_OMIT)
            continue;
        sym_get(r->sy, r->handles[k->first + i], &a);
        if (!a.image || !a.build_id || !a.base)
            continue;
        size_t m = 0;
        while (m < n_seen && !(seen[m] == a.image && seen_base[m] == a.base))
            m++;
        if (m < n_seen || n_seen == 64)
            continue;
        seen[n_seen] = a.image;
        seen_base[n_seen++] = a.base;
        sb_printf(o, "{{{module:%zu:%s:elf:%s}}}\n", m, base_name(a.image), a.build_id);
        sb_printf(o, "{{{mmap:0x%llx:0x%llx:load:%zu:rx:0x%llx}}}\n",
                  (unsigned long long)a.base, (unsigned long long)(a.image_end - a.base), m,
                  (unsigned long long)a.link_base);
    }
    for (size_t i = 0; i < k->n; i++) {
        btp_frame f = r->frames[k->first + i];
        if (f.kind == BTP_FRAME_OMIT)
            sb_printf(o, "(%llu frames omitted)\n", (unsigned long long)f.value);
        else
            sb_printf(o, "{{{bt:%zu:0x%llx:%s}}}\n", i, (unsigned long long)f.value,
                      f.kind == BTP_FRAME_RA ? "ra" : "pc");
    }
}

/* ---- the command ------------------------------------------------------------- */

int cmd_symbolize(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"from", required_argument, NULL, 'f'},
        {"to", required_argument, NULL, 't'},
        {"maps", required_argument, NULL, 'M'},
        {"elf", required_argument, NULL, 'E'},
        {"debug-dir", required_argument, NULL, 'D'},
        {"backend", required_argument, NULL, 'B'},
        {"addr2line", required_argument, NULL, 'A'},
        CLI_READ_LONGOPTS,
        {"help", no_argument, NULL, 'h'},
        {0, 0, 0, 0},
    };
    cli_options opt = {.word_bits = 64, .max_frames = CLI_DEFAULT_MAX_FRAMES};
    const format *from = NULL;
    const char *maps = NULL, *to = NULL;
    const char *dirs[32];
    sym_options so = {0};
    int ch;
    opterr = 0;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "hv", longopts, NULL)) != -1) {
        switch (ch) {
        case 'f':
            if (cli_format_arg("symbolize", optarg, 1, 0, &from) < 0)
                return EXIT_USAGE;
            break;
        case 't':
            to = optarg;
            if (strcmp(to, "text") && strcmp(to, "json") && strcmp(to, "markup"))
                return cli_usage_error("symbolize", "--to takes text, json or markup, not '%s'",
                                       to);
            break;
        case 'M':
            maps = optarg;
            break;
        case 'E':
            so.elf = optarg;
            break;
        case 'D':
            if (so.n_debug_dirs == sizeof dirs / sizeof dirs[0])
                return cli_usage_error("symbolize", "at most %zu --debug-dir",
                                       sizeof dirs / sizeof dirs[0]);
            dirs[so.n_debug_dirs++] = optarg;
            break;
        case 'B':
            so.backend = optarg;
            break;
        case 'A':
            so.addr2line = optarg;
            so.backend = "addr2line";
            break;
        case 'h': {
            char names[64] = "";
            for (const char *const *b = sym_backends(); *b; b++)
                snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s",
                         b == sym_backends() ? "" : ", ", *b);
            printf(symbolize_help, names);
            cli_list_formats(stdout, 1, 0);
            fputs(symbolize_examples, stdout);
            return EXIT_OK;
        }
        default: {
            int rc = cli_shared_option("symbolize", ch, optarg, &opt, argv);
            if (rc >= 0)
                return rc;
        }
        }
    }
    if (so.elf && cli_check_elf(so.elf) < 0)
        return EXIT_BAD_INPUT;
    so.debug_dirs = dirs;
    out_kind out = !to ? (isatty(1) ? OUT_TEXT : OUT_JSON)
                   : strcmp(to, "text") == 0 ? OUT_TEXT
                   : strcmp(to, "json") == 0 ? OUT_JSON
                                             : OUT_MARKUP;
    if (from && cli_check_thread_option("symbolize", &opt, from))
        return EXIT_USAGE;
    if (out == OUT_MARKUP)
        so.images_only = 1; /* the consumer symbolizes */

    run r = {0};
    output dest;
    output_stdio(&dest);
    owned_map mapsfile = {0};
    maps_index *maps_ix = NULL; /* points into maps_text */
    strbuf maps_text = STRBUF_INIT;
    int rc = EXIT_OK;
    char why[256];
    if (maps) {
        input in;
        size_t off = 0;
        btp_status st = BTP_E_IO;
        if (input_open(&in, maps) == 0) {
            if (input_read_all(&in, &maps_text) == 0)
                st = owned_map_procmaps(&mapsfile, maps_text.data, maps_text.len, opt.word_bits,
                                        &off);
            input_close(&in);
        } else {
            sb_free(&maps_text);
            return EXIT_BAD_INPUT; /* input_open said why */
        }
        if (st == BTP_OK && !(maps_ix = maps_index_new(maps_text.data, maps_text.len)))
            st = BTP_E_OUT_OF_MEMORY;
        if (st != BTP_OK) {
            src_loc loc = {.offset = off, .has_offset = 1};
            diag(DIAG_ERROR, maps, &loc, "%s", btp_strerror(st));
            owned_map_free(&mapsfile);
            sb_free(&maps_text);
            return EXIT_BAD_INPUT;
        }
        r.override = &mapsfile.map;
        so.same_file = same_file;
        so.same_file_ctx = maps_ix;
    }
    r.sy = sym_new(&so, why, sizeof why);
    if (!r.sy) {
        maps_index_free(maps_ix);
        sb_free(&maps_text);
        owned_map_free(&mapsfile);
        return cli_usage_error("symbolize", "%s", why);
    }
    rc = read_traces(from, &opt, argv + optind, argc - optind, keep, &r);
    if (r.n_traces && sym_resolve(r.sy) < 0) {
        diag(DIAG_ERROR, NULL, NULL, "out of memory");
        rc = EXIT_BAD_INPUT;
    } else {
        strbuf o = STRBUF_INIT;
        for (size_t i = 0; i < r.n_traces; i++) {
            sb_clear(&o);
            if (out == OUT_TEXT)
                put_text(&o, &r, &r.traces[i], i);
            else if (out == OUT_JSON)
                put_json(&o, &r, &r.traces[i], i);
            else
                put_markup(&o, &r, &r.traces[i]);
            if (o.oom)
                diag(DIAG_ERROR, NULL, NULL, "out of memory");
            if (o.oom || output_write(&dest, o.data, o.len) < 0) { /* reported once */
                rc = EXIT_BAD_INPUT;
                break;
            }
        }
        sb_free(&o);
    }
    if (output_close(&dest, 1) < 0)
        rc = EXIT_BAD_INPUT;
    if (sym_backends_failed("symbolize", r.sy))
        rc = EXIT_BAD_INPUT;
    for (size_t i = 0; i < r.n_traces; i++)
        free(r.traces[i].context);
    free(r.traces);
    free(r.frames);
    free(r.handles);
    sym_free(r.sy);
    maps_index_free(maps_ix);
    sb_free(&maps_text);
    owned_map_free(&mapsfile);
    return rc;
}
