/* CBF streams <-> the trace model, through the library's codec. */
#include "format.h"

#include <stdlib.h>

unsigned cbf_policy(const cli_options *opt)
{
    return opt->strict ? BTP_CBF_POLICY_STRICT : BTP_CBF_POLICY_DEFAULT;
}

int cbf_to_trace(reader *r, const uint8_t *p, size_t len, unsigned policy, uint64_t base,
                 trace *t, size_t *consumed)
{
    btp_cbf_decoder d;
    btp_cbf_run run;
    btp_status st = btp_cbf_decoder_init(&d, p, len, policy);
    trace_reset(t, st == BTP_OK ? btp_cbf_decoder_word_bits(&d) : 64);
    t->loc = r->loc;
    while (st == BTP_OK) {
        st = btp_cbf_decoder_next(&d, &run);
        if (st != BTP_OK)
            break;
        /* Runs are expanded here, bounded by --max-frames before any
         * allocation, so a rep of 2^64 fails at once. */
        if (rd_add_frame(r, t, run.frame, run.count) < 0) {
            *consumed = btp_cbf_decoder_consumed(&d);
            return -1;
        }
    }
    *consumed = btp_cbf_decoder_consumed(&d);
    if (st != BTP_END)
        return rd_error_at(r, base + btp_cbf_decoder_error_offset(&d), "%s (%s)",
                           btp_strerror(st), btp_status_name(st));
    t->truncated = btp_cbf_decoder_terminator(&d) == BTP_CBF_TERM_TRUNC;
    return 0;
}

int cbf_from_trace(writer *w, const trace *t, unsigned flags, strbuf *out)
{
    /* A trace without repeats takes the one-shot encoder's fast path; runs
     * go to the streaming encoder whole, so a run of 2^40 costs a few
     * bytes, never its expansion. The first guess of the size is right
     * unless a run needs several reps (16/32-bit words). */
    size_t cap = BTP_CBF_BOUND(t->n_runs) + 16, len = 0;
    for (int pass = 0; pass < 2; pass++) {
        char *buf = sb_reserve(out, cap);
        if (!buf)
            return wr_error(w, "out of memory");
        btp_status st;
        if (t->n_runs == t->n) {
            const btp_frame *f = trace_frames(t);
            st = f ? btp_cbf_encode(f, t->n, t->truncated, t->word_bits, flags, buf, cap, &len,
                                    NULL)
                   : BTP_E_OUT_OF_MEMORY;
        } else {
            btp_cbf_encoder e;
            st = btp_cbf_encoder_init(&e, buf, cap, t->word_bits, flags);
            for (size_t i = 0; st == BTP_OK && i < t->n_runs; i++)
                st = btp_cbf_encoder_add(&e, t->runs[i].frame, t->runs[i].count);
            if (st == BTP_OK)
                st = btp_cbf_encoder_finish(&e, t->truncated, &len);
            if (st == BTP_E_BUFFER_TOO_SMALL && pass == 0) {
                cap = btp_cbf_encoder_needed(&e);
                continue;
            }
        }
        if (st != BTP_OK)
            return wr_error(w, "cannot encode as CBF: %s", btp_strerror(st));
        out->len += len;
        out->data[out->len] = 0;
        return 0;
    }
    return wr_error(w, "cannot encode as CBF: %s", btp_strerror(BTP_E_BUFFER_TOO_SMALL));
}
