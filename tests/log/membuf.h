/* A growable byte buffer for the trace log tests, and a writer sink that
 * appends to one. */
#ifndef BTPACK_TESTS_LOG_MEMBUF_H
#define BTPACK_TESTS_LOG_MEMBUF_H

#include <btpack/btpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct membuf {
    unsigned char *p;
    size_t len, cap;
} membuf;

/* Append d[0..n); exits on out of memory (a test cannot go on). */
static void mb_put(membuf *b, const void *d, size_t n)
{
    if (b->cap - b->len < n) {
        size_t c = b->cap ? b->cap : 1 << 16;
        while (c - b->len < n)
            c *= 2;
        unsigned char *p = realloc(b->p, c);
        if (!p) {
            perror("realloc");
            exit(2);
        }
        b->p = p;
        b->cap = c;
    }
    if (n)
        memcpy(b->p + b->len, d, n);
    b->len += n;
}

/* btp_log_sink_fn appending to the membuf ctx. */
static btp_status mb_sink(void *ctx, const void *data, size_t len)
{
    mb_put(ctx, data, len);
    return BTP_OK;
}

#endif
