/* Line reader over an input (see lines.h). */
#include "lines.h"

#include <string.h>

#include "diag.h"

void lines_init(line_reader *lr, input *in)
{
    memset(lr, 0, sizeof *lr);
    lr->in = in;
}

int lines_next(line_reader *lr, const char **line, size_t *len)
{
    sb_clear(&lr->line);
    sb_add(&lr->line, "", 0); /* so data is never NULL */
    for (;;) {
        if (lr->pos == lr->len) {
            if (lr->eof)
                break;
            long got = input_read(lr->in, lr->buf, sizeof lr->buf);
            if (got < 0)
                return -1;
            if (got == 0) {
                lr->eof = 1;
                break;
            }
            lr->len = (size_t)got;
            lr->pos = 0;
        }
        const char *start = lr->buf + lr->pos;
        const char *nl = memchr(start, '\n', lr->len - lr->pos);
        size_t k = nl ? (size_t)(nl - start) : lr->len - lr->pos;
        if (lr->line.len + k > LINES_MAX_LEN) {
            src_loc loc = {.line = lr->lineno + 1};
            diag(DIAG_ERROR, lr->in->name, &loc, "line longer than %zu bytes", LINES_MAX_LEN);
            return -1;
        }
        sb_add(&lr->line, start, k);
        lr->pos += k + (nl ? 1 : 0);
        if (nl)
            goto done;
    }
    if (lr->line.len == 0)
        return 0; /* no final partial line */
done:
    if (lr->line.oom) {
        diag(DIAG_ERROR, lr->in->name, NULL, "out of memory");
        return -1;
    }
    lr->lineno++;
    if (lr->line.len && lr->line.data[lr->line.len - 1] == '\r')
        lr->line.data[--lr->line.len] = 0;
    *line = lr->line.data;
    *len = lr->line.len;
    return 1;
}

void lines_free(line_reader *lr)
{
    sb_free(&lr->line);
}

int line_is_blank(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '\v' && s[i] != '\f')
            return 0;
    return 1;
}
