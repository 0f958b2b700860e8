/*
 * The crash handler's fault guard: run a piece of capture code so that a
 * fault inside it (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT) abandons that
 * piece instead of killing the process, for code that reads memory it
 * cannot fully vouch for (another unwinder, an image whose file was
 * truncated under its mapping). sigsetjmp before, siglongjmp from the
 * handler re-entered by the fault.
 */
#ifndef BTPACK_CAPTURE_GUARD_H
#define BTPACK_CAPTURE_GUARD_H

/* The signals the crash handler takes, and so the guard catches. */
extern const int btp_crash_signals[5];
#define BTP_N_CRASH_SIGNALS 5

typedef void (*btp_guarded_fn)(void *arg);

/*
 * Run fn(arg) with the crash signals unblocked: 0 when fn returned, 1 when
 * it faulted and was abandoned (its effects so far remain). A fault is
 * caught only while btp_crash_install()'s handler is installed for it; one
 * thread at a time is guarded (another thread's fn runs unguarded).
 * Async-signal-safe. Nested calls run the inner fn unguarded.
 */
int btp_guarded(btp_guarded_fn fn, void *arg);

/* Called first in the crash handler: returns only if the signal is not a
 * fault inside guarded code of this thread (otherwise it jumps back into
 * btp_guarded()). */
void btp_guard_catch(void);

#endif
