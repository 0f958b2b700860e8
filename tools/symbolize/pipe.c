/* A symbolizer process through pipes (pipe.h). */
#include "symbolize/pipe.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct why_buf {
    char *s;
    size_t len;
} why_buf;

static int fail(why_buf *w, const char *prog, const char *what)
{
    snprintf(w->s, w->len, "%s: %s: %s", prog, what, strerror(errno));
    return -1;
}

/* Write `in` to fd_in and read fd_out to EOF, interleaved. */
static int exchange(why_buf *w, const char *prog, int fd_in, int fd_out, const strbuf *in, strbuf *out)
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
            return fail(w, prog, "poll");
        }
        if (open_in && (p[1].revents & (POLLOUT | POLLERR | POLLHUP))) {
            ssize_t wr = write(fd_in, in->data + done, in->len - done);
            if (wr < 0 && errno != EAGAIN && errno != EINTR && errno != EPIPE)
                return fail(w, prog, "write");
            if (wr > 0)
                done += (size_t)wr;
            /* EPIPE: the child is gone or stopped reading. Read what it
             * wrote to the end; its exit status then says what happened,
             * which is more use than "Broken pipe". */
            if (done == in->len || (wr < 0 && errno == EPIPE)) {
                close(fd_in);
                open_in = 0;
            }
        }
        if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
            char *buf = sb_reserve(out, 65536);
            if (!buf) {
                snprintf(w->s, w->len, "out of memory");
                return -1;
            }
            ssize_t r = read(fd_out, buf, 65536);
            if (r < 0 && errno != EINTR && errno != EAGAIN)
                return fail(w, prog, "read");
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

int pipe_run(const char *prog, const char *const *args, const char *file,
             const uint64_t *addrs, size_t n, strbuf *out, char *why, size_t why_len)
{
    why_buf w = {why, why_len};
    int to_child[2], from_child[2];
    strbuf in = STRBUF_INIT;
    const char *argv[16];
    size_t argc = 0;
    argv[argc++] = prog;
    for (size_t i = 0; args && args[i] && argc < 12; i++)
        argv[argc++] = args[i];
    argv[argc++] = "-e";
    argv[argc++] = file;
    argv[argc] = NULL;
    for (size_t i = 0; i < n; i++) {
        char num[24], *e = fmt_hex_u64(num, addrs[i]);
        *e++ = '\n';
        sb_add(&in, num, (size_t)(e - num));
    }
    if (in.oom) {
        sb_free(&in);
        snprintf(why, why_len, "out of memory");
        return -1;
    }
    if (pipe(to_child) < 0) {
        sb_free(&in);
        return fail(&w, prog, "pipe");
    }
    if (pipe(from_child) < 0) {
        close(to_child[0]);
        close(to_child[1]);
        sb_free(&in);
        return fail(&w, prog, "pipe");
    }
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(to_child[0]);
        close(to_child[1]);
        close(from_child[0]);
        close(from_child[1]);
        sb_free(&in);
        errno = e;
        return fail(&w, prog, "fork");
    }
    if (pid == 0) {
        dup2(to_child[0], 0);
        dup2(from_child[1], 1);
        close(to_child[0]);
        close(to_child[1]);
        close(from_child[0]);
        close(from_child[1]);
        execvp(prog, (char *const *)argv);
        fprintf(stderr, "btpack: %s: cannot run: %s\n", prog, strerror(errno));
        _exit(127);
    }
    close(to_child[0]);
    close(from_child[1]);
    fcntl(to_child[1], F_SETFL, fcntl(to_child[1], F_GETFL) | O_NONBLOCK);
    /* A child that dies early must not kill us with SIGPIPE. */
    void (*old)(int) = signal(SIGPIPE, SIG_IGN);
    int rc = exchange(&w, prog, to_child[1], from_child[0], &in, out);
    signal(SIGPIPE, old);
    close(from_child[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (rc == 0 && (!WIFEXITED(status) || WEXITSTATUS(status) != 0)) {
        snprintf(why, why_len, "%s failed (%s %d)", prog,
                 WIFEXITED(status) ? "exit status" : "signal",
                 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
        rc = -1;
    }
    sb_free(&in);
    return rc;
}
