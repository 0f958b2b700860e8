/* cbf: raw binary CBF; input may hold several streams back to back (each
 * ends at its end/trunc, as Swift's ring buffer stores them), output writes
 * them back to back. */
#include "format.h"

static int cbf_read_next(reader *r, trace *t)
{
    if (r->pos >= r->len)
        return 0;
    /* Streams are split at end/trunc, so the trailing-bytes rule never
     * applies between them; every other strict check does. */
    unsigned policy = cbf_policy(r->opt) & ~(unsigned)BTP_CBF_REJECT_TRAILING;
    size_t used = 0;
    r->loc.offset = r->pos;
    r->loc.has_offset = 1;
    if (cbf_to_trace(r, r->data + r->pos, r->len - r->pos, policy, r->pos, t, &used) < 0) {
        /* Where the next stream would start is unknown after a fault. */
        r->fatal = 1;
        return -1;
    }
    t->loc = r->loc;
    r->pos += used;
    return 1;
}

static int cbf_write(writer *w, const trace *t, strbuf *out)
{
    return cbf_from_trace(w, t, out);
}

const format fmt_cbf = {
    .name = "cbf",
    .help = "raw binary CBF streams, back to back",
    .binary = 1,
    .read_next = cbf_read_next,
    .write = cbf_write,
};
