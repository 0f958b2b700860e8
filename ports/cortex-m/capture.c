/* btp_cm_capture: the PC, then the method's walk. */
#include "cm_mem.h"

btp_status btp_cm_capture(const btp_cm_fault *f, const btp_cm_layout *layout,
                          btp_cm_method method, uint32_t *addrs, size_t max, size_t *n,
                          int *truncated)
{
    if (n)
        *n = 0;
    if (truncated)
        *truncated = 0;
    if (!f || !layout || !method || !addrs || !n || max == 0 ||
        layout->text.lo >= layout->text.hi)
        return BTP_E_INVALID_ARGUMENT;
    btp_cm_chain c = {addrs, max, 0, 0};
    cm_push(&c, f->r[15] & ~1u);
    btp_status st = method(f, layout, &c);
    *n = c.n;
    if (truncated)
        *truncated = c.truncated;
    return st;
}
