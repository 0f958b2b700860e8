/*
 * Where the time of btp_lws_decode() goes: a call's fixed part against its
 * part per frame, and what branches that the processor fails to predict
 * cost (bench/history/codecs.md, "lws decode: the seventh round").
 *
 *   lws_depth [WORD_BITS]
 *
 * For each depth (4 .. 31) it encodes 20,000 synthetic records (addresses
 * of a program and a library, a third of them near the frame before, so
 * that literals and deltas mix as in the corpora; libwebsockets' choices)
 * and times decoding all of them, best of 15 rounds, in two ways: every
 * record different ("varied": the kinds of frames and the lengths vary
 * from record to record as in real data) and one record repeated ("one":
 * all branches predicted after the first round). It prints ns a call and
 * a frame, then for depths >= 8 the least-squares line ns = a + b * depth:
 * a, the fixed part of a call, and b, a frame's part. Figures of speed are
 * never checked by a test.
 */
#include <btpack/lws.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { NREC = 20000, ROUNDS = 15, NDEPTH = 8 };

static uint64_t rng = 0x9E3779B97F4A7C15ull;

static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static uint8_t blobs[NREC][BTP_LWS_BLOB_MAX];
static size_t lens[NREC];

static void make(unsigned word_bits, int depth, int repeat)
{
    for (int b = 0; b < NREC; b++) {
        if (repeat && b > 0) {
            memcpy(blobs[b], blobs[0], lens[0]);
            lens[b] = lens[0];
            continue;
        }
        btp_frame f[BTP_LWS_MAX_FRAMES];
        for (int i = 0; i < depth; i++) {
            uint64_t lib = word_bits == 32 ? 0xf7d00000u : 0x7f3a12000000ull;
            uint64_t v = (next() % 3 ? lib : 0x08048000u) + (next() & 0xfffff);
            if (i > 1 && next() % 3 == 0)
                v = f[i - 1].value + (next() & 0xff);
            f[i] = (btp_frame){v, BTP_FRAME_RA};
        }
        if (btp_lws_encode(f, (size_t)depth, next() & 0xffff, word_bits, 0, blobs[b],
                           BTP_LWS_BLOB_MAX, &lens[b], NULL) != BTP_OK) {
            fprintf(stderr, "lws_depth: encode failed\n");
            exit(1);
        }
    }
}

/* Best ns a call over the rounds, decoding every record once a round. */
static double run(unsigned word_bits)
{
    double best = 1e30;
    for (int r = 0; r < ROUNDS; r++) {
        btp_frame out[BTP_LWS_MAX_FRAMES];
        btp_lws_info info;
        uint64_t sum = 0;
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (int b = 0; b < NREC; b++) {
            if (btp_lws_decode(blobs[b], lens[b], word_bits, out, BTP_LWS_MAX_FRAMES, &info) !=
                BTP_OK) {
                fprintf(stderr, "lws_depth: decode failed\n");
                exit(1);
            }
            sum += out[0].value;
        }
        clock_gettime(CLOCK_MONOTONIC, &t1);
        if (sum == 1)
            puts(""); /* keeps the loop */
        double ns = ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) /
                    NREC;
        if (ns < best)
            best = ns;
    }
    return best;
}

int main(int argc, char **argv)
{
    unsigned word_bits = argc > 1 ? (unsigned)atoi(argv[1]) : 32;
    if (word_bits != 32 && word_bits != 64) {
        fprintf(stderr, "usage: lws_depth [32|64]\n");
        return 2;
    }
    static const int depths[NDEPTH] = {4, 8, 12, 16, 20, 24, 28, 31};
    const char *names[2] = {"varied", "one"};
    printf("word bits %u; ns a call (a frame)\n%-6s %16s %16s\n", word_bits, "depth", names[0],
           names[1]);
    double sx[2] = {0}, sy[2] = {0}, sxx[2] = {0}, sxy[2] = {0};
    int cnt = 0;
    for (int d = 0; d < NDEPTH; d++) {
        double ns[2];
        for (int m = 0; m < 2; m++) {
            make(word_bits, depths[d], m);
            ns[m] = run(word_bits);
            if (depths[d] >= 8) {
                sx[m] += depths[d];
                sy[m] += ns[m];
                sxx[m] += (double)depths[d] * depths[d];
                sxy[m] += depths[d] * ns[m];
            }
        }
        cnt += depths[d] >= 8;
        printf("%-6d %8.1f (%5.2f) %8.1f (%5.2f)\n", depths[d], ns[0], ns[0] / depths[d], ns[1],
               ns[1] / depths[d]);
    }
    for (int m = 0; m < 2; m++) {
        double b = (cnt * sxy[m] - sx[m] * sy[m]) / (cnt * sxx[m] - sx[m] * sx[m]);
        double a = (sy[m] - b * sx[m]) / cnt;
        printf("%-6s ns = %.1f + %.2f * depth\n", names[m], a, b);
    }
    return 0;
}
