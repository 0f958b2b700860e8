/* Shared by the lws and lws-b formats (see lws_common.h). */
#include "lws_common.h"

#include <stdio.h>
#include <string.h>

#include "diag.h"

int lws_check_trace(writer *w, const trace *t, uint64_t *size)
{
    size_t addr_kinds = 0;
    if (t->word_bits != 32 && t->word_bits != 64)
        return wr_error(w, "lws records hold 32- or 64-bit words, not %u-bit", t->word_bits);
    if (t->n > BTP_LWS_MAX_FRAMES)
        return wr_error(w, "%zu frames: lws records hold at most %d (%s)", t->n,
                        BTP_LWS_MAX_FRAMES, btp_status_name(BTP_E_DEPTH_TOO_LARGE));
    for (size_t i = 0, at = 0; i < t->n_runs; at += (size_t)t->runs[i++].count) {
        if (t->runs[i].frame.kind == BTP_FRAME_OMIT)
            return wr_error(w, "frame %zu omits %llu frames: lws cannot say frames are missing",
                            at + 1, (unsigned long long)t->runs[i].frame.value);
        if (t->runs[i].frame.kind != BTP_FRAME_RA)
            addr_kinds += (size_t)t->runs[i].count;
    }
    if (t->truncated && !w->opt->allow_truncated)
        return wr_error(w, "the trace is truncated and lws cannot mark that "
                           "(--allow-truncated writes the frames present)");
    if (t->truncated)
        diag_repeat(t->input, &t->loc, "truncated trace written without its mark");
    if (addr_kinds)
        diag_repeat(t->input, &t->loc,
             "%zu pc/async frame%s written as plain addresses (lws frames read back as ra)",
             addr_kinds, addr_kinds == 1 ? "" : "s");
    *size = t->has_alloc_size ? t->alloc_size : w->opt->alloc_size;
    return 0;
}

static void warn_info(reader *r, size_t column, const btp_lws_info *info)
{
    if (info->suspect & ~BTP_LWS_SUSPECT_SIZE) {
        char list[160];
        size_t o = 0;
        for (size_t i = 0; i < BTP_LWS_MAX_FRAMES && o + 8 < sizeof list; i++)
            if (info->suspect >> i & 1)
                o += (size_t)snprintf(list + o, sizeof list - o, "%s%zu", o ? "," : "", i + 1);
        diag_repeat(r->name, &r->loc,
             "column %zu: frame%s %s show%s libwebsockets' 64-bit truncation (only the low 31 "
             "bits are reliable)", column, strchr(list, ',') ? "s" : "", list,
             strchr(list, ',') ? "" : "s");
    }
    if (info->suspect & BTP_LWS_SUSPECT_SIZE)
        diag_repeat(r->name, &r->loc,
             "column %zu: the allocation size shows libwebsockets' 64-bit truncation", column);
    if (info->folded)
        diag_repeat(r->name, &r->loc,
             "column %zu: %u sign-extended value%s folded back to 32 bits", column,
             info->folded, info->folded == 1 ? "" : "s");
}

int lws_record(reader *r, size_t column, const btp_frame *f, const btp_lws_info *info, trace *t)
{
    warn_info(r, column, info);
    trace_reset(t, r->word_bits);
    t->loc = r->loc;
    t->has_alloc_size = 1;
    t->alloc_size = info->alloc_size;
    for (size_t i = 0; i < info->depth; i++)
        if (rd_add_frame(r, t, f[i], 1) < 0)
            return -1;
    return 1;
}

int lws_reader_word_bits(reader *r)
{
    if (r->word_bits == 32 || r->word_bits == 64)
        return 0;
    r->fatal = 1;
    return rd_error(r, "lws records come from 32- or 64-bit hosts: --word-bits 32 or 64, not %u",
                    r->word_bits);
}
