/*
 * btp_cm_here: the caller's registers, for a capture outside a fault (an
 * allocator recording who allocates, an assertion). Naked, because a
 * compiled prologue would move the SP and clobber r4-r11 before they are
 * read. What the walks need is the SP, the callee-saved registers (r7 for
 * the fp walk, all of them for the EHABI unwinder) and a PC in the caller:
 * the return address of this call. lr is left 0 (the caller has saved its
 * own return address to make this call), so no method takes it for a
 * leaf's.
 */
#include <btpack/cortex_m.h>

#include <stddef.h>

#if defined(__thumb__) && defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M'

/* The stores below hard-code these offsets. */
_Static_assert(offsetof(btp_cm_fault, r) == 0 && offsetof(btp_cm_fault, xpsr) == 64 &&
                   offsetof(btp_cm_fault, flags) == 76 && sizeof(btp_cm_fault) == 80,
               "btp_cm_fault layout");

/* Thumb-1 instructions only: the same code for ARMv6-M, ARMv7-M, ARMv8-M. */
__attribute__((naked)) void btp_cm_here(btp_cm_fault *f)
{
    __asm volatile(
        ".syntax unified\n"
        "movs r1, #0\n"
        "str r1, [r0, #0]\n"   /* r0-r3, r12: not kept (caller-saved) */
        "str r1, [r0, #4]\n"
        "str r1, [r0, #8]\n"
        "str r1, [r0, #12]\n"
        "str r1, [r0, #48]\n"
        "str r1, [r0, #56]\n"  /* lr */
        "str r1, [r0, #68]\n"  /* exc_return */
        "str r1, [r0, #72]\n"  /* frame */
        "str r1, [r0, #76]\n"  /* flags */
        "str r4, [r0, #16]\n"
        "str r5, [r0, #20]\n"
        "str r6, [r0, #24]\n"
        "str r7, [r0, #28]\n"
        "mov r1, r8\n"
        "str r1, [r0, #32]\n"
        "mov r1, r9\n"
        "str r1, [r0, #36]\n"
        "mov r1, r10\n"
        "str r1, [r0, #40]\n"
        "mov r1, r11\n"
        "str r1, [r0, #44]\n"
        "mov r1, sp\n"
        "str r1, [r0, #52]\n"
        "mov r1, lr\n"
        "str r1, [r0, #60]\n"  /* pc: the return address into the caller */
        "movs r1, #1\n"
        "lsls r1, r1, #24\n"
        "str r1, [r0, #64]\n"  /* xpsr: the Thumb bit */
        "bx lr\n");
}

#endif
