/*
 * The crash handler: on a fatal signal, capture the crashed thread from the
 * signal context, write one text record (header, CBF as hex, the image map)
 * to a descriptor opened beforehand, and die by the same signal.
 *
 * Everything on the handler's path is async-signal-safe: the fp walk from
 * the ucontext, the CBF encoder, and open/read/write/close on fixed buffers
 * (no stdio, no allocation, no locks). The record format is documented in
 * include/btpack/capture.h.
 */
#include "capture_internal.h"

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

/* Copy /proc/self/maps, each line prefixed with "map ". */
static void out_maps(out *o)
{
    int fd;
    do
        fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    while (fd < 0 && errno == EINTR);
    if (fd < 0)
        return;
    char buf[1024];
    int line_start = 1;
    for (;;) {
        ssize_t got = read(fd, buf, sizeof buf);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0 || o->failed)
            break;
        for (ssize_t i = 0; i < got; i++) {
            if (line_start)
                out_str(o, "map ");
            out_char(o, buf[i]);
            line_start = buf[i] == '\n';
        }
    }
    if (!line_start)
        out_char(o, '\n');
    close(fd);
}

/* ------------------------------------------------------------------ */
/* The record                                                           */
/* ------------------------------------------------------------------ */

static btp_status write_record(int fd, const btp_capture_options *given, int sig, int code,
                               uintptr_t addr, const void *uc, uintptr_t ra, uintptr_t fp)
{
    if (fd < 0)
        return BTP_E_INVALID_ARGUMENT;
    btp_capture_options opt = given ? *given : (btp_capture_options){0};
    if (opt.method == BTP_CAPTURE_DEFAULT)
        opt.method = BTP_CAPTURE_FP;
    opt.flags |= BTP_CAPTURE_ASYNC_SIGNAL_SAFE;

    uint8_t cbf[BTP_CBF_BOUND(BTP_CAPTURE_CBF_MAX_FRAMES)];
    size_t len = 0;
    btp_status st = btp_capture_cbf_at(&opt, uc, ra, fp, cbf, sizeof cbf, &len);

    out o;
    o.fd = fd;
    o.failed = 0;
    o.n = 0;
    out_str(&o, "btpack-crash v1 signal=");
    out_dec(&o, sig);
    out_str(&o, " code=");
    out_dec(&o, code);
    out_str(&o, " addr=0x");
    out_hex(&o, addr);
    out_str(&o, " pid=");
    out_dec(&o, (long long)getpid());
    out_str(&o, " tid=");
    out_dec(&o, (long long)syscall(SYS_gettid));
    out_str(&o, " method=");
    out_str(&o, btp_capture_method_name(opt.method));
    out_char(&o, '\n');
    if (len > 0) {
        out_str(&o, "cbf ");
        for (size_t i = 0; i < len; i++) {
            out_char(&o, hexdig[cbf[i] >> 4]);
            out_char(&o, hexdig[cbf[i] & 0xf]);
        }
        out_char(&o, '\n');
    }
    out_maps(&o);
    out_str(&o, "end\n");
    out_flush(&o);
    if (o.failed)
        return BTP_E_IO;
    return st == BTP_E_BUFFER_TOO_SMALL ? BTP_OK : st;
}

__attribute__((noinline)) btp_status btp_crash_write_record(int fd,
                                                             const btp_capture_options *opt,
                                                             int signal, int code, uintptr_t addr,
                                                             const void *ucontext)
{
    btp_status st = write_record(fd, opt, signal, code, addr, ucontext,
                                 (uintptr_t)__builtin_return_address(0),
                                 (uintptr_t)__builtin_frame_address(0));
    __asm__ volatile("" : "+r"(st) : : "memory");
    return st;
}

/* ------------------------------------------------------------------ */
/* The handler                                                          */
/* ------------------------------------------------------------------ */

static const int crash_signals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};

/* Set by btp_crash_install() before the handlers go in, only read after. */
static int crash_fd = -1;
static btp_capture_options crash_opt;
static atomic_int crash_busy;

static void on_crash(int sig, siginfo_t *si, void *uc)
{
    int saved_errno = errno;
    int expected = 0;
    if (atomic_compare_exchange_strong(&crash_busy, &expected, 1)) {
        (void)btp_crash_write_record(crash_fd, &crash_opt, sig, si ? si->si_code : 0,
                                     si ? (uintptr_t)si->si_addr : 0, uc);
    } else {
        /* Another thread is writing its record: give it time to finish
         * before this signal's default action ends the process. */
        for (int i = 0; i < 200; i++) {
            struct timespec ts = {0, 10 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
    }
    /* Die by the same signal: with the default action restored, the signal
     * raised here is delivered as soon as the handler returns (it is
     * blocked until then); a fault would also recur on return. */
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, NULL);
    raise(sig);
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
    return give_altstack(altstack_bytes ? altstack_bytes : 64 * 1024);
}

btp_status btp_crash_install(int fd, const btp_crash_options *opt)
{
    if (fd < 0)
        return BTP_E_INVALID_ARGUMENT;
    btp_capture_options cap = opt ? opt->capture : (btp_capture_options){0};
    if (cap.method == BTP_CAPTURE_DEFAULT)
        cap.method = BTP_CAPTURE_FP;
    if (!btp_capture_method_name(cap.method))
        return BTP_E_INVALID_ARGUMENT;
    if (!btp_capture_method_available(cap.method))
        return BTP_E_NO_METHOD;
    cap.flags |= BTP_CAPTURE_ASYNC_SIGNAL_SAFE;
    /* The first call of an unwinder may load libraries or allocate: do it
     * now, not in the handler. */
    btp_capture_preload(cap.method);

    altstack_bytes = opt && opt->altstack_size ? opt->altstack_size : 64 * 1024;
    btp_status st = give_altstack(altstack_bytes);
    if (st != BTP_OK)
        return st;

    crash_fd = fd;
    crash_opt = cap;
    atomic_store(&crash_busy, 0);

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_crash;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    /* Block the other crash signals while the handler runs (a fault inside
     * it then kills the process at once), and SIGPIPE, so that writing to a
     * closed pipe fails with EPIPE instead of ending the process by another
     * signal; a SIGPIPE left pending has a higher number than the crash
     * signals, which are delivered first. */
    for (size_t i = 0; i < sizeof crash_signals / sizeof crash_signals[0]; i++)
        sigaddset(&sa.sa_mask, crash_signals[i]);
    sigaddset(&sa.sa_mask, SIGPIPE);
    for (size_t i = 0; i < sizeof crash_signals / sizeof crash_signals[0]; i++)
        if (sigaction(crash_signals[i], &sa, NULL) != 0)
            return BTP_E_IO;
    return BTP_OK;
}
