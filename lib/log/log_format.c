/* Trace log headers, buffers and the zlib and LZMA2 wrappers (spec/log.md). */
#include <stdlib.h>
#include <string.h>

#include "btp_config.h"
#include "crc32.h"
#include "log_format.h"

#if BTP_HAVE_ZLIB
#include <zlib.h>
#endif
#if BTP_HAVE_LZMA
#include <lzma.h>
#endif

const uint8_t btp_log_magic[8] = {0x89, 'B', 'T', 'P', 'L', 'O', 'G', '\n'};
const uint8_t btp_log_sync[4] = {'B', 'T', 'L', '2'};
const uint8_t btp_log_sync_v1[4] = {'B', 'T', 'L', 'B'};

/* Little-endian fields of n bytes. */
static void put_le(uint8_t *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static uint64_t get_le(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}
#define put16(p, v) put_le(p, v, 2)
#define put32(p, v) put_le(p, v, 4)
#define put64(p, v) put_le(p, v, 8)
#define get16(p) ((unsigned)get_le(p, 2))
#define get32(p) ((uint32_t)get_le(p, 4))
#define get64(p) get_le(p, 8)

void log_file_header_pack(uint8_t out[LOG_FILE_HEADER_SIZE], const log_file_header *h)
{
    memset(out, 0, LOG_FILE_HEADER_SIZE);
    memcpy(out, btp_log_magic, 8);
    out[8] = (uint8_t)h->version;
    out[9] = (uint8_t)h->word_bits;
    put16(out + 10, h->flags);
    put32(out + 12, h->max_nodes);
    put32(out + 16, h->max_live);
    put32(out + 28, btp_crc32_update(0, out, 28));
}

/* The checks a file header's parameters must pass (also when they come
 * from a version 2 block header). */
static btp_status file_params_check(const log_file_header *h)
{
    if ((h->version != 1 && h->version != LOG_VERSION) || !btp_word_bits_valid(h->word_bits) ||
        h->flags != 0 || h->max_nodes > BTP_LOG_MAX_NODES_LIMIT ||
        h->max_live > BTP_LOG_MAX_LIVE_LIMIT || h->max_live == 0)
        return BTP_E_BAD_LOG_VERSION;
    return BTP_OK;
}

btp_status log_file_header_parse(const uint8_t in[LOG_FILE_HEADER_SIZE], log_file_header *h)
{
    if (memcmp(in, btp_log_magic, 8) != 0)
        return BTP_E_BAD_MAGIC;
    if (get32(in + 28) != btp_crc32_update(0, in, 28))
        return BTP_E_CHECKSUM;
    h->version = in[8];
    h->word_bits = in[9];
    h->flags = get16(in + 10);
    h->max_nodes = get32(in + 12);
    h->max_live = get32(in + 16);
    if (file_params_check(h) != BTP_OK)
        return BTP_E_BAD_LOG_VERSION;
    for (int i = 20; i < 28; i++)
        if (in[i] != 0)
            return BTP_E_BAD_LOG_VERSION;
    return BTP_OK;
}

/* Version 2 adds the file header's parameters (word size at 6, max_nodes
 * at 64, max_live at 68, 4 reserved bytes) and moves the header CRC to 76;
 * everything else is where version 1 has it. */
void log_block_header_pack(uint8_t out[LOG_BLOCK_HEADER_SIZE], const log_block_header *h)
{
    memset(out, 0, LOG_BLOCK_HEADER_SIZE);
    memcpy(out, btp_log_sync, 4);
    out[4] = (uint8_t)h->kind;
    out[5] = (uint8_t)h->flags;
    out[6] = (uint8_t)h->file.word_bits;
    put32(out + 8, h->stored_len);
    put32(out + 12, h->raw_len);
    put32(out + 16, h->segment);
    put32(out + 20, h->records);
    put64(out + 24, h->block_index);
    put64(out + 32, h->first_record);
    put32(out + 40, h->stacks_before);
    put32(out + 44, h->stacks_added);
    put32(out + 48, h->nodes_before);
    put32(out + 52, h->nodes_added);
    put32(out + 56, h->live_before);
    put32(out + 60, h->payload_crc);
    put32(out + 64, h->file.max_nodes);
    put32(out + 68, h->file.max_live);
    put32(out + 76, btp_crc32_update(0, out, 76));
}

btp_status log_block_header_parse(const uint8_t *in, unsigned version, log_block_header *h)
{
    size_t crc_at = log_block_header_size(version) - 4;
    if (memcmp(in, version == 1 ? btp_log_sync_v1 : btp_log_sync, 4) != 0 ||
        get32(in + crc_at) != btp_crc32_update(0, in, crc_at))
        return BTP_E_CHECKSUM;
    h->version = version;
    h->kind = in[4];
    h->flags = in[5];
    h->stored_len = get32(in + 8);
    h->raw_len = get32(in + 12);
    h->segment = get32(in + 16);
    h->records = get32(in + 20);
    h->block_index = get64(in + 24);
    h->first_record = get64(in + 32);
    h->stacks_before = get32(in + 40);
    h->stacks_added = get32(in + 44);
    h->nodes_before = get32(in + 48);
    h->nodes_added = get32(in + 52);
    h->live_before = get32(in + 56);
    h->payload_crc = get32(in + 60);
    memset(&h->file, 0, sizeof h->file);
    if (h->kind < LOG_BLOCK_META || h->kind > LOG_BLOCK_END || (h->flags & ~LOG_BF_KNOWN) ||
        in[7] != 0)
        return BTP_E_BAD_LOG_VERSION;
    if ((h->flags & LOG_BF_MODEL2) && (version == 1 || h->kind != LOG_BLOCK_RECORDS))
        return BTP_E_BAD_LOG_VERSION;
    if ((h->flags & LOG_BF_LZMA) && (version == 1 || (h->flags & LOG_BF_ZLIB)))
        return BTP_E_BAD_LOG_VERSION;
    if ((h->flags & LOG_BF_MODEL3) && !(h->flags & LOG_BF_MODEL2))
        return BTP_E_BAD_LOG_VERSION;
    if ((h->flags & LOG_BF_MODEL4) && !(h->flags & LOG_BF_MODEL3))
        return BTP_E_BAD_LOG_VERSION;
    if ((h->flags & LOG_BF_M4_TAGS) && !(h->flags & LOG_BF_MODEL4))
        return BTP_E_BAD_LOG_VERSION;
    if ((h->flags & LOG_BF_ITEMS) && (version == 1 || h->kind == LOG_BLOCK_RECORDS))
        return BTP_E_BAD_LOG_VERSION;
    if (version == 1) {
        if (in[6] != 0 || get32(in + 64) != 0)
            return BTP_E_BAD_LOG_VERSION;
    } else {
        h->file = (log_file_header){version, in[6], 0, get32(in + 64), get32(in + 68)};
        if (get32(in + 72) != 0 || file_params_check(&h->file) != BTP_OK)
            return BTP_E_BAD_LOG_VERSION;
    }
    if (h->stored_len > BTP_LOG_MAX_BLOCK || h->raw_len > BTP_LOG_MAX_BLOCK ||
        (!(h->flags & LOG_BF_PACKED) && h->stored_len != h->raw_len))
        return BTP_E_CORRUPT;
    return BTP_OK;
}

int log_buf_reserve(log_buf *b, size_t extra)
{
    if (b->oom)
        return 0;
    if (b->cap - b->len >= extra)
        return 1;
    size_t cap = b->cap ? b->cap : 256;
    while (cap - b->len < extra) {
        if (cap > SIZE_MAX / 2) {
            b->oom = 1;
            return 0;
        }
        cap *= 2;
    }
    uint8_t *p = realloc(b->p, cap);
    if (!p) {
        b->oom = 1;
        return 0;
    }
    b->p = p;
    b->cap = cap;
    return 1;
}

void log_buf_put(log_buf *b, const void *data, size_t len)
{
    if (len && log_buf_reserve(b, len)) {
        memcpy(b->p + b->len, data, len);
        b->len += len;
    }
}

void log_buf_free(log_buf *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}

int btp_log_probe(const void *buf, size_t len)
{
    return buf && len >= sizeof btp_log_magic && memcmp(buf, btp_log_magic, sizeof btp_log_magic) == 0;
}

int btp_log_have_zlib(void)
{
    return BTP_HAVE_ZLIB;
}

int btp_log_have_lzma(void)
{
    return BTP_HAVE_LZMA;
}

btp_status log_deflate(const uint8_t *in, size_t len, int level, log_buf *out)
{
#if BTP_HAVE_ZLIB
    uLongf cap = compressBound((uLong)len);
    out->len = 0;
    if (!log_buf_reserve(out, cap))
        return BTP_E_OUT_OF_MEMORY;
    if (compress2(out->p, &cap, in, (uLong)len, level) != Z_OK)
        return BTP_E_ZLIB;
    out->len = cap;
    return BTP_OK;
#else
    (void)in, (void)len, (void)level, (void)out;
    return BTP_E_UNSUPPORTED;
#endif
}

btp_status log_inflate(const uint8_t *in, size_t len, uint8_t *out, size_t raw_len)
{
#if BTP_HAVE_ZLIB
    uLongf got = raw_len;
    uLong used = len;
    /* uncompress2 reports a stream that does not fill out exactly, and
     * one with bytes left over, as errors: both mean corruption. */
    int rc = uncompress2(out, &got, in, &used);
    if (rc != Z_OK || got != raw_len || used != len)
        return rc == Z_MEM_ERROR ? BTP_E_OUT_OF_MEMORY : BTP_E_ZLIB;
    return BTP_OK;
#else
    (void)in, (void)len, (void)out, (void)raw_len;
    return BTP_E_NO_ZLIB;
#endif
}

#if BTP_HAVE_LZMA
/* The LZMA2 filter for a block of len bytes. Preset `level` (xz's -N), with
 * one literal context bit and no position bits: the payload's sections are
 * byte streams without 2- or 4-byte structure (0.5-1 % smaller than xz's
 * lc=3, pb=2 on heap and trace logs). The dictionary is never larger than
 * the block, as no match can reach further back: the decoder's memory is
 * then bounded by the block size too. */
static uint32_t lzma2_dict(size_t len)
{
    return len < LZMA_DICT_SIZE_MIN ? LZMA_DICT_SIZE_MIN : (uint32_t)len;
}

static int lzma2_filter(lzma_options_lzma *o, lzma_filter f[2], int level, size_t len)
{
    if (lzma_lzma_preset(o, (uint32_t)level))
        return 0;
    o->lc = 1;
    o->lp = 0;
    o->pb = 0;
    if (o->dict_size > lzma2_dict(len))
        o->dict_size = lzma2_dict(len);
    f[0] = (lzma_filter){LZMA_FILTER_LZMA2, o};
    f[1] = (lzma_filter){LZMA_VLI_UNKNOWN, NULL};
    return 1;
}
#endif

btp_status log_lzma_pack(const uint8_t *in, size_t len, int level, log_buf *out)
{
#if BTP_HAVE_LZMA
    lzma_options_lzma o;
    lzma_filter f[2];
    out->len = 0;
    if (level < 1 || level > 9 || !lzma2_filter(&o, f, level, len))
        return BTP_E_INVALID_ARGUMENT;
    /* An output buffer of the input's size: a stream that does not fit is
     * not worth storing (LZMA_BUF_ERROR), and the block goes out raw. */
    if (!log_buf_reserve(out, len))
        return BTP_E_OUT_OF_MEMORY;
    size_t pos = 0;
    lzma_ret rc = lzma_raw_buffer_encode(f, NULL, in, len, out->p, &pos, len);
    if (rc == LZMA_BUF_ERROR)
        return BTP_OK;
    if (rc != LZMA_OK)
        return rc == LZMA_MEM_ERROR ? BTP_E_OUT_OF_MEMORY : BTP_E_LZMA;
    out->len = pos;
    return BTP_OK;
#else
    (void)in, (void)len, (void)level, (void)out;
    return BTP_E_UNSUPPORTED;
#endif
}

btp_status log_lzma_unpack(const uint8_t *in, size_t len, uint8_t *out, size_t raw_len)
{
#if BTP_HAVE_LZMA
    lzma_options_lzma o;
    lzma_filter f[2];
    /* Only the dictionary size matters to an LZMA2 decoder (the stream
     * carries lc/lp/pb); one of the block's size holds every match. */
    if (!lzma2_filter(&o, f, 1, raw_len))
        return BTP_E_LZMA;
    o.dict_size = lzma2_dict(raw_len); /* above preset 1's when the block is larger */
    size_t in_pos = 0, out_pos = 0;
    lzma_ret rc = lzma_raw_buffer_decode(f, NULL, in, &in_pos, len, out, &out_pos, raw_len);
    /* A stream that stops short of raw_len, needs more room, or leaves
     * bytes over is damage, like a bad stream. */
    if (rc != LZMA_OK || in_pos != len || out_pos != raw_len)
        return rc == LZMA_MEM_ERROR ? BTP_E_OUT_OF_MEMORY : BTP_E_LZMA;
    return BTP_OK;
#else
    (void)in, (void)len, (void)out, (void)raw_len;
    return BTP_E_NO_LZMA;
#endif
}
