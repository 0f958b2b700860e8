/* The crash handler's fault guard (see guard.h). */
#include "capture/guard.h"

#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <unistd.h>

const int btp_crash_signals[BTP_N_CRASH_SIGNALS] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};

/* One thread at a time runs guarded code: the one whose id is in owner. */
static sigjmp_buf env;
static atomic_long owner;
static volatile sig_atomic_t armed;

static long current_tid(void)
{
    return syscall(SYS_gettid);
}

int btp_guarded(btp_guarded_fn fn, void *arg)
{
    long none = 0, me = current_tid();
    if (!atomic_compare_exchange_strong(&owner, &none, me)) {
        fn(arg);
        return 0;
    }
    sigset_t set, old;
    sigemptyset(&set);
    for (int i = 0; i < BTP_N_CRASH_SIGNALS; i++)
        sigaddset(&set, btp_crash_signals[i]);
    /* sigsetjmp saves the signal mask: the jump back restores it. */
    if (sigsetjmp(env, 1)) {
        armed = 0;
        atomic_store(&owner, 0);
        return 1;
    }
    pthread_sigmask(SIG_UNBLOCK, &set, &old);
    armed = 1;
    fn(arg);
    armed = 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    atomic_store(&owner, 0);
    return 0;
}

void btp_guard_catch(void)
{
    if (armed && atomic_load(&owner) == current_tid())
        siglongjmp(env, 1);
}
