/* Stack scan: every word from the SP up that is a return address into
 * text, i.e. right after a BL or BLX. It finds frames without any help from
 * the build, and also return addresses of calls that have already returned
 * and left their value behind. */
#include "cm_mem.h"

btp_status btp_cm_walk_scan(const btp_cm_fault *f, const btp_cm_layout *l, btp_cm_chain *c)
{
    if (cm_lr_is_return(f, l->text) && !cm_push(c, f->r[14] & ~1u))
        return BTP_OK;
    uint32_t a = (f->r[13] + 3u) & ~3u;
    uint32_t left = l->scan_words ? l->scan_words : UINT32_MAX;
    for (; left && a >= l->stack.lo && a < l->stack.hi; a += 4, left--) {
        uint32_t w;
        if (!cm_read32(l->stack, a, &w))
            break;
        if (cm_return_address(l->text, w, NULL) && !cm_push(c, w & ~1u))
            break;
        if (a > UINT32_MAX - 4u)
            break;
    }
    return BTP_OK;
}
