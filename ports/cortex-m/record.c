/* btp_cm_record_*: a captured chain as CBF or `~m#`, through a byte sink. */
#include <btpack/cbf.h>
#include <btpack/lws.h>

#include "cm_mem.h"

#define RECORD_MAX_FRAMES 64u

static btp_status put(btp_cm_sink sink, void *ctx, const void *bytes, size_t n)
{
    return sink(ctx, bytes, n) == 0 ? BTP_OK : BTP_E_IO;
}

/* CBF of the chain: frame 0 is a pc, the rest return addresses (the
 * 32-bit chain encoder: a fraction of the streaming encoder's code). */
static btp_status encode_cbf(const uint32_t *addrs, size_t n, int truncated, uint8_t *buf,
                             size_t cap, size_t *len)
{
    return btp_cbf_encode_chain32(addrs, n, truncated, 0, buf, cap, len, NULL);
}

static int bad_args(const uint32_t *addrs, size_t n, btp_cm_sink sink)
{
    return !sink || (!addrs && n) || n > RECORD_MAX_FRAMES;
}

btp_status btp_cm_record_cbf(const uint32_t *addrs, size_t n, int truncated, btp_cm_sink sink,
                             void *ctx)
{
    uint8_t buf[BTP_CM_CBF_MAX(RECORD_MAX_FRAMES)];
    size_t len;
    if (bad_args(addrs, n, sink))
        return BTP_E_INVALID_ARGUMENT;
    btp_status st = encode_cbf(addrs, n, truncated, buf, sizeof buf, &len);
    return st == BTP_OK ? put(sink, ctx, buf, len) : st;
}

btp_status btp_cm_record_cbf_line(const uint32_t *addrs, size_t n, int truncated,
                                  btp_cm_sink sink, void *ctx)
{
    static const char digits[] = "0123456789abcdef";
    uint8_t buf[BTP_CM_CBF_MAX(RECORD_MAX_FRAMES)];
    char line[64];
    size_t len, k = 4;
    if (bad_args(addrs, n, sink))
        return BTP_E_INVALID_ARGUMENT;
    btp_status st = encode_cbf(addrs, n, truncated, buf, sizeof buf, &len);
    if (st != BTP_OK)
        return st;
    line[0] = 'c', line[1] = 'b', line[2] = 'f', line[3] = ' ';
    for (size_t i = 0; i < len; i++) {
        if (k + 2 > sizeof line) {
            if (put(sink, ctx, line, k) != BTP_OK)
                return BTP_E_IO;
            k = 0;
        }
        line[k++] = digits[buf[i] >> 4];
        line[k++] = digits[buf[i] & 15];
    }
    line[k++] = '\n';
    return put(sink, ctx, line, k);
}

btp_status btp_cm_record_lws_line(const uint32_t *addrs, size_t n, btp_cm_sink sink, void *ctx)
{
    btp_frame frames[BTP_LWS_MAX_FRAMES];
    uint8_t blob[BTP_LWS_BLOB_MAX];
    char line[BTP_LWS_M_LINE_MAX + 1];
    size_t len, chars;
    if (bad_args(addrs, n, sink))
        return BTP_E_INVALID_ARGUMENT;
    if (n > BTP_LWS_MAX_FRAMES)
        return BTP_E_DEPTH_TOO_LARGE;
    for (size_t i = 0; i < n; i++) {
        frames[i].value = addrs[i];
        frames[i].kind = i ? BTP_FRAME_RA : BTP_FRAME_PC;
    }
    btp_status st = btp_lws_encode(frames, n, 0, 32, BTP_LWS_ENC_ANY_ADDRESS, blob, sizeof blob,
                                   &len, NULL);
    if (st == BTP_OK)
        st = btp_lws_m_format(blob, len, line, sizeof line - 1, &chars);
    if (st != BTP_OK)
        return st;
    line[chars++] = '\n';
    return put(sink, ctx, line, chars);
}
