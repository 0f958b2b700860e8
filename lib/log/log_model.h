/* The state both ends of a trace log keep to code records (spec/log.md
 * "Record model"): the live-allocation table frees refer to by rank, the
 * per-block freed-pointer bins allocations refer to, and the per-block
 * last size and pointer of each stack. Writer and reader run the same code so they
 * cannot drift apart. */
#ifndef BTPACK_LOG_MODEL_H
#define BTPACK_LOG_MODEL_H

#include "log_format.h"

/* One live allocation. */
typedef struct live_entry {
    uint64_t seq;  /* allocation number: increasing along the slots */
    uint64_t ptr;
    uint64_t size;
    uint32_t stack; /* stack number of the allocation */
    uint8_t alive;
    uint8_t known; /* reader: ptr is known */
} live_entry;

/* Live allocations in allocation order. Which slots are alive is a bitmap;
 * a Fenwick tree over the alive counts of LIVE_GROUP-slot groups (one cache
 * line of the bitmap each) makes rank <-> slot O(log(n / LIVE_GROUP)) in a
 * tree small enough to stay in cache, plus one cache line of popcounts.
 * Dead slots are squeezed out when the array is full; `moved` counts those
 * compactions, so a caller keeping slot numbers knows to renew them. */
#define LIVE_GROUP 512u
typedef struct live_table {
    live_entry *e;
    uint64_t *bits; /* bit i: e[i] is alive */
    int32_t *fen;   /* 1-based Fenwick tree over the groups' alive counts */
    uint32_t cap, end, count, first;
    uint32_t moved; /* compactions so far */
} live_table;

btp_status live_push(live_table *L, live_entry v);
/* Number of alive entries newer than `slot`. */
uint32_t live_rank(const live_table *L, uint32_t slot);
/* Slot of the alive entry with `rank` newer ones (rank < count). */
uint32_t live_at_rank(const live_table *L, uint32_t rank);
void live_remove(live_table *L, uint32_t slot);
/* Slot of the oldest alive entry (count > 0). */
uint32_t live_oldest(live_table *L);
void live_clear(live_table *L);
void live_free(live_table *L);

/* Freed pointers by size class, newest first; reset at every block. The
 * n entries lie in a ring from v[head] (the oldest) on: a push to a full
 * bin forgets the oldest by moving head, not by moving the other entries
 * (a full bin of 120 was a 1,904-byte memmove a free). */
typedef struct bin_entry {
    uint64_t ptr;
    uint8_t known;
} bin_entry;
#define BIN_RING 128u /* a power of two, >= LOG_BIN_DEPTH_MAX */
_Static_assert(BIN_RING >= LOG_BIN_DEPTH_MAX && (BIN_RING & (BIN_RING - 1)) == 0, "bin ring");
typedef struct bin {
    uint32_t n;
    uint32_t head;
    bin_entry v[BIN_RING];
} bin;

/* Where a size class's bin is in this block: the hash table that finds
 * bins holds only these (small, so a reader opened per block of input
 * clears little), the bins themselves fill an array in the order the
 * block makes them. */
typedef struct bin_slot {
    uint64_t cls;
    uint32_t gen; /* of another block: no bin */
    uint32_t ix;  /* in bins[] */
} bin_slot;

/* The last allocation of a stack in this block. */
typedef struct stack_memo {
    uint64_t size, ptr;
    uint32_t gen;
    uint8_t ptr_known; /* reader: ptr is known */
    uint8_t tag;       /* its tag (MODEL4 predicts the next one from it) */
} stack_memo;

typedef struct log_model {
    unsigned word_bits;
    uint32_t max_live;
    live_table live;
    bin_slot *slots;    /* 2 * LOG_BIN_CLASSES, open addressing on cls */
    bin *bins;          /* LOG_BIN_CLASSES; the first bins_used are this block's */
    uint32_t bins_used; /* classes with a bin in this block */
    uint32_t gen;       /* block generation: bins/memo entries of older gens are empty */
    stack_memo *memo;   /* by stack number */
    uint32_t memo_cap;
    uint64_t prev_ptr;
    int prev_known;
    /* MODEL3 (reset at every block): where the next new chunk would start
     * (the end of the last chunk not taken from a bin), and the rank the
     * next free is predicted to have (that of the live entry after the
     * last one freed: its rank - 1, plus the allocations since; modulo 2^64,
     * as a signed number) */
    uint64_t next_ptr;
    int next_known;
    uint64_t free_pred;
    /* MODEL3: the pointers of the last LOG_FREED_RING frees, by free
     * number (modulo the ring); frees so far, and at this block's start */
    uint64_t *freed;
    uint8_t *freed_known;
    uint64_t n_freed, freed0;
    uint64_t block_seq0; /* first allocation number of this block (each side's own count) */
} log_model;

btp_status log_model_init(log_model *m, unsigned word_bits, uint32_t max_live);
void log_model_free(log_model *m);
/* New block: empty bins and size memo, previous pointer 0. */
void log_model_block(log_model *m);

/* Bin of `cls`; with create, make one if fewer than LOG_BIN_CLASSES
 * classes have one in this block. NULL if none. */
bin *log_model_bin(log_model *m, uint64_t cls, int create);
/* Push ptr, forgetting the oldest entry when the bin holds `depth`. */
void bin_push(bin *b, uint64_t ptr, int known, unsigned depth);
/* Index (0 = newest) of ptr in b, or -1. */
int bin_find(const bin *b, uint64_t ptr);
bin_entry bin_take(bin *b, unsigned idx);

/* A FREE record's pointer, for MODEL3's freed-pointer references. */
static inline void log_model_freed(log_model *m, uint64_t ptr, int known)
{
    uint32_t at = (uint32_t)m->n_freed & (LOG_FREED_RING - 1);
    m->freed[at] = ptr;
    m->freed_known[at] = (uint8_t)known;
    m->n_freed++;
}

/* The last allocation of stack `s` in this block, or NULL. */
const stack_memo *log_model_memo(const log_model *m, uint32_t s);
btp_status log_model_memo_set(log_model *m, uint32_t s, uint64_t size, uint64_t ptr,
                              int ptr_known, unsigned tag);

#endif
