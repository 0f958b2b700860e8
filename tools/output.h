/*
 * Where a command's output goes, written so that no user file is lost:
 *
 *  - `-o FILE` is written to a temporary file in FILE's directory and
 *    renamed over FILE only when the command succeeded; on failure (or
 *    SIGINT/SIGTERM/SIGHUP) the temporary file is removed, or renamed into
 *    place with --keep-partial (by a signal, only when it holds something).
 *    A symlink FILE is written through (its target is replaced); a FILE
 *    that is not a regular file (/dev/null, a FIFO, a terminal) is written
 *    directly.
 *  - An output that is the input (same device and inode: the same path, a
 *    hard link, a symlink, or stdout redirected onto it) is refused before
 *    anything is opened for writing.
 *  - Binary output to a terminal is refused unless -o or --force.
 *  - Every write is checked and the first failure is reported once
 *    (`btpack: <output>: write error: <cause>`); later writes are dropped.
 */
#ifndef BTPACK_TOOLS_OUTPUT_H
#define BTPACK_TOOLS_OUTPUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum {
    OUTPUT_BINARY = 1u << 0,      /* refuse a terminal unless OUTPUT_FORCE */
    OUTPUT_FORCE = 1u << 1,       /* --force */
    OUTPUT_KEEP_PARTIAL = 1u << 2 /* --keep-partial: keep what was written on failure */
};

typedef struct output {
    const char *name; /* for messages: the path given, or "<stdout>" */
    int fd;           /* where output_write() writes */
    FILE *f;          /* stdout for commands that print with stdio, else NULL */
    char *path;       /* the file the temporary file replaces (symlinks resolved) */
    char *tmp;        /* the temporary file, NULL when writing directly */
    unsigned flags;
    int failed;       /* a write error was reported: none is reported again */
} output;

/*
 * Open the output `path` (NULL or "-": stdout) of a command reading the
 * inputs in[0..n_in) (n_in == 0: stdin; "-" is stdin). Prints why and
 * returns EXIT_USAGE (output is an input, binary output to a terminal) or
 * EXIT_BAD_INPUT (cannot create); 0 on success.
 */
int output_open(output *o, const char *path, char *const *in, int n_in, unsigned flags);

/* The command prints to stdout with stdio (dump, stats, heapmap). */
void output_stdio(output *o);

/* Write p[0..n). Returns 0, or -1 once a write failed (reported once). */
int output_write(output *o, const void *p, size_t n);

/* 1 if a write has failed (stdio output: checks the stream's error flag and
 * reports it), so long loops can stop early. */
int output_failed(output *o);

/*
 * Finish: flush, close, and with ok rename the temporary file into place;
 * without ok remove it (or, with OUTPUT_KEEP_PARTIAL, rename it into place
 * and say so). Returns 0, or -1 when a write, the flush or the close failed
 * (reported once; the temporary file is then removed unless
 * OUTPUT_KEEP_PARTIAL).
 */
int output_close(output *o, int ok);

/* A monotonic clock in milliseconds, for flushing output by age. */
uint64_t output_clock_ms(void);

#endif
