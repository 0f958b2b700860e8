/*
 * Canonical frame sequences for comparing what different code paths
 * produce: a list of runs where adjacent equal frames are always merged and
 * counts are 128-bit, so "frame A x 2^64 + frame A x 5" from one path and
 * "A x 5 + A x 2^64" from another compare equal, however each split them.
 */
#ifndef BTPACK_FUZZ_RUNS_H
#define BTPACK_FUZZ_RUNS_H

#include <btpack/btpack.h>

__extension__ typedef unsigned __int128 fuzz_count;

typedef struct fuzz_run {
    btp_frame frame;
    fuzz_count count;
} fuzz_run;

typedef struct fuzz_runs {
    fuzz_run *v;
    size_t n, cap;
} fuzz_runs;

/* a[0..n) and b[0..n) hold the same frames (compared field by field:
 * the struct's padding is not part of a frame). */
int fuzz_frames_equal(const btp_frame *a, const btp_frame *b, size_t n);

/* Append count (> 0) copies of f, merging with the last run if equal. */
void fuzz_runs_add(fuzz_runs *r, btp_frame f, fuzz_count count);
void fuzz_runs_clear(fuzz_runs *r);
void fuzz_runs_free(fuzz_runs *r);
fuzz_count fuzz_runs_total(const fuzz_runs *r);
int fuzz_runs_equal(const fuzz_runs *a, const fuzz_runs *b);
/* The frames of a are the first frames of b. */
int fuzz_runs_is_prefix(const fuzz_runs *a, const fuzz_runs *b);

/* One CBF stream decoded with the cursor API. */
typedef struct fuzz_cbf_stream {
    btp_status status; /* BTP_OK (stream read to its end) or the decoder's error */
    fuzz_runs runs;
    unsigned word_bits;
    size_t consumed;
    size_t err_offset;
    btp_cbf_terminator terminator;
} fuzz_cbf_stream;

/* Decode buf[0..len) under policy into s (whose runs are cleared first),
 * checking the decoder's own contract on the way: bounded number of calls,
 * runs of count >= 1, addresses within the word, consumed/offsets within
 * the input, documented statuses only, end and errors sticky. Returns
 * s->status. */
btp_status fuzz_cbf_decode(const uint8_t *buf, size_t len, unsigned policy, fuzz_cbf_stream *s);

#endif
