/*
 * The cfi method: a DWARF call-frame-information unwinder of our own that
 * walks .eh_frame through .eh_frame_hdr's search table, reading only memory
 * its environment has vouched for (see spec/capture.md).
 *
 * The walker knows nothing about where memory is: an environment says
 * which image holds an address (and where that image's unwind tables and
 * code may be read), and which other addresses (stacks) may be read. The
 * crash handler's environment is built from /proc/self/maps at crash time;
 * an ordinary capture's from the dynamic loader (_dl_find_object) and the
 * thread's stack bounds.
 */
#ifndef BTPACK_CAPTURE_CFI_H
#define BTPACK_CAPTURE_CFI_H

#include "capture_internal.h"

/* DWARF register numbers of the registers the walker tracks. */
#if defined(__x86_64__)
#define BTP_CFI_NREG 17 /* rax rdx rcx rbx rsi rdi rbp rsp r8..r15 rip */
#define BTP_CFI_SP 7
#define BTP_CFI_FP 6
#define BTP_CFI_SUPPORTED 1
#elif defined(__i386__)
#define BTP_CFI_NREG 9 /* eax ecx edx ebx esp ebp esi edi eip */
#define BTP_CFI_SP 4
#define BTP_CFI_FP 5
#define BTP_CFI_SUPPORTED 1
#elif defined(__aarch64__)
#define BTP_CFI_NREG 32 /* x0..x30, sp */
#define BTP_CFI_SP 31
#define BTP_CFI_FP 29
#define BTP_CFI_LR 30
#define BTP_CFI_SUPPORTED 1
#else
#define BTP_CFI_NREG 1
#define BTP_CFI_SP 0
#define BTP_CFI_FP 0
#define BTP_CFI_SUPPORTED 0
#endif

/* A register set: the pc and the registers known (bit i of `valid`). */
typedef struct btp_cfi_regs {
    uintptr_t pc;
    uintptr_t r[BTP_CFI_NREG];
    uint64_t valid;
} btp_cfi_regs;

/* An image as the walker needs it. */
typedef struct btp_cfi_image {
    uintptr_t eh_hdr;           /* .eh_frame_hdr; 0: none */
    uintptr_t lo, hi;           /* unwind tables may be read in [lo, hi) */
    uintptr_t text_lo, text_hi; /* code may be read in [text_lo, text_hi) */
    uintptr_t dbase;            /* base of DW_EH_PE_datarel in FDEs (i386); 0: none */
    uintptr_t id;               /* the loader's record of it (0: none); part of its cache tag */
    uint32_t tag;               /* its cache tag if the environment has it from
                                   btp_cfi_image_tag() already; 0: the walker computes it */
} btp_cfi_image;

/* What ties cached layouts to an image (cfi.c): never 0. Reads the
 * image's search table. */
uint32_t btp_cfi_image_tag(const btp_cfi_image *img);

struct btp_cfi_cache;

/*
 * A thread's memo of its last walk (cfi.c, "The walk memo"): the frames a
 * walk unwound with cached layouts on its way to the outermost frame, each
 * with what its step depended on (the pc, stack and frame pointer it
 * started from, its image's cache tag, the stack slots it read the return
 * address and frame pointer from). A later walk that reaches one of those
 * frames in the same state takes the rest from the memo once every slot the
 * rest read still holds what it held and every image still has its tag:
 * one load and compare a frame instead of a layout lookup. Only x86 (where
 * a frame's rule needs nothing the memo does not keep). Owned by one walk
 * at a time: the environment's owner sees to that (cfi_self.c: a
 * per-thread memo, left alone by a walk that interrupts another on its
 * thread).
 */
#define BTP_CFI_MEMO_N 31 /* (with the end state, a power of two) */
#define BTP_CFI_HEAD_N 6
#define BTP_CFI_HEAD_NONE INT32_MIN
/* The frames before the memo's that a CBF capture's memo keeps the stream
 * of (cfi.c memo_cbf()), and the room for it: the information byte and
 * at most 9 bytes an instruction. */
#define BTP_CFI_CBF_HEAD_MAX 8
#define BTP_CFI_CBF_HEAD_ROOM (1 + 9 * BTP_CFI_CBF_HEAD_MAX)
#if (defined(__x86_64__) || defined(__i386__)) && !defined(BTP_CFI_NO_MEMO)
#define BTP_CFI_MEMO 1
#else
#define BTP_CFI_MEMO 0
#endif
typedef struct btp_cfi_memo {
    unsigned n; /* steps: states 0..n-1 are unwound, state n ends the walk; 0: empty */
    unsigned long used; /* walks that took their end from it (for tests and benchmarks) */
    uintptr_t pc[BTP_CFI_MEMO_N + 1], sp[BTP_CFI_MEMO_N + 1], fp[BTP_CFI_MEMO_N + 1];
    uint32_t tag[BTP_CFI_MEMO_N + 1];
    uint64_t info[BTP_CFI_MEMO_N + 1]; /* the step from each state (cfi.c) */
    /* Derived from the above when a state is saved, so that taking the
     * memo's rest is a load and compare a step: each step's return-address
     * slot and frame-pointer slot (where checked), and the states whose
     * step checks its frame-pointer slot (fp_mask), whose step's
     * return-address slot is not aligned (ua_mask: read a byte at a time)
     * or whose pc is not known to lie in the image of the state before
     * (img_mask: its tag is checked), bit k for state k. */
    uintptr_t ra_at[BTP_CFI_MEMO_N], fp_at[BTP_CFI_MEMO_N];
    /* pc[k] as the collector takes it (a return address), copied out in one
     * go; pc[] stays for the checks, whose loops step 8 bytes (reading the
     * pcs from fr[] instead cost 1 instruction a replayed frame) */
    btp_frame fr[BTP_CFI_MEMO_N + 1];
    uint32_t fp_mask, img_mask, ua_mask;
    /* The steps from state top_j on have their slots below top_hi (found
     * where the stack's end lies within 128 words of the memo's top, and
     * kept while those states stay; cfi.c memo_top_in()) */
    unsigned top_j;
    uintptr_t top_hi;
    /* The walk's head (cfi.c, "The head"): its first steps from its start,
     * relative to the start's stack pointer, and what they leave in the
     * registers. */
    unsigned hn;        /* steps (0: none) */
    uint16_t hend;      /* 1: the step after them could not be recorded */
    uint16_t hsame;     /* bit k: step k's pc lay in the image of step k - 1's */
    unsigned hpart;     /* walks in a row that took only a part of them */
    unsigned long head_used; /* walks that took their head from it */
    uint64_t hvalid0;   /* the registers known at the start */
    uint64_t hvalid[BTP_CFI_HEAD_N]; /* and after each step */
    uintptr_t hpc[BTP_CFI_HEAD_N + 1];
    uint32_t htag[BTP_CFI_HEAD_N];
    /* from the start's stack pointer (bytes): each step's CFA, return
     * address slot, frame pointer slot and frame pointer its CFA is based
     * on (BTP_CFI_HEAD_NONE: none); the slots all steps read, [hlo, hhi) */
    int32_t hcfa[BTP_CFI_HEAD_N], hra[BTP_CFI_HEAD_N], hfps[BTP_CFI_HEAD_N], hfp[BTP_CFI_HEAD_N];
    int32_t hlo, hhi;
    /* after steps 0..k: each register they restore (hpn[k] of them, one
     * entry a register) and the slot its value comes from (the last step
     * to restore it), so that a walk taking k + 1 steps loads each once */
    uint8_t hpn[BTP_CFI_HEAD_N];
    uint8_t hpi[BTP_CFI_HEAD_N][BTP_CFI_NREG];
    int32_t hp[BTP_CFI_HEAD_N][BTP_CFI_NREG];
    /* For btp_capture_cbf (cfi.c memo_cbf()): the CBF instructions of the
     * return addresses of states cbf_lo..cbf_last, each after the pc of
     * the state before, one stream ending at the end of cbf (state k's
     * from cbf_at[k]), written for the pcs in cbf_pc[cbf_lo - 1 ..
     * cbf_last]: an instruction is used where both its pcs are those of
     * the frames a capture took. cbf_last 0: none (a zeroed memo). The
     * stream ends with its terminator, the last byte of cbf; in front of
     * it lies room for the head below (BTP_CFI_CBF_HEAD_ROOM).
     *
     * The capture's frames before those (the walk's own, its head here,
     * at most BTP_CFI_CBF_HEAD_MAX), as the last CBF captures took them:
     * their count (0: none noted), the state cbf_head_from they came
     * before and their second frame (cbf_head_key); with cbf_head_full,
     * all of them but the last (the last is cbf_pc[cbf_head_from - 1];
     * copied as frames, BTP_CFI_CBF_HEAD_MAX - 1 at once whatever the
     * count); and with cbf_head_len non-zero as well, their stream (the
     * information byte, the pc, the return addresses), which lies in cbf
     * just in front of cbf_at[cbf_head_from]: a capture that took the
     * same frames copies the whole stream at once. */
    unsigned cbf_lo, cbf_last;
    unsigned cbf_head_n, cbf_head_from, cbf_head_len, cbf_head_full;
    uint64_t cbf_head_key;
    btp_frame cbf_head[BTP_CFI_CBF_HEAD_MAX - 1];
    uint16_t cbf_at[BTP_CFI_MEMO_N + 1];
    uintptr_t cbf_pc[BTP_CFI_MEMO_N + 1];
    uint8_t cbf[BTP_CFI_CBF_HEAD_ROOM + 9 * BTP_CFI_MEMO_N + 1];
} btp_cfi_memo;

#define BTP_CFI_KEEP_MAX 4

typedef struct btp_cfi_env {
    /* The image whose text holds `pc`; 1 if there is one. */
    int (*find)(void *ctx, uintptr_t pc, btp_cfi_image *out);
    /* Non-zero if [addr, addr + len) is stack (or other data) that may be
     * read. */
    int (*stack_ok)(void *ctx, uintptr_t addr, size_t len);
    /* Non-zero if [addr, addr + len) is code that may be read, for a pc
     * in no image (aarch64's signal trampoline under some emulators and C
     * libraries); NULL: none may. */
    int (*code_ok)(void *ctx, uintptr_t addr, size_t len);
    /* Optional (NULL: none): the stretch [out->lo, out->hi) of stack
     * holding addr, every part of which stack_ok would accept; 1 if there
     * is one. Lets the walker check saved-register slots inline. */
    int (*region)(void *ctx, uintptr_t addr, btp_stack_bounds *out);
    /* Optional (hi 0: none; used only with `region`): a stretch of stack
     * `region` would answer with for any address in it, known before the
     * walk (the stack it starts on), so that the walk need not ask. */
    btp_stack_bounds known;
    /* Optional (NULL: none): a cache of frame layouts (cfi_cache.h). With
     * one, `find` must answer for any pc in [lo, hi) of an image it
     * returned with that image (the walker then asks once per image per
     * walk), and the images' unwind tables must not change while they are
     * loaded. */
    struct btp_cfi_cache *cache;
    /* Optional (NULL: none; used only with a cache and `region`): the memo
     * of the walk before, read and rewritten by this one. */
    btp_cfi_memo *memo;
    /* Optional (n_keep 0: none; used only with a cache): images that stay
     * loaded while the environment is in use, their tags filled in
     * (btp_cfi_image_tag). The walk takes a pc in one of these as in that
     * image without asking `find` (which must still answer for them). At
     * most BTP_CFI_KEEP_MAX are used. */
    const btp_cfi_image *const *keep;
    unsigned n_keep;
    void *ctx;
} btp_cfi_env;

/* The registers of a signal's ucontext_t. BTP_OK or BTP_E_UNSUPPORTED. */
btp_status btp_cfi_regs_from_context(const void *ucontext, btp_cfi_regs *out);

/*
 * Walk from `start` (its pc is exact: an interrupted or current
 * instruction, not a return address), pushing each frame's address into c
 * until the outermost frame, a frame that cannot be unwound, or the
 * collector says stop. Never reads memory the environment has not vouched
 * for; no allocation, no locks, no libc beyond memcpy. Returns BTP_OK (the
 * frames found, at least the pc), or BTP_E_UNSUPPORTED on an architecture
 * without a register map.
 */
btp_status btp_cfi_walk(btp_collector *c, const btp_cfi_regs *start, const btp_cfi_env *env);

/* The same from a frame whose pc is a return address: the state a walk
 * would be in after the step through the callee's frame (the registers
 * that step gives; those `start` does not know are not in its `valid`).
 * Its frames from there are those of the walk through the callee, but for
 * a frame whose rules need a register `start` does not know. The caller
 * puts the start's stack pointer into the collector first
 * (btp_collector_cfa), as the step through the callee would have. */
btp_status btp_cfi_walk_ret(btp_collector *c, const btp_cfi_regs *start, const btp_cfi_env *env);

#if BTP_CFI_MEMO
/*
 * Memos for walks from a return address (btp_cfi_walk_ret: a heap
 * tracer's, from the frame that called malloc), one of which each such
 * walk takes. A program that allocates from several places in turn (an
 * interpreter: python3 calls malloc from a dozen places, each its own
 * path from the interpreter's frame) gives a single memo the path before,
 * which the walk joins only above the interpreter's frame, whose return
 * address differs: every walk steps through the frames below it.
 */
#define BTP_CFI_MEMO_SET 16 /* a power of two */
typedef struct btp_cfi_memo_set {
    btp_cfi_memo m[BTP_CFI_MEMO_SET];
} btp_cfi_memo_set;

/*
 * The memo of `set` a walk from pc, a return address (the call of
 * malloc), is to take: the one that pc hashes to, whose last walk was
 * most likely from the same call, and so from the same path of calls
 * below it. Only a guess: the walk checks the memo it is given as it
 * checks any (btp_cfi_env.memo), so any pick gives the same frames.
 */
btp_cfi_memo *btp_cfi_memo_pick(btp_cfi_memo_set *set, uintptr_t pc);
#endif

/* The environment of an ordinary capture (not the crash handler): images
 * from the dynamic loader, stacks from the thread's bounds (see
 * capture.h for what BTP_CAPTURE_ASYNC_SIGNAL_SAFE changes). */
typedef struct btp_cfi_self {
    btp_stack_bounds stack[2];
    unsigned n_stack;
    unsigned flags;
    const btp_stack_bounds *given; /* opt->bounds */
    const btp_cfi_image *keep[BTP_CFI_KEEP_MAX]; /* env->keep, where not the process's list */
    unsigned n_keep;                             /* env->n_keep */
} btp_cfi_self;

void btp_cfi_self_env(btp_cfi_self *self, btp_cfi_env *env, const btp_stack_bounds *given,
                      unsigned flags);

/* The cfi method for the current thread (frame 0 is this function's own
 * position; the collector's anchor drops it and the library's other
 * frames), or from a signal's ucontext with the ordinary environment. */
btp_status btp_capture_cfi(btp_collector *c, const void *uc, const btp_capture_options *opt);
/* The same from registers the caller took with BTP_CFI_REGS_HERE (a public
 * entry point does, so that the walk starts in its own frame). */
btp_status btp_capture_cfi_from(btp_collector *c, const btp_cfi_regs *regs,
                                const btp_capture_options *opt);

/* The cfi method for the caller of an interposed function, from the state
 * of its frame at the call: pc the callee's return address, sp the
 * callee's CFA (the caller's stack pointer after the return), fp the
 * caller's frame pointer (saved by the callee); the caller's other
 * registers are not known (see btp_cfi_walk_ret). `opt` as resolved to the
 * cfi method by the caller; its snip_pre is not used (the frames it would
 * drop are below pc). The frames from pc on, as btp_capture from the
 * callee with those frames snipped would give them. For a heap tracer's
 * entry points: no walk through its own frames. */
btp_status btp_capture_cfi_caller(const btp_capture_options *opt, uintptr_t pc, uintptr_t sp,
                                  uintptr_t fp, btp_frame *frames, size_t cap, size_t *n_out);

/* Capture the calling function's registers (frame 0 is the caller itself). */
#if defined(__x86_64__)
#define BTP_CFI_REGS_HERE(rs)                                                                 \
    do {                                                                                      \
        __asm__ volatile("movq %%rbx, 24(%0)\n\t"                                             \
                         "movq %%rbp, 48(%0)\n\t"                                             \
                         "movq %%rsp, 56(%0)\n\t"                                             \
                         "movq %%r12, 96(%0)\n\t"                                             \
                         "movq %%r13, 104(%0)\n\t"                                            \
                         "movq %%r14, 112(%0)\n\t"                                            \
                         "movq %%r15, 120(%0)\n\t"                                            \
                         "leaq 1f(%%rip), %%rcx\n\t"                                          \
                         "1: movq %%rcx, 128(%0)\n\t"                                         \
                         :                                                                    \
                         : "r"((rs)->r)                                                       \
                         : "rcx", "memory");                                                  \
        (rs)->pc = (rs)->r[16];                                                               \
        (rs)->valid = (1u << 3) | (1u << 6) | (1u << 7) | (0xfu << 12);                       \
    } while (0)
#elif defined(__i386__)
#define BTP_CFI_REGS_HERE(rs)                                                                 \
    do {                                                                                      \
        __asm__ volatile("movl %%ebx, 12(%0)\n\t"                                             \
                         "movl %%esp, 16(%0)\n\t"                                             \
                         "movl %%ebp, 20(%0)\n\t"                                             \
                         "movl %%esi, 24(%0)\n\t"                                             \
                         "movl %%edi, 28(%0)\n\t"                                             \
                         "call 1f\n\t"                                                        \
                         "1: popl %%ecx\n\t"                                                  \
                         "movl %%ecx, 32(%0)\n\t"                                             \
                         :                                                                    \
                         : "r"((rs)->r)                                                       \
                         : "ecx", "memory");                                                  \
        (rs)->pc = (rs)->r[8];                                                                \
        (rs)->valid = (1u << 3) | (1u << 4) | (1u << 5) | (1u << 6) | (1u << 7);              \
    } while (0)
#elif defined(__aarch64__)
#define BTP_CFI_REGS_HERE(rs)                                                                 \
    do {                                                                                      \
        __asm__ volatile("stp x19, x20, [%0, #152]\n\t"                                       \
                         "stp x21, x22, [%0, #168]\n\t"                                       \
                         "stp x23, x24, [%0, #184]\n\t"                                       \
                         "stp x25, x26, [%0, #200]\n\t"                                       \
                         "stp x27, x28, [%0, #216]\n\t"                                       \
                         "stp x29, x30, [%0, #232]\n\t"                                       \
                         "mov x9, sp\n\t"                                                     \
                         "str x9, [%0, #248]\n\t"                                             \
                         "adr x9, 1f\n\t"                                                     \
                         "1: str x9, [%0, #-8]\n\t"                                           \
                         :                                                                    \
                         : "r"((rs)->r)                                                       \
                         : "x9", "memory");                                                   \
        (rs)->valid = 0x3ff80000u | (1u << 31); /* x19..x29, sp */                             \
    } while (0)
#else
#define BTP_CFI_REGS_HERE(rs) ((rs)->pc = 0, (rs)->valid = 0)
#endif

#endif
