/* Shared record model of the trace log writer and reader (log_model.h). */
#include <stdlib.h>
#include <string.h>

#include "log_model.h"
#include "table_alloc.h"

/* Set bits of x. __builtin_popcountll is a libgcc call where the target
 * has no popcount instruction (x86-64's baseline): this is inline. */
static uint32_t popcount64(uint64_t x)
{
#if defined(__POPCNT__) || !defined(__x86_64__)
    return (uint32_t)__builtin_popcountll(x);
#else
    x -= (x >> 1) & 0x5555555555555555ull;
    x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
    x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0full;
    return (uint32_t)((x * 0x0101010101010101ull) >> 56);
#endif
}

static uint32_t live_groups(const live_table *L)
{
    return L->cap / LIVE_GROUP;
}

static void fen_add(live_table *L, uint32_t slot, int32_t d)
{
    uint32_t n = live_groups(L);
    for (uint32_t i = slot / LIVE_GROUP + 1; i <= n; i += i & (0u - i))
        L->fen[i] += d;
}

static uint32_t fen_prefix(const live_table *L, uint32_t g) /* alive in groups [0, g) */
{
    int64_t s = 0;
    for (uint32_t i = g; i > 0; i -= i & (0u - i))
        s += L->fen[i];
    return (uint32_t)s;
}

/* Bits, groups and tree from e[first..end) (dead slots before first are
 * not alive). */
static void live_index(live_table *L)
{
    uint32_t n = live_groups(L);
    memset(L->bits, 0, (size_t)L->cap / 64 * sizeof *L->bits);
    memset(L->fen, 0, ((size_t)n + 1) * sizeof *L->fen);
    for (uint32_t i = L->first; i < L->end; i++) {
        if (L->e[i].alive) {
            L->bits[i / 64] |= 1ull << (i % 64);
            L->fen[i / LIVE_GROUP + 1]++;
        }
    }
    for (uint32_t i = 1; i <= n; i++) {
        uint32_t j = i + (i & (0u - i));
        if (j <= n)
            L->fen[j] += L->fen[i];
    }
}

/* Squeeze out dead slots; grow when more than half is alive. */
static btp_status live_compact(live_table *L)
{
    uint32_t n = 0;
    for (uint32_t i = L->first; i < L->end; i++)
        if (L->e[i].alive)
            L->e[n++] = L->e[i];
    L->end = n;
    L->first = 0;
    L->moved++;
    if (L->cap == 0 || n > L->cap / 2) {
        uint32_t cap = L->cap ? L->cap * 2 : 1024;
        live_entry *e = cap > L->cap ? realloc(L->e, (size_t)cap * sizeof *e) : NULL;
        if (e)
            L->e = e;
        uint64_t *b = e ? realloc(L->bits, (size_t)cap / 64 * sizeof *b) : NULL;
        if (b)
            L->bits = b;
        int32_t *f = b ? realloc(L->fen, ((size_t)cap / LIVE_GROUP + 1) * sizeof *f) : NULL;
        if (f) {
            L->fen = f;
            L->cap = cap;
        }
        if (!f) { /* the table stays as it was, compacted */
            if (L->cap)
                live_index(L);
            return BTP_E_OUT_OF_MEMORY;
        }
    }
    live_index(L);
    return BTP_OK;
}

btp_status live_push(live_table *L, live_entry v)
{
    if (L->end == L->cap) {
        btp_status st = live_compact(L);
        if (st)
            return st;
    }
    v.alive = 1;
    L->e[L->end] = v;
    L->bits[L->end / 64] |= 1ull << (L->end % 64);
    fen_add(L, L->end, 1);
    L->end++;
    L->count++;
    return BTP_OK;
}

/* Bits of word w at positions above slot % 64 (slot in word w). */
static uint64_t bits_above(uint64_t w, uint32_t slot)
{
    return w & ~((2ull << (slot % 64)) - 1);
}

uint32_t live_rank(const live_table *L, uint32_t slot)
{
    uint32_t w = slot / 64, last = L->end ? (L->end - 1) / 64 : 0;
    /* Frees mostly hit recent allocations: count the alive slots after
     * this one directly when they are within a group's worth of words
     * (the bitmap past `end` is clear). */
    if (last - w < LIVE_GROUP / 64) {
        uint32_t r = popcount64(bits_above(L->bits[w], slot));
        while (w < last)
            r += popcount64(L->bits[++w]);
        return r;
    }
    /* alive in [0, slot]: whole groups, whole words of its group, its word */
    uint32_t g = slot / LIVE_GROUP, upto = fen_prefix(L, g);
    for (uint32_t i = g * (LIVE_GROUP / 64); i < w; i++)
        upto += popcount64(L->bits[i]);
    upto += popcount64(L->bits[w] & ~bits_above(~0ull, slot));
    return L->count - upto;
}

/* Position of the k-th (1-based) set bit of x (k <= popcount(x)). */
static uint32_t select_bit(uint64_t x, uint32_t k)
{
    while (--k)
        x &= x - 1;
    return (uint32_t)__builtin_ctzll(x);
}

uint32_t live_at_rank(const live_table *L, uint32_t rank)
{
    /* Frees mostly take recent allocations: look in the bitmap's last two
     * words first (past `end` it is clear); `rank` alive slots lie after
     * the one wanted. Over a group's worth of words, as live_rank counts,
     * the misses of a program that frees its oldest first (python3 with
     * PYTHONMALLOC=malloc) cost more than the hits saved. */
    if (L->end) {
        uint32_t last = (L->end - 1) / 64, r = rank;
        uint32_t lo = last >= 1 ? last - 1 : 0;
        for (uint32_t w = last + 1; w-- > lo;) {
            uint32_t c = popcount64(L->bits[w]);
            if (r < c)
                return w * 64 + select_bit(L->bits[w], c - r);
            r -= c;
        }
    }
    /* the k-th alive slot (1-based), k = count - rank: the group by the
     * tree, then the word by popcounts */
    uint32_t k = L->count - rank, g = 0, n = live_groups(L);
    uint32_t step = n ? 1u << (31 - __builtin_clz(n)) : 0; /* top bit of n */
    for (; step; step /= 2) {
        if (g + step <= n && (uint32_t)L->fen[g + step] < k) {
            g += step;
            k -= (uint32_t)L->fen[g];
        }
    }
    for (uint32_t w = g * (LIVE_GROUP / 64); w < L->cap / 64; w++) {
        uint32_t c = popcount64(L->bits[w]);
        if (k <= c)
            return w * 64 + select_bit(L->bits[w], k);
        k -= c;
    }
    return L->first; /* not reached while rank < count */
}

void live_remove(live_table *L, uint32_t slot)
{
    L->e[slot].alive = 0;
    L->bits[slot / 64] &= ~(1ull << (slot % 64));
    fen_add(L, slot, -1);
    L->count--;
}

uint32_t live_oldest(live_table *L)
{
    while (L->first < L->end && !L->e[L->first].alive)
        L->first++;
    return L->first;
}

void live_clear(live_table *L)
{
    L->end = L->count = L->first = 0;
    L->moved++;
    if (L->cap) {
        memset(L->bits, 0, (size_t)L->cap / 64 * sizeof *L->bits);
        memset(L->fen, 0, ((size_t)live_groups(L) + 1) * sizeof *L->fen);
    }
}

void live_free(live_table *L)
{
    free(L->e);
    free(L->bits);
    free(L->fen);
    memset(L, 0, sizeof *L);
}

btp_status log_model_init(log_model *m, unsigned word_bits, uint32_t max_live)
{
    memset(m, 0, sizeof *m);
    m->word_bits = word_bits;
    m->max_live = max_live;
    /* the bins are not cleared: a bin is set up when its class comes */
    m->slots = log_table_calloc(2 * LOG_BIN_CLASSES, sizeof *m->slots);
    m->bins = malloc(LOG_BIN_CLASSES * sizeof *m->bins);
    m->freed = malloc(LOG_FREED_RING * sizeof *m->freed);
    m->freed_known = malloc(LOG_FREED_RING);
    if (!m->slots || !m->bins || !m->freed || !m->freed_known) {
        log_model_free(m);
        return BTP_E_OUT_OF_MEMORY;
    }
    log_model_block(m);
    return BTP_OK;
}

void log_model_free(log_model *m)
{
    live_free(&m->live);
    free(m->slots);
    free(m->bins);
    free(m->memo);
    free(m->freed);
    free(m->freed_known);
    memset(m, 0, sizeof *m);
}

void log_model_block(log_model *m)
{
    if (++m->gen == 0) { /* wrapped: clear the stamps for real */
        memset(m->slots, 0, 2 * LOG_BIN_CLASSES * sizeof *m->slots);
        if (m->memo)
            memset(m->memo, 0, (size_t)m->memo_cap * sizeof *m->memo);
        m->gen = 1;
    }
    m->bins_used = 0;
    m->prev_ptr = 0;
    m->prev_known = 1;
    m->next_ptr = 0;
    m->next_known = 1;
    m->free_pred = 0;
    m->freed0 = m->n_freed;
}

bin *log_model_bin(log_model *m, uint64_t cls, int create)
{
    uint32_t mask = 2 * LOG_BIN_CLASSES - 1;
    uint32_t i = (uint32_t)((cls * 0x9E3779B97F4A7C15ull) >> 40) & mask;
    for (;; i = (i + 1) & mask) {
        bin_slot *s = &m->slots[i];
        if (s->gen != m->gen) {
            if (!create || m->bins_used >= LOG_BIN_CLASSES)
                return NULL;
            *s = (bin_slot){cls, m->gen, m->bins_used++};
            m->bins[s->ix].n = 0;
            m->bins[s->ix].head = 0;
            return &m->bins[s->ix];
        }
        if (s->cls == cls)
            return &m->bins[s->ix];
    }
}

void bin_push(bin *b, uint64_t ptr, int known, unsigned depth)
{
    if (b->n >= depth) { /* forget the oldest */
        b->head = (b->head + 1) & (BIN_RING - 1);
        b->n--;
    }
    b->v[(b->head + b->n) & (BIN_RING - 1)] = (bin_entry){ptr, (uint8_t)known};
    b->n++;
}

int bin_find(const bin *b, uint64_t ptr)
{
    /* newest first: the ring's part at its start (when it wraps), then the
     * part from head on */
    uint32_t end = b->head + b->n, i = 0;
    if (end > BIN_RING) {
        for (uint32_t p = end - BIN_RING; p-- > 0; i++)
            if (b->v[p].ptr == ptr)
                return (int)i;
        end = BIN_RING;
    }
    for (uint32_t p = end; p-- > b->head; i++)
        if (b->v[p].ptr == ptr)
            return (int)i;
    return -1;
}

bin_entry bin_take(bin *b, unsigned idx)
{
    const uint32_t mask = BIN_RING - 1;
    uint32_t at = b->n - 1 - idx; /* from the oldest */
    bin_entry e = b->v[(b->head + at) & mask];
    if (idx <= at) { /* the newer ones down */
        for (uint32_t j = at; j + 1 < b->n; j++)
            b->v[(b->head + j) & mask] = b->v[(b->head + j + 1) & mask];
    } else { /* the older ones up */
        for (uint32_t j = at; j > 0; j--)
            b->v[(b->head + j) & mask] = b->v[(b->head + j - 1) & mask];
        b->head = (b->head + 1) & mask;
    }
    b->n--;
    return e;
}

const stack_memo *log_model_memo(const log_model *m, uint32_t s)
{
    return s < m->memo_cap && m->memo[s].gen == m->gen ? &m->memo[s] : NULL;
}

btp_status log_model_memo_set(log_model *m, uint32_t s, uint64_t size, uint64_t ptr,
                              int ptr_known, unsigned tag)
{
    if (s >= m->memo_cap) {
        uint32_t cap = m->memo_cap ? m->memo_cap : 1024;
        while (cap <= s) {
            if (cap > UINT32_MAX / 2)
                return BTP_E_OUT_OF_MEMORY;
            cap *= 2;
        }
        stack_memo *p = realloc(m->memo, (size_t)cap * sizeof *p);
        if (!p)
            return BTP_E_OUT_OF_MEMORY;
        memset(p + m->memo_cap, 0, (size_t)(cap - m->memo_cap) * sizeof *p);
        m->memo = p;
        m->memo_cap = cap;
    }
    m->memo[s] = (stack_memo){size, ptr, m->gen, (uint8_t)ptr_known, (uint8_t)tag};
    return BTP_OK;
}
