/*
 * Allocation metadata, the hosted part (include/btpack/heap.h): attach with
 * the current stack (btp_capture) and dump live allocations to a trace log.
 * Kept out of heap_meta.c so the freestanding part builds without an OS.
 */
#include <btpack/btpack.h>

typedef struct log_dump {
    btp_log_writer *w;
    btp_status st;
} log_dump;

static int log_one(void *ctx, const btp_heap_alloc *a)
{
    log_dump *d = ctx;
    btp_frame frames[BTP_HEAP_CAPTURE_FRAMES];
    size_t n = 0;
    btp_status st = btp_heap_frames(a, frames, BTP_HEAP_CAPTURE_FRAMES, &n);
    if (st != BTP_OK && st != BTP_E_LIMIT)
        n = 0;
    d->st = btp_log_writer_alloc(d->w, a->size, (uintptr_t)a->ptr, frames, n);
    return d->st != BTP_OK;
}

btp_status btp_heap_dump_log(btp_heap *h, btp_log_writer *w)
{
    if (!h || !w)
        return BTP_E_INVALID_ARGUMENT;
    log_dump d = {w, BTP_OK};
    btp_status st = btp_heap_walk(h, log_one, &d);
    return st == BTP_END ? d.st : st;
}

__attribute__((noinline)) btp_status btp_heap_attach_here(btp_heap *h, const btp_capture_options *opt, void *raw,
                                size_t size, void **user)
{
    btp_frame frames[BTP_HEAP_CAPTURE_FRAMES];
    size_t n = 0;
    /* Our own frame is the first the capture reports: drop it, so the
     * stack starts at our caller's call. */
    btp_capture_options o = {0};
    if (opt)
        o = *opt;
    o.snip_pre++;
    btp_status cst = btp_capture(&o, frames, BTP_HEAP_CAPTURE_FRAMES, &n);
    if (cst != BTP_OK)
        n = 0;
    btp_status st = btp_heap_attach(h, raw, size, frames, n, user);
    return st != BTP_OK ? st : cst;
}
