/*
 * log_anatomy: where the bytes of a trace log go, and what other choices
 * would have cost, measured on the log's own records.
 *
 *   log_anatomy FILE.btlog
 *
 * Re-encodes the log's records with the public writer (include/btpack/
 * log.h) several ways and prints each file size:
 *   - as the log stores them, with 128 KiB and 2 MiB blocks, zlib 6 and 9,
 *     and with a flush every N records (what a time-based flush does);
 *   - per section (spec/log.md: dict, tags, stacks, sizes, ptrs, frees) of
 *     the 2 MiB uncompressed re-encoding: raw bytes, each section's bytes
 *     deflated alone per block (zlib 9) and, with liblzma, xz -9;
 *   - the whole payload of each 2 MiB block compressed with xz -9 instead
 *     of zlib (what a stronger block compressor would give);
 *   - without pointers (every pointer 0: frees then match the newest live
 *     allocation): the cost of the addresses;
 *   - frees coded as the allocation-number delta from the previous free
 *     (varint zigzag), deflated per 2 MiB: an alternative to the format's
 *     live-table rank.
 * Only the public API; the block layout read back is spec/log.md's.
 */
#include <btpack/btpack.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#if BENCH_HAVE_LZMA
#include <lzma.h>
#endif

typedef struct buf {
    unsigned char *p;
    size_t n, cap;
} buf;

static void put(buf *b, const void *p, size_t n)
{
    if (b->n + n > b->cap) {
        size_t c = b->cap ? b->cap * 2 : 1 << 20;
        while (c < b->n + n)
            c *= 2;
        b->p = realloc(b->p, c);
        if (!b->p) {
            perror("log_anatomy");
            exit(1);
        }
        b->cap = c;
    }
    memcpy(b->p + b->n, p, n);
    b->n += n;
}

static btp_status sink(void *ctx, const void *data, size_t len)
{
    put(ctx, data, len);
    return BTP_OK;
}

enum { AS_IS, NO_PTRS };

/* Re-encode the records of in[0..len) into out; 0 on success. */
static int relog(const void *in, size_t len, buf *out, size_t block, int zlib, int mode,
                 unsigned long flush_every)
{
    btp_log_reader *r;
    if (btp_log_reader_open(&r, in, len, 0) != BTP_OK)
        return -1;
    btp_log_writer_options o;
    btp_log_writer_options_init(&o, btp_log_reader_word_bits(r));
    o.block_bytes = block;
    if (zlib)
        o.zlib_level = zlib;
    else
        o.flags |= BTP_LOG_WRITE_NO_ZLIB;
    btp_log_writer *w;
    out->n = 0;
    if (btp_log_writer_open(&w, sink, out, &o) != BTP_OK) {
        btp_log_reader_close(r);
        return -1;
    }
    btp_log_record rec;
    unsigned long k = 0;
    btp_status st;
    while ((st = btp_log_reader_next(r, &rec)) == BTP_OK) {
        uint64_t p = mode == NO_PTRS ? 0 : rec.ptr;
        if (rec.kind == BTP_LOG_ALLOC)
            st = btp_log_writer_alloc(w, rec.size, p, rec.frames, rec.n_frames);
        else if (rec.kind == BTP_LOG_FREE)
            st = btp_log_writer_free(w, p);
        else
            st = btp_log_writer_trace(w, rec.frames, rec.n_frames, rec.truncated);
        if (st != BTP_OK)
            break;
        if (flush_every && ++k % flush_every == 0)
            btp_log_writer_flush(w);
    }
    btp_log_reader_close(r);
    if (st != BTP_END && st != BTP_E_TRUNCATED_FILE && st != BTP_OK) {
        btp_log_writer_abandon(w);
        return -1;
    }
    return btp_log_writer_close(w) == BTP_OK ? 0 : -1;
}

static size_t deflated(const unsigned char *p, size_t n)
{
    uLongf cap = compressBound(n);
    unsigned char *d = malloc(cap);
    if (!d || compress2(d, &cap, p, n, 9) != Z_OK)
        cap = n;
    free(d);
    return cap < n ? cap : n;
}

static size_t xzed(const unsigned char *p, size_t n)
{
#if BENCH_HAVE_LZMA
    size_t cap = lzma_stream_buffer_bound(n), got = 0;
    unsigned char *d = malloc(cap);
    if (!d || lzma_easy_buffer_encode(9, LZMA_CHECK_NONE, NULL, p, n, d, &got, cap) != LZMA_OK)
        got = n;
    free(d);
    return got < n ? got : n;
#else
    (void)p;
    return n;
#endif
}

static int varint(const unsigned char *p, size_t n, size_t *at, uint64_t *v)
{
    *v = 0;
    for (int s = 0; s < 64 && *at < n; s += 7) {
        unsigned char c = p[(*at)++];
        *v |= (uint64_t)(c & 0x7f) << s;
        if (!(c & 0x80))
            return 0;
    }
    return -1;
}

static const char *const sec_names[] = {"dict", "tags", "stacks", "sizes", "ptrs", "frees"};

/* Sections of an uncompressed log (spec/log.md): sum raw / deflated /
 * xz per block, and the whole payloads xz'd per block. */
static void sections(const buf *b)
{
    size_t raw[6] = {0}, z[6] = {0}, x[6] = {0}, whole_x = 0, whole_z = 0, blocks = 0;
    /* block headers: 80 bytes in version 2, 72 in version 1 */
    const size_t hs = b->n > 8 && b->p[8] == 1 ? 72 : 80;
    for (size_t at = 32; at + hs <= b->n;) {
        const unsigned char *h = b->p + at;
        uint32_t stored = (uint32_t)h[8] | (uint32_t)h[9] << 8 | (uint32_t)h[10] << 16 |
                          (uint32_t)h[11] << 24;
        const unsigned char *pl = h + hs;
        at += hs + stored;
        if (at > b->n)
            break;
        whole_z += hs + deflated(pl, stored);
        whole_x += hs + xzed(pl, stored);
        if (h[4] != 2)
            continue;
        blocks++;
        size_t q = 0;
        for (int i = 0; i < 6; i++) {
            uint64_t n;
            if (varint(pl, stored, &q, &n) < 0 || n > stored - q)
                return;
            raw[i] += n;
            z[i] += deflated(pl + q, n);
            x[i] += xzed(pl + q, n);
            q += n;
        }
    }
    printf("  sections of the %zu record blocks (2 MiB, raw; each deflated alone / xz alone):\n",
           blocks);
    for (int i = 0; i < 6; i++)
        printf("    %-7s %10zu %9zu %9zu\n", sec_names[i], raw[i], z[i], x[i]);
    printf("  whole file, each block's payload deflated (zlib 9): %zu\n", whole_z);
#if BENCH_HAVE_LZMA
    printf("  whole file, each block's payload xz -9 instead:     %zu\n", whole_x);
#endif
}

/* Frees as allocation-number deltas (zigzag varints), deflated per 2 MiB. */
static void free_deltas(const void *in, size_t len)
{
    btp_log_reader *r;
    if (btp_log_reader_open(&r, in, len, 0) != BTP_OK)
        return;
    /* pointer -> allocation number of its live allocation */
    size_t cap = 1 << 20, used = 0;
    uint64_t *kp = calloc(cap, 8), *kv = calloc(cap, 8);
    buf s = {0};
    uint64_t n_alloc = 0, prev = 0, frees = 0;
    btp_log_record rec;
    while (kp && kv && btp_log_reader_next(r, &rec) == BTP_OK) {
        if (rec.kind == BTP_LOG_ALLOC) {
            if (2 * (used + 1) > cap) { /* grow and rehash */
                size_t nc = cap * 2;
                uint64_t *np = calloc(nc, 8), *nv = calloc(nc, 8);
                if (!np || !nv)
                    break;
                for (size_t i = 0; i < cap; i++)
                    if (kp[i]) {
                        size_t j = (kp[i] * 0x9E3779B97F4A7C15ull >> 20) & (nc - 1);
                        while (np[j])
                            j = (j + 1) & (nc - 1);
                        np[j] = kp[i], nv[j] = kv[i];
                    }
                free(kp), free(kv);
                kp = np, kv = nv, cap = nc;
            }
            uint64_t key = rec.ptr + 1; /* 0 marks an empty slot */
            size_t j = (key * 0x9E3779B97F4A7C15ull >> 20) & (cap - 1);
            while (kp[j] && kp[j] != key)
                j = (j + 1) & (cap - 1);
            used += !kp[j];
            kp[j] = key, kv[j] = n_alloc++;
        } else if (rec.kind == BTP_LOG_FREE) {
            uint64_t key = rec.ptr + 1;
            size_t j = (key * 0x9E3779B97F4A7C15ull >> 20) & (cap - 1);
            while (kp[j] && kp[j] != key)
                j = (j + 1) & (cap - 1);
            if (!kp[j])
                continue;
            int64_t d = (int64_t)(kv[j] - prev);
            prev = kv[j];
            /* delete with backward shift */
            kp[j] = 0;
            used--;
            for (size_t i = (j + 1) & (cap - 1); kp[i]; i = (i + 1) & (cap - 1)) {
                size_t home = (kp[i] * 0x9E3779B97F4A7C15ull >> 20) & (cap - 1);
                if ((i > j && (home <= j || home > i)) || (i < j && home <= j && home > i)) {
                    kp[j] = kp[i], kv[j] = kv[i], kp[i] = 0, j = i;
                }
            }
            uint64_t z = ((uint64_t)d << 1) ^ (uint64_t)(d >> 63);
            unsigned char v[10];
            size_t k = 0;
            do
                v[k++] = (unsigned char)((z & 0x7f) | (z > 0x7f ? 0x80 : 0)), z >>= 7;
            while (z);
            put(&s, v, k);
            frees++;
        }
    }
    size_t zs = 0;
    for (size_t i = 0; i < s.n; i += 2u << 20)
        zs += deflated(s.p + i, s.n - i < (2u << 20) ? s.n - i : 2u << 20);
    printf("  %llu matched frees as allocation-number deltas: %zu raw, %zu deflated per 2 MiB\n",
           (unsigned long long)frees, s.n, zs);
    free(kp), free(kv), free(s.p);
    btp_log_reader_close(r);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: log_anatomy FILE.btlog\n");
        return 2;
    }
    int fd = open(argv[1], O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        perror(argv[1]);
        return 1;
    }
    void *in = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (in == MAP_FAILED) {
        perror(argv[1]);
        return 1;
    }
    size_t len = (size_t)st.st_size;
    buf b = {0};
    printf("%s: %zu bytes as recorded\n", argv[1], len);
    static const struct {
        const char *what;
        size_t block;
        int zlib, mode;
        unsigned long flush;
    } runs[] = {
        {"128 KiB blocks, zlib 6", 128 << 10, 6, AS_IS, 0},
        {"2 MiB blocks, zlib 6", 2 << 20, 6, AS_IS, 0},
        {"2 MiB blocks, zlib 9", 2 << 20, 9, AS_IS, 0},
        {"2 MiB blocks, zlib 9, flush every 12,500 records", 2 << 20, 9, AS_IS, 12500},
        {"2 MiB blocks, zlib 9, flush every 125,000 records", 2 << 20, 9, AS_IS, 125000},
        {"2 MiB blocks, zlib 9, every pointer 0", 2 << 20, 9, NO_PTRS, 0},
    };
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        if (relog(in, len, &b, runs[i].block, runs[i].zlib, runs[i].mode, runs[i].flush) < 0) {
            fprintf(stderr, "log_anatomy: %s: cannot re-encode\n", argv[1]);
            return 1;
        }
        printf("  %-50s %10zu\n", runs[i].what, b.n);
    }
    if (relog(in, len, &b, 2 << 20, 0, AS_IS, 0) == 0)
        sections(&b);
    free_deltas(in, len);
    free(b.p);
    return 0;
}
