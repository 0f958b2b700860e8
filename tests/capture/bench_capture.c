/*
 * ns per frame for each capture method: a capture at the bottom of a chain
 * of `depth` frames, repeated; built with frame pointers so every method
 * sees the same frames. Run by `meson test --benchmark` or by hand:
 *   bench_capture [depth] [iterations]
 * Prints one line per method: frames, ns per capture, ns per frame; and the
 * same for btp_capture_cbf (capture + CBF encoding). Times are the thread's
 * CPU time (the machine may be shared) minus the cost of descending the
 * chain without capturing.
 */
#include <btpack/btpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define BARRIER() __asm__ volatile("" ::: "memory")

typedef struct job {
    btp_capture_options opt;
    int cbf;  /* 0: frames, 1: CBF, 2: no capture (baseline) */
    size_t n;
    btp_frame f[256];
    uint8_t bytes[BTP_CBF_BOUND(BTP_CAPTURE_CBF_MAX_FRAMES)];
} job;

static __attribute__((noinline)) void descend(job *j, int d)
{
    if (d > 0) {
        descend(j, d - 1);
    } else if (j->cbf == 2) {
        j->n = 0;
    } else if (j->cbf) {
        size_t len;
        btp_capture_cbf(&j->opt, NULL, j->bytes, sizeof j->bytes, &len);
        j->n = len;
    } else {
        btp_capture(&j->opt, j->f, 256, &j->n);
    }
    BARRIER();
}

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    int depth = argc > 1 ? atoi(argv[1]) : 30;
    long iters = argc > 2 ? atol(argv[2]) : 20000;
    if (depth < 0 || depth > 200 || iters < 1)
        return 2;
    static job j;
    j.cbf = 2;
    double t0 = now_ns();
    for (long i = 0; i < iters; i++)
        descend(&j, depth);
    double base = (now_ns() - t0) / (double)iters;
    printf("baseline: %.1f ns to descend %d frames\n", base, depth);
    for (int m = BTP_CAPTURE_FP; m <= BTP_CAPTURE_CFI; m++) {
        if (!btp_capture_method_available((btp_capture_method)m))
            continue;
        for (int cbf = 0; cbf < 2; cbf++) {
            j.opt = (btp_capture_options){0};
            j.opt.method = (btp_capture_method)m;
            j.cbf = 0;
            descend(&j, depth); /* warm up; count frames */
            size_t frames = j.n;
            j.cbf = cbf;
            t0 = now_ns();
            for (long i = 0; i < iters; i++)
                descend(&j, depth);
            double per = (now_ns() - t0) / (double)iters - base;
            printf("%-10s %-6s frames %3zu  %9.1f ns/capture  %6.1f ns/frame\n",
                   btp_capture_method_name((btp_capture_method)m), cbf ? "cbf" : "array", frames,
                   per, per / (double)(frames ? frames : 1));
        }
    }
    return 0;
}
