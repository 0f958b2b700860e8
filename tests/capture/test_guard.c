/*
 * The crash handler's fault guard (lib/capture/guard.c): with btpack's
 * handler installed, a fault inside guarded code (a NULL store, a store
 * past the end of a file's mapping, an undefined instruction, abort())
 * abandons that code and is reported, the process goes on, no record is
 * written for it, and the signal mask is what it was before.
 */
#include "../check.h"
#include "chain.h"

#include "capture/guard.h"

#include <btpack/btpack.h>

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static volatile int *volatile nowhere;
static volatile char *past_end;
static volatile int reached; /* volatile: not stored before the fault */

#define CRASHES __attribute__((noinline, no_sanitize_address, no_sanitize("undefined")))

static CRASHES void null_store(void *arg)
{
    (void)arg;
    *nowhere = 1;
    reached = 1;
}

static CRASHES void bus_store(void *arg)
{
    (void)arg;
    past_end[0] = 1;
    reached = 1;
}

static CRASHES void undefined_instruction(void *arg)
{
    (void)arg;
    UNDEFINED_INSTRUCTION();
    reached = 1;
}

static void aborts(void *arg)
{
    (void)arg;
    abort();
}

static void fine(void *arg)
{
    *(int *)arg = 42;
}

static void nested(void *arg)
{
    /* An inner guarded call runs unguarded: its fault is the outer's. */
    *(int *)arg = btp_guarded(null_store, NULL) + 100;
}

int main(void)
{
    char path[] = "/tmp/btpack-guard-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0, "mkstemp");
    unlink(path);
    /* Options from a newer header (a reserved word set) are refused. */
    btp_crash_options co = {0};
    co.reserved[0] = 1;
    CHECK(btp_crash_install(fd, &co) == BTP_E_UNSUPPORTED, "crash reserved");
    co.reserved[0] = 0;
    co.capture.reserved[2] = 1;
    CHECK(btp_crash_install(fd, &co) == BTP_E_UNSUPPORTED, "capture reserved in crash");
    btp_frame one[4];
    size_t n1 = 0;
    CHECK(btp_capture(&co.capture, one, 4, &n1) == BTP_E_UNSUPPORTED, "capture reserved");
    CHECK(btp_crash_install(fd, NULL) == BTP_OK, "install");
    int mfd = memfd_create("guard", 0);
    past_end = mfd < 0 ? NULL : mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
    CHECK(past_end && past_end != MAP_FAILED, "memfd mapping");

    sigset_t before, after;
    sigemptyset(&before);
    sigaddset(&before, SIGUSR1);
    pthread_sigmask(SIG_SETMASK, &before, NULL);

    int v = 0;
    CHECK(btp_guarded(fine, &v) == 0 && v == 42, "fine code: %d", v);
    reached = 0;
    CHECK(btp_guarded(null_store, NULL) == 1 && !reached, "NULL store not caught");
    reached = 0;
    CHECK(btp_guarded(bus_store, NULL) == 1 && !reached, "SIGBUS not caught");
    reached = 0;
    CHECK(btp_guarded(undefined_instruction, NULL) == 1 && !reached, "SIGILL not caught");
    CHECK(btp_guarded(aborts, NULL) == 1, "abort() not caught");
    v = 0;
    CHECK(btp_guarded(nested, &v) == 1 && v == 0, "nested: %d", v);
    CHECK(btp_guarded(fine, &v) == 0 && v == 42, "fine code after faults: %d", v);

    pthread_sigmask(SIG_SETMASK, NULL, &after);
    CHECK(sigismember(&after, SIGUSR1) == 1 && sigismember(&after, SIGSEGV) == 0 &&
              sigismember(&after, SIGABRT) == 0,
          "signal mask not restored");
    struct stat st;
    CHECK(fstat(fd, &st) == 0 && st.st_size == 0, "a record was written: %lld bytes",
          (long long)st.st_size);
    return check_finish();
}
