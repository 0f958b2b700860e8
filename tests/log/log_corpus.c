/* Corpus round trip through the trace log library: the m/f lines of a
 * corpus trace (decompressed with xz) are written to a log and read back,
 * and the re-formatted lines must equal the original ones byte for byte.
 * Usage: log_corpus TRACE.xz MAPS [--no-zlib] [--block BYTES] [--times] */
#include <btpack/btpack.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "membuf.h"

/* CPU time of this process: the machine may be busy */
static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static membuf slurp_cmd(const char *cmd)
{
    membuf b = {0};
    FILE *f = popen(cmd, "r");
    if (!f) {
        perror(cmd);
        exit(2);
    }
    char tmp[1 << 16];
    size_t n;
    while ((n = fread(tmp, 1, sizeof tmp, f)) > 0)
        mb_put(&b, tmp, n);
    if (pclose(f) != 0) {
        fprintf(stderr, "%s failed\n", cmd);
        exit(2);
    }
    return b;
}

static size_t fmt_hex(char *o, uint64_t v)
{
    char t[16];
    size_t n = 0;
    do {
        t[n++] = "0123456789abcdef"[v & 15];
        v >>= 4;
    } while (v);
    o[0] = '0';
    o[1] = 'x';
    for (size_t i = 0; i < n; i++)
        o[2 + i] = t[n - 1 - i];
    return n + 2;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: log_corpus TRACE.xz MAPS [--no-zlib] [--block N] [--times]\n");
        return 2;
    }
    btp_log_writer_options opt;
    int times = 0;
    size_t block = 0;
    unsigned wflags = btp_log_have_zlib() ? 0 : BTP_LOG_WRITE_NO_ZLIB;
    for (int i = 3; i < argc; i++) {
        if (!strcmp(argv[i], "--no-zlib"))
            wflags = BTP_LOG_WRITE_NO_ZLIB;
        else if (!strcmp(argv[i], "--times"))
            times = 1;
        else if (!strcmp(argv[i], "--block") && i + 1 < argc)
            block = strtoul(argv[++i], NULL, 0);
    }
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "xz -dc '%s'", argv[1]);
    membuf text = slurp_cmd(cmd);
    snprintf(cmd, sizeof cmd, "cat '%s'", argv[2]);
    membuf maps = slurp_cmd(cmd);
    mb_put(&text, "", 1); /* NUL for strtoull at the very end */
    text.len--;

    /* word size from the header comment */
    unsigned word = 64;
    const char *w = strstr((const char *)text.p, " word=");
    if (w)
        word = (unsigned)atoi(w + 6);
    btp_log_writer_options_init(&opt, word);
    opt.flags = wflags;
    opt.flush_interval_ms = 0; /* blocks by size: a size that does not depend on timing */
    if (block)
        opt.block_bytes = block;

    double t0 = now();
    membuf log = {0}, comment = {0}, want = {0};
    btp_log_writer *wr;
    btp_status st = btp_log_writer_open(&wr, mb_sink, &log, &opt);
    CHECK(st == BTP_OK, "open: %s", btp_strerror(st));
    if (st)
        return check_finish();
    static btp_frame frames[BTP_LOG_MAX_DEPTH];
    char *p = (char *)text.p, *end = p + text.len;
    int metas_done = 0;
    unsigned long lines = 0;
    while (p < end && st == BTP_OK) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        char *le = nl ? nl : end;
        if (*p == '#') {
            if (!metas_done) {
                mb_put(&comment, p, (size_t)(le - p) + 1);
            }
        } else {
            if (!metas_done) {
                st = btp_log_writer_meta(wr, "comment", comment.p, comment.len);
                if (st == BTP_OK)
                    st = btp_log_writer_meta(wr, "maps", maps.p, maps.len);
                metas_done = 1;
            }
            mb_put(&want, p, (size_t)(le - p) + 1);
            lines++;
            char *q = p + 2;
            if (*p == 'm') {
                uint64_t size = strtoull(q, &q, 10);
                uint64_t ptr = strtoull(q, &q, 16);
                size_t n = 0;
                while (q < le && n < BTP_LOG_MAX_DEPTH) {
                    frames[n].value = strtoull(q, &q, 16);
                    frames[n++].kind = BTP_FRAME_RA;
                    while (q < le && *q == ' ')
                        q++;
                }
                st = btp_log_writer_alloc(wr, size, ptr, frames, n);
            } else if (*p == 'f') {
                st = btp_log_writer_free(wr, strtoull(q, &q, 16));
            }
        }
        p = le + 1;
    }
    CHECK(st == BTP_OK, "write: %s", btp_strerror(st));
    st = btp_log_writer_close(wr);
    CHECK(st == BTP_OK, "close: %s", btp_strerror(st));
    double t1 = now();

    btp_log_reader *rd;
    st = btp_log_reader_open(&rd, log.p, log.len, 0);
    CHECK(st == BTP_OK, "reader open: %s", btp_strerror(st));
    if (st)
        return check_finish();
    membuf got = {0};
    btp_log_record rec;
    char line[BTP_LOG_MAX_DEPTH * 20 + 64];
    unsigned long nrec = 0;
    while ((st = btp_log_reader_next(rd, &rec)) == BTP_OK) {
        size_t n;
        if (rec.kind == BTP_LOG_ALLOC) {
            n = (size_t)sprintf(line, "m %llu ", (unsigned long long)rec.size);
            n += fmt_hex(line + n, rec.ptr);
            for (size_t i = 0; i < rec.n_frames; i++) {
                line[n++] = ' ';
                n += fmt_hex(line + n, rec.frames[i].value);
            }
        } else {
            line[0] = 'f';
            line[1] = ' ';
            n = 2 + fmt_hex(line + 2, rec.ptr);
        }
        line[n++] = '\n';
        mb_put(&got, line, n);
        nrec++;
    }
    double t2 = now();
    CHECK(st == BTP_END, "read: %s at %llu", btp_strerror(st),
          (unsigned long long)btp_log_reader_error_offset(rd));
    CHECK(nrec == lines, "records %lu, lines %lu", nrec, lines);
    CHECK(got.len == want.len && memcmp(got.p, want.p, got.len) == 0,
          "text differs (%zu vs %zu bytes)", got.len, want.len);
    const void *md;
    size_t ml;
    CHECK(btp_log_reader_meta_find(rd, "maps", &md, &ml) == BTP_OK && ml == maps.len &&
              memcmp(md, maps.p, ml) == 0, "maps differ");
    CHECK(btp_log_reader_meta_find(rd, "comment", &md, &ml) == BTP_OK && ml == comment.len &&
              memcmp(md, comment.p, ml) == 0, "comment differs");
    btp_log_stats s;
    btp_log_reader_stats(rd, &s);
    printf("%s: %zu bytes text, %zu bytes log (%.3f bytes/record), %llu blocks, %llu stacks, "
           "%llu nodes\n",
           argv[1], text.len, log.len, (double)log.len / (double)lines,
           (unsigned long long)s.blocks, (unsigned long long)s.stacks,
           (unsigned long long)s.nodes);
    printf("raw sections: dict %llu tags %llu stacks %llu sizes %llu ptrs %llu frees %llu\n",
           (unsigned long long)s.raw_section_bytes[0], (unsigned long long)s.raw_section_bytes[1],
           (unsigned long long)s.raw_section_bytes[2], (unsigned long long)s.raw_section_bytes[3],
           (unsigned long long)s.raw_section_bytes[4], (unsigned long long)s.raw_section_bytes[5]);
    if (times) {
        /* the library alone: every record with its frames, nothing formatted */
        btp_log_reader *r2;
        double t3 = now();
        uint64_t sum = 0;
        if (btp_log_reader_open(&r2, log.p, log.len, 0) == BTP_OK) {
            while (btp_log_reader_next(r2, &rec) == BTP_OK) {
                sum += rec.ptr + rec.n_frames;
                for (size_t i = 0; i < rec.n_frames; i++)
                    sum += rec.frames[i].value;
            }
            btp_log_reader_close(r2);
        }
        double t4 = now();
        printf("pack (parse text + write log) %.3f s, read + format text %.3f s, "
               "read records only %.3f s (checksum %llx)\n",
               t1 - t0, t2 - t1, t4 - t3, (unsigned long long)sum);
    }
    btp_log_reader_close(rd);
    free(text.p);
    free(maps.p);
    free(log.p);
    free(comment.p);
    free(want.p);
    free(got.p);
    return check_finish();
}
