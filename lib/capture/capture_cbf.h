/* The loop that writes a capture's usual frames as CBF, shared by
 * btp_capture_cbf (capture.c: the collector's frames), the cfi memo's
 * (cfi.c memo_cbf(): the walk's head) and the libunwind method
 * (capture_libunwind.c: unw_backtrace's addresses as they come). */
#ifndef BTPACK_CAPTURE_CBF_H
#define BTPACK_CAPTURE_CBF_H

#include "capture_internal.h"

#if BTP_CAPTURE_CBF_STREAM
#include "codec/cbf_internal.h"
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
#endif

#endif
