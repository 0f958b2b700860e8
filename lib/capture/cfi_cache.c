/*
 * The cfi walker's cache of frame layouts: the writer's side of the
 * sequence locks and the process's table (see cfi_cache.h).
 */
#include "capture/cfi_cache.h"

/* Zero-initialised: every slot empty (key 0 is never looked up: a pc of 0
 * ends a walk before its layout is needed). In .bss, so it costs no memory
 * until slots are written. */
static btp_cfi_slot global_slots[BTP_CFI_CACHE_SLOTS];
static btp_cfi_cache global_cache = {BTP_CFI_CACHE_SLOTS - 1, global_slots};

btp_cfi_cache *btp_cfi_cache_global(void)
{
    return &global_cache;
}

/* Take the slot (sequence from even to odd), run the writes, release it. */
static int take(btp_cfi_slot *s, uint64_t *seq)
{
    uint64_t v = atomic_load_explicit(&s->seq, memory_order_relaxed);
    if (v & 1)
        return 0; /* another writer (or the code this signal interrupted) */
    if (!atomic_compare_exchange_strong_explicit(&s->seq, &v, v + 1, memory_order_relaxed,
                                                 memory_order_relaxed))
        return 0;
    /* Readers that see any of the writes below see the odd number first. */
    atomic_thread_fence(memory_order_release);
    *seq = v;
    return 1;
}

void btp_cfi_cache_put(btp_cfi_cache *c, const btp_cfi_fast *in)
{
    /* Its own old slot, else an empty one, else the one a bit of the key
     * picks. (Keys are read outside any lock: at worst a layout is stored
     * twice, or where a racing writer's goes.) */
    uint64_t key = in->w[0];
    size_t at = btp_cfi_cache_index(c->mask, key);
    uint64_t k0 = atomic_load_explicit(&c->slot[at].w[0], memory_order_relaxed);
    uint64_t k1 = atomic_load_explicit(&c->slot[at ^ 1].w[0], memory_order_relaxed);
    if (k0 != key && k0 != 0 && (k1 == key || k1 == 0 || (key >> 4 & 1)))
        at ^= 1;
    btp_cfi_slot *s = &c->slot[at];
    uint64_t seq;
    if (!take(s, &seq))
        return;
    for (unsigned i = 0; i < BTP_CFI_FAST_WORDS; i++)
        atomic_store_explicit(&s->w[i], in->w[i], memory_order_relaxed);
    atomic_store_explicit(&s->seq, seq + 2, memory_order_release);
}

void btp_cfi_cache_clear(btp_cfi_cache *c)
{
    for (size_t i = 0; i <= c->mask; i++) {
        btp_cfi_slot *s = &c->slot[i];
        uint64_t seq;
        if (!take(s, &seq))
            continue;
        atomic_store_explicit(&s->w[0], 0, memory_order_relaxed);
        atomic_store_explicit(&s->seq, seq + 2, memory_order_release);
    }
}
