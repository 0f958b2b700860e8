/*
 * The cfi walker's cache of frame layouts: for a pc, the rule its image's
 * unwind tables give (where the canonical frame address is and where the
 * caller's registers were saved), so that a pc seen before is unwound
 * without finding its FDE or running its call frame program again.
 *
 * One table for the process, shared by all threads, lock-free: each slot
 * is a sequence lock. A reader copies the slot between two reads of its
 * sequence number and uses the copy only if the number was even and did
 * not change; a writer takes the slot by moving the number from even to
 * odd with a compare-and-swap (a writer that loses, or finds it odd, gives
 * up: the cache only ever misses), writes, and makes it even again. So:
 *  - any number of threads read and write at once, with no lock and no
 *    waiting;
 *  - a signal handler that interrupts a writer on its own thread finds the
 *    slot odd: it misses (and does not write it), and the walk takes the
 *    slow path. The cache is async-signal-safe;
 *  - a fork while another thread writes leaves that one slot odd in the
 *    child: it is never used there (one slot of BTP_CFI_CACHE_SLOTS);
 *  - an entry is tied to the image it was computed from by a tag (see
 *    cfi.c: the image's range, unwind table, loader record and samples of
 *    the table); an entry is used only when the image holding the pc now
 *    has the same tag, so after dlclose an entry for the unloaded image is
 *    never used again, even if another image is loaded at the same
 *    address. The unwind tables of a loaded image are assumed not to
 *    change (they are read-only data of the file).
 * Slots are direct-mapped by a hash of the pc; a new layout replaces what
 * was in its slot.
 */
#ifndef BTPACK_CAPTURE_CFI_CACHE_H
#define BTPACK_CAPTURE_CFI_CACHE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* A packed frame layout; w[0] is the key (the pc looked up), the rest is
 * cfi.c's business. */
#define BTP_CFI_FAST_WORDS 7
typedef struct btp_cfi_fast {
    uint64_t w[BTP_CFI_FAST_WORDS];
} btp_cfi_fast;

typedef struct btp_cfi_slot {
    _Alignas(64) _Atomic uint64_t seq; /* odd while being written */
    _Atomic uint64_t w[BTP_CFI_FAST_WORDS];
} btp_cfi_slot;

typedef struct btp_cfi_cache {
    size_t mask; /* slots - 1 (a power of two) */
    btp_cfi_slot *slot;
} btp_cfi_cache;

/* Slots of the process's cache (64 bytes each: 1 MiB, zero pages until
 * used). */
#define BTP_CFI_CACHE_SLOTS 16384

/* The process's cache. */
btp_cfi_cache *btp_cfi_cache_global(void);

static inline size_t btp_cfi_cache_index(const btp_cfi_cache *c, uint64_t key)
{
    /* Return addresses differ in their low bits; folding in higher ones
     * spreads code that lies a multiple of the table's span apart. */
    return (size_t)(key ^ (key >> 14) ^ (key >> 28)) & c->mask;
}

/* Copy the entry for `key` into *out: 1 if there is one (complete and
 * consistent), 0 otherwise. */
static inline int btp_cfi_cache_get(const btp_cfi_cache *c, uint64_t key, btp_cfi_fast *out)
{
    btp_cfi_slot *s = &c->slot[btp_cfi_cache_index(c, key)];
    uint64_t seq = atomic_load_explicit(&s->seq, memory_order_acquire);
    if (seq & 1 || atomic_load_explicit(&s->w[0], memory_order_relaxed) != key)
        return 0;
    out->w[0] = key;
    out->w[1] = atomic_load_explicit(&s->w[1], memory_order_relaxed);
    out->w[2] = atomic_load_explicit(&s->w[2], memory_order_relaxed);
    out->w[3] = atomic_load_explicit(&s->w[3], memory_order_relaxed);
    out->w[4] = atomic_load_explicit(&s->w[4], memory_order_relaxed);
    out->w[5] = atomic_load_explicit(&s->w[5], memory_order_relaxed);
    out->w[6] = atomic_load_explicit(&s->w[6], memory_order_relaxed);
    atomic_thread_fence(memory_order_acquire);
    return atomic_load_explicit(&s->seq, memory_order_relaxed) == seq;
}

/* Store *in (key in->w[0]) unless its slot is being written. */
void btp_cfi_cache_put(btp_cfi_cache *c, const btp_cfi_fast *in);

/* Forget everything (for tests: the slots are emptied one by one, each
 * under its sequence lock). */
void btp_cfi_cache_clear(btp_cfi_cache *c);

#endif
