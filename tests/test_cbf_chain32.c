/*
 * btp_cbf_encode_chain32, the 32-bit chain encoder of fault handlers,
 * against the general encoder: for the golden vectors' traces taken as
 * 32-bit chains, for random chains (operands of every size, runs of
 * repeats short and long, a pc repeated by its caller) and for edge cases,
 * the same status, length, size needed and bytes as btp_cbf_encode of the
 * frames {pc, ra, ra, ...} at 32 bits, with and without TRUNCATE_ON_FULL
 * and BTP_CBF_ENC_SWIFT, at every buffer size (tests/cbf_testutil.h,
 * tu_check_chain32). Runs on the host and on the bare-metal targets under
 * QEMU (tests/embedded), where the codecs are built for size.
 */
#include <btpack/btpack.h>

#include "cbf_testutil.h"
#include "cbf_vector_chains.h"
#include "test_rng.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static uint64_t rng_state = 0x5eed0c4a1e32u;

static uint32_t rnd(void)
{
    return (uint32_t)(test_rng(&rng_state) >> 32);
}

/* Each golden vector's addresses as a chain, truncated as the vector. Every
 * buffer size for the shorter ones; the longest (up to 448 frames) at the
 * size needed and at the bound, which keeps the run short under QEMU. */
static void test_vectors(void)
{
    for (size_t i = 0; i < COUNT(vector_chains); i++)
        for (unsigned swift = 0; swift < 2; swift++)
            tu_check_chain32(vector_chains[i].id, vector_chains[i].addrs, vector_chains[i].n,
                             vector_chains[i].truncated, swift ? BTP_CBF_ENC_SWIFT : 0,
                             vector_chains[i].n <= 64);
}

/* An address near the one before: a delta of 1 to 4 bytes either way, or
 * anywhere (a call into another image), or equal (a repeat). */
static uint32_t next_address(uint32_t prev)
{
    uint32_t r = rnd();
    switch (r % 8) {
    case 0:
        return prev; /* recursion */
    case 1:
        return rnd(); /* anywhere */
    case 2:
        return prev + (r >> 20) - 0x800u; /* 1-2 byte delta */
    case 3:
        return prev + (r >> 12) - 0x80000u; /* 3 byte delta */
    case 4:
        return r >> (r % 32); /* small absolute values: absolute may be shorter */
    case 5:
        return 0xffffffffu - (r >> (r % 32)); /* near the top: wrap-around */
    default:
        return prev + (r >> 8) - 0x800000u;
    }
}

/* Random chains of about 40 frames at most, more with a long run of
 * repeats (up to 300 copies: external counts of 1 and 2 bytes), at every
 * buffer size up to 64 frames. */
static void test_random(void)
{
    enum { CHAINS = 400, MAX = 400 };
    static uint32_t chain[MAX];
    char what[48];
    for (unsigned c = 0; c < CHAINS; c++) {
        size_t want = rnd() % 41, n = 0;
        uint32_t a = rnd();
        while (n < want) {
            a = next_address(a);
            size_t run = (rnd() % 16 == 0) ? 1 + rnd() % 300 : 1;
            for (size_t k = 0; k < run && n < MAX; k++)
                chain[n++] = a;
        }
        snprintf(what, sizeof what, "random chain %u (%zu frames)", c, n);
        unsigned flags = (c & 1) ? BTP_CBF_ENC_SWIFT : 0;
        tu_check_chain32(what, chain, n, (c >> 1) & 1, flags, n <= 64);
    }
}

/* Shapes the random chains may miss. */
static void test_edges(void)
{
    static uint32_t run[600];
    const uint32_t pc_then_same[] = {0x1000, 0x1000, 0x1000, 0x1000, 0x2000};
    const uint32_t top[] = {0xffffffffu, 0, 0x80000000u, 0x7fffffffu, 0x80000000u, 0xff};
    const uint32_t inline_max[] = {0x10, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
                                   0x20, 0x30};
    for (size_t i = 0; i < COUNT(run); i++)
        run[i] = i < 2 ? 0x08000100u * (uint32_t)(i + 1) : 0x08000400u;
    struct {
        const char *name;
        const uint32_t *a;
        size_t n;
    } cases[] = {
        {"empty", NULL, 0},
        {"pc only", top, 1},
        /* A pc is never repeated by a return address of the same value. */
        {"pc then the same ra", pc_then_same, COUNT(pc_then_same)},
        {"top of the word", top, COUNT(top)},
        /* A frame and 8 copies: the last inline rep; 9: an external count. */
        {"8 copies inline", inline_max, 10},
        {"9 copies external", inline_max, 11},
        {"9 copies, then a frame", inline_max, COUNT(inline_max)},
        {"run of 598", run, COUNT(run)},
    };
    for (size_t c = 0; c < COUNT(cases); c++)
        for (unsigned flags = 0; flags <= BTP_CBF_ENC_SWIFT; flags += BTP_CBF_ENC_SWIFT)
            for (int truncated = 0; truncated < 2; truncated++)
                tu_check_chain32(cases[c].name, cases[c].a, cases[c].n, truncated, flags, 1);
}

/* Bad arguments: the same answers as btp_cbf_encode's. */
static void test_arguments(void)
{
    uint32_t a[2] = {0x1000, 0x2000};
    uint8_t buf[16];
    size_t len = 99, needed = 99;
    CHECK(btp_cbf_encode_chain32(NULL, 1, 0, 0, buf, sizeof buf, &len, &needed) ==
                  BTP_E_INVALID_ARGUMENT &&
              len == 0 && needed == 0,
          "NULL addresses");
    CHECK(btp_cbf_encode_chain32(a, 2, 0, 0, NULL, 8, &len, &needed) == BTP_E_INVALID_ARGUMENT,
          "NULL buffer with a capacity");
    CHECK(btp_cbf_encode_chain32(a, 2, 0, BTP_CBF_ENC_TRUNCATE_ON_FULL, buf, 1, &len, &needed) ==
              BTP_E_INVALID_ARGUMENT,
          "TRUNCATE_ON_FULL with one byte");
    CHECK(btp_cbf_encode_chain32(NULL, 0, 0, 0, NULL, 0, &len, &needed) ==
                  BTP_E_BUFFER_TOO_SMALL &&
              len == 0 && needed == 2,
          "nothing into nothing: %zu needed", needed);
    CHECK(btp_cbf_encode_chain32(a, 2, 1, 0, buf, sizeof buf, &len, &needed) == BTP_OK &&
              len == 8 && needed == 8 && memcmp(buf, "\x01\x19\x10\x00\x21\x10\x00\x01", 8) == 0,
          "pc 0x1000, ra 0x2000, truncated: %zu bytes", len);
}

int main(void)
{
    test_arguments();
    test_edges();
    test_vectors();
    test_random();
    return check_finish();
}
