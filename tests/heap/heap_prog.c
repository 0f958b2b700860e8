/* A program for the tracer tests (tests/heap/heap_cli.py): known
 * allocations from known functions, in threads, across fork, signals, exec
 * _exit, abort and SIGKILL. What it does is fixed by its first argument; the test checks
 * the recorded log against it. */
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define THREADS 4
#define PER_THREAD 20000 /* with their frees, several times through a 1 MiB ring */

static void *volatile sink;

/* 3 leaks of 1001, 1002, 1003 bytes. */
__attribute__((noinline)) static void leaky(void)
{
    for (int i = 1; i <= 3; i++) {
        sink = malloc(1000 + (size_t)i);
        memset(sink, i, 1000 + (size_t)i);
    }
}

/* PER_THREAD allocations of 48 bytes, each freed (half by another thread's
 * numbering: they interleave), none leaked. */
__attribute__((noinline)) static void *worker(void *arg)
{
    void *keep[64] = {0};
    for (int i = 0; i < PER_THREAD; i++) {
        void *p = malloc(48);
        memset(p, 1, 48);
        free(keep[i % 64]);
        keep[i % 64] = p;
    }
    for (int i = 0; i < 64; i++)
        free(keep[i]);
    return arg;
}

/* Every other allocation function once, each result freed. */
__attribute__((noinline)) static void every_function(void)
{
    void *p = calloc(10, 10);
    p = realloc(p, 5000);
    p = reallocarray(p, 30, 100);
    free(p);
    if (posix_memalign(&p, 64, 100) == 0)
        free(p);
    /* through sink: a compiler may drop an allocation freed at once */
    sink = aligned_alloc(64, 128);
    free(sink);
    sink = memalign(64, 200);
    free(sink);
    sink = valloc(300);
    free(sink);
    sink = pvalloc(400);
    free(sink);
}

static void on_usr1(int sig)
{
    (void)sig;
    /* Not async-signal-safe in general, but programs do it: the tracer
     * must survive (it is not inside its own code here). */
    sink = malloc(4321);
    free(sink);
}

/* Not to be traced: the child's allocation of 77777 bytes. */
__attribute__((noinline)) static void child_work(void)
{
    sink = malloc(77777);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "basic";
    leaky();
    every_function();
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, NULL);
    signal(SIGUSR1, on_usr1);
    for (int i = 0; i < 10; i++)
        raise(SIGUSR1);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    pid_t pid = fork();
    if (pid == 0) {
        child_work();
        _exit(0);
    }
    waitpid(pid, NULL, 0);
    if (!strcmp(mode, "exec")) {
        execl("/bin/true", "true", (char *)NULL);
        return 3;
    }
    if (!strcmp(mode, "_exit")) {
        fflush(stdout);
        _exit(0);
    }
    if (!strcmp(mode, "crash"))
        abort();
    if (!strcmp(mode, "kill"))
        kill(getpid(), SIGKILL);
    return 0;
}
