/* What a Thumb return address looks like: the instruction before it is a
 * call. Shared by the frame-record walk, the stack scan and the lr test. */
#include "cm_mem.h"

int cm_return_address(btp_cm_range text, uint32_t ra, uint32_t *target)
{
    uint32_t a = ra & ~(uint32_t)1;
    uint16_t hw1, hw2;
    if (!(ra & 1) || a < 4 || !cm_in(text, a - 4, 4))
        return 0;
    /* BLX Rm (16-bit): 0100 0111 1 Rm 000 */
    if (cm_read16(text, a - 2, &hw2) && (hw2 & 0xFF87u) == 0x4780u) {
        if (target)
            *target = 0;
        return 1;
    }
    /* BL (32-bit): 11110 S imm10, 11 J1 1 J2 imm11 */
    if (!cm_read16(text, a - 4, &hw1) || !cm_read16(text, a - 2, &hw2))
        return 0;
    if ((hw1 & 0xF800u) != 0xF000u || (hw2 & 0xD000u) != 0xD000u)
        return 0;
    if (target) {
        uint32_t s = (hw1 >> 10) & 1u;
        uint32_t i1 = !(((hw2 >> 13) & 1u) ^ s), i2 = !(((hw2 >> 11) & 1u) ^ s);
        uint32_t off = (s << 24) | (i1 << 23) | (i2 << 22) | ((uint32_t)(hw1 & 0x3FFu) << 12) |
                       ((uint32_t)(hw2 & 0x7FFu) << 1);
        if (s)
            off |= 0xFE000000u; /* sign-extend from 25 bits */
        *target = a + off;
    }
    return 1;
}

int cm_lr_is_return(const btp_cm_fault *f, btp_cm_range text)
{
    uint32_t target, pc = f->r[15];
    if (!cm_return_address(text, f->r[14], &target))
        return 0;
    return target == 0 || (target <= pc && pc - target < CM_LEAF_MAX);
}
