/*
 * The lws encoder's ways to the same bytes, side by side on random records:
 * the library's btp_lws_encode (on x86-64 the AVX2 vector encoder where the
 * processor has it), a copy built without it (BTP_LWS_AVX2=0: the SSE2 one
 * on x86-64, else the scalar fast path) and a copy with the general path
 * only (BTP_CODEC_SMALL=1). Status, length, error frame and bytes must
 * agree, in both modes. The records are made to hit the edges: ties between
 * references (repeats, and values mirrored around the frame), frame 0 as
 * the nearest, values at 2^49 (where the vector encoders stop) and at the
 * word's limits, other frame kinds, short buffers.
 */
#include <btpack/lws.h>
#include <string.h>

#include "check.h"
#include "test_rng.h"

/* Built from lib/codec/lws_encode.c with the name changed (meson.build). */
btp_status btp_lws_encode_nonavx2(const btp_frame *frames, size_t n, uint64_t alloc_size,
                                  unsigned word_bits, unsigned flags, void *buf, size_t cap,
                                  size_t *len_out, size_t *err_frame);
btp_status btp_lws_encode_general(const btp_frame *frames, size_t n, uint64_t alloc_size,
                                  unsigned word_bits, unsigned flags, void *buf, size_t cap,
                                  size_t *len_out, size_t *err_frame);

typedef btp_status (*encode_fn)(const btp_frame *, size_t, uint64_t, unsigned, unsigned, void *,
                                size_t, size_t *, size_t *);

static uint64_t rng = 0x9e3779b97f4a7c15u;

static uint64_t rnd(void)
{
    return test_rng(&rng);
}

/* A value near base, or one from the edges. */
static uint64_t value(unsigned wb, uint64_t base)
{
    switch (rnd() % 10) {
    case 0:
        return rnd();
    case 1:
        return rnd() >> (rnd() % 64);
    case 2:
        return base;
    case 3:
        return base + rnd() % 64 - 32;
    case 4:
        return base ^ (uint64_t)1 << (rnd() % 64);
    case 5: /* the vector encoders' limit */
        return ((uint64_t)1 << 49) - 2 + rnd() % 4;
    case 6:
        return ((uint64_t)1 << (rnd() % 64)) + rnd() % 3 - 1;
    case 7:
        return wb == 64 ? 0x7f0000000000u + (rnd() & 0xffffffu) : 0x80000000u + (rnd() & 0xffffu);
    default:
        return base + (rnd() & 0xfffff) - 0x80000;
    }
}

int main(void)
{
    static const encode_fn fn[3] = {btp_lws_encode, btp_lws_encode_nonavx2,
                                    btp_lws_encode_general};
    btp_frame f[BTP_LWS_MAX_FRAMES + 1];
    unsigned long ok = 0;
    for (int it = 0; it < 200000; it++) {
        unsigned wb = rnd() & 1 ? 64 : 32;
        size_t n = rnd() % (BTP_LWS_MAX_FRAMES + 2);
        uint64_t base = rnd() % 3 ? (wb == 64 ? 0x555500000000u + (rnd() & 0xffffffffffu)
                                             : rnd() & 0xffffffffu)
                                  : rnd();
        for (size_t i = 0; i < n; i++) {
            uint64_t v = value(wb, base);
            if (rnd() % 4 == 0)
                base = v;
            if (wb == 32 && rnd() % 50)
                v &= 0xffffffffu;
            if (wb == 64 && rnd() % 3 == 0)
                v &= ((uint64_t)1 << 49) - 1;
            f[i].value = v;
            f[i].kind = rnd() % 60 ? BTP_FRAME_RA : (btp_frame_kind)(rnd() % 5);
        }
        if (n > 2 && rnd() % 4 == 0) { /* a repeat */
            size_t i = 1 + rnd() % (n - 1);
            f[i].value = f[rnd() % i].value;
        }
        if (n > 3 && rnd() % 4 == 0) { /* two references equally near, one each side */
            size_t i = 2 + rnd() % (n - 2), back = i < 8 ? i : 8;
            size_t j = i - 1 - rnd() % back, k = i - 1 - rnd() % back;
            f[k].value = 2 * f[i].value - f[j].value;
        }
        uint64_t size = rnd() % 4 ? rnd() % 100000 : value(wb, base);
        unsigned flags = rnd() % 8 == 0    ? BTP_LWS_ENC_ANY_ADDRESS
                         : rnd() % 16 == 0 ? BTP_LWS_ENC_OPTIMAL
                                           : 0;
        size_t cap = rnd() % 8 == 0 ? rnd() % (BTP_LWS_BLOB_MAX + 10) : BTP_LWS_BLOB_MAX + 8;

        uint8_t blob[3][BTP_LWS_BLOB_MAX + 32];
        size_t len[3], err[3];
        btp_status st[3];
        int same = 1;
        for (int k = 0; k < 3; k++) {
            memset(blob[k], 0xa5, sizeof blob[k]);
            len[k] = err[k] = 12345;
            st[k] = fn[k](n ? f : NULL, n, size, wb, flags, blob[k], cap, &len[k], &err[k]);
            for (size_t b = cap; b < sizeof blob[k]; b++) /* nothing past cap */
                same &= blob[k][b] == 0xa5;
        }
        for (int k = 1; k < 3; k++)
            same &= st[k] == st[0] && len[k] == len[0] && err[k] == err[0] &&
                    (st[0] != BTP_OK || !memcmp(blob[k], blob[0], len[0]));
        CHECK(same,
              "record %d (%zu frames, %u-bit, flags %u, cap %zu): status %d %d %d, length %zu "
              "%zu %zu, error frame %zu %zu %zu",
              it, n, wb, flags, cap, st[0], st[1], st[2], len[0], len[1], len[2], err[0], err[1],
              err[2]);
        ok += same && st[0] == BTP_OK;
    }
    /* Most records must have been encoded, or the comparison says little. */
    CHECK(ok > 100000, "only %lu records encoded", ok);
    printf("%lu records encoded alike\n", ok);
    return check_finish();
}
