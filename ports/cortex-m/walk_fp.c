/*
 * Walk of GCC's Thumb frame records. A function built with
 * -fno-omit-frame-pointer starts with push {..., r7, [r8-r11,] lr} and then
 * sets r7 to its SP after reserving its locals. Its caller's r7 was equal to
 * the caller's SP at the call, which is where the push started: so the
 * pushed lr lies at (caller's r7 - 4) and the pushed r7 (= caller's r7) 8
 * to 24 bytes below the value it holds. The record is found by that
 * property, not at a fixed offset from r7 (GCC puts r7 below the locals,
 * and it may not be set yet when the fault hits the prologue), searching
 * upwards from the SP, then from each saved r7 in turn.
 */
#include "cm_mem.h"

/* Largest frame (locals + saved registers) searched for a record. */
#define FP_MAX_FRAME 4096u
/* The saved r7 sits below lr and at most r8-r11. */
#define FP_MIN_GAP 8u
#define FP_MAX_GAP 24u

btp_status btp_cm_walk_fp(const btp_cm_fault *f, const btp_cm_layout *l, btp_cm_chain *c)
{
    if (cm_lr_is_return(f, l->text) && !cm_push(c, f->r[14] & ~1u))
        return BTP_OK;
    uint32_t at = (f->r[13] + 3u) & ~3u;
    /* Each step moves `at` strictly up the stack: at most stack/4 steps. */
    while (at >= l->stack.lo && at < l->stack.hi) {
        uint32_t end = l->stack.hi - at > FP_MAX_FRAME ? at + FP_MAX_FRAME : l->stack.hi;
        uint32_t next = 0, ra = 0;
        for (uint32_t a = at; a < end; a += 4) {
            uint32_t w;
            if (!cm_read32(l->stack, a, &w))
                break;
            if (w <= a || w - a < FP_MIN_GAP || w - a > FP_MAX_GAP || (w & 3u))
                continue;
            if (cm_read32(l->stack, w - 4u, &ra) && cm_return_address(l->text, ra, NULL)) {
                next = w;
                break;
            }
        }
        if (!next || !cm_push(c, ra & ~1u))
            return BTP_OK;
        at = next;
    }
    return BTP_OK;
}
