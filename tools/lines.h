/* The shared line reader of text formats: lines with their numbers, the
 * newline (and a CR before it) removed. */
#ifndef BTPACK_TOOLS_LINES_H
#define BTPACK_TOOLS_LINES_H

#include "input.h"

#define LINES_MAX_LEN ((size_t)64 << 20) /* longer lines are an error */

typedef struct line_reader {
    input *in;
    strbuf line;
    char buf[65536];
    size_t len, pos;
    size_t lineno;   /* number of the line last returned */
    int eof;
} line_reader;

void lines_init(line_reader *lr, input *in);

/* Next line into *line and *len (valid until the next call; NUL-terminated).
 * Returns 1, 0 at the end, or -1 after printing an error (I/O, or a line
 * longer than LINES_MAX_LEN). */
int lines_next(line_reader *lr, const char **line, size_t *len);

void lines_free(line_reader *lr);

/* 1 if s[0..n) is empty or only white space. */
int line_is_blank(const char *s, size_t n);

#endif
