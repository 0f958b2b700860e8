/* The live-allocation table of the trace log (lib/log/log_model.h): after
 * every push and removal, the rank of a slot (alive entries newer than it)
 * and the slot at a rank agree with a plain array of the alive allocation
 * numbers, across compactions (the table full of dead slots), growth,
 * removals of the oldest and clears. Frees near the newest entry and far
 * from it both come, so both ways live_rank() counts are used. The freed-
 * pointer bins (bin_push, bin_find, bin_take) likewise against a plain
 * array, newest last, through pushes past the depth and takes near either
 * end: the writer and the reader share them, so a log read back cannot tell
 * a bin that keeps the wrong entries. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "log/log_model.h"
#include "test_rng.h"

#define MAX_ALIVE 200000

static uint64_t model[MAX_ALIVE]; /* alive allocation numbers, oldest first */
static uint32_t n_model;

/* The slot of allocation `seq` (alive), by looking. */
static uint32_t slot_of(const live_table *L, uint64_t seq)
{
    for (uint32_t i = L->first; i < L->end; i++)
        if (L->e[i].alive && L->e[i].seq == seq)
            return i;
    return UINT32_MAX;
}

static void drop_model(uint32_t k)
{
    memmove(&model[k], &model[k + 1], (n_model - k - 1) * sizeof model[0]);
    n_model--;
}

/* Remove the model's k-th oldest, checking rank and at_rank on the way. */
static void free_kth(live_table *L, uint32_t k, unsigned long *bad)
{
    uint32_t rank = n_model - 1 - k;
    uint32_t slot = live_at_rank(L, rank);
    if (slot >= L->end || !L->e[slot].alive || L->e[slot].seq != model[k]) {
        (*bad)++;
        slot = slot_of(L, model[k]);
    }
    if (live_rank(L, slot) != rank)
        (*bad)++;
    live_remove(L, slot);
    drop_model(k);
}

static void test_bins(void)
{
    static bin b; /* (a ring: 2 KiB) */
    uint64_t ref[LOG_BIN_DEPTH_MAX + 1], rng = 0x0123456789ABCDEFull, next = 1;
    unsigned n_ref = 0;
    unsigned long bad = 0;
    b.n = 0;
    b.head = 0;
    for (long i = 0; i < 200000; i++) {
        uint64_t r = test_rng(&rng);
        unsigned depth = i < 100000 ? LOG_M3_BIN_DEPTH : LOG_BIN_DEPTH;
        if (i == 100000) /* a new block's bin (the reader's MODEL2 depth too) */
            b.n = 0, n_ref = 0;
        if (r % 8 < 5 || n_ref == 0) {
            uint64_t p = next++ * 16;
            bin_push(&b, p, (int)(p >> 4 & 1), depth);
            if (n_ref >= depth) {
                memmove(&ref[0], &ref[1], (n_ref - 1) * sizeof ref[0]);
                n_ref--;
            }
            ref[n_ref++] = p;
        } else {
            /* a position from the top: near it, near the oldest, anywhere */
            unsigned idx = (unsigned)(r >> 8) % n_ref;
            if (r % 8 == 5)
                idx = (unsigned)(r >> 8) % (n_ref < 4 ? n_ref : 4);
            else if (r % 8 == 6)
                idx = n_ref - 1 - (unsigned)(r >> 8) % (n_ref < 4 ? n_ref : 4);
            uint64_t p = ref[n_ref - 1 - idx];
            if (bin_find(&b, p) != (int)idx || bin_find(&b, p + 8) != -1)
                bad++;
            bin_entry e = bin_take(&b, idx);
            if (e.ptr != p || e.known != (uint8_t)(p >> 4 & 1))
                bad++;
            memmove(&ref[n_ref - 1 - idx], &ref[n_ref - idx], idx * sizeof ref[0]);
            n_ref--;
        }
        if (b.n != n_ref)
            bad++;
        for (unsigned k = 0; k < n_ref && i % 97 == 0; k++)
            if (bin_find(&b, ref[k]) != (int)(n_ref - 1 - k))
                bad++;
    }
    CHECK(bad == 0, "bins: %lu disagreements with the plain array", bad);
}

int main(void)
{
    test_bins();
    live_table L;
    memset(&L, 0, sizeof L);
    uint64_t rng = 0x1234567887654321ull, seq = 0;
    unsigned long bad = 0, ops = 0;
    uint32_t moved = L.moved;
    unsigned compactions = 0;
    for (int phase = 0; phase < 4; phase++) {
        /* phase 0: grow to many alive; 1: churn near the newest; 2: free
         * the oldest and random ones; 3: after a clear, small and busy */
        long steps = phase == 0 ? 150000 : 120000;
        for (long i = 0; i < steps; i++) {
            uint64_t r = test_rng(&rng);
            int push = phase == 0 ? r % 10 < 7 : phase == 2 ? r % 10 < 4 : r % 2;
            if (push && n_model < MAX_ALIVE) {
                live_entry e = {seq, seq * 16, 1, 0, 1, 1};
                if (live_push(&L, e) != BTP_OK) {
                    CHECK(0, "live_push failed at %lu", ops);
                    return check_finish();
                }
                model[n_model++] = seq++;
            } else if (n_model) {
                uint32_t k;
                if (phase == 1 || (phase == 3 && r % 4))
                    k = n_model - 1 - (uint32_t)((r >> 8) % (n_model < 40 ? n_model : 40));
                else if (phase == 2 && r % 3 == 0)
                    k = 0;
                else
                    k = (uint32_t)((r >> 8) % n_model);
                if (k == 0 && r % 2) { /* as the writer and reader forget the oldest */
                    uint32_t slot = live_oldest(&L);
                    if (slot >= L.end || L.e[slot].seq != model[0])
                        bad++;
                    live_remove(&L, slot);
                    drop_model(0);
                } else {
                    free_kth(&L, k, &bad);
                }
            }
            ops++;
            if (L.count != n_model)
                bad++;
            if (L.moved != moved) {
                moved = L.moved;
                compactions++;
            }
            /* now and then, every rank at once */
            if (i % 20011 == 0)
                for (uint32_t k = 0; k < n_model; k += 1 + n_model / 97) {
                    uint32_t slot = slot_of(&L, model[k]);
                    if (slot == UINT32_MAX || live_rank(&L, slot) != n_model - 1 - k ||
                        live_at_rank(&L, n_model - 1 - k) != slot)
                        bad++;
                }
        }
        if (phase == 2) {
            live_clear(&L);
            n_model = 0;
            CHECK(L.count == 0 && L.end == 0, "clear left %u alive", L.count);
        }
    }
    CHECK(bad == 0, "%lu disagreements with the plain array in %lu operations", bad, ops);
    CHECK(compactions > 3, "only %u compactions: the test did not reach them", compactions);
    CHECK(L.cap >= 4 * LIVE_GROUP, "capacity %u: the group tree was not exercised", L.cap);
    live_free(&L);
    return check_finish();
}
