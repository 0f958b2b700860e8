/* The firmware's view of the boards it runs on under QEMU: console output
 * (CMSDK UART or semihosting), exit, the command line, the SysTick timer,
 * and the memory the linker script lays out. */
#ifndef FW_BOARD_H
#define FW_BOARD_H

#include <stddef.h>
#include <stdint.h>

#define REG32(a) (*(volatile uint32_t *)(uintptr_t)(a))

/* System control block and friends (the same on ARMv6-M/7-M/8-M). */
#define SCB_VTOR REG32(0xE000ED08u)
#define SCB_CCR REG32(0xE000ED14u)
#define SCB_SHCSR REG32(0xE000ED24u)
#define SCB_CFSR REG32(0xE000ED28u)
#define SCB_HFSR REG32(0xE000ED2Cu)
#define SCB_MMFAR REG32(0xE000ED34u)
#define SCB_BFAR REG32(0xE000ED38u)
#define SCB_CPACR REG32(0xE000ED88u)
#define SYST_CSR REG32(0xE000E010u)
#define SYST_RVR REG32(0xE000E014u)
#define SYST_CVR REG32(0xE000E018u)
#define MPU_CTRL REG32(0xE000ED94u)
#define MPU_RNR REG32(0xE000ED98u)
#define MPU_RBAR REG32(0xE000ED9Cu)
#define MPU_RASR REG32(0xE000EDA0u) /* ARMv7-M */
#define MPU_RLAR REG32(0xE000EDA0u) /* ARMv8-M */
#define MPU_MAIR0 REG32(0xE000EDC0u)

/* Linker script symbols. */
extern uint32_t __text_start[], __text_end[], __stack_lo[], __stack_hi[];

void console_write(const void *bytes, size_t n);
void console_str(const char *s);
/* console_write as a btp_cm_sink. */
int console_sink(void *ctx, const void *bytes, size_t n);
void console_hex(uint32_t v);
void console_dec(uint32_t v);
/* The semihosting command line (QEMU -semihosting-config arg=...), or "". */
const char *board_cmdline(void);
void board_exit(int status) __attribute__((noreturn));
/* The heap scenarios (fw/heap.c): 0 when `kind` is one of them (it ran). */
int heap_run(const char *kind);

#endif
