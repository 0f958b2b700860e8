/*
 * writer_replay: the trace-log writer's cost per record, alone, on the
 * records of a real heap trace.
 *
 *   writer_replay FILE.btlog [ZLIB_LEVEL|xPRESET...]
 *
 * Reads every record of FILE.btlog into memory, then re-encodes them with
 * the public writer (2 MiB blocks, as `btpack heap record` writes) once per
 * zlib level given (0: no compression; xN: LZMA2 preset N, what the tracer
 * writes with x2; default: 9 and 0), into memory, and
 * prints CPU nanoseconds per record (best of 3) and the bytes written
 * (with WRITER_REPLAY_OUT=FILE set, the last log written is kept there:
 * the same records and options must give the same bytes after a change
 * meant for speed only; WRITER_REPLAY_HOLD=1 has the writer hold its
 * blocks for btp_log_block_write and WRITER_REPLAY_PREFETCH=N announces
 * each record N records ahead, as the heap tracer does; with
 * WRITER_REPLAY_VERIFY=1 each log written is read back and must give the
 * same records: kind, size, pointer, frames). What the
 * tracer's writer thread spends on a log beyond reading its rings: the
 * dictionary, the live-allocation table, the record coding, and zlib.
 * Single-threaded and deterministic, so `valgrind --tool=callgrind` on it
 * gives instruction counts that do not depend on the machine's load.
 */
#include <btpack/btpack.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

typedef struct rec {
    uint64_t size, ptr;
    uint32_t kind, n, truncated;
    size_t at; /* first frame in frames[] */
} rec;

static void *grow(void *p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return p;
    size_t c = *cap ? *cap : 4096;
    while (c < need)
        c *= 2;
    p = realloc(p, c * elem);
    if (!p) {
        perror("writer_replay");
        exit(1);
    }
    *cap = c;
    return p;
}

static size_t out_bytes;
static unsigned char *out_buf; /* WRITER_REPLAY_VERIFY: the log written */
static size_t out_cap;
static int verify;

/* ctx: a FILE to keep the output in (WRITER_REPLAY_OUT), or NULL */
static btp_status sink(void *ctx, const void *data, size_t len)
{
    if (verify) {
        out_buf = grow(out_buf, &out_cap, out_bytes + len, 1);
        memcpy(out_buf + out_bytes, data, len);
    }
    out_bytes += len;
    return !ctx || fwrite(data, 1, len, ctx) == len ? BTP_OK : BTP_E_IO;
}

/* The log in out_buf against the records replayed: 0 when the same. */
static int check(const rec *recs, size_t n_recs, const btp_frame *frames)
{
    btp_log_reader *r;
    if (btp_log_reader_open(&r, out_buf, out_bytes, 0) != BTP_OK)
        return 1;
    btp_log_record lr;
    btp_status st;
    size_t i = 0;
    int bad = 0;
    while (!bad && (st = btp_log_reader_next(r, &lr)) == BTP_OK) {
        if (lr.kind != BTP_LOG_ALLOC && lr.kind != BTP_LOG_FREE && lr.kind != BTP_LOG_TRACE)
            continue;
        const rec *e = &recs[i];
        bad = i >= n_recs || lr.kind != e->kind || lr.ptr != e->ptr ||
              (e->kind == BTP_LOG_ALLOC && lr.size != e->size) ||
              (e->kind != BTP_LOG_FREE && lr.n_frames != e->n);
        for (size_t k = 0; !bad && e->kind != BTP_LOG_FREE && k < e->n; k++)
            bad = lr.frames[k].value != frames[e->at + k].value ||
                  lr.frames[k].kind != frames[e->at + k].kind;
        if (bad)
            fprintf(stderr, "writer_replay: record %zu differs on reading back\n", i);
        i++;
    }
    btp_log_reader_close(r);
    if (!bad && (st != BTP_END || i != n_recs)) {
        fprintf(stderr, "writer_replay: reading back: %s after %zu of %zu records\n",
                btp_status_name(st), i, n_recs);
        bad = 1;
    }
    return bad;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts); /* CPU time: the machine may be shared */
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: writer_replay FILE.btlog [ZLIB_LEVEL...]\n");
        return 2;
    }
    FILE *f = fopen(argv[1], "rb");
    if (!f) {
        perror(argv[1]);
        return 1;
    }
    size_t len = 0, cap = 0;
    unsigned char *in = NULL;
    for (;;) {
        in = grow(in, &cap, len + 65536, 1);
        size_t got = fread(in + len, 1, cap - len, f);
        if (got == 0)
            break;
        len += got;
    }
    fclose(f);
    btp_log_reader *r;
    if (btp_log_reader_open(&r, in, len, 0) != BTP_OK) {
        fprintf(stderr, "writer_replay: %s: not a trace log\n", argv[1]);
        return 1;
    }
    unsigned word_bits = btp_log_reader_word_bits(r);
    rec *recs = NULL;
    btp_frame *frames = NULL;
    size_t n_recs = 0, cap_recs = 0, n_frames = 0, cap_frames = 0;
    btp_log_record lr;
    btp_status st;
    while ((st = btp_log_reader_next(r, &lr)) == BTP_OK) {
        if (lr.kind != BTP_LOG_ALLOC && lr.kind != BTP_LOG_FREE && lr.kind != BTP_LOG_TRACE)
            continue;
        recs = grow(recs, &cap_recs, n_recs + 1, sizeof *recs);
        frames = grow(frames, &cap_frames, n_frames + lr.n_frames + 1, sizeof *frames);
        if (lr.n_frames)
            memcpy(frames + n_frames, lr.frames, lr.n_frames * sizeof *frames);
        recs[n_recs++] = (rec){lr.size, lr.ptr, (uint32_t)lr.kind, (uint32_t)lr.n_frames,
                               (uint32_t)lr.truncated, n_frames};
        n_frames += lr.n_frames;
    }
    btp_log_reader_close(r);
    free(in);
    int levels[16] = {9, 0}, n_levels = 2; /* LZMA2 presets as -preset */
    if (argc > 2) {
        n_levels = 0;
        for (int i = 2; i < argc && n_levels < 16; i++)
            levels[n_levels++] = argv[i][0] == 'x' ? -atoi(argv[i] + 1) : atoi(argv[i]);
    }
    const char *vf = getenv("WRITER_REPLAY_VERIFY");
    verify = vf && *vf && *vf != '0';
    const char *pf = getenv("WRITER_REPLAY_PREFETCH"); /* records ahead, as the tracer */
    size_t ahead = pf && *pf ? strtoul(pf, NULL, 10) : 0;
    const char *hd = getenv("WRITER_REPLAY_HOLD"); /* blocks held, then taken and written */
    int hold = hd && *hd && *hd != '0';
    printf("%s: %zu records, %zu frames\n", argv[1], n_recs, n_frames);
    for (int li = 0; li < n_levels; li++) {
        double best = 1e30;
        for (int rep = 0; rep < 3; rep++) {
            btp_log_writer_options o;
            btp_log_writer_options_init(&o, word_bits);
            o.block_bytes = BTP_LOG_MAX_BLOCK / 2;
            o.flush_interval_ms = 0;
            if (hold)
                o.flags |= BTP_LOG_WRITE_HOLD;
            if (levels[li] > 0)
                o.zlib_level = levels[li] > 9 ? 9 : levels[li];
            else if (levels[li] < 0) {
                o.flags |= BTP_LOG_WRITE_LZMA;
                o.zlib_level = -levels[li] > 9 ? 9 : -levels[li];
            } else
                o.flags |= BTP_LOG_WRITE_NO_ZLIB;
            btp_log_writer *w;
            out_bytes = 0;
            const char *keep = getenv("WRITER_REPLAY_OUT");
            FILE *out = keep && *keep ? fopen(keep, "wb") : NULL;
            if (btp_log_writer_open(&w, sink, out, &o) != BTP_OK) {
                fprintf(stderr, "writer_replay: cannot open a writer\n");
                return 1;
            }
            double t0 = now_s();
            for (size_t i = 0; i < n_recs; i++) {
                const rec *e = &recs[i];
                if (ahead && i + ahead < n_recs && recs[i + ahead].kind != BTP_LOG_TRACE)
                    btp_log_writer_prefetch(w, recs[i + ahead].ptr);
                if (e->kind == BTP_LOG_ALLOC)
                    st = btp_log_writer_alloc(w, e->size, e->ptr, frames + e->at, e->n);
                else if (e->kind == BTP_LOG_FREE)
                    st = btp_log_writer_free(w, e->ptr);
                else
                    st = btp_log_writer_trace(w, frames + e->at, e->n, (int)e->truncated);
                for (btp_log_block *b; hold && st == BTP_OK && (b = btp_log_writer_take(w));)
                    st = btp_log_block_write(b);
                if (st != BTP_OK) {
                    fprintf(stderr, "writer_replay: record %zu: %s\n", i, btp_status_name(st));
                    return 1;
                }
            }
            st = btp_log_writer_close(w);
            double t = now_s() - t0;
            if (out && fclose(out) != 0)
                st = BTP_E_IO;
            if (st != BTP_OK) {
                fprintf(stderr, "writer_replay: close: %s\n", btp_status_name(st));
                return 1;
            }
            if (t < best)
                best = t;
            if (verify && check(recs, n_recs, frames))
                return 1;
        }
        printf("  %s %d: %8.1f ns/record  %10zu bytes%s\n", levels[li] < 0 ? "lzma" : "zlib",
               levels[li] < 0 ? -levels[li] : levels[li],
               best * 1e9 / (double)(n_recs ? n_recs : 1), out_bytes,
               verify ? "  (read back: same records)" : "");
    }
    free(recs);
    free(frames);
    return 0;
}
