/*
 * The lws decoder's ways to the same result, side by side: the library's
 * btp_lws_decode (on x86-64 the fast path's copy for BMI1, BMI2 and MOVBE
 * where the processor has them), a copy built without that copy
 * (BTP_LWS_V3=0: the plain fast path) and a copy with the careful path only
 * (BTP_CODEC_SMALL=1). Records of libwebsockets' and the optimal choices at
 * both word sizes, with values near each other, at 2^31 (where 32-bit
 * counts end and the 64-bit truncation checks begin), 2^56 (where the fast
 * path stops) and the word's limits; each also damaged (bits flipped,
 * bitstream cut with the trailer fixed up, random bytes) and read at the
 * other word size and into short frame arrays. Each blob sits in a heap
 * buffer of its exact size (the sanitizers see any read past it). Status,
 * every field of the info, and the frames copied must agree.
 */
#include <btpack/lws.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "test_rng.h"

/* Built from lib/codec/lws_decode.c with the name changed (meson.build). */
btp_status btp_lws_decode_nonv3(const void *blob, size_t len, unsigned word_bits, btp_frame *out,
                                size_t max_frames, btp_lws_info *info);
btp_status btp_lws_decode_general(const void *blob, size_t len, unsigned word_bits,
                                  btp_frame *out, size_t max_frames, btp_lws_info *info);

typedef btp_status (*decode_fn)(const void *, size_t, unsigned, btp_frame *, size_t,
                                btp_lws_info *);

static uint64_t rng = 0x243f6a8885a308d3u;

static uint64_t rnd(void)
{
    return test_rng(&rng);
}

static uint64_t value(unsigned wb, uint64_t base)
{
    switch (rnd() % 9) {
    case 0:
        return rnd() >> (rnd() % 64);
    case 1:
        return base;
    case 2:
        return base + rnd() % 64 - 32;
    case 3:
        return ((uint64_t)1 << (rnd() % 64)) + rnd() % 3 - 1;
    case 4:
        return ((uint64_t)1 << 56) - 2 + rnd() % 4;
    case 5: /* what libwebsockets' 64-bit decoder prints for a lost value */
        return 0xffffffff80000000u | (rnd() & 0x7fffffffu);
    case 6:
        return wb == 64 ? 0x7f0000000000u + (rnd() & 0xffffffu) : 0x80000000u + (rnd() & 0xffffu);
    default:
        return base + (rnd() & 0xfffff) - 0x80000;
    }
}

/* A record of n frames encoded into blob; its length, 0 if it did not. */
static size_t record(unsigned wb, uint8_t *blob)
{
    btp_frame f[BTP_LWS_MAX_FRAMES];
    size_t n = rnd() % (BTP_LWS_MAX_FRAMES + 1), len = 0;
    uint64_t base = rnd() % 3 ? (wb == 64 ? 0x555500000000u + (rnd() & 0xffffffffffu)
                                         : 0x8048000u + (rnd() & 0xffffffu))
                              : rnd();
    for (size_t i = 0; i < n; i++) {
        uint64_t v = value(wb, base);
        if (rnd() % 4 == 0)
            base = v;
        if (wb == 32)
            v &= 0xffffffffu;
        else if (rnd() % 2)
            v &= ((uint64_t)1 << 47) - 1;
        f[i] = (btp_frame){v, BTP_FRAME_RA};
    }
    uint64_t size = rnd() % 4 ? rnd() % 100000 : value(wb, base) & (wb == 32 ? 0xffffffffu : ~0u);
    unsigned flags = rnd() % 4 ? 0 : BTP_LWS_ENC_OPTIMAL;
    if (btp_lws_encode(n ? f : NULL, n, size, wb, flags, blob, BTP_LWS_BLOB_MAX, &len, NULL) !=
        BTP_OK)
        return 0;
    return len;
}

int main(void)
{
    static const decode_fn fn[3] = {btp_lws_decode, btp_lws_decode_nonv3,
                                    btp_lws_decode_general};
    unsigned long clean = 0, total = 0;
    for (int it = 0; it < 300000; it++) {
        unsigned wb = rnd() & 1 ? 64 : 32;
        uint8_t buf[BTP_LWS_BLOB_MAX + 2];
        size_t len = record(wb, buf);
        if (!len)
            continue;
        switch (rnd() % 6) {
        case 0: /* bits flipped */
            for (int k = 1 + (int)(rnd() % 3); k > 0; k--)
                buf[rnd() % (len - 2)] ^= (uint8_t)(1u << (rnd() % 8));
            break;
        case 1: /* cut, trailer fixed up */
            len = 2 + rnd() % (len - 1);
            buf[len - 2] = (uint8_t)(len >> 8);
            buf[len - 1] = (uint8_t)len;
            break;
        case 2: /* random bytes with a right trailer */
            len = 2 + rnd() % (BTP_LWS_BLOB_MAX - 1);
            for (size_t b = 0; b < len - 2; b++)
                buf[b] = (uint8_t)rnd();
            buf[len - 2] = (uint8_t)(len >> 8);
            buf[len - 1] = (uint8_t)len;
            break;
        case 3: /* the other word size */
            wb ^= 96;
            break;
        default:
            break;
        }
        uint8_t *blob = malloc(len);
        CHECK(blob != NULL, "out of memory");
        if (!blob)
            break;
        memcpy(blob, buf, len);
        size_t max = rnd() % 4 ? BTP_LWS_MAX_FRAMES : rnd() % (BTP_LWS_MAX_FRAMES + 1);
        int with_info = rnd() % 8 != 0;
        btp_frame out[3][BTP_LWS_MAX_FRAMES];
        btp_lws_info info[3];
        btp_status st[3];
        for (int k = 0; k < 3; k++) {
            memset(out[k], 0xa5, sizeof out[k]);
            memset(&info[k], 0x5a, sizeof info[k]);
            st[k] = fn[k](blob, len, wb, out[k], max, with_info ? &info[k] : NULL);
        }
        int same = 1;
        for (int k = 1; k < 3; k++) {
            same &= st[k] == st[0];
            if (with_info)
                same &= info[k].depth == info[0].depth &&
                        info[k].alloc_size == info[0].alloc_size &&
                        info[k].bits == info[0].bits && info[k].error_bit == info[0].error_bit &&
                        info[k].error_column == info[0].error_column &&
                        info[k].suspect == info[0].suspect;
            if (st[0] == BTP_OK || st[0] == BTP_E_LIMIT) {
                size_t depth = (size_t)(blob[0] >> 3), copy = depth < max ? depth : max;
                for (size_t i = 0; i < copy; i++)
                    same &= out[k][i].value == out[0][i].value && out[k][i].kind == out[0][i].kind;
            }
        }
        CHECK(same,
              "blob %d (%zu bytes, %u-bit, room for %zu): status %d %d %d, depth %zu %zu %zu, "
              "bits %zu %zu %zu, error bit %zu %zu %zu, suspect %x %x %x",
              it, len, wb, max, st[0], st[1], st[2], info[0].depth, info[1].depth, info[2].depth,
              info[0].bits, info[1].bits, info[2].bits, info[0].error_bit, info[1].error_bit,
              info[2].error_bit, info[0].suspect, info[1].suspect, info[2].suspect);
        clean += st[0] == BTP_OK;
        total++;
        free(blob);
    }
    /* Enough clean decodes and enough faults, or the comparison says little. */
    CHECK(clean > 100000 && total - clean > 50000, "%lu clean of %lu", clean, total);
    printf("%lu blobs decoded alike (%lu clean)\n", total, clean);
    return check_finish();
}
