/* cbf: raw binary CBF; input may hold several streams back to back (each
 * ends at its end/trunc, as Swift's ring buffer stores them), output writes
 * them back to back. */
#include "format.h"

static int cbf_read_next(reader *r, trace *t)
{
    /* Streams are split at end/trunc, so the trailing-bytes rule never
     * applies between them; every other strict check does. */
    unsigned policy = cbf_policy(r->opt) & ~(unsigned)BTP_CBF_REJECT_TRAILING;
    r->loc.offset = r->pos;
    r->loc.has_offset = 1;
    for (size_t need = 256;; need *= 2) {
        size_t have, used = 0;
        const uint8_t *p = rd_bytes(r, need, &have);
        if (!have)
            return r->fatal ? -1 : 0;
        int rc = cbf_to_trace(r, p, have, policy, r->pos, t, &used);
        /* A stream (or fault) that runs to the edge of the window may go
         * on past it: decode again with more of the input. */
        int edge = rc < 0 ? r->err_loc.offset - r->pos + 40 >= have : used == have;
        if (!edge || r->in_end) {
            if (rc < 0) {
                r->fatal = 1; /* where the next stream would start is unknown */
                return -1;
            }
            t->loc = r->loc;
            rd_skip(r, used);
            return 1;
        }
        if (have >= BINARY_MAX_RECORD) {
            r->fatal = 1;
            return rd_error_at(r, r->pos, "a CBF stream longer than %zu bytes",
                               BINARY_MAX_RECORD);
        }
        if (need < have)
            need = have;
    }
}

static int cbf_write(writer *w, const trace *t, strbuf *out)
{
    return cbf_from_trace(w, t, 0, out);
}

const format fmt_cbf = {
    .name = "cbf",
    .help = "raw binary CBF streams, back to back",
    .binary = 1,
    .read_next = cbf_read_next,
    .write = cbf_write,
};
