/*
 * The EHABI method: libgcc's unwinder started from the exception frame.
 *
 * _Unwind_Backtrace can only start from the current registers, so this file
 * calls the function behind it, __gnu_Unwind_Backtrace, with a register set
 * built from the fault. That function and the layout of its register set
 * (phase2_vrs: a demand-save word, then r0-r15) are libgcc internals, stable
 * since GCC 4.x on ARM but not promised: they are known here and nowhere
 * else, and tests/embedded runs this on every build.
 *
 * Two details make it work from an exception frame:
 *  - libgcc starts by setting pc = lr and looks the function up at pc - 2
 *    (a return address is just after its call). The faulting pc may be a
 *    function's first instruction, so lr is set to pc + 2: the lookup lands
 *    on pc itself.
 *  - a leaf that has not saved lr unwinds to "pc = lr", which is that fake
 *    value again. On that repeat the real stacked lr is put in and the step
 *    retried; if libgcc cannot step at all (no unwind entry: assembly, code
 *    built without -funwind-tables) the walk restarts from the stacked lr.
 */
#include "cm_mem.h"

#if defined(__ARM_EABI__) && defined(__thumb__) && !defined(BTP_CM_NO_EHABI)
#include <unwind.h>

/* libgcc's register set for __gnu_Unwind_Backtrace (phase2_vrs). */
struct cm_vrs {
    uint32_t demand_save_flags;
    uint32_t core[16];
};
_Unwind_Reason_Code __gnu_Unwind_Backtrace(_Unwind_Trace_Fn trace, void *arg,
                                           struct cm_vrs *entry);

/* Read by ehabi_guard.c (the -Wl,--wrap=_Unwind_VRS_Pop check) while a walk
 * runs; NULL otherwise. */
const btp_cm_range *btp_cm_ehabi_stack_guard_;

struct walk {
    const btp_cm_layout *l;
    cm_chain *c;
    uint32_t lr;    /* the stacked lr, for a leaf */
    uint32_t last;  /* pc of the previous step */
    unsigned steps; /* calls of the trace function */
    int lr_used;
    int stop;
};

static _Unwind_Reason_Code trace(struct _Unwind_Context *ctx, void *arg)
{
    struct walk *w = arg;
    uint32_t pc = (uint32_t)_Unwind_GetGR(ctx, 15);
    uint32_t sp = (uint32_t)_Unwind_GetGR(ctx, 13);
    if (w->steps++ == 0) {
        w->last = pc; /* the faulting function, already recorded */
        return _URC_NO_REASON;
    }
    if (pc == w->last) {
        /* No progress: a leaf's "pc = lr" gave back our pc + 2. */
        if (!w->lr_used && w->lr != (uint32_t)_Unwind_GetGR(ctx, 14)) {
            w->lr_used = 1;
            _Unwind_SetGR(ctx, 14, w->lr);
            return _URC_NO_REASON;
        }
        return _URC_END_OF_STACK;
    }
    /* Check what the next step will start from before libgcc reads there. */
    if (!cm_in(w->l->text, pc & ~1u, 2) || !cm_in(w->l->stack, sp, 4) || (sp & 3u)) {
        w->stop = 1;
        return _URC_END_OF_STACK;
    }
    w->last = pc;
    if (!cm_push(w->c, pc & ~1u)) {
        w->stop = 1;
        return _URC_END_OF_STACK;
    }
    return _URC_NO_REASON;
}

static void run(const btp_cm_fault *f, struct walk *w, uint32_t pc, uint32_t lr)
{
    struct cm_vrs vrs;
    vrs.demand_save_flags = 0;
    for (unsigned i = 0; i < 16; i++)
        vrs.core[i] = f->r[i];
    vrs.core[14] = lr;
    vrs.core[15] = pc;
    btp_cm_ehabi_stack_guard_ = &w->l->stack;
    (void)__gnu_Unwind_Backtrace(trace, w, &vrs);
    btp_cm_ehabi_stack_guard_ = NULL;
}

btp_status cm_walk_ehabi(const btp_cm_fault *f, const btp_cm_layout *l, cm_chain *c)
{
    struct walk w = {l, c, f->r[14], 0, 0, 0, 0};
    if (!cm_in(l->stack, f->r[13], 4) || (f->r[13] & 3u))
        return BTP_OK; /* nothing below the PC can be read */
    size_t before = c->n;
    run(f, &w, f->r[15], (f->r[15] & ~1u) + 2u);
    if (c->n == before && !w.stop && !w.lr_used && cm_return_address(l->text, f->r[14], NULL)) {
        /* No unwind entry for the faulting function: go on from its
         * caller, as if lr were the pc. */
        w.steps = 1; /* its first step is the caller: record it */
        w.last = f->r[15];
        w.lr_used = 1;
        run(f, &w, f->r[14], f->r[14]);
    }
    return BTP_OK;
}

#else

btp_status cm_walk_ehabi(const btp_cm_fault *f, const btp_cm_layout *l, cm_chain *c)
{
    (void)f;
    (void)l;
    (void)c;
    return BTP_E_NO_METHOD;
}

#endif
