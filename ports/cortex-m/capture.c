/* btp_cm_capture: the PC, the stacked lr when it is still the faulting
 * function's return address, then the method's walk. */
#include "cm_mem.h"

btp_status btp_cm_capture(const btp_cm_fault *f, const btp_cm_layout *layout,
                          btp_cm_method method, uint32_t *addrs, size_t max, size_t *n,
                          int *truncated)
{
    if (n)
        *n = 0;
    if (truncated)
        *truncated = 0;
    if (!f || !layout || !addrs || !n || max == 0 || layout->text.lo >= layout->text.hi)
        return BTP_E_INVALID_ARGUMENT;
    cm_chain c = {addrs, max, 0, 0};
    btp_status st = BTP_OK;
    cm_push(&c, f->r[15] & ~1u);
    if (method == BTP_CM_METHOD_EHABI) {
        /* The unwinder decides itself whether lr is needed. */
        st = cm_walk_ehabi(f, layout, &c);
    } else if (method == BTP_CM_METHOD_FP || method == BTP_CM_METHOD_SCAN) {
        if (cm_lr_is_return(f, layout->text))
            cm_push(&c, f->r[14] & ~1u);
        if (method == BTP_CM_METHOD_FP)
            cm_walk_fp(f, layout, &c);
        else
            cm_walk_scan(f, layout, &c);
    } else {
        st = BTP_E_INVALID_ARGUMENT;
    }
    *n = c.n;
    if (truncated)
        *truncated = c.truncated;
    return st;
}
