/*
 * Startup for the test firmware: vector table, reset, console and exit.
 * Every fault vector goes to btp_cm_fault_entry (ports/cortex-m).
 */
#include <btpack/cortex_m.h>

#include "board.h"

extern uint32_t __data_load[], __data_start[], __data_end[], __bss_start[], __bss_end[];
extern uint32_t __vectors[];
int main(void);
void Reset_Handler(void);

static void unexpected(void)
{
    console_str("unexpected exception\n");
    board_exit(3);
}

#if !defined(FW_NO_VTOR)
/* Boot words read by the core at reset from address 0 (the start of code
 * memory): SP and reset. The full table follows at a VTOR-aligned address
 * (on the AN385 the first 256 bytes are made inaccessible, to catch NULL).
 * A core without VTOR (Cortex-M0) has the table itself at 0. */
__attribute__((section(".boot"), used)) static void (*const boot[2])(void) = {
    (void (*)(void))(uintptr_t)__stack_hi, Reset_Handler};
#endif

#if defined(FW_NEWLIB)
#define FAULT unexpected /* a unit test that faults fails */
#else
#define FAULT btp_cm_fault_entry
#endif

__attribute__((section(".vectors"), used)) static void (*const vectors[16])(void) = {
    (void (*)(void))(uintptr_t)__stack_hi,
    Reset_Handler,
    FAULT, /* NMI */
    FAULT, /* HardFault */
    FAULT, /* MemManage */
    FAULT, /* BusFault */
    FAULT, /* UsageFault */
    FAULT, /* SecureFault (ARMv8-M) */
    0, 0, 0,
    unexpected, /* SVCall */
    unexpected, /* DebugMonitor */
    0,
    unexpected, /* PendSV */
    unexpected, /* SysTick */
};

__attribute__((noreturn)) void Reset_Handler(void)
{
    for (uint32_t *s = __data_load, *d = __data_start; d < __data_end;)
        *d++ = *s++;
    for (uint32_t *d = __bss_start; d < __bss_end;)
        *d++ = 0;
#if !defined(FW_NO_VTOR)
    SCB_VTOR = (uint32_t)(uintptr_t)vectors;
#endif
#if defined(__ARM_FP)
    SCB_CPACR |= 0xFu << 20; /* CP10, CP11: full access */
    __asm volatile("dsb\n isb" ::: "memory");
#endif
#if defined(FW_NEWLIB)
    /* A program on newlib (the unit tests): stdio over semihosting. */
    extern void initialise_monitor_handles(void);
    extern void exit(int) __attribute__((noreturn));
    initialise_monitor_handles();
    exit(main());
#else
    board_exit(main());
#endif
}

/* ---- semihosting ---- */

static uint32_t semihost(uint32_t op, const void *arg)
{
    register uint32_t r0 __asm("r0") = op;
    register const void *r1 __asm("r1") = arg;
    __asm volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
    return r0;
}

void board_exit(int status)
{
    /* SYS_EXIT with ADP_Stopped_ApplicationExit (0x20026) exits QEMU with
     * status 0, ADP_Stopped_RunTimeErrorUnknown (0x20023) with status 1. */
    semihost(0x18, (const void *)(uintptr_t)(status ? 0x20023u : 0x20026u));
    for (;;)
        ;
}

const char *board_cmdline(void)
{
    static char buf[128];
    struct {
        char *p;
        uint32_t n;
    } arg = {buf, sizeof buf};
    if (semihost(0x15, &arg) != 0)
        buf[0] = 0;
    return buf;
}

#if defined(FW_UART)
/* CMSDK APB UART0 of the MPS2 AN385/AN386 images. */
#define UART_DATA REG32(FW_UART + 0x0u)
#define UART_STATE REG32(FW_UART + 0x4u)
#define UART_CTRL REG32(FW_UART + 0x8u)
#define UART_BAUDDIV REG32(FW_UART + 0x10u)

void console_write(const void *bytes, size_t n)
{
    const uint8_t *b = bytes;
    if (!(UART_CTRL & 1u)) {
        UART_BAUDDIV = 16;
        UART_CTRL = 1; /* TX enable */
    }
    while (n--) {
        while (UART_STATE & 1u) /* TX full */
            ;
        UART_DATA = *b++;
    }
}
#else
/* Semihosting SYS_WRITE0, a NUL-terminated piece at a time. */
void console_write(const void *bytes, size_t n)
{
    const char *b = bytes;
    char chunk[65];
    while (n) {
        size_t k = n < 64 ? n : 64;
        for (size_t i = 0; i < k; i++)
            chunk[i] = b[i];
        chunk[k] = 0;
        semihost(0x04, chunk);
        b += k;
        n -= k;
    }
}
#endif

int console_sink(void *ctx, const void *bytes, size_t n)
{
    (void)ctx;
    console_write(bytes, n);
    return 0;
}

void console_str(const char *s)
{
    size_t n = 0;
    while (s[n])
        n++;
    console_write(s, n);
}

void console_hex(uint32_t v)
{
    char t[10] = "0x";
    for (int i = 0; i < 8; i++)
        t[2 + i] = "0123456789abcdef"[(v >> (28 - 4 * i)) & 15];
    console_write(t, 10);
}

void console_dec(uint32_t v)
{
    char t[10];
    int i = 10;
    do {
        t[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    console_write(t + i, (size_t)(10 - i));
}
