/*
 * The lws encoder checked from frames: shared by the lws round trip and the
 * CBF <-> lws transcoder targets.
 */
#ifndef BTPACK_FUZZ_LWS_CHECK_H
#define BTPACK_FUZZ_LWS_CHECK_H

#include <btpack/lws.h>

#include "guard.h"

/*
 * Encode frames[0..depth) and alloc_size as an lws blob (flags:
 * BTP_LWS_ENC_*) into a buffer of exactly the size needed, ending at a guard
 * page, and check: one byte less fails cleanly with the size needed; the
 * blob decodes to the same frames and size; `~m#` formatting and parsing
 * give the blob back; btp_lws_m_decode gives the frames back. The only
 * refusal allowed is BTP_E_UNREPRESENTABLE for a 64-bit frame with bit 63
 * set. Returns the blob's length, or 0 when it was refused.
 */
/* Split an lws target's input: an option byte (bit 0 the word size, 32 or
 * 64; bit 6 set: bits 1-5 give the caller's frame array size 0..31, else
 * 31) and the record, copied into `guard` so it ends at a guard page.
 * Returns the record (*len bytes), or NULL for an empty input. */
const uint8_t *fuzz_lws_input(const uint8_t *data, size_t size, fuzz_guard *guard,
                              unsigned *word_bits, size_t *max_frames, size_t *len);

size_t fuzz_lws_reencode(const btp_frame *frames, size_t depth, uint64_t alloc_size,
                         unsigned word_bits, unsigned flags);

#endif
