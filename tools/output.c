/* Command output without losing a user's file (see output.h). */
#include "output.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "diag.h"

/* ---- removing the temporary file when a signal ends the command ------ */

/* A signal handler may only use async-signal-safe calls (unlink, rename,
 * raise) on data set up before: the two paths live in static buffers. */
static char sig_tmp[PATH_MAX], sig_path[PATH_MAX];
static volatile sig_atomic_t sig_armed, sig_keep;
static const int sig_list[] = {SIGINT, SIGTERM, SIGHUP};

static void on_signal(int sig)
{
    if (sig_armed) {
        /* stat() is async-signal-safe: nothing written yet replaces nothing */
        struct stat st;
        if (sig_keep && stat(sig_tmp, &st) == 0 && st.st_size > 0)
            rename(sig_tmp, sig_path);
        else
            unlink(sig_tmp);
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

static void arm_signals(const output *o)
{
    if (strlen(o->tmp) >= sizeof sig_tmp || strlen(o->path) >= sizeof sig_path)
        return; /* no room: a signal leaves the temporary file behind */
    memcpy(sig_tmp, o->tmp, strlen(o->tmp) + 1);
    memcpy(sig_path, o->path, strlen(o->path) + 1);
    sig_keep = (o->flags & OUTPUT_KEEP_PARTIAL) != 0;
    sig_armed = 1;
    for (size_t i = 0; i < sizeof sig_list / sizeof sig_list[0]; i++) {
        struct sigaction old, sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_signal;
        sigemptyset(&sa.sa_mask);
        /* a signal the caller ignores (nohup) stays ignored */
        if (sigaction(sig_list[i], NULL, &old) == 0 && old.sa_handler != SIG_IGN)
            sigaction(sig_list[i], &sa, NULL);
    }
}

static void disarm_signals(void)
{
    sig_armed = 0;
}

/* ---- opening ----------------------------------------------------------- */

static void report(output *o, const char *what)
{
    if (!o->failed)
        diag(DIAG_ERROR, o->name, NULL, "%s: %s", what, strerror(errno));
    o->failed = 1;
}

/* Identity of the input (stdin when path is NULL or "-"); 0 if unknown. */
static int input_identity(const char *in, struct stat *st)
{
    if (!in || strcmp(in, "-") == 0)
        return fstat(0, st) == 0;
    return stat(in, st) == 0;
}

static int same_file(const struct stat *a, const struct stat *b)
{
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/* "DIR/.BASE.XXXXXX" for path "DIR/BASE" (".BASE.XXXXXX" without a DIR). */
static char *temp_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    size_t dir = slash ? (size_t)(slash - path) + 1 : 0;
    size_t base = strlen(path + dir);
    if (base > 200) /* leave room within NAME_MAX for the dot and suffix */
        base = 200;
    char *t = malloc(dir + base + 9);
    if (t) {
        memcpy(t, path, dir);
        t[dir] = '.';
        memcpy(t + dir + 1, path + dir, base);
        memcpy(t + dir + 1 + base, ".XXXXXX", 8);
    }
    return t;
}

void output_stdio(output *o)
{
    memset(o, 0, sizeof *o);
    o->name = "<stdout>";
    o->fd = 1;
    o->f = stdout;
}

/* The input among in[0..n_in) (n_in == 0: stdin) that is the regular file
 * *ost, or NULL: the name to print, "<stdin>" for stdin. */
static const char *input_among(char *const *in, int n_in, const struct stat *ost)
{
    struct stat ist;
    if (!S_ISREG(ost->st_mode))
        return NULL;
    for (int i = 0; i < (n_in ? n_in : 1); i++) {
        const char *p = n_in ? in[i] : NULL;
        if (input_identity(p, &ist) && same_file(&ist, ost))
            return p && strcmp(p, "-") != 0 ? p : "<stdin>";
    }
    return NULL;
}

int output_open(output *o, const char *path, char *const *in, int n_in, unsigned flags)
{
    memset(o, 0, sizeof *o);
    o->flags = flags;
    o->fd = -1;
    struct stat ost;
    const char *same;
    if (!path || strcmp(path, "-") == 0) {
        o->name = "<stdout>";
        o->fd = 1;
        if (fstat(1, &ost) == 0 && input_among(in, n_in, &ost)) {
            diag(DIAG_ERROR, o->name, NULL, "standard output is the input file; "
                 "write to another file");
            return EXIT_USAGE;
        }
        if ((flags & OUTPUT_BINARY) && !(flags & OUTPUT_FORCE) && isatty(1)) {
            diag(DIAG_ERROR, o->name, NULL, "will not write binary output to a terminal; "
                 "use -o FILE, a redirection, or --force");
            return EXIT_USAGE;
        }
        return 0;
    }
    o->name = path;
    if (stat(path, &ost) == 0) {
        if ((same = input_among(in, n_in, &ost)) != NULL) {
            diag(DIAG_ERROR, path, NULL, "the output is the input file (%s); write to "
                 "another file", same);
            return EXIT_USAGE;
        }
        /* replacing it must not do what writing to it could not */
        if (S_ISREG(ost.st_mode) && access(path, W_OK) != 0) {
            diag(DIAG_ERROR, path, NULL, "cannot write: %s", strerror(errno));
            return EXIT_BAD_INPUT;
        }
        if (!S_ISREG(ost.st_mode)) {
            /* a device, FIFO or terminal: nothing to replace, write to it */
            o->fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
            if (o->fd < 0) {
                diag(DIAG_ERROR, path, NULL, "cannot open: %s", strerror(errno));
                return EXIT_BAD_INPUT;
            }
            return 0;
        }
    }
    /* Write through a symlink: replace its target, not the link. */
    struct stat lst;
    if (lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode)) {
        o->path = realpath(path, NULL);
        if (!o->path) {
            diag(DIAG_ERROR, path, NULL, "cannot resolve the symbolic link: %s",
                 strerror(errno));
            return EXIT_BAD_INPUT;
        }
    } else {
        o->path = strdup(path);
    }
    o->tmp = o->path ? temp_name(o->path) : NULL;
    if (!o->tmp) {
        diag(DIAG_ERROR, NULL, NULL, "out of memory");
        return EXIT_BAD_INPUT;
    }
    o->fd = mkostemp(o->tmp, O_CLOEXEC);
    if (o->fd < 0) {
        diag(DIAG_ERROR, path, NULL, "cannot create a temporary file beside it (%s): %s",
             o->tmp, strerror(errno));
        free(o->tmp);
        free(o->path);
        o->tmp = o->path = NULL;
        return EXIT_BAD_INPUT;
    }
    /* The mode a plain create would give, or the replaced file's. */
    mode_t mask = umask(0);
    umask(mask);
    mode_t mode = stat(o->path, &ost) == 0 ? ost.st_mode & 07777 : 0666 & ~mask;
    if (fchmod(o->fd, mode) != 0) {
        /* not fatal: the file keeps mkstemp's 0600 */
    }
    arm_signals(o);
    return 0;
}

int output_write(output *o, const void *p, size_t n)
{
    const char *c = p;
    if (o->failed)
        return -1;
    while (n > 0) {
        ssize_t k = write(o->fd, c, n);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            report(o, "write error");
            return -1;
        }
        c += k;
        n -= (size_t)k;
    }
    return 0;
}

int output_failed(output *o)
{
    if (o->f && !o->failed && ferror(o->f)) {
        errno = EIO;
        fflush(o->f); /* fails again, leaving the cause in errno */
        report(o, "write error");
    }
    return o->failed;
}

int output_close(output *o, int ok)
{
    if (o->f) {
        if (fflush(o->f) != 0)
            report(o, "write error");
        output_failed(o);
        return o->failed ? -1 : 0;
    }
    if (o->fd > 2 && close(o->fd) != 0)
        report(o, "write error");
    o->fd = -1;
    int rc = o->failed ? -1 : 0;
    if (o->tmp) {
        disarm_signals();
        if (ok && !o->failed) {
            if (rename(o->tmp, o->path) != 0) {
                report(o, "cannot rename the finished output into place");
                unlink(o->tmp);
                rc = -1;
            }
        } else if (o->flags & OUTPUT_KEEP_PARTIAL) {
            if (rename(o->tmp, o->path) == 0)
                diag(DIAG_WARNING, o->name, NULL, "incomplete output kept (--keep-partial)");
            else
                report(o, "cannot rename the partial output into place");
        } else {
            unlink(o->tmp);
        }
        free(o->tmp);
        free(o->path);
        o->tmp = o->path = NULL;
    }
    return rc;
}

uint64_t output_clock_ms(void)
{
    struct timespec ts = {0, 0};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}
