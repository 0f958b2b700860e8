/*
 * Allocation metadata, the freestanding part (include/btpack/heap.h): the
 * header in front of each allocation, the live list, walks and text dumps.
 * No libc beyond memcpy/memset, no allocation, no OS: this file runs inside
 * malloc and on microcontrollers. Nothing recurses; the largest frame is the
 * lws dump's (decoded frames + blob + line, about 1 KiB).
 */
#include <btpack/btpack.h>

#include "common/reserved.h"

#include <string.h>

#define HDR_SIZE sizeof(btp_heap_hdr)

static int pow2(size_t v)
{
    return v && !(v & (v - 1));
}

static uint32_t magic_of(const btp_heap_hdr *hd)
{
    return BTP_HEAP_MAGIC ^ (uint32_t)(uintptr_t)hd;
}

static uint8_t *slot_of(btp_heap_hdr *hd)
{
    return (uint8_t *)hd + HDR_SIZE;
}

static void lock(btp_heap *h)
{
    if (h->lock)
        h->lock(h->lock_ctx);
}

static void unlock(btp_heap *h)
{
    if (h->unlock)
        h->unlock(h->lock_ctx);
}

btp_status btp_heap_init(btp_heap *h, const btp_heap_config *cfg)
{
    static const btp_heap_config defaults;
    if (!h)
        return BTP_E_INVALID_ARGUMENT;
    if (!cfg)
        cfg = &defaults;
    if (!btp_reserved_clear(cfg->reserved))
        return BTP_E_UNSUPPORTED;
    unsigned wb = cfg->word_bits ? cfg->word_bits : (unsigned)(sizeof(void *) * 8);
    size_t slot = cfg->slot_bytes ? cfg->slot_bytes : BTP_HEAP_SLOT_DEFAULT;
    size_t align = cfg->align ? cfg->align : 2 * sizeof(void *);
    if (cfg->codec == BTP_HEAP_CBF) {
        if (!btp_word_bits_valid(wb) || slot < 2)
            return BTP_E_INVALID_ARGUMENT;
    } else if (cfg->codec == BTP_HEAP_LWS) {
        if ((wb != 32 && wb != 64) || slot < 8)
            return BTP_E_INVALID_ARGUMENT;
    } else {
        return BTP_E_INVALID_ARGUMENT;
    }
    if (slot > BTP_HEAP_SLOT_MAX || !pow2(align) || align > 4096 ||
        (!cfg->lock != !cfg->unlock))
        return BTP_E_INVALID_ARGUMENT;
    memset(h, 0, sizeof *h);
    h->head.prev = h->head.next = &h->head;
    h->slot_bytes = slot;
    h->word_bits = wb;
    h->codec = cfg->codec;
    h->overhead = (HDR_SIZE + slot + align - 1) & ~(align - 1);
    h->lock = cfg->lock;
    h->unlock = cfg->unlock;
    h->lock_ctx = cfg->lock_ctx;
    return BTP_OK;
}

size_t btp_heap_overhead(const btp_heap *h)
{
    return h ? h->overhead : 0;
}

/* Frames up to the first one the word size cannot hold (values are reduced
 * to the word by the codecs otherwise, which would store a wrong address). */
static size_t usable_frames(const btp_frame *frames, size_t n, unsigned wb)
{
    uint64_t mask = btp_word_mask(wb);
    for (size_t i = 0; i < n; i++)
        if (frames[i].value > mask || frames[i].kind > BTP_FRAME_OMIT ||
            (frames[i].kind == BTP_FRAME_OMIT && frames[i].value == 0))
            return i;
    return n;
}

/* Encode into the slot; returns the flags. */
static uint8_t encode_slot(const btp_heap *h, btp_heap_hdr *hd, size_t size,
                           const btp_frame *frames, size_t n)
{
    size_t keep = usable_frames(frames, n, h->word_bits), len = 0;
    uint8_t flags = keep < n ? BTP_HEAP_F_TRUNCATED : 0;
    uint8_t *slot = slot_of(hd);
    if (h->codec == BTP_HEAP_CBF) {
        btp_status st = btp_cbf_encode(frames, keep, keep < n, h->word_bits,
                                       BTP_CBF_ENC_TRUNCATE_ON_FULL, slot, h->slot_bytes, &len,
                                       NULL);
        if (st == BTP_E_BUFFER_TOO_SMALL)
            flags |= BTP_HEAP_F_TRUNCATED;
        else if (st != BTP_OK)
            len = 0;
    } else {
        for (size_t i = 0; i < keep; i++)
            if (frames[i].kind == BTP_FRAME_OMIT) {
                keep = i;
                break;
            }
        if (keep > BTP_LWS_MAX_FRAMES)
            keep = BTP_LWS_MAX_FRAMES;
        if (keep < n)
            flags |= BTP_HEAP_F_TRUNCATED;
        /* Drop outer frames until the blob fits (at most 32 tries of O(31)). */
        for (;;) {
            btp_status st = btp_lws_encode(frames, keep, size, h->word_bits,
                                           BTP_LWS_ENC_ANY_ADDRESS, slot, h->slot_bytes, &len,
                                           NULL);
            if (st == BTP_OK)
                break;
            len = 0;
            if (st != BTP_E_BUFFER_TOO_SMALL || keep == 0)
                break; /* a size wider than the word: keep no blob */
            keep--;
            flags |= BTP_HEAP_F_TRUNCATED;
        }
    }
    hd->bt_len = (uint16_t)len;
    return flags;
}

static void link_in(btp_heap *h, btp_heap_hdr *hd, size_t size)
{
    lock(h);
    hd->link.prev = h->head.prev;
    hd->link.next = &h->head;
    h->head.prev->next = &hd->link;
    h->head.prev = &hd->link;
    h->count++;
    h->bytes += size;
    h->total_allocs++;
    if (h->bytes > h->peak_bytes)
        h->peak_bytes = h->bytes;
    unlock(h);
}

btp_status btp_heap_attach(btp_heap *h, void *raw, size_t size, const btp_frame *frames,
                           size_t n, void **user)
{
    if (!h || !raw || !user || (!frames && n))
        return BTP_E_INVALID_ARGUMENT;
    btp_heap_hdr *hd = raw;
    hd->size = size;
    hd->codec = (uint8_t)h->codec;
    hd->flags = encode_slot(h, hd, size, frames, n);
    hd->magic = magic_of(hd);
    link_in(h, hd, size);
    *user = (uint8_t *)raw + h->overhead;
    return BTP_OK;
}

btp_status btp_heap_detach(btp_heap *h, void *user, void **raw, size_t *size)
{
    if (!h || !user || !raw)
        return BTP_E_INVALID_ARGUMENT;
    *raw = NULL;
    if ((uintptr_t)user < h->overhead)
        return BTP_E_HEAP_FOREIGN;
    btp_heap_hdr *hd = (btp_heap_hdr *)((uint8_t *)user - h->overhead);
    btp_status st = BTP_OK;
    lock(h);
    if (hd->magic != magic_of(hd)) {
        st = BTP_E_HEAP_FOREIGN;
    } else if (!hd->link.prev || !hd->link.next || hd->link.prev->next != &hd->link ||
               hd->link.next->prev != &hd->link || h->count == 0) {
        st = BTP_E_HEAP_CORRUPT;
    } else {
        hd->link.prev->next = hd->link.next;
        hd->link.next->prev = hd->link.prev;
        hd->link.prev = hd->link.next = NULL;
        /* Detached but kept recognisable for btp_heap_reattach(); a second
         * detach sees the cleared links and the flipped magic. */
        hd->magic = ~magic_of(hd);
        h->count--;
        h->bytes -= hd->size;
    }
    unlock(h);
    if (st == BTP_OK) {
        *raw = hd;
        if (size)
            *size = hd->size;
    }
    return st;
}

btp_status btp_heap_reattach(btp_heap *h, void *new_raw, size_t size, void **user)
{
    if (!h || !new_raw || !user)
        return BTP_E_INVALID_ARGUMENT;
    btp_heap_hdr *hd = new_raw;
    /* The header was copied by realloc: its magic is the detached magic of
     * its old address, which we cannot check here; check the rest. */
    if (hd->link.prev || hd->link.next || hd->codec != (uint8_t)h->codec ||
        hd->bt_len > h->slot_bytes)
        return BTP_E_HEAP_FOREIGN;
    hd->size = size;
    hd->magic = magic_of(hd);
    link_in(h, hd, size);
    *user = (uint8_t *)new_raw + h->overhead;
    return BTP_OK;
}

static void view(const btp_heap *h, btp_heap_hdr *hd, btp_heap_alloc *a)
{
    a->ptr = (uint8_t *)hd + h->overhead;
    a->size = hd->size;
    a->bt = slot_of(hd);
    a->bt_len = hd->bt_len <= h->slot_bytes ? hd->bt_len : h->slot_bytes;
    a->codec = (btp_heap_codec)hd->codec;
    a->word_bits = h->word_bits;
    a->truncated = (hd->flags & BTP_HEAP_F_TRUNCATED) != 0;
}

btp_status btp_heap_walk(btp_heap *h, btp_heap_walk_fn fn, void *ctx)
{
    if (!h || !fn)
        return BTP_E_INVALID_ARGUMENT;
    btp_status st = BTP_OK;
    size_t seen = 0;
    lock(h);
    /* At most `count` nodes: a damaged list cannot make the walk loop. */
    for (btp_heap_link *l = h->head.next; l != &h->head; l = l->next) {
        btp_heap_hdr *hd = (btp_heap_hdr *)l;
        if (!l || seen++ >= h->count || hd->magic != magic_of(hd) || !l->next) {
            st = BTP_E_HEAP_CORRUPT;
            break;
        }
        btp_heap_alloc a;
        view(h, hd, &a);
        if (fn(ctx, &a)) {
            st = BTP_END;
            break;
        }
    }
    if (st == BTP_OK && seen != h->count)
        st = BTP_E_HEAP_CORRUPT;
    unlock(h);
    return st;
}

btp_status btp_heap_frames(const btp_heap_alloc *a, btp_frame *out, size_t cap, size_t *n)
{
    if (!a || !n || (!out && cap))
        return BTP_E_INVALID_ARGUMENT;
    *n = 0;
    if (a->bt_len == 0)
        return BTP_OK;
    if (a->codec == BTP_HEAP_LWS) {
        btp_lws_info info;
        btp_status st = btp_lws_decode(a->bt, a->bt_len, a->word_bits, out, cap, &info);
        if (st == BTP_OK || st == BTP_E_LIMIT)
            *n = info.depth < cap ? info.depth : cap;
        return st;
    }
    btp_cbf_info info;
    btp_status st = btp_cbf_decode(a->bt, a->bt_len, 0, out, cap, &info);
    *n = info.frames;
    return st;
}

/* ---- text dumps ---------------------------------------------------------- */

typedef struct dump {
    btp_heap_emit_fn emit;
    void *ctx;
    btp_status first_error;
    int stopped;
} dump;

static int put(dump *d, const char *s, size_t n)
{
    if (!d->stopped && d->emit(d->ctx, s, n))
        d->stopped = 1;
    return d->stopped;
}

static int put_str(dump *d, const char *s)
{
    size_t n = 0;
    while (s[n])
        n++;
    return put(d, s, n);
}

/* Decimal or 0x-hex of v into buf (>= 21 bytes); returns the length. */
static size_t fmt_u64(char *buf, uint64_t v, int hex)
{
    char tmp[20];
    size_t n = 0, k = 0;
    unsigned base = hex ? 16 : 10;
    do {
        tmp[n++] = "0123456789abcdef"[v % base];
        v /= base;
    } while (v);
    if (hex) {
        buf[k++] = '0';
        buf[k++] = 'x';
    }
    while (n)
        buf[k++] = tmp[--n];
    return k;
}

static int put_u64(dump *d, uint64_t v, int hex)
{
    char buf[24];
    return put(d, buf, fmt_u64(buf, v, hex));
}

static void note_error(dump *d, btp_status st)
{
    if (st != BTP_OK && d->first_error == BTP_OK)
        d->first_error = st;
}

static int lws_line(void *ctx, const btp_heap_alloc *a)
{
    dump *d = ctx;
    uint8_t blob[BTP_LWS_BLOB_MAX];
    const uint8_t *b = a->bt;
    size_t blen = a->bt_len;
    if (a->codec != BTP_HEAP_LWS) {
        btp_frame frames[BTP_LWS_MAX_FRAMES];
        size_t n = 0;
        btp_status st = btp_heap_frames(a, frames, BTP_LWS_MAX_FRAMES, &n);
        if (st != BTP_OK && st != BTP_E_LIMIT)
            note_error(d, st), n = 0;
        /* lws holds return addresses only: stop at an omit */
        for (size_t i = 0; i < n; i++)
            if (frames[i].kind == BTP_FRAME_OMIT)
                n = i;
        unsigned wb = a->word_bits == 16 ? 32 : a->word_bits;
        st = btp_lws_encode(frames, n, a->size, wb, BTP_LWS_ENC_ANY_ADDRESS, blob, sizeof blob,
                            &blen, NULL);
        if (st != BTP_OK) {
            note_error(d, st);
            st = btp_lws_encode(NULL, 0, 0, wb, 0, blob, sizeof blob, &blen, NULL);
            if (st != BTP_OK)
                return put_str(d, "~m#\n");
        }
        b = blob;
    } else if (blen == 0) {
        /* The slot could not hold even an empty blob's size: write one. */
        btp_status st = btp_lws_encode(NULL, 0, 0, a->word_bits, 0, blob, sizeof blob, &blen, NULL);
        note_error(d, st);
        b = blob;
    }
    char line[BTP_LWS_M_LINE_MAX + 1];
    size_t len = 0;
    btp_status st = btp_lws_m_format(b, blen, line, sizeof line - 1, &len);
    if (st != BTP_OK) {
        note_error(d, st);
        len = 0;
    }
    line[len++] = '\n';
    return put(d, line, len);
}

static int json_frame(dump *d, btp_frame f, int first)
{
    static const char *const kinds[] = {"pc", "ra", "async"};
    if (put_str(d, first ? "{\"type\":\"" : ",{\"type\":\""))
        return 1;
    if (f.kind == BTP_FRAME_OMIT)
        return put_str(d, "omit\",\"count\":") || put_u64(d, f.value, 0) || put_str(d, "}");
    return put_str(d, kinds[f.kind]) || put_str(d, "\",\"addr\":\"") || put_u64(d, f.value, 1) ||
           put_str(d, "\"}");
}

static int json_line(void *ctx, const btp_heap_alloc *a)
{
    dump *d = ctx;
    int truncated = a->truncated;
    if (put_str(d, "{\"word_bits\":") || put_u64(d, a->word_bits, 0) ||
        put_str(d, ",\"alloc_size\":") || put_u64(d, a->size, 0) || put_str(d, ",\"ptr\":\"") ||
        put_u64(d, (uintptr_t)a->ptr, 1) || put_str(d, "\",\"frames\":["))
        return 1;
    size_t k = 0;
    if (a->codec == BTP_HEAP_LWS) {
        btp_frame frames[BTP_LWS_MAX_FRAMES];
        size_t n = 0;
        btp_status st = btp_heap_frames(a, frames, BTP_LWS_MAX_FRAMES, &n);
        if (st != BTP_OK)
            note_error(d, st), n = 0;
        for (; k < n; k++)
            if (json_frame(d, frames[k], k == 0))
                return 1;
    } else if (a->bt_len) {
        /* Stream the CBF runs: no frame array on the stack. */
        btp_cbf_decoder dec;
        btp_cbf_run run;
        btp_status st = btp_cbf_decoder_init(&dec, a->bt, a->bt_len, 0);
        while (st == BTP_OK && (st = btp_cbf_decoder_next(&dec, &run)) == BTP_OK)
            for (uint64_t c = 0; c < run.count && c < BTP_HEAP_SLOT_MAX * 8; c++, k++)
                if (json_frame(d, run.frame, k == 0))
                    return 1;
        if (st != BTP_END)
            note_error(d, st);
        else if (btp_cbf_decoder_terminator(&dec) == BTP_CBF_TERM_TRUNC)
            truncated = 1;
    }
    return put_str(d, truncated ? "],\"truncated\":true}\n" : "],\"truncated\":false}\n");
}

static btp_status run_dump(btp_heap *h, btp_heap_walk_fn fn, btp_heap_emit_fn emit, void *ctx)
{
    if (!h || !emit)
        return BTP_E_INVALID_ARGUMENT;
    dump d = {emit, ctx, BTP_OK, 0};
    btp_status st = btp_heap_walk(h, fn, &d);
    if (st != BTP_OK)
        return st;
    return d.first_error;
}

btp_status btp_heap_dump_lws(btp_heap *h, btp_heap_emit_fn emit, void *ctx)
{
    return run_dump(h, lws_line, emit, ctx);
}

btp_status btp_heap_dump_json(btp_heap *h, btp_heap_emit_fn emit, void *ctx)
{
    return run_dump(h, json_line, emit, ctx);
}
