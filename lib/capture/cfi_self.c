/*
 * The cfi method outside the crash handler: images from the dynamic loader
 * (_dl_find_object where the C library has it: lock-free and documented
 * async-signal-safe; else dl_iterate_phdr, which takes the loader's lock),
 * stacks from the thread's bounds and the alternate signal stack.
 */
#include "capture/cfi.h"

#include "capture/cfi_cache.h"
#include "capture/elf_mem.h"
#include "common/compiler.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>

#if BTP_HAVE_DL_FIND_OBJECT

static int dlfo(uintptr_t pc, btp_cfi_image *out)
{
    struct dl_find_object d;
    if (_dl_find_object((void *)pc, &d) != 0)
        return 0;
    memset(out, 0, sizeof *out);
    out->lo = out->text_lo = (uintptr_t)d.dlfo_map_start;
    out->hi = out->text_hi = (uintptr_t)d.dlfo_map_end;
    out->eh_hdr = (uintptr_t)d.dlfo_eh_frame;
    out->id = (uintptr_t)d.dlfo_link_map;
#if DLFO_STRUCT_HAS_EH_DBASE
    out->dbase = (uintptr_t)d.dlfo_eh_dbase;
#endif
    return out->hi > out->lo;
}

/*
 * Images that stay loaded as long as this code runs: this library's own
 * (its code is running), the main program's (never unloaded: the image
 * holding the program headers the auxiliary vector names; when the loader
 * was run as a command, its own, never unloaded either) and the one
 * holding getauxval, the C library, which the image holding this code
 * needs and so keeps loaded (or, where the program took getauxval's address
 * itself, the program's stub for it: the program again). Each is asked for
 * and tagged once per process instead of once per walk. Lock-free: the one
 * that claims an entry fills it and publishes it; a signal handler that
 * interrupts that, or a fork child of a process caught in the middle,
 * finds it claimed and asks the loader as before.
 */
enum { PERM_UNKNOWN, PERM_BUSY, PERM_READY, PERM_NONE };
typedef struct perm_image {
    _Atomic int state;
    btp_cfi_image img;
} perm_image;
#define N_PERM 3
static perm_image g_perm[N_PERM];

static int perm_ready(perm_image *p, int which)
{
    int st = atomic_load_explicit(&p->state, memory_order_acquire);
    if (st != PERM_UNKNOWN)
        return st == PERM_READY;
    int expect = PERM_UNKNOWN;
    if (!atomic_compare_exchange_strong_explicit(&p->state, &expect, PERM_BUSY,
                                                 memory_order_acquire, memory_order_relaxed))
        return 0;
    uintptr_t at = which == 0   ? (uintptr_t)&dlfo
                   : which == 1 ? (uintptr_t)getauxval(AT_PHDR)
                                : (uintptr_t)&getauxval;
    btp_cfi_image img;
    if (!at || !dlfo(at, &img)) {
        atomic_store_explicit(&p->state, PERM_NONE, memory_order_release);
        return 0;
    }
    img.tag = btp_cfi_image_tag(&img);
    p->img = img;
    atomic_store_explicit(&p->state, PERM_READY, memory_order_release);
    return 1;
}

/* Those of them that are known once all are settled (ready or none), and
 * how many (g_keep_n: PERM_UNSETTLED until then, PERM_PUBLISHING while the
 * first to see them settled writes the list). */
#define PERM_UNSETTLED (~0u)
#define PERM_PUBLISHING (~1u)
static const btp_cfi_image *g_keep[N_PERM];
static _Atomic unsigned g_keep_n = PERM_UNSETTLED;

/* perm_keep() until they are all settled. */
static BTP_NOINLINE unsigned perm_keep_slow(const btp_cfi_image **out,
                                            const btp_cfi_image *const **keep)
{
    unsigned n = 0;
    int settled = 1;
    for (int i = 0; i < N_PERM; i++) {
        if (perm_ready(&g_perm[i], i))
            out[n++] = &g_perm[i].img;
        else
            settled &= atomic_load_explicit(&g_perm[i].state, memory_order_relaxed) == PERM_NONE;
    }
    *keep = out;
    /* The first to see them all settled publishes the list: it claims it,
     * writes it, then its count (a signal handler or a fork child that
     * finds it being written makes its own, as here). */
    unsigned expect = PERM_UNSETTLED;
    if (settled && atomic_compare_exchange_strong_explicit(&g_keep_n, &expect, PERM_PUBLISHING,
                                                           memory_order_acquire,
                                                           memory_order_relaxed)) {
        for (unsigned i = 0; i < n; i++)
            g_keep[i] = out[i];
        atomic_store_explicit(&g_keep_n, n, memory_order_release);
    }
    return n;
}

/* The images above that are known, for the walker to take without asking
 * (env->keep): *keep (a list of the process's, else `out` filled); the
 * count. */
static inline unsigned perm_keep(const btp_cfi_image **out, const btp_cfi_image *const **keep)
{
    _Static_assert(N_PERM <= BTP_CFI_KEEP_MAX, "env->keep holds every kept image");
    unsigned n = atomic_load_explicit(&g_keep_n, memory_order_acquire);
    if (n <= N_PERM) {
        *keep = g_keep;
        return n;
    }
    return perm_keep_slow(out, keep);
}

static int self_find(void *ctx, uintptr_t pc, btp_cfi_image *out)
{
    /* (a walker with all of them kept asks only for pcs outside them) */
    if (((const btp_cfi_self *)ctx)->n_keep == N_PERM)
        return dlfo(pc, out);
    for (int i = 0; i < N_PERM; i++) {
        perm_image *p = &g_perm[i];
        if (perm_ready(p, i) && pc - p->img.lo < p->img.hi - p->img.lo) {
            *out = p->img;
            return 1;
        }
    }
    return dlfo(pc, out);
}

#else

typedef struct find_pc {
    uintptr_t pc;
    btp_cfi_image *out;
    int found;
} find_pc;

static int on_object(struct dl_phdr_info *info, size_t size, void *data)
{
    find_pc *f = data;
    btp_elf_mem e;
    if (!btp_elf_mem_from_phdrs(&e, (uintptr_t)info->dlpi_addr, (uintptr_t)info->dlpi_phdr,
                                info->dlpi_phnum, NULL, NULL) ||
        e.n_segs == 0)
        return 0;
    /* The object's whole span, as _dl_find_object answers (the walker's
     * cache asks once per image and walk). */
    if (f->pc < e.seg_lo[0] || f->pc >= e.seg_hi[e.n_segs - 1])
        return 0;
    memset(f->out, 0, sizeof *f->out);
    f->out->eh_hdr = e.eh_hdr;
    f->out->lo = f->out->text_lo = e.seg_lo[0];
    f->out->hi = f->out->text_hi = e.seg_hi[e.n_segs - 1];
    /* The loader counts the objects it has unloaded: with it in the tag, any
     * dlclose retires every cached layout. */
    f->out->id = (uintptr_t)info->dlpi_name;
    if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs)
        f->out->id ^= (uintptr_t)info->dlpi_subs * 0x9e3779b97f4a7c15ull;
    f->found = 1;
    return 1;
}

static unsigned perm_keep(const btp_cfi_image **out, const btp_cfi_image *const **keep)
{
    *keep = out;
    return 0; /* dl_iterate_phdr's answers carry the loader's unload count */
}

static int self_find(void *ctx, uintptr_t pc, btp_cfi_image *out)
{
    (void)ctx;
    find_pc f = {pc, out, 0};
    dl_iterate_phdr(on_object, &f);
    return f.found;
}

#endif

static int self_stack_ok(void *ctx, uintptr_t a, size_t n)
{
    btp_cfi_self *s = ctx;
    if (a + n < a)
        return 0;
    for (unsigned i = 0; i < s->n_stack; i++)
        if (a >= s->stack[i].lo && a + n <= s->stack[i].hi)
            return 1;
    /* At most two regions: the stack the walk starts on and, from a signal
     * handler on the alternate stack, the thread's own. */
    btp_stack_bounds b;
    if (s->given || s->n_stack >= 2 || !btp_capture_stack_region(a, s->flags, &b) ||
        a < b.lo || a + n > b.hi)
        return 0;
    s->stack[s->n_stack++] = b;
    return 1;
}

static int self_region(void *ctx, uintptr_t a, btp_stack_bounds *out)
{
    btp_cfi_self *s = ctx;
    if (!self_stack_ok(ctx, a, 1))
        return 0;
    for (unsigned i = 0; i < s->n_stack; i++)
        if (a >= s->stack[i].lo && a < s->stack[i].hi) {
            *out = s->stack[i];
            return 1;
        }
    return 0;
}

static int self_code_ok(void *ctx, uintptr_t a, size_t n)
{
    (void)ctx;
    btp_stack_bounds b;
    return a + n >= a && btp_code_region_of(a, &b) == BTP_OK && a + n <= b.hi;
}

void btp_cfi_self_env(btp_cfi_self *self, btp_cfi_env *env, const btp_stack_bounds *given,
                      unsigned flags)
{
    /* (stack[] beyond n_stack and keep[] are filled as used) */
    self->n_stack = 0;
    self->flags = flags;
    self->given = given;
    if (given) {
        self->stack[0] = *given;
        self->n_stack = 1;
    }
    env->find = self_find;
    env->stack_ok = self_stack_ok;
    env->code_ok = self_code_ok;
    env->region = self_region;
    env->known = self->n_stack ? self->stack[0] : (btp_stack_bounds){0, 0};
    env->cache = btp_cfi_cache_global();
    env->memo = NULL;
    self->n_keep = env->n_keep = perm_keep(self->keep, &env->keep);
    env->ctx = self;
}

#if BTP_CFI_MEMO
/*
 * The thread's memos (cfi.h): one of its last walk from an exact pc (a
 * capture from here or from a signal's context), and a set for walks from
 * a caller's frame (btp_capture_cfi_caller: a heap tracer's), each of
 * which takes the one btp_cfi_memo_pick() finds for its start; and
 * whether a walk owns them now: a capture in a signal handler that
 * interrupted one on this thread walks without them (it neither reads a
 * memo half rewritten nor writes one under the interrupted walk).
 *
 * The memos (~3 KB each) are not themselves thread-local: a library's TLS
 * is one block, and with any initial-exec variable in it the whole block must fit
 * the static TLS the C library keeps spare for dlopen() (glibc: a few
 * hundred bytes), or dlopen() fails. Initial-exec TLS holds a pointer to
 * it (no allocation on first access, from any context); the memo is
 * mapped on the thread's first walk that may set things up (not one that
 * must be async-signal-safe: that one walks without a memo until an
 * ordinary capture has made it), and unmapped by a thread-specific key's
 * destructor when the thread exits. mmap, not malloc: a heap tracer's
 * capture runs inside malloc.
 */
typedef struct thread_memos {
    btp_cfi_memo own;          /* walks from an exact pc */
    btp_cfi_memo_set callers;  /* walks from a caller's frame */
} thread_memos;
static __thread thread_memos *t_memo __attribute__((tls_model("initial-exec")));
static __thread int t_memo_busy __attribute__((tls_model("initial-exec")));
static pthread_key_t g_memo_key;
static pthread_once_t g_memo_once = PTHREAD_ONCE_INIT;
static int g_memo_key_ok;

/* A thread's exit (the key's destructor): the memo goes. A capture after
 * it in the same exit maps another, which the C library's further rounds
 * of destructors release. */
static void memo_release(void *m)
{
    if (t_memo == m)
        t_memo = NULL;
    munmap(m, sizeof(thread_memos));
}

static void memo_key_make(void)
{
    g_memo_key_ok = pthread_key_create(&g_memo_key, memo_release) == 0;
}

/* No destructor may run from an unloaded library: a dlclose() forgets the
 * key (the memos of live threads stay mapped). */
__attribute__((destructor)) static void memo_key_drop(void)
{
    if (g_memo_key_ok) {
        g_memo_key_ok = 0;
        pthread_key_delete(g_memo_key);
    }
}

/* The thread's memo, mapped now if the walk may set it up; NULL if not,
 * or if that fails (the walk goes without). Zero-filled: an empty memo. */
static __attribute__((noinline, cold)) thread_memos *memo_make(int setup,
                                                            const btp_capture_options *opt)
{
    if (!setup || (opt && (opt->flags & BTP_CAPTURE_ASYNC_SIGNAL_SAFE)))
        return NULL;
    pthread_once(&g_memo_once, memo_key_make);
    if (!g_memo_key_ok)
        return NULL;
    void *m = mmap(NULL, sizeof(thread_memos), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    if (pthread_setspecific(g_memo_key, m) != 0) {
        munmap(m, sizeof(thread_memos));
        return NULL;
    }
    return t_memo = m;
}
#endif

/* btp_capture_cfi_from, and btp_capture_cfi_caller's walk (ret: from a
 * return address, btp_cfi_walk_ret); setup: the thread's memo may be made
 * now (not from a signal's context, nor with BTP_CAPTURE_ASYNC_SIGNAL_SAFE:
 * see t_memo). */
static inline __attribute__((always_inline)) btp_status
cfi_self_walk(btp_collector *c, const btp_cfi_regs *regs, const btp_capture_options *opt, int ret,
              int setup)
{
    btp_cfi_self self;
    btp_cfi_env env;
    btp_cfi_self_env(&self, &env, opt ? opt->bounds : NULL, opt ? opt->flags : 0);
    /* The stack the walk starts on, when the thread's is known and holds
     * it: what the first question about it would find anyway. */
    if (!self.given && btp_capture_known_stack(regs->r[BTP_CFI_SP], &self.stack[0])) {
        self.n_stack = 1;
        env.known = self.stack[0]; /* (what self_region answers within it) */
    }
#if BTP_CFI_MEMO
    /* Walks of the thread's own stack only: with bounds from the caller
     * the stack may be another one (the memo keeps to the thread's). */
    int own = !self.given && !t_memo_busy;
    if (own) {
        t_memo_busy = 1;
        atomic_signal_fence(memory_order_seq_cst);
        thread_memos *t = t_memo;
        if (!t)
            t = memo_make(setup, opt);
        env.memo = !t ? NULL : ret ? btp_cfi_memo_pick(&t->callers, regs->pc) : &t->own;
    }
#endif
    btp_status st = ret ? btp_cfi_walk_ret(c, regs, &env) : btp_cfi_walk(c, regs, &env);
#if BTP_CFI_MEMO
    if (own) {
        atomic_signal_fence(memory_order_seq_cst);
        t_memo_busy = 0;
    }
#endif
    return st == BTP_E_UNSUPPORTED ? BTP_E_NO_METHOD : st;
}

btp_status btp_capture_cfi_from(btp_collector *c, const btp_cfi_regs *regs,
                                const btp_capture_options *opt)
{
    return cfi_self_walk(c, regs, opt, 0, 1);
}

btp_status btp_capture_cfi_caller(const btp_capture_options *opt, uintptr_t pc, uintptr_t sp,
                                  uintptr_t fp, btp_frame *frames, size_t cap, size_t *n_out)
{
    btp_collector c;
    *n_out = 0;
    if (!frames || cap == 0)
        return BTP_E_INVALID_ARGUMENT;
    /* No anchor and nothing to snip before it: the walk starts at the
     * caller's frame, which the snipped ones led to. */
    btp_collector_init(&c, frames, cap, 0, opt);
    c.skip = 0;
    btp_collector_go_fast(&c);
    btp_cfi_regs regs;
    regs.pc = pc;
    regs.r[BTP_CFI_SP] = sp;
    regs.r[BTP_CFI_FP] = fp;
    regs.valid = (uint64_t)1 << BTP_CFI_SP | (uint64_t)1 << BTP_CFI_FP;
    /* the CFA of the step through the callee: the caller's first step
     * must move above it, as after that step */
    btp_status st =
        btp_collector_cfa_slow(&c, sp, 0) ? cfi_self_walk(&c, &regs, opt, 1, 1) : BTP_OK;
    *n_out = btp_collector_finish(&c);
    return st;
}

__attribute__((noinline)) btp_status btp_capture_cfi(btp_collector *c, const void *uc,
                                                      const btp_capture_options *opt)
{
    btp_cfi_regs regs;
    if (uc) {
        if (btp_cfi_regs_from_context(uc, &regs) != BTP_OK)
            return BTP_E_NO_METHOD;
    } else {
        BTP_CFI_REGS_HERE(&regs);
    }
    btp_status st = cfi_self_walk(c, &regs, opt, 0, !uc);
    __asm__ volatile("" : "+r"(st) : : "memory"); /* not a tail call: our frame is walked */
    return st;
}
