/* File/stdin input with optional xz decompression (see input.h). */
#include "input.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "diag.h"

#if BTP_CLI_HAVE_LZMA
#include <lzma.h>
#endif

static const uint8_t xz_magic[6] = {0xfd, '7', 'z', 'X', 'Z', 0x00};

/* Before reading: let the idle hook flush what is due, and while no data
 * is there, what is held back; wait no longer than it asks. */
static void before_read(input *in)
{
    struct pollfd p = {.fd = in->fd, .events = POLLIN};
    if (poll(&p, 1, 0) != 0) {
        in->idle(in->idle_ctx, 0);
        return;
    }
    for (;;) {
        long wait = in->idle(in->idle_ctx, 1);
        int k = poll(&p, 1, wait < 0 ? -1 : wait > 3600000 ? 3600000 : (int)wait);
        if (k > 0 || (k < 0 && errno != EINTR))
            return; /* data, the end, or an error: read() tells which */
    }
}

/* Append what the file has (at least a byte unless at its end) to raw. */
static int fill_raw(input *in)
{
    if (in->eof)
        return 0;
    if (in->raw_pos == in->raw_len)
        in->raw_pos = in->raw_len = 0;
    if (in->idle)
        before_read(in);
    ssize_t got;
    do
        got = read(in->fd, in->raw + in->raw_len, sizeof in->raw - in->raw_len);
    while (got < 0 && errno == EINTR);
    if (got < 0) {
        diag(DIAG_ERROR, in->name, NULL, "read error: %s", strerror(errno));
        in->failed = 1;
        return -1;
    }
    if (got == 0)
        in->eof = 1;
    in->raw_len += (size_t)got;
    in->bytes_in += (uint64_t)got;
    return 0;
}

int input_open(input *in, const char *path)
{
    memset(in, 0, sizeof *in);
    if (!path || strcmp(path, "-") == 0) {
        in->name = "<stdin>";
        in->fd = 0;
    } else {
        in->name = path;
        in->fd = open(path, O_RDONLY | O_CLOEXEC);
        if (in->fd < 0) {
            diag(DIAG_ERROR, path, NULL, "cannot open: %s", strerror(errno));
            return -1;
        }
        in->owns_fd = 1;
    }
    struct stat st;
    if (fstat(in->fd, &st) == 0 && S_ISREG(st.st_mode))
        in->size = (uint64_t)st.st_size;
    /* enough to tell xz by its magic, however slowly a pipe delivers it */
    while (in->raw_len < sizeof xz_magic && !in->eof)
        if (fill_raw(in) < 0)
            return -1;
    if (in->raw_len < sizeof xz_magic || memcmp(in->raw, xz_magic, sizeof xz_magic) != 0)
        return 0;
#if BTP_CLI_HAVE_LZMA
    lzma_stream *s = malloc(sizeof *s);
    if (!s) {
        diag(DIAG_ERROR, in->name, NULL, "out of memory");
        return -1;
    }
    *s = (lzma_stream)LZMA_STREAM_INIT;
    /* The memory limit keeps a hostile header from asking for gigabytes. */
    if (lzma_stream_decoder(s, (uint64_t)1 << 30, LZMA_CONCATENATED) != LZMA_OK) {
        free(s);
        diag(DIAG_ERROR, in->name, NULL, "cannot start the xz decoder");
        return -1;
    }
    in->lzma = s;
    in->xz = 1;
    return 0;
#else
    diag(DIAG_ERROR, in->name, NULL,
         "input is xz-compressed, but this btpack was built without liblzma; "
         "decompress it first, e.g. `xz -dc FILE | btpack ...`");
    return -1;
#endif
}

/* Read from the file (decompressing): what input_read() gives once the
 * peeked bytes are used up. */
static long read_source(input *in, void *buf, size_t n)
{
    if (in->failed)
        return -1;
    if (n > (size_t)1 << 30)
        n = (size_t)1 << 30;
    if (!in->xz) {
        if (in->raw_pos == in->raw_len) {
            if (fill_raw(in) < 0)
                return -1;
            if (in->raw_len == in->raw_pos)
                return 0;
        }
        size_t k = in->raw_len - in->raw_pos;
        if (k > n)
            k = n;
        memcpy(buf, in->raw + in->raw_pos, k);
        in->raw_pos += k;
        return (long)k;
    }
#if BTP_CLI_HAVE_LZMA
    lzma_stream *s = in->lzma;
    if (in->xz_done)
        return 0;
    s->next_out = buf;
    s->avail_out = n;
    while (s->avail_out == n) {
        if (in->raw_pos == in->raw_len && !in->eof && fill_raw(in) < 0)
            return -1;
        s->next_in = in->raw + in->raw_pos;
        s->avail_in = in->raw_len - in->raw_pos;
        lzma_ret r = lzma_code(s, in->raw_pos == in->raw_len && in->eof ? LZMA_FINISH : LZMA_RUN);
        in->raw_pos = in->raw_len - s->avail_in;
        if (r == LZMA_STREAM_END) {
            in->xz_done = 1;
            break;
        }
        if (r != LZMA_OK) {
            const char *why = r == LZMA_DATA_ERROR   ? "corrupt xz data"
                              : r == LZMA_BUF_ERROR  ? "xz data cut short"
                              : r == LZMA_MEMLIMIT_ERROR ? "xz data needs too much memory"
                              : r == LZMA_FORMAT_ERROR   ? "not xz data"
                                                         : "xz decoder error";
            diag(DIAG_ERROR, in->name, NULL, "%s (after %llu compressed bytes)", why,
                 (unsigned long long)s->total_in);
            in->failed = 1;
            return -1;
        }
    }
    return (long)(n - s->avail_out);
#else
    return -1;
#endif
}

long input_read(input *in, void *buf, size_t n)
{
    if (in->peek_pos < in->peek_len) {
        size_t k = in->peek_len - in->peek_pos < n ? in->peek_len - in->peek_pos : n;
        memcpy(buf, in->peeked + in->peek_pos, k);
        in->peek_pos += k;
        if (in->peek_pos == in->peek_len) {
            free(in->peeked);
            in->peeked = NULL;
            in->peek_len = in->peek_pos = in->peek_cap = 0;
        }
        return (long)k;
    }
    return read_source(in, buf, n);
}

/* Make the peek buffer hold n bytes, the unread peeked bytes first (at
 * peeked[0..peek_len), peek_pos 0). Returns 0, or -1 after printing an
 * error. */
static int peek_room(input *in, size_t n)
{
    size_t have = in->peek_len - in->peek_pos;
    if (in->peek_cap < n) {
        uint8_t *p = malloc(n);
        if (!p) {
            diag(DIAG_ERROR, in->name, NULL, "out of memory");
            return -1;
        }
        if (have)
            memcpy(p, in->peeked + in->peek_pos, have);
        free(in->peeked);
        in->peeked = p;
        in->peek_cap = n;
    } else if (in->peek_pos) {
        memmove(in->peeked, in->peeked + in->peek_pos, have);
    }
    in->peek_pos = 0;
    in->peek_len = have;
    return 0;
}

long input_peek(input *in, size_t n, const void **data)
{
    if (in->peek_len - in->peek_pos < n) {
        if (peek_room(in, n) < 0)
            return -1;
        while (in->peek_len < n) {
            long got = read_source(in, in->peeked + in->peek_len, n - in->peek_len);
            if (got < 0)
                return -1;
            if (got == 0)
                break;
            in->peek_len += (size_t)got;
        }
    }
    *data = in->peeked + in->peek_pos;
    return (long)(in->peek_len - in->peek_pos < n ? in->peek_len - in->peek_pos : n);
}

long input_peek_more(input *in, size_t max, const void **data)
{
    if (in->peek_len - in->peek_pos < max) {
        if (peek_room(in, max) < 0)
            return -1;
        long got = read_source(in, in->peeked + in->peek_len, max - in->peek_len);
        if (got < 0)
            return -1;
        in->peek_len += (size_t)got;
    }
    *data = in->peeked + in->peek_pos;
    return (long)(in->peek_len - in->peek_pos);
}

int input_read_all(input *in, strbuf *out)
{
    for (;;) {
        char *d = sb_reserve(out, sizeof in->raw);
        if (!d) {
            diag(DIAG_ERROR, in->name, NULL, "out of memory");
            return -1;
        }
        long got = input_read(in, d, sizeof in->raw);
        if (got < 0)
            return -1;
        if (got == 0)
            return 0;
        out->len += (size_t)got;
        if (out->len > INPUT_MAX_ALL) {
            diag(DIAG_ERROR, in->name, NULL, "larger than %zu bytes", INPUT_MAX_ALL);
            return -1;
        }
    }
}

void input_close(input *in)
{
#if BTP_CLI_HAVE_LZMA
    if (in->lzma) {
        lzma_end(in->lzma);
        free(in->lzma);
    }
#endif
    in->lzma = NULL;
    free(in->peeked);
    in->peeked = NULL;
    in->peek_len = in->peek_pos = in->peek_cap = 0;
    if (in->owns_fd)
        close(in->fd);
    in->owns_fd = 0;
    in->fd = -1;
}

int input_is_file(const char *path)
{
    struct stat st;
    int ok = !path || strcmp(path, "-") == 0 ? fstat(0, &st) == 0 : stat(path, &st) == 0;
    return ok && S_ISREG(st.st_mode);
}
