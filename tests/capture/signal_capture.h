/*
 * For the tests that walk from several threads while signals interrupt
 * them: a SIGUSR1 handler that captures with the cfi method on top of
 * whatever the interrupted code was doing (maybe writing a cache slot or
 * its walk memo), and checks that the interrupted pc comes first, then
 * its callers. Include after defining CAP (frames a capture may take).
 */
#ifndef BTPACK_TESTS_CAPTURE_SIGNAL_CAPTURE_H
#define BTPACK_TESTS_CAPTURE_SIGNAL_CAPTURE_H

#include <btpack/btpack.h>

#include "capture/cfi_cache.h"

#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <time.h>

static volatile sig_atomic_t handler_bad;    /* a handler's capture was wrong */
static _Atomic unsigned long handler_walks;  /* captures made in handlers */

static void on_signal(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)si;
    btp_capture_options o = {0};
    o.method = BTP_CAPTURE_CFI;
    o.flags = BTP_CAPTURE_ASYNC_SIGNAL_SAFE;
    btp_frame f[CAP];
    size_t n = 0;
    btp_regs regs;
    if (btp_capture_context(&o, uc, f, CAP, &n) != BTP_OK || n < 2 ||
        btp_regs_from_context(uc, &regs) != BTP_OK || f[0].value != regs.pc)
        handler_bad = 1;
    handler_walks++;
}

/* Interrupt threads t[0..n) with SIGUSR1 `rounds` times, 0.1 ms apart
 * (clearing the global cfi cache first every `clear_every` rounds if that
 * is not 0), then set *stop, join them and ignore SIGUSR1 again. */
static void interrupt_and_join(pthread_t *t, int n, unsigned rounds, unsigned clear_every,
                               _Atomic int *stop)
{
    for (unsigned k = 0; k < rounds; k++) {
        if (clear_every && k % clear_every == 0)
            btp_cfi_cache_clear(btp_cfi_cache_global());
        for (int i = 0; i < n; i++)
            pthread_kill(t[i], SIGUSR1);
        struct timespec ts = {0, 100000};
        nanosleep(&ts, NULL);
    }
    *stop = 1;
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    signal(SIGUSR1, SIG_IGN);
}

/* on_signal as the SIGUSR1 handler. */
static void catch_sigusr1(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigaction(SIGUSR1, &sa, NULL);
}

#endif
