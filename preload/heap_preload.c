/*
 * libbtpack-heap.so: an LD_PRELOAD heap tracer. Records every malloc,
 * calloc, realloc, reallocarray, free, posix_memalign, aligned_alloc,
 * memalign, valloc and pvalloc (and so C++ new/delete, which call them)
 * with the allocating stack into a btpack trace log (spec/log.md), with the
 * process's images and their build IDs. Built on the public API only. spec/heap.md
 * describes the design; in short:
 *
 * - Fast path, per thread, no lock: each thread owns a ring of event slots
 *   (mmap'd, so the tracer never needs the allocator it traces). An event
 *   takes a number from one global counter (an atomic add, not a lock),
 *   is captured straight into its slot and published with a release store.
 *   The counter orders events across threads the way the allocator did: a
 *   free takes its number before the real free, an allocation after the
 *   real allocation, so a pointer's free always precedes its reuse.
 * - A writer thread merges the rings in number order into the log writer
 *   (dictionary, record coding), waking every 0.1 ms while events come
 *   (every millisecond once quiet); a thread that finds its
 *   ring full does that work itself (wait_room). A packer thread
 *   compresses and writes the finished blocks, off the drain's lock
 *   (hand_over). Blocks are large
 *   (the writer's 2 MiB maximum): the log's coding state and zlib's window
 *   restart at every block, so small blocks cost several times the bytes.
 *   A block is flushed when full or every BTPACK_HEAP_FLUSH_MS (default
 *   5000), with the clock samples taken every 100 ms since the last flush
 *   (a `clock` note) and, when objects were loaded or unloaded, the
 *   process's `images` (with their build IDs), both in one metadata block.
 *   The notes of the start share one block too, and the last ones ride in
 *   the END block: a short run's log is mostly metadata and 80-byte block
 *   headers.
 * - Recursion: a per-thread flag marks "inside the tracer"; an allocation
 *   made while it is set (by dlsym, the capture, the writer, or a signal
 *   handler interrupting the tracer) goes straight to the real allocator and
 *   is counted as untraced. Before the real functions are known (dlsym
 *   bootstrap), allocations come from a static arena that is never freed.
 * - fork: the child is not traced (pthread_atfork turns its hooks into pass
 *   through; the parent's log is untouched). exec: the log is completed
 *   first (its END block holds an `exec` note) and the new image is not traced
 *   (LD_PRELOAD and BTPACK_HEAP_OUTPUT are removed from the environment at
 *   start, so no child or new image inherits them). vfork children are told
 *   apart by their pid. exit and _exit: the rings are drained and the log
 *   completed. A crash (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP,
 *   SIGSYS while their action is the default): the crashing thread asks the
 *   writer thread to complete the log and waits for it (at most 2 s) before
 *   the signal takes its default action. A process killed otherwise loses
 *   the events since the last flush (the log promises every complete block).
 *
 * Environment: BTPACK_HEAP_OUTPUT=FILE (required: without it nothing is
 * traced), BTPACK_HEAP_STATUS_FD (a pipe told "write ERRNO" when writing
 * the log fails), BTPACK_STACKTRACE_METHOD (the capture method), BTPACK_HEAP_LZMA
 * (LZMA2 preset 1..9, default 2: about zlib 9's CPU time in the packer
 * thread for heap logs 1.3-2.8x smaller; 6 takes a few times longer for
 * another 5-10 %), BTPACK_HEAP_ZLIB (zlib
 * level 1..9 instead, 0 = no compression; the default without liblzma is
 * zlib 9), BTPACK_HEAP_FLUSH_MS (longest time between flushes, 100..
 * 600000; default 5000), BTPACK_HEAP_NO_ADDRESSES (non-empty, not 0:
 * synthetic addresses instead of the real ones, see synth_alloc).
 */
#include <btpack/btpack.h>

#include "capture/cfi.h"
#include "common/mix64.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Declared by <malloc.h>, which would also declare what glibc deprecates. */
void *memalign(size_t align, size_t size);
void *pvalloc(size_t size);

#define EXPORT __attribute__((visibility("default")))
#define NOINLINE __attribute__((noinline))
#define TLS __thread __attribute__((tls_model("initial-exec")))

#define MAX_FRAMES 128 /* per event; deeper stacks keep head + omit + tail */
#define RING_BYTES (1u << 20) /* per thread: some milliseconds of events */
#define SNIP 2         /* our record function and the interposed entry point */

/* EV_WRAP: the rest of the ring's buffer is unused, go on at its start. */
enum { EV_ALLOC = 1, EV_FREE = 2, EV_NOP = 3, EV_WRAP = 4 };

/* An event in a ring: this header, then n frames. Events take only the
 * bytes they use, so a ring holds thousands and stays mostly in cache. */
typedef struct event {
    uint64_t seq;
    uint64_t ptr;
    uint64_t size;
    uint32_t kind;
    uint32_t n;
    btp_frame frames[];
} event;

#define EVENT_ALIGN 32u /* >= sizeof(event): a wrap marker always fits */
#define EVENT_MAX event_bytes(MAX_FRAMES)
_Static_assert(sizeof(event) <= EVENT_ALIGN && RING_BYTES % EVENT_ALIGN == 0, "wrap marker room");

static size_t event_bytes(uint32_t n)
{
    return (sizeof(event) + (size_t)n * sizeof(btp_frame) + EVENT_ALIGN - 1) &
           ~(size_t)(EVENT_ALIGN - 1);
}

enum { RING_ACTIVE = 1, RING_DEAD = 2 };

/* head and tail each have a cache line, with each side's last look at the
 * other's counter: the producer reads tail, and the writer head, only when
 * that copy says the ring is full or empty, not once per event. */
typedef struct ring {
    _Atomic uint64_t head; /* bytes published (producer) */
    uint64_t tail_seen;    /* producer's copy of tail (<= tail) */
    char pad0[48];
    _Atomic uint64_t tail; /* bytes consumed (writer) */
    uint64_t head_seen;    /* writer's copy of head (<= head) */
    uint64_t pf;           /* writer: events before pf (from tail, pf_n of them) */
    uint32_t pf_n;         /* were announced to the log writer (prefetch_ahead) */
    char pad1[36];
    _Atomic int state;
    struct ring *_Atomic next; /* the list is append-only */
    _Alignas(64) unsigned char buf[RING_BYTES]; /* events, at head/tail % RING_BYTES */
} ring;

/* ---- real functions and the bootstrap arena ------------------------------ */

static void *(*real_malloc)(size_t);
static void (*real_free)(void *);
static void *(*real_calloc)(size_t, size_t);
static void *(*real_realloc)(void *, size_t);
static int (*real_posix_memalign)(void **, size_t, size_t);
static void *(*real_aligned_alloc)(size_t, size_t);
static void *(*real_memalign)(size_t, size_t);
static void *(*real_valloc)(size_t);
static void *(*real_pvalloc)(size_t);
static int (*real_execve)(const char *, char *const[], char *const[]);
static int (*real_execvpe)(const char *, char *const[], char *const[]);
static int (*real_fexecve)(int, char *const[], char *const[]);
static void (*real__exit)(int);

/* dlsym allocates (its error buffer) before we know the real malloc: that
 * comes from here and is never freed or traced. */
static _Alignas(64) unsigned char boot_arena[256 * 1024];
static _Atomic size_t boot_used;

static void *boot_alloc(size_t size, size_t align)
{
    if (align < 16)
        align = 16;
    size_t off = atomic_load(&boot_used), start;
    do {
        start = (off + align - 1) & ~(align - 1);
        if (start + size > sizeof boot_arena || start + size < start)
            return NULL;
    } while (!atomic_compare_exchange_weak(&boot_used, &off, start + size));
    return boot_arena + start; /* static storage: already zero for calloc */
}

static int is_boot(const void *p)
{
    return (const unsigned char *)p >= boot_arena &&
           (const unsigned char *)p < boot_arena + sizeof boot_arena;
}

/* ---- state --------------------------------------------------------------- */

enum { ST_OFF = 0, ST_ON = 1, ST_CLOSED = 2 };

static _Atomic int g_state;          /* ST_*: tracing on? */
static _Atomic int g_resolving;      /* dlsym in progress */
/* btpack heap record's pipe (BTPACK_HEAP_STATUS_FD), told when a write of
 * the log fails, so that it does not pass a log cut short for a whole one;
 * its identity, so that nothing is written to a descriptor the program
 * closed and reused. */
static int g_status_fd = -1;
static dev_t g_status_dev;
static ino_t g_status_ino;
static _Atomic int g_status_told;
static _Atomic int g_resolved;
static pid_t g_pid;                  /* the traced process (vfork children differ) */
/* The next event number, alone on its cache line: every event of every
 * thread adds to it, and a neighbour the writer thread reads per event
 * (g_state, g_rings) would make each add wait for the line to come back
 * from the writer's core. */
static struct {
    _Alignas(64) _Atomic uint64_t n;
    char pad[64 - sizeof(uint64_t)];
} g_seq_line;
#define g_seq (g_seq_line.n)
static ring *_Atomic g_rings;        /* every ring ever made */
static ring g_late_ring_storage;     /* threads past their TLS destructor */
static atomic_flag g_late_lock = ATOMIC_FLAG_INIT;
static btp_capture_options g_capture;
static pthread_key_t g_key;

/* Writer side: everything below is used with g_wlock held. */
static pthread_mutex_t g_wlock = PTHREAD_MUTEX_INITIALIZER;
static btp_log_writer *g_w;
static uint64_t g_next;              /* next event number to write */
static ring *g_last;                 /* ring that gave the last event */
static uint64_t g_gap_seq = UINT64_MAX, g_gap_since;
static uint64_t g_written, g_lost, g_last_flush, g_last_sample, g_t0;
static uint64_t g_flushed;           /* g_written at the last flush */
static uint64_t g_flush_ns = 5000000000u; /* BTPACK_HEAP_FLUSH_MS */
static unsigned long long g_dl_adds = ~0ull, g_dl_subs = ~0ull;
#define CLOCK_SAMPLES 128   /* (record, ns) pairs between flushes */
#define CLOCK_EVERY 100000000u /* ns between clock samples */
static uint64_t g_clock_rec[CLOCK_SAMPLES], g_clock_ns[CLOCK_SAMPLES];
static size_t g_n_clock;
static pthread_t g_thread;
static _Atomic int g_thread_stop;
static int g_thread_started;
/* A crashing thread sets g_crash (the signal) and waits for g_crash_done:
 * the writer thread then completes the log. */
static _Atomic int g_crash, g_crash_done;

/* Counted without the lock (relaxed adds). */
static _Atomic uint64_t g_untraced, g_boot_allocs;

typedef struct tstate {
    ring *r;
    int busy;     /* inside the tracer on this thread */
    int internal; /* the writer thread, or the tracer's start: not the program's */
    int exited; /* past our TLS destructor: use the late ring */
} tstate;

static TLS tstate t_self;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void nap(long ns)
{
    struct timespec ts = {0, ns};
    nanosleep(&ts, NULL);
}

/* ---- resolving the real functions ---------------------------------------- */

static void *next_sym(const char *name)
{
    return dlsym(RTLD_NEXT, name);
}

static void resolve(void)
{
    if (atomic_load_explicit(&g_resolved, memory_order_acquire))
        return;
    int expected = 0;
    if (!atomic_compare_exchange_strong(&g_resolving, &expected, 1)) {
        while (!atomic_load_explicit(&g_resolved, memory_order_acquire))
            sched_yield(); /* another thread is resolving: its dlsym uses the arena */
        return;
    }
    real_malloc = (void *(*)(size_t))next_sym("malloc");
    real_free = (void (*)(void *))next_sym("free");
    real_calloc = (void *(*)(size_t, size_t))next_sym("calloc");
    real_realloc = (void *(*)(void *, size_t))next_sym("realloc");
    real_posix_memalign = (int (*)(void **, size_t, size_t))next_sym("posix_memalign");
    real_aligned_alloc = (void *(*)(size_t, size_t))next_sym("aligned_alloc");
    real_memalign = (void *(*)(size_t, size_t))next_sym("memalign");
    real_valloc = (void *(*)(size_t))next_sym("valloc");
    real_pvalloc = (void *(*)(size_t))next_sym("pvalloc");
    real_execve = (int (*)(const char *, char *const[], char *const[]))next_sym("execve");
    real_execvpe = (int (*)(const char *, char *const[], char *const[]))next_sym("execvpe");
    real_fexecve = (int (*)(int, char *const[], char *const[]))next_sym("fexecve");
    real__exit = (void (*)(int))next_sym("_exit");
    atomic_store_explicit(&g_resolved, 1, memory_order_release);
}

/* While dlsym runs, allocations come from the arena. */
static int bootstrapping(void)
{
    if (atomic_load_explicit(&g_resolved, memory_order_acquire))
        return 0;
    if (atomic_load(&g_resolving))
        return 1;
    resolve();
    return 0;
}

/* ---- rings ---------------------------------------------------------------- */

static ring *ring_new(void)
{
    /* Reuse the ring of a thread that has exited, once it is drained. */
    for (ring *r = atomic_load(&g_rings); r; r = atomic_load(&r->next)) {
        int dead = RING_DEAD;
        if (atomic_load(&r->state) == RING_DEAD &&
            atomic_load_explicit(&r->tail, memory_order_acquire) == atomic_load(&r->head) &&
            atomic_compare_exchange_strong(&r->state, &dead, RING_ACTIVE))
            return r;
    }
    void *m = mmap(NULL, sizeof(ring), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    ring *r = m;
    atomic_store(&r->state, RING_ACTIVE);
    ring *old = atomic_load(&g_rings);
    do
        atomic_store(&r->next, old);
    while (!atomic_compare_exchange_weak(&g_rings, &old, r));
    return r;
}

static void thread_gone(void *arg)
{
    ring *r = arg;
    t_self.r = NULL;
    t_self.exited = 1;
    if (r)
        atomic_store(&r->state, RING_DEAD);
}

static int drain(int final);
static void hand_over(void);

/* Bytes from position h to the end of the buffer (no event wraps around
 * it: a wrap marker fills the rest). */
static inline uint64_t left_at(uint64_t h)
{
    return RING_BYTES - h % RING_BYTES;
}

/* Whether `want` more bytes fit after head h by the producer's copy of
 * tail (tail only grows: if they fit by the copy, they fit). */
static inline int fits_seen(const ring *r, uint64_t h, uint64_t want)
{
    return h - r->tail_seen + want <= RING_BYTES;
}

/* Bytes of r the producer must assume unconsumed; tail is read only when
 * the copy says `want` more would not fit. */
static uint64_t ring_used(ring *r, uint64_t want)
{
    uint64_t h = atomic_load_explicit(&r->head, memory_order_relaxed);
    if (!fits_seen(r, h, want))
        r->tail_seen = atomic_load_explicit(&r->tail, memory_order_acquire);
    return h - r->tail_seen;
}

/* Wait for room in r. The thread that finds its ring full drains every
 * ring itself when the writer thread is not already at it: on a busy
 * machine that is cheaper than handing the work over (no wake-up, no
 * switch, the events still in this core's cache). Never holds an event
 * number while waiting. */
static int wait_room(ring *r, uint64_t want)
{
    for (int spins = 0; ring_used(r, want) + want > RING_BYTES; spins++) {
        if (atomic_load_explicit(&g_state, memory_order_relaxed) != ST_ON)
            return 0; /* no writer will make room */
        if (pthread_mutex_trylock(&g_wlock) == 0) {
            if (g_w)
                drain(0);
            pthread_mutex_unlock(&g_wlock);
        }
        if (ring_used(r, want) + want <= RING_BYTES)
            break;
        if (spins > 16)
            nap(20000);
        else
            sched_yield();
    }
    return 1;
}

/* ---- recording ------------------------------------------------------------ */

static int tracing(void)
{
    return atomic_load_explicit(&g_state, memory_order_relaxed) == ST_ON && !t_self.busy;
}

/* A call the program made that is not traced (it came while this thread
 * was inside the tracer: a signal handler, or the tracer's own calls into
 * libc that allocate). The writer thread's own allocations are not counted. */
static void count_untraced(void)
{
    if (atomic_load_explicit(&g_state, memory_order_relaxed) == ST_ON && !t_self.internal)
        atomic_fetch_add_explicit(&g_untraced, 1, memory_order_relaxed);
}

static ring *my_ring(void)
{
    if (t_self.r)
        return t_self.r;
    if (t_self.exited)
        return NULL;
    ring *r = ring_new();
    if (!r)
        return NULL;
    t_self.r = r;
    pthread_setspecific(g_key, r); /* may allocate: we are busy */
    return r;
}

/* Make `bytes` more of r (from its head) visible to the writer. */
static void advance(ring *r, uint64_t bytes)
{
    atomic_store_explicit(&r->head, atomic_load_explicit(&r->head, memory_order_relaxed) + bytes,
                          memory_order_release);
}

/* Make the event at r's head visible to the writer. */
static void publish(ring *r)
{
    const event *e = (const event *)(r->buf + atomic_load_explicit(&r->head, memory_order_relaxed) %
                                                  RING_BYTES);
    advance(r, event_bytes(e->n));
}

static event *slot_of(ring *r)
{
    return (event *)(r->buf + atomic_load_explicit(&r->head, memory_order_relaxed) % RING_BYTES);
}

/* Room for an event of up to `want` bytes at r's head, in one piece: when
 * the buffer's end is nearer, a wrap marker fills the rest. 0 when there
 * is none and tracing has stopped (never write over unconsumed events:
 * their sizes are how the writer finds the next one). */
static int make_room(ring *r, uint64_t want)
{
    uint64_t left = left_at(atomic_load_explicit(&r->head, memory_order_relaxed));
    if (left < want) {
        if (!wait_room(r, left))
            return 0;
        slot_of(r)->kind = EV_WRAP;
        advance(r, left);
    }
    return wait_room(r, want);
}

/* Reserve room for an event of up to `want` bytes for this thread (or in
 * the late ring, locked). Returns the ring, or NULL when the event cannot
 * be recorded. */
static ring *reserve(uint64_t want)
{
    ring *r = my_ring();
    if (r)
        return make_room(r, want) ? r : NULL;
    if (!t_self.exited)
        return NULL;
    while (atomic_flag_test_and_set_explicit(&g_late_lock, memory_order_acquire))
        sched_yield();
    r = &g_late_ring_storage;
    if (make_room(r, want))
        return r;
    atomic_flag_clear_explicit(&g_late_lock, memory_order_release);
    return NULL;
}

/* reserve()'s usual case, inline in every entry point: the thread's own
 * ring, with `want` bytes left before its buffer's end and room by the
 * producer's copy of tail. What make_room and wait_room would find without
 * a wrap marker and without reading tail; everything else goes to
 * reserve(). */
static inline __attribute__((always_inline)) ring *reserve_fast(uint64_t want)
{
    ring *r = t_self.r;
    if (r) {
        uint64_t h = atomic_load_explicit(&r->head, memory_order_relaxed);
        if (left_at(h) >= want && fits_seen(r, h, want))
            return r;
    }
    return reserve(want);
}

static void release(ring *r)
{
    if (r == &g_late_ring_storage)
        atomic_flag_clear_explicit(&g_late_lock, memory_order_release);
}

static uint64_t take_seq(void)
{
    return atomic_fetch_add_explicit(&g_seq, 1, memory_order_relaxed);
}

/* The entry point's frame record (ENTRY_FRAME, in the interposed function
 * itself): on x86_64 its saved frame pointer and return address, and the
 * program's stack pointer after the return just above them. With the cfi
 * method, the capture starts there, at the program's frame, instead of
 * walking the tracer's own frames to snip them (btp_capture_cfi_caller). */
#define ENTRY_FRAME() ((const uintptr_t *)__builtin_frame_address(0))
#if defined(__x86_64__)
static int g_from_caller; /* the capture starts at the program's frame */
#else
enum { g_from_caller = 0 };
#endif

NOINLINE static void record_alloc(ring *r, void *p, size_t size, const uintptr_t *entry)
{
    event *e = slot_of(r);
    e->seq = take_seq();
    e->kind = p ? EV_ALLOC : EV_NOP;
    e->ptr = (uintptr_t)p;
    e->size = size;
    size_t n = 0;
    if (p && (g_from_caller ? btp_capture_cfi_caller(&g_capture, entry[1], (uintptr_t)(entry + 2),
                                                     entry[0], e->frames, MAX_FRAMES, &n)
                            : btp_capture(&g_capture, e->frames, MAX_FRAMES, &n)) != BTP_OK)
        n = 0;
    e->n = (uint32_t)n;
    advance(r, event_bytes((uint32_t)n));
}

/* An event numbered before the real call: FREE, or the free half of a
 * realloc (turned into a NOP if the realloc fails). */
static event *begin_free(ring *r, void *p)
{
    event *e = slot_of(r);
    e->seq = take_seq();
    e->kind = EV_FREE;
    e->ptr = (uintptr_t)p;
    e->size = 0;
    e->n = 0;
    return e;
}

/* Common shape of every allocating entry point. */
#define TRACE_ALLOC(expr, size)                                                         \
    do {                                                                                \
        if (!tracing()) {                                                               \
            count_untraced();                                                           \
            return (expr);                                                              \
        }                                                                               \
        t_self.busy = 1;                                                                \
        ring *r_ = reserve_fast(EVENT_MAX);                                             \
        void *p_ = (expr);                                                              \
        if (r_) {                                                                       \
            record_alloc(r_, p_, (size), ENTRY_FRAME());                                \
            release(r_);                                                                \
        }                                                                               \
        t_self.busy = 0;                                                                \
        return p_;                                                                      \
    } while (0)

EXPORT void *malloc(size_t size)
{
    if (bootstrapping())
        return atomic_fetch_add(&g_boot_allocs, 1), boot_alloc(size, 16);
    TRACE_ALLOC(real_malloc(size), size);
}

EXPORT void *calloc(size_t n, size_t size)
{
    if (bootstrapping()) {
        if (size && n > SIZE_MAX / size)
            return NULL;
        return atomic_fetch_add(&g_boot_allocs, 1), boot_alloc(n * size, 16);
    }
    TRACE_ALLOC(real_calloc(n, size), n * size);
}

EXPORT void free(void *p)
{
    if (!p || is_boot(p))
        return;
    if (bootstrapping())
        return; /* cannot happen: nothing but the arena exists yet */
    if (!tracing()) {
        count_untraced();
        real_free(p);
        return;
    }
    t_self.busy = 1;
    ring *r = reserve_fast(sizeof(event));
    if (r) {
        begin_free(r, p);
        advance(r, event_bytes(0));
        release(r);
    }
    real_free(p);
    t_self.busy = 0;
}

/* Inlined into realloc and reallocarray, so the stack depth to snip is the
 * same as for every other entry point. */
static inline __attribute__((always_inline)) void *realloc_impl(void *p, size_t size,
                                                                 const uintptr_t *entry)
{
    if (is_boot(p)) {
        /* Moving out of the arena: the old size is unknown, but the arena
         * block runs at most to the arena's end. */
        void *q = malloc(size);
        if (q) {
            size_t room = (size_t)(boot_arena + sizeof boot_arena - (unsigned char *)p);
            memcpy(q, p, size < room ? size : room);
        }
        return q;
    }
    if (bootstrapping())
        return boot_alloc(size, 16);
    if (!tracing()) {
        count_untraced();
        return real_realloc(p, size);
    }
    t_self.busy = 1;
    ring *r = reserve_fast(p ? sizeof(event) : EVENT_MAX);
    void *q;
    if (r) {
        /* The free half is numbered before the real call (the old block may
         * be reused by another thread as soon as realloc releases it). */
        event *e = p ? begin_free(r, p) : NULL;
        q = real_realloc(p, size);
        if (e) {
            if (!q && size)
                e->kind = EV_NOP; /* failed: the old block is still live */
            publish(r);
            release(r);
            r = (q && size) ? reserve_fast(EVENT_MAX) : NULL;
        }
        if (r) {
            record_alloc(r, q, size, entry);
            release(r);
        }
    } else {
        q = real_realloc(p, size);
    }
    t_self.busy = 0;
    return q;
}

EXPORT void *realloc(void *p, size_t size)
{
    return realloc_impl(p, size, ENTRY_FRAME());
}

EXPORT void *reallocarray(void *p, size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size) {
        errno = ENOMEM;
        return NULL;
    }
    return realloc_impl(p, n * size, ENTRY_FRAME());
}

EXPORT int posix_memalign(void **out, size_t align, size_t size)
{
    if (bootstrapping()) {
        void *p = boot_alloc(size, align);
        if (!p)
            return ENOMEM;
        *out = p;
        return 0;
    }
    if (!tracing()) {
        count_untraced();
        return real_posix_memalign(out, align, size);
    }
    t_self.busy = 1;
    ring *r = reserve_fast(EVENT_MAX);
    int rc = real_posix_memalign(out, align, size);
    if (r) {
        record_alloc(r, rc == 0 ? *out : NULL, size, ENTRY_FRAME());
        release(r);
    }
    t_self.busy = 0;
    return rc;
}

EXPORT void *aligned_alloc(size_t align, size_t size)
{
    if (bootstrapping())
        return boot_alloc(size, align);
    TRACE_ALLOC(real_aligned_alloc(align, size), size);
}

EXPORT void *memalign(size_t align, size_t size)
{
    if (bootstrapping())
        return boot_alloc(size, align);
    TRACE_ALLOC(real_memalign(align, size), size);
}

EXPORT void *valloc(size_t size)
{
    if (bootstrapping())
        return boot_alloc(size, 4096);
    TRACE_ALLOC(real_valloc(size), size);
}

EXPORT void *pvalloc(size_t size)
{
    if (bootstrapping())
        return boot_alloc((size + 4095) & ~(size_t)4095, 4096);
    TRACE_ALLOC(real_pvalloc(size), size);
}

/* ---- the writer ----------------------------------------------------------- */

/* How many events of a ring the log writer is told about before it codes
 * them (btp_log_writer_prefetch): a large live set (hundreds of thousands of
 * allocations) makes every free a cache miss in the writer's pointer map,
 * and the writer is what limits a busy program. */
#define PREFETCH_EVENTS 8u

/* The oldest unconsumed event of r, or NULL; wrap markers are consumed
 * on the way. Called with g_wlock held (head_seen is the writer side's). */
static const event *peek(ring *r)
{
    for (;;) {
        uint64_t t = atomic_load_explicit(&r->tail, memory_order_relaxed);
        if (r->head_seen == t) {
            r->head_seen = atomic_load_explicit(&r->head, memory_order_acquire);
            if (r->head_seen == t)
                return NULL;
        }
        const event *e = (const event *)(r->buf + t % RING_BYTES);
        if (e->kind != EV_WRAP)
            return e;
        atomic_store_explicit(&r->tail, t + left_at(t), memory_order_release);
    }
}

/* The ring whose oldest event is number g_next, or NULL. *pending says
 * whether any ring has events at all, *min the smallest number waiting. */
static ring *find_next(int *pending, uint64_t *min)
{
    const event *e;
    *pending = 0;
    *min = UINT64_MAX;
    if (g_last && (e = peek(g_last)) != NULL && e->seq == g_next) {
        *pending = 1;
        return g_last;
    }
    ring *all[2] = {atomic_load(&g_rings), &g_late_ring_storage};
    for (int pass = 0; pass < 2; pass++)
        for (ring *r = all[pass]; r; r = pass ? NULL : atomic_load(&r->next)) {
            if (!(e = peek(r)))
                continue;
            *pending = 1;
            if (e->seq == g_next)
                return r;
            if (e->seq < *min)
                *min = e->seq;
        }
    return NULL;
}

/* ---- synthetic addresses (BTPACK_HEAP_NO_ADDRESSES) ----------------------- */

/* Without addresses, each allocation is written at a synthetic address: a
 * bump counter over the whole run (never reset, so unique among live
 * allocations) advanced by glibc's chunk size for the request, so the log
 * writer's model finds every allocation "at the end of the last chunk
 * carved" and codes it in a tag, where a real address costs a delta or a
 * bin search (cc1's log: 790 KB -> 198 KB). A free is written at its
 * allocation's synthetic address, found by the real pointer in a table of
 * every live allocation of the run: the log writer's own map forgets past
 * max_live and restarts with each segment, so it cannot be the one. The
 * table is mmap'd (no allocator inside the tracer), open addressing with
 * linear probing, at most half full, doubled into a new mapping. Only the
 * drainer (g_wlock held) touches it. */
typedef struct synth_slot {
    uint64_t real; /* 0: empty */
    uint64_t synth;
} synth_slot;

#define SYNTH_BASE 0x10000u    /* the first synthetic address */
#define SYNTH_UNKNOWN 8u       /* a free of a pointer not allocated while traced:
                                  no allocation is ever there (they are 16-aligned),
                                  so readers count it unmatched, as with addresses */
#define SYNTH_MIN_SLOTS 65536u /* 1 MiB, mapped on first use */

static int g_synth;            /* BTPACK_HEAP_NO_ADDRESSES */
static synth_slot *g_syn;
static uint64_t g_syn_cap, g_syn_used, g_syn_next = SYNTH_BASE;
static uint64_t g_syn_ahead;   /* prefetch_ahead's guess of the next one */


/* real's slot, or the empty slot where it goes. The table is at most half
 * full, so an empty slot ends every probe; the bound is for safety. */
static synth_slot *synth_find(synth_slot *t, uint64_t cap, uint64_t real)
{
    uint64_t mask = cap - 1, i = ptr_home(real) & mask;
    for (uint64_t k = 0; k < cap; k++, i = (i + 1) & mask)
        if (!t[i].real || t[i].real == real)
            return &t[i];
    return NULL;
}

/* Room for one more entry; -1 when no larger mapping can be had. */
static int synth_room(void)
{
    if ((g_syn_used + 1) * 2 <= g_syn_cap)
        return 0;
    uint64_t nc = g_syn_cap ? g_syn_cap * 2 : SYNTH_MIN_SLOTS;
    synth_slot *t = nc <= SIZE_MAX / sizeof *t
                        ? mmap(NULL, (size_t)nc * sizeof *t, PROT_READ | PROT_WRITE,
                               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0)
                        : MAP_FAILED;
    if (t == MAP_FAILED) {
        errno = ENOMEM; /* what write_failed() reports */
        return -1;
    }
#ifdef MADV_HUGEPAGE
    /* every lookup lands on a random page of a table as large as the live
     * set: huge pages spare a TLB miss each where the kernel has them */
    madvise(t, (size_t)nc * sizeof *t, MADV_HUGEPAGE);
#endif
    for (uint64_t i = 0; i < g_syn_cap; i++)
        if (g_syn[i].real)
            *synth_find(t, nc, g_syn[i].real) = g_syn[i];
    if (g_syn)
        munmap(g_syn, (size_t)g_syn_cap * sizeof *g_syn);
    g_syn = t;
    g_syn_cap = nc;
    return 0;
}

/* Backward-shift deletion: no tombstones, so probes stay short. */
static void synth_delete(synth_slot *s)
{
    uint64_t mask = g_syn_cap - 1, i = (uint64_t)(s - g_syn), j = i;
    g_syn[i].real = 0;
    g_syn_used--;
    for (uint64_t k = 0; k < g_syn_cap; k++) {
        j = (j + 1) & mask;
        if (!g_syn[j].real)
            return;
        uint64_t home = ptr_home(g_syn[j].real) & mask;
        /* move j back to i unless its home lies in (i, j] */
        if (j > i ? home <= i || home > j : home <= i && home > j) {
            g_syn[i] = g_syn[j];
            g_syn[j].real = 0;
            i = j;
        }
    }
}

/* glibc's chunk for a request: header word, 16-byte multiple, at least 32
 * (the log model predicts the next allocation there). */
static uint64_t synth_chunk(uint64_t size)
{
    uint64_t c = size < (1ull << 60) ? (size + 8 + 15) & ~(uint64_t)15 : 1ull << 60;
    return c < 32 ? 32 : c;
}

/* The synthetic address of an allocation at real; -1 when the table cannot
 * grow, or when the counter would pass the largest address of the host's
 * word (4 GiB allocated in all on a 32-bit host): tracing then stops as on
 * a failed write, rather than reuse an address a live allocation may hold.
 * A pointer still in the table lost its free (an event counted lost):
 * it keeps its synthetic address, so readers see that address allocated
 * again before a free, as they would the real one. */
static int synth_alloc(uint64_t real, uint64_t size, uint64_t *out)
{
    if (synth_room() < 0)
        return -1;
    synth_slot *s = synth_find(g_syn, g_syn_cap, real);
    if (!s->real) {
        uint64_t c = synth_chunk(size);
        if (g_syn_next > (uint64_t)UINTPTR_MAX - c) {
            errno = EOVERFLOW; /* what write_failed() reports */
            return -1;
        }
        *s = (synth_slot){real, g_syn_next};
        g_syn_used++;
        g_syn_next += c;
    }
    *out = s->synth;
    return 0;
}

/* The synthetic address a free of real is written at. */
static uint64_t synth_free(uint64_t real)
{
    synth_slot *s = g_syn ? synth_find(g_syn, g_syn_cap, real) : NULL;
    if (!s || !s->real)
        return SYNTH_UNKNOWN;
    uint64_t v = s->synth;
    synth_delete(s);
    return v;
}

/* What e will look at, as btp_log_writer_prefetch() tells the log writer
 * for real addresses: the table slot of its real pointer (the table is as
 * large as the live set, and spread by the hash), and for an allocation
 * the log writer's slots of its synthetic address, every one new and so a
 * cache miss (python3-malloc's records, replayed: 188 ns each in the log
 * writer, 90 told ahead). That address is guessed, counting on from the last guess (events of
 * other rings may come between: then the guess is wasted, nothing else). A
 * free's synthetic address is not known before its table slot is read: its
 * log writer slot is not fetched ahead. With g_wlock held. */
static void synth_prefetch(const event *e)
{
    if (g_syn)
        __builtin_prefetch(&g_syn[ptr_home(e->ptr) & (g_syn_cap - 1)]);
    if (e->kind == EV_FREE)
        return;
    /* behind what was written, or far ahead of it (announced allocations
     * that never came: events counted lost): start again from the counter */
    if (g_syn_ahead < g_syn_next || g_syn_ahead - g_syn_next > (1u << 24))
        g_syn_ahead = g_syn_next;
    btp_log_writer_prefetch(g_w, g_syn_ahead);
    g_syn_ahead += synth_chunk(e->size);
}

/* A write of the log failed (disk full, ...): stop tracing, and say so
 * once, to btpack heap record and on stderr. Called by the threads that
 * write blocks (the writer, the packer, or the one that ends the log). */
static void write_failed(void)
{
    int err = errno ? errno : EIO;
    atomic_store(&g_state, ST_CLOSED);
    if (atomic_exchange(&g_status_told, 1))
        return;
    struct stat st;
    char msg[160];
    int n = snprintf(msg, sizeof msg, "write %d\n", err);
    if (g_status_fd >= 0 && fstat(g_status_fd, &st) == 0 && st.st_dev == g_status_dev &&
        st.st_ino == g_status_ino && n > 0 && write(g_status_fd, msg, (size_t)n) == n)
        return; /* btpack heap record says it */
    n = snprintf(msg, sizeof msg, "libbtpack-heap: cannot write the trace log: %s; tracing "
                 "stopped, the log ends here\n", strerror(err));
    if (n > 0 && write(2, msg, (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1) < 0) {
        /* nowhere else to tell */
    }
}

static void write_event(const event *e)
{
    btp_status st = BTP_OK;
    uint64_t ptr = e->ptr;
    if (e->kind == EV_ALLOC) {
        if (g_synth && synth_alloc(e->ptr, e->size, &ptr) < 0)
            st = BTP_E_OUT_OF_MEMORY;
        if (st == BTP_OK)
            st = btp_log_writer_alloc(g_w, e->size, ptr, e->frames, e->n);
        if (st == BTP_E_VALUE_TOO_WIDE || st == BTP_E_INVALID_ARGUMENT || st == BTP_E_LIMIT)
            st = btp_log_writer_alloc(g_w, e->size, ptr, NULL, 0);
    } else if (e->kind == EV_FREE) {
        st = btp_log_writer_free(g_w, g_synth ? synth_free(e->ptr) : ptr);
    } else {
        return;
    }
    if (st != BTP_OK) {
        write_failed(); /* the file cannot be written: stop tracing */
        return;
    }
    g_written++;
}

/* Tell the log writer about r's next events: those published (head_seen)
 * up to PREFETCH_EVENTS past its tail. Called with g_wlock held. */
static void prefetch_ahead(ring *r)
{
    uint64_t t = atomic_load_explicit(&r->tail, memory_order_relaxed);
    if (r->pf_n == 0 || r->pf <= t) {
        r->pf = t;
        r->pf_n = 0;
    }
    while (r->pf_n < PREFETCH_EVENTS && r->pf < r->head_seen) {
        const event *e = (const event *)(r->buf + r->pf % RING_BYTES);
        if (e->kind == EV_WRAP) {
            r->pf += left_at(r->pf);
            continue;
        }
        if ((e->kind == EV_ALLOC || e->kind == EV_FREE) && !g_synth)
            btp_log_writer_prefetch(g_w, e->ptr);
        else if (e->kind == EV_ALLOC || e->kind == EV_FREE)
            synth_prefetch(e);
        r->pf += event_bytes(e->n);
        r->pf_n++;
    }
}

/* The second step for frees without addresses: the event SYNTH_FREE_AHEAD
 * places after r's tail had its table slot fetched by prefetch_ahead a few
 * events ago; if it is a free, its synthetic address is read now and the
 * log writer told, as for an address it knows at once (python3-malloc: the
 * log writer's free was 16 % of the profile without it). Called with
 * g_wlock held, after prefetch_ahead. */
#define SYNTH_FREE_AHEAD 4u
static void synth_prefetch_free(ring *r)
{
    uint64_t at = atomic_load_explicit(&r->tail, memory_order_relaxed);
    for (unsigned k = 0; k <= SYNTH_FREE_AHEAD && at < r->head_seen && g_syn; k++) {
        const event *e = (const event *)(r->buf + at % RING_BYTES);
        if (e->kind == EV_WRAP) {
            at += left_at(at);
            continue;
        }
        if (k == SYNTH_FREE_AHEAD && e->kind == EV_FREE) {
            const synth_slot *s = synth_find(g_syn, g_syn_cap, e->ptr);
            if (s && s->real)
                btp_log_writer_prefetch(g_w, s->synth);
        }
        at += event_bytes(e->n);
    }
}

/* Write every event that can be written in order. A gap (a number taken
 * whose event is not published yet) is waited for; after 1 s (or at once
 * when final, after 20 ms) it is counted lost and skipped. Returns the
 * number of events written. Called with g_wlock held. */
static int drain(int final)
{
    int done = 0;
    uint64_t final_wait = 0;
    for (;;) {
        int pending;
        uint64_t m;
        ring *r = find_next(&pending, &m);
        if (r) {
            uint64_t t = atomic_load_explicit(&r->tail, memory_order_relaxed);
            const event *e = (const event *)(r->buf + t % RING_BYTES);
            if (g_w && atomic_load(&g_state) != ST_CLOSED)
                write_event(e);
            size_t bytes = event_bytes(e->n); /* e is the producer's once tail moves */
            atomic_store_explicit(&r->tail, t + bytes, memory_order_release);
            if (r->pf > t && r->pf_n)
                r->pf_n--; /* it was announced */
            prefetch_ahead(r);
            if (g_synth)
                synth_prefetch_free(r);
            g_next++;
            g_last = r;
            if ((++done & 1023) == 0)
                hand_over(); /* a block may have been finished: out of the lock's way */
            g_gap_seq = UINT64_MAX;
            continue;
        }
        if (!pending) {
            /* Numbers taken but not published yet: at the end, wait a bit. */
            if (final && atomic_load(&g_seq) > g_next) {
                if (!final_wait)
                    final_wait = now_ns();
                if (now_ns() - final_wait < 20000000u) {
                    sched_yield();
                    continue;
                }
                g_lost += atomic_load(&g_seq) - g_next;
                g_next = atomic_load(&g_seq);
            }
            break;
        }
        uint64_t now = now_ns();
        if (g_gap_seq != g_next) {
            g_gap_seq = g_next;
            g_gap_since = now;
        }
        if (now - g_gap_since < (final ? 20000000u : 1000000000u)) {
            if (final) {
                sched_yield();
                continue;
            }
            break;
        }
        if (m == UINT64_MAX || m < g_next)
            break;
        g_lost += m - g_next;
        g_next = m;
    }
    hand_over();
    return done;
}

/* ---- the packer thread ----------------------------------------------------- */

/* The log writer holds each finished block (BTP_LOG_WRITE_HOLD) instead of
 * compressing it under g_wlock: zlib 9 on a 2 MiB block takes tens of
 * milliseconds, in which every ring would fill and every thread of the
 * program wait. The drainer hands held blocks to this queue; the packer
 * thread compresses and writes them, one at a time in order (g_plock), while
 * the rings are drained. A full queue (the packer is behind) is written by
 * the drainer itself, as before. Lock order: g_wlock, g_plock, g_qlock. */
#define PACK_QUEUE 4
static pthread_mutex_t g_plock = PTHREAD_MUTEX_INITIALIZER; /* a block being written */
static pthread_mutex_t g_qlock = PTHREAD_MUTEX_INITIALIZER; /* the queue */
static pthread_cond_t g_qcond = PTHREAD_COND_INITIALIZER;
static btp_log_block *g_queue[PACK_QUEUE];
static size_t g_q_in, g_q_out; /* blocks queued, blocks taken off */
static int g_pack_stop;
static pthread_t g_packer;
static int g_packer_started;

static void write_block(btp_log_block *b)
{
    if (btp_log_block_write(b) != BTP_OK)
        write_failed();
}

/* Write the oldest queued block, if any. Called with g_plock held. */
static int pack_oldest(void)
{
    pthread_mutex_lock(&g_qlock);
    btp_log_block *b = g_q_out != g_q_in ? g_queue[g_q_out++ % PACK_QUEUE] : NULL;
    pthread_mutex_unlock(&g_qlock);
    if (b)
        write_block(b);
    return b != NULL;
}

/* Move the writer's held blocks to the queue. Called with g_wlock held. */
static void hand_over(void)
{
    for (btp_log_block *b; g_w && (b = btp_log_writer_take(g_w)) != NULL;) {
        pthread_mutex_lock(&g_qlock);
        while (g_q_in - g_q_out == PACK_QUEUE || !g_packer_started) {
            int queued = g_q_in != g_q_out;
            pthread_mutex_unlock(&g_qlock);
            if (!queued) { /* no packer thread: write it here */
                pthread_mutex_lock(&g_plock);
                write_block(b);
                pthread_mutex_unlock(&g_plock);
                b = NULL;
                pthread_mutex_lock(&g_qlock);
                break;
            }
            pthread_mutex_lock(&g_plock);
            pack_oldest();
            pthread_mutex_unlock(&g_plock);
            pthread_mutex_lock(&g_qlock);
        }
        if (b) {
            g_queue[g_q_in++ % PACK_QUEUE] = b;
            pthread_cond_signal(&g_qcond);
        }
        pthread_mutex_unlock(&g_qlock);
    }
}

static void *packer_main(void *arg)
{
    (void)arg;
    t_self.busy = 1; /* zlib's allocations are not the program's */
    t_self.internal = 1;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    for (;;) {
        pthread_mutex_lock(&g_qlock);
        while (g_q_in == g_q_out && !g_pack_stop)
            pthread_cond_wait(&g_qcond, &g_qlock);
        int stop = g_q_in == g_q_out && g_pack_stop;
        pthread_mutex_unlock(&g_qlock);
        if (stop)
            break;
        pthread_mutex_lock(&g_plock);
        pack_oldest();
        pthread_mutex_unlock(&g_plock);
    }
    return NULL;
}

static void stop_packer(void)
{
    if (g_packer_started && !pthread_equal(pthread_self(), g_packer)) {
        pthread_mutex_lock(&g_qlock);
        g_pack_stop = 1;
        pthread_cond_signal(&g_qcond);
        pthread_mutex_unlock(&g_qlock);
        pthread_join(g_packer, NULL);
        g_packer_started = 0;
    }
}

/* ---- metadata ------------------------------------------------------------- */

/* The metadata items that go out at one moment (start, a flush, the end),
 * gathered to be written as one block: a block header is 80 bytes, and
 * zlib compresses the items together (a short run's log is mostly its
 * metadata). With g_wlock held. */
#define NOTES_MAX 6
typedef struct note_set {
    btp_log_meta_item it[NOTES_MAX];
    void *owned[NOTES_MAX]; /* malloc'd data, freed once written */
    size_t n;
} note_set;

/* Add an item (`owned`: data to free when written, or NULL). */
static void note(note_set *ns, const char *key, const void *data, size_t len, void *owned)
{
    if (ns->n == NOTES_MAX) { /* not reached: at most 4 are gathered */
        free(owned);
        return;
    }
    ns->owned[ns->n] = owned;
    ns->it[ns->n++] = (btp_log_meta_item){key, data, len};
}

static void note_text(note_set *ns, const char *key, const char *text)
{
    note(ns, key, text, strlen(text), NULL);
}

static void notes_free(note_set *ns)
{
    for (size_t i = 0; i < ns->n; i++)
        free(ns->owned[i]);
    ns->n = 0;
}

/* Write the gathered items as one metadata block (nothing when none). */
static void notes_write(note_set *ns)
{
    if (ns->n && g_w && atomic_load(&g_state) != ST_CLOSED &&
        btp_log_writer_meta_items(g_w, ns->it, ns->n) != BTP_OK)
        write_failed();
    notes_free(ns);
}

/* Read a whole small /proc file with plain read(2) into malloc'd memory
 * (we are busy: the allocation is not traced). */
static char *read_file(const char *path, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    size_t cap = 65536, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        if (n == cap) {
            if (cap >= BTP_LOG_MAX_BLOCK / 2)
                break;
            char *nb = realloc(buf, cap * 2);
            if (!nb)
                break;
            buf = nb;
            cap *= 2;
        }
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    *len = n;
    return buf;
}

/* ---- images and clock ---------------------------------------------------- */

#define WORD_BITS ((unsigned)sizeof(void *) * 8)
#define MAX_ID 64 /* build ID bytes kept per image */

typedef struct images_ctx {
    btp_image *images;
    size_t n;
    unsigned char (*ids)[MAX_ID]; /* copies: an object may be unloaded after the walk */
    unsigned long long adds, subs;
} images_ctx;

static int count_objects(struct dl_phdr_info *info, size_t size, void *arg)
{
    images_ctx *c = arg;
    if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) {
        c->adds = info->dlpi_adds;
        c->subs = info->dlpi_subs;
    }
    return 0;
}

/* Give the image holding an object's build-ID note that build ID, read in
 * memory (what was loaded, whatever the file on disk says now). */
static int on_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    images_ctx *c = arg;
    (void)size;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        const unsigned char *id;
        size_t id_len;
        const void *notes = (const void *)(info->dlpi_addr + ph->p_vaddr);
        if (ph->p_type != PT_NOTE ||
            btp_elf_notes_build_id(notes, ph->p_memsz, 0, &id, &id_len) != BTP_OK || !id)
            continue;
        uint64_t at = (uintptr_t)notes;
        for (size_t k = 0; k < c->n; k++) {
            btp_image *im = &c->images[k];
            if (im->build_id_len || at < im->base || at >= im->end_of_text)
                continue;
            im->build_id_len = id_len < MAX_ID ? id_len : MAX_ID;
            memcpy(c->ids[k], id, im->build_id_len);
            im->build_id = c->ids[k];
            break;
        }
        break;
    }
    return 0;
}

/* Store the process's images (image lines with build IDs, imagemap.h) when
 * the set of loaded objects changed (dlopen/dlclose), so every address can
 * be symbolized: readers place an address by the newest `images` holding
 * it. /proc/self/maps is parsed by the library (btp_image_map_from_procmaps). */
static void note_objects(note_set *ns)
{
    images_ctx c = {0};
    dl_iterate_phdr(count_objects, &c);
    if (c.adds == g_dl_adds && c.subs == g_dl_subs)
        return;
    g_dl_adds = c.adds; /* a change from now on is seen next time */
    g_dl_subs = c.subs;
    size_t len = 0, lines = 1;
    char *maps = read_file("/proc/self/maps", &len);
    if (!maps)
        return;
    for (size_t i = 0; i < len; i++)
        lines += maps[i] == '\n';
    btp_image_buf buf = {malloc(lines * sizeof(btp_image)), lines, 0, malloc(len + 1), len + 1, 0};
    btp_image_map map;
    char *out = NULL;
    size_t out_len = 0;
    if (buf.images && buf.bytes &&
        btp_image_map_from_procmaps(maps, len, WORD_BITS, &buf, &map, NULL) == BTP_OK &&
        (c.ids = malloc((map.n_images + 1) * sizeof *c.ids)) != NULL) {
        c.images = buf.images;
        c.n = map.n_images;
        dl_iterate_phdr(on_object, &c);
        size_t cap = 0;
        for (size_t i = 0; i < c.n; i++) {
            size_t n = 0;
            btp_image_line_format(&c.images[i], NULL, 0, &n);
            cap += n + 1;
        }
        out = malloc(cap + 1);
        for (size_t i = 0; out && i < c.n; i++) {
            size_t n = 0;
            if (btp_image_line_format(&c.images[i], out + out_len, cap - out_len, &n) != BTP_OK)
                continue;
            out_len += n;
            out[out_len++] = '\n';
        }
    }
    if (out_len)
        note(ns, "images", out, out_len, out);
    else
        free(out);
    free(c.ids);
    free(buf.images);
    free(buf.bytes);
    free(maps);
}

/* The clock samples as one `clock` note (lines "RECORD NS": the number of
 * records written before the sample, nanoseconds since start), into
 * g_clock_text until the notes are written. Writing them flushes the
 * pending records: this is the tracer's flush. */
static char g_clock_text[CLOCK_SAMPLES * 42 + 1];

static void flush_clock(note_set *ns)
{
    size_t n = 0;
    for (size_t i = 0; i < g_n_clock; i++)
        n += (size_t)snprintf(g_clock_text + n, sizeof g_clock_text - n, "%llu %llu\n",
                              (unsigned long long)g_clock_rec[i],
                              (unsigned long long)g_clock_ns[i]);
    if (n)
        note(ns, "clock", g_clock_text, n, NULL);
    g_n_clock = 0;
    g_last_flush = now_ns();
    g_flushed = g_written; /* the notes go out after the pending records */
}

static void sample_clock(uint64_t now)
{
    /* Records only grow: of three samples with the same count the middle
     * one says nothing the other two do not (no record was written between
     * them), so it is replaced. An idle stretch costs two samples, not ten
     * a second. */
    if (g_n_clock >= 2 && g_clock_rec[g_n_clock - 1] == g_written &&
        g_clock_rec[g_n_clock - 2] == g_written) {
        g_n_clock--;
    } else if (g_n_clock == CLOCK_SAMPLES) {
        note_set ns = {0};
        flush_clock(&ns);
        notes_write(&ns);
    }
    g_clock_rec[g_n_clock] = g_written;
    g_clock_ns[g_n_clock++] = now - g_t0;
    g_last_sample = now;
}

/* `exec PATH` of an exec about to happen, for finish() (g_wlock). */
static char g_exec_note[4096];

/* Complete the log: drain, final notes, END block. Idempotent. Called with
 * g_wlock held and this thread busy. */
static void finish(const char *why)
{
    if (!g_w)
        return;
    drain(1);
    /* the last notes ride in the END block: written together, so no block
     * of their own (a log cut before the END block loses them either way) */
    note_set ns = {0};
    if (g_exec_note[0])
        note_text(&ns, "exec", g_exec_note);
    note_objects(&ns);
    sample_clock(now_ns());
    char buf[256];
    snprintf(buf, sizeof buf,
             "end=%s events=%llu written=%llu lost=%llu untraced=%llu bootstrap=%llu\n", why,
             (unsigned long long)atomic_load(&g_seq), (unsigned long long)g_written,
             (unsigned long long)g_lost, (unsigned long long)atomic_load(&g_untraced),
             (unsigned long long)atomic_load(&g_boot_allocs));
    flush_clock(&ns);
    note_text(&ns, "tracer-end", buf);
    int failed = atomic_load(&g_state) == ST_CLOSED; /* a write failed: no notes */
    atomic_store(&g_state, ST_CLOSED);
    /* the queued blocks first (the packer may be writing one: g_plock),
     * then close writes the blocks the writer still holds, in order */
    pthread_mutex_lock(&g_plock);
    while (pack_oldest())
        ;
    errno = 0;
    btp_status cst = btp_log_writer_close_items(g_w, ns.it, failed ? 0 : ns.n);
    if (cst != BTP_OK && cst != BTP_E_INVALID_ARGUMENT) /* the end block is not written */
        write_failed();
    g_w = NULL;
    pthread_mutex_unlock(&g_plock);
    notes_free(&ns);
}

static const char *crash_name(int sig)
{
    switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGILL: return "SIGILL";
    case SIGFPE: return "SIGFPE";
    case SIGABRT: return "SIGABRT";
    case SIGTRAP: return "SIGTRAP";
    case SIGSYS: return "SIGSYS";
    }
    return "signal";
}

static void *writer_main(void *arg)
{
    (void)arg;
    t_self.busy = 1; /* the writer's own allocations are not traced */
    t_self.internal = 1;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL); /* signals are for the program */
    /* Naps are short while the program allocates (its ring fills in a few
     * milliseconds, and a full ring makes the program drain it itself),
     * long once it has been quiet for a while (an idle program's tracer
     * should not wake thousands of times a second). Longer naps while events
     * come (following their rate) made 3-5 times fewer switches but, on a
     * loaded machine, rings that filled while the writer overslept and the
     * program waiting for a writer preempted with the lock held: wall times
     * up to twice as long. */
    unsigned quiet = 0;
    while (!atomic_load(&g_thread_stop)) {
        int done = 0, sig = atomic_load(&g_crash);
        pthread_mutex_lock(&g_wlock);
        if (sig) {
            finish(crash_name(sig));
            pthread_mutex_unlock(&g_wlock);
            atomic_store(&g_crash_done, 1);
            break;
        }
        if (g_w) {
            done = drain(0);
            uint64_t now = now_ns();
            if (now - g_last_sample >= CLOCK_EVERY)
                sample_clock(now);
            if (now - g_last_flush >= g_flush_ns) {
                if (g_written == g_flushed) {
                    /* no record to flush: the samples wait for the next
                     * flush or the end (an idle stretch stays two of them),
                     * rather than a block every flush interval of an idle
                     * program */
                    g_last_flush = now;
                } else {
                    note_set ns = {0};
                    note_objects(&ns);
                    flush_clock(&ns);
                    notes_write(&ns);
                }
            }
        }
        pthread_mutex_unlock(&g_wlock);
        if (done)
            quiet = 0;
        else
            nap(++quiet < 64 ? 100000 : 1000000);
    }
    return NULL;
}

static void stop_thread(void)
{
    if (g_thread_started && !pthread_equal(pthread_self(), g_thread)) {
        atomic_store(&g_thread_stop, 1);
        pthread_join(g_thread, NULL);
        g_thread_started = 0;
    }
}

/* End the recording from a thread of the traced process. */
static void shutdown_trace(const char *why)
{
    if (getpid() != g_pid || atomic_load(&g_state) != ST_ON)
        return; /* a (v)fork child, or already done */
    int was = t_self.busy;
    t_self.busy = 1;
    stop_thread();
    pthread_mutex_lock(&g_wlock);
    finish(why);
    pthread_mutex_unlock(&g_wlock);
    stop_packer();
    t_self.busy = was;
}

/* ---- process events ------------------------------------------------------- */

static void at_fork_child(void)
{
    /* Only this thread exists in the child, the writer thread does not; the
     * parent's log is the parent's. Everything passes through from now on. */
    atomic_store(&g_state, ST_OFF);
    g_thread_started = 0;
    g_packer_started = 0;
    pthread_mutex_init(&g_wlock, NULL);
    pthread_mutex_init(&g_plock, NULL);
    pthread_mutex_init(&g_qlock, NULL);
    pthread_cond_init(&g_qcond, NULL);
    g_q_in = g_q_out = 0;
    g_w = NULL;
}

static void note_exec(const char *path)
{
    if (getpid() == g_pid && atomic_load(&g_state) == ST_ON) {
        t_self.busy = 1;
        pthread_mutex_lock(&g_wlock);
        snprintf(g_exec_note, sizeof g_exec_note, "exec %s", path ? path : "?");
        pthread_mutex_unlock(&g_wlock);
        t_self.busy = 0;
    }
    shutdown_trace("exec"); /* the END block holds the note */
}

EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
    resolve();
    note_exec(path);
    return real_execve(path, argv, envp);
}

EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
    resolve();
    note_exec(file);
    return real_execvpe(file, argv, envp);
}

EXPORT int execv(const char *path, char *const argv[])
{
    return execve(path, argv, environ);
}

EXPORT int execvp(const char *file, char *const argv[])
{
    return execvpe(file, argv, environ);
}

EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
    resolve();
    note_exec("(fexecve)");
    return real_fexecve(fd, argv, envp);
}

/* execl* take their arguments as varargs: collect them (bounded). */
#include <stdarg.h>
#define EXECL_MAX 1024 /* arguments of an execl* call (on the stack) */

static int collect_args(const char *arg0, va_list ap, char **argv, char ***envp)
{
    int n = 0;
    argv[n++] = (char *)arg0;
    while (arg0 && n < EXECL_MAX && (argv[n] = va_arg(ap, char *)) != NULL)
        n++;
    if (n >= EXECL_MAX) {
        errno = E2BIG;
        return -1;
    }
    if (!arg0)
        argv[0] = NULL;
    if (envp)
        *envp = va_arg(ap, char **);
    return 0;
}

EXPORT int execl(const char *path, const char *arg, ...)
{
    char *argv[EXECL_MAX + 1];
    va_list ap;
    va_start(ap, arg);
    int rc = collect_args(arg, ap, argv, NULL);
    va_end(ap);
    return rc < 0 ? -1 : execve(path, argv, environ);
}

EXPORT int execlp(const char *file, const char *arg, ...)
{
    char *argv[EXECL_MAX + 1];
    va_list ap;
    va_start(ap, arg);
    int rc = collect_args(arg, ap, argv, NULL);
    va_end(ap);
    return rc < 0 ? -1 : execvpe(file, argv, environ);
}

EXPORT int execle(const char *path, const char *arg, ...)
{
    char *argv[EXECL_MAX + 1];
    char **envp = NULL;
    va_list ap;
    va_start(ap, arg);
    int rc = collect_args(arg, ap, argv, &envp);
    va_end(ap);
    return rc < 0 ? -1 : execve(path, argv, envp);
}

EXPORT void _exit(int status)
{
    resolve();
    shutdown_trace("_exit");
    real__exit(status);
    for (;;) /* real__exit does not return; say so to the compiler */
        ;
}

EXPORT void _Exit(int status)
{
    _exit(status);
}

/* ---- crashes --------------------------------------------------------------- */

static const int crash_signals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP, SIGSYS};

/* Installed with SA_RESETHAND, so the signal's action is the default again
 * by the time this runs: have the writer thread complete the log (only
 * async-signal-safe calls here: atomics, getpid, nanosleep), then let the
 * signal kill the process as it would have. Another thread crashing at the
 * same time, or the writer's own thread, just dies. */
static void on_crash(int sig, siginfo_t *si, void *uc)
{
    (void)si;
    (void)uc;
    int saved = errno, none = 0;
    if (getpid() == g_pid && g_thread_started && !t_self.internal &&
        atomic_load(&g_state) == ST_ON && atomic_compare_exchange_strong(&g_crash, &none, sig)) {
        for (int i = 0; i < 2000 && !atomic_load(&g_crash_done); i++)
            nap(1000000); /* at most 2 s: the writer may be stuck behind this thread */
    }
    errno = saved;
    raise(sig); /* pending until this handler returns; then the default action */
}

/* Only where the action is the default: a program's own handlers (and an
 * inherited SIG_IGN) are left alone. */
static void catch_crashes(void)
{
    for (size_t i = 0; i < sizeof crash_signals / sizeof crash_signals[0]; i++) {
        struct sigaction old, sa;
        if (sigaction(crash_signals[i], NULL, &old) != 0 || (old.sa_flags & SA_SIGINFO) ||
            old.sa_handler != SIG_DFL)
            continue;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_crash;
        sa.sa_flags = SA_SIGINFO | SA_RESETHAND | SA_ONSTACK;
        sigemptyset(&sa.sa_mask);
        sigaction(crash_signals[i], &sa, NULL);
    }
}

/* Remove our library from LD_PRELOAD and our variables, so children and new
 * images run untraced (and cannot overwrite this log). */
static void clean_environment(void)
{
    const char *pre = getenv("LD_PRELOAD");
    if (pre) {
        Dl_info info;
        const char *self = dladdr((void *)clean_environment, &info) ? info.dli_fname : NULL;
        const char *base = self ? strrchr(self, '/') : NULL;
        base = base ? base + 1 : "libbtpack-heap.so";
        size_t n = strlen(pre);
        char *out = malloc(n + 1);
        if (out) {
            size_t k = 0;
            for (const char *p = pre; *p;) {
                size_t len = strcspn(p, ": ");
                const char *slash = memrchr(p, '/', len);
                const char *name = slash ? slash + 1 : p;
                size_t name_len = len - (size_t)(name - p);
                int ours = name_len == strlen(base) && memcmp(name, base, name_len) == 0;
                if (!ours && len) {
                    if (k)
                        out[k++] = ':';
                    memcpy(out + k, p, len);
                    k += len;
                }
                p += len;
                while (*p == ':' || *p == ' ')
                    p++;
            }
            out[k] = 0;
            if (k)
                setenv("LD_PRELOAD", out, 1);
            else
                unsetenv("LD_PRELOAD");
            free(out);
        }
    }
    unsetenv("BTPACK_HEAP_OUTPUT");
    unsetenv("BTPACK_HEAP_STATUS_FD");
}

__attribute__((constructor)) static void heap_init(void)
{
    resolve();
    const char *out = getenv("BTPACK_HEAP_OUTPUT");
    if (!out || !*out || atomic_load(&g_state) != ST_OFF)
        return;
    t_self.busy = 1;
    t_self.internal = 1;
    g_pid = getpid();
    g_t0 = now_ns();
    const char *fl = getenv("BTPACK_HEAP_FLUSH_MS");
    long flush_ms = fl && *fl ? atol(fl) : 0;
    if (flush_ms >= 100 && flush_ms <= 600000)
        g_flush_ns = (uint64_t)flush_ms * 1000000u;
    int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        fprintf(stderr, "libbtpack-heap: cannot write %s: %s\n", out, strerror(errno));
        t_self.busy = t_self.internal = 0;
        return;
    }
    const char *sfd = getenv("BTPACK_HEAP_STATUS_FD");
    struct stat sst;
    if (sfd && *sfd && atoi(sfd) > 2 && fstat(atoi(sfd), &sst) == 0 && S_ISFIFO(sst.st_mode)) {
        g_status_fd = atoi(sfd);
        g_status_dev = sst.st_dev;
        g_status_ino = sst.st_ino;
        fcntl(g_status_fd, F_SETFD, FD_CLOEXEC); /* not for what the program runs */
    }
    btp_capture_options_init(&g_capture);
    g_capture.snip_pre = SNIP;
#if defined(__x86_64__)
    g_from_caller = g_capture.method == BTP_CAPTURE_CFI &&
                    btp_capture_method_available(BTP_CAPTURE_CFI);
#endif
    const char *na = getenv("BTPACK_HEAP_NO_ADDRESSES");
    g_synth = na && *na && strcmp(na, "0") != 0;
    btp_log_writer_options wo;
    btp_log_writer_options_init(&wo, (unsigned)sizeof(void *) * 8);
    wo.block_bytes = BTP_LOG_MAX_BLOCK / 2; /* the largest: see the top of this file */
    /* blocks go out when full or by the tracer's own clock (BTPACK_HEAP_FLUSH_MS, with
     * its clock note): not by the writer's, which would cut them small */
    wo.flush_interval_ms = 0;
    wo.flags |= BTP_LOG_WRITE_HOLD; /* compressed by the packer thread */
    const char *z = getenv("BTPACK_HEAP_ZLIB"), *x = getenv("BTPACK_HEAP_LZMA");
    if (!(z && *z) && btp_log_have_lzma()) {
        wo.flags |= BTP_LOG_WRITE_LZMA;
        wo.zlib_level = x && *x ? atoi(x) : 2;
    } else {
        wo.zlib_level = z && *z ? atoi(z) : 9;
        if (wo.zlib_level <= 0 || !btp_log_have_zlib())
            wo.flags |= BTP_LOG_WRITE_NO_ZLIB; /* the level, clamped below, is unused */
    }
    if (wo.zlib_level < 1)
        wo.zlib_level = 1;
    else if (wo.zlib_level > 9)
        wo.zlib_level = 9;
    if (btp_log_writer_open_fd(&g_w, fd, &wo) != BTP_OK) {
        fprintf(stderr, "libbtpack-heap: cannot start the log %s\n", out);
        close(fd);
        t_self.busy = t_self.internal = 0;
        return;
    }
    clean_environment();
    char info[512];
    char exe[256] = "";
    ssize_t el = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[el > 0 ? el : 0] = 0;
    snprintf(info, sizeof info, "pid=%d exe=%s method=%s\n", (int)g_pid, exe,
             btp_capture_method_name(g_capture.method));
    pthread_mutex_lock(&g_wlock);
    /* what a reader needs before the first record, in one block */
    note_set ns = {0};
    note_text(&ns, "tracer", info);
    if (g_synth) /* readers must not take them for heap addresses */
        note_text(&ns, "addresses", "synthetic");
    size_t cl = 0;
    char *cmd = read_file("/proc/self/cmdline", &cl);
    if (cmd)
        note(&ns, "cmdline", cmd, cl, cmd);
    note_objects(&ns);
    notes_write(&ns);
    sample_clock(now_ns());
    g_last_flush = now_ns();
    pthread_mutex_unlock(&g_wlock);
    pthread_key_create(&g_key, thread_gone);
    pthread_atfork(NULL, NULL, at_fork_child);
    atomic_store(&g_state, ST_ON);
    /* the packer first: whether it runs is settled before any drain */
    g_packer_started = pthread_create(&g_packer, NULL, packer_main, NULL) == 0;
    if (pthread_create(&g_thread, NULL, writer_main, NULL) == 0) {
        g_thread_started = 1;
        catch_crashes();
    }
    t_self.busy = 0;
    t_self.internal = 0;
}

__attribute__((destructor)) static void heap_fini(void)
{
    shutdown_trace("exit");
}
