/*
 * The cfi walker's layout cache (lib/capture/cfi_cache.h):
 *  - on this thread's real stack, a walk with the cache (empty, then
 *    filled by the walk before) gives the frames the walk without it gives;
 *  - entries are tied to their image: over a copy of this program's image,
 *    an image that took the place of another at the same address (another
 *    loader record, or other unwind tables) is walked with its own tables,
 *    never with the entries of the one before;
 *  - threads capturing at once, and signal handlers capturing on top of an
 *    interrupted capture, all get the frames the uncached walk gives.
 */
#include "../cbf_testutil.h"
#include "../check.h"
#include "chain.h"

#include "image_copy.h"

#include "capture/cfi_cache.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CAP 64
#include "signal_capture.h" /* uses CAP */

/* ------------------------------------------------------------------ */
/* The real stack                                                       */
/* ------------------------------------------------------------------ */

typedef struct shot {
    size_t n;
    btp_frame f[CAP];
} shot;

static _Alignas(64) btp_cfi_slot my_slots[1024];
static btp_cfi_cache my_cache = {1023, my_slots};

/* Walk this thread from here with `cache` (NULL: none). */
static NOINL void walk_here(btp_cfi_cache *cache, shot *out)
{
    btp_cfi_regs regs;
    BTP_CFI_REGS_HERE(&regs);
    btp_cfi_self self;
    btp_cfi_env env;
    btp_cfi_self_env(&self, &env, NULL, 0);
    env.cache = cache;
    btp_collector c;
    btp_capture_options o = {0};
    btp_collector_init(&c, out->f, CAP, 0, &o);
    (void)btp_cfi_walk(&c, &regs, &env);
    out->n = btp_collector_finish(&c);
    BARRIER();
}

static int same(const shot *a, const shot *b)
{
    return tu_frames_diff(a->f, a->n, b->f, b->n) < 0;
}

static volatile int n_walks = 3;

NOINL void three_walks(btp_cfi_cache *cache, shot s[3]);
NOINL void deeper(btp_cfi_cache *cache, shot s[3], int d);

/* Three walks from the same call site: without the cache, with it empty,
 * with it filled. */
NOINL void three_walks(btp_cfi_cache *cache, shot s[3])
{
    /* read back through a volatile: the compiler cannot give the first
     * walk a call site of its own */
    btp_cfi_cache *volatile pick[3] = {NULL, cache, cache};
    for (int k = 0; k < n_walks; k++)
        walk_here(pick[k], &s[k]);
    BARRIER();
}

NOINL void deeper(btp_cfi_cache *cache, shot s[3], int d)
{
    if (d > 0)
        deeper(cache, s, d - 1);
    else
        three_walks(cache, s);
    BARRIER();
}

static void real_stack(void)
{
    shot s[3];
    btp_cfi_cache_clear(&my_cache);
    deeper(&my_cache, s, 12);
    CHECK(s[0].n >= 16, "the walk found only %zu frames", s[0].n);
    CHECK(same(&s[0], &s[1]), "an empty cache changed the walk (%zu vs %zu frames)", s[0].n,
          s[1].n);
    CHECK(same(&s[0], &s[2]), "a filled cache changed the walk (%zu vs %zu frames)", s[0].n,
          s[2].n);
    /* The filled cache holds the walk's layouts. */
    size_t used = 0;
    for (size_t i = 0; i <= my_cache.mask; i++)
        used += my_slots[i].w[0] != 0;
    CHECK(used >= 4, "only %zu layouts cached", used);
}

/* ------------------------------------------------------------------ */
/* An image replaced at the same address                                */
/* ------------------------------------------------------------------ */

static own_image im;
static copy_env ce = {&im, {NULL, 0}, 1};

static size_t fake_walk(const btp_cfi_regs *regs, btp_cfi_cache *cache, btp_frame *out)
{
    btp_cfi_env env = copy_env_of(&ce, cache);
    btp_collector c;
    btp_capture_options o = {0};
    btp_collector_init(&c, out, CAP, 0, &o);
    (void)btp_cfi_walk(&c, regs, &env);
    return btp_collector_finish(&c);
}

/* Walks over a stack of return addresses (every word a text address, so
 * that the CFA rules of wherever the pc lands lead on) from many pcs; the
 * number of walks whose frames differ between cached and uncached. */
static unsigned differences(btp_cfi_cache *cache, unsigned walks, uint64_t seed)
{
    unsigned diff = 0;
    uint64_t x = seed;
    for (unsigned w = 0; w < walks; w++) {
        btp_cfi_regs regs;
        memset(&regs, 0, sizeof regs);
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        regs.pc = im.text_lo + im.delta + (uintptr_t)(x >> 20) % (im.text_hi - im.text_lo);
        for (unsigned i = 0; i < BTP_CFI_NREG; i++)
            regs.r[i] = (uintptr_t)ce.stack.p + 64 * i;
        regs.valid = ~(uint64_t)0 >> (64 - BTP_CFI_NREG);
        btp_frame a[CAP], b[CAP];
        size_t na = fake_walk(&regs, NULL, a), nb = fake_walk(&regs, cache, b);
        int d = na != nb;
        for (size_t i = 0; !d && i < na; i++)
            d = a[i].value != b[i].value;
        diff += d;
    }
    return diff;
}

static void replaced_image(void)
{
    int ok = own_image_copy(&im);
    CHECK(ok, "no image of our own");
    if (!ok)
        return;
    ce.stack = fenced_map(64 * 1024);
    uint64_t x = 7;
    for (size_t i = 0; i + 8 <= ce.stack.size; i += 8) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        uintptr_t ra = im.text_lo + im.delta + (uintptr_t)(x >> 20) % (im.text_hi - im.text_lo);
        memcpy(ce.stack.p + i, &ra, 8);
    }

    /* The image as loaded first: the cache agrees with the tables. */
    ce.id = 1;
    btp_cfi_cache_clear(&my_cache);
    CHECK(differences(&my_cache, 2000, 1) == 0, "cache and tables disagree");
    CHECK(differences(&my_cache, 2000, 1) == 0, "filled cache and tables disagree");

    /* Another image in its place: other unwind tables (every CFA offset in
     * the FDEs' programs changed: .eh_frame's bytes after the header and
     * table rotated by one), the same address, a new loader record. The
     * entries of the first must not be used: cached and uncached walks
     * agree. (That the tables do differ is checked by walking them with the
     * first image's entries under the first image's record, which must
     * then disagree somewhere: the cache does hold layouts.) */
    uint8_t *tables = im.copy.p + (im.eh_hdr - im.span_lo);
    uint32_t count;
    memcpy(&count, tables + 8, 4);
    /* GNU ld's encoding: version 1, pcrel sdata4, udata4, datarel sdata4 */
    CHECK(tables[0] == 1 && tables[1] == 0x1b && tables[2] == 0x03 && tables[3] == 0x3b,
          "unexpected .eh_frame_hdr encoding %02x %02x %02x %02x", tables[0], tables[1],
          tables[2], tables[3]);
    size_t hdr_len = 12 + 8 * (size_t)count;
    uint8_t *frames = tables + hdr_len, *end = im.copy.p + im.copy.size;
    for (uint8_t *q = frames; q < end; q++)
        if (*q == 0x0e) /* DW_CFA_def_cfa_offset: its operand is next */
            q[1] = (uint8_t)(q[1] ^ 0x08);
    unsigned stale = differences(&my_cache, 2000, 1);
    CHECK(stale > 0, "changed tables gave the same walks: the test changes nothing");
    ce.id = 2;
    CHECK(differences(&my_cache, 2000, 1) == 0,
          "the entries of the image unloaded were used for the one loaded in its place");
    printf("replaced image: %u of 2000 walks would have used stale layouts\n", stale);
}

/* ------------------------------------------------------------------ */
/* Threads and signals                                                  */
/* ------------------------------------------------------------------ */

static _Atomic int stop;

#define MIN_ROUNDS 2000
#define SIGNAL_ROUNDS 400

static void *hammer(void *arg)
{
    uint64_t *bad = arg;
    shot ref, s;
    /* one call site for all walks: the first (the reference) without the
     * cache, the others with it */
    btp_cfi_cache *volatile pick[2] = {NULL, btp_cfi_cache_global()};
    shot *volatile into[2] = {&ref, &s};
    int i;
    for (i = 0; !stop || i <= MIN_ROUNDS; i++) {
        walk_here(pick[i != 0], into[i != 0]);
        if (i && !same(&ref, &s)) {
            if ((*bad & 0xffffffffu) < 3) {
                size_t k = 0;
                while (k < ref.n && k < s.n && ref.f[k].value == s.f[k].value)
                    k++;
                fprintf(stderr, "walk %d: %zu frames, %zu expected; first difference at %zu\n",
                        i, s.n, ref.n, k);
            }
            ++*bad;
        }
    }
    *bad |= (uint64_t)i << 32; /* walks made, for the report */
    return NULL;
}

static void threads_and_signals(void)
{
    catch_sigusr1();
    enum { T = 4 };
    pthread_t t[T];
    uint64_t bad[T] = {0};
    for (int i = 0; i < T; i++)
        pthread_create(&t[i], NULL, hammer, &bad[i]);
    /* Meanwhile: empty the cache under them now and then, and interrupt
     * them with captures of their own. */
    interrupt_and_join(t, T, SIGNAL_ROUNDS, 16, &stop);
    uint64_t total = 0, made = 0;
    for (int i = 0; i < T; i++) {
        total += bad[i] & 0xffffffffu;
        made += bad[i] >> 32;
    }
    CHECK(total == 0, "%llu of %llu concurrent walks differed from the uncached one",
          (unsigned long long)total, (unsigned long long)made);
    CHECK(!handler_bad, "a capture in a signal handler lost the interrupted pc");
    CHECK(handler_walks > 0, "no signal came");
    printf("threads: %d threads, %llu walks; %lu captures in signal handlers\n", T,
           (unsigned long long)made,
           (unsigned long)handler_walks);
}

int main(void)
{
    btp_capture_cache_thread_bounds();
    real_stack();
    replaced_image();
    threads_and_signals();
    return check_finish();
}
