/* The range coder of trace-log pointer deltas (lib/log/log_rc.h, spec/log.md
 * "MODEL2"): every delta comes back, the decoder consumes exactly the
 * encoder's bytes, and a stream cut short, extended or made of noise is
 * flagged bad without reading outside its section. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "log/log_rc.h"
#include "test_rng.h"

#define N_RANDOM 100000

static uint64_t deltas[N_RANDOM + 64];

/* Encode d[0..n) into out; returns the stream's length. */
static size_t encode(const uint64_t *d, size_t n, log_buf *out)
{
    log_rc_enc e;
    log_rc_model m;
    log_rc_enc_init(&e);
    log_rc_model_init(&m);
    out->len = 0;
    for (size_t i = 0; i < n; i++)
        log_rc_put_delta(&e, &m, out, d[i]);
    log_rc_enc_finish(&e, out);
    return out->len;
}

/* Decode n deltas from p[0..len); how many matched d; *bad and *pos the
 * section's state after them. */
static size_t decode(const uint8_t *p, size_t len, const uint64_t *d, size_t n, int *bad,
                     size_t *pos)
{
    log_rd in = {p, len, 0, 0};
    log_rc_dec dec = {0, 0, 0};
    log_rc_model m;
    log_rc_model_init(&m);
    size_t same = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t v = log_rc_get_delta(&dec, &m, &in);
        same += d && v == d[i];
    }
    *bad = in.bad;
    *pos = in.pos;
    return same;
}

int main(void)
{
    /* edge values, repeats (the recent list), and more distinct deltas than
     * the list holds before an old one comes back */
    static const uint64_t edge[] = {0, 1, UINT64_MAX, 16, (uint64_t)-16, 1ull << 63,
                                    (1ull << 63) - 1, (1ull << 63) + 1, 0x7fffffff0ull,
                                    16, 16, 0, 1ull << 63, 0xffffull, 0x10000ull};
    size_t n = 0;
    for (size_t i = 0; i < sizeof edge / sizeof edge[0]; i++)
        deltas[n++] = edge[i];
    for (uint64_t i = 0; i < 20; i++)
        deltas[n++] = (i + 1) * 4096;
    deltas[n++] = 4096; /* dropped out of the list by now */
    uint64_t rng = 0x5eed;
    for (size_t i = 0; i < N_RANDOM; i++) {
        uint64_t r = test_rng(&rng);
        unsigned bits = (unsigned)(r % 65);
        uint64_t v = bits == 64 ? test_rng(&rng)
                                : test_rng(&rng) & ((1ull << bits) - 1);
        if (r & (1u << 20))
            v &= ~(uint64_t)15; /* aligned, as heap pointers are */
        if (r & (1u << 21))
            v = 0 - v;
        if ((r & (3u << 22)) == 0 && i > 0)
            v = deltas[n - 1 - (r >> 24) % 8]; /* a recent one again */
        deltas[n++] = v;
    }

    log_buf out = {0};
    size_t len = encode(deltas, n, &out);
    CHECK(!out.oom && len > 5, "encoded %zu bytes", len);
    int bad;
    size_t pos;
    size_t same = decode(out.p, len, deltas, n, &bad, &pos);
    CHECK(same == n, "%zu of %zu deltas came back", same, n);
    CHECK(!bad && pos == len, "bad %d, consumed %zu of %zu", bad, pos, len);

    /* each prefix alone, so that the end of every kind of value is checked */
    for (size_t k = 1; k <= 40; k++) {
        log_buf o = {0};
        size_t l = encode(deltas, k, &o);
        same = decode(o.p, l, deltas, k, &bad, &pos);
        CHECK(same == k && !bad && pos == l, "prefix %zu: %zu same, bad %d, %zu of %zu", k,
              same, bad, pos, l);
        /* cut: a byte short (the decoder sees past its end) */
        decode(o.p, l - 1, NULL, k, &bad, &pos);
        CHECK(bad && pos == l - 1, "prefix %zu cut: bad %d pos %zu", k, bad, pos);
        /* extended: a byte left over */
        uint8_t *x = malloc(l + 1);
        memcpy(x, o.p, l);
        x[l] = 0;
        decode(x, l + 1, NULL, k, &bad, &pos);
        CHECK(!bad && pos == l, "prefix %zu extended: bad %d pos %zu of %zu", k, bad, pos, l + 1);
        free(x);
        log_buf_free(&o);
    }

    /* a stream that does not start with 0 is bad */
    uint8_t nz[8] = {1, 0, 0, 0, 0, 0, 0, 0};
    decode(nz, sizeof nz, NULL, 1, &bad, &pos);
    CHECK(bad, "a first byte of 1 is accepted");

    /* noise: any bytes decode in bounded steps, never read outside */
    for (int t = 0; t < 2000; t++) {
        size_t l = (size_t)(test_rng(&rng) % 64);
        uint8_t *buf = malloc(l ? l : 1);
        for (size_t i = 0; i < l; i++)
            buf[i] = (uint8_t)test_rng(&rng);
        if (l)
            buf[0] = 0;
        decode(buf, l, NULL, 64, &bad, &pos);
        CHECK(pos <= l, "noise: read %zu of %zu", pos, l);
        free(buf);
    }

    /* MODEL3's numbers (ages, ranks: unsigned; the coder also takes signed
     * ones, here in the rank model), interleaved with deltas in one stream
     * as a block has them */
    {
        log_rc_enc e;
        log_rc_model m;
        log_rc_enc_init(&e);
        log_rc_model_init(&m);
        log_buf o = {0};
        for (size_t i = 0; i < n; i++) {
            if (i % 3 == 0)
                log_rc_put_num(&e, &m.age, &o, deltas[i] >> (deltas[i] % 61), 0);
            else if (i % 3 == 1)
                log_rc_put_num(&e, &m.rank, &o, deltas[i], 1);
            else
                log_rc_put_delta(&e, &m, &o, deltas[i]);
        }
        log_rc_enc_finish(&e, &o);
        log_rd in = {o.p, o.len, 0, 0};
        log_rc_dec dec = {0, 0, 0};
        log_rc_model_init(&m);
        size_t ok = 0;
        for (size_t i = 0; i < n; i++) {
            uint64_t v;
            if (i % 3 == 0)
                v = log_rc_get_num(&dec, &m.age, &in, 0) == deltas[i] >> (deltas[i] % 61);
            else if (i % 3 == 1)
                v = log_rc_get_num(&dec, &m.rank, &in, 1) == deltas[i];
            else
                v = log_rc_get_delta(&dec, &m, &in) == deltas[i];
            ok += v;
        }
        CHECK(ok == n && !in.bad && in.pos == o.len, "numbers: %zu of %zu back, bad %d, %zu of %zu",
              ok, n, in.bad, in.pos, o.len);
        /* a bit length above 64 is refused: all-ones bits give 127 */
        uint8_t ones[16] = {0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
        log_rd in2 = {ones, sizeof ones, 0, 0};
        log_rc_dec d2 = {0, 0, 0};
        log_rc_model_init(&m);
        (void)log_rc_get_num(&d2, &m.rank, &in2, 0);
        CHECK(in2.bad && in2.pos <= sizeof ones, "length 127 accepted (bad %d)", in2.bad);
        log_buf_free(&o);
    }
    log_buf_free(&out);
    return check_finish();
}
