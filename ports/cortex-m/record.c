/* btp_cm_record_*: a captured chain as CBF or `~m#`, and the heap records
 * (an allocation with its chain, a free), through a byte sink. */
#include <btpack/cbf.h>
#include <btpack/lws.h>

#include "cm_mem.h"

#define RECORD_MAX_FRAMES 64u
/* Most bytes of text handed to the sink at once. */
#define LINE_BYTES 64u

/* put and bad_args are forced inline: called out of line (from several
 * record functions) they would cost a fault path that links one record
 * function more than they save. */
__attribute__((always_inline)) static inline btp_status put(btp_cm_sink sink, void *ctx,
                                                            const void *bytes, size_t n)
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

__attribute__((always_inline)) static inline int bad_args(const uint32_t *addrs, size_t n,
                                                          btp_cm_sink sink)
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

static const char digits[] = "0123456789abcdef";

/* Finish a text record: line[0..k) holds its start (k <= 24); append the
 * chain as CBF in hex digits and a newline, writing through the sink in
 * pieces of up to 64 bytes (a record line costs 64 bytes of stack however
 * long it is). */
static btp_status hex_line(char *line, size_t k, const uint32_t *addrs, size_t n, int truncated,
                           btp_cm_sink sink, void *ctx)
{
    uint8_t buf[BTP_CM_CBF_MAX(RECORD_MAX_FRAMES)];
    size_t len;
    btp_status st = encode_cbf(addrs, n, truncated, buf, sizeof buf, &len);
    if (st != BTP_OK)
        return st;
    for (size_t i = 0; i < len; i++) {
        if (k + 2 > LINE_BYTES) {
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

btp_status btp_cm_record_cbf_line(const uint32_t *addrs, size_t n, int truncated,
                                  btp_cm_sink sink, void *ctx)
{
    char line[LINE_BYTES];
    if (bad_args(addrs, n, sink))
        return BTP_E_INVALID_ARGUMENT;
    line[0] = 'c', line[1] = 'b', line[2] = 'f', line[3] = ' ';
    return hex_line(line, 4, addrs, n, truncated, sink, ctx);
}

/* "0x" and v in hex without leading zeros at line + k; the new length. */
static size_t put_hex32(char *line, size_t k, uint32_t v)
{
    int shift = 28;
    line[k++] = '0';
    line[k++] = 'x';
    while (shift > 0 && !(v >> shift))
        shift -= 4;
    for (; shift >= 0; shift -= 4)
        line[k++] = digits[(v >> shift) & 15u];
    return k;
}

btp_status btp_cm_record_alloc_line(uint32_t size, uint32_t ptr, const uint32_t *addrs, size_t n,
                                    int truncated, btp_cm_sink sink, void *ctx)
{
    char line[LINE_BYTES];
    if (bad_args(addrs, n, sink))
        return BTP_E_INVALID_ARGUMENT;
    line[0] = 'm', line[1] = ',';
    /* The size in hex too: decimal would need a division, a libgcc call
     * on ARMv6-M (the reader takes 0x sizes as hex). */
    size_t k = put_hex32(line, 2, size);
    line[k++] = ',';
    k = put_hex32(line, k, ptr); /* at most 2 + 10 + 1 + 10 = 23 bytes so far */
    line[k++] = ',';
    return hex_line(line, k, addrs, n, truncated, sink, ctx);
}

btp_status btp_cm_record_free_line(uint32_t ptr, btp_cm_sink sink, void *ctx)
{
    char line[16];
    if (!sink)
        return BTP_E_INVALID_ARGUMENT;
    line[0] = 'f', line[1] = ',', line[2] = ',';
    size_t k = put_hex32(line, 3, ptr);
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
