/* What the lws (`~m#`) and lws-b (`~b#`) formats share: the checks that
 * decide whether a trace can be written as a libwebsockets record (each
 * lossy direction's reply, spec/lws.md section 7) and the warnings about
 * values libwebsockets truncated. */
#ifndef BTPACK_TOOLS_FORMATS_LWS_COMMON_H
#define BTPACK_TOOLS_FORMATS_LWS_COMMON_H

#include "format.h"

/*
 * Check that t can be written as an lws record and give its size (the
 * trace's, else --alloc-size, else 0). Errors (wr_error, returns -1): a
 * word size other than 32/64, an omit frame, more than 31 frames, a
 * truncated trace without --allow-truncated. Warnings (returns 0): pc/async
 * frames written as addresses, a truncated trace written without its mark.
 */
int lws_check_trace(writer *w, const trace *t, uint64_t *size);

/* Refuse word sizes libwebsockets does not have (rd_error, -1); 0 if fine. */
int lws_reader_word_bits(reader *r);

/* A decoded record (info->depth frames f, info->alloc_size) into t: frames
 * are return addresses, the size is kept. Warns about values showing
 * libwebsockets' 64-bit truncation signature and about 32-bit values folded
 * back from the x86_64 tool's sign extension (`column`: where the record
 * starts). Returns 1, or -1 (rd_error). */
int lws_record(reader *r, size_t column, const btp_frame *f, const btp_lws_info *info,
               trace *t);

#endif
