/* btp_cm_record_*: a captured chain as CBF or `~m#`, and the heap records
 * (an allocation with its chain, a free), through a byte sink. */
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

/* Text written through a sink in pieces of up to 64 bytes: a record line
 * costs 64 bytes of stack however long it is. The first failed write ends
 * it (later puts do nothing). */
typedef struct line_out {
    btp_cm_sink sink;
    void *ctx;
    btp_status st;
    size_t k;
    char b[64];
} line_out;

static void lo_char(line_out *o, char c)
{
    if (o->k == sizeof o->b) {
        if (o->st == BTP_OK)
            o->st = put(o->sink, o->ctx, o->b, o->k);
        o->k = 0;
    }
    o->b[o->k++] = c;
}

static void lo_str(line_out *o, const char *s)
{
    while (*s)
        lo_char(o, *s++);
}

static const char digits[] = "0123456789abcdef";

/* "0x" and v in hex, without leading zeros. */
static void lo_hex32(line_out *o, uint32_t v)
{
    int shift = 28;
    lo_str(o, "0x");
    while (shift > 0 && !(v >> shift))
        shift -= 4;
    for (; shift >= 0; shift -= 4)
        lo_char(o, digits[(v >> shift) & 15u]);
}

static void lo_dec32(line_out *o, uint32_t v)
{
    char d[10];
    int k = 0;
    do
        d[k++] = (char)('0' + v % 10u);
    while ((v /= 10u) != 0);
    while (k)
        lo_char(o, d[--k]);
}

/* The chain as CBF in hex digits, then the newline; flushes the line. */
static btp_status lo_cbf_end(line_out *o, const uint32_t *addrs, size_t n, int truncated)
{
    uint8_t buf[BTP_CM_CBF_MAX(RECORD_MAX_FRAMES)];
    size_t len;
    btp_status st = encode_cbf(addrs, n, truncated, buf, sizeof buf, &len);
    if (st != BTP_OK)
        return st;
    for (size_t i = 0; i < len; i++) {
        lo_char(o, digits[buf[i] >> 4]);
        lo_char(o, digits[buf[i] & 15u]);
    }
    lo_char(o, '\n');
    if (o->st == BTP_OK)
        o->st = put(o->sink, o->ctx, o->b, o->k);
    return o->st;
}

btp_status btp_cm_record_cbf_line(const uint32_t *addrs, size_t n, int truncated,
                                  btp_cm_sink sink, void *ctx)
{
    if (bad_args(addrs, n, sink))
        return BTP_E_INVALID_ARGUMENT;
    line_out o = {sink, ctx, BTP_OK, 0, {0}};
    lo_str(&o, "cbf ");
    return lo_cbf_end(&o, addrs, n, truncated);
}

btp_status btp_cm_record_alloc_line(uint32_t size, uint32_t ptr, const uint32_t *addrs, size_t n,
                                    int truncated, btp_cm_sink sink, void *ctx)
{
    if (bad_args(addrs, n, sink))
        return BTP_E_INVALID_ARGUMENT;
    line_out o = {sink, ctx, BTP_OK, 0, {0}};
    lo_str(&o, "m,");
    lo_dec32(&o, size);
    lo_char(&o, ',');
    lo_hex32(&o, ptr);
    lo_char(&o, ',');
    return lo_cbf_end(&o, addrs, n, truncated);
}

btp_status btp_cm_record_free_line(uint32_t ptr, btp_cm_sink sink, void *ctx)
{
    if (!sink)
        return BTP_E_INVALID_ARGUMENT;
    line_out o = {sink, ctx, BTP_OK, 0, {0}};
    lo_str(&o, "f,,");
    lo_hex32(&o, ptr);
    lo_char(&o, '\n');
    return put(sink, ctx, o.b, o.k);
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
