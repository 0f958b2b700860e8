/*
 * The crash handler: on a fatal signal, capture the crashed thread from the
 * signal context, write one text record (crash record v2: header, CBF as
 * hex, the image map, the process maps) to a descriptor opened beforehand,
 * then hand the signal on to the handler installed before ours (or the
 * default action), so the process still dies by it.
 *
 * What runs in the handler, and why it is safe there (spec/capture.md has
 * the whole argument): open/read/write/close/mmap/munmap/sigaction/
 * sigprocmask/raise/nanosleep system calls; our own code on fixed buffers
 * (no stdio, no locks, no malloc); the cfi walker, which reads only memory
 * /proc/self/maps shows readable. A fault inside the capture (an unwinder
 * that trusts a corrupt stack, a file truncated under its mapping) is
 * caught by a guard (sigsetjmp before, siglongjmp from the re-entered
 * handler) and a simpler capture writes the record instead: the record
 * is never empty.
 */
#include "capture_internal.h"

#include "capture/crash_view.h"
#include "capture/guard.h"
#include "capture/procmaps.h"
#include "common/reserved.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------ */
/* Output through a small buffer and write(2)                          */
/* ------------------------------------------------------------------ */

typedef struct out {
    int fd;
    int failed;
    size_t n;
    size_t total;
    char buf[512];
} out;

static void out_flush(out *o)
{
    size_t off = 0;
    while (off < o->n && !o->failed) {
        ssize_t w = write(o->fd, o->buf + off, o->n - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            o->failed = 1;
        else
            off += (size_t)w;
    }
    o->total += o->n;
    o->n = 0;
}

static void out_char(out *o, char c)
{
    if (o->n == sizeof o->buf)
        out_flush(o);
    o->buf[o->n++] = c;
}

static void out_str(out *o, const char *s)
{
    while (*s)
        out_char(o, *s++);
}

static void out_udec(out *o, uint64_t v)
{
    char d[20];
    int n = 0;
    do {
        d[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n)
        out_char(o, d[--n]);
}

static void out_dec(out *o, long long v)
{
    if (v < 0) {
        out_char(o, '-');
        out_udec(o, (uint64_t)0 - (uint64_t)v);
    } else {
        out_udec(o, (uint64_t)v);
    }
}

static const char hexdig[] = "0123456789abcdef";

static void out_hex(out *o, uint64_t v)
{
    int shift = 60;
    while (shift > 0 && ((v >> shift) & 0xf) == 0)
        shift -= 4;
    for (; shift >= 0; shift -= 4)
        out_char(o, hexdig[(v >> shift) & 0xf]);
}

static void out_bytes_hex(out *o, const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        out_char(o, hexdig[p[i] >> 4]);
        out_char(o, hexdig[p[i] & 0xf]);
    }
}

/* Text of /proc/self/maps as `map` lines; line_start carries over. */
static void out_map_text(out *o, const char *p, size_t n, int *line_start)
{
    for (size_t i = 0; i < n; i++) {
        if (*line_start)
            out_str(o, "map ");
        out_char(o, p[i]);
        *line_start = p[i] == '\n';
    }
}

/* /proc/self/maps as `map` lines: the copy the view kept when it holds the
 * whole text (the same moment as the image lines), else read again. */
static void out_maps(out *o, const btp_crash_view *v)
{
    int line_start = 1;
    if (v->maps_whole) {
        out_map_text(o, v->maps_text, v->maps_len, &line_start);
    } else {
        int fd;
        do
            fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
        while (fd < 0 && errno == EINTR);
        if (fd < 0)
            return;
        char buf[1024];
        for (;;) {
            ssize_t got = read(fd, buf, sizeof buf);
            if (got < 0 && errno == EINTR)
                continue;
            if (got <= 0 || o->failed)
                break;
            out_map_text(o, buf, (size_t)got, &line_start);
        }
        close(fd);
    }
    if (!line_start)
        out_char(o, '\n');
}

static long current_tid(void)
{
    return syscall(SYS_gettid);
}

/* ------------------------------------------------------------------ */
/* The record                                                           */
/* ------------------------------------------------------------------ */

typedef struct capture_job {
    btp_capture_options opt;
    const void *uc;
    const btp_cfi_env *env;
    uintptr_t ra, fp; /* the entry point, for a capture of the current thread */
    btp_frame frames[BTP_CAPTURE_CBF_MAX_FRAMES];
    size_t n;
    btp_capture_method used;
    btp_status st;
} capture_job;

static void run_capture(void *arg)
{
    capture_job *j = arg;
    j->n = 0;
    j->used = j->opt.method;
    if (j->uc)
        j->st = btp_capture_context_in(&j->opt, j->uc, j->env, j->frames,
                                       BTP_CAPTURE_CBF_MAX_FRAMES, &j->n, &j->used);
    else
        j->st = btp_capture_here_at(&j->opt, j->ra, j->fp, j->frames, BTP_CAPTURE_CBF_MAX_FRAMES,
                                    &j->n);
}

/* Capture with the chosen method, falling back on faults to cfi, then fp,
 * then the interrupted pc alone. *fallback gets the name of the capture
 * that produced the frames when it is not the chosen one. */
static void capture_guarded(capture_job *j, const char **fallback)
{
    const btp_capture_method chosen = j->opt.method;
    const btp_capture_method order[] = {chosen, BTP_CAPTURE_CFI, BTP_CAPTURE_FP};
    *fallback = NULL;
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
        if ((i > 0 && order[i] == chosen) || !btp_capture_method_available(order[i]))
            continue;
        j->opt.method = order[i];
        if (!btp_guarded(run_capture, j)) {
            if (j->used != chosen)
                *fallback = btp_capture_method_name(j->used);
            j->opt.method = chosen;
            return;
        }
    }
    /* Every walk faulted: the pc is still known. */
    btp_regs regs;
    j->n = 0;
    j->st = BTP_OK;
    if (j->uc && btp_regs_from_context(j->uc, &regs) == BTP_OK) {
        j->frames[0].value = regs.pc;
        j->frames[0].kind = BTP_FRAME_PC;
        j->n = 1;
    }
    *fallback = "pc";
    j->opt.method = chosen;
}

static btp_status write_record(int fd, const btp_capture_options *given, unsigned crash_flags,
                               int sig, int code, uintptr_t addr, const void *uc, uintptr_t ra,
                               uintptr_t fp)
{
    if (fd < 0)
        return BTP_E_INVALID_ARGUMENT;
    capture_job job;
    memset(&job, 0, sizeof job);
    job.opt = given ? *given : (btp_capture_options){0};
    if (job.opt.method == BTP_CAPTURE_DEFAULT)
        job.opt.method = BTP_CAPTURE_CFI;
    job.opt.flags |= BTP_CAPTURE_ASYNC_SIGNAL_SAFE;
    job.uc = uc;
    job.ra = ra;
    job.fp = fp;

    /* The view of memory and images, in scratch memory of its own (mmap is
     * a plain system call); without it, the install-time snapshot. */
    void *scratch = mmap(NULL, BTP_CRASH_SCRATCH_BYTES, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (scratch == MAP_FAILED)
        scratch = NULL;
    btp_crash_view view;
    btp_crash_view_build(&view, scratch, scratch ? BTP_CRASH_SCRATCH_BYTES : 0);
    btp_cfi_env env;
    btp_crash_view_env(&view, &env);
    job.env = &env;

    const char *fallback;
    capture_guarded(&job, &fallback);

    uint8_t cbf[BTP_CBF_BOUND(BTP_CAPTURE_CBF_MAX_FRAMES)];
    size_t len = 0;
    (void)btp_cbf_encode(job.frames, job.n, 0, (unsigned)(8 * sizeof(void *)),
                         BTP_CBF_ENC_TRUNCATE_ON_FULL, cbf, sizeof cbf, &len, NULL);

    /* Writing to a closed pipe raises SIGPIPE, blocked in our handler; left
     * pending it would be delivered before a fault recurs and end the
     * process by the wrong signal. */
    sigset_t pending;
    int pipe_pending = sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1;

    out o;
    o.fd = fd;
    o.failed = 0;
    o.n = 0;
    o.total = 0;
    out_str(&o, "btpack-crash v2 signal=");
    out_dec(&o, sig);
    out_str(&o, " code=");
    out_dec(&o, code);
    out_str(&o, " addr=0x");
    out_hex(&o, addr);
    out_str(&o, " pid=");
    out_dec(&o, (long long)getpid());
    out_str(&o, " tid=");
    out_dec(&o, (long long)current_tid());
    out_str(&o, " method=");
    out_str(&o, btp_capture_method_name(job.opt.method));
    if (fallback) {
        out_str(&o, " fallback=");
        out_str(&o, fallback);
    }
    out_char(&o, '\n');
    if (len > 0) {
        out_str(&o, "cbf ");
        out_bytes_hex(&o, cbf, len);
        out_char(&o, '\n');
    }
    /* Image lines by lib/image's writer, into the view's line buffer (a
     * path of control bytes escapes to four bytes each) or, without
     * scratch memory, a buffer on the stack: a line longer than that is
     * written without its path. */
    char small[1024];
    char *line = view.line ? view.line : small;
    size_t line_cap = view.line ? view.line_cap : sizeof small;
    for (size_t i = 0; i < view.n_img; i++) {
        btp_image im = btp_crash_view_image(&view, i);
        size_t n = 0;
        btp_status ls = btp_image_line_format(&im, line, line_cap, &n);
        if (ls == BTP_E_BUFFER_TOO_SMALL) {
            im.path = NULL;
            ls = btp_image_line_format(&im, line, line_cap, &n);
        }
        if (ls != BTP_OK)
            continue;
        for (size_t k = 0; k < n; k++)
            out_char(&o, line[k]);
        out_char(&o, '\n');
    }
    if (!(crash_flags & BTP_CRASH_NO_MAP_LINES))
        out_maps(&o, &view);
    out_str(&o, "end\n");
    out_flush(&o);
    if (o.failed && !pipe_pending && sigpending(&pending) == 0 &&
        sigismember(&pending, SIGPIPE) == 1) {
        /* Ours: discard it (setting SIG_IGN drops a pending signal). */
        struct sigaction ign, keep;
        memset(&ign, 0, sizeof ign);
        ign.sa_handler = SIG_IGN;
        sigemptyset(&ign.sa_mask);
        if (sigaction(SIGPIPE, &ign, &keep) == 0)
            sigaction(SIGPIPE, &keep, NULL);
    }
    if (scratch)
        munmap(scratch, BTP_CRASH_SCRATCH_BYTES);
    if (o.failed)
        return BTP_E_IO;
    return job.st == BTP_E_BUFFER_TOO_SMALL ? BTP_OK : job.st;
}

__attribute__((noinline)) btp_status btp_crash_write_record(int fd,
                                                             const btp_capture_options *opt,
                                                             int signal, int code, uintptr_t addr,
                                                             const void *ucontext)
{
    btp_status st = write_record(fd, opt, 0, signal, code, addr, ucontext,
                                 (uintptr_t)__builtin_return_address(0),
                                 (uintptr_t)__builtin_frame_address(0));
    __asm__ volatile("" : "+r"(st) : : "memory");
    return st;
}

/* ------------------------------------------------------------------ */
/* The handler                                                          */
/* ------------------------------------------------------------------ */

/* Set by btp_crash_install() before the handlers go in, only read after. */
static int crash_fd = -1;
static btp_capture_options crash_opt;
static unsigned crash_flags;
/* The actions installed before ours, per crash signal. */
static struct sigaction prev_action[BTP_N_CRASH_SIGNALS];
static int have_prev[BTP_N_CRASH_SIGNALS];
/* 0: no record yet, 1: a thread is writing it, 2: written. */
static atomic_int crash_state;
/* Set once a signal was handed on to its previous handler: a handler that
 * calls ours again (a chain back to us) then gets the default action. */
static atomic_int handed_on[BTP_N_CRASH_SIGNALS];

static void on_crash(int sig, siginfo_t *si, void *uc);

static int signal_index(int sig)
{
    for (size_t i = 0; i < BTP_N_CRASH_SIGNALS; i++)
        if (btp_crash_signals[i] == sig)
            return (int)i;
    return -1;
}

static int is_ignore(const struct sigaction *a)
{
    return !(a->sa_flags & SA_SIGINFO) && a->sa_handler == SIG_IGN;
}

/* Give the signal to the action installed before ours (or the default),
 * so that it runs when our handler returns: a fault the kernel raised
 * happens again as soon as the handler returns; anything else (abort(),
 * raise(), kill) is raised again, and stays pending until then. */
static void hand_on(int sig, const siginfo_t *si)
{
    int i = signal_index(sig);
    struct sigaction act;
    if (i >= 0 && !(crash_flags & BTP_CRASH_NO_CHAIN) && have_prev[i] &&
        !atomic_exchange(&handed_on[i], 1)) {
        act = prev_action[i];
    } else {
        memset(&act, 0, sizeof act);
        act.sa_handler = SIG_DFL;
        sigemptyset(&act.sa_mask);
    }
    sigaction(sig, &act, NULL);
    int recurs = si && si->si_code > 0 && sig != SIGABRT;
    if (!recurs)
        raise(sig);
}

static void on_crash(int sig, siginfo_t *si, void *uc)
{
    /* A fault inside our own capture: back to the guard. */
    btp_guard_catch();
    int saved_errno = errno;
    int i = signal_index(sig);
    /* A signal the program chose to ignore, sent by kill()/raise() (a
     * fault or abort() ends the process whatever the action): ignored. */
    if (i >= 0 && !(crash_flags & BTP_CRASH_NO_CHAIN) && have_prev[i] &&
        is_ignore(&prev_action[i]) && si && si->si_code <= 0 &&
        !(sig == SIGABRT && si->si_pid == getpid())) {
        errno = saved_errno;
        return;
    }
    int expected = 0;
    if (atomic_compare_exchange_strong(&crash_state, &expected, 1)) {
        (void)write_record(crash_fd, &crash_opt, crash_flags, sig, si ? si->si_code : 0,
                           si ? (uintptr_t)si->si_addr : 0, uc, 0, 0);
        atomic_store(&crash_state, 2);
    } else {
        /* Another thread is writing the record: let it finish (bounded,
         * so that a writer stuck on a full pipe cannot hang the process). */
        for (int k = 0; k < 5000 && atomic_load(&crash_state) == 1; k++) {
            struct timespec ts = {0, 1000 * 1000};
            nanosleep(&ts, NULL);
        }
    }
    hand_on(sig, si);
    errno = saved_errno;
}

static size_t altstack_bytes;

static btp_status give_altstack(size_t size)
{
    stack_t old;
    if (sigaltstack(NULL, &old) == 0 && !(old.ss_flags & SS_DISABLE) && old.ss_sp &&
        old.ss_size >= size)
        return BTP_OK; /* this thread already has one big enough */
    long page = sysconf(_SC_PAGESIZE);
    if (page <= 0)
        page = 4096;
    size = (size + (size_t)page - 1) / (size_t)page * (size_t)page;
    /* One guard page below, so a handler overflowing its stack faults
     * instead of corrupting memory. */
    uint8_t *mem = mmap(NULL, size + (size_t)page, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED)
        return BTP_E_OUT_OF_MEMORY;
    (void)mprotect(mem, (size_t)page, PROT_NONE);
    stack_t ss;
    memset(&ss, 0, sizeof ss);
    ss.ss_sp = mem + page;
    ss.ss_size = size;
    ss.ss_flags = 0;
    if (sigaltstack(&ss, NULL) != 0) {
        munmap(mem, size + (size_t)page);
        return BTP_E_IO;
    }
    return BTP_OK;
}

btp_status btp_crash_thread_init(void)
{
    /* The thread's stack bounds, for walks when /proc cannot be read. */
    btp_capture_cache_thread_bounds();
    return give_altstack(altstack_bytes ? altstack_bytes : 64 * 1024);
}

btp_status btp_crash_install(int fd, const btp_crash_options *opt)
{
    if (fd < 0)
        return BTP_E_INVALID_ARGUMENT;
    btp_capture_options cap = opt ? opt->capture : (btp_capture_options){0};
    if (opt && (!btp_reserved_clear(opt->reserved) || !btp_reserved_clear(cap.reserved)))
        return BTP_E_UNSUPPORTED;
    if (cap.method == BTP_CAPTURE_DEFAULT)
        cap.method = BTP_CAPTURE_CFI;
    if (!btp_capture_method_name(cap.method))
        return BTP_E_INVALID_ARGUMENT;
    if (!btp_capture_method_available(cap.method))
        return BTP_E_NO_METHOD;
    cap.flags |= BTP_CAPTURE_ASYNC_SIGNAL_SAFE;
    /* The first call of an unwinder may load libraries or allocate: do it
     * now, not in the handler. */
    btp_capture_preload(cap.method);
    btp_capture_cache_thread_bounds();
    if (!btp_crash_snapshot_take())
        return BTP_E_OUT_OF_MEMORY;

    altstack_bytes = opt && opt->altstack_size ? opt->altstack_size : 64 * 1024;
    btp_status st = give_altstack(altstack_bytes);
    if (st != BTP_OK)
        return st;

    crash_fd = fd;
    crash_opt = cap;
    crash_flags = opt ? opt->flags : 0;
    atomic_store(&crash_state, 0);

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_crash;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    /* Block the other crash signals while the handler runs (the guard
     * unblocks them around the capture), and SIGPIPE, so that writing to a
     * closed pipe fails with EPIPE instead of ending the process by another
     * signal; a SIGPIPE left pending has a higher number than the crash
     * signals, which are delivered first. */
    for (size_t i = 0; i < BTP_N_CRASH_SIGNALS; i++)
        sigaddset(&sa.sa_mask, btp_crash_signals[i]);
    sigaddset(&sa.sa_mask, SIGPIPE);
    for (size_t i = 0; i < BTP_N_CRASH_SIGNALS; i++) {
        struct sigaction old;
        if (sigaction(btp_crash_signals[i], &sa, &old) != 0)
            return BTP_E_IO;
        /* Installing again keeps what was there before the first time:
         * never a chain to ourselves. */
        if ((old.sa_flags & SA_SIGINFO) && old.sa_sigaction == on_crash)
            continue;
        prev_action[i] = old;
        have_prev[i] = 1;
        atomic_store(&handed_on[i], 0);
    }
    return BTP_OK;
}
