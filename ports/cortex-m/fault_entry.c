/*
 * The naked fault entry. Naked, because a compiled prologue would move the
 * SP and clobber registers before they are saved. It reads EXC_RETURN from
 * lr: bit 2 says whether the hardware stacked the frame on the process
 * stack (PSP) or the main stack (MSP). r4-r11 are not part of the hardware
 * frame, so they are saved here, with EXC_RETURN, as a btp_cm_entry on the
 * main stack; then btp_cm_on_fault(frame, entry) runs. If it returns, the
 * registers are restored and the exception returns.
 */
#include <btpack/cortex_m.h>

#if defined(__thumb__) && defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M'

#if defined(__ARM_ARCH_6M__) || defined(__ARM_ARCH_8M_BASE__)
/* ARMv6-M / ARMv8-M baseline: push takes r0-r7 and lr only, no IT blocks,
 * tst takes registers. */
__attribute__((naked)) void btp_cm_fault_entry(void)
{
    __asm volatile(
        ".syntax unified\n"      /* GCC hands Thumb-1 inline asm over in divided syntax */
        "mov r1, lr\n"
        "push {r1, r2}\n"        /* exc_return, pad */
        "mov r0, r8\n"
        "mov r1, r9\n"
        "mov r2, r10\n"
        "mov r3, r11\n"
        "push {r0-r3}\n"         /* r8-r11 */
        "push {r4-r7}\n"         /* r4-r7 */
        "mov r1, lr\n"
        "movs r0, #4\n"
        "tst r0, r1\n"
        "bne 1f\n"
        "mrs r0, msp\n"
        "adds r0, #40\n"         /* the MSP before the pushes above */
        "b 2f\n"
        "1: mrs r0, psp\n"
        "2: mov r2, sp\n"
        "mov r1, r2\n"
        "bl btp_cm_on_fault\n"
        "pop {r4-r7}\n"
        "pop {r0-r3}\n"
        "mov r8, r0\n"
        "mov r9, r1\n"
        "mov r10, r2\n"
        "mov r11, r3\n"
        "pop {r0, r1}\n"
        "bx r0\n");
}
#else
__attribute__((naked)) void btp_cm_fault_entry(void)
{
    __asm volatile(
        "tst lr, #4\n"
        "ite eq\n"
        "mrseq r0, msp\n"
        "mrsne r0, psp\n"
        "mov r1, lr\n"
        "push {r1, r2}\n"        /* exc_return, pad */
        "push {r4-r11}\n"
        "mov r1, sp\n"
        "bl btp_cm_on_fault\n"
        "pop {r4-r11}\n"
        "pop {r0, r1}\n"
        "bx r0\n");
}
#endif

#endif
