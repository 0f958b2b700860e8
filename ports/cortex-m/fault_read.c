/* The registers at the fault, from the stacked exception frame. */
#include "cm_mem.h"

/* Basic frame: r0-r3, r12, lr, pc, xPSR. The FPU-extended frame adds
 * S0-S15, FPSCR and a reserved word. The ARMv8-M additional state context
 * (integrity signature, reserved, r4-r11) sits below the basic frame. */
#define FRAME_WORDS 8u
#define FPU_WORDS 18u
#define ADDITIONAL_WORDS 10u

btp_status btp_cm_fault_read(btp_cm_fault *f, uint32_t frame, const btp_cm_entry *entry,
                             btp_cm_range stack)
{
    if (!f || !entry)
        return BTP_E_INVALID_ARGUMENT;
    for (unsigned i = 0; i < 16; i++)
        f->r[i] = 0;
    for (unsigned i = 0; i < 8; i++)
        f->r[4 + i] = entry->r4_r11[i];
    uint32_t er = entry->exc_return;
    f->exc_return = er;
    f->frame = frame;
    f->xpsr = 0;
    f->flags = 0;
    /* EXC_RETURN is 0xFF in its top byte on every M profile (0xF0 on
     * ARMv8.1-M with the FNC_RETURN forms excluded: those are not exception
     * returns). */
    if ((er >> 24) != 0xFFu)
        return BTP_E_CM_EXC_RETURN;
    if (er & 4u)
        f->flags |= BTP_CM_FAULT_PSP;
    if (!(er & 8u))
        f->flags |= BTP_CM_FAULT_HANDLER;
    if (!(er & 0x10u))
        f->flags |= BTP_CM_FAULT_FPU_FRAME;
#if defined(__ARM_ARCH_8M_MAIN__) || defined(__ARM_ARCH_8M_BASE__) ||                          \
    defined(__ARM_ARCH_8_1M_MAIN__) || defined(BTP_CM_ASSUME_V8M)
    /* DCRS (bit 5) clear: the callee registers were stacked with the frame,
     * below it; they are the values at the fault, not what the entry saw. */
    if (!(er & 0x20u)) {
        uint32_t w;
        for (unsigned i = 0; i < 8; i++) {
            if (!cm_read32(stack, frame + 8u + 4u * i, &w))
                return BTP_E_CM_FRAME_BOUNDS;
            f->r[4 + i] = w;
        }
        f->flags |= BTP_CM_FAULT_ADDITIONAL;
        frame += 4u * ADDITIONAL_WORDS;
        f->frame = frame;
    }
#endif
    uint32_t words = FRAME_WORDS + ((f->flags & BTP_CM_FAULT_FPU_FRAME) ? FPU_WORDS : 0);
    if ((frame & 3u) || frame > UINT32_MAX - 4u * words - 4u || !cm_in(stack, frame, 4u * words))
        return BTP_E_CM_FRAME_BOUNDS;
    uint32_t v[FRAME_WORDS];
    for (unsigned i = 0; i < FRAME_WORDS; i++)
        (void)cm_read32(stack, frame + 4u * i, &v[i]); /* in bounds: checked above */
    f->r[0] = v[0];
    f->r[1] = v[1];
    f->r[2] = v[2];
    f->r[3] = v[3];
    f->r[12] = v[4];
    f->r[14] = v[5];
    f->r[15] = v[6];
    f->xpsr = v[7];
    uint32_t sp = frame + 4u * words;
    /* xPSR bit 9: the hardware aligned the frame to 8 bytes by skipping a
     * word above it. */
    if (v[7] & (1u << 9)) {
        sp += 4u;
        f->flags |= BTP_CM_FAULT_PADDED;
    }
    f->r[13] = sp;
    return BTP_OK;
}
