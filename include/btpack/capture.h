/*
 * Stack capture: the current thread's backtrace, or the one a signal's
 * ucontext_t (or a saved register set) describes, from one of several
 * unwinders, into a caller buffer of frames or straight into CBF, with no
 * allocation. Plus a crash-handler helper built on it.
 *
 * Methods (which are built in depends on the platform and the build):
 *  cfi        our own walk of the DWARF call frame information every
 *             Linux image carries (.eh_frame, found through .eh_frame_hdr's
 *             search table), so it sees code without frame pointers (most
 *             of a Debian system: libc included). It reads only memory its
 *             environment vouches for: unwind tables inside the image that
 *             holds the pc, stack words inside the thread's stack (or the
 *             alternate signal stack), code bytes inside the image's text;
 *             a frame it cannot unwind, or a canonical frame address that
 *             does not move up the stack (a cycle), ends the walk. Where no
 *             table covers a pc it follows the frame pointer if that leads
 *             to a call's return address; for a pc outside every image (a
 *             call through a NULL pointer) it takes the caller from the top
 *             of the stack (x86) or the link register (aarch64). Images come
 *             from _dl_find_object (glibc >= 2.35: lock-free and documented
 *             async-signal-safe), else from dl_iterate_phdr (which takes the
 *             loader's lock: not async-signal-safe). x86_64, i386, aarch64.
 *             Repeated captures are fast: the rule a return address's frame
 *             follows is kept in a process-wide, lock-free cache (below), so
 *             a frame seen before costs a hash lookup and its loads: 1.4-1.6x
 *             libunwind's unw_backtrace a frame (bench/README.md). The default
 *             method, and the crash handler's (there the images and the
 *             memory that may be read come from /proc/self/maps, and the
 *             cache is not used).
 *  fp         frame-pointer walk. Every frame pointer is checked before it is
 *             read: inside the stack's bounds, aligned to a word, strictly
 *             above the previous one. A bogus chain (code built without frame
 *             pointers, corrupt stack) ends the walk instead of faulting.
 *             Fast, async-signal-safe, but it only sees code built with
 *             -fno-omit-frame-pointer (not Debian's libc: a crash in abort()
 *             keeps no frame of the program); a function interrupted in its
 *             prologue or a leaf without a frame loses its caller.
 *  libgcc     _Unwind_Backtrace from libgcc_s (DWARF unwind tables), found
 *             in libgcc_s itself (libunwind exports the same names; the
 *             program's link order does not decide which runs). Sees code
 *             without frame pointers. Async-signal-safe in practice with
 *             gcc >= 12 on glibc >= 2.35 (dl_find_object), not by contract;
 *             it reads whatever a corrupt stack points at (and faults). It
 *             decodes every frame's unwind table on every capture: about 10x
 *             the cost of cfi's cached walk.
 *  libunwind  libunwind (optional, Meson feature `libunwind`). The current
 *             thread's stack comes from unw_backtrace() into an array of
 *             256 frames (its cached fast path on x86_64); a stack that fills
 *             it is walked again with a local cursor, which streams any
 *             depth through the ring and ends a cycle (its fast path has no
 *             stack pointers to check). From a ucontext the cursor starts at
 *             the interrupted frame itself (unw_init_local2, on x86_64).
 *             Documented async-signal-safe except for its use of
 *             dl_iterate_phdr.
 *  glibc      backtrace() from <execinfo.h>, glibc's own (found in the C
 *             library itself: libunwind exports a backtrace() too). Sees at
 *             most BTP_CAPTURE_GLIBC_MAX_FRAMES frames (it fills an array,
 *             so the bottom of deeper stacks is lost). Not async-signal-safe:
 *             its first call loads libgcc_s (btp_capture_options_init() and
 *             btp_crash_install() make that first call for you).
 * Every method but glibc ends a walk that comes back to a stretch of stack
 * it has walked (libgcc and libunwind would otherwise follow a frame pointer
 * that points at itself for ever). glibc's backtrace() has a check of its
 * own on x86_64; its i386 version has none and repeats such a frame until
 * its array is full (the record then holds 128 of those repeats).
 *
 * Frames: the first recorded frame is a `pc`, the rest are `ra`. For a
 * capture of the current thread the first frame is the address the call to
 * btp_capture*() returns to (the caller's position): the library removes its
 * own frames exactly, by finding that return address in the unwinder's
 * output, so snip_pre counts frames of the caller's choosing only. For a
 * ucontext/register capture the first frame is the interrupted program
 * counter.
 *
 * snip_pre / snip_post then drop that many frames at the innermost / outermost
 * end. Our defaults are 0 and 0 (libwebsockets uses 2 and 1 because its count
 * includes its own API frames, which we already drop, and because the
 * outermost frames differ per method: _start for the unwinders, often main or
 * __libc_start_call_main for fp). Pass 2 and 1 for lws-compatible output.
 *
 * Deep stacks: with room for `cap` frames, a stack of at most cap-1 frames is
 * kept whole. A deeper one keeps its innermost ceil((cap-1)/2) frames, then
 * one `omit` frame counting the frames left out, then its outermost
 * floor((cap-1)/2) frames (a ring of the last frames plus a count, so nothing
 * is allocated whatever the depth). With cap 1 only the innermost frame is
 * kept. snip_pre applies before this shortening; snip_post after it (the
 * total is known only at the end), so it removes frames from the kept tail,
 * then from the omitted count, then from the head. The walk itself is
 * bounded by BTP_CAPTURE_MAX_WALK frames.
 *
 * The cfi cache: one table for the process (16384 slots of 64 bytes in
 * .bss, in two-way sets: 1 MiB of address space, pages touched as slots
 * are used), keyed by the pc looked up, each entry tied to its image by a tag (the image's
 * address range, unwind table address, loader record, and the size and
 * first and last entries of its search table). Each walk asks the loader
 * once per image it meets whether that image is still there, and uses an
 * entry only if the image holding the pc now has the entry's tag: after
 * dlclose the entries of an unloaded image are never used again, even when
 * another image is loaded at the same address. Unwind tables are assumed
 * not to change while their image is loaded (they are read-only data).
 * Slots are sequence locks: readers and writers in any number of threads,
 * no lock, no waiting; a capture in a signal handler that interrupts a
 * writer on its own thread misses that slot and takes the slow path (the
 * cache is async-signal-safe). A fork while another thread writes a slot
 * leaves that one slot unused in the child. Frames the cache does not hold,
 * or whose rules it cannot hold (signal frames, DWARF expressions), take
 * the full walk; the result is the same either way, load for load.
 *
 * Thread-safety: all capture functions may run in any number of threads at
 * once. The state the library keeps: a per-thread cache of the thread's
 * stack bounds (fp and cfi), the cfi cache above, the functions the libgcc
 * and glibc methods resolved (set once), and the crash handler's
 * configuration and image snapshot (set by btp_crash_install()).
 *
 * Stack: besides the caller's frames array, a capture uses about 1 KiB of
 * stack with the fp method and about 10 KiB with cfi (the walker's
 * register rows, layout lookups and its memo's working copy; x86_64, gcc
 * -O2); libgcc, libunwind and glibc add their unwinder's own, glibc's an
 * array of BTP_CAPTURE_GLIBC_MAX_FRAMES pointers. A signal handler that
 * captures on an alternate stack needs that room (the crash handler's
 * own is 64 KiB unless configured otherwise).
 */
#ifndef BTPACK_CAPTURE_H
#define BTPACK_CAPTURE_H

#include <btpack/btpack.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum btp_capture_method {
    BTP_CAPTURE_DEFAULT = 0, /* the build's preferred method (see below) */
    BTP_CAPTURE_FP = 1,
    BTP_CAPTURE_LIBGCC = 2,
    BTP_CAPTURE_LIBUNWIND = 3,
    BTP_CAPTURE_GLIBC = 4,
    BTP_CAPTURE_CFI = 5
} btp_capture_method;

/* Upper bound on frames any method walks (bounded work on corrupt stacks;
 * large enough for an 8 MiB stack of the smallest frames, so the bottom of
 * an overflowed stack is still found). */
#define BTP_CAPTURE_MAX_WALK (1u << 20)
/* Frames the glibc method can see (backtrace() needs an array). */
#define BTP_CAPTURE_GLIBC_MAX_FRAMES 512
/* Frames an unwinder may report above the first frame to keep (the
 * library's own, a signal handler's, the signal trampoline) before the
 * search for that frame gives up. */
#define BTP_CAPTURE_SEEK_MAX 32
/* Frames the *_cbf functions collect before encoding (on the stack). */
#define BTP_CAPTURE_CBF_MAX_FRAMES 128

/* Option flags. */
enum {
    /* The fp method must not call anything that is not async-signal-safe
     * (no pthread_getattr_np): without opt->bounds or a cached value it finds
     * the stack from /proc/self/maps with raw open/read. Set it when
     * capturing inside a signal handler. */
    BTP_CAPTURE_ASYNC_SIGNAL_SAFE = 1u << 0
};

/* A thread's stack: addresses [lo, hi). */
typedef struct btp_stack_bounds {
    uintptr_t lo;
    uintptr_t hi;
} btp_stack_bounds;

/* Capture options. Caller-allocated; zero-initialised means: default method,
 * no snipping, no flags, bounds found by the library. */
typedef struct btp_capture_options {
    btp_capture_method method;
    unsigned snip_pre;  /* frames dropped at the innermost end */
    unsigned snip_post; /* frames dropped at the outermost end */
    unsigned flags;     /* BTP_CAPTURE_* */
    /* fp and cfi: the stack to trust. NULL: this thread's stack (cached per
     * thread), or with BTP_CAPTURE_ASYNC_SIGNAL_SAFE the anonymous mapping
     * holding the stack pointer. A signal's alternate stack is recognised
     * on its own. */
    const btp_stack_bounds *bounds;
    uint64_t reserved[BTP_RESERVED_WORDS]; /* zero (see btpack.h) */
} btp_capture_options;

/* A saved register set: what the fp walk needs. fp is the frame pointer
 * (rbp / x29), sp the stack pointer, pc the program counter. */
typedef struct btp_regs {
    uintptr_t pc;
    uintptr_t sp;
    uintptr_t fp;
} btp_regs;

/* "fp", "libgcc", "libunwind", "glibc", "cfi" ("default" for DEFAULT); NULL
 * for an unknown value. Async-signal-safe. */
BTP_API const char *btp_capture_method_name(btp_capture_method method);

/* Parse a method name (as above, "default" included). Returns BTP_OK or
 * BTP_E_SYNTAX (unknown name, *out untouched) or BTP_E_INVALID_ARGUMENT. */
BTP_API btp_status btp_capture_method_parse(const char *name, btp_capture_method *out);

/* Non-zero if `method` is built in (DEFAULT: if any is). Async-signal-safe. */
BTP_API int btp_capture_method_available(btp_capture_method method);

/* The method DEFAULT stands for in this build (for btp_capture() and
 * friends; the crash handler's default is cfi too): cfi, else libgcc, else
 * libunwind, else glibc, else fp. Why cfi: of the methods that keep whole
 * stacks through code without frame pointers (all of a stock Debian
 * system) it is the fastest on repeated captures (bench/README.md, section
 * "Stack capture": ~10 ns a frame, 1.4-1.6x unw_backtrace; libgcc and
 * glibc ~100), it is built in (libunwind is an optional dependency),
 * async-signal-safe where the C library has _dl_find_object, and it ends
 * walks on corrupt stacks instead of faulting (libgcc and glibc read
 * whatever a corrupt stack points at). Where the C library lacks
 * _dl_find_object (glibc < 2.35) cfi finds images with dl_iterate_phdr, as
 * libgcc and libunwind do: there no method that reads unwind tables is
 * async-signal-safe, and fp is the one for signal handlers.
 * Async-signal-safe. */
BTP_API btp_capture_method btp_capture_method_default(void);

/* Path of the shared object whose code implements `method` (to check which
 * unwinder really runs: libunwind also exports _Unwind_Backtrace), or NULL
 * (fp, not available, static linking, or libgcc when the process has no
 * libgcc_s loaded: that method then fails with BTP_E_NO_METHOD). Not
 * async-signal-safe (dladdr). */
BTP_API const char *btp_capture_method_library(btp_capture_method method);

/*
 * Fill *opt with the defaults, then apply the environment:
 *  BTPACK_STACKTRACE_METHOD=fp|libgcc|libunwind|glibc|cfi selects the method;
 *  BTPACK_STACKTRACE_METHOD_VERBOSE=1 (any non-empty value but "0") prints
 *  the methods built in and the one chosen to stderr.
 * opt->method is always set to a concrete, available method. Also makes the
 * chosen method's first call (which may load libraries), so later captures
 * from signal handlers do not.
 * Returns BTP_OK, BTP_E_INVALID_ARGUMENT (NULL), or BTP_E_NO_METHOD when the
 * variable names an unknown or unavailable method: then opt holds the
 * default method and a message went to stderr.
 * Not async-signal-safe (getenv, stdio); call it at start-up.
 */
BTP_API btp_status btp_capture_options_init(btp_capture_options *opt);

/*
 * Capture the current thread's stack into frames[0..cap) (see the header
 * comment for which frames and how deep stacks are shortened).
 * opt may be NULL (all defaults). *n_out gets the number of frames written.
 * Returns:
 *  BTP_OK                 (possibly with 0 frames if everything was snipped)
 *  BTP_E_INVALID_ARGUMENT NULL frames/n_out, cap 0, bad method
 *  BTP_E_NO_METHOD        the method is not built in, or failed to start
 * Async-signal-safe with the fp method and BTP_CAPTURE_ASYNC_SIGNAL_SAFE (or
 * bounds given), with the cfi method where the C library has
 * _dl_find_object (and the same flag or bounds), and inasmuch as the chosen
 * unwinder is otherwise.
 * Resources: a thread's first cfi capture without that flag or bounds maps a few KB
 * for the thread's walk memo (mmap, registered under a thread-specific key
 * that unmaps it when the thread exits); with either, nothing is mapped.
 */
BTP_API btp_status btp_capture(const btp_capture_options *opt, btp_frame *frames, size_t cap,
                               size_t *n_out);

/*
 * Capture the stack a signal handler's ucontext_t (its third argument)
 * describes: the first frame is the interrupted pc. fp and cfi walk from the
 * context's registers; libunwind starts from the context itself; libgcc and
 * glibc unwind through the signal frame from where they are called, so they
 * must be called on the thread and inside the handler that received the
 * context. If an unwinder does not reach the interrupted pc (within
 * BTP_CAPTURE_SEEK_MAX frames; never, when the pc is 0 after a call through
 * a NULL pointer) or fails, the cfi walk (else the fp walk) from the
 * context's registers is used instead. Same results as btp_capture(),
 * plus BTP_E_UNSUPPORTED when the registers cannot be read on this
 * architecture (x86_64, i386 and aarch64 Linux are supported).
 */
BTP_API btp_status btp_capture_context(const btp_capture_options *opt, const void *ucontext,
                                       btp_frame *frames, size_t cap, size_t *n_out);

/* Read pc/sp/fp from a ucontext_t. BTP_OK, BTP_E_INVALID_ARGUMENT or
 * BTP_E_UNSUPPORTED (unknown architecture). Async-signal-safe. */
BTP_API btp_status btp_regs_from_context(const void *ucontext, btp_regs *regs);

/*
 * Frame-pointer walk from a saved register set (fp method only; another
 * method gives BTP_E_UNSUPPORTED). The first frame is regs->pc (omitted if
 * 0). The walk reads only words inside `bounds` (or opt->bounds, or the
 * anonymous mapping holding regs->fp when both are NULL: a stack is never a
 * file, and a file mapping can fault when read), so a corrupt or hostile chain
 * ends it: nothing outside the bounds is ever dereferenced. Same results as
 * btp_capture(). Async-signal-safe.
 */
BTP_API btp_status btp_capture_regs(const btp_capture_options *opt, const btp_regs *regs,
                                    const btp_stack_bounds *bounds, btp_frame *frames, size_t cap,
                                    size_t *n_out);

/*
 * Capture (current thread when ucontext is NULL, else as
 * btp_capture_context()) and encode as one CBF stream with the word size of
 * a pointer into buf[0..cap): at most BTP_CAPTURE_CBF_MAX_FRAMES frames
 * (deep stacks shortened as above), then `end`; if the buffer is too small
 * the stream is cut with `trunc` (cap >= 2 needed). *len_out gets its length.
 * Returns the capture's status, BTP_E_INVALID_ARGUMENT for cap < 2, or
 * BTP_E_BUFFER_TOO_SMALL when the stream had to be cut (buf still holds
 * valid CBF). No allocation; uses about 3 KiB of stack (its frames) on top
 * of the method's (see above). Signal safety as for the capture.
 */
BTP_API btp_status btp_capture_cbf(const btp_capture_options *opt, const void *ucontext,
                                   void *buf, size_t cap, size_t *len_out);

/* This thread's stack bounds from pthread_getattr_np. BTP_OK, BTP_E_IO.
 * Not async-signal-safe (it may read /proc/self/maps with stdio and
 * allocate for the main thread). */
BTP_API btp_status btp_stack_bounds_current(btp_stack_bounds *out);

/* Bounds of the readable memory mapping holding `addr`, from
 * /proc/self/maps read with plain open/read: async-signal-safe. For a stack
 * pointer, lo is the mapping's start (a grows-down main stack may later
 * extend below it). BTP_OK, BTP_E_IO (cannot read the file), BTP_END (no
 * readable mapping holds addr), BTP_E_INVALID_ARGUMENT. */
BTP_API btp_status btp_stack_bounds_of(uintptr_t addr, btp_stack_bounds *out);

/* ------------------------------------------------------------------ */
/* Crash handler                                                        */
/* ------------------------------------------------------------------ */

/*
 * Record written on a crash: crash record v2 (spec/capture.md has the
 * format, which `btpack symbolize --from crash` reads), text lines written
 * with write(2):
 *
 *   btpack-crash v2 signal=<n> code=<si_code> addr=0x<hex> pid=<n> tid=<n>
 *     method=<m>[ fallback=<f>]          (one line)
 *   cbf <the backtrace: one CBF stream, lower-case hex>
 *   image 0x<base> 0x<end of text> <build ID in hex, or -> <path, or ->
 *   map <a line of /proc/self/maps>      (unless BTP_CRASH_NO_MAP_LINES)
 *   end
 *
 * One `image` line per loaded image, in load order (the order at install
 * time; images loaded later follow, by address), with the fields of
 * imagemap.h: base is where the file's offset 0 is mapped, so for a PIE
 * executable or a shared library a frame's file address is address - base
 * (a return address minus 1 more). Paths are as /proc/self/maps shows them,
 * with `\` written `\\`, a newline `\n` and other control bytes `\xHH`.
 * `fallback=` names the capture that wrote the frames when the chosen
 * method failed or faulted: cfi, fp, or pc (the interrupted pc alone). A
 * missing `end` line means the record was cut short.
 *
 * What the handler does, and why each part is async-signal-safe:
 *  - the memory it may read and the images come from /proc/self/maps, read
 *    with open/read into scratch memory it maps with mmap (system calls;
 *    no stdio, no malloc, no locks); an image's headers and build ID are
 *    read from memory only where the maps show readable file memory of a
 *    file also mapped executable. Without /proc or memory, an image
 *    snapshot taken at install time (dl_iterate_phdr, outside any handler)
 *    stands in, stacks are known from the thread's cached bounds.
 *  - the capture runs under a fault guard: the crash signals are unblocked
 *    around it, a fault inside it re-enters the handler, which
 *    siglongjmps back, and the next simpler capture runs (the chosen
 *    method, then cfi, then fp, then the pc alone): the record is never
 *    empty. The cfi walk itself reads only memory the maps vouch for (stack
 *    words only in anonymous memory), so it does not fault unless memory is
 *    unmapped while it runs.
 *  - libgcc, libunwind and glibc are not async-signal-safe by contract
 *    (see the methods above); chosen for the handler they run under the
 *    guard. An unwinder abandoned by the guard may leave a lock held
 *    (libgcc before gcc 12 takes the loader's lock): a handler chained
 *    after ours that calls dlopen or dl_iterate_phdr could then block.
 */

/* Crash handler flags (btp_crash_options.flags). */
enum {
    /* Do not hand the signal on to the handler installed before
     * btp_crash_install(): after the record, the default action. */
    BTP_CRASH_NO_CHAIN = 1u << 0,
    /* Leave the `map` lines (a copy of /proc/self/maps) out of the record:
     * the `image` lines carry what a symbolizer needs. */
    BTP_CRASH_NO_MAP_LINES = 1u << 1
};

/* Crash handler configuration. Zero-initialised means: the cfi method, a
 * 64 KiB alternate stack, chaining, map lines. */
typedef struct btp_crash_options {
    /* Capture options for the handler; flags get BTP_CAPTURE_ASYNC_SIGNAL_SAFE
     * added. Method zero: cfi (whole stacks through code without frame
     * pointers, reading only memory /proc/self/maps shows readable). */
    btp_capture_options capture;
    /* Bytes of alternate signal stack to map for the installing thread;
     * 0 gives 64 KiB. */
    size_t altstack_size;
    unsigned flags; /* BTP_CRASH_* */
    uint64_t reserved[BTP_RESERVED_WORDS]; /* zero (see btpack.h) */
} btp_crash_options;

/*
 * Install handlers for SIGSEGV, SIGBUS, SIGILL, SIGFPE and SIGABRT that run
 * on an alternate stack (mapped now for the calling thread; other threads
 * get one with btp_crash_thread_init()), capture the crashed thread's stack
 * from the signal context, write one record (above) to `fd` with write(2),
 * then hand the signal on, so that the process still dies by it (and dumps
 * core where configured):
 *  - to the action installed before ours (SA_SIGINFO or not), which is put
 *    back and runs when our handler returns, as if ours had never been
 *    there: a fault the kernel raised recurs, anything else (abort(),
 *    raise(), kill) is raised again. Should that handler hand the signal
 *    back to ours, the default action follows. SIG_DFL: the default action.
 *    SIG_IGN: a signal sent with kill()/raise() is ignored, with no record
 *    (as the program asked; abort() and faults end the process anyway, and
 *    get their record). Installing again keeps the action from before the
 *    first install: never a chain to ourselves.
 *  - with BTP_CRASH_NO_CHAIN, to the default action.
 * fd must stay open; it is not closed. If several threads crash at once the
 * first one writes; the others wait for it (up to ~5 s) and then hand their
 * signal on. Call early, from one thread, not at the same time as a crash
 * (not thread-safe with itself); calling again replaces the configuration
 * and retakes the image snapshot.
 * Returns BTP_OK, BTP_E_INVALID_ARGUMENT (fd < 0, bad method),
 * BTP_E_NO_METHOD, BTP_E_OUT_OF_MEMORY (alternate stack, snapshot),
 * BTP_E_IO (sigaction/sigaltstack failed).
 */
BTP_API btp_status btp_crash_install(int fd, const btp_crash_options *opt);

/* Give the calling thread its own alternate signal stack for the crash
 * handler (sigaltstack is per thread); without one, a thread that overflows
 * its stack cannot run the handler. Also remembers the thread's stack
 * bounds (for walks where /proc cannot be read). BTP_OK,
 * BTP_E_OUT_OF_MEMORY, BTP_E_IO. The stack is never freed (it must outlive
 * the thread's last signal). Not async-signal-safe. */
BTP_API btp_status btp_crash_thread_init(void);

/* Write a crash record for `ucontext` (or the current thread when NULL) to
 * fd, as the handler does (map lines included); exposed so a program's own
 * handler can use it. signal/code/addr go into the header line; method
 * DEFAULT is cfi. Faults inside the capture are caught only while
 * btp_crash_install()'s handler is installed for them. BTP_OK or BTP_E_IO,
 * or the capture's error (the record is then written without frames).
 * Async-signal-safe with the fp and cfi methods (as the handler, above). */
BTP_API btp_status btp_crash_write_record(int fd, const btp_capture_options *opt, int signal,
                                          int code, uintptr_t addr, const void *ucontext);

#ifdef __cplusplus
}
#endif

#endif
