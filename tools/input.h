/*
 * Input: a file or stdin, read in chunks as the data comes (a pipe's bytes
 * are handed on as they arrive, never held back to fill a buffer),
 * transparently decompressed when it is xz (magic FD 37 7A 58 5A 00) and
 * btpack was built with liblzma. Text formats read it line by line
 * (lines.h), binary ones through a window (format.h, rd_bytes()): memory
 * never grows with the input's size.
 */
#ifndef BTPACK_TOOLS_INPUT_H
#define BTPACK_TOOLS_INPUT_H

#include <stdio.h>
#include <stdint.h>

#include "strbuf.h"

/*
 * Called before the input reads more data. waiting 0: data is there (flush
 * only what is due by time); 1: the input would wait for data (flush what
 * is held back). Returns the milliseconds until something held back will be
 * due, or -1 for nothing: the input then waits at most that long for data
 * before calling again.
 */
typedef long (*input_idle_fn)(void *ctx, int waiting);

typedef struct input {
    const char *name; /* for messages: the path, or "<stdin>" */
    int fd;
    int owns_fd;
    int xz;           /* decompressing */
    int xz_done;      /* the xz decoder reached the end */
    void *lzma;       /* lzma_stream when xz */
    uint8_t raw[65536];
    size_t raw_len, raw_pos;
    int eof;          /* the file is exhausted */
    int failed;       /* an error was reported */
    input_idle_fn idle; /* optional, with its context */
    void *idle_ctx;
    uint8_t *peeked;  /* input_peek(): bytes read ahead, handed out first */
    size_t peek_len, peek_pos, peek_cap;
    uint64_t bytes_in; /* bytes read from the file (compressed, for xz): progress */
    uint64_t size;     /* the file's size when it is a regular file, else 0 */
} input;

/* Open path ("-" or NULL: stdin) and detect compression. On failure prints
 * the reason and returns -1. */
int input_open(input *in, const char *path);

/* Read up to n bytes of (decompressed) input: what is there, at least one
 * byte unless at the end. Returns the count, 0 at the end, or -1 after
 * printing an error (I/O or corrupt xz data). */
long input_read(input *in, void *buf, size_t n);

/* The next bytes input_read() will give, without taking them: *data gets
 * up to n of them (fewer only at the end of the input), valid until the
 * next call on in. For telling formats apart by their first bytes. Returns
 * the count, or -1 after printing an error. Memory: n bytes. */
long input_peek(input *in, size_t n, const void **data);

/* Read further ahead, without taking it: what the input has now (at least
 * one more byte unless at its end), up to `max` bytes peeked in all; *data
 * gets all the peeked bytes, valid until the next call on in. For telling
 * formats apart without waiting for more than a pipe has sent. Returns the
 * count (unchanged only at the end or at max), or -1 after printing an
 * error. Memory: max bytes. */
long input_peek_more(input *in, size_t max, const void **data);

/* Append the whole remaining input to out (at most INPUT_MAX_ALL bytes),
 * for auxiliary files that are parsed whole (a --maps file), never for the
 * records a format reads. Returns 0 or -1 after printing an error. */
#define INPUT_MAX_ALL ((size_t)1 << 30)
int input_read_all(input *in, strbuf *out);

void input_close(input *in);

/* 1 when path ("-" or NULL: stdin) is a regular file: all of it is there,
 * nothing arrives over time. */
int input_is_file(const char *path);

#endif
