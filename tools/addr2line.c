/* addr2line through pipes (see addr2line.h). */
#include "addr2line.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "diag.h"
#include "strbuf.h"

static int fail(const char *prog, const char *what)
{
    diag(DIAG_ERROR, prog, NULL, "%s: %s", what, strerror(errno));
    return -1;
}

/* Write `in` to fd_in and read fd_out to EOF, interleaved. */
static int exchange(const char *prog, int fd_in, int fd_out, const strbuf *in, strbuf *out)
{
    size_t done = 0;
    int open_in = 1;
    if (in->len == 0) {
        close(fd_in);
        open_in = 0;
    }
    for (;;) {
        struct pollfd p[2] = {{fd_out, POLLIN, 0}, {open_in ? fd_in : -1, POLLOUT, 0}};
        if (poll(p, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            return fail(prog, "poll");
        }
        if (open_in && (p[1].revents & (POLLOUT | POLLERR | POLLHUP))) {
            ssize_t w = write(fd_in, in->data + done, in->len - done);
            if (w < 0 && errno != EAGAIN && errno != EINTR)
                return fail(prog, "write");
            if (w > 0)
                done += (size_t)w;
            if (done == in->len) {
                close(fd_in);
                open_in = 0;
            }
        }
        if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
            char *buf = sb_reserve(out, 65536);
            if (!buf)
                return -1;
            ssize_t r = read(fd_out, buf, 65536);
            if (r < 0 && errno != EINTR && errno != EAGAIN)
                return fail(prog, "read");
            if (r == 0)
                break;
            if (r > 0)
                out->len += (size_t)r;
        }
    }
    if (open_in)
        close(fd_in);
    return 0;
}

/* Next line of s[*pos..len) as a new string (NULL at the end). */
static char *next_line(const strbuf *s, size_t *pos)
{
    if (*pos >= s->len)
        return NULL;
    const char *b = s->data + *pos, *nl = memchr(b, '\n', s->len - *pos);
    size_t n = nl ? (size_t)(nl - b) : s->len - *pos;
    *pos += n + (nl != NULL);
    return strndup(b, n);
}

int addr2line_run(const char *prog, const char *elf, const uint64_t *addrs, size_t n,
                  symbol *syms)
{
    int to_child[2], from_child[2];
    strbuf in = STRBUF_INIT, out = STRBUF_INIT;
    memset(syms, 0, n * sizeof *syms);
    for (size_t i = 0; i < n; i++)
        sb_printf(&in, "0x%llx\n", (unsigned long long)addrs[i]);
    if (in.oom)
        return -1;
    if (pipe(to_child) < 0)
        return fail(prog, "pipe");
    if (pipe(from_child) < 0) {
        close(to_child[0]);
        close(to_child[1]);
        return fail(prog, "pipe");
    }
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(to_child[0]);
        close(to_child[1]);
        close(from_child[0]);
        close(from_child[1]);
        errno = e;
        return fail(prog, "fork");
    }
    if (pid == 0) {
        dup2(to_child[0], 0);
        dup2(from_child[1], 1);
        close(to_child[0]);
        close(to_child[1]);
        close(from_child[0]);
        close(from_child[1]);
        execlp(prog, prog, "-f", "-C", "-e", elf, (char *)NULL);
        fprintf(stderr, "btpack: %s: cannot run: %s\n", prog, strerror(errno));
        _exit(127);
    }
    close(to_child[0]);
    close(from_child[1]);
    fcntl(to_child[1], F_SETFL, fcntl(to_child[1], F_GETFL) | O_NONBLOCK);
    /* A child that dies early must not kill us with SIGPIPE. */
    void (*old)(int) = signal(SIGPIPE, SIG_IGN);
    int rc = exchange(prog, to_child[1], from_child[0], &in, &out);
    signal(SIGPIPE, old);
    close(from_child[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (rc == 0 && (!WIFEXITED(status) || WEXITSTATUS(status) != 0)) {
        diag(DIAG_ERROR, prog, NULL, "failed (exit status %d)",
             WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        rc = -1;
    }
    size_t pos = 0;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        syms[i].function = next_line(&out, &pos);
        syms[i].location = next_line(&out, &pos);
        if (!syms[i].function || !syms[i].location) {
            diag(DIAG_ERROR, prog, NULL, "gave %zu answers for %zu addresses", i, n);
            rc = -1;
        }
    }
    sb_free(&in);
    sb_free(&out);
    if (rc < 0)
        symbols_free(syms, n);
    return rc;
}

void symbols_free(symbol *syms, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(syms[i].function);
        free(syms[i].location);
        syms[i].function = syms[i].location = NULL;
    }
}
