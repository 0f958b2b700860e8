/*
 * A backtrace corpus in memory, loaded from a file in the record format of
 * tests/data/corpus/README.md (xz-compressed or plain text).
 *
 * Only `m` records (sampled allocations) become traces; `f` records and
 * comments are skipped. The loader treats the file as untrusted: every
 * number is range-checked, lines and depths are bounded, and a malformed
 * line is an error with its line number, never a guess.
 */
#ifndef BTPACK_BENCH_CORPUS_H
#define BTPACK_BENCH_CORPUS_H

#include <stddef.h>
#include <stdint.h>

#include <btpack/btpack.h>

/* Deepest trace we accept: the raw stream stores depths as u16. */
#define BENCH_MAX_DEPTH 65535u

typedef struct bench_corpus {
    char name[128];        /* file name without directory and .trace/.xz */
    unsigned word_bits;    /* 32 or 64, from the header (64 if absent) */
    size_t ntraces;
    size_t nframes;
    size_t max_depth;
    uint64_t *frames;      /* all frames, innermost first, trace after trace */
    size_t *start;         /* trace i is frames[start[i] .. start[i+1]) */
    uint64_t *alloc_size;  /* requested size of trace i's allocation */
    btp_frame *bframes;    /* frames[] as return-address btp_frames (the
                            * input type of the library's encoders) */
} bench_corpus;

/* Load path into *c. Returns 0, or -1 after writing a message to errbuf. */
int bench_corpus_load(const char *path, bench_corpus *c, char *errbuf, size_t errlen);

/* The traces of c with at most max_depth frames, as a corpus of its own
 * (same name and word size). Returns 0, or -1 when out of memory. */
int bench_corpus_subset(const bench_corpus *c, size_t max_depth, bench_corpus *out);

void bench_corpus_free(bench_corpus *c);

#endif
