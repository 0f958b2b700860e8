/*
 * Stack capture: method names and selection, the collector every walker
 * feeds (anchor, snip, head + ring + omit), and the public entry points.
 */
#include "capture_internal.h"
#include "capture_cbf.h"

#include "capture/cfi.h"
#include "codec/cbf_internal.h"
#include "codec/cbf_put.h"
#include "common/reserved.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* Collector                                                            */
/* ------------------------------------------------------------------ */

void btp_collector_anchor(btp_collector *c, uintptr_t anchor, int drop_unanchored)
{
    c->anchor = anchor;
    c->seeking = 1;
    c->drop_unanchored = drop_unanchored;
    c->fast_end = 0; /* only before the first frame: nothing went the fast way */
}

int btp_collector_cfa_slow(btp_collector *c, uintptr_t cfa, int may_switch)
{
    if (c->n_seg == 0) {
        c->seg_lo[0] = c->seg_hi[0] = cfa;
        c->n_seg = 1;
        return 1;
    }
    unsigned cur = c->n_seg - 1;
    for (unsigned i = 0; i < cur; i++)
        if (cfa >= c->seg_lo[i] && cfa <= c->seg_hi[i])
            return 0; /* back on stack walked before */
    if (cfa > c->seg_hi[cur]) {
        c->seg_hi[cur] = cfa;
        return 1;
    }
    if (!may_switch || cfa >= c->seg_lo[cur] || c->n_seg == BTP_COLLECTOR_SEGMENTS)
        return 0;
    c->seg_lo[c->n_seg] = c->seg_hi[c->n_seg] = cfa;
    c->n_seg++;
    return 1;
}

/* The stack has more than lin_cap (cap-1) frames, so it will be shortened:
 * the ring_cap frames kept in order past the head become the ring's, a
 * full ring whose oldest frame is the next one overwritten. The fast paths
 * end here (the frames they stored still count as walked). */
static void spill(btp_collector *c)
{
    if (c->fast_end)
        c->walked += (uint64_t)(c->head_n - c->fast_from);
    c->fast_end = 0;
    memmove(c->out + c->head_cap + 1, c->out + c->head_cap, c->ring_cap * sizeof *c->out);
    c->head_n = c->head_cap;
    c->ring_pos = 0;
    c->ring_total = c->ring_cap;
}

/* A frame past the head's linear part: into the ring (spilling into it
 * first), or only counted. Out of line, as the rest of what is rare here,
 * so that the usual cases of btp_collector_push (a frame set aside while
 * the anchor is sought, the anchor, one snipped, one stored in order) take
 * no saved registers: it runs for each of the library's own frames. */
static BTP_NOINLINE int keep_ring(btp_collector *c, uintptr_t addr)
{
    btp_frame f = {(uint64_t)addr, BTP_FRAME_RA};
    if (c->ring_cap > 0) {
        if (c->ring_total == 0)
            spill(c);
        c->out[c->head_cap + 1 + c->ring_pos] = f;
        if (++c->ring_pos == c->ring_cap)
            c->ring_pos = 0;
        c->ring_total++;
    } else {
        c->ring_total++; /* no ring: counted only, reported as nothing */
    }
    return 1;
}

static inline int keep(btp_collector *c, uintptr_t addr)
{
    if (c->skip > 0) {
        c->skip--;
        btp_collector_go_fast(c);
        return 1;
    }
    if (c->ring_total == 0 && c->head_n < c->lin_cap) {
        c->out[c->head_n].value = (uint64_t)addr;
        c->out[c->head_n].kind = BTP_FRAME_RA;
        c->head_n++;
        return 1;
    }
    return keep_ring(c, addr);
}

static void flush_pending(btp_collector *c)
{
    for (size_t i = 0; i < c->pending_n; i++)
        keep(c, c->pending[i]);
    c->pending_n = 0;
    c->seeking = 0;
    btp_collector_go_fast(c);
}

/* More frames than BTP_CAPTURE_SEEK_MAX and no anchor yet: give up, or keep
 * those set aside and go on without it. */
static BTP_NOINLINE int seek_overflow(btp_collector *c, uintptr_t addr)
{
    if (c->drop_unanchored)
        return 0; /* give up: the caller falls back to another walk */
    flush_pending(c);
    return keep(c, addr);
}

int btp_collector_push(btp_collector *c, uintptr_t addr)
{
    /* Frames that went the fast way count too. */
    uint64_t fast = c->fast_end ? (uint64_t)(c->head_n - c->fast_from) : 0;
    if (c->walked + fast >= BTP_CAPTURE_MAX_WALK)
        return 0;
    c->walked++;
    if (c->seeking) {
        if (addr == c->anchor) {
            c->seeking = 0;
            c->pending_n = 0;
            btp_collector_go_fast(c);
        } else if (c->pending_n < BTP_CAPTURE_SEEK_MAX) {
            c->pending[c->pending_n++] = addr;
            return 1;
        } else {
            return seek_overflow(c, addr);
        }
    }
    return keep(c, addr);
}

int btp_collector_missed_anchor(const btp_collector *c)
{
    return c->seeking;
}

static void reverse(btp_frame *f, size_t n)
{
    for (size_t i = 0, j = n; i + 1 < j; i++, j--) {
        btp_frame t = f[i];
        f[i] = f[j - 1];
        f[j - 1] = t;
    }
}

size_t btp_collector_finish_slow(btp_collector *c)
{
    if (c->seeking) {
        if (c->drop_unanchored) {
            c->pending_n = 0;
            return 0;
        }
        /* Anchor never seen: keep everything rather than nothing. */
        flush_pending(c);
    }
    /* With no ring (cap < 3) its would-be start may lie past the array. */
    btp_frame *ring = c->ring_cap > 0 ? c->out + c->head_cap + 1 : NULL;
    uint64_t stored = c->ring_total < c->ring_cap ? c->ring_total : c->ring_cap;
    uint64_t omitted = c->ring_total - stored;
    size_t r = (size_t)stored;
    if (c->ring_total > c->ring_cap && c->ring_cap > 0) {
        /* The ring wrapped: rotate so the oldest frame comes first. */
        size_t start = c->ring_pos;
        reverse(ring, start);
        reverse(ring + start, r - start);
        reverse(ring, r);
    }
    /* snip_post eats the ring, then the omitted count, then the head. */
    uint64_t post = c->snip_post;
    uint64_t d = post < r ? post : r;
    r -= (size_t)d;
    post -= d;
    d = post < omitted ? post : omitted;
    omitted -= d;
    post -= d;
    d = post < c->head_n ? post : c->head_n;
    c->head_n -= (size_t)d;

    size_t n = c->head_n;
    if (omitted > 0 && n < c->cap) {
        c->out[n].kind = BTP_FRAME_OMIT;
        c->out[n].value = omitted;
        n++;
    }
    if (r > 0 && ring && c->out + n != ring)
        memmove(c->out + n, ring, r * sizeof *ring);
    n += r;
    if (n > 0 && c->out[0].kind == BTP_FRAME_RA)
        c->out[0].kind = BTP_FRAME_PC;
    return n;
}

/* ------------------------------------------------------------------ */
/* Methods                                                              */
/* ------------------------------------------------------------------ */

static const char *const method_names[] = {"default", "fp",    "libgcc",
                                           "libunwind", "glibc", "cfi"};

const char *btp_capture_method_name(btp_capture_method method)
{
    if ((unsigned)method >= sizeof method_names / sizeof method_names[0])
        return NULL;
    return method_names[method];
}

btp_status btp_capture_method_parse(const char *name, btp_capture_method *out)
{
    if (!name || !out)
        return BTP_E_INVALID_ARGUMENT;
    for (unsigned i = 0; i < sizeof method_names / sizeof method_names[0]; i++) {
        if (strcmp(name, method_names[i]) == 0) {
            *out = (btp_capture_method)i;
            return BTP_OK;
        }
    }
    return BTP_E_SYNTAX;
}

/* The bodies of btp_capture_method_available and _default, for the
 * library's own calls (the exported functions are reached through the
 * PLT). */
static int method_available(btp_capture_method method)
{
    switch (method) {
    case BTP_CAPTURE_DEFAULT:
        return 1;
    case BTP_CAPTURE_FP:
#if defined(__x86_64__) || defined(__i386__) || defined(__aarch64__)
        return 1;
#else
        return 0;
#endif
    case BTP_CAPTURE_LIBGCC:
        return BTP_HAVE_LIBGCC_UNWIND;
    case BTP_CAPTURE_LIBUNWIND:
        return BTP_HAVE_LIBUNWIND;
    case BTP_CAPTURE_GLIBC:
        return BTP_HAVE_EXECINFO;
    case BTP_CAPTURE_CFI:
        return BTP_CFI_SUPPORTED;
    }
    return 0;
}

/* cfi first: the fastest that keeps whole stacks through code without
 * frame pointers (all of a stock Debian system), and async-signal-safe
 * where the C library has _dl_find_object (capture.h has the figures). */
static btp_capture_method method_default(void)
{
    static const btp_capture_method order[] = {BTP_CAPTURE_CFI, BTP_CAPTURE_LIBGCC,
                                               BTP_CAPTURE_LIBUNWIND, BTP_CAPTURE_GLIBC};
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++)
        if (method_available(order[i]))
            return order[i];
    return BTP_CAPTURE_FP;
}

int btp_capture_method_available(btp_capture_method method)
{
    return method_available(method);
}

btp_capture_method btp_capture_method_default(void)
{
    return method_default();
}

const char *btp_capture_method_library(btp_capture_method method)
{
    const void *sym = NULL;
    switch (method) {
    case BTP_CAPTURE_LIBGCC: sym = btp_capture_libgcc_symbol(); break;
    case BTP_CAPTURE_LIBUNWIND: sym = btp_capture_libunwind_symbol(); break;
    case BTP_CAPTURE_GLIBC: sym = btp_capture_glibc_symbol(); break;
    default: break;
    }
    Dl_info info;
    if (!sym || !dladdr(sym, &info) || !info.dli_fname || !info.dli_fname[0])
        return NULL;
    return info.dli_fname;
}

btp_status btp_capture_options_init(btp_capture_options *opt)
{
    if (!opt)
        return BTP_E_INVALID_ARGUMENT;
    memset(opt, 0, sizeof *opt);
    opt->method = btp_capture_method_default();
    btp_status st = BTP_OK;
    const char *want = getenv("BTPACK_STACKTRACE_METHOD");
    if (want && want[0]) {
        btp_capture_method m;
        if (btp_capture_method_parse(want, &m) != BTP_OK || !btp_capture_method_available(m)) {
            fprintf(stderr, "btpack: BTPACK_STACKTRACE_METHOD=%s is not available; using %s\n",
                    want, btp_capture_method_name(opt->method));
            st = BTP_E_NO_METHOD;
        } else if (m != BTP_CAPTURE_DEFAULT) {
            opt->method = m;
        }
    }
    const char *verbose = getenv("BTPACK_STACKTRACE_METHOD_VERBOSE");
    if (verbose && verbose[0] && strcmp(verbose, "0") != 0) {
        fputs("btpack: stack trace methods available:", stderr);
        for (int m = BTP_CAPTURE_FP; m <= BTP_CAPTURE_LAST; m++)
            if (btp_capture_method_available((btp_capture_method)m))
                fprintf(stderr, " %s", btp_capture_method_name((btp_capture_method)m));
        const char *lib = btp_capture_method_library(opt->method);
        fprintf(stderr, "; using %s%s%s%s\n", btp_capture_method_name(opt->method),
                lib ? " (" : "", lib ? lib : "", lib ? ")" : "");
    }
    btp_capture_preload(opt->method);
    return st;
}

void btp_capture_preload(btp_capture_method method)
{
    btp_capture_options o = {0};
    o.method = method;
    btp_frame tmp[4];
    size_t n;
    (void)btp_capture(&o, tmp, sizeof tmp / sizeof tmp[0], &n);
}

/* ------------------------------------------------------------------ */
/* Entry points                                                         */
/* ------------------------------------------------------------------ */

static btp_status resolve(const btp_capture_options *opt, btp_capture_method *m)
{
    *m = opt ? opt->method : BTP_CAPTURE_DEFAULT;
    if (opt && !btp_reserved_clear(opt->reserved))
        return BTP_E_UNSUPPORTED;
    if (*m == BTP_CAPTURE_DEFAULT)
        *m = method_default();
    if ((unsigned)*m > BTP_CAPTURE_LAST)
        return BTP_E_INVALID_ARGUMENT;
    return method_available(*m) ? BTP_OK : BTP_E_NO_METHOD;
}

/* Resolve the method and start a collector keeping frames from `anchor`. */
static btp_status begin(const btp_capture_options *opt, btp_capture_method *m, btp_collector *c,
                        btp_frame *frames, size_t cap, uintptr_t anchor)
{
    btp_status st = resolve(opt, m);
    if (st == BTP_OK)
        btp_collector_init(c, frames, cap, anchor, opt);
    return st;
}

/* Run method m into c. For the current thread (uc NULL) `here` is the frame
 * of the public entry point, whose saved frame pointer and return address
 * start the fp walk. */
static inline btp_status run(btp_capture_method m, btp_collector *c, const void *uc,
                             const btp_regs *here, const btp_capture_options *opt)
{
    unsigned flags = opt ? opt->flags : 0;
    const btp_stack_bounds *bounds = opt ? opt->bounds : NULL;
    switch (m) {
    case BTP_CAPTURE_FP:
        return btp_capture_fp_walk(c, here, bounds, flags);
    case BTP_CAPTURE_LIBGCC:
        return btp_capture_libgcc(c, uc);
    case BTP_CAPTURE_LIBUNWIND:
        return btp_capture_libunwind(c, uc);
    case BTP_CAPTURE_GLIBC:
        return btp_capture_glibc(c, uc);
    case BTP_CAPTURE_CFI:
        return btp_capture_cfi(c, uc, opt);
    default:
        return BTP_E_INVALID_ARGUMENT;
    }
}

/* The current thread's capture; `ra` is the entry point's return address,
 * `fp` its frame (see btp_capture). Inline into btp_capture: a call less
 * on the fast path. */
static inline __attribute__((always_inline)) btp_status here_at(const btp_capture_options *opt,
                                                                uintptr_t ra, uintptr_t fp,
                                 btp_frame *frames, size_t cap, size_t *n_out,
                                 btp_cbf_sink *sink)
{
    btp_capture_method m;
    btp_collector c;
    btp_status st = resolve(opt, &m);
    if (st != BTP_OK)
        return st;
    if (m == BTP_CAPTURE_FP && (!opt || (!opt->snip_pre && !opt->snip_post && !opt->bounds)) &&
        btp_capture_fp_quick(frames, cap, fp, n_out)) {
        if (sink)
            sink->plain = 1;
        return BTP_OK;
    }
    /* The fp walk starts at the entry point's frame record, whose return
     * address is the anchor: the first frame it reports is the anchor, so
     * there is nothing to seek. */
    btp_collector_init(&c, frames, cap, m == BTP_CAPTURE_FP ? 0 : ra, opt);
    c.cbf = sink;
    if (m == BTP_CAPTURE_CFI) {
        /* The walk starts here, in the entry point's own frame (one frame
         * less to walk than from inside the cfi method). */
        btp_cfi_regs regs;
        BTP_CFI_REGS_HERE(&regs);
        st = btp_capture_cfi_from(&c, &regs, opt);
    } else if (m == BTP_CAPTURE_LIBGCC) {
        st = btp_capture_libgcc_here(&c); /* the same: from this frame */
    } else {
        btp_regs here = {0, fp, fp};
        st = run(m, &c, NULL, &here, opt);
    }
    if (sink)
        sink->plain = btp_collector_usual(&c);
    *n_out = btp_collector_finish(&c);
    return st;
}

btp_status btp_capture_here_at(const btp_capture_options *opt, uintptr_t ra, uintptr_t fp,
                               btp_frame *frames, size_t cap, size_t *n_out)
{
    return here_at(opt, ra, fp, frames, cap, n_out, NULL);
}

/* The walk to fall back on when the chosen method failed: cfi (which
 * sees code without frame pointers) where it is built, else fp. */
static btp_status fallback_walk(btp_collector *c, const btp_regs *regs, const void *uc,
                                const btp_cfi_env *cfi_env, const btp_capture_options *opt,
                                btp_capture_method *used)
{
    if (btp_capture_method_available(BTP_CAPTURE_CFI)) {
        btp_cfi_regs cr;
        if (btp_cfi_regs_from_context(uc, &cr) == BTP_OK) {
            *used = BTP_CAPTURE_CFI;
            if (cfi_env)
                return btp_cfi_walk(c, &cr, cfi_env);
            return btp_capture_cfi(c, uc, opt);
        }
    }
    *used = BTP_CAPTURE_FP;
    return btp_capture_fp_walk(c, regs, opt ? opt->bounds : NULL,
                               (opt ? opt->flags : 0) | BTP_CAPTURE_ASYNC_SIGNAL_SAFE);
}

btp_status btp_capture_context_in(const btp_capture_options *opt, const void *uc,
                                  const btp_cfi_env *cfi_env, btp_frame *frames, size_t cap,
                                  size_t *n_out, btp_capture_method *used)
{
    btp_capture_method m;
    btp_collector c;
    *n_out = 0;
    btp_status st = begin(opt, &m, &c, frames, cap, 0);
    if (st != BTP_OK)
        return st;
    *used = m;
    btp_regs regs;
    st = btp_regs_from_context(uc, &regs);
    if (st != BTP_OK)
        return st;
    switch (m) {
    case BTP_CAPTURE_FP:
        st = btp_capture_fp_walk(&c, &regs, opt ? opt->bounds : NULL,
                                 (opt ? opt->flags : 0) | BTP_CAPTURE_ASYNC_SIGNAL_SAFE);
        *n_out = btp_collector_finish(&c);
        return st;
    case BTP_CAPTURE_CFI: {
        btp_cfi_regs cr;
        st = btp_cfi_regs_from_context(uc, &cr);
        if (st == BTP_OK)
            st = cfi_env ? btp_cfi_walk(&c, &cr, cfi_env) : btp_capture_cfi(&c, uc, opt);
        *n_out = btp_collector_finish(&c);
        return st;
    }
    case BTP_CAPTURE_LIBUNWIND:
        if (BTP_LIBUNWIND_FROM_CONTEXT) {
            /* libunwind starts at the interrupted frame itself. */
            st = btp_capture_libunwind(&c, uc);
            *n_out = btp_collector_finish(&c);
            if (st == BTP_OK && *n_out > 0)
                return BTP_OK;
            break;
        }
        /* elsewhere it unwinds like libgcc */
        __attribute__((fallthrough));
    default:
        /* libgcc / glibc unwind from here through the signal frame: keep
         * from the interrupted pc on (0 included: a call through a NULL
         * pointer), and only if they get there. */
        btp_collector_anchor(&c, regs.pc, 1);
        st = run(m, &c, uc, NULL, opt);
        int missed = btp_collector_missed_anchor(&c);
        *n_out = btp_collector_finish(&c);
        if (st == BTP_OK && !missed)
            return BTP_OK;
        break;
    }
    /* The method did not get through the signal frame or failed. */
    btp_collector_init(&c, frames, cap, 0, opt);
    st = fallback_walk(&c, &regs, uc, cfi_env, opt, used);
    *n_out = btp_collector_finish(&c);
    return st;
}

static btp_status capture_context(const btp_capture_options *opt, const void *uc,
                                  btp_frame *frames, size_t cap, size_t *n_out)
{
    btp_capture_method used;
    return btp_capture_context_in(opt, uc, NULL, frames, cap, n_out, &used);
}

/* btp_capture's other cases, out of line so that btp_capture itself needs
 * no saved registers and no stack (ra and fp: btp_capture's return address
 * and frame record). btp_capture ends in a call to it, which an optimising
 * compiler makes a tail call: this function then runs in btp_capture's
 * place, with btp_capture's return address and the same caller's record in
 * its own frame record, which is the one alive (btp_capture's is gone), and
 * the unwinders find one library frame to walk, as before. Called
 * otherwise (no tail call), btp_capture's frame is alive below the caller
 * and the walk starts from it, one frame further down. The arguments in
 * btp_capture's order, so that its own stay in their registers. */
static __attribute__((noinline)) btp_status capture_general(const btp_capture_options *opt,
                                                            btp_frame *frames, size_t cap,
                                                            size_t *n_out, uintptr_t ra,
                                                            uintptr_t fp)
{
    if ((uintptr_t)__builtin_return_address(0) == ra)
        fp = (uintptr_t)__builtin_frame_address(0);
    btp_status st = here_at(opt, ra, fp, frames, cap, n_out, NULL);
    __asm__ volatile("" : "+r"(st) : : "memory");
    return st;
}

/* Entry points are noinline so that their return address and frame are
 * the caller's position; the empty asm after the call keeps the compiler
 * from turning it into a tail call (which would pop the frame the fp walk
 * starts from). */
__attribute__((noinline)) btp_status btp_capture(const btp_capture_options *opt,
                                                  btp_frame *frames, size_t cap, size_t *n_out)
{
    const uintptr_t *self = __builtin_frame_address(0);
    const uintptr_t ra = (uintptr_t)__builtin_return_address(0);
    /* The usual call first, with nothing before it but the checks it
     * needs: the quick walk from the caller's record (self[0], which must
     * lie above ours: what the walk from ours would have checked first). */
    if (btp_fp_quick_options(opt) && frames && n_out && cap > BTP_FP_PASS) {
        /* What only the other paths need, kept in this frame's memory
         * while the walk runs, so that the walk has the registers to
         * itself: held in registers, they made the compiler save and
         * restore five callee-saved registers a call. */
        struct {
            const btp_capture_options *opt;
            size_t cap;
            const uintptr_t *self;
        } keep = {opt, cap, self};
        __asm__("" : "+m"(keep));
        if (btp_fp_quick(frames, cap, ra, self[0], (uintptr_t)self, n_out, 0))
            return BTP_OK;
        __asm__("" : "+m"(keep));
        opt = keep.opt;
        cap = keep.cap;
        self = keep.self;
    }
    if (!frames || !n_out || cap == 0)
        return BTP_E_INVALID_ARGUMENT;
    *n_out = 0;
    /* The fp walk through the collector where the quick one did not do,
     * and the other cases, each a tail call where the compiler makes one
     * (see capture_general). */
    if (btp_fp_quick_options(opt) && self[0] > (uintptr_t)self)
        return btp_capture_fp_entry(opt, frames, cap, n_out, ra, self[0]);
    return capture_general(opt, frames, cap, n_out, ra, (uintptr_t)self);
}

btp_status btp_capture_context(const btp_capture_options *opt, const void *ucontext,
                               btp_frame *frames, size_t cap, size_t *n_out)
{
    if (!frames || !n_out || cap == 0 || !ucontext)
        return BTP_E_INVALID_ARGUMENT;
    *n_out = 0;
    return capture_context(opt, ucontext, frames, cap, n_out);
}

btp_status btp_capture_regs(const btp_capture_options *opt, const btp_regs *regs,
                            const btp_stack_bounds *bounds, btp_frame *frames, size_t cap,
                            size_t *n_out)
{
    if (!frames || !n_out || cap == 0 || !regs)
        return BTP_E_INVALID_ARGUMENT;
    *n_out = 0;
    btp_capture_method m;
    btp_status st = resolve(opt, &m);
    if (st == BTP_E_INVALID_ARGUMENT)
        return st;
    if (opt && opt->method != BTP_CAPTURE_FP && opt->method != BTP_CAPTURE_DEFAULT)
        return BTP_E_UNSUPPORTED;
    if (!btp_capture_method_available(BTP_CAPTURE_FP))
        return BTP_E_NO_METHOD;
    btp_collector c;
    btp_collector_init(&c, frames, cap, 0, opt);
    st = btp_capture_fp_walk(&c, regs, bounds ? bounds : opt ? opt->bounds : NULL,
                             (opt ? opt->flags : 0) | BTP_CAPTURE_ASYNC_SIGNAL_SAFE);
    *n_out = btp_collector_finish(&c);
    return st;
}

#if BTP_CAPTURE_CBF_STREAM
uint8_t *btp_cbf_put_ra(uint8_t *p, uint64_t value, uint64_t before)
{
    if (value == before)
        return NULL;
    return put_address(p, value, value - before, &btp_cbf_kind_shapes[BTP_FRAME_RA], 1, 64);
}
#endif

/* btp_capture_cbf's other cases, as capture_general is btp_capture's:
 * reached by a tail call, this runs in btp_capture_cbf's place and the
 * capture is made in its frame (one library frame for the unwinders to
 * walk); called otherwise, btp_capture_cbf's frame record lies below ours
 * and the fp walk starts from it. ra: btp_capture_cbf's return address. */
static __attribute__((noinline)) btp_status capture_cbf_general(const btp_capture_options *opt,
                                                                const void *ucontext, void *buf,
                                                                size_t cap, size_t *len_out,
                                                                uintptr_t ra)
{
    const uintptr_t *self = __builtin_frame_address(0);
    const uintptr_t fp = (uintptr_t)__builtin_return_address(0) == ra ? (uintptr_t)self : self[0];
    if (!buf || !len_out || cap < 2)
        return BTP_E_INVALID_ARGUMENT;
    *len_out = 0;
    btp_frame frames[BTP_CAPTURE_CBF_MAX_FRAMES];
    size_t n = 0;
    btp_status st;
#if BTP_CAPTURE_CBF_STREAM
    btp_cbf_sink sink = {buf, cap, 0, 0, 0}, *const sink_p = &sink;
#else
    btp_cbf_sink *const sink_p = NULL;
#endif
    if (ucontext)
        st = capture_context(opt, ucontext, frames, BTP_CAPTURE_CBF_MAX_FRAMES, &n);
    else
        st = here_at(opt, ra, fp, frames, BTP_CAPTURE_CBF_MAX_FRAMES, &n, sink_p);
    /* (n is at most BTP_CAPTURE_CBF_MAX_FRAMES: the usual buffer has room
     * for the longest stream of n frames) */
    btp_status est = btp_capture_cbf_bytes(sink_p, frames, n, buf, cap, len_out);
    st = st != BTP_OK ? st : est;
    __asm__ volatile("" : "+r"(st) : : "memory");
    return st;
}

#if UINTPTR_MAX > 0xffffffffu && !BTP_CODEC_SMALL
/* The passes btp_fp_quick's walk makes into BTP_CAPTURE_CBF_MAX_FRAMES
 * slots (btp_fp_records from slot 1 up to slot cap - 1). */
#define BTP_FP_QUICK_CBF_PASSES                                                                   \
    ((BTP_CAPTURE_CBF_MAX_FRAMES - 1 - BTP_FP_PASS - 1) / BTP_FP_PASS + 1)

/*
 * btp_fp_quick for btp_capture_cbf on 64-bit words, each return address
 * written as an instruction as soon as it is read: no address array and
 * no call of the encoder (557.6 -> 434.6 instructions a capture at depth
 * 10 of the capture bench, 14 frames). The same records as btp_fp_quick
 * (btp_fp_records' test, a pass of BTP_FP_PASS records at a time) and the
 * same bytes as btp_cbf_encode of its frames with
 * BTP_CBF_ENC_TRUNCATE_ON_FULL: the pc by put_address after a previous
 * address of 0, made absolute as first_absolute does; each return
 * address by put_address, the choice every one-shot encoder makes; the
 * terminator. 1 with *len_out set when the chain ended within `passes`
 * passes after the pc (the caller makes sure buf has room for the stream
 * of that many frames); 0 when ra is 0 or f not a record above `above` on
 * the known stack, when a return address repeats the one before (a `rep`,
 * or the pc's address again as a return address) and when the chain goes
 * on: the address array's way then. Out of line, so that btp_capture_cbf's
 * other cases do not save the registers it takes.
 */
static BTP_NOINLINE int fp_quick_cbf(uint8_t *buf, size_t passes, uintptr_t ra, uintptr_t f,
                                     uintptr_t above, size_t *len_out)
{
    const btp_fp_thread *t = &btp_fp_thread_state;
    uintptr_t nk = ~t->k, not_lim = t->not_lim, nk1, r;
    if (!btp_fp_quick_starts(ra, f, above, not_lim, nk))
        return 0;
    uint8_t *p = buf;
    *p++ = cbf_info_byte(64);
    p = put_address(p, ra, ra, &btp_cbf_kind_shapes[BTP_FRAME_PC], 1, 64);
    buf[1] |= CBF_OP_ABSOLUTE;
    const cbf_shapes *shapes = &btp_cbf_kind_shapes[BTP_FRAME_RA];
    BTP_OPAQUE(shapes);
    uint64_t prev = ra, d;
#define FP_CBF_STEP                                                                               \
    if (BTP_FP_NOT_NEXT(f, not_lim, nk, nk1, r))                                                  \
        goto done;                                                                                \
    if ((d = r - prev) == 0)                                                                      \
        return 0;                                                                                 \
    p = put_address(p, r, d, shapes, 1, 64);                                                      \
    prev = r;                                                                                     \
    nk = nk1;                                                                                     \
    f = btp_fp_load(f)
    for (; passes; passes--) {
        FP_CBF_STEP;
        FP_CBF_STEP;
        FP_CBF_STEP;
        FP_CBF_STEP;
        FP_CBF_STEP;
        FP_CBF_STEP;
        FP_CBF_STEP;
        FP_CBF_STEP;
    }
#undef FP_CBF_STEP
    return 0;
done:
    *p++ = CBF_OP_END;
    *len_out = (size_t)(p - buf);
    return 1;
}
#endif

/* The capture is made in this function's own frame, or in
 * capture_cbf_general's in its place: for the unwinders, one library frame
 * to walk, as for btp_capture(). */
__attribute__((noinline)) btp_status btp_capture_cbf(const btp_capture_options *opt,
                                                      const void *ucontext, void *buf, size_t cap,
                                                      size_t *len_out)
{
    const uintptr_t *self = __builtin_frame_address(0);
    const uintptr_t ra = (uintptr_t)__builtin_return_address(0);
    /* (the arguments checked in full the general way) */
    if (btp_fp_quick_options(opt) && !ucontext && buf && len_out && cap >= BTP_CBF_BOUND(1)) {
        /* The quick walk (as in btp_capture), into an address array: the
         * encoder's fastest way in (one store a frame, no kind to check).
         * Its stream has the bytes of the frames' but for the first
         * frame's kind, a pc: the first instruction's opcode is ra's where
         * it must be pc's (spec/cbf.md 1.2: the kinds differ only in the
         * opcode's top bits; operand, length and every later byte are the
         * same), unless the second frame repeats the first, which as a
         * return address would be a rep: that goes the general way. With
         * room for an instruction of the longest (BTP_CBF_BOUND(1)), that
         * first one is always written. */
        uint64_t a[BTP_CAPTURE_CBF_MAX_FRAMES];
        a[1] = 0; /* (a walk that ends at the pc leaves it: 0 is never the pc) */
        size_t n;
        /* (in memory while the walks run: see btp_capture; ucontext is
         * NULL here) */
        struct {
            const btp_capture_options *opt;
            uint8_t *buf;
            size_t cap;
            size_t *len_out;
            uintptr_t ra;
        } keep = {opt, buf, cap, len_out, ra};
        __asm__("" : "+m"(keep));
#if UINTPTR_MAX > 0xffffffffu && !BTP_CODEC_SMALL
        /* First the walk that encodes as it goes, in passes of records
         * after the pc: as many as the array's walk takes and the buffer
         * surely holds. */
        size_t passes = cap >= BTP_CBF_BOUND(1 + BTP_FP_PASS * BTP_FP_QUICK_CBF_PASSES)
                            ? BTP_FP_QUICK_CBF_PASSES
                            : ((cap - 2) / CBF_MAX_INSTR - 1) / BTP_FP_PASS;
        if (fp_quick_cbf(buf, passes, ra, self[0], (uintptr_t)self, len_out))
            return BTP_OK;
        __asm__("" : "+m"(keep));
#endif
        if (btp_fp_quick(a, BTP_CAPTURE_CBF_MAX_FRAMES, keep.ra, self[0], (uintptr_t)self, &n, 1) &&
            a[1] != a[0]) {
            btp_status st = btp_cbf_encode_addrs(a, n, BTP_FRAME_RA, 0,
                                                 (unsigned)(8 * sizeof(void *)),
                                                 BTP_CBF_ENC_TRUNCATE_ON_FULL, keep.buf, keep.cap,
                                                 keep.len_out, NULL);
            keep.buf[1] ^= CBF_OP_RA ^ CBF_OP_PC;
            return st;
        }
        __asm__("" : "+m"(keep));
        return capture_cbf_general(keep.opt, NULL, keep.buf, keep.cap, keep.len_out, keep.ra);
    }
    /* a tail call too, where the compiler makes one (see capture_cbf_general) */
    return capture_cbf_general(opt, ucontext, buf, cap, len_out, ra);
}
