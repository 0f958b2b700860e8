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
 * Slots come in pairs (two-way sets) chosen by a hash of the pc: a layout
 * may sit in either slot of its pair; a new one takes an empty slot or its
 * own old one, else replaces the slot of the pair a bit of the pc chooses.
 * (Direct-mapped, gcc's cc1 missed on 23% of its walks; two-way, on 2.4%.)
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
    size_t mask; /* slots - 1 (a power of two, at least 2 slots) */
    btp_cfi_slot *slot;
} btp_cfi_cache;

/* Slots of the process's cache (64 bytes each: 1 MiB, zero pages until
 * used). */
#define BTP_CFI_CACHE_SLOTS 16384

/* The process's cache. */
btp_cfi_cache *btp_cfi_cache_global(void);

/* The first slot of the pair `key` may sit in (the other is index ^ 1).
 * Return addresses differ in their low bits; folding in higher ones spreads
 * code that lies a multiple of the table's span apart. */
static inline size_t btp_cfi_cache_index(size_t mask, uint64_t key)
{
    return (size_t)(key ^ (key >> 14) ^ (key >> 28)) & mask;
}

/* The slot of the pair that holds `key` now, or the first one (the caller
 * still checks the key under the slot's sequence lock). */
static inline btp_cfi_slot *btp_cfi_cache_slot(btp_cfi_slot *slots, size_t mask, uint64_t key)
{
    size_t i = btp_cfi_cache_index(mask, key);
    if (atomic_load_explicit(&slots[i].w[0], memory_order_relaxed) != key)
        i ^= 1;
    return &slots[i];
}

/* Store *in (key in->w[0]) unless its slot is being written. */
void btp_cfi_cache_put(btp_cfi_cache *c, const btp_cfi_fast *in);

/* Forget everything (for tests: the slots are emptied one by one, each
 * under its sequence lock). */
void btp_cfi_cache_clear(btp_cfi_cache *c);

#endif
