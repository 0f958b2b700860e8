/*
 * Fuzz target: what the libunwind method does with unw_backtrace's
 * addresses (btp_collector_chunk: into the collector, or for
 * btp_capture_cbf straight into CBF by btp_chunk_cbf and btp_frames_cbf)
 * and how btp_capture_cbf then makes its bytes (btp_capture_cbf_bytes),
 * the very code of lib/capture/capture_cbf.h, on addresses, an anchor,
 * snips and a buffer size of the fuzzer's choosing (internal API: built
 * where there is a static library). What unw_backtrace finds on a real
 * stack is the `capture_chain` target's.
 *
 * Input:
 *  byte 0     bits 0-1: snip_pre (0-3); bits 2-3: snip_post (0-3);
 *             bits 4-5: the anchor: 0, 3: the address at byte 1's
 *             position (modulo n), 1: none (0: nothing sought), 2: the
 *             value of bytes 5-12 (most likely in no frame)
 *  byte 1     the anchor's position
 *  bytes 2-3  the buffer's size, little-endian (modulo
 *             BTP_CBF_BOUND(255) + 17, at least 2)
 *  byte 4     n - 1 (1..255 addresses: what the fast path hands on)
 *  bytes 5-12 the first address
 *  the rest   one op byte an address after the first: bits 6-7 0: the
 *             one before plus the next byte (signed) shifted left by bits
 *             0-5 (modulo 64), 1: the one before again, 2: 0, 3: the next
 *             8 bytes; when the input ends, the one before plus 16
 *
 * Properties (the reference: the same addresses through a collector with
 * no sink, as btp_capture takes them, and its frames encoded by the
 * public encoder btp_cbf_encode with BTP_CBF_ENC_TRUNCATE_ON_FULL into a
 * buffer of the same size):
 *  - where btp_chunk_cbf does not write the stream, the collector's
 *    frames are the reference's, frame for frame; where it does, the
 *    collector holds none and the anchor counts as found;
 *  - the bytes, their length and the status (BTP_OK, or
 *    BTP_E_BUFFER_TOO_SMALL) are the reference's, within the buffer
 *    (which ends at a guard page);
 *  - the bytes decode (strict policy) to the reference's frames, or with
 *    BTP_E_BUFFER_TOO_SMALL to a prefix of them marked truncated.
 */
#include "fuzz.h"
#include "guard.h"

#include "capture/capture_cbf.h"

#include <btpack/cbf.h>
#include <string.h>

#define CAP BTP_CAPTURE_CBF_MAX_FRAMES
/* (room for the stream of every address of a chunk, and more: a caller's
 * buffer may be of any size) */
#define MAX_BUF (BTP_CBF_BOUND(255) + 16)

static uint64_t rd(const uint8_t **p, const uint8_t *end, unsigned n)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < n && *p < end; i++)
        v |= (uint64_t)*(*p)++ << (8 * i);
    return v;
}

static fuzz_guard g_buf, g_ref;

static int same_frame(const btp_frame *a, const btp_frame *b)
{
    return a->kind == b->kind && a->value == b->value;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *p = data, *end = data + size;
    unsigned flags = (unsigned)rd(&p, end, 1);
    unsigned at = (unsigned)rd(&p, end, 1);
    size_t cap = (size_t)(rd(&p, end, 2) % (MAX_BUF + 1));
    if (cap < 2)
        cap = 2; /* (btp_capture_cbf refuses less before any of this) */
    int n = (int)rd(&p, end, 1) + 1;
    if (n > 255)
        n = 255;
    void *chunk[255];
    uint64_t a = rd(&p, end, 8), first = a;
    chunk[0] = (void *)(uintptr_t)a;
    for (int i = 1; i < n; i++) {
        if (p == end) {
            a += 16;
        } else {
            unsigned op = *p++;
            switch (op >> 6) {
            case 0: a += (uint64_t)(int64_t)(int8_t)rd(&p, end, 1) << (op & 63); break;
            case 1: break;
            case 2: a = 0; break;
            default: a = rd(&p, end, 8); break;
            }
        }
        chunk[i] = (void *)(uintptr_t)a;
    }
    uintptr_t anchor;
    switch (flags >> 4 & 3) {
    case 1: anchor = 0; break;
    case 2: anchor = (uintptr_t)first ^ 0x5a5a5a5a5a5a5a5au; break;
    default: anchor = (uintptr_t)chunk[at % (unsigned)n]; break;
    }
    btp_capture_options o = {0};
    o.method = BTP_CAPTURE_LIBUNWIND;
    o.snip_pre = flags & 3;
    o.snip_post = flags >> 2 & 3;

    /* The reference: the collector alone, as for btp_capture. */
    btp_frame ref[CAP];
    btp_collector r;
    btp_collector_init(&r, ref, CAP, anchor, &o);
    btp_collector_chunk(&r, chunk, n);
    size_t nref = btp_collector_finish(&r);
    FUZZ_CHECK(nref <= CAP, "%zu frames", nref);
    uint8_t *want = fuzz_guard_buf(&g_ref, cap);
    size_t wlen = 0;
    btp_status ws = btp_cbf_encode(ref, nref, 0, (unsigned)(8 * sizeof(void *)),
                                   BTP_CBF_ENC_TRUNCATE_ON_FULL, want, cap, &wlen, NULL);
    FUZZ_CHECK(ws == BTP_OK || ws == BTP_E_BUFFER_TOO_SMALL, "encoder %s", btp_status_name(ws));

    /* btp_capture_cbf's way: a sink, then its bytes. */
    uint8_t *buf = fuzz_guard_buf(&g_buf, cap);
    memset(buf, 0xee, cap);
    btp_frame got[CAP];
    btp_collector c;
    btp_collector_init(&c, got, CAP, anchor, &o);
#if BTP_CAPTURE_CBF_STREAM
    btp_cbf_sink sink = {buf, cap, 0, 0, 0}, *sink_p = &sink;
    c.cbf = sink_p;
#else
    btp_cbf_sink *sink_p = NULL;
#endif
    btp_collector_chunk(&c, chunk, n);
    size_t ngot;
#if BTP_CAPTURE_CBF_STREAM
    sink.plain = btp_collector_usual(&c);
    ngot = btp_collector_finish(&c);
    FUZZ_CHECK(sink.len <= cap, "stream of %zu bytes in %zu", sink.len, cap);
    if (sink.len != 0) {
        FUZZ_CHECK(ngot == 0 && sink.n == 0 && !c.seeking,
                   "stream written, yet %zu frames collected (%zu noted), seeking %d", ngot,
                   sink.n, c.seeking);
    } else
#else
    ngot = btp_collector_finish(&c);
#endif
    {
        FUZZ_CHECK(ngot == nref, "%zu frames, without a sink %zu", ngot, nref);
        for (size_t i = 0; i < nref; i++)
            FUZZ_CHECK(same_frame(&got[i], &ref[i]), "frame %zu differs from the collector's", i);
    }
    size_t len = 0;
    btp_status st = btp_capture_cbf_bytes(sink_p, got, ngot, buf, cap, &len);
    FUZZ_CHECK(st == ws && len == wlen && memcmp(buf, want, len) == 0,
               "%s, %zu bytes; the encoder's %s, %zu bytes (%zu frames, buffer %zu)",
               btp_status_name(st), len, btp_status_name(ws), wlen, nref, cap);

    /* And they decode to the frames (a prefix, cut short). */
    btp_frame dec[CAP + 1];
    btp_cbf_info info;
    btp_status ds = btp_cbf_decode(buf, len, BTP_CBF_POLICY_STRICT, dec, CAP + 1, &info);
    FUZZ_CHECK(ds == BTP_OK, "decode %s", btp_status_name(ds));
    if (st == BTP_OK)
        FUZZ_CHECK(info.frames == nref && !info.truncated, "%zu frames decoded of %zu%s",
                   info.frames, nref, info.truncated ? ", truncated" : "");
    else
        FUZZ_CHECK(info.frames < nref && info.truncated, "cut short: %zu frames of %zu%s",
                   info.frames, nref, info.truncated ? "" : ", not marked");
    for (size_t i = 0; i < info.frames; i++)
        FUZZ_CHECK(same_frame(&dec[i], &ref[i]), "decoded frame %zu differs", i);
    return 0;
}
