/*
 * A program that dies on purpose, with btpack's crash handler installed,
 * for tests/capture/crash_test.py. Built twice (with and without frame
 * pointers). Every cause is reached through the same user call chain,
 *
 *   main (or thread_start) -> level1 -> level2 -> level3 -> do_<cause>
 *
 * so the record, symbolized, must name do_<cause>, level3, level2, level1
 * and main (thread_start) in that order.
 *
 * usage: crash_prog CAUSE WHERE OUT [--method M] [--prev sa|plain|ign]
 *                   [--no-chain] [--install-twice] [--no-map-lines] [--threads N]
 *                   [--dlopen LIB] [--dlclose LIB]
 *  CAUSE  segv bus ill fpe abort assert overflow nullcall corruptfp selffp
 *  WHERE  main | thread | many (N threads, default 8, crash at once)
 *  OUT    the record file (the previous handler appends its line to it)
 *  --prev installs a handler before btp_crash_install (SA_SIGINFO, plain,
 *         or SIG_IGN) that appends "prev-handler signal=N latency_ns=T"
 *         (T: from just before the crash to this handler) and then dies by
 *         the signal as a well-behaved crash reporter does.
 *  --dlopen loads LIB after the handler is installed; --dlclose loads it
 *         before and unloads it after.
 * Exit status 77: the method asked for is not built in.
 */
#undef NDEBUG
#include "chain.h"

#include <btpack/btpack.h>

#include <assert.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* The crash itself, not a sanitizer's report of it, under ASan/UBSan. */
#define CRASHES __attribute__((no_sanitize_address, no_sanitize("undefined")))

typedef void (*cause_fn)(int);

void do_segv(int arg);
void do_bus(int arg);
void do_ill(int arg);
void do_fpe(int arg);
void do_abort(int arg);
void do_assert(int arg);
void do_overflow(int arg);
void do_nullcall(int arg);
void level3(cause_fn f, int arg);
void level2(cause_fn f, int arg);
void level1(cause_fn f, int arg);
void *thread_start(void *arg);

static int *volatile null_pointer;
static volatile int zero;
static void (*volatile null_function)(void);
static int out_fd = -1;
static volatile long long t_crash; /* CLOCK_MONOTONIC ns just before the crash */
static const char *corrupt_fp;     /* NULL, "wild" or "self" */
static uintptr_t wild_fp;

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

CRASHES NOINL void do_segv(int arg)
{
    *null_pointer = arg;
    BARRIER();
}

CRASHES NOINL void do_bus(int arg)
{
    /* A shared mapping past the end of its (empty) file. */
    int fd = memfd_create("crash_prog", 0);
    volatile char *p = fd < 0 ? NULL : mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (!p || p == MAP_FAILED)
        _exit(125);
    t_crash = now_ns();
    p[0] = (char)arg;
    BARRIER();
}

NOINL void do_ill(int arg)
{
    if (arg >= 0)
        UNDEFINED_INSTRUCTION();
    BARRIER();
}

CRASHES NOINL void do_fpe(int arg)
{
#if defined(__x86_64__) || defined(__i386__)
    volatile int r = arg / zero;
    (void)r;
#else
    /* Integer division by zero does not trap here: the signal is raised. */
    (void)arg;
    raise(SIGFPE);
#endif
    BARRIER();
}

NOINL void do_abort(int arg)
{
    if (arg >= 0)
        abort();
    BARRIER();
}

NOINL void do_assert(int arg)
{
    assert(arg < 0);
    BARRIER();
}

NOINL void do_overflow(int arg)
{
    volatile char pad[256];
    pad[0] = (char)arg;
    if (arg != -1)
        do_overflow(arg + 1);
    BARRIER();
    pad[1] = pad[0];
}

CRASHES NOINL void do_nullcall(int arg)
{
    (void)arg;
    null_function();
    BARRIER();
}

NOINL void level3(cause_fn f, int arg)
{
    if (!t_crash)
        t_crash = now_ns();
    f(arg);
    BARRIER();
}

CRASHES NOINL void level2(cause_fn f, int arg)
{
    /* The saved frame pointer of this frame (level1's) made wild or made
     * to point at itself: a frame-pointer chain that must end the walk
     * cleanly (or, in code without frame pointers, change nothing). */
    uintptr_t *frame = __builtin_frame_address(0);
    if (corrupt_fp && strcmp(corrupt_fp, "self") == 0)
        frame[0] = (uintptr_t)frame;
    else if (corrupt_fp)
        frame[0] = wild_fp;
    level3(f, arg);
    BARRIER();
}

NOINL void level1(cause_fn f, int arg)
{
    level2(f, arg);
    BARRIER();
}

static cause_fn cause;
static pthread_barrier_t all_ready;
static int many;

NOINL void *thread_start(void *arg)
{
    if (btp_crash_thread_init() != BTP_OK)
        _exit(124);
    if (many)
        pthread_barrier_wait(&all_ready);
    level1(cause, (int)(intptr_t)arg);
    BARRIER();
    return NULL;
}

/* ------------------------------------------------------------------ */
/* The handler installed before btpack's                                */
/* ------------------------------------------------------------------ */

static void prev_line(int sig)
{
    long long dt = now_ns() - t_crash;
    char line[96];
    int n = snprintf(line, sizeof line, "prev-handler signal=%d latency_ns=%lld\n", sig, dt);
    if (n > 0 && write(out_fd, line, (size_t)n) < 0)
        _exit(123);
}

/* As a crash reporter would: its line, then the default action. A fault
 * recurs on return; anything else is raised again. */
static void prev_die(int sig, int recurs)
{
    signal(sig, SIG_DFL);
    if (!recurs)
        raise(sig);
}

static void prev_siginfo(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    prev_line(sig);
    prev_die(sig, si->si_code > 0 && sig != SIGABRT);
}

static void prev_plain(int sig)
{
    prev_line(sig);
    prev_die(sig, 0);
}

static void install_prev(const char *how)
{
    static const int sigs[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sigemptyset(&sa.sa_mask);
    if (strcmp(how, "sa") == 0) {
        sa.sa_sigaction = prev_siginfo;
        sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    } else if (strcmp(how, "plain") == 0) {
        sa.sa_handler = prev_plain;
        sa.sa_flags = SA_ONSTACK;
    } else {
        sa.sa_handler = SIG_IGN;
    }
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        sigaction(sigs[i], &sa, NULL);
}

static int usage(void)
{
    fprintf(stderr, "usage: crash_prog CAUSE main|thread|many OUT [--method M] "
                    "[--prev sa|plain|ign] [--no-chain] [--install-twice] [--no-map-lines] "
                    "[--threads N] [--dlopen LIB] [--dlclose LIB]\n");
    return 2;
}

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        cause_fn f;
    } causes[] = {{"segv", do_segv},       {"bus", do_bus},           {"ill", do_ill},
                  {"fpe", do_fpe},         {"abort", do_abort},       {"assert", do_assert},
                  {"overflow", do_overflow}, {"nullcall", do_nullcall}, {"corruptfp", do_segv},
                  {"selffp", do_segv}};
    if (argc < 4)
        return usage();
    for (size_t i = 0; i < sizeof causes / sizeof causes[0]; i++)
        if (strcmp(argv[1], causes[i].name) == 0)
            cause = causes[i].f;
    if (!cause)
        return usage();
    if (strcmp(argv[1], "corruptfp") == 0)
        corrupt_fp = "wild";
    if (strcmp(argv[1], "selffp") == 0)
        corrupt_fp = "self";
    const char *where = argv[2];
    int threads = 8, twice = 0;
    btp_crash_options opt;
    memset(&opt, 0, sizeof opt);
    const char *prev = NULL, *load_after = NULL, *unload_after = NULL;
    for (int i = 4; i < argc; i++) {
        if (strcmp(argv[i], "--method") == 0 && i + 1 < argc) {
            if (btp_capture_method_parse(argv[++i], &opt.capture.method) != BTP_OK)
                return usage();
        } else if (strcmp(argv[i], "--prev") == 0 && i + 1 < argc) {
            prev = argv[++i];
        } else if (strcmp(argv[i], "--no-chain") == 0) {
            opt.flags |= BTP_CRASH_NO_CHAIN;
        } else if (strcmp(argv[i], "--no-map-lines") == 0) {
            opt.flags |= BTP_CRASH_NO_MAP_LINES;
        } else if (strcmp(argv[i], "--install-twice") == 0) {
            twice = 1;
        } else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
            threads = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--dlopen") == 0 && i + 1 < argc) {
            load_after = argv[++i];
        } else if (strcmp(argv[i], "--dlclose") == 0 && i + 1 < argc) {
            unload_after = argv[++i];
        } else {
            return usage();
        }
    }
    out_fd = open(argv[3], O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
    if (out_fd < 0) {
        perror(argv[3]);
        return 1;
    }
    /* An address that is canonical but not mapped: reading it faults. */
    void *hole = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    wild_fp = hole == MAP_FAILED ? 16 : (uintptr_t)hole + 2048;
    if (prev)
        install_prev(prev);
    void *unload = unload_after ? dlopen(unload_after, RTLD_NOW) : NULL;
    if (unload_after && !unload) {
        fprintf(stderr, "crash_prog: %s\n", dlerror());
        return 1;
    }
    for (int k = 0; k < 1 + twice; k++) {
        btp_status st = btp_crash_install(out_fd, &opt);
        if (st != BTP_OK) {
            fprintf(stderr, "crash_prog: %s\n", btp_strerror(st));
            return st == BTP_E_NO_METHOD ? 77 : 1; /* 77: the method is not built in */
        }
    }
    if (load_after && !dlopen(load_after, RTLD_NOW)) {
        fprintf(stderr, "crash_prog: %s\n", dlerror());
        return 1;
    }
    if (unload && dlclose(unload) != 0)
        return 1;
    if (strcmp(where, "main") == 0) {
        level1(cause, 0);
    } else if (strcmp(where, "thread") == 0 || strcmp(where, "many") == 0) {
        many = strcmp(where, "many") == 0;
        int n = many ? threads : 1;
        if (n < 1 || n > 256 || (many && pthread_barrier_init(&all_ready, NULL, (unsigned)n)))
            return usage();
        pthread_t t[256];
        for (int i = 0; i < n; i++)
            if (pthread_create(&t[i], NULL, thread_start, (void *)(intptr_t)i) != 0)
                return 1;
        for (int i = 0; i < n; i++)
            pthread_join(t[i], NULL);
    } else {
        return usage();
    }
    return 3; /* not reached: the process died */
}
