/*
 * Fuzz target: the lws blob decoder.
 *
 * Input: byte 0 chooses the word size (bit 0: 32 or 64) and the frame
 * array's size (bit 6 set: bits 1-5 give 0..31 frames, else 31); the rest is
 * the blob, in a buffer ending at a guard page, decoded into a frame array
 * ending at a guard page. Properties:
 *  - the status is one the header documents; length_mismatch exactly when
 *    the blob is shorter than 2 bytes or its trailer differs from its length;
 *  - on success: depth <= 31, frames are RA within the word, the fields
 *    used fit the bitstream, suspect flags only name decoded frames (and
 *    only on 64-bit words);
 *  - a smaller frame array gives BTP_E_LIMIT exactly when the record holds
 *    more frames, with the same first frames and the same info;
 *  - an error's bit offset lies inside the blob, and the frame array is
 *    untouched from the record's depth field on (lws.h).
 */
#include "fuzz.h"
#include "guard.h"
#include "lws_check.h"
#include "runs.h"

#include <btpack/lws.h>
#include <string.h>

static fuzz_guard in_guard, out_guard;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    unsigned word_bits;
    size_t max_frames, len;
    const uint8_t *blob = fuzz_lws_input(data, size, &in_guard, &word_bits, &max_frames, &len);
    if (!blob)
        return 0;
    uint64_t mask = btp_word_mask(word_bits);

    /* Reference: room for every frame a record can hold. */
    btp_frame full[BTP_LWS_MAX_FRAMES];
    btp_lws_info ref;
    memset(full, 0xa5, sizeof full);
    btp_status st = btp_lws_decode(blob, len, word_bits, full, BTP_LWS_MAX_FRAMES, &ref);
    int trailer_ok = len >= 2 && (((size_t)blob[len - 2] << 8) | blob[len - 1]) == len;
    FUZZ_CHECK((st == BTP_E_LENGTH_MISMATCH) == !trailer_ok, "status %d, trailer ok %d", st,
               trailer_ok);
    switch (st) {
    case BTP_OK:
        FUZZ_CHECK(ref.depth <= BTP_LWS_MAX_FRAMES, "depth %zu", ref.depth);
        FUZZ_CHECK(ref.bits <= 8 * (len - 2), "%zu bits used of %zu", ref.bits, 8 * (len - 2));
        FUZZ_CHECK(ref.alloc_size <= mask, "size beyond the word");
        for (size_t i = 0; i < ref.depth; i++)
            FUZZ_CHECK(full[i].kind == BTP_FRAME_RA && full[i].value <= mask,
                       "frame %zu: kind %d value 0x%llx", i, full[i].kind,
                       (unsigned long long)full[i].value);
        if (word_bits == 32)
            FUZZ_CHECK(ref.suspect == 0, "suspect flags on a 32-bit word");
        else
            FUZZ_CHECK((ref.suspect & ~BTP_LWS_SUSPECT_SIZE) >> ref.depth == 0,
                       "suspect flags beyond the depth");
        break;
    case BTP_E_LENGTH_MISMATCH:
        break;
    case BTP_E_OUT_OF_BITS:
    case BTP_E_BAD_REFERENCE:
    case BTP_E_BIT_COUNT_TOO_WIDE:
        FUZZ_CHECK(ref.error_bit < 8 * len, "error bit %zu of %zu", ref.error_bit, 8 * len);
        for (size_t i = len ? (size_t)(blob[0] >> 3) : 0; i < BTP_LWS_MAX_FRAMES; i++) {
            const uint8_t *b = (const uint8_t *)&full[i];
            for (size_t k = 0; k < sizeof full[i]; k++)
                FUZZ_CHECK(b[k] == 0xa5, "frame %zu written past the depth field", i);
        }
        break;
    default:
        FUZZ_CHECK(0, "undocumented status %d", st);
    }

    /* The caller's array size. */
    btp_frame *out = (btp_frame *)fuzz_guard_buf(&out_guard, max_frames * sizeof(btp_frame));
    btp_lws_info info;
    btp_status st2 = btp_lws_decode(blob, len, word_bits, out, max_frames, &info);
    if (st == BTP_OK && ref.depth > max_frames) {
        FUZZ_CHECK(st2 == BTP_E_LIMIT, "depth %zu into %zu frames: %d", ref.depth, max_frames,
                   st2);
        FUZZ_CHECK(info.depth == ref.depth && info.alloc_size == ref.alloc_size &&
                       info.suspect == ref.suspect,
                   "info differs under the limit");
    } else {
        FUZZ_CHECK(st2 == st, "status %d with %zu frames, %d with 31", st2, max_frames, st);
    }
    if (st == BTP_OK) {
        size_t k = ref.depth < max_frames ? ref.depth : max_frames;
        FUZZ_CHECK(fuzz_frames_equal(out, full, k), "frames differ");
    }
    /* No info is fine too. */
    btp_status st3 = btp_lws_decode(blob, len, word_bits, out, max_frames, NULL);
    FUZZ_CHECK(st3 == st2, "status %d without info, %d with", st3, st2);
    return 0;
}
