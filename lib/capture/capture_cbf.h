/* The loop that writes a capture's usual frames as CBF, shared by
 * btp_capture_cbf (capture.c: the collector's frames), the cfi memo's
 * (cfi.c memo_cbf(): the walk's head) and the libunwind method
 * (capture_libunwind.c: unw_backtrace's addresses as they come); what the
 * libunwind method does with those addresses and how btp_capture_cbf makes
 * its bytes of a capture, here so that fuzz/fuzz_capture_chunk.c runs this
 * very code on addresses and buffer sizes of its choosing (no fuzzer can
 * choose what unw_backtrace finds). */
#ifndef BTPACK_CAPTURE_CBF_H
#define BTPACK_CAPTURE_CBF_H

#include "capture_internal.h"
#include "codec/cbf_internal.h"

#if BTP_CAPTURE_CBF_STREAM
#include "codec/cbf_put.h"

/*
 * The information byte and the instructions of a capture's frames f[0..n),
 * which must be as the collector leaves them in the usual case (the quick
 * fp walk too): a pc (f[0], which may still be a return address during
 * the walk: the collector makes it the pc when it finishes) and then return
 * addresses. f is a btp_frame array, or with `addrs` (a constant) an array
 * of plain addresses (64-bit words: this is built only there), whose
 * frames stop at the first 0 as the collector's walkers stop there: an
 * address of 0 past the first gives NULL. Into buf, which has room for
 * BTP_CBF_BOUND(n) bytes; returns the end (the terminator is the
 * caller's). The bytes of btp_cbf_encode_bounded, without its tests of
 * what the collector makes sure of (no omit, no other kind, no value too
 * wide on 64-bit words): its loop tests each frame's kind and for a change
 * of kind, 32 instructions a frame in the capture bench against about 19.5
 * here (and its call's fixed ~70 against ~25). The choices are
 * put_address's, as in fp_quick_cbf: the pc after a previous address of 0,
 * made absolute as first_absolute does; each return address with its
 * delta, never 0 here. NULL at a repeat (a frame the same as the one
 * before, which is a `rep`) and with no frame, which
 * btp_cbf_encode_bounded then writes from the start.
 */
static BTP_ALWAYS_INLINE uint8_t *btp_frames_cbf(const void *frames, size_t n, uint8_t *buf,
                                                 const int addrs)
{
    if (n == 0)
        return NULL;
    const size_t stride = addrs ? sizeof(uint64_t) : sizeof(btp_frame);
    const uint8_t *f = frames;
    uint8_t *p = buf;
    uint64_t prev, v, d;
    __builtin_memcpy(&prev, f, sizeof prev);
    *p++ = cbf_info_byte(64);
    p = put_address(p, prev, prev, &btp_cbf_kind_shapes[BTP_FRAME_PC], 0, 64);
    buf[1] |= CBF_OP_ABSOLUTE;
    const cbf_shapes *shapes = &btp_cbf_kind_shapes[BTP_FRAME_RA];
    BTP_OPAQUE(shapes);
    /* Two frames a pass, each taking the other's value as the one
     * before: no copy of it and half the loop's tests. (A btp_frame's
     * value is its first member; read by memcpy, as the addresses may
     * be pointers.) */
#define BTP_FRAMES_CBF_STEP(v, before)                                                            \
    __builtin_memcpy(&v, f, sizeof v);                                                            \
    f += stride;                                                                                  \
    if ((d = v - (before)) == 0 || (addrs && v == 0))                                             \
        return NULL;                                                                              \
    p = put_address(p, v, d, shapes, 1, 64)
    f += stride;
    for (size_t pairs = (n - 1) / 2; pairs; pairs--) {
        BTP_FRAMES_CBF_STEP(v, prev);
        BTP_FRAMES_CBF_STEP(prev, v);
    }
    if (!(n & 1)) {
        BTP_FRAMES_CBF_STEP(v, prev);
    }
#undef BTP_FRAMES_CBF_STEP
    return p;
}

/*
 * For btp_capture_cbf (c->cbf set): the stream of a chunk of addresses
 * (the libunwind method's: unw_backtrace's, innermost first) written
 * straight from the chunk into the sink's buffer, with no copy into the
 * collector and no second pass over a frame array (2766.6 -> 2459.6
 * instructions a capture at depth 10 of the capture bench, where the
 * capture alone takes 2394.6), where the collector would take them the
 * usual way: nothing to snip, the anchor among the first
 * BTP_CAPTURE_SEEK_MAX + 1 addresses (the collector sets that many aside
 * while it seeks it), no address of 0 (the walk ends there: before the
 * anchor the collector would never see the anchor, after it the stream
 * would end earlier), no more frames from the anchor on than it keeps in
 * order, no repeat (a `rep`) and room for BTP_CBF_BOUND of them. Then the
 * collector holds nothing and has found its anchor: the sink says the
 * stream holds the capture's frames (see btp_cbf_sink). 0 otherwise, with
 * nothing changed: the frames go through the collector as for any
 * capture.
 */
static inline int btp_chunk_cbf(btp_collector *c, void *const *chunk, int n)
{
    btp_cbf_sink *sink = c->cbf;
    if (c->skip != 0 || c->snip_post != 0 || !c->seeking || c->pending_n != 0)
        return 0;
    int k = 0, seek = n <= BTP_CAPTURE_SEEK_MAX ? n : BTP_CAPTURE_SEEK_MAX + 1;
    for (uintptr_t a; (a = (uintptr_t)chunk[k]) != c->anchor; )
        if (a == 0 || ++k == seek)
            return 0;
    size_t m = (size_t)(n - k);
    if (m > c->lin_cap || sink->cap < BTP_CBF_BOUND(m))
        return 0;
    uint8_t *p = btp_frames_cbf(chunk + k, m, sink->buf, 1);
    if (!p)
        return 0;
    *p++ = CBF_OP_END;
    sink->len = (size_t)(p - sink->buf); /* (sink->n stays 0: the collector holds none) */
    c->seeking = 0;
    return 1;
}
#endif

/* A chunk of n (at least 1) addresses, innermost first, that holds the
 * whole stack (the libunwind method's fast path): the capture's frames,
 * through the collector up to the first 0, or as btp_capture_cbf's stream
 * (btp_chunk_cbf). */
static BTP_ALWAYS_INLINE void btp_collector_chunk(btp_collector *c, void *const *chunk, int n)
{
#if BTP_CAPTURE_CBF_STREAM
    if (c->cbf && btp_chunk_cbf(c, chunk, n))
        return;
#endif
    for (int i = 0; i < n; i++)
        if (chunk[i] == NULL || !btp_collector_add(c, (uintptr_t)chunk[i]))
            break;
}

/*
 * btp_capture_cbf's bytes of a capture that left its n frames (at most
 * BTP_CAPTURE_CBF_MAX_FRAMES) in `frames` and, where streams are written
 * while walking, its sink (`sink`; its buffer is buf, cap at least 2):
 * the stream the walk wrote (the memo's frames: see
 * cfi.c memo_cbf(); the libunwind method's: btp_chunk_cbf), else
 * the usual frames' by the loop for them; anything else, and a buffer
 * under the bound, by the encoder (cut with `trunc` when the buffer is
 * too small: BTP_E_BUFFER_TOO_SMALL). *len_out gets the length.
 */
static BTP_ALWAYS_INLINE btp_status btp_capture_cbf_bytes(const btp_cbf_sink *sink,
                                                          const btp_frame *frames, size_t n,
                                                          void *buf, size_t cap,
                                                          size_t *len_out)
{
    size_t len = 0;
    btp_status est = BTP_OK;
#if BTP_CAPTURE_CBF_STREAM
    uint8_t *end;
    if (sink->plain && sink->len != 0 && sink->n == n) {
        len = sink->len;
    } else if (sink->plain && cap >= BTP_CBF_BOUND(n) &&
               (end = btp_frames_cbf(frames, n, buf, 0))) {
        *end = CBF_OP_END;
        len = (size_t)(end - (uint8_t *)buf) + 1;
    } else
#else
    (void)sink;
#endif
        est = cap >= BTP_CBF_BOUND(n)
                  ? btp_cbf_encode_bounded(frames, n, buf, &len)
                  : btp_cbf_encode(frames, n, 0, (unsigned)(8 * sizeof(void *)),
                                   BTP_CBF_ENC_TRUNCATE_ON_FULL, buf, cap, &len, NULL);
    *len_out = len;
    return est;
}

#endif
