/* A source for the streaming trace log reader (btp_log_source_fn) that
 * hands out a buffer in pieces of uneven size, as a pipe would, to check
 * that reading a stream gives what reading memory gives. Shared by the log
 * tests and the log_read fuzz target. */
#ifndef BTPACK_TESTS_LOG_PIECES_H
#define BTPACK_TESTS_LOG_PIECES_H

#include <stdint.h>
#include <string.h>

typedef struct piece_src {
    const unsigned char *p;
    size_t len, pos;
    uint64_t seed; /* picks the piece sizes */
    size_t most;   /* the largest piece */
} piece_src;

/* btp_log_source_fn: the next 1..most bytes (0 at the end). */
static long pieces(void *ctx, void *buf, size_t cap)
{
    piece_src *s = ctx;
    s->seed = s->seed * 6364136223846793005ull + 1442695040888963407ull;
    size_t n = 1 + (size_t)(s->seed >> 33) % s->most;
    if (n > cap)
        n = cap;
    if (n > s->len - s->pos)
        n = s->len - s->pos;
    if (n)
        memcpy(buf, s->p + s->pos, n);
    s->pos += n;
    return (long)n;
}

#endif
