/*
 * Checked reads of target memory (private to ports/cortex-m).
 *
 * Every read the capture makes goes through cm_read32/cm_read16, which
 * check alignment and that the whole access lies inside the range given.
 * The load itself is BTP_CM_LOAD32/16: a plain volatile load on the target;
 * the host tests (BTP_CM_SIMULATED) read a simulated memory image that fails
 * the test on any address outside it, so a missing check shows up there.
 */
#ifndef BTPACK_CM_MEM_H
#define BTPACK_CM_MEM_H

#include <btpack/cortex_m.h>

#if defined(BTP_CM_SIMULATED)
uint32_t sim_load32(uint32_t addr);
uint16_t sim_load16(uint32_t addr);
#define BTP_CM_LOAD32(a) sim_load32(a)
#define BTP_CM_LOAD16(a) sim_load16(a)
#else
#define BTP_CM_LOAD32(a) (*(const volatile uint32_t *)(uintptr_t)(a))
#define BTP_CM_LOAD16(a) (*(const volatile uint16_t *)(uintptr_t)(a))
#endif

/* [addr, addr + size) lies inside r (no wrap-around). */
static inline int cm_in(btp_cm_range r, uint32_t addr, uint32_t size)
{
    return addr >= r.lo && addr < r.hi && r.hi - addr >= size;
}

static inline int cm_read32(btp_cm_range r, uint32_t addr, uint32_t *out)
{
    if ((addr & 3) || !cm_in(r, addr, 4))
        return 0;
    *out = BTP_CM_LOAD32(addr);
    return 1;
}

static inline int cm_read16(btp_cm_range r, uint32_t addr, uint16_t *out)
{
    if ((addr & 1) || !cm_in(r, addr, 2))
        return 0;
    *out = BTP_CM_LOAD16(addr);
    return 1;
}

/* What the methods share (thumb.c, capture.c). */

/* Most bytes a leaf that does not save lr may span from its entry to the
 * faulting instruction: bounds the test that lr is the faulting function's
 * own return address (see cm_lr_is_return). */
#define CM_LEAF_MAX 1024u

/* ra (with its Thumb bit) is a return address: odd, inside text, right
 * after a BL or a BLX register instruction. *target (may be NULL) gets the
 * BL's destination, or 0 for BLX (unknown). */
int cm_return_address(btp_cm_range text, uint32_t ra, uint32_t *target);

/* The stacked lr is the faulting function's return address (it has not
 * saved it, being a leaf or still in its prologue): lr is a return address
 * whose call went to a function starting at most CM_LEAF_MAX bytes before
 * the PC (or through a register, which cannot be told apart). */
int cm_lr_is_return(const btp_cm_fault *f, btp_cm_range text);

/* Appends addr to the chain, dropping a repeat of the last address (a
 * method may find the same return address twice). Returns 0 when addr did
 * not fit: the chain is marked truncated and the walk stops. */
static inline int cm_push(btp_cm_chain *c, uint32_t addr)
{
    if (c->n && c->addrs[c->n - 1] == addr)
        return 1;
    if (c->n == c->max) {
        c->truncated = 1;
        return 0;
    }
    c->addrs[c->n++] = addr;
    return 1;
}

#endif
