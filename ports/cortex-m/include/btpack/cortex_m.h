/*
 * btpack on Cortex-M: a fault handler that captures the faulting call chain
 * from the exception frame and writes it as one record through a byte sink.
 *
 * The pieces, in the order a fault runs through them:
 *
 *  1. btp_cm_fault_entry: a naked handler for the vector table (HardFault,
 *     MemManage, BusFault, UsageFault, or any other exception). It picks MSP
 *     or PSP from EXC_RETURN, saves r4-r11 (which the hardware does not
 *     stack) and calls btp_cm_on_fault(), which the application defines.
 *     If btp_cm_on_fault() returns, the exception returns (after a fault it
 *     normally resets or halts instead).
 *  2. btp_cm_fault_read: the registers at the fault from the stacked frame
 *     (basic or FPU-extended, with the alignment word; the ARMv8-M additional
 *     state context), every read checked against the stack range given.
 *  3. btp_cm_capture: the call chain by one of three methods: the EHABI
 *     unwinder of libgcc started from the exception frame
 *     (btp_cm_walk_ehabi), a walk of GCC's Thumb r7 frame records
 *     (btp_cm_walk_fp), or a bounded scan of the stack for return addresses
 *     into .text (btp_cm_walk_scan). Every read of the stack is checked
 *     against the stack range, every read of code against the text range.
 *  4. btp_cm_record_*: the chain as CBF (32-bit words, raw or as a hex line)
 *     or a libwebsockets `~m#` line, written through a caller-provided sink
 *     (UART, semihosting, a RAM buffer that survives reset).
 *
 * Outside a fault, btp_cm_here() takes the caller's registers instead of
 * steps 1-2 (an allocator's capture), and btp_cm_record_alloc_line/
 * btp_cm_record_free_line write heap records for `btpack heap report`.
 *
 * Nothing here allocates, locks or calls libc beyond what the codecs use
 * (memset/memcpy); the functions keep no state outside their arguments,
 * except the EHABI pop check's bounds (see btp_cm_walk_ehabi) while it runs. They
 * are meant to run in a fault handler on the main stack, which needs (GCC
 * -fstack-usage, Cortex-M3, -Os) about 150 bytes for the fp and scan
 * methods and 1.2 KiB for the EHABI method (libgcc's unwinder keeps ~600
 * bytes of state on the stack), plus the address array the caller gives;
 * a CBF record about 700 bytes, a `~m#` record about 1.6 KiB.
 *
 * Addresses are the target's 32-bit addresses. A return address is recorded
 * as a CBF `ra` frame with the Thumb bit cleared (the address of the
 * instruction after the call); the faulting instruction as a `pc` frame.
 */
#ifndef BTPACK_CORTEX_M_H
#define BTPACK_CORTEX_M_H

#include <btpack/btpack.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A range of addresses [lo, hi). An empty range (lo >= hi) holds nothing. */
typedef struct btp_cm_range {
    uint32_t lo;
    uint32_t hi;
} btp_cm_range;

/* What the naked entry saved before calling btp_cm_on_fault(), in this
 * order on the main stack. */
typedef struct btp_cm_entry {
    uint32_t r4_r11[8]; /* r4..r11 as they were at the fault */
    uint32_t exc_return;
    uint32_t pad;       /* keeps the main stack 8-byte aligned */
} btp_cm_entry;

/* Flags of btp_cm_fault. */
enum {
    BTP_CM_FAULT_PSP = 1u << 0,       /* the frame is on the process stack */
    BTP_CM_FAULT_FPU_FRAME = 1u << 1, /* the frame is FPU-extended (S0-S15, FPSCR) */
    BTP_CM_FAULT_PADDED = 1u << 2,    /* the hardware inserted an alignment word */
    BTP_CM_FAULT_ADDITIONAL = 1u << 3,/* ARMv8-M additional state context (r4-r11 on the stack) */
    BTP_CM_FAULT_HANDLER = 1u << 4    /* the fault interrupted handler mode */
};

/* The registers at the fault. */
typedef struct btp_cm_fault {
    uint32_t r[16];      /* r0..r15; r13 is the SP before the exception, r15 the faulting PC */
    uint32_t xpsr;
    uint32_t exc_return;
    uint32_t frame;      /* address of the stacked basic frame (r0 at +0, pc at +24) */
    uint32_t flags;      /* BTP_CM_FAULT_* */
} btp_cm_fault;

/*
 * Defined by the application: called by btp_cm_fault_entry on the main
 * stack in handler mode with the address of the stacked frame (MSP or PSP,
 * as EXC_RETURN says; not yet checked) and the registers the entry saved.
 * Typically it calls btp_cm_fault_read(), btp_cm_capture(), btp_cm_record_cbf_line(),
 * then resets.
 */
void btp_cm_on_fault(uint32_t frame, const btp_cm_entry *entry);

/* The naked handler to put in the vector table (Thumb code for ARMv6-M,
 * ARMv7-M and ARMv8-M; defined only in builds for those cores). */
void btp_cm_fault_entry(void);

/*
 * Read the registers at the fault. `frame` and `entry` as btp_cm_on_fault
 * receives them; `stack` the range of the stack the frame is on (the main
 * stack, or the current thread's for a PSP frame: an RTOS knows it).
 * Returns:
 *  BTP_OK
 *  BTP_E_INVALID_ARGUMENT    NULL f or entry
 *  BTP_E_CM_EXC_RETURN       entry->exc_return is not an EXC_RETURN value
 *  BTP_E_CM_FRAME_BOUNDS     the frame (with its FPU part) is not inside
 *                            `stack`, or misaligned: the stacking itself
 *                            may have faulted (stack overflow). f then holds
 *                            r4-r11, exc_return, frame and the flags EXC_RETURN
 *                            gives; the other registers are 0.
 * Reads only [frame, frame + frame size) after checking it lies in `stack`.
 */
BTP_API btp_status btp_cm_fault_read(btp_cm_fault *f, uint32_t frame, const btp_cm_entry *entry,
                                     btp_cm_range stack);

/* Where the capture may read. */
typedef struct btp_cm_layout {
    btp_cm_range stack; /* the faulting stack (all stack reads stay inside) */
    btp_cm_range text;  /* code: return addresses point here; call sites are read here */
    uint32_t scan_words; /* scan method: most words examined (0: up to stack.hi) */
} btp_cm_layout;

/* The chain a capture fills (fields private; btp_cm_capture sets it up). */
typedef struct btp_cm_chain {
    uint32_t *addrs;
    size_t max;
    size_t n;
    int truncated;
} btp_cm_chain;

/*
 * An unwinding method: appends the return addresses of fault f to the chain
 * (which holds the PC already). Pass one of the three below to
 * btp_cm_capture; only the methods an image names are linked into it (the
 * EHABI one brings libgcc's unwinder, a few KiB).
 */
typedef btp_status (*btp_cm_method)(const btp_cm_fault *f, const btp_cm_layout *layout,
                                    btp_cm_chain *chain);

/* libgcc's EHABI unwinder (.ARM.exidx/.ARM.extab; build with
 * -funwind-tables), started from the exception frame: the faulting
 * function is looked up at its PC even when that is its first instruction,
 * and a faulting leaf whose return address is still in lr continues from
 * the stacked lr (so does a function without an unwind entry). Needs no
 * frame pointers; with them (-fno-omit-frame-pointer) GCC's tables unwind
 * through r7, which is wrong while a fault hits a prologue before r7 is
 * set. Defined in ARM builds only.
 * Bounds: each frame's SP and PC are checked before libgcc steps from them;
 * the pops within a step are checked too when the image is linked with
 * -Wl,--wrap=_Unwind_VRS_Pop (a pop outside the stack then ends the walk),
 * and are libgcc's own otherwise. Not reentrant (the pop check's bounds are
 * a static while it runs); a fault handler runs once. */
BTP_API btp_status btp_cm_walk_ehabi(const btp_cm_fault *f, const btp_cm_layout *layout,
                                     btp_cm_chain *chain);

/* GCC's Thumb frame records (build with -fno-omit-frame-pointer): each
 * function pushes {r7, lr} (r7 may be followed by r8-r11) and sets r7 to its
 * SP after the prologue, so a saved r7 lies 8 to 24 bytes below the address
 * it holds, with the return address just below that address. The walk
 * finds the record above the SP, then follows saved r7 values, each return
 * address checked to follow a call instruction. Before that, the stacked lr
 * when it is the faulting function's return address (see below). */
BTP_API btp_status btp_cm_walk_fp(const btp_cm_fault *f, const btp_cm_layout *layout,
                                  btp_cm_chain *chain);

/* Every stack word from the SP up that is a Thumb return address into text,
 * right after a BL or BLX instruction (after the stacked lr as above). Needs
 * nothing from the build; also reports return addresses that calls already
 * returned from left behind. */
BTP_API btp_status btp_cm_walk_scan(const btp_cm_fault *f, const btp_cm_layout *layout,
                                    btp_cm_chain *chain);

/*
 * Capture the call chain of fault f with `method` into addrs[0..max):
 * addrs[0] is the faulting PC, the rest return addresses (Thumb bit
 * cleared), innermost first. *n gets the count; *truncated (may be NULL) is
 * set when the chain went on past max. Returns BTP_OK or
 * BTP_E_INVALID_ARGUMENT (NULL pointers, max == 0, empty text range). A
 * method that stops early (bad pointer, address outside text, no unwind
 * entry) still gives BTP_OK with what it found: a fault handler wants every
 * frame it can get.
 *
 * The fp and scan methods take the stacked lr as the second frame when it
 * is the faulting function's own return address, i.e. that function has
 * not saved it (a leaf, or a fault in a prologue): lr is right after a call
 * to a function starting at most 1 KiB before the PC, or after a call
 * through a register (which cannot be told apart).
 *
 * Bounds: the fp and scan methods read only aligned words inside
 * layout->stack and halfwords inside layout->text (see btp_cm_walk_ehabi
 * for that one). Work is bounded by max and the stack range.
 */
BTP_API btp_status btp_cm_capture(const btp_cm_fault *f, const btp_cm_layout *layout,
                                  btp_cm_method method, uint32_t *addrs, size_t max, size_t *n,
                                  int *truncated);

/*
 * The calling function's registers at this call, as a btp_cm_fault that
 * btp_cm_capture() walks from outside a fault (an allocator recording who
 * allocates, an assertion): r4-r11 and the SP as they are in the caller,
 * the PC the return address of this call (so addrs[0] of the capture is a
 * place in the caller), lr 0 (the caller saved its own return address to
 * make this call), xpsr the Thumb bit, no exception flags. Any method
 * works from it, in the caller's build: fp needs frame pointers, EHABI
 * unwind tables. Naked (Thumb code for ARMv6-M, ARMv7-M and ARMv8-M);
 * writes only *f; safe in any context the caller is.
 */
BTP_API void btp_cm_here(btp_cm_fault *f);

/*
 * A byte sink: write bytes[0..n) (n > 0), return 0 on success. It runs in
 * the fault handler: polled UART, semihosting, a copy into RAM.
 */
typedef int (*btp_cm_sink)(void *ctx, const void *bytes, size_t n);

/* Bytes of the longest CBF record of n addresses (what a RAM buffer needs). */
#define BTP_CM_CBF_MAX(n) BTP_CBF_BOUND32(n)

/*
 * Write the chain addrs[0..n) (as btp_cm_capture gives it: a PC, then
 * return addresses; n <= 64) through sink, as
 *  - btp_cm_record_cbf: raw CBF bytes, 32-bit words, `trunc` at the end
 *    when `truncated` (for a RAM buffer: at most BTP_CM_CBF_MAX(n) bytes);
 *  - btp_cm_record_cbf_line: "cbf " + the same as hex + "\n" (the line the
 *    hosted crash handler writes; btpack convert --from hex);
 *  - btp_cm_record_lws_line: "~m#" + base64 of a libwebsockets blob + "\n"
 *    (btpack convert --from lws --word-bits 32): at most 31 frames, all
 *    written as plain addresses, no truncation mark.
 * Separate functions so that an image links only the encoder it uses. The
 * encoding is staged on the stack (see the top of this file).
 * Returns BTP_OK, BTP_E_INVALID_ARGUMENT (NULL sink, NULL addrs with n > 0,
 * n > 64), BTP_E_DEPTH_TOO_LARGE (lws, n > 31), BTP_E_IO (the sink failed;
 * what it took stays written).
 */
BTP_API btp_status btp_cm_record_cbf(const uint32_t *addrs, size_t n, int truncated,
                                     btp_cm_sink sink, void *ctx);
BTP_API btp_status btp_cm_record_cbf_line(const uint32_t *addrs, size_t n, int truncated,
                                          btp_cm_sink sink, void *ctx);
BTP_API btp_status btp_cm_record_lws_line(const uint32_t *addrs, size_t n, btp_cm_sink sink,
                                          void *ctx);

/*
 * Heap records for an allocator to stream (spec/heap.md, "CSV records"),
 * the lines seed-style malloc/free instrumentation writes with the
 * allocating chain added, which `btpack heap report` (and `heap map`)
 * read among other console text:
 *  btp_cm_record_alloc_line: "m,0xSIZE,0xPTR,HEX\n", an allocation of SIZE
 *    bytes at PTR (both hex; PTR 0 for a failed one) and the chain
 *    addrs[0..n) (as btp_cm_capture gives it; n <= 64) as CBF in hex, the
 *    bytes btp_cm_record_cbf writes;
 *  btp_cm_record_free_line: "f,,0xPTR\n", a free.
 * Written in pieces of at most 64 bytes (stack: the CBF staging buffer and
 * 64 bytes of text). Returns as btp_cm_record_cbf_line (BTP_E_IO: the
 * sink failed; what it took stays written). Nothing is locked: an
 * allocator calls them under its own lock so that lines do not interleave.
 */
BTP_API btp_status btp_cm_record_alloc_line(uint32_t size, uint32_t ptr, const uint32_t *addrs,
                                            size_t n, int truncated, btp_cm_sink sink, void *ctx);
BTP_API btp_status btp_cm_record_free_line(uint32_t ptr, btp_cm_sink sink, void *ctx);

#ifdef __cplusplus
}
#endif

#endif
