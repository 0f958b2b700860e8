/* Shared between the capture dispatcher and the per-method walkers. */
#ifndef BTPACK_CAPTURE_INTERNAL_H
#define BTPACK_CAPTURE_INTERNAL_H

#include <btpack/capture.h>

#include "btp_config.h"

/* libunwind can start from a signal's ucontext_t where its context type is
 * that very struct (x86_64); elsewhere it unwinds through the signal frame
 * from where it is called, like libgcc. */
#if BTP_HAVE_LIBUNWIND && BTP_HAVE_UNW_INIT_LOCAL2 && defined(__x86_64__)
#define BTP_LIBUNWIND_FROM_CONTEXT 1
#else
#define BTP_LIBUNWIND_FROM_CONTEXT 0
#endif

/*
 * Where a walker puts the addresses it finds, innermost first. It drops the
 * frames above the anchor, applies snip_pre, keeps the head of the stack in
 * out[0..head_cap) and the tail in a ring at out[head_cap+1..cap), counting
 * what falls out of the ring. No allocation, no libc: usable in signal
 * handlers.
 */
typedef struct btp_collector {
    btp_frame *out;
    size_t cap;
    size_t head_cap;
    size_t head_n;
    size_t ring_cap;
    uint64_t ring_total;  /* frames pushed into the ring, including overwritten ones */
    uintptr_t anchor;     /* first frame to keep; 0: keep from the start */
    int seeking;          /* still looking for the anchor */
    int drop_unanchored;  /* anchor not found: keep nothing (caller falls back) */
    uintptr_t pending[BTP_CAPTURE_SEEK_MAX];
    size_t pending_n;
    unsigned skip;        /* snip_pre still to drop */
    unsigned snip_post;
    uint64_t walked;      /* frames pushed (bounds the walk) */
} btp_collector;

void btp_collector_init(btp_collector *c, btp_frame *out, size_t cap, uintptr_t anchor,
                        const btp_capture_options *opt);
/* Returns non-zero while the walker should go on. */
int btp_collector_push(btp_collector *c, uintptr_t addr);
/* Lay the result out in order; returns the number of frames. */
size_t btp_collector_finish(btp_collector *c);
/* Non-zero if the anchor was looked for and never seen. */
int btp_collector_missed_anchor(const btp_collector *c);

/* btp_capture_cbf() with the anchor (return address) and frame of the
 * public entry point the caller is in. */
btp_status btp_capture_cbf_at(const btp_capture_options *opt, const void *ucontext,
                              uintptr_t ra, uintptr_t fp, void *buf, size_t cap, size_t *len_out);

/* The walkers. `uc` is a ucontext_t or NULL (current thread). */
btp_status btp_capture_fp_walk(btp_collector *c, const btp_regs *regs,
                               const btp_stack_bounds *bounds, unsigned flags);
btp_status btp_capture_libgcc(btp_collector *c, const void *uc);
btp_status btp_capture_libunwind(btp_collector *c, const void *uc);
btp_status btp_capture_glibc(btp_collector *c, const void *uc);
/* Make the method's first call now (it may load libraries). */
void btp_capture_preload(btp_capture_method method);
/* Address of a function of the method's unwinder (for dladdr), or NULL. */
const void *btp_capture_libgcc_symbol(void);
const void *btp_capture_libunwind_symbol(void);
const void *btp_capture_glibc_symbol(void);

#endif
