/*
 * Bounds for the pops libgcc's unwinder makes, for images linked with
 * -Wl,--wrap=_Unwind_VRS_Pop: every call the unwinder's personality code
 * makes to _Unwind_VRS_Pop (an EHABI interface) comes here first, and a pop
 * that would read outside the faulting stack fails instead of faulting.
 * Without the link option this file is not linked in.
 */
#include "cm_mem.h"

#if defined(__ARM_EABI__) && defined(__thumb__) && !defined(BTP_CM_NO_EHABI)
#include <unwind.h>

extern const btp_cm_range *btp_cm_ehabi_stack_guard_;

_Unwind_VRS_Result __real__Unwind_VRS_Pop(_Unwind_Context *ctx, _Unwind_VRS_RegClass cls,
                                          _uw disc, _Unwind_VRS_DataRepresentation rep);
_Unwind_VRS_Result __wrap__Unwind_VRS_Pop(_Unwind_Context *ctx, _Unwind_VRS_RegClass cls,
                                          _uw disc, _Unwind_VRS_DataRepresentation rep);

_Unwind_VRS_Result __wrap__Unwind_VRS_Pop(_Unwind_Context *ctx, _Unwind_VRS_RegClass cls,
                                          _uw disc, _Unwind_VRS_DataRepresentation rep)
{
    const btp_cm_range *stack = btp_cm_ehabi_stack_guard_;
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
#endif
