/*
 * The cfi walker fed hostile input: a copy of this program's own image
 * (text, .eh_frame_hdr, .eh_frame) and a stack, each fenced by inaccessible
 * pages, with bytes of the unwind tables and of the stack changed at random,
 * and random registers. Whatever the bytes, every walk must end, stay
 * within the collector's capacity, and read nothing outside the memory the
 * environment vouches for: a stray read hits a fence and fails the test.
 *
 * usage: test_cfi_hostile [ITERATIONS] [SEED]
 */
#include "../check.h"
#include "../test_rng.h"

#include "image_copy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static own_image im;

int main(int argc, char **argv)
{
    unsigned long iterations = argc > 1 ? strtoul(argv[1], NULL, 10) : 20000;
    uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 0) : 0x5eed;
    int ok = own_image_copy(&im);
    CHECK(ok, "no image of our own");
    if (!ok)
        return check_finish();
    copy_env ce = {&im, fenced_map(16 * 1024), 0};
    fenced stack = ce.stack, image = im.copy;
    uintptr_t text_lo = im.text_lo, text_hi = im.text_hi, delta = im.delta;
    /* The tables: from .eh_frame_hdr to the end of the image. */
    size_t tables_lo = im.eh_hdr - im.span_lo, tables_hi = image.size;
    unsigned char *pristine = malloc(image.size);
    memcpy(pristine, image.p, image.size);

    btp_cfi_env env = copy_env_of(&ce, NULL);
    uint64_t rng = seed ? seed : 1;
    btp_frame frames[64];
    unsigned long deep = 0, total = 0;
    for (unsigned long it = 0; it < iterations; it++) {
        /* A few bytes of the tables changed (none on a quarter of the runs). */
        memcpy(image.p + tables_lo, pristine + tables_lo, tables_hi - tables_lo);
        unsigned flips = (unsigned)(test_rng(&rng) % 4 ? test_rng(&rng) % 8 : 0);
        for (unsigned k = 0; k < flips; k++)
            image.p[tables_lo + test_rng(&rng) % (tables_hi - tables_lo)] =
                (unsigned char)test_rng(&rng);
        /* A stack of random words, some of them return addresses into our
         * text, some pointers into the stack itself. */
        uintptr_t *w = (uintptr_t *)(void *)stack.p;
        size_t nw = stack.size / sizeof *w;
        for (size_t i = 0; i < nw; i++) {
            uint64_t r = test_rng(&rng);
            switch (r % 3) {
            case 0: w[i] = text_lo + delta + (uintptr_t)(r >> 8) % (text_hi - text_lo); break;
            case 1: w[i] = (uintptr_t)stack.p + (uintptr_t)(r >> 8) % stack.size; break;
            default: w[i] = (uintptr_t)r; break;
            }
        }
        btp_cfi_regs regs;
        memset(&regs, 0, sizeof regs);
        for (unsigned i = 0; i < BTP_CFI_NREG; i++)
            regs.r[i] = (uintptr_t)stack.p + (uintptr_t)test_rng(&rng) % stack.size;
        regs.r[BTP_CFI_SP] = (uintptr_t)stack.p + (uintptr_t)test_rng(&rng) % (stack.size / 2);
        regs.valid = ~(uint64_t)0 >> (64 - BTP_CFI_NREG);
        regs.pc = test_rng(&rng) % 8 == 0 ? (uintptr_t)test_rng(&rng)
                                               : text_lo + delta +
                                                     (uintptr_t)test_rng(&rng) %
                                                         (text_hi - text_lo);
        btp_collector c;
        btp_capture_options o = {0};
        btp_collector_init(&c, frames, 64, 0, &o);
        btp_status st = btp_cfi_walk(&c, &regs, &env);
        size_t n = btp_collector_finish(&c);
        CHECK(st == BTP_OK && n >= 1 && n <= 64, "iteration %lu: %s, %zu frames", it,
              btp_status_name(st), n);
        deep += n > 2;
        total += n;
    }
    printf("%lu walks, %lu frames, %lu walks past two frames\n", iterations, total, deep);
    /* The hostile input must have let some walks get somewhere, or the
     * test would only ever exercise the first step. */
    CHECK(deep > iterations / 1000, "only %lu walks went past two frames", deep);
    free(pristine);
    return check_finish();
}
