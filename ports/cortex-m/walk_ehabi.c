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
 *
 * Bounds: each frame's SP and PC are checked before libgcc steps from them.
 * The pops within a step are checked when the image is linked with
 * -Wl,--wrap=_Unwind_VRS_Pop: every call libgcc's personality code makes to
 * _Unwind_VRS_Pop (an EHABI interface) then comes to the guard below first,
 * and a pop that would read outside the faulting stack fails instead of
 * faulting. Without the option the guard is never called.
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

/* The stack the guard checks pops against while a walk runs; NULL
 * otherwise. */
static const btp_cm_range *stack_guard;

/* Weak: defined by the linker (as the real _Unwind_VRS_Pop) only with
 * --wrap, which is also the only case in which the guard is called. */
__attribute__((weak)) _Unwind_VRS_Result
__real__Unwind_VRS_Pop(_Unwind_Context *ctx, _Unwind_VRS_RegClass cls, _uw disc,
                       _Unwind_VRS_DataRepresentation rep);
_Unwind_VRS_Result __wrap__Unwind_VRS_Pop(_Unwind_Context *ctx, _Unwind_VRS_RegClass cls,
                                          _uw disc, _Unwind_VRS_DataRepresentation rep);

_Unwind_VRS_Result __wrap__Unwind_VRS_Pop(_Unwind_Context *ctx, _Unwind_VRS_RegClass cls,
                                          _uw disc, _Unwind_VRS_DataRepresentation rep)
{
    const btp_cm_range *stack = stack_guard;
    if (stack) {
        uint32_t bytes;
        if (cls == _UVRSC_CORE) {
            bytes = 0;
            for (uint32_t m = disc & 0xFFFFu; m; m &= m - 1)
                bytes += 4;
        } else if (cls == _UVRSC_VFP) {
            /* (first register << 16) | count; FSTMX adds a pad word */
            bytes = 8u * (disc & 0xFFFFu) + (rep == _UVRSD_VFPX ? 4u : 0u);
        } else if (cls == _UVRSC_WMMXD) {
            bytes = 8u * (disc & 0xFFFFu);
        } else {
            bytes = 4u * 4u; /* WMMXC: at most 4 control registers */
        }
        _uw sp;
        if (_Unwind_VRS_Get(ctx, _UVRSC_CORE, 13, _UVRSD_UINT32, &sp) != _UVRSR_OK ||
            (sp & 3u) || !cm_in(*stack, (uint32_t)sp, bytes ? bytes : 1u))
            return _UVRSR_FAILED;
    }
    return __real__Unwind_VRS_Pop(ctx, cls, disc, rep);
}

struct walk {
    const btp_cm_layout *l;
    btp_cm_chain *c;
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
    stack_guard = &w->l->stack;
    (void)__gnu_Unwind_Backtrace(trace, w, &vrs);
    stack_guard = NULL;
}

btp_status btp_cm_walk_ehabi(const btp_cm_fault *f, const btp_cm_layout *l, btp_cm_chain *c)
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

#endif
