/* Shared record model of the trace log writer and reader (log_model.h). */
#include <stdlib.h>
#include <string.h>

#include "log_model.h"

static void fen_add(live_table *L, uint32_t slot, int32_t d)
{
    for (uint32_t i = slot + 1; i <= L->cap; i += i & (0u - i))
        L->fen[i] += d;
}

static uint32_t fen_prefix(const live_table *L, uint32_t n) /* alive in [0, n) */
{
    int64_t s = 0;
    for (uint32_t i = n; i > 0; i -= i & (0u - i))
        s += L->fen[i];
    return (uint32_t)s;
}

static void fen_build(live_table *L)
{
    memset(L->fen, 0, ((size_t)L->cap + 1) * sizeof *L->fen);
    for (uint32_t i = 1; i <= L->cap; i++) {
        L->fen[i] += i - 1 < L->end && L->e[i - 1].alive;
        uint32_t j = i + (i & (0u - i));
        if (j <= L->cap)
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
    if (L->cap == 0 || n > L->cap / 2) {
        uint32_t cap = L->cap ? L->cap * 2 : 1024;
        live_entry *e = realloc(L->e, (size_t)cap * sizeof *e);
        if (!e)
            return BTP_E_OUT_OF_MEMORY;
        L->e = e;
        int32_t *f = realloc(L->fen, ((size_t)cap + 1) * sizeof *f);
        if (!f)
            return BTP_E_OUT_OF_MEMORY;
        L->fen = f;
        L->cap = cap;
    }
    fen_build(L);
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
    fen_add(L, L->end, 1);
    L->end++;
    L->count++;
    return BTP_OK;
}

uint32_t live_find(const live_table *L, uint64_t seq)
{
    uint32_t lo = L->first, hi = L->end;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (L->e[mid].seq < seq)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < L->end && L->e[lo].seq == seq && L->e[lo].alive ? lo : UINT32_MAX;
}

uint32_t live_rank(const live_table *L, uint32_t slot)
{
    return L->count - fen_prefix(L, slot + 1);
}

uint32_t live_at_rank(const live_table *L, uint32_t rank)
{
    /* Frees mostly hit recent allocations: a short walk back from the
     * newest slot finds those without the tree (at most 16 slots looked at). */
    uint32_t seen = 0;
    for (uint32_t i = L->end; i > L->first && L->end - i < 16;) {
        i--;
        if (L->e[i].alive && seen++ == rank)
            return i;
    }
    /* the k-th alive slot (1-based), k = count - rank */
    uint32_t k = L->count - rank, pos = 0;
    uint32_t step = L->cap ? 1u << (31 - __builtin_clz(L->cap)) : 0; /* top bit of cap */
    for (; step; step /= 2) {
        if (pos + step <= L->cap && (uint32_t)L->fen[pos + step] < k) {
            pos += step;
            k -= (uint32_t)L->fen[pos];
        }
    }
    return pos; /* 0-based slot */
}

void live_remove(live_table *L, uint32_t slot)
{
    L->e[slot].alive = 0;
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
    if (L->cap)
        memset(L->fen, 0, ((size_t)L->cap + 1) * sizeof *L->fen);
}

void live_free(live_table *L)
{
    free(L->e);
    free(L->fen);
    memset(L, 0, sizeof *L);
}

btp_status log_model_init(log_model *m, unsigned word_bits, uint32_t max_live)
{
    memset(m, 0, sizeof *m);
    m->word_bits = word_bits;
    m->max_live = max_live;
    /* the bins are not cleared: a bin is set up when its class comes */
    m->slots = calloc(2 * LOG_BIN_CLASSES, sizeof *m->slots);
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
            return &m->bins[s->ix];
        }
        if (s->cls == cls)
            return &m->bins[s->ix];
    }
}

void bin_push(bin *b, uint64_t ptr, int known, unsigned depth)
{
    if (b->n >= depth) { /* forget the oldest */
        memmove(&b->v[0], &b->v[1], (depth - 1) * sizeof b->v[0]);
        b->n--;
    }
    b->v[b->n++] = (bin_entry){ptr, (uint8_t)known};
}

int bin_find(const bin *b, uint64_t ptr)
{
    for (uint32_t i = 0; i < b->n; i++)
        if (b->v[b->n - 1 - i].ptr == ptr)
            return (int)i;
    return -1;
}

bin_entry bin_take(bin *b, unsigned idx)
{
    uint32_t at = b->n - 1 - idx;
    bin_entry e = b->v[at];
    memmove(&b->v[at], &b->v[at + 1], (b->n - 1 - at) * sizeof b->v[0]);
    b->n--;
    return e;
}

const stack_memo *log_model_memo(const log_model *m, uint32_t s)
{
    return s < m->memo_cap && m->memo[s].gen == m->gen ? &m->memo[s] : NULL;
}

btp_status log_model_memo_set(log_model *m, uint32_t s, uint64_t size, uint64_t ptr,
                              int ptr_known)
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
    m->memo[s] = (stack_memo){size, ptr, m->gen, (uint8_t)ptr_known};
    return BTP_OK;
}
