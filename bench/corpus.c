/*
 * Corpus loader: read the file, decompress it if it is xz (liblzma when
 * built with it, else the `xz -dc` program), parse the `m` records.
 */
#include "corpus.h"
#include "codec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#if BENCH_HAVE_LZMA
#include <lzma.h>
#endif

/* Decompressed text larger than this is refused rather than allocated. */
#define MAX_TEXT ((size_t)4 << 30)

typedef struct buffer {
    unsigned char *p;
    size_t len, cap;
} buffer;

/* Make room for `more` bytes after len; doubles, never beyond MAX_TEXT. */
static int reserve(buffer *b, size_t more)
{
    if (more <= b->cap - b->len)
        return 0;
    if (more > MAX_TEXT - b->len)
        return -1;
    size_t cap = b->cap ? b->cap : 1 << 16;
    while (cap - b->len < more)
        cap = cap > MAX_TEXT / 2 ? MAX_TEXT : cap * 2;
    unsigned char *p = realloc(b->p, cap);
    if (!p)
        return -1;
    b->p = p;
    b->cap = cap;
    return 0;
}

/* Read all of fd into b (appending). */
static int read_all(int fd, buffer *b)
{
    for (;;) {
        if (reserve(b, 1 << 16) != 0)
            return -1;
        ssize_t n = read(fd, b->p + b->len, b->cap - b->len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        if (n == 0)
            return 0;
        b->len += (size_t)n;
    }
}

static int is_xz(const buffer *b)
{
    static const unsigned char magic[6] = {0xfd, '7', 'z', 'X', 'Z', 0x00};
    return b->len >= 6 && memcmp(b->p, magic, 6) == 0;
}

#if BENCH_HAVE_LZMA
static int unxz(const buffer *in, buffer *out, char *errbuf, size_t errlen)
{
    lzma_stream s = LZMA_STREAM_INIT;
    /* Concatenated streams like `xz -dc`; memory use bounded by liblzma's
     * default memlimit of the dictionary the stream asks for (<= 1.5 GiB). */
    if (lzma_stream_decoder(&s, UINT64_MAX, LZMA_CONCATENATED) != LZMA_OK)
        return bench_fail(errbuf, errlen, "liblzma: cannot start the decoder");
    s.next_in = in->p;
    s.avail_in = in->len;
    lzma_ret r;
    do {
        if (reserve(out, 1 << 20) != 0) {
            lzma_end(&s);
            return bench_fail(errbuf, errlen, "decompressed text too large");
        }
        s.next_out = out->p + out->len;
        s.avail_out = out->cap - out->len;
        r = lzma_code(&s, LZMA_FINISH);
        out->len = out->cap - s.avail_out;
    } while (r == LZMA_OK);
    lzma_end(&s);
    if (r != LZMA_STREAM_END)
        return bench_fail(errbuf, errlen, "xz data is corrupt (liblzma error %d)", (int)r);
    return 0;
}
#else
/* Without liblzma: run `xz -dc -- path` and read its output. */
static int unxz_path(const char *path, buffer *out, char *errbuf, size_t errlen)
{
    int fds[2];
    if (pipe(fds) != 0)
        return bench_fail(errbuf, errlen, "pipe: %s", strerror(errno));
    pid_t pid = fork();
    if (pid < 0)
        return bench_fail(errbuf, errlen, "fork: %s", strerror(errno));
    if (pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        execlp("xz", "xz", "-dc", "--", path, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    int rc = read_all(fds[0], out);
    close(fds[0]);
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (rc != 0)
        return bench_fail(errbuf, errlen, "reading from xz failed or text too large");
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return bench_fail(errbuf, errlen, "`xz -dc %s` failed (is xz installed?)", path);
    return 0;
}
#endif

/* Parse "0x" + 1..16 hex digits ending at a space or the line end. */
static int parse_hex(const char **pp, const char *end, uint64_t *out)
{
    const char *p = *pp;
    if (end - p < 3 || p[0] != '0' || (p[1] != 'x' && p[1] != 'X'))
        return -1;
    p += 2;
    uint64_t v = 0;
    int digits = 0;
    for (; p < end && *p != ' '; p++) {
        int d;
        if (*p >= '0' && *p <= '9')
            d = *p - '0';
        else if (*p >= 'a' && *p <= 'f')
            d = *p - 'a' + 10;
        else if (*p >= 'A' && *p <= 'F')
            d = *p - 'A' + 10;
        else
            return -1;
        if (++digits > 16)
            return -1;
        v = v << 4 | (uint64_t)d;
    }
    if (digits == 0)
        return -1;
    *out = v;
    *pp = p;
    return 0;
}

static int parse_dec(const char **pp, const char *end, uint64_t *out)
{
    const char *p = *pp;
    uint64_t v = 0;
    int digits = 0;
    for (; p < end && *p != ' '; p++) {
        if (*p < '0' || *p > '9')
            return -1;
        unsigned d = (unsigned)(*p - '0');
        if (v > (UINT64_MAX - d) / 10)
            return -1;
        v = v * 10 + d;
        digits++;
    }
    if (digits == 0)
        return -1;
    *out = v;
    *pp = p;
    return 0;
}

/* Grow an array of `size`-byte elements to hold at least n + 1. */
static int grow(void **arr, size_t *cap, size_t n, size_t size)
{
    if (n < *cap)
        return 0;
    size_t ncap = *cap ? *cap * 2 : 1024;
    if (ncap > SIZE_MAX / size)
        return -1;
    void *p = realloc(*arr, ncap * size);
    if (!p)
        return -1;
    *arr = p;
    *cap = ncap;
    return 0;
}

/* The header's word=N, if this comment is a stkshim header. */
static void header_word(const char *p, const char *end, unsigned *word_bits)
{
    static const char key[] = " word=";
    size_t klen = sizeof key - 1;
    for (; end - p >= (ptrdiff_t)(klen + 2); p++) {
        if (memcmp(p, key, klen) != 0)
            continue;
        if (memcmp(p + klen, "32", 2) == 0)
            *word_bits = 32;
        else if (memcmp(p + klen, "64", 2) == 0)
            *word_bits = 64;
        return;
    }
}

static int parse(const buffer *text, bench_corpus *c, char *errbuf, size_t errlen)
{
    size_t fcap = 0, scap = 0, acap = 0;
    const char *p = (const char *)text->p;
    const char *stop = p + text->len;
    size_t lineno = 0;
    int seen_header = 0;
    c->word_bits = 64;
    if (grow((void **)&c->start, &scap, 0, sizeof *c->start) != 0)
        return bench_fail(errbuf, errlen, "out of memory");
    c->start[0] = 0;
    while (p < stop) {
        const char *end = memchr(p, '\n', (size_t)(stop - p));
        if (!end)
            end = stop;
        lineno++;
        const char *line = p;
        p = end < stop ? end + 1 : stop;
        if (end > line && end[-1] == '\r')
            end--;
        if (end == line)
            continue;
        if (line[0] == '#') {
            /* The first comment is the header; word= must come before any
             * record so all frames are checked against one word size. */
            if (!seen_header && c->ntraces == 0)
                header_word(line, end, &c->word_bits);
            seen_header = 1;
            continue;
        }
        if (line[0] == 'f' && (end - line == 1 || line[1] == ' '))
            continue;
        if (line[0] != 'm' || end - line < 2 || line[1] != ' ')
            return bench_fail(errbuf, errlen, "line %zu: not an m, f or # record", lineno);
        const char *q = line + 2;
        uint64_t size, ptr;
        if (parse_dec(&q, end, &size) != 0 || q >= end || *q++ != ' ' ||
            parse_hex(&q, end, &ptr) != 0)
            return bench_fail(errbuf, errlen, "line %zu: bad size or pointer", lineno);
        uint64_t mask = btp_word_mask(c->word_bits);
        size_t depth = 0;
        while (q < end) {
            uint64_t a;
            if (*q++ != ' ' || parse_hex(&q, end, &a) != 0)
                return bench_fail(errbuf, errlen, "line %zu: bad address", lineno);
            if (a > mask)
                return bench_fail(errbuf, errlen, "line %zu: address wider than word=%u", lineno,
                            c->word_bits);
            if (++depth > BENCH_MAX_DEPTH)
                return bench_fail(errbuf, errlen, "line %zu: more than %u frames", lineno,
                            BENCH_MAX_DEPTH);
            if (grow((void **)&c->frames, &fcap, c->nframes, sizeof *c->frames) != 0)
                return bench_fail(errbuf, errlen, "out of memory");
            c->frames[c->nframes++] = a;
        }
        if (grow((void **)&c->start, &scap, c->ntraces + 1, sizeof *c->start) != 0 ||
            grow((void **)&c->alloc_size, &acap, c->ntraces, sizeof *c->alloc_size) != 0)
            return bench_fail(errbuf, errlen, "out of memory");
        c->alloc_size[c->ntraces] = size;
        c->start[++c->ntraces] = c->nframes;
        if (depth > c->max_depth)
            c->max_depth = depth;
    }
    if (c->ntraces == 0)
        return bench_fail(errbuf, errlen, "no m records");
    c->bframes = malloc((c->nframes ? c->nframes : 1) * sizeof *c->bframes);
    if (!c->bframes)
        return bench_fail(errbuf, errlen, "out of memory");
    for (size_t i = 0; i < c->nframes; i++)
        c->bframes[i] = (btp_frame){.value = c->frames[i], .kind = BTP_FRAME_RA};
    return 0;
}

static void set_name(bench_corpus *c, const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    snprintf(c->name, sizeof c->name, "%s", base);
    static const char *const suffixes[] = {".xz", ".trace", ".txt"};
    for (size_t i = 0; i < sizeof suffixes / sizeof *suffixes; i++) {
        size_t n = strlen(c->name), s = strlen(suffixes[i]);
        if (n > s && strcmp(c->name + n - s, suffixes[i]) == 0)
            c->name[n - s] = '\0';
    }
}

int bench_corpus_load(const char *path, bench_corpus *c, char *errbuf, size_t errlen)
{
    memset(c, 0, sizeof *c);
    set_name(c, path);
    buffer raw = {0}, text = {0};
    FILE *f = fopen(path, "rb");
    if (!f)
        return bench_fail(errbuf, errlen, "%s: %s", path, strerror(errno));
    int rc = read_all(fileno(f), &raw);
    fclose(f);
    if (rc != 0) {
        free(raw.p);
        return bench_fail(errbuf, errlen, "%s: read failed or file too large", path);
    }
    if (is_xz(&raw)) {
#if BENCH_HAVE_LZMA
        rc = unxz(&raw, &text, errbuf, errlen);
#else
        rc = unxz_path(path, &text, errbuf, errlen);
#endif
        free(raw.p);
        if (rc != 0) {
            free(text.p);
            return -1;
        }
    } else {
        text = raw;
    }
    rc = parse(&text, c, errbuf, errlen);
    free(text.p);
    if (rc != 0) {
        bench_corpus_free(c);
        return -1;
    }
    return 0;
}

int bench_corpus_subset(const bench_corpus *c, size_t max_depth, bench_corpus *out)
{
    memset(out, 0, sizeof *out);
    memcpy(out->name, c->name, sizeof out->name);
    out->word_bits = c->word_bits;
    out->frames = malloc((c->nframes ? c->nframes : 1) * sizeof *out->frames);
    out->bframes = malloc((c->nframes ? c->nframes : 1) * sizeof *out->bframes);
    out->start = malloc((c->ntraces + 1) * sizeof *out->start);
    out->alloc_size = malloc((c->ntraces ? c->ntraces : 1) * sizeof *out->alloc_size);
    if (!out->frames || !out->bframes || !out->start || !out->alloc_size) {
        bench_corpus_free(out);
        return -1;
    }
    out->start[0] = 0;
    for (size_t i = 0; i < c->ntraces; i++) {
        size_t n = c->start[i + 1] - c->start[i];
        if (n > max_depth)
            continue;
        memcpy(out->frames + out->nframes, c->frames + c->start[i], n * sizeof *c->frames);
        memcpy(out->bframes + out->nframes, c->bframes + c->start[i], n * sizeof *c->bframes);
        out->nframes += n;
        out->alloc_size[out->ntraces] = c->alloc_size[i];
        out->start[++out->ntraces] = out->nframes;
        if (n > out->max_depth)
            out->max_depth = n;
    }
    return 0;
}

void bench_corpus_free(bench_corpus *c)
{
    free(c->frames);
    free(c->start);
    free(c->alloc_size);
    free(c->bframes);
    memset(c, 0, sizeof *c);
}
