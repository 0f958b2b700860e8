/*
 * Test firmware: faults on purpose and reports the call chain by every
 * capture method. The scenario is the first word of the semihosting command
 * line:
 *   null    read through a NULL pointer (the MPU makes address 0 fault; on
 *           the micro:bit, without MPU, a read where nothing answers)
 *   undef   an undefined instruction
 *   div0    an integer division by zero with CCR.DIV_0_TRP set
 *   leaf    a NULL read in a leaf function that keeps no frame
 *   psp     a NULL read in a thread running on the process stack
 *   fpu     a NULL read after floating-point work (FPU-extended frame)
 *   reset   as null, then the EHABI record also goes to RAM that survives
 *           a reset (.noinit), the core resets, and the new boot prints it:
 *           "saved cbf HEX"
 *   bench   no fault: instructions per frame of the CBF encoders (streaming,
 *           and the 32-bit chain encoder the records use)
 *   heap-ehabi, heap-fp, heap-scan
 *           no fault: an instrumented allocator's heap records (fw/heap.c)
 * Each fault's chain is main -> run -> level1 -> level2 (through a function
 * pointer) -> s_<kind> -> f_<kind>; tests/embedded/qemu_faults.py checks
 * what each method recovers against it. Output lines:
 *   fault kind=K status=S flags=F pc=.. lr=.. sp=.. cfsr=.. hfsr=..
 *   method NAME status=S n=N truncated=T     then    cbf HEX
 *   lws ~m#...                                (the EHABI chain)
 *   done
 */
#include <btpack/cortex_m.h>

#include "board.h"

#define NOINLINE __attribute__((noinline))

static const char *kind = "";
/* The stack of the thread the psp scenario runs. */
static uint64_t thread_stack[256];
/* The invalid pointer the read faults use, unknown to the compiler: NULL
 * (the MPU makes it fault), or on a board without an MPU an address where
 * nothing answers (a bus error). */
#ifndef FW_BAD_ADDR
#define FW_BAD_ADDR 0u
#endif
static volatile uintptr_t bad_ptr = FW_BAD_ADDR;
static volatile int sink_int;

NOINLINE static int f_null(volatile int *p)
{
    return *p + 1;
}

NOINLINE static int s_null(void)
{
    return f_null((volatile int *)bad_ptr) + 1;
}

NOINLINE static int f_undef(int x)
{
    __asm volatile("udf #7");
    return x + 2;
}

NOINLINE static int s_undef(void)
{
    return f_undef(sink_int) + 1;
}

#if defined(__ARM_ARCH_7M__) || defined(__ARM_ARCH_7EM__) || defined(__ARM_ARCH_8M_MAIN__)
NOINLINE static int f_div0(volatile int *a, volatile int *b)
{
    int q = *a / *b;
    return q + 3;
}
#else
/* No divide instruction (ARMv6-M): not run (qemu_faults.py). */
NOINLINE static int f_div0(volatile int *a, volatile int *b)
{
    return *a + *b;
}
#endif

NOINLINE static int s_div0(void)
{
    volatile int a = 7, b = 0;
    return f_div0(&a, &b) + 1;
}

/* A leaf without a frame: no push, lr still holds the return address. */
__attribute__((noinline, optimize("omit-frame-pointer"))) static int f_leaf(volatile int *p)
{
    return *p;
}

NOINLINE static int s_leaf(void)
{
    return f_leaf((volatile int *)bad_ptr) + 1;
}

#if defined(__ARM_FP)
NOINLINE static int f_fpu(volatile float *x)
{
    float v = *x * 1.5f + 0.25f;
    return (int)v + *(volatile int *)bad_ptr;
}

NOINLINE static int s_fpu(void)
{
    volatile float x = 3.0f;
    return f_fpu(&x) + 1;
}
#endif

NOINLINE static int level2(int (*fn)(void), int x)
{
    return fn() + x;
}

NOINLINE static int level1(int (*fn)(void))
{
    return level2(fn, 3) * 2;
}

/* The thread for the psp scenario: runs on thread_stack. */
NOINLINE static int thread_entry(void)
{
    return level1(s_null) + 5;
}

/* Switch the thread mode stack to PSP = top of thread_stack, call
 * thread_entry there, switch back. */
NOINLINE static int run_on_psp(void)
{
    int r;
    uint32_t top = (uint32_t)(uintptr_t)(thread_stack + sizeof thread_stack / sizeof thread_stack[0]);
    __asm volatile(".syntax unified\n" /* GCC gives Thumb-1 inline asm divided syntax */
                   "msr psp, %1\n"
                   "mrs r0, control\n"
                   "movs r1, #2\n"
                   "orrs r0, r1\n"
                   "msr control, r0\n"
                   "isb\n"
                   "bl %c2\n"
                   "mov %0, r0\n"
                   "mrs r1, control\n"
                   "movs r2, #2\n"
                   "bics r1, r2\n"
                   "msr control, r1\n"
                   "isb\n"
                   : "=r"(r)
                   : "r"(top), "i"(thread_entry)
                   : "r0", "r1", "r2", "r3", "r12", "lr", "memory", "cc");
    return r;
}

/* Make address 0 fault: on ARMv7-M a no-access region over the first 256
 * bytes; on ARMv8-M (no such access type) regions for code and RAM only,
 * without the default map. */
static void mpu_guard_null(void)
{
#if defined(__ARM_ARCH_8M_MAIN__)
    MPU_MAIR0 = 0xFFu; /* attribute 0: normal memory, write-back */
    MPU_RNR = 0;
    MPU_RBAR = ((uint32_t)(uintptr_t)__text_start & ~0x1Fu) | (3u << 1); /* RO, any */
    MPU_RLAR = (((uint32_t)(uintptr_t)__text_end - 1u) & ~0x1Fu) | 1u;
    MPU_RNR = 1;
    MPU_RBAR = (FW_RAM_BASE & ~0x1Fu) | (1u << 1) | 1u; /* RW any, XN */
    MPU_RLAR = ((FW_RAM_BASE + FW_RAM_SIZE - 1u) & ~0x1Fu) | 1u;
    MPU_CTRL = 1u; /* ENABLE, no PRIVDEFENA */
#elif defined(__ARM_ARCH_7M__) || defined(__ARM_ARCH_7EM__)
    MPU_RNR = 0;
    MPU_RBAR = 0;
    MPU_RASR = (1u << 28) | (7u << 1) | 1u; /* XN, AP=no access, 256 bytes, enabled */
    MPU_CTRL = 1u | 4u;                     /* ENABLE | PRIVDEFENA */
#endif
    __asm volatile("dsb\n isb" ::: "memory");
}

static int streq(const char *a, const char *b)
{
    while (*a && *a == *b)
        a++, b++;
    return *a == *b;
}

NOINLINE static int run(const char *k)
{
    if (streq(k, "null") || streq(k, "reset"))
        return level1(s_null);
    if (streq(k, "undef"))
        return level1(s_undef);
    if (streq(k, "div0"))
        return level1(s_div0);
    if (streq(k, "leaf"))
        return level1(s_leaf);
    if (streq(k, "psp"))
        return run_on_psp();
#if defined(__ARM_FP)
    if (streq(k, "fpu"))
        return level1(s_fpu);
#endif
    return -1;
}

/* A record that survives a reset: RAM the startup neither loads nor
 * clears. */
#define SAVED_MAGIC 0xB7AC0DE5u
static struct {
    uint32_t magic;
    uint32_t len;
    uint8_t bytes[BTP_CM_CBF_MAX(32)];
} saved __attribute__((section(".noinit")));

static int ram_sink(void *ctx, const void *bytes, size_t n)
{
    (void)ctx;
    if (n > sizeof saved.bytes - saved.len)
        return -1;
    for (size_t i = 0; i < n; i++)
        saved.bytes[saved.len++] = ((const uint8_t *)bytes)[i];
    return 0;
}

static void print_saved(void)
{
    console_str("saved cbf ");
    for (uint32_t i = 0; i < saved.len && i < sizeof saved.bytes; i++) {
        char hex[2] = {"0123456789abcdef"[saved.bytes[i] >> 4], "0123456789abcdef"[saved.bytes[i] & 15]};
        console_write(hex, 2);
    }
    console_str("\n");
}

static const struct {
    const char *name;
    btp_cm_method walk;
} methods[] = {{"ehabi", btp_cm_walk_ehabi}, {"fp", btp_cm_walk_fp}, {"scan", btp_cm_walk_scan}};

void btp_cm_on_fault(uint32_t frame, const btp_cm_entry *entry)
{
    btp_cm_fault f;
    btp_cm_range main_stack = {(uint32_t)(uintptr_t)__stack_lo, (uint32_t)(uintptr_t)__stack_hi};
    btp_cm_range thread = {(uint32_t)(uintptr_t)thread_stack,
                           (uint32_t)(uintptr_t)thread_stack + sizeof thread_stack};
    btp_cm_layout layout;
    layout.stack = (entry->exc_return & 4u) ? thread : main_stack;
    layout.text.lo = (uint32_t)(uintptr_t)__text_start;
    layout.text.hi = (uint32_t)(uintptr_t)__text_end;
    layout.scan_words = 0;
    btp_status st = btp_cm_fault_read(&f, frame, entry, layout.stack);
    console_str("fault kind=");
    console_str(kind);
    console_str(" status=");
    console_dec((uint32_t)st);
    console_str(" flags=");
    console_hex(f.flags);
    console_str(" pc=");
    console_hex(f.r[15]);
    console_str(" lr=");
    console_hex(f.r[14]);
    console_str(" sp=");
    console_hex(f.r[13]);
#if !defined(__ARM_ARCH_6M__)
    console_str(" cfsr=");
    console_hex(SCB_CFSR);
    console_str(" hfsr=");
    console_hex(SCB_HFSR);
#endif
    console_str("\n");
    uint32_t addrs[32];
    for (unsigned m = 0; m < 3 && st == BTP_OK; m++) {
        size_t n;
        int truncated;
        btp_status cs = btp_cm_capture(&f, &layout, methods[m].walk, addrs, 32, &n, &truncated);
        console_str("method ");
        console_str(methods[m].name);
        console_str(" status=");
        console_dec((uint32_t)cs);
        console_str(" n=");
        console_dec((uint32_t)n);
        console_str(" truncated=");
        console_dec((uint32_t)truncated);
        console_str("\n");
        btp_status rs = btp_cm_record_cbf_line(addrs, n, truncated, console_sink, 0);
        if (rs != BTP_OK) {
            console_str("record status=");
            console_dec((uint32_t)rs);
            console_str("\n");
        }
        if (m == 0 && n <= BTP_LWS_MAX_FRAMES) {
            console_str("lws ");
            btp_cm_record_lws_line(addrs, n, console_sink, 0);
        }
        if (m == 0 && streq(kind, "reset")) {
            saved.len = 0;
            if (btp_cm_record_cbf(addrs, n, truncated, ram_sink, 0) == BTP_OK)
                saved.magic = SAVED_MAGIC;
            console_str("resetting\n");
            __asm volatile("dsb" ::: "memory");
            REG32(0xE000ED0Cu) = 0x05FA0004u; /* AIRCR: VECTKEY, SYSRESETREQ */
            __asm volatile("dsb" ::: "memory");
            for (;;)
                ;
        }
    }
    console_str("done\n");
    board_exit(0);
}

/* ---- bench: instructions per frame of the CBF encoder ---- */

/* SysTick on the processor clock, free-running from its maximum. */
static uint32_t ticks(void)
{
    return SYST_CVR;
}

/* n iterations of a 2-instruction loop: the clock's ticks per instruction. */
NOINLINE static void spin(uint32_t n)
{
    __asm volatile(".syntax unified\n 1: subs %0, %0, #1\n bne 1b" : "+r"(n) : : "cc");
}

static void bench(void)
{
    enum { FRAMES = 16, ROUNDS = 200, SPIN = 100000 };
    uint32_t chain[FRAMES];
    uint8_t buf[BTP_CM_CBF_MAX(FRAMES)];
    /* A chain like a fault's: a PC, then return addresses in .text. */
    for (unsigned i = 0; i < FRAMES; i++)
        chain[i] = (uint32_t)(uintptr_t)__text_start + 0x40u + 0x1D3u * i * (i & 1 ? 1u : 7u);
    SYST_RVR = 0xFFFFFFu;
    SYST_CVR = 0;
    SYST_CSR = 5u; /* enable, processor clock, no interrupt */
#if !defined(__ARM_ARCH_6M__)
    /* The DWT cycle counter, to show whether the emulator has one. */
    REG32(0xE000EDFCu) |= 1u << 24; /* DEMCR.TRCENA */
    REG32(0xE0001000u) |= 1u;       /* DWT_CTRL.CYCCNTENA */
    uint32_t c0 = REG32(0xE0001004u);
#endif
    uint32_t t0 = ticks();
    spin(SPIN);
    uint32_t t1 = ticks();
#if !defined(__ARM_ARCH_6M__)
    uint32_t c1 = REG32(0xE0001004u);
    console_str("bench dwt_cyccnt_delta=");
    console_dec(c1 - c0);
    console_str("\n");
#endif
    size_t len = 0;
    for (unsigned r = 0; r < ROUNDS; r++) {
        btp_cbf_encoder enc;
        btp_cbf_encoder_init(&enc, buf, sizeof buf, 32, 0);
        for (unsigned i = 0; i < FRAMES; i++) {
            btp_frame fr = {chain[i], i ? BTP_FRAME_RA : BTP_FRAME_PC};
            btp_cbf_encoder_add(&enc, fr, 1);
        }
        btp_cbf_encoder_finish(&enc, 0, &len);
    }
    uint32_t t2 = ticks();
    /* The fault path's encoder on the same chain: the same bytes. */
    uint8_t buf32[BTP_CM_CBF_MAX(FRAMES)];
    size_t len32 = 0;
    for (unsigned r = 0; r < ROUNDS; r++)
        btp_cbf_encode_chain32(chain, FRAMES, 0, 0, buf32, sizeof buf32, &len32, NULL);
    uint32_t t3 = ticks();
    int same = len32 == len;
    for (size_t i = 0; same && i < len; i++)
        same = buf32[i] == buf[i];
    console_str("bench spin_insns=");
    console_dec(2u * SPIN);
    console_str(" spin_ticks=");
    console_dec((t0 - t1) & 0xFFFFFFu);
    console_str(" frames=");
    console_dec(FRAMES * ROUNDS);
    console_str(" encode_ticks=");
    console_dec((t1 - t2) & 0xFFFFFFu);
    console_str(" cbf_bytes=");
    console_dec((uint32_t)len);
    console_str(" chain32_ticks=");
    console_dec((t2 - t3) & 0xFFFFFFu);
    console_str(" chain32_same=");
    console_dec((uint32_t)same);
    console_str("\ndone\n");
}

int main(void)
{
    if (saved.magic == SAVED_MAGIC) {
        /* The boot after the reset scenario's fault. */
        saved.magic = 0;
        print_saved();
        console_str("done\n");
        return 0;
    }
    kind = board_cmdline();
    /* The command line is "<image> <kind>" or "<kind>". */
    for (const char *p = kind; *p; p++)
        if (*p == ' ')
            kind = p + 1;
    console_str("btpack firmware: ");
    console_str(kind);
    console_str("\n");
    if (streq(kind, "bench")) {
        bench();
        return 0;
    }
    if (kind[0] == 'h' && heap_run(kind) == 0)
        return 0;
    mpu_guard_null();
#if !defined(__ARM_ARCH_6M__)
    SCB_CCR |= 1u << 4;                          /* DIV_0_TRP */
    SCB_SHCSR |= (1u << 16) | (1u << 17) | (1u << 18); /* MemManage, BusFault, UsageFault */
#endif
    __asm volatile("dsb\n isb" ::: "memory");
    int r = run(kind);
    console_str("no fault: ");
    console_dec((uint32_t)r);
    console_str("\n");
    return 1;
}
