/*
 * The shared library loaded with dlopen(), as a plugin or Python's ctypes
 * loads it, after the program has started: the loader must find room for
 * its thread-local storage (an initial-exec block larger than the static
 * TLS the C library keeps spare made dlopen() fail), and the per-thread
 * state its captures make must go when threads exit, before and after
 * dlclose().
 *
 * Usage: test_capture_dlopen PATH-TO-libbtpack.so
 */
#include <btpack/btpack.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef btp_status (*init_fn)(btp_capture_options *);
typedef btp_status (*capture_fn)(const btp_capture_options *, btp_frame *, size_t, size_t *);
typedef int (*avail_fn)(btp_capture_method);
typedef const char *(*name_fn)(btp_capture_method);

static init_fn p_init;
static capture_fn p_capture;
static int failures;

#define CHECK(cond, ...)                                                                      \
    do {                                                                                      \
        if (!(cond)) {                                                                        \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                              \
            fprintf(stderr, __VA_ARGS__);                                                     \
            fputc('\n', stderr);                                                              \
            failures++;                                                                       \
        }                                                                                     \
    } while (0)

typedef struct job {
    btp_capture_method method;
    unsigned flags;
    int rounds;
    int bad;               /* captures that failed or found no frame */
    pthread_mutex_t *gate; /* held by the main thread until it lets the job end */
    int captured;          /* set (atomically) once the captures are done */
} job;

/* Captures from this thread; a few frames deep so that each has some. */
static __attribute__((noinline)) int capture_some(const job *j)
{
    btp_capture_options opt;
    if (p_init(&opt) != BTP_OK)
        return j->rounds;
    opt.method = j->method;
    opt.flags = j->flags;
    int bad = 0;
    for (int i = 0; i < j->rounds; i++) {
        btp_frame f[64];
        size_t n = 0;
        btp_status st = p_capture(&opt, f, 64, &n);
        if (st != BTP_OK || n == 0)
            bad++;
    }
    return bad;
}

static void *thread_main(void *arg)
{
    job *j = arg;
    j->bad = capture_some(j);
    __atomic_store_n(&j->captured, 1, __ATOMIC_RELEASE);
    if (j->gate) {
        pthread_mutex_lock(j->gate);
        pthread_mutex_unlock(j->gate);
    }
    return NULL;
}

static void run_threads(btp_capture_method method, unsigned flags, int threads)
{
    pthread_t t[8];
    job j[8];
    for (int i = 0; i < threads; i++) {
        j[i] = (job){method, flags, 200, 0, NULL, 0};
        CHECK(pthread_create(&t[i], NULL, thread_main, &j[i]) == 0, "pthread_create");
    }
    for (int i = 0; i < threads; i++) {
        pthread_join(t[i], NULL);
        CHECK(j[i].bad == 0, "method %d flags %u thread %d: %d of %d captures failed or empty",
              (int)method, flags, i, j[i].bad, j[i].rounds);
    }
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s LIBBTPACK.so\n", argv[0]);
        return 2;
    }
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "FAIL: dlopen: %s\n", dlerror());
        return 1;
    }
    p_init = (init_fn)dlsym(h, "btp_capture_options_init");
    p_capture = (capture_fn)dlsym(h, "btp_capture");
    avail_fn p_avail = (avail_fn)dlsym(h, "btp_capture_method_available");
    name_fn p_name = (name_fn)dlsym(h, "btp_capture_method_name");
    if (!p_init || !p_capture || !p_avail || !p_name) {
        fprintf(stderr, "FAIL: dlsym: %s\n", dlerror());
        return 1;
    }
    static const btp_capture_method methods[] = {BTP_CAPTURE_DEFAULT, BTP_CAPTURE_CFI,
                                                 BTP_CAPTURE_FP};
    int ran = 0;
    for (size_t m = 0; m < sizeof methods / sizeof methods[0]; m++) {
        if (methods[m] != BTP_CAPTURE_DEFAULT && !p_avail(methods[m]))
            continue;
        ran++;
        job self = {methods[m], 0, 200, 0, NULL, 0};
        CHECK(capture_some(&self) == 0, "%s on the main thread", p_name(methods[m]));
        /* threads that capture and exit (their state released), then the
         * same with the async-signal-safe flag (which sets nothing up) */
        run_threads(methods[m], 0, 8);
        run_threads(methods[m], BTP_CAPTURE_ASYNC_SIGNAL_SAFE, 4);
        printf("%s: main thread and 12 threads captured\n", p_name(methods[m]));
    }
    CHECK(ran > 1, "no capture method available");

    /* A thread that captured is still running when the library goes: its
     * exit must not call into the unloaded library. */
    pthread_mutex_t gate = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&gate);
    job late = {BTP_CAPTURE_DEFAULT, 0, 50, 0, &gate, 0};
    pthread_t t;
    CHECK(pthread_create(&t, NULL, thread_main, &late) == 0, "pthread_create");
    /* it captures before the library goes, then waits on the gate */
    struct timespec ts = {0, 1000 * 1000};
    for (int i = 0; i < 20000 && !__atomic_load_n(&late.captured, __ATOMIC_ACQUIRE); i++)
        nanosleep(&ts, NULL);
    CHECK(__atomic_load_n(&late.captured, __ATOMIC_ACQUIRE), "late thread never captured");
    CHECK(dlclose(h) == 0, "dlclose: %s", dlerror());
    pthread_mutex_unlock(&gate);
    pthread_join(t, NULL);
    CHECK(late.bad == 0, "late thread: %d captures failed", late.bad);
    printf("dlclose with a capturing thread alive: its exit went through\n");

    if (failures) {
        fprintf(stderr, "%d failure(s)\n", failures);
        return 1;
    }
    printf("ok\n");
    return 0;
}
