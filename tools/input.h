/*
 * Input: a file or stdin, read in chunks, transparently decompressed when
 * it is xz (magic FD 37 7A 58 5A 00) and btpack was built with liblzma.
 * Text formats read it line by line (lines.h), binary ones whole.
 */
#ifndef BTPACK_TOOLS_INPUT_H
#define BTPACK_TOOLS_INPUT_H

#include <stdio.h>
#include <stdint.h>

#include "strbuf.h"

#define INPUT_MAX_BINARY ((size_t)1 << 30) /* whole-input reads stop at 1 GiB */

typedef struct input {
    const char *name; /* for messages: the path, or "<stdin>" */
    FILE *f;
    int owns_f;
    int xz;           /* decompressing */
    int xz_done;      /* the xz decoder reached the end */
    void *lzma;       /* lzma_stream when xz */
    uint8_t raw[65536];
    size_t raw_len, raw_pos;
    int eof;          /* the file is exhausted */
    int failed;       /* an error was reported */
} input;

/* Open path ("-" or NULL: stdin) and detect compression. On failure prints
 * the reason and returns -1. */
int input_open(input *in, const char *path);

/* Read up to n bytes of (decompressed) input. Returns the count, 0 at the
 * end, or -1 after printing an error (I/O or corrupt xz data). */
long input_read(input *in, void *buf, size_t n);

/* Append the whole remaining input to out (at most INPUT_MAX_BINARY bytes).
 * Returns 0 or -1 after printing an error. */
int input_read_all(input *in, strbuf *out);

void input_close(input *in);

#endif
