/*
 * Fuzz target: one CLI format's reader (FUZZ_FORMAT, set by the build: hex,
 * b64, json, addrs, trace, lws, lws-b, cbf, crash, ...), through the CLI's own read loop
 * (read_traces: input, line reader, format, error reporting, --keep-going);
 * FUZZ_FORMAT "auto" gives no format: the input's own is told from its
 * first bytes (format_detect()) and read, with the same properties.
 *
 * Input: byte 0 holds options (bit 0 --strict, bits 1-2 --word-bits 16, 32,
 * 64, 64, bit 3 --keep-going); the rest is the file the CLI reads. It is
 * handed over as /proc/self/fd/N of a memory file, as a user's file would
 * be. Properties:
 *  - every trace the reader gives is well formed: a valid word size, at
 *    most --max-frames frames, kinds and values that fit the word, no frames
 *    on a free (an omit of 0 frames, which the default CBF policy reads, is
 *    kept by the trace model); an image map it carries (crash records) has
 *    the trace's word size and images that fit it, with base <= end of
 *    text, build IDs of at most 64 bytes and terminated strings;
 *  - for formats that also write: writing the traces and reading that
 *    output again (same options) gives the same traces, with no bad record
 *    (a writer may refuse a trace its format cannot express; that trace is
 *    left out of the comparison); formats built with FUZZ_KEEPS_CONTEXT
 *    (swift, swift-crashlog) must also give back each trace's image map,
 *    architecture, thread name and crashed flag.
 * The CLI's messages about bad input would swamp the fuzzer's output, so
 * stdio's stderr points to /dev/null while the CLI runs (sanitizer reports
 * and FUZZ_CHECK write to file descriptor 2 and are unaffected).
 */
#include "fuzz.h"
#include "runs.h"

#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cli.h"

#ifndef FUZZ_FORMAT
#error "build with -DFUZZ_FORMAT=\"<format name>\""
#endif

/* Small enough that a hostile repeat count costs little per execution. */
#define MAX_FRAMES 4096

typedef struct traces {
    trace *v;
    char **context; /* context_of() of each trace */
    size_t n, cap, ctx_cap;
} traces;

static const format *fmt;
static int detect;
static cli_options opt;
static int fd_in = -1, fd_out = -1;
static FILE *devnull;
static traces first, second;

static void check_trace(const trace *t)
{
    FUZZ_CHECK(btp_word_bits_valid(t->word_bits), "word bits %u", t->word_bits);
    FUZZ_CHECK(t->n <= opt.max_frames, "%zu frames, max %zu", t->n, opt.max_frames);
    FUZZ_CHECK(t->event == TRACE_PLAIN || t->event == TRACE_ALLOC || t->event == TRACE_FREE,
               "event %d", t->event);
    if (t->event == TRACE_FREE)
        FUZZ_CHECK(t->n == 0, "frames on a free");
    uint64_t mask = btp_word_mask(t->word_bits);
    uint64_t total = 0;
    for (size_t i = 0; i < t->n_runs; i++) {
        btp_frame f = t->runs[i].frame;
        FUZZ_CHECK((unsigned)f.kind <= BTP_FRAME_OMIT, "run %zu kind %d", i, f.kind);
        FUZZ_CHECK(f.value <= mask, "run %zu beyond the word", i);
        FUZZ_CHECK(t->runs[i].count >= 1, "run %zu of 0 frames", i);
        FUZZ_CHECK(i == 0 || f.kind != t->runs[i - 1].frame.kind ||
                       f.value != t->runs[i - 1].frame.value,
                   "runs %zu and %zu not merged", i - 1, i);
        total += t->runs[i].count;
    }
    FUZZ_CHECK(total == t->n, "runs hold %llu frames, n says %zu", (unsigned long long)total,
               t->n);
    const btp_image_map *m = t->image_map;
    if (!m)
        return;
    /* A map's word size is its own: Swift's runtime writes a 64-bit
     * backtrace next to a 32-bit imageMap when asked to, and reads both
     * (spec/cif.md, "The CLI"). */
    FUZZ_CHECK(btp_word_bits_valid(m->word_bits), "image map of %u bits", m->word_bits);
    mask = btp_word_mask(m->word_bits);
    FUZZ_CHECK(!m->n_images || m->images, "images without an array");
    for (size_t i = 0; i < m->n_images; i++) {
        const btp_image *im = &m->images[i];
        FUZZ_CHECK(im->base <= im->end_of_text && im->end_of_text <= mask, "image %zu", i);
        /* text readers keep BTP_IMAGE_MAX_BUILD_ID bytes; a Swift imageMap
         * (CIF) carries up to BTP_CIF_MAX_BUILD_ID, as Swift's runtime writes */
        FUZZ_CHECK(im->build_id_len <= BTP_CIF_MAX_BUILD_ID && (!im->build_id_len || im->build_id),
                   "build ID");
        /* strings are terminated (a sanitizer or the guard catches a run-off) */
        FUZZ_CHECK(!im->path || strlen(im->path) < ((size_t)1 << 20), "path");
        FUZZ_CHECK(!im->name || strlen(im->name) < ((size_t)1 << 20), "name");
    }
}

/* What a trace carries besides its frames, as text: architecture, thread,
 * and the image map (platform, images). NULL and "" are the same (formats
 * write absent strings as nothing). Names are the effective ones (the
 * path's last component when a map gives none). */
static char *context_of(const trace *t)
{
    strbuf sb = STRBUF_INIT;
    sb_printf(&sb, "arch=%s thread=%s crashed=%d", t->arch ? t->arch : "",
              t->thread_name ? t->thread_name : "", t->crashed);
    const btp_image_map *m = t->image_map;
    if (m) {
        sb_printf(&sb, " map %u-bit platform=%s images=%zu", m->word_bits,
                  m->platform ? m->platform : "", m->n_images);
        for (size_t i = 0; i < m->n_images; i++) {
            const btp_image *im = &m->images[i];
            const char *path = im->path ? im->path : "", *name = im->name;
            if (!name) {
                name = path;
                for (const char *c = path; *c; c++)
                    if (*c == '/' || *c == '\\')
                        name = c + 1;
            }
            sb_printf(&sb, "\n%llx-%llx %s %s id=", (unsigned long long)im->base,
                      (unsigned long long)im->end_of_text, path, name);
            sb_hex(&sb, im->build_id, im->build_id_len);
        }
    }
    FUZZ_CHECK(!sb.oom, "out of memory");
    return sb.data;
}

static char *dup_str(const char *s)
{
    if (!s)
        return NULL;
    char *d = strdup(s);
    FUZZ_CHECK(d != NULL, "out of memory");
    return d;
}

/* A deep copy of an image map (one allocation for the map and its images,
 * strings and build IDs separately), freed by free_map. */
static const btp_image_map *copy_map(const btp_image_map *m)
{
    if (!m)
        return NULL;
    btp_image_map *c = malloc(sizeof *c + m->n_images * sizeof(btp_image));
    FUZZ_CHECK(c != NULL, "out of memory");
    btp_image *ims = (btp_image *)(c + 1);
    *c = *m;
    c->platform = dup_str(m->platform);
    c->images = ims;
    for (size_t i = 0; i < m->n_images; i++) {
        ims[i] = m->images[i];
        ims[i].name = dup_str(m->images[i].name);
        ims[i].path = dup_str(m->images[i].path);
        unsigned char *id = NULL;
        if (m->images[i].build_id_len) {
            id = malloc(m->images[i].build_id_len);
            FUZZ_CHECK(id != NULL, "out of memory");
            memcpy(id, m->images[i].build_id, m->images[i].build_id_len);
        }
        ims[i].build_id = id;
    }
    return c;
}

static void free_map(const btp_image_map *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->n_images; i++) {
        free((void *)m->images[i].name);
        free((void *)m->images[i].path);
        free((void *)m->images[i].build_id);
    }
    free((void *)m->platform);
    free((void *)m);
}

static void free_copy(trace *t)
{
    trace_free(t);
    free((void *)t->arch);
    free((void *)t->thread_name);
    free_map(t->image_map);
}

/* Sink: check and keep a deep copy. */
static int collect(void *ctx, trace *t)
{
    traces *list = ctx;
    check_trace(t);
    list->v = fuzz_reserve(list->v, &list->cap, list->n + 1, sizeof *list->v);
    list->context = fuzz_reserve(list->context, &list->ctx_cap, list->n + 1,
                                 sizeof *list->context);
    list->context[list->n] = context_of(t);
    trace *copy = &list->v[list->n++];
    *copy = *t;
    /* what these point to belongs to the reader and changes with the next
     * record */
    copy->image_map = copy_map(t->image_map);
    copy->arch = dup_str(t->arch);
    copy->thread_name = dup_str(t->thread_name);
    copy->input = "fuzz"; /* the reader's name goes with its input */
    copy->runs = NULL;
    copy->flat = NULL;
    copy->flat_cap = 0;
    copy->cap = copy->n_runs;
    if (t->n_runs) {
        copy->runs = malloc(t->n_runs * sizeof *t->runs);
        FUZZ_CHECK(copy->runs != NULL, "out of memory");
        memcpy(copy->runs, t->runs, t->n_runs * sizeof *t->runs);
    }
    return 0;
}

static void clear(traces *list)
{
    for (size_t i = 0; i < list->n; i++) {
        free_copy(&list->v[i]);
        free(list->context[i]);
    }
    list->n = 0;
}

/* Runs are merged, so equal frames mean equal runs. */
static int same_runs(const trace_run *a, const trace_run *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (a[i].count != b[i].count || a[i].frame.kind != b[i].frame.kind ||
            a[i].frame.value != b[i].frame.value)
            return 0;
    return 1;
}

static int same_trace(const trace *a, const trace *b)
{
    return a->event == b->event && a->word_bits == b->word_bits &&
           a->truncated == b->truncated && a->n == b->n &&
           a->has_alloc_size == b->has_alloc_size &&
           (!a->has_alloc_size || a->alloc_size == b->alloc_size) &&
           a->has_pointer == b->has_pointer && (!a->has_pointer || a->pointer == b->pointer) &&
           a->n_runs == b->n_runs && same_runs(a->runs, b->runs, a->n_runs);
}

/* Put bytes in a memory file and run the CLI's reader on it. */
static int read_file(int fd, const void *data, size_t len, traces *out)
{
    char path[64], *paths[1] = {path};
    FUZZ_CHECK(ftruncate(fd, 0) == 0 && (len == 0 || pwrite(fd, data, len, 0) == (ssize_t)len),
               "memory file");
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    FILE *saved = stderr;
    stderr = devnull;
    int rc = read_traces(fmt, &opt, paths, 1, collect, out);
    stderr = saved;
    return rc;
}

static void init(void)
{
    detect = strcmp(FUZZ_FORMAT, "auto") == 0; /* no --from: format_detect() */
    fmt = detect ? NULL : format_find(FUZZ_FORMAT);
    FUZZ_CHECK(fmt != NULL || detect, "no format %s", FUZZ_FORMAT);
    fd_in = memfd_create("fuzz-in", 0);
    fd_out = memfd_create("fuzz-out", 0);
    devnull = fopen("/dev/null", "w");
    FUZZ_CHECK(fd_in >= 0 && fd_out >= 0 && devnull, "memfd_create or /dev/null");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const unsigned words[4] = {16, 32, 64, 64};
    if (!fmt && !detect)
        init();
    if (size < 1)
        return 0;
    opt = (cli_options){0};
    opt.strict = data[0] & 1;
    opt.word_bits = words[(data[0] >> 1) & 3];
    opt.keep_going = (data[0] >> 3) & 1;
    opt.max_frames = MAX_FRAMES;
    clear(&first);
    clear(&second);
    int rc = read_file(fd_in, data + 1, size - 1, &first);
    FUZZ_CHECK(rc == EXIT_OK || rc == EXIT_BAD_INPUT, "read_traces returned %d", rc);
    if (!fmt || !fmt->write || first.n == 0)
        return 0;

    /* Write what was read, as `btpack convert` would (a trace the format
     * cannot express is refused and left out). */
    writer w = {.fmt = fmt, .opt = &opt};
    strbuf out = STRBUF_INIT, one = STRBUF_INIT;
    FILE *saved = stderr;
    stderr = devnull;
    int ok = !fmt->begin || fmt->begin(&w, &out) == 0;
    size_t kept = 0;
    for (size_t i = 0; ok && i < first.n; i++) {
        if (first.v[i].event == TRACE_FREE && !fmt->events)
            continue; /* never given to such writers (and has no frames) */
        sb_clear(&one);
        w.committed = 0;
        if (fmt->write(&w, &first.v[i], &one) == 0) {
            if (one.len)
                sb_add(&out, one.data, one.len);
            first.context[kept] = first.context[i];
            first.v[kept++] = first.v[i];
        } else {
            /* what a streaming writer emitted stays, as in `convert` */
            if (w.committed)
                sb_add(&out, one.data, w.committed);
            free_copy(&first.v[i]);
            free(first.context[i]);
        }
    }
    first.n = kept;
    if (ok && fmt->end)
        ok = fmt->end(&w, &out) == 0;
    stderr = saved;
    FUZZ_CHECK(ok && !out.oom, "begin/end of the writer failed");

    rc = read_file(fd_out, out.data, out.len, &second);
    FUZZ_CHECK(rc == EXIT_OK, "the format cannot read its own output (%zu bytes)", out.len);
    FUZZ_CHECK(second.n == first.n, "%zu traces written, %zu read back", first.n, second.n);
    for (size_t i = 0; i < first.n; i++) {
        FUZZ_CHECK(same_trace(&first.v[i], &second.v[i]), "trace %zu changed", i);
#ifdef FUZZ_KEEPS_CONTEXT
        FUZZ_CHECK(strcmp(first.context[i], second.context[i]) == 0,
                   "trace %zu: image map or context changed:\n%s\n---\n%s", i, first.context[i],
                   second.context[i]);
#endif
    }
    sb_free(&out);
    sb_free(&one);
    return 0;
}
