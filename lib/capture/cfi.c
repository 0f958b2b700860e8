/*
 * The cfi walker: DWARF call frame information (.eh_frame, found through
 * .eh_frame_hdr's binary-search table), interpreted for one frame at a
 * time (see cfi.h, spec/capture.md).
 *
 * Safety comes from where bytes are read, never from trusting them:
 *  - unwind tables only inside [lo, hi) of the image that holds the pc,
 *    through a reader with a sticky error flag that stops at the bound;
 *  - code bytes (the return-address check) only inside the image's text;
 *  - stack words (saved registers, DW_OP_deref) only where the environment
 *    says stack may be read.
 * Work is bounded: each frame's program is bounded by its FDE's length,
 * expressions by a step count, the walk by BTP_CAPTURE_MAX_WALK frames
 * and by the rule that the canonical frame address (CFA) moves up the
 * stack every frame (it may jump elsewhere only across a signal frame), so
 * a cycle (a frame pointer pointing at itself) ends the walk.
 */
#include "capture/cfi.h"

#include "capture/capture_cbf.h"
#include "capture/cfi_cache.h"
#include "common/compiler.h"

#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <ucontext.h>

#define W ((uintptr_t)sizeof(uintptr_t))

/* DW_EH_PE pointer encodings. */
enum {
    PE_ABSPTR = 0x00,
    PE_ULEB128 = 0x01,
    PE_UDATA2 = 0x02,
    PE_UDATA4 = 0x03,
    PE_UDATA8 = 0x04,
    PE_SLEB128 = 0x09,
    PE_SDATA2 = 0x0a,
    PE_SDATA4 = 0x0b,
    PE_SDATA8 = 0x0c,
    PE_PCREL = 0x10,
    PE_DATAREL = 0x30,
    PE_INDIRECT = 0x80,
    PE_OMIT = 0xff
};

/* Limits on what hostile tables can ask for. */
#define REMEMBER_MAX 8      /* DW_CFA_remember_state depth */
#define EXPR_STACK 32       /* DWARF expression stack */
#define EXPR_STEPS 256      /* operations per expression (bra can loop) */
#define ALIGN_MAX 0x10000u  /* code/data alignment factors */
#define CACHE_N 4           /* rows remembered per walk (recursion repeats them) */
#define SEEN_N 8            /* images remembered per walk (with a layout cache) */
#define PEND_N 16           /* cached steps whose saved registers wait to be loaded */

/* ------------------------------------------------------------------ */
/* A bounded reader with a sticky error flag                           */
/* ------------------------------------------------------------------ */

typedef struct rd {
    uintptr_t p, end;
    int bad;
} rd;

static int need(rd *r, uintptr_t n)
{
    if (r->bad || r->p > r->end || r->end - r->p < n) {
        r->bad = 1;
        return 0;
    }
    return 1;
}

static uint8_t u8(rd *r)
{
    uint8_t v = 0;
    if (need(r, 1))
        v = *(const uint8_t *)r->p++;
    return v;
}

static uint64_t fixed(rd *r, unsigned n)
{
    uint64_t v = 0;
    if (!need(r, n))
        return 0;
    if (n == 2) {
        uint16_t t;
        memcpy(&t, (const void *)r->p, 2);
        v = t;
    } else if (n == 4) {
        uint32_t t;
        memcpy(&t, (const void *)r->p, 4);
        v = t;
    } else {
        memcpy(&v, (const void *)r->p, 8);
    }
    r->p += n;
    return v;
}

static uint64_t uleb(rd *r)
{
    uint64_t v = 0;
    for (unsigned shift = 0;; shift += 7) {
        uint8_t b = u8(r);
        if (r->bad)
            return 0;
        uint64_t bits = b & 0x7f;
        if (shift >= 64 ? bits != 0 : shift == 63 && bits > 1) {
            r->bad = 1; /* does not fit 64 bits */
            return 0;
        }
        if (shift < 64)
            v |= bits << shift;
        if (!(b & 0x80))
            return v;
        if (shift > 70) {
            r->bad = 1;
            return 0;
        }
    }
}

static int64_t sleb(rd *r)
{
    uint64_t v = 0;
    unsigned shift = 0;
    uint8_t b;
    do {
        b = u8(r);
        if (r->bad || shift > 63) {
            r->bad = 1;
            return 0;
        }
        v |= (uint64_t)(b & 0x7f) << shift;
        shift += 7;
    } while (b & 0x80);
    if (shift < 64 && (b & 0x40))
        v |= ~(uint64_t)0 << shift;
    return (int64_t)v;
}

/* A DW_EH_PE-encoded value. With `apply` 0 only its size matters (the
 * value is skipped, or a range length is read). */
static uintptr_t enc(rd *r, uint8_t e, uintptr_t dbase, int apply)
{
    uintptr_t field = r->p;
    uint64_t v;
    if (e == PE_OMIT) {
        r->bad = 1;
        return 0;
    }
    switch (e & 0x0f) {
    case PE_ABSPTR: v = fixed(r, (unsigned)W); break;
    case PE_ULEB128: v = uleb(r); break;
    case PE_UDATA2: v = fixed(r, 2); break;
    case PE_UDATA4: v = fixed(r, 4); break;
    case PE_UDATA8: v = fixed(r, 8); break;
    case PE_SLEB128: v = (uint64_t)sleb(r); break;
    case PE_SDATA2: v = (uint64_t)(int64_t)(int16_t)fixed(r, 2); break;
    case PE_SDATA4: v = (uint64_t)(int64_t)(int32_t)fixed(r, 4); break;
    case PE_SDATA8: v = fixed(r, 8); break;
    default: r->bad = 1; return 0;
    }
    if (!apply)
        return (uintptr_t)v;
    switch (e & 0x70) {
    case 0: break;
    case PE_PCREL: v += field; break;
    case PE_DATAREL:
        if (!dbase)
            r->bad = 1;
        v += dbase;
        break;
    default: r->bad = 1; break; /* textrel, funcrel, aligned: not used by eh_frame */
    }
    if (e & PE_INDIRECT)
        r->bad = 1; /* only personality pointers are indirect, and they are skipped */
    return (uintptr_t)v;
}

/* ------------------------------------------------------------------ */
/* Reading memory the environment vouched for                           */
/* ------------------------------------------------------------------ */

/* Other frames' stack words: outside what ASan knows of (its redzones are
 * memory the process owns); bytes one at a time when misaligned. */
__attribute__((no_sanitize_address)) static uintptr_t peek(uintptr_t a)
{
    if (a % W == 0)
        return *(const volatile uintptr_t *)a;
    uintptr_t v = 0;
    for (uintptr_t i = 0; i < W; i++)
        v |= (uintptr_t) * (const volatile unsigned char *)(a + i) << (8 * i);
    return v;
}

static int load(const btp_cfi_env *env, uintptr_t a, uintptr_t *v)
{
    if (a + W < a || !env->stack_ok(env->ctx, a, W))
        return 0;
    *v = peek(a);
    return 1;
}

/* ------------------------------------------------------------------ */
/* Rules                                                                */
/* ------------------------------------------------------------------ */

enum { R_SAME = 0, R_UNDEF, R_OFFSET, R_VAL_OFFSET, R_REG, R_EXPR, R_VAL_EXPR, R_NONE };

typedef struct rule {
    intptr_t v;   /* offset, or the expression's address */
    uint32_t len; /* expression length */
    uint8_t kind;
    uint8_t reg;  /* R_REG: the register; the CFA rule: its base register */
} rule;

typedef struct row {
    rule cfa; /* kind R_REG (reg + v) or R_EXPR; R_NONE until defined */
    rule r[BTP_CFI_NREG];
    uint8_t ra_signed; /* aarch64 pointer authentication state */
} row;

typedef struct cie {
    uint64_t code_align;
    int64_t data_align;
    unsigned ra;
    uint8_t fde_enc;
    uint8_t signal;
    uint8_t z;
    uintptr_t ins, ins_end;
} cie;

typedef struct prog {
    row cur;
    row init;
    row saved[REMEMBER_MAX];
    unsigned depth;
} prog;

typedef struct cached {
    uintptr_t look; /* 0: empty */
    row rw;
    unsigned ra;
    uint8_t signal;
} cached;

/* An image the walk has met, its cache tag filled in (never 0). */
typedef btp_cfi_image seen;

typedef struct walk {
    prog pg;
    cached cache[CACHE_N];
    unsigned next_slot;
    /* With a layout cache: the images met so far (the environment's kept
     * ones first, then those it was asked for, held in own[]), and the last
     * stretch of stack the environment vouched for (rhi 0: none). */
    const seen *img[BTP_CFI_KEEP_MAX + SEEN_N];
    seen own[SEEN_N];
    unsigned n_img, n_keep, next_img;
    uintptr_t rlo, rhi;
    /* and the CFAs all of whose slots (within 128 words: pack()) lie in
     * it: cfa - rin_lo < rin_n */
    uintptr_t rin_lo, rin_n;
    btp_cfi_slot *slots; /* the cache's, and its mask */
    size_t mask;
    /* With a memo (see "The walk memo"): the memo, the first of its states a
     * frame of this walk may still match, and the run of cached steps this
     * walk has taken since its last full step (a ring of the last
     * BTP_CFI_MEMO_N), with the state that ended the walk. */
    btp_cfi_memo *memo;
    unsigned mi;
    unsigned rec_n;
    /* The head being recorded: its steps so far (HEAD_OFF: none is), from
     * the start's stack pointer hsp0. */
    unsigned hk;
    uintptr_t hsp0;
    uintptr_t rec_pc[BTP_CFI_MEMO_N + 1], rec_sp[BTP_CFI_MEMO_N + 1], rec_fp[BTP_CFI_MEMO_N + 1];
    uint32_t rec_tag[BTP_CFI_MEMO_N + 1];
    uint64_t rec_info[BTP_CFI_MEMO_N + 1];
    uintptr_t rec_ra[BTP_CFI_MEMO_N + 1], rec_fpa[BTP_CFI_MEMO_N + 1]; /* each step's slots */
    /* The walk's start while its register set is still that (not copied
     * until something writes it: cur_own()); NULL once copied. */
    const btp_cfi_regs *cur_src;
    /* The cached steps whose other saved registers (all but the pc, stack
     * and frame pointer) are not loaded yet (pend_flush()): the CFA, packed
     * layout words and return address of each, in order. */
    unsigned pend_n;
    unsigned pend_head;   /* and before them, the registers after this many steps of the head */
    uintptr_t pend_hsp0;  /* (from the start's stack pointer) */
    uintptr_t pend_cfa[PEND_N], pend_pc[PEND_N];
    uint64_t pend_w1[PEND_N], pend_regs[PEND_N], pend_offs[PEND_N];
} walk;

static uint64_t bit(unsigned r)
{
    return (uint64_t)1 << r;
}

static int has(const btp_cfi_regs *s, unsigned r)
{
    return r < BTP_CFI_NREG && (s->valid & bit(r));
}

/* Offsets from the tables are factored and bounded so their product fits. */
static int set_rule(row *rw, uint64_t reg, uint8_t kind, int64_t v, uint32_t len)
{
    if (reg >= BTP_CFI_NREG)
        return 1; /* a register we do not track (vector registers): ignored */
    rw->r[reg].kind = kind;
    rw->r[reg].v = (intptr_t)v;
    rw->r[reg].len = len;
    return 1;
}

static int factored(rd *r, uint64_t n, int64_t align, int64_t *out)
{
    if (n > 0xffffffffu) {
        r->bad = 1;
        return 0;
    }
    *out = (int64_t)n * align;
    return 1;
}

static int sfactored(rd *r, int64_t n, int64_t align, int64_t *out)
{
    if (n > 0x7fffffff || n < -0x7fffffff) {
        r->bad = 1;
        return 0;
    }
    *out = n * align;
    return 1;
}

/* An expression block: its length, then the bytes (kept by address). */
static int block(rd *r, uintptr_t *at, uint32_t *len)
{
    uint64_t n = uleb(r);
    if (r->bad || n > 0xffffu || !need(r, (uintptr_t)n))
        return 0;
    *at = r->p;
    *len = (uint32_t)n;
    r->p += (uintptr_t)n;
    return 1;
}

/*
 * Run call frame instructions from r until the row for `target` is
 * complete (an advance past it) or the instructions end. 1: done, 0:
 * malformed.
 */
static int run(rd *r, const cie *ci, prog *pg, uint64_t loc, uint64_t target, uintptr_t dbase)
{
    row *rw = &pg->cur;
    while (r->p < r->end && !r->bad) {
        uint8_t op = u8(r);
        uint64_t reg = op & 0x3f, delta = 0;
        int64_t off;
        uintptr_t at;
        uint32_t len;
        switch (op >> 6) {
        case 1:
            delta = reg;
            goto advance;
        case 2:
            if (!factored(r, uleb(r), ci->data_align, &off))
                return 0;
            set_rule(rw, reg, R_OFFSET, off, 0);
            continue;
        case 3:
            if (reg < BTP_CFI_NREG)
                rw->r[reg] = pg->init.r[reg];
            continue;
        default: break;
        }
        switch (op) {
        case 0x00: /* nop */
            break;
        case 0x01: { /* set_loc */
            uint64_t to = enc(r, ci->fde_enc, dbase, 1);
            if (r->bad)
                return 0;
            if (to > target)
                return 1;
            loc = to;
            break;
        }
        case 0x02: delta = u8(r); goto advance;
        case 0x03: delta = fixed(r, 2); goto advance;
        case 0x04: delta = fixed(r, 4); goto advance;
        case 0x05: /* offset_extended */
            reg = uleb(r);
            if (!factored(r, uleb(r), ci->data_align, &off))
                return 0;
            set_rule(rw, reg, R_OFFSET, off, 0);
            break;
        case 0x06: /* restore_extended */
            reg = uleb(r);
            if (reg < BTP_CFI_NREG)
                rw->r[reg] = pg->init.r[reg];
            break;
        case 0x07: set_rule(rw, uleb(r), R_UNDEF, 0, 0); break;
        case 0x08: set_rule(rw, uleb(r), R_SAME, 0, 0); break;
        case 0x09: { /* register */
            reg = uleb(r);
            uint64_t from = uleb(r);
            if (from >= BTP_CFI_NREG)
                set_rule(rw, reg, R_UNDEF, 0, 0);
            else if (set_rule(rw, reg, R_REG, 0, 0) && reg < BTP_CFI_NREG)
                rw->r[reg].reg = (uint8_t)from;
            break;
        }
        case 0x0a: /* remember_state */
            if (pg->depth >= REMEMBER_MAX)
                return 0;
            pg->saved[pg->depth++] = *rw;
            break;
        case 0x0b: /* restore_state */
            if (pg->depth == 0)
                return 0;
            *rw = pg->saved[--pg->depth];
            break;
        case 0x0c: /* def_cfa */
            reg = uleb(r);
            off = (int64_t)uleb(r);
            if (reg >= BTP_CFI_NREG || off < 0 || off > 0x7fffffff)
                return 0;
            rw->cfa.kind = R_REG;
            rw->cfa.reg = (uint8_t)reg;
            rw->cfa.v = (intptr_t)off;
            break;
        case 0x0d: /* def_cfa_register */
            reg = uleb(r);
            if (reg >= BTP_CFI_NREG || rw->cfa.kind != R_REG)
                return 0;
            rw->cfa.reg = (uint8_t)reg;
            break;
        case 0x0e: /* def_cfa_offset */
            off = (int64_t)uleb(r);
            if (rw->cfa.kind != R_REG || off < 0 || off > 0x7fffffff)
                return 0;
            rw->cfa.v = (intptr_t)off;
            break;
        case 0x0f: /* def_cfa_expression */
            if (!block(r, &at, &len))
                return 0;
            rw->cfa.kind = R_EXPR;
            rw->cfa.v = (intptr_t)at;
            rw->cfa.len = len;
            break;
        case 0x10: /* expression */
        case 0x16: /* val_expression */
            reg = uleb(r);
            if (!block(r, &at, &len))
                return 0;
            set_rule(rw, reg, op == 0x10 ? R_EXPR : R_VAL_EXPR, (int64_t)at, len);
            break;
        case 0x11: /* offset_extended_sf */
            reg = uleb(r);
            if (!sfactored(r, sleb(r), ci->data_align, &off))
                return 0;
            set_rule(rw, reg, R_OFFSET, off, 0);
            break;
        case 0x12: /* def_cfa_sf */
            reg = uleb(r);
            if (reg >= BTP_CFI_NREG || !sfactored(r, sleb(r), ci->data_align, &off))
                return 0;
            rw->cfa.kind = R_REG;
            rw->cfa.reg = (uint8_t)reg;
            rw->cfa.v = (intptr_t)off;
            break;
        case 0x13: /* def_cfa_offset_sf */
            if (rw->cfa.kind != R_REG || !sfactored(r, sleb(r), ci->data_align, &off))
                return 0;
            rw->cfa.v = (intptr_t)off;
            break;
        case 0x14: /* val_offset */
            reg = uleb(r);
            if (!factored(r, uleb(r), ci->data_align, &off))
                return 0;
            set_rule(rw, reg, R_VAL_OFFSET, off, 0);
            break;
        case 0x15: /* val_offset_sf */
            reg = uleb(r);
            if (!sfactored(r, sleb(r), ci->data_align, &off))
                return 0;
            set_rule(rw, reg, R_VAL_OFFSET, off, 0);
            break;
        case 0x2d:
#if defined(__aarch64__)
            rw->ra_signed ^= 1; /* DW_CFA_AARCH64_negate_ra_state */
            break;
#else
            return 0; /* DW_CFA_GNU_window_save (SPARC) */
#endif
        case 0x2e: /* GNU_args_size */
            (void)uleb(r);
            break;
        case 0x2f: /* GNU_negative_offset_extended */
            reg = uleb(r);
            if (!factored(r, uleb(r), ci->data_align, &off))
                return 0;
            set_rule(rw, reg, R_OFFSET, -off, 0);
            break;
        default:
            return 0;
        }
        continue;
    advance:
        if (r->bad)
            return 0;
        delta *= ci->code_align; /* both bounded: no overflow */
        if (target - loc < delta || target < loc)
            return 1; /* the current row covers the target */
        loc += delta;
    }
    return !r->bad;
}

/* Parse the CIE at `at` (inside [img->lo, img->hi)). */
static int parse_cie(const btp_cfi_image *img, uintptr_t at, cie *ci)
{
    rd r = {at, img->hi, at < img->lo};
    uint64_t len = fixed(&r, 4);
    if (len == 0xffffffffu)
        len = fixed(&r, 8);
    if (r.bad || len == 0 || !need(&r, (uintptr_t)len) || len > img->hi - r.p)
        return 0;
    r.end = r.p + (uintptr_t)len;
    if (fixed(&r, 4) != 0) /* a CIE's id in .eh_frame */
        return 0;
    unsigned version = u8(&r);
    if (version != 1 && version != 3 && version != 4)
        return 0;
    char aug[8];
    size_t n = 0;
    for (;;) {
        char ch = (char)u8(&r);
        if (r.bad || n == sizeof aug)
            return 0;
        aug[n++] = ch;
        if (!ch)
            break;
    }
    const char *a = aug;
    if (a[0] == 'e' && a[1] == 'h') {
        r.p += W; /* an old GCC's eh_ptr */
        a += 2;
    }
    if (version == 4) {
        if (u8(&r) != W || u8(&r) != 0)
            return 0;
    }
    memset(ci, 0, sizeof *ci);
    ci->code_align = uleb(&r);
    ci->data_align = sleb(&r);
    ci->ra = version == 1 ? u8(&r) : (unsigned)uleb(&r);
    ci->fde_enc = PE_ABSPTR;
    if (r.bad || ci->code_align == 0 || ci->code_align > ALIGN_MAX ||
        ci->data_align > (int64_t)ALIGN_MAX || ci->data_align < -(int64_t)ALIGN_MAX ||
        ci->ra >= BTP_CFI_NREG)
        return 0;
    if (a[0] == 'z') {
        ci->z = 1;
        uint64_t alen = uleb(&r);
        if (r.bad || !need(&r, (uintptr_t)alen))
            return 0;
        uintptr_t aend = r.p + (uintptr_t)alen;
        for (const char *c = a + 1; *c; c++) {
            if (*c == 'R') {
                ci->fde_enc = u8(&r);
            } else if (*c == 'L') {
                (void)u8(&r);
            } else if (*c == 'P') {
                uint8_t pe = u8(&r);
                (void)enc(&r, (uint8_t)(pe & 0x7f), 0, 0);
            } else if (*c == 'S') {
                ci->signal = 1;
            } else if (*c != 'B' && *c != 'G') {
                break; /* unknown: the length lets us skip the rest */
            }
        }
        if (r.bad || r.p > aend)
            return 0;
        r.p = aend;
    } else if (a[0]) {
        return 0; /* an augmentation we cannot skip */
    }
    ci->ins = r.p;
    ci->ins_end = r.end;
    return 1;
}

/* .eh_frame_hdr's search table: where its entries start, how many, how
 * wide each field is (4 or 8 bytes), and whether signed. 1, or 0 when there
 * is no table we can search. */
typedef struct table {
    uintptr_t at;
    uint64_t count;
    unsigned size;
    int sgn;
} table;

static int table_of_any(const btp_cfi_image *img, table *t);

static inline int table_of(const btp_cfi_image *img, table *t)
{
    uintptr_t h = img->eh_hdr;
    if (!h || h < img->lo || h >= img->hi)
        return 0;
    if (img->hi - h >= 12) {
        /* What GNU ld and lld write: version 1, a 4-byte pc-relative frame
         * pointer, a 4-byte count, 4-byte signed datarel entries. */
        uint8_t b[4];
        uint32_t count;
        memcpy(b, (const void *)h, 4);
        memcpy(&count, (const void *)(h + 8), 4);
        if (b[0] == 1 && b[1] == (PE_PCREL | PE_SDATA4) && b[2] == PE_UDATA4 &&
            b[3] == (PE_DATAREL | PE_SDATA4)) {
            if (count == 0 || count > (img->hi - h - 12) / 8)
                return 0;
            t->at = h + 12;
            t->count = count;
            t->size = 4;
            t->sgn = 1;
            return 1;
        }
    }
    return table_of_any(img, t);
}

/* table_of() for any encoding the reader understands. */
static BTP_NOINLINE int table_of_any(const btp_cfi_image *img, table *t)
{
    uintptr_t h = img->eh_hdr;
    rd r = {h, img->hi, 0};
    if (u8(&r) != 1)
        return 0;
    uint8_t ptr_enc = u8(&r), cnt_enc = u8(&r), tab_enc = u8(&r);
    if (ptr_enc == PE_OMIT || cnt_enc == PE_OMIT || tab_enc == PE_OMIT)
        return 0;
    (void)enc(&r, ptr_enc, h, 1);
    t->count = enc(&r, cnt_enc, h, 1);
    switch (tab_enc) {
    case PE_DATAREL | PE_SDATA4:
    case PE_DATAREL | PE_UDATA4: t->size = 4; break;
    case PE_DATAREL | PE_SDATA8:
    case PE_DATAREL | PE_UDATA8: t->size = 8; break;
    default: return 0; /* not a searchable table */
    }
    if (r.bad || t->count == 0 || t->count > (r.end - r.p) / (2 * t->size))
        return 0;
    t->at = r.p;
    t->sgn = (tab_enc & 0x08) != 0;
    return 1;
}

/* Field k (0: initial location, 1: FDE address) of entry i, relative to
 * .eh_frame_hdr (i < count: inside the image). */
static uintptr_t entry(const btp_cfi_image *img, const table *t, uint64_t i, unsigned k)
{
    rd r = {t->at + (uintptr_t)(i * 2 * t->size) + k * t->size, img->hi, 0};
    uint64_t v = fixed(&r, t->size);
    if (t->size == 4)
        return t->sgn ? (uintptr_t)(int32_t)v : (uintptr_t)v;
    return (uintptr_t)v;
}

/* The FDE for `pc` through .eh_frame_hdr's sorted table: 1 and its
 * address, or 0. */
static int find_fde(const btp_cfi_image *img, uintptr_t pc, uintptr_t *fde)
{
    table t;
    if (!table_of(img, &t))
        return 0;
    uintptr_t h = img->eh_hdr;
    /* The last entry whose initial location is <= pc. */
    uint64_t lo = 0, hi = t.count;
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (h + entry(img, &t, mid, 0) <= pc)
            lo = mid;
        else
            hi = mid;
    }
    if (h + entry(img, &t, lo, 0) > pc)
        return 0;
    *fde = h + entry(img, &t, lo, 1);
    return 1;
}

/* The row for `look` in its image: 1 with *rw, *ra_col, *signal filled;
 * 0 when there is no FDE for it or the tables are malformed. */
static int row_for(walk *wk, const btp_cfi_image *img, uintptr_t look, row *rw, unsigned *ra_col,
                   uint8_t *signal)
{
    for (unsigned i = 0; i < CACHE_N; i++)
        if (wk->cache[i].look == look) {
            *rw = wk->cache[i].rw;
            *ra_col = wk->cache[i].ra;
            *signal = wk->cache[i].signal;
            return 1;
        }
    uintptr_t fde;
    if (!find_fde(img, look, &fde) || fde < img->lo || fde >= img->hi)
        return 0;
    rd r = {fde, img->hi, 0};
    uint64_t len = fixed(&r, 4);
    if (len == 0xffffffffu)
        len = fixed(&r, 8);
    if (r.bad || len == 0 || len > r.end - r.p)
        return 0;
    r.end = r.p + (uintptr_t)len;
    uintptr_t id_at = r.p;
    uint64_t cie_off = fixed(&r, 4);
    if (r.bad || cie_off == 0 || cie_off > id_at - img->lo)
        return 0;
    cie ci;
    if (!parse_cie(img, id_at - (uintptr_t)cie_off, &ci))
        return 0;
    uintptr_t begin = enc(&r, ci.fde_enc, img->dbase, 1);
    uintptr_t range = enc(&r, (uint8_t)(ci.fde_enc & 0x0f), 0, 0);
    if (r.bad || look < begin || look - begin >= range)
        return 0;
    if (ci.z) {
        uint64_t alen = uleb(&r);
        if (r.bad || !need(&r, (uintptr_t)alen))
            return 0;
        r.p += (uintptr_t)alen;
    }
    prog *pg = &wk->pg;
    memset(&pg->cur, 0, sizeof pg->cur); /* every register: same value */
    pg->cur.cfa.kind = R_NONE;
    pg->depth = 0;
    rd ri = {ci.ins, ci.ins_end, 0};
    if (!run(&ri, &ci, pg, 0, UINT64_MAX, img->dbase))
        return 0;
    pg->init = pg->cur;
    pg->depth = 0;
    if (!run(&r, &ci, pg, begin, look, img->dbase) || pg->cur.cfa.kind == R_NONE)
        return 0;
    *rw = pg->cur;
    *ra_col = ci.ra;
    *signal = ci.signal;
    cached *slot = &wk->cache[wk->next_slot++ % CACHE_N];
    slot->look = look;
    slot->rw = pg->cur;
    slot->ra = ci.ra;
    slot->signal = ci.signal;
    return 1;
}

/* ------------------------------------------------------------------ */
/* DWARF expressions                                                    */
/* ------------------------------------------------------------------ */

static int eval(const btp_cfi_env *env, const rule *e, const btp_cfi_regs *regs,
                const uintptr_t *push, uintptr_t *out)
{
    uintptr_t st[EXPR_STACK];
    unsigned n = 0;
    if (push)
        st[n++] = *push;
    rd r = {(uintptr_t)e->v, (uintptr_t)e->v + e->len, 0};
    for (unsigned steps = 0; r.p < r.end; steps++) {
        if (steps >= EXPR_STEPS)
            return 0;
        uint8_t op = u8(&r);
        uintptr_t a, b;
        if (op >= 0x30 && op <= 0x4f) { /* lit0..31 */
            if (n >= EXPR_STACK)
                return 0;
            st[n++] = op - 0x30u;
            continue;
        }
        if ((op >= 0x70 && op <= 0x8f) || op == 0x92) { /* breg0..31, bregx */
            uint64_t reg = op == 0x92 ? uleb(&r) : op - 0x70u;
            int64_t off = sleb(&r);
            if (r.bad || !has(regs, (unsigned)(reg < BTP_CFI_NREG ? reg : BTP_CFI_NREG)) ||
                n >= EXPR_STACK)
                return 0;
            st[n++] = regs->r[reg] + (uintptr_t)off;
            continue;
        }
        /* Constants: a = the operand, pushed below. */
        switch (op) {
        case 0x03: a = (uintptr_t)fixed(&r, (unsigned)W); goto push1;  /* addr */
        case 0x08: a = u8(&r); goto push1;                              /* const1u */
        case 0x09: a = (uintptr_t)(int8_t)u8(&r); goto push1;           /* const1s */
        case 0x0a: a = (uintptr_t)fixed(&r, 2); goto push1;             /* const2u */
        case 0x0b: a = (uintptr_t)(int16_t)fixed(&r, 2); goto push1;    /* const2s */
        case 0x0c: a = (uintptr_t)fixed(&r, 4); goto push1;             /* const4u */
        case 0x0d: a = (uintptr_t)(int32_t)fixed(&r, 4); goto push1;    /* const4s */
        case 0x0e: a = (uintptr_t)fixed(&r, 8); goto push1;             /* const8u */
        case 0x0f: a = (uintptr_t)fixed(&r, 8); goto push1;             /* const8s */
        case 0x10: a = (uintptr_t)uleb(&r); goto push1;                 /* constu */
        case 0x11: a = (uintptr_t)sleb(&r); goto push1;                 /* consts */
        default: break;
        }
        /* Stack operations and unary operators. */
        switch (op) {
        case 0x12: /* dup */
        case 0x14: /* over */
            if (n < (op == 0x12 ? 1u : 2u))
                return 0;
            a = st[n - (op == 0x12 ? 1 : 2)];
            goto push1;
        case 0x15: /* pick */
            b = u8(&r);
            if (b >= n)
                return 0;
            a = st[n - 1 - b];
            goto push1;
        case 0x13: /* drop */
            if (n < 1)
                return 0;
            n--;
            continue;
        case 0x16: /* swap */
            if (n < 2)
                return 0;
            a = st[n - 1];
            st[n - 1] = st[n - 2];
            st[n - 2] = a;
            continue;
        case 0x17: /* rot */
            if (n < 3)
                return 0;
            a = st[n - 1];
            st[n - 1] = st[n - 2];
            st[n - 2] = st[n - 3];
            st[n - 3] = a;
            continue;
        case 0x06: /* deref */
        case 0x94: { /* deref_size */
            unsigned size = op == 0x06 ? (unsigned)W : u8(&r);
            uintptr_t v;
            if (n < 1 || size == 0 || size > W || !load(env, st[n - 1], &v))
                return 0;
            if (size < W)
                v &= ((uintptr_t)1 << (8 * size)) - 1;
            st[n - 1] = v;
            continue;
        }
        case 0x19: /* abs */
        case 0x1f: /* neg */
        case 0x20: /* not */
        case 0x23: /* plus_uconst */
            if (n < 1)
                return 0;
            a = st[n - 1];
            if (op == 0x19)
                a = (intptr_t)a < 0 ? 0 - a : a;
            else if (op == 0x1f)
                a = 0 - a;
            else if (op == 0x20)
                a = ~a;
            else
                a += (uintptr_t)uleb(&r);
            st[n - 1] = a;
            continue;
        case 0x96: /* nop */
            continue;
        case 0x2f: { /* skip */
            int16_t d = (int16_t)fixed(&r, 2);
            uintptr_t to = r.p + (uintptr_t)(intptr_t)d;
            if (r.bad || to < (uintptr_t)e->v || to > r.end)
                return 0;
            r.p = to;
            continue;
        }
        case 0x28: { /* bra */
            int16_t d = (int16_t)fixed(&r, 2);
            if (r.bad || n < 1)
                return 0;
            if (st[--n] != 0) {
                uintptr_t to = r.p + (uintptr_t)(intptr_t)d;
                if (to < (uintptr_t)e->v || to > r.end)
                    return 0;
                r.p = to;
            }
            continue;
        }
        default: break;
        }
        /* Binary operators: b = top, a = below it. */
        if (n < 2)
            return 0;
        b = st[--n];
        a = st[n - 1];
        switch (op) {
        case 0x1a: a &= b; break;
        case 0x1b: if (b == 0) return 0; a = (uintptr_t)((intptr_t)a / (intptr_t)b); break;
        case 0x1c: a -= b; break;
        case 0x1d: if (b == 0) return 0; a %= b; break;
        case 0x1e: a *= b; break;
        case 0x21: a |= b; break;
        case 0x22: a += b; break;
        case 0x24: a = b >= 8 * W ? 0 : a << b; break;
        case 0x25: a = b >= 8 * W ? 0 : a >> b; break;
        case 0x26: a = b >= 8 * W ? (uintptr_t)((intptr_t)a < 0 ? -1 : 0)
                                  : (uintptr_t)((intptr_t)a >> b); break;
        case 0x27: a ^= b; break;
        case 0x29: a = a == b; break;
        case 0x2a: a = (intptr_t)a >= (intptr_t)b; break;
        case 0x2b: a = (intptr_t)a > (intptr_t)b; break;
        case 0x2c: a = (intptr_t)a <= (intptr_t)b; break;
        case 0x2d: a = (intptr_t)a < (intptr_t)b; break;
        case 0x2e: a = a != b; break;
        default: return 0; /* not allowed in call frame information, or unknown */
        }
        st[n - 1] = a;
        continue;
    push1:
        if (r.bad || n >= EXPR_STACK)
            return 0;
        st[n++] = a;
    }
    if (r.bad || n == 0)
        return 0;
    *out = st[n - 1];
    return 1;
}

/* ------------------------------------------------------------------ */
/* One step                                                             */
/* ------------------------------------------------------------------ */

/* ------------------------------------------------------------------ */
/* The layout cache (cfi_cache.h)                                       */
/* ------------------------------------------------------------------ */

/*
 * A packed layout: a row whose every rule is one of: same value, undefined,
 * saved at CFA + k words (|k| < 128), with the CFA a register plus a 32-bit
 * offset, the stack pointer the CFA, the return address saved, not a signal
 * frame, at most FAST_MAX_SAVED other registers saved; or any row whose
 * return address is undefined (it ends the walk whatever else it says).
 * Unwinding with it does what apply() does with the row, load for load.
 *  w[0] the pc looked up
 *  w[1] bits 0-31 the image's tag, 32-39 the CFA's register, 40-47 the
 *       return-address column, 48-51 the number of other saved registers
 *       (not the return address, not the frame pointer), 55 the row ends
 *       the walk
 *  w[2] bits 0-31 the CFA's offset; then a signed byte each, in words from
 *       the CFA: the return address's slot, the frame pointer's (-128: not
 *       saved), the lowest and the highest of all saved registers' slots
 *  w[3] bits 0-31 the registers that stay known (all but the undefined
 *       ones), 32-63 the registers known afterwards (the saved ones and the
 *       stack pointer)
 *  w[4] the other saved registers' numbers, a byte each
 *  w[5] their offsets in words, a signed byte each
 * (the frame's first words are what a frame with no other saved register
 * needs.)
 */
#define FAST_MAX_SAVED 8

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* What identifies an image for the cache: where it is, its unwind table
 * and loader record (a new object at the same place has another record, or
 * the same one for the same file), and the size and ends of its search
 * table (so a different file put where an unloaded one was, with a record
 * at the same address, still differs). Never 0. */
uint32_t btp_cfi_image_tag(const btp_cfi_image *img)
{
    uint64_t h = img->lo + img->hi * 0x9e3779b97f4a7c15ull + img->eh_hdr * 0xc2b2ae3d27d4eb4full +
                 img->id * 0x165667b19e3779f9ull + img->dbase * 0xd6e8feb86659fd93ull +
                 (img->text_lo ^ img->text_hi) * 0xff51afd7ed558ccdull;
    table t;
    if (table_of(img, &t)) {
        /* the first and last entries (inside the image: table_of checked
         * the count), 4 or 8 bytes a field */
        uint64_t first[2] = {0, 0}, last[2] = {0, 0};
        uintptr_t end = t.at + (uintptr_t)((t.count - 1) * 2 * t.size);
        if (t.size == 4) {
            memcpy(first, (const void *)t.at, 8);
            memcpy(last, (const void *)end, 8);
        } else {
            memcpy(first, (const void *)t.at, 16);
            memcpy(last, (const void *)end, 16);
        }
        h ^= t.count * 0xbf58476d1ce4e5b9ull + first[0] * 0x94d049bb133111ebull +
             first[1] * 0x9e3779b97f4a7c15ull + last[0] * 0xc2b2ae3d27d4eb4full +
             last[1] * 0x165667b19e3779f9ull;
    }
    h = mix64(h);
    uint32_t tag = (uint32_t)(h ^ (h >> 32));
    return tag ? tag : 1;
}

/* Pack rw (the row for `look`) if it qualifies; 1 if it did. */
static int pack(const row *rw, unsigned ra, uint8_t signal, uintptr_t look, uint32_t tag,
                btp_cfi_fast *f)
{
    memset(f, 0, sizeof *f);
    f->w[0] = (uint64_t)look;
    f->w[1] = tag | (uint64_t)ra << 40;
    if (rw->r[ra].kind == R_UNDEF) {
        f->w[1] |= (uint64_t)1 << 55;
        return 1;
    }
#if defined(__aarch64__)
    if (rw->ra_signed)
        return 0;
#endif
    if (signal || rw->cfa.kind != R_REG || rw->cfa.v > INT32_MAX || rw->cfa.v < INT32_MIN ||
        rw->r[BTP_CFI_SP].kind != R_SAME || rw->r[ra].kind != R_OFFSET || ra == BTP_CFI_FP)
        return 0;
    uint8_t reg[16] = {0}, ra_off = 0, fp_off = 0x80;
    int8_t off[16] = {0}, lo = 127, hi = -128;
    unsigned n = 0;
    uint32_t undef = 0, saved = 0;
    for (unsigned i = 0; i < BTP_CFI_NREG; i++) {
        const rule *u = &rw->r[i];
        switch (u->kind) {
        case R_SAME: break;
        case R_UNDEF: undef |= (uint32_t)1 << i; break;
        case R_OFFSET: {
            if (u->v % (intptr_t)W != 0 || u->v / (intptr_t)W < -127 || u->v / (intptr_t)W > 127)
                return 0;
            int8_t k = (int8_t)(u->v / (intptr_t)W);
            lo = k < lo ? k : lo;
            hi = k > hi ? k : hi;
            saved |= (uint32_t)1 << i;
            if (i == ra) {
                ra_off = (uint8_t)k;
            } else if (i == BTP_CFI_FP) {
                fp_off = (uint8_t)k;
            } else {
                if (n == FAST_MAX_SAVED)
                    return 0;
                reg[n] = (uint8_t)i;
                off[n++] = k;
            }
            break;
        }
        default: return 0;
        }
    }
    f->w[1] |= (uint64_t)rw->cfa.reg << 32 | (uint64_t)n << 48;
    f->w[2] = (uint64_t)(uint32_t)(int32_t)rw->cfa.v | (uint64_t)ra_off << 32 |
              (uint64_t)fp_off << 40 | (uint64_t)(uint8_t)lo << 48 | (uint64_t)(uint8_t)hi << 56;
    f->w[3] = (uint64_t)(uint32_t)~undef | (uint64_t)(saved | (uint32_t)1 << BTP_CFI_SP) << 32;
    memcpy(&f->w[4], reg, 8);
    memcpy(&f->w[5], off, 8);
    return 1;
}

enum { STEP_OK, STEP_END, STEP_FAIL, STEP_NO_INFO };

/* With a cache: the image holding `look` (and its tag) among those this
 * walk has met (met_image: none, NULL), else from the environment (asked
 * once per image and walk); NULL if none holds it. */
static inline const seen *met_image(const walk *wk, uintptr_t look)
{
    for (unsigned i = 0; i < wk->n_img; i++)
        if (look >= wk->img[i]->lo && look < wk->img[i]->hi)
            return wk->img[i];
    return NULL;
}

static BTP_NOINLINE const seen *seen_image_new(walk *wk, const btp_cfi_env *env,
                                               uintptr_t look);

/* (the images met, inline: a walk meets most of its images again) */
static inline const seen *seen_image(walk *wk, const btp_cfi_env *env, uintptr_t look)
{
    const seen *met = met_image(wk, look);
    return met ? met : seen_image_new(wk, env, look);
}

static BTP_NOINLINE const seen *seen_image_new(walk *wk, const btp_cfi_env *env,
                                               uintptr_t look)
{
    /* Into a free place of own[] (a find that fails leaves it free), else
     * over the oldest (only once found: the walk may hold it). */
    unsigned own = wk->n_img - wk->n_keep;
    seen *sn;
    if (own < SEEN_N) {
        sn = &wk->own[own];
        if (!env->find(env->ctx, look, sn))
            return NULL;
        wk->img[wk->n_img++] = sn;
    } else {
        btp_cfi_image img;
        if (!env->find(env->ctx, look, &img))
            return NULL;
        sn = &wk->own[wk->next_img++ % SEEN_N];
        *sn = img;
    }
    if (!sn->tag)
        sn->tag = btp_cfi_image_tag(sn);
    return sn;
}

/* The image holding `look` and its tag (0 without a cache), or NULL: with a
 * cache, as seen_image(); without, from the environment into *scratch. */
static const btp_cfi_image *find_image(walk *wk, const btp_cfi_env *env, uintptr_t look,
                                       btp_cfi_image *scratch, uint32_t *tag)
{
    if (!env->cache) {
        *tag = 0;
        return env->find(env->ctx, look, scratch) ? scratch : NULL;
    }
    const seen *sn = seen_image(wk, env, look);
    if (!sn)
        return NULL;
    *tag = sn->tag;
    return sn;
}

#if defined(__aarch64__)
/* cur's pc is aarch64's signal trampoline (see sigreturn_step). */
static int sigreturn_code(const btp_cfi_env *env, const btp_cfi_image *img,
                          const btp_cfi_regs *cur)
{
    uint32_t ins[2];
    int readable = img ? cur->pc >= img->text_lo && cur->pc <= img->text_hi - 8
                       : env->code_ok && env->code_ok(env->ctx, cur->pc, 8);
    if (!readable || !has(cur, BTP_CFI_SP))
        return 0;
    memcpy(ins, (const void *)cur->pc, sizeof ins);
    return ins[0] == 0xd2801168u && ins[1] == 0xd4000001u;
}
#endif

enum { FAST_DONE, FAST_MISS };

/* What fast_frames() keeps from one frame to the next. */
typedef struct fast_state {
    uintptr_t pc, sp, fp; /* on the chain from one frame to the next */
    uint64_t valid;
    uintptr_t adj;        /* 1: pc is a return address, looked up inside its call */
    const seen *sn;       /* the image of the last frame (NULL: none yet) */
    int first;
    uintptr_t msp;        /* the stack pointer of the next memo state to try */
} fast_state;

/* FS_END: the walk is over where the memo may record it (the outermost
 * frame, a return address of 0); FS_MEMO: the state may be one of the
 * memo's (its stack pointer reached msp). */
enum { FS_OK, FS_DONE, FS_MISS, FS_CALL, FS_END, FS_MEMO };

/* ------------------------------------------------------------------ */
/* The walk memo (cfi.h)                                                */
/* ------------------------------------------------------------------ */

/*
 * A step taken with a packed layout (base the stack or frame pointer, as
 * nearly all are) is a function of: the state it starts from (pc, whether
 * it is a return address, the stack pointer, the frame pointer when the
 * CFA is based on it, which of the two are known), the layout (fixed by
 * the pc and its image's cache tag), and the words it reads from the stack.
 * Of those words, the frames that follow depend only on the return address
 * (the next pc) and the frame pointer (when a later CFA is based on it
 * before another step restores it); the other saved registers feed no CFA
 * here. So when a walk reaches a state equal to state j of the memo (in
 * every part the rest depends on), and for every step k >= j the image
 * holding its pc has the tag it had, its slots lie in stack the
 * environment vouches for, and its return-address slot (and frame-pointer
 * slot, where used) holds what it held, then the walk from there is the
 * memo's from j: the same frames, ending the same way (the outermost
 * frame's layout, or a return address of 0). Each condition is checked as
 * the full walk would have checked it, so the result is the one the walk
 * gives without the memo (test_cfi_memo.c checks that against walks
 * without, over stacks changed word by word). A check that fails leaves the
 * walk to go on as it would have, and later states may still match.
 *
 * info[k], for state k: bits 0-31 the step's slots as w[2] of its packed
 * layout gives them (bytes, words from the CFA: the return address, the
 * frame pointer (-128: not restored), the lowest and the highest slot
 * read); then the flags below.
 */
#define MI_ADJ ((uint64_t)1 << 32)      /* pc is a return address (looked up at pc - 1) */
#define MI_BASE_FP ((uint64_t)1 << 33)  /* the step's CFA is based on the frame pointer */
#define MI_FP_UNDEF ((uint64_t)1 << 34) /* the step makes the frame pointer unknown */
#define MI_FP_LIVE ((uint64_t)1 << 35)  /* the rest depends on the state's frame pointer */
#define MI_FP_OK ((uint64_t)1 << 36)    /* the state's frame pointer is known */
#define MI_SP_OK ((uint64_t)1 << 37)    /* the state's stack pointer is known */
#define MI_END0 ((uint64_t)1 << 38)     /* the end state: pc 0 (else the outermost frame) */
#define MI_SAME_IMG ((uint64_t)1 << 39) /* the pc lies in the previous state's image */
#define MI_FP_CHECK ((uint64_t)1 << 40) /* the step's frame-pointer slot is used later */


static uint64_t mi_state(uintptr_t adj, uint64_t valid)
{
    return (adj ? MI_ADJ : 0) | ((valid >> BTP_CFI_FP & 1) ? MI_FP_OK : 0) |
           ((valid >> BTP_CFI_SP & 1) ? MI_SP_OK : 0);
}

/* Record a state of this run: a step from it (info with its slots and
 * flags), or the end (the ring's next place is left for the next step). */
static inline void rec_state(walk *wk, unsigned at, uintptr_t pc, uintptr_t sp, uintptr_t fp,
                             uint32_t tag, uint64_t info)
{
    wk->rec_pc[at] = pc;
    wk->rec_sp[at] = sp;
    wk->rec_fp[at] = fp;
    wk->rec_tag[at] = tag;
    wk->rec_info[at] = info;
}

#if BTP_CFI_MEMO
static int8_t mi_off(uint64_t info, unsigned byte)
{
    return (int8_t)(uint8_t)(info >> (8 * byte));
}

static void memo_put(btp_cfi_memo *m, unsigned at, const walk *wk, unsigned r)
{
    m->pc[at] = wk->rec_pc[r];
    m->fr[at].value = (uint64_t)wk->rec_pc[r];
    m->fr[at].kind = BTP_FRAME_RA;
    m->sp[at] = wk->rec_sp[r];
    m->fp[at] = wk->rec_fp[r];
    m->tag[at] = wk->rec_tag[r];
    m->info[at] = wk->rec_info[r];
}

_Static_assert(BTP_CFI_MEMO_N <= 32, "a memo's states are bits of a uint32_t");

/*
 * The memo after this walk: the last steps of its run, then the memo's
 * own from state j on (j > E: none, the run ended the walk; its end state
 * is in the ring's place after its last step). The end state is always at
 * E = BTP_CFI_MEMO_N, so the memo's own stay where they are and the run's
 * go before them (as many as there is room for).
 */
static inline __attribute__((always_inline)) void memo_save(walk *wk, unsigned j, uint64_t same_j)
{
    const unsigned E = BTP_CFI_MEMO_N;
    btp_cfi_memo *m = wk->memo;
    unsigned q = wk->rec_n < j ? wk->rec_n : j;
    if (j <= E) {
        if (q > 0) { /* the state before it is the run's: whether its pc lies in that one's image */
            m->info[j] = (m->info[j] & ~MI_SAME_IMG) | same_j;
            if (j < E)
                m->img_mask = same_j ? m->img_mask & ~((uint32_t)1 << j)
                                     : m->img_mask | (uint32_t)1 << j;
        }
    } else {
        q = wk->rec_n < E ? wk->rec_n : E;
        j = E;
        memo_put(m, E, wk, wk->rec_n & BTP_CFI_MEMO_N);
        m->info[E] &= ~MI_FP_LIVE; /* the end uses no register */
    }
    if (m->top_j < j)
        m->top_j = j; /* the states before j change (the end's: all) */
    /* The run's last q steps before state j, from the last down (state k
     * is the ring's rec_n - j + k): whether the frame pointer of each is
     * used by the rest, and so whether a step's frame-pointer slot must be
     * checked. The states must go up the stack, else the memo is dropped. */
    int live = (m->info[j] & MI_FP_LIVE) != 0;
    uintptr_t above = m->sp[j];
    uint32_t fpb = 0, imgb = 0, uab = 0; /* the run's bits of the masks */
    for (unsigned k = j, r = wk->rec_n; k-- > j - q;) {
        unsigned at = --r & BTP_CFI_MEMO_N;
        uint64_t f = wk->rec_info[at]; /* (no MI_FP_LIVE, MI_FP_CHECK yet) */
        uintptr_t sp = wk->rec_sp[at];
        if (above <= sp) {
            m->n = 0;
            return;
        }
        above = sp;
        if (mi_off(f, 1) != -128) {
            if (live)
                f |= MI_FP_CHECK; /* restored here, used later */
            live = 0;
        } else if (f & MI_FP_UNDEF) {
            live = 0;
        }
        if (f & MI_BASE_FP)
            live = 1;
        if (live)
            f |= MI_FP_LIVE;
        memo_put(m, k, wk, at);
        m->info[k] = f;
        m->ra_at[k] = wk->rec_ra[at];
        m->fp_at[k] = wk->rec_fpa[at];
        fpb |= (uint32_t)(f >> 40 & 1) << k;         /* MI_FP_CHECK */
        imgb |= (uint32_t)(~f >> 39 & 1) << k;       /* not MI_SAME_IMG */
        uab |= (uint32_t)(wk->rec_ra[at] % W != 0) << k;
    }
    if (q > 0) {
        uint32_t run = (((uint32_t)1 << q) - 1) << (j - q); /* (q <= j <= E < 32) */
        m->fp_mask = (m->fp_mask & ~run) | fpb;
        m->img_mask = (m->img_mask & ~run) | imgb;
        m->ua_mask = (m->ua_mask & ~run) | uab;
    }
    m->n = E - (j - q);
}

/* (memo_try() has it inline: it ends nearly every walk) */
static BTP_NOINLINE void memo_save_end(walk *wk)
{
    memo_save(wk, BTP_CFI_MEMO_N + 1, 0);
}

btp_cfi_memo *btp_cfi_memo_pick(btp_cfi_memo_set *set, uintptr_t pc)
{
    uint64_t h = (uint64_t)pc * 0x9E3779B97F4A7C15ull;
    return &set->m[h >> 32 & (BTP_CFI_MEMO_SET - 1)];
}
#endif

/* The stack pointer of the memo's next state to try (none: the highest
 * address, never reached: fast_one() checks only in its copy that calls
 * nothing, and the other copy moves on). */
static uintptr_t memo_next(const walk *wk)
{
    return wk->mi < BTP_CFI_MEMO_N ? wk->memo->sp[wk->mi] : UINTPTR_MAX;
}

/*
 * Whether the state s may be one of the memo's: 1 if the memo's next state
 * to try has s's stack pointer and pc (what memo_try() checks first), else
 * 0 with the states below s and one at s's stack pointer passed (the states
 * rise: no other one can be there). For a return address only (the walk's
 * first frame is not tried).
 */
static inline int memo_here(fast_state *s, walk *wk)
{
    if (s->sp < s->msp || !wk->memo || !s->adj)
        return 0;
    const btp_cfi_memo *m = wk->memo;
    unsigned j = wk->mi;
    while (j < BTP_CFI_MEMO_N && m->sp[j] < s->sp)
        j++;
    if (j < BTP_CFI_MEMO_N && m->sp[j] == s->sp) {
        if (m->pc[j] == s->pc) {
            wk->mi = j;
            return 1;
        }
        j++;
    }
    wk->mi = j;
    s->msp = memo_next(wk);
    return 0;
}

/* The stretch of stack the walk knows now (see walk). */
static void set_region(walk *wk, uintptr_t lo, uintptr_t hi)
{
    wk->rlo = lo;
    wk->rhi = hi;
    wk->rin_lo = lo + 128 * W;
    wk->rin_n = hi > lo && hi - lo > 256 * W ? hi - lo - 256 * W : 0;
}

/* Whether the slots lo..hi (the lowest and the highest: [lo, hi + W)) lie
 * in one stretch of stack the environment vouches for: the last one it
 * named, else the one holding lo (which becomes the last). */
static int slots_ok(walk *wk, const btp_cfi_env *env, uintptr_t lo, uintptr_t hi)
{
    if (lo >= wk->rlo && hi + W <= wk->rhi)
        return 1;
    btp_stack_bounds b;
    if (!env->region || !env->region(env->ctx, lo, &b) || lo < b.lo || hi + W > b.hi)
        return 0;
    set_region(wk, b.lo, b.hi);
    return 1;
}

/* An image no pc lies in. */
static const seen no_image;

/* ------------------------------------------------------------------ */
/* The head                                                             */
/* ------------------------------------------------------------------ */

/*
 * A walk's first steps are much the same walk after walk (the library's
 * own frames, from the capture's entry point down to where it started,
 * and often the caller's allocation wrappers after them): the same pcs,
 * the same layouts (fixed by each pc and its image's tag), the same CFAs
 * and slots relative to the start's stack pointer while the CFAs are
 * based on the stack pointer, or on a frame pointer at the same place
 * relative to it. The memo keeps those steps of the walk before (at most
 * BTP_CFI_HEAD_N from an exact start in a kept image, each from a pc with
 * a packed layout whose CFA is based on the stack or frame pointer; a walk
 * from elsewhere, which may start at another pc each time, records none,
 * as while it records it takes nothing from the memo; a walk that records
 * takes them all by the copy of fast_one() that calls) and what they
 * leave in the registers. A walk that starts at the head's pc with the
 * same registers known takes the head from the memo once: every slot the
 * head reads lies in one stretch of stack the environment vouches for,
 * the image holding each pc has the tag its layout had (a kept image, or
 * one asked for once this walk, as the walk asks), each frame pointer a
 * CFA is based on is where it was, and each return-address slot but the last holds the pc of the next
 * step (whose layout is the recorded one); the last gives the pc the walk
 * goes on from, whatever it is (but 0, which ends the walk: the walk takes
 * that step itself). The steps are then the recorded ones, load for load:
 * the frames go to the collector as each step would put them (its checks
 * may end the walk there), the registers take the values of the slots the
 * steps restored them from, and the walk goes on from the state after the
 * head as it would have. Else it walks the head and records it again.
 */
#define HEAD_OFF (~0u)
#define HEAD_STALE 16

static int head_kept(const walk *wk, const seen *sn)
{
    for (unsigned i = 0; i < wk->n_keep; i++)
        if (wk->img[i] == sn)
            return 1;
    return 0;
}

/* a - b as a 32-bit offset, or BTP_CFI_HEAD_NONE when it does not fit */
static int32_t head_rel(uintptr_t a, uintptr_t b)
{
    intptr_t d = (intptr_t)(a - b);
    return d > INT32_MIN && d <= INT32_MAX ? (int32_t)d : BTP_CFI_HEAD_NONE;
}

/* After step k, register r takes its value from the slot at `rel` (a
 * later restore of the same register replaces an earlier one). */
static void head_reg(btp_cfi_memo *m, unsigned k, unsigned r, int32_t rel)
{
    unsigned j = 0, n = m->hpn[k];
    while (j < n && m->hpi[k][j] != r)
        j++;
    if (j == n) {
        if (n == BTP_CFI_NREG || r >= BTP_CFI_NREG)
            return; /* cannot happen: one entry a register */
        m->hpi[k][j] = (uint8_t)r;
        m->hpn[k] = (uint8_t)(n + 1);
    }
    m->hp[k][j] = rel;
}

/* Step wk->hk of the head, just taken by fast_one() from state s with the
 * packed layout w1..w5 (regs, offs), giving cfa and the caller's pc (its
 * pc in the image of the step before: same_img): add it to the memo's head,
 * or end the recording. */
static BTP_NOINLINE void head_record(walk *wk, const fast_state *s, const seen *sn,
                                     uint64_t same_img, unsigned base, uintptr_t cfa,
                                     uint64_t w1, uint64_t w2, uint64_t w3, uint64_t regs,
                                     uint64_t offs, uintptr_t pc)
{
    btp_cfi_memo *m = wk->memo;
    unsigned k = wk->hk;
    uintptr_t sp0 = wk->hsp0;
    uintptr_t ra_at = cfa + (uintptr_t)((intptr_t)(int8_t)(w2 >> 32) * (intptr_t)W);
    int8_t fp_off = (int8_t)(w2 >> 40);
    int32_t lo = head_rel(cfa + (uintptr_t)((intptr_t)(int8_t)(w2 >> 48) * (intptr_t)W), sp0);
    int32_t hi = head_rel(cfa + (uintptr_t)((intptr_t)(int8_t)(w2 >> 56) * (intptr_t)W) + W, sp0);
    int32_t rcfa = head_rel(cfa, sp0), rfp = head_rel(s->fp, sp0);
    unsigned n = (unsigned)(w1 >> 48) & 0xf;
    wk->hk = HEAD_OFF;
    if (k >= BTP_CFI_HEAD_N || n > 8 || (k == 0) != !s->adj || pc == 0 || sn == &no_image ||
        (k == 0 && !head_kept(wk, sn)) ||
        (base != BTP_CFI_SP && base != BTP_CFI_FP) || lo == BTP_CFI_HEAD_NONE ||
        hi == BTP_CFI_HEAD_NONE || rcfa == BTP_CFI_HEAD_NONE ||
        (base == BTP_CFI_FP && rfp == BTP_CFI_HEAD_NONE)) {
        m->hend = 1; /* the head is as long as it gets */
        return;
    }
    m->hend = 0;
    if (k == 0) {
        m->hvalid0 = s->valid;
        m->hlo = INT32_MAX;
        m->hhi = INT32_MIN;
    }
    m->hn = 0; /* complete again below */
    m->hpc[k] = s->pc;
    m->htag[k] = sn->tag;
    m->hsame = (uint16_t)((m->hsame & ~(1u << k)) | (same_img ? 1u << k : 0));
    m->hcfa[k] = rcfa;
    m->hra[k] = head_rel(ra_at, sp0);
    m->hfps[k] = fp_off != -128 ? head_rel(cfa + (uintptr_t)((intptr_t)fp_off * (intptr_t)W), sp0)
                                : BTP_CFI_HEAD_NONE;
    m->hfp[k] = base == BTP_CFI_FP ? rfp : BTP_CFI_HEAD_NONE;
    m->hlo = lo < m->hlo ? lo : m->hlo;
    m->hhi = hi > m->hhi ? hi : m->hhi;
    /* the registers after this step: those after the step before, then
     * this step's restores */
    m->hpn[k] = k ? m->hpn[k - 1] : 0;
    if (k) {
        memcpy(m->hpi[k], m->hpi[k - 1], m->hpn[k]);
        memcpy(m->hp[k], m->hp[k - 1], m->hpn[k] * sizeof m->hp[k][0]);
    }
    for (unsigned i = 0; i < n; i++) {
        head_reg(m, k, regs & 0xff,
                 head_rel(cfa + (uintptr_t)((intptr_t)(int8_t)offs * (intptr_t)W), sp0));
        regs >>= 8;
        offs >>= 8;
    }
    head_reg(m, k, (w1 >> 40) & 0xff, m->hra[k]);
    m->hpc[k + 1] = pc;
    m->hvalid[k] = (s->valid | w3 >> 32) & w3;
    m->hn = k + 1;
    wk->hk = k + 1;
}

/* The walk is at its start s (an exact pc): take the head from the memo,
 * as far as it holds (see above). HEAD_TAKEN (s and the collector are
 * those after the steps taken, *taken of them; the registers the steps
 * restore wait for pend_flush()), HEAD_OVER (the collector ended the walk
 * inside them), or HEAD_NOT (nothing changed). Inline in fast_frames(),
 * its one caller, once a walk. */
#if BTP_CFI_MEMO
enum { HEAD_NOT, HEAD_TAKEN, HEAD_OVER };
static inline __attribute__((always_inline)) int head_take(walk *wk, fast_state *s,
                                                           btp_collector *c,
                                                           const btp_cfi_env *env,
                                                           unsigned *taken)
{
    const btp_cfi_memo *m = wk->memo;
    const unsigned hn = m->hn;
    const uintptr_t sp0 = s->sp;
    if (hn == 0 || hn > BTP_CFI_HEAD_N || s->pc != m->hpc[0] || s->valid != m->hvalid0 ||
        s->adj)
        return HEAD_NOT;
    uintptr_t lo = sp0 + (uintptr_t)(intptr_t)m->hlo, hi = sp0 + (uintptr_t)(intptr_t)m->hhi;
    if ((m->hlo < 0 ? lo > sp0 : lo < sp0) || (m->hhi < 0 ? hi > sp0 : hi < sp0) ||
        hi < lo + W || !slots_ok(wk, env, lo, hi - W))
        return HEAD_NOT;
    /* Step k is taken when its pc is the recorded one (the start's, or
     * the return address step k - 1 read) and its checks hold; its return
     * address is the pc the walk goes on from unless it is the next
     * step's. (A return address of 0 ends the walk: that step the walk
     * takes itself.) */
    uintptr_t fp = s->fp, pc = 0;
    const seen *sn = &no_image, *last = &no_image;
    unsigned steps = 0;
    const unsigned hsame = m->hsame & ~1u; /* (step 0 has no step before) */
    for (unsigned k = 0; k < hn; k++) {
        /* A step whose pc lay in the image of the step before when it was
         * recorded lies in it again (its pc is the recorded one, and that
         * image has the tag it had, which covers its range): nothing to
         * look up or check. */
        if (!(hsame >> k & 1)) {
            uintptr_t look = m->hpc[k] - (k ? 1 : 0);
            if (look - sn->lo >= sn->hi - sn->lo) {
                /* a kept image, or one the environment is asked about once
                 * this walk (as the walk would ask) */
                const seen *x = seen_image(wk, env, look);
                if (!x)
                    break;
                sn = x;
            }
            if (sn->tag != m->htag[k])
                break;
        }
        if (m->hfp[k] != BTP_CFI_HEAD_NONE && fp - sp0 != (uintptr_t)(intptr_t)m->hfp[k])
            break;
        uintptr_t ra = peek(sp0 + (uintptr_t)(intptr_t)m->hra[k]);
        if (ra == 0)
            break;
        steps = k + 1;
        pc = ra;
        last = sn;
        if (m->hfps[k] != BTP_CFI_HEAD_NONE)
            fp = peek(sp0 + (uintptr_t)(intptr_t)m->hfps[k]);
        if (k + 1 == hn || ra != m->hpc[k + 1])
            break;
    }
    if (steps == 0)
        return HEAD_NOT;
    /* the registers the steps restore: when something needs them (pend_flush) */
    wk->pend_head = steps;
    wk->pend_hsp0 = sp0;
    s->pc = pc;
    s->sp = sp0 + (uintptr_t)(intptr_t)m->hcfa[steps - 1];
    s->fp = fp;
    s->valid = m->hvalid[steps - 1];
    s->adj = 1;
    s->first = 0;
    s->sn = last; /* the image of the last step's pc */
    *taken = steps;
    wk->memo->head_used++;
    for (unsigned k = 0; k < steps; k++)
        if (!btp_collector_cfa(c, sp0 + (uintptr_t)(intptr_t)m->hcfa[k], 0) ||
            !btp_collector_add(c, k + 1 < steps ? m->hpc[k + 1] : pc))
            return HEAD_OVER;
    return HEAD_TAKEN;
}
#endif

/*
 * The saved registers of the cached steps taken since the last call, loaded
 * as each step would have loaded them, in order (a step restores them, then
 * its return-address column). A walk that ends in the cached steps (the
 * memo's rest, the outermost frame) never needs them: they feed only a CFA
 * based on another register and the full step. Their slots were checked by
 * their steps (in the stretch of stack known then, which stays so), and the
 * stack above the walker does not change while it runs.
 */
/* cur, copied from the start where not yet (see walk): before it is written. */
static inline void cur_own(walk *wk, btp_cfi_regs *cur)
{
    if (wk->cur_src) {
        *cur = *wk->cur_src;
        wk->cur_src = NULL;
    }
}

__attribute__((no_sanitize_address)) static void pend_flush(walk *wk, btp_cfi_regs *cur)
{
    cur_own(wk, cur);
#if BTP_CFI_MEMO
    if (wk->pend_head) {
        /* the head's (head_take): each register from the last slot it was
         * restored from */
        const btp_cfi_memo *m = wk->memo;
        unsigned k = wk->pend_head - 1;
        for (unsigned i = 0; i < m->hpn[k] && i < BTP_CFI_NREG; i++)
            cur->r[m->hpi[k][i]] = peek(wk->pend_hsp0 + (uintptr_t)(intptr_t)m->hp[k][i]);
        wk->pend_head = 0;
    }
#endif
    for (unsigned p = 0; p < wk->pend_n && p < PEND_N; p++) {
        uintptr_t cfa = wk->pend_cfa[p];
        uint64_t w1 = wk->pend_w1[p], regs = wk->pend_regs[p], offs = wk->pend_offs[p];
        unsigned n = (unsigned)(w1 >> 48) & 0xf;
        for (unsigned i = 0; i < n; i++) {
            cur->r[(regs & 0xff) % BTP_CFI_NREG] =
                peek(cfa + (uintptr_t)((intptr_t)(int8_t)offs * (intptr_t)W));
            regs >>= 8;
            offs >>= 8;
        }
        cur->r[((w1 >> 40) & 0xff) % BTP_CFI_NREG] = wk->pend_pc[p];
    }
    wk->pend_n = 0;
}

/*
 * One frame of fast_frames(). With may_call 0 it calls nothing and returns
 * FS_CALL (having changed nothing) where it would have to: a new image, a
 * new stretch of stack, the collector's or the cycle check's slow paths,
 * the first frame. Inlined twice, so that the loop that calls nothing can
 * keep the chain (pc, sp, fp) in registers.
 */
__attribute__((no_sanitize_address, always_inline)) static inline int fast_one(
    fast_state *s, walk *wk, btp_collector *c, const btp_cfi_env *env, btp_cfi_regs *cur,
    const int may_call)
{
    const uintptr_t adj = may_call ? s->adj : 1;
    /* (the other copy does not look: it makes progress after a miss) */
    if (BTP_CFI_MEMO && !may_call && memo_here(s, wk))
        return FS_MEMO;
    uintptr_t look = s->pc - adj;
    const seen *sn = s->sn;
    uint64_t same_img = MI_SAME_IMG;
    if (look - sn->lo >= sn->hi - sn->lo) {
        same_img = 0;
        /* another image this walk has seen (no call), or a new one */
        const seen *met = met_image(wk, look);
        if (met) {
            sn = met;
        } else {
            if (!may_call)
                return FS_CALL;
            if (s->pc == 0 || !(sn = seen_image(wk, env, look)))
                return FS_MISS;
        }
        s->sn = sn;
#if defined(__aarch64__)
    }
    /* The signal trampoline is recognised by its code, before any table
     * (see sigreturn_step): the full step looks. */
    if (!s->first) {
        if (!may_call)
            return FS_CALL;
        cur_own(wk, cur);
        cur->pc = s->pc;
        cur->r[BTP_CFI_SP] = s->sp;
        cur->valid = s->valid;
        if (sigreturn_code(env, sn, cur))
            return FS_MISS;
#endif
    }
    /* The layout, under its slot's sequence lock (cfi_cache.h). */
    if (look == 0)
        return FS_MISS;
    btp_cfi_slot *slot = btp_cfi_cache_slot(wk->slots, wk->mask, look);
    uint64_t seq = atomic_load_explicit(&slot->seq, memory_order_acquire);
    if (seq & 1 || atomic_load_explicit(&slot->w[0], memory_order_relaxed) != look)
        return FS_MISS;
    uint64_t w1 = atomic_load_explicit(&slot->w[1], memory_order_relaxed);
    uint64_t w2 = atomic_load_explicit(&slot->w[2], memory_order_relaxed);
    uint64_t w3 = atomic_load_explicit(&slot->w[3], memory_order_relaxed);
    unsigned n = (unsigned)(w1 >> 48) & 0xf;
    uint64_t regs = 0, offs = 0;
    if (n) {
        regs = atomic_load_explicit(&slot->w[4], memory_order_relaxed);
        offs = atomic_load_explicit(&slot->w[5], memory_order_relaxed);
    }
    atomic_thread_fence(memory_order_acquire);
    if (atomic_load_explicit(&slot->seq, memory_order_relaxed) != seq || (uint32_t)w1 != sn->tag)
        return FS_MISS;
    if (w1 >> 55 & 1) {
        /* the outermost frame */
        if (BTP_CFI_MEMO && wk->memo)
            rec_state(wk, wk->rec_n & BTP_CFI_MEMO_N, s->pc, s->sp, s->fp, sn->tag,
                      mi_state(adj, s->valid) | same_img);
        return FS_END;
    }
    unsigned base = (unsigned)(w1 >> 32) & 0xff;
    if (!(s->valid >> base & 1))
        return FS_DONE; /* apply() fails the step too */
    uintptr_t cfa;
    if (base == BTP_CFI_FP) {
        cfa = s->fp;
    } else if (base == BTP_CFI_SP) {
        cfa = s->sp;
    } else {
        pend_flush(wk, cur);
        cfa = cur->r[base];
    }
    cfa += (uintptr_t)(intptr_t)(int32_t)(uint32_t)w2;
    /* The slots, lowest to highest; all in one stretch of stack: each is.
     * They lie within 128 words of the CFA: where all of that lies in the
     * stretch known, so do they (the usual case, checked at once). */
    if (cfa - wk->rin_lo >= wk->rin_n) {
        uintptr_t lo = cfa + (uintptr_t)((intptr_t)(int8_t)(w2 >> 48) * (intptr_t)W);
        uintptr_t hi = cfa + (uintptr_t)((intptr_t)(int8_t)(w2 >> 56) * (intptr_t)W);
        if (hi < lo || hi + W < hi)
            return FS_MISS;
        if (lo < wk->rlo || hi + W > wk->rhi) {
            if (!may_call)
                return FS_CALL;
            if (!slots_ok(wk, env, lo, hi))
                return FS_MISS;
        }
    }
    /* The caller: its cycle check and its slot in the collector, before
     * anything changes (a call needed there is made by the other copy; the
     * collector has one stretch of stack, as fast_run() checked, and the
     * copy that calls nothing adds none). */
    if (!may_call && (c->head_n >= c->fast_end || cfa <= c->seg_hi[0]))
        return FS_CALL;
    uintptr_t ra_at = cfa + (uintptr_t)((intptr_t)(int8_t)(w2 >> 32) * (intptr_t)W);
    int8_t fp_off = (int8_t)(w2 >> 40);
    uintptr_t pc, fp = s->fp;
    if (cfa % W == 0) {
        /* the usual case: aligned */
        pc = *(const volatile uintptr_t *)ra_at;
        if (fp_off != -128)
            fp = *(const volatile uintptr_t *)(cfa + (uintptr_t)((intptr_t)fp_off * (intptr_t)W));
    } else {
        pc = peek(ra_at);
        if (fp_off != -128)
            fp = peek(cfa + (uintptr_t)((intptr_t)fp_off * (intptr_t)W));
    }
    /* the other saved registers: when something needs them (pend_flush) */
    unsigned p = wk->pend_n;
    if (p >= PEND_N) {
        pend_flush(wk, cur);
        p = 0;
    }
    wk->pend_cfa[p] = cfa;
    wk->pend_pc[p] = pc;
    wk->pend_w1[p] = w1;
    wk->pend_regs[p] = regs;
    wk->pend_offs[p] = offs;
    wk->pend_n = p + 1;
    if (BTP_CFI_MEMO && may_call && wk->hk != HEAD_OFF)
        head_record(wk, s, sn, same_img, base, cfa, w1, w2, w3, regs, offs, pc);
    if (BTP_CFI_MEMO && wk->memo) {
        if (base == BTP_CFI_SP || base == BTP_CFI_FP) {
            unsigned at = wk->rec_n & BTP_CFI_MEMO_N;
            rec_state(wk, at, s->pc, s->sp, s->fp, sn->tag,
                      (uint32_t)(w2 >> 32) | mi_state(adj, s->valid) | same_img |
                          (base == BTP_CFI_FP ? MI_BASE_FP : 0) |
                          ((w3 >> BTP_CFI_FP & 1) ? 0 : MI_FP_UNDEF));
            wk->rec_ra[at] = ra_at;
            wk->rec_fpa[at] = cfa + (uintptr_t)((intptr_t)fp_off * (intptr_t)W);
            wk->rec_n++;
        } else {
            wk->rec_n = 0; /* a CFA the memo cannot vouch for: a run starts after it */
        }
    }
    s->valid = (s->valid | w3 >> 32) & w3;
    s->pc = pc;
    s->sp = cfa;
    s->fp = fp;
    if (may_call) {
        s->adj = 1;
        s->first = 0;
    }
    if (pc == 0) {
        if (BTP_CFI_MEMO && wk->memo)
            rec_state(wk, wk->rec_n & BTP_CFI_MEMO_N, 0, cfa, fp, 0,
                      MI_END0 | mi_state(1, s->valid));
        return FS_END;
    }
    if (may_call) {
        if (!btp_collector_cfa(c, cfa, 0) || !btp_collector_add(c, pc))
            return FS_DONE;
    } else {
        /* checked above: no call */
        c->seg_hi[0] = cfa;
        c->out[c->head_n].value = (uint64_t)pc;
        c->out[c->head_n].kind = BTP_FRAME_RA;
        c->head_n++;
    }
    return FS_OK;
}

/* fast_one() without calls, as long as it goes: a function of its own, so
 * that the chain from frame to frame stays in registers. */
__attribute__((no_sanitize_address, noinline, aligned(64))) static int fast_run(
    fast_state *sp, walk *wk, btp_collector *c, const btp_cfi_env *env, btp_cfi_regs *cur)
{
    if (!sp->adj || c->n_seg != 1)
        return FS_CALL; /* the first frame, or no stretch of stack yet: the other copy */
    fast_state s = *sp;
    int st;
    while ((st = fast_one(&s, wk, c, env, cur, 0)) == FS_OK)
        ;
    *sp = s;
    return st;
}

#if BTP_CFI_MEMO

/* Whether the image holding pc (a return address where f says so) has the
 * tag its layout had, *sn the image of the state before (then pc's). */
static inline int memo_image(walk *wk, const btp_cfi_env *env, const seen **sn, uintptr_t pc,
                             uint64_t f, uint32_t tag)
{
    uintptr_t look = pc - ((f & MI_ADJ) ? 1 : 0);
    const seen *x = *sn;
    if (look - x->lo >= x->hi - x->lo) {
        if (pc == 0 || !(x = seen_image(wk, env, look)))
            return 0;
        *sn = x;
    }
    return x->tag == tag;
}

/*
 * Whether the slots of the memo's steps from state j on all end at or below
 * rhi, where 128 words above its last CFA do not (the main thread's known
 * stack ends with the page holding its outermost frame, often nearer than
 * that: without this, every capture of a program whose environment put
 * that frame there checked each step's slots): the steps' own highest
 * slots, from the last step down while 128 words above its CFA reach past
 * rhi (below that, the CFAs rise: every lower step's slots end below).
 */
static BTP_NOINLINE int memo_top_in(const btp_cfi_memo *m, unsigned j, uintptr_t rhi)
{
    if (rhi < 128 * W)
        return 0;
    for (unsigned k = BTP_CFI_MEMO_N; k-- > j;) {
        uintptr_t cfa = m->sp[k + 1];
        if (cfa <= rhi - 128 * W)
            return 1;
        intptr_t top = ((intptr_t)mi_off(m->info[k], 3) + 1) * (intptr_t)W;
        uintptr_t e = cfa + (uintptr_t)top;
        if (cfa > rhi || (top > 0 ? e < cfa || e > rhi : e > cfa))
            return 0;
    }
    return 1;
}

#if BTP_CAPTURE_CBF_STREAM
/*
 * btp_capture_cbf's walk has just taken the frames of states j+1 to the
 * last from the memo (return addresses, none 0; memo_try()): write the
 * capture's stream into the collector's sink with their CBF instructions,
 * each after the pc of the state before, kept in the memo from one capture
 * to the next with the pcs they were written for: those whose two pcs are
 * the frames the collector took now are used as they are (a walk's memo
 * keeps the states above where it joined it, so a capture that joins it
 * where the last one did finds all of them), the others written (by
 * btp_cbf_put_ra, the choice every encoder makes) in front of them. The
 * frames before those (the walk's own, from the capture's pc to state
 * j's) are written by btp_frames_cbf; where the last two CBF captures took
 * the same ones, their stream is kept in front of the memo's instructions
 * too and the capture copies the whole stream at once. So the bytes are
 * those of the collector's frames, whatever the memo holds. A repeat (a
 * `rep`, not an address instruction) leaves the stream to the capture's
 * encoder. Only the memo's owner writes it (cfi.h), so nothing else
 * changes it meanwhile.
 */
/* memo_cbf's instructions of states from..lo-1 (lo: the lowest whose kept
 * one holds, last + 1 if none), for the pcs f[k - j] (state k), written in
 * front of the kept ones; 0 at a repeat (then none is kept). The head's
 * stream, which lay in front of them, goes. */
static BTP_NOINLINE int memo_cbf_write(btp_cfi_memo *m, const btp_frame *f, unsigned j,
                                       unsigned from, unsigned lo, unsigned last)
{
    /* (room for the last instruction's 8-byte operand store) */
    uint8_t tmp[9 * BTP_CFI_MEMO_N + 8], *p = tmp;
    uint16_t at[BTP_CFI_MEMO_N + 1];
    m->cbf_head_len = 0;
    for (unsigned k = from; k < lo; k++) {
        at[k] = (uint16_t)(p - tmp);
        if (!(p = btp_cbf_put_ra(p, f[k - j].value, f[k - 1 - j].value))) {
            m->cbf_last = 0;
            return 0;
        }
    }
    /* (at most 9 bytes a state of from..last, which are at most
     * BTP_CFI_MEMO_N: they fit in front of the terminator, with the
     * head's room before them) */
    size_t len = (size_t)(p - tmp), end = lo <= last ? m->cbf_at[lo] : sizeof m->cbf - 1;
    memcpy(m->cbf + end - len, tmp, len);
    m->cbf[sizeof m->cbf - 1] = CBF_OP_END;
    for (unsigned k = from; k < lo; k++)
        m->cbf_at[k] = (uint16_t)(end - len + at[k]);
    for (unsigned k = from - 1; k < lo; k++)
        m->cbf_pc[k] = (uintptr_t)f[k - j].value;
    m->cbf_lo = from;
    m->cbf_last = last;
    return 1;
}

static BTP_NOINLINE void memo_cbf(btp_cfi_memo *m, btp_collector *c, unsigned j)
{
    const unsigned from = j + 1,
                   last = BTP_CFI_MEMO_N - ((m->info[BTP_CFI_MEMO_N] & MI_END0) ? 1 : 0);
    btp_cbf_sink *const sink = c->cbf;
    const size_t n = c->head_n;
    /* (the frames taken the usual way, straight into the head; the
     * buffer holds the longest stream of n frames) */
    if (last < from || n <= last - j || c->fast_end == 0 || sink->cap < BTP_CBF_BOUND(n))
        return;
    /* the head: the collector's frames before the memo's, the last of
     * them state j's pc */
    const size_t hn = n - (last - j);
    const btp_frame *f = c->out + (hn - 1);
    /* lo: the lowest state whose kept instruction holds (last + 1: none) */
    unsigned lo = last + 1;
    if (m->cbf_last == last) {
        const unsigned k = m->cbf_lo > from ? m->cbf_lo : from;
        /* states k - 1 .. last, two a pass (scalar: vectorised, the
         * frames' 16-byte stride cost more than it saved) */
        const btp_frame *q = f + (k - 1 - j);
        const uintptr_t *w = m->cbf_pc + (k - 1);
        const size_t cnt = last - k + 2;
        uint64_t diff = 0, diff1 = 0;
        size_t i = 0;
        for (; i + 2 <= cnt; i += 2) {
            diff |= q[i].value ^ w[i];
            diff1 |= q[i + 1].value ^ w[i + 1];
            BTP_OPAQUE(diff);
        }
        if (i < cnt)
            diff |= q[i].value ^ w[i];
        diff |= diff1;
        if (diff == 0) {
            lo = k; /* the usual case: all hold */
        } else if (f[last - j].value == m->cbf_pc[last]) {
            while (lo > k && f[lo - 2 - j].value == m->cbf_pc[lo - 2])
                lo--;
        }
    }
    if (from < lo && !memo_cbf_write(m, f, j, from, lo, last))
        return;
    /* (the memo's instructions and the terminator) */
    const size_t at = m->cbf_at[from], rest = sizeof m->cbf - at;
    uint8_t *const buf = sink->buf;
    /* The head as the last capture's? (its last frame, state j's pc, was
     * compared above.) Its frames are noted in two steps: first their
     * count, state and the frame of the function that called the one that
     * captured (out[1]), and only when a capture finds those again, all of
     * them; so a program capturing from two callers in turn pays a few
     * stores a capture for the notes, not a copy of the frames. */
    const uint64_t key = hn >= 2 ? c->out[1].value : 0;
    const int keyed = hn == m->cbf_head_n && from == m->cbf_head_from && key == m->cbf_head_key;
    int same = keyed && m->cbf_head_full;
    for (size_t i = 0; same && i + 1 < hn; i++)
        same = c->out[i].value == m->cbf_head[i].value;
    size_t len = m->cbf_head_len;
    /* (the lengths hidden from the compiler: with their bounds known it
     * copies by `rep movs`, whose start takes longer than the library's
     * copy of the ~60 bytes) */
    size_t copy = len + rest;
    BTP_OPAQUE(copy);
    if (same && len != 0) {
        memcpy(buf, m->cbf + at - len, copy);
    } else {
        uint8_t *p = btp_frames_cbf(c->out, hn, buf, 0);
        if (!p)
            return;
        len = (size_t)(p - buf);
        if (same) {
            /* a capture with the head noted in full: its stream kept
             * (over the instructions of any state below `from`) */
            memcpy(m->cbf + at - len, buf, len);
            m->cbf_head_len = (unsigned)len;
            if (m->cbf_lo < from)
                m->cbf_lo = from;
        } else if (keyed && hn <= BTP_CFI_CBF_HEAD_MAX && c->cap >= BTP_CFI_CBF_HEAD_MAX - 1) {
            /* the frames in full (those past the head copied too,
             * compared never: one fixed copy, no loop) */
            memcpy(m->cbf_head, c->out, sizeof m->cbf_head);
            m->cbf_head_full = 1;
            m->cbf_head_len = 0;
        } else {
            m->cbf_head_n = (unsigned)hn;
            m->cbf_head_from = from;
            m->cbf_head_key = key;
            m->cbf_head_full = 0;
        }
        copy = rest;
        BTP_OPAQUE(copy);
        memcpy(p, m->cbf + at, copy);
    }
    sink->len = len + rest;
    sink->n = n;
}
#endif

/*
 * The walk is at state s, which memo_here() found to have the stack pointer
 * and pc of the memo's state wk->mi: if it is that state and the rest of the
 * memo still holds (see "The walk memo"), push the rest's frames, make the
 * memo this walk's and return 1 (the walk is over). Else 0, with s->msp
 * moved past s (and past the step that failed).
 */
__attribute__((no_sanitize_address, noinline)) static int memo_try(fast_state *s, walk *wk,
                                                         btp_collector *c,
                                                         const btp_cfi_env *env)
{
    const unsigned n = BTP_CFI_MEMO_N; /* the end state */
    btp_cfi_memo *m = wk->memo;
    /* (memo_here() found state j with s's stack pointer and pc) */
    unsigned j = wk->mi, k = j;
    if (j >= n) {
        s->msp = memo_next(wk);
        return 0;
    }
    uint64_t f = m->info[j];
    uint64_t want = mi_state(s->adj, s->valid) | (f & MI_FP_LIVE);
    if (m->sp[j] != s->sp || m->pc[j] != s->pc ||
        (f & (MI_ADJ | MI_FP_OK | MI_SP_OK | MI_FP_LIVE)) != want ||
        ((f & MI_FP_LIVE) && m->fp[j] != s->fp))
        goto fail;
    /* Each step's slots lie within 128 words of its CFA (pack()), and the
     * CFAs rise from m->sp[j + 1] to m->sp[n]: where all of that lies in the
     * stretch of stack known here, so does every step's slots (where only
     * the top does not, the last steps' own highest slots may); else each
     * step's are checked. */
    int each = 1;
    if (j < n) {
        uintptr_t lo = m->sp[j + 1] - 128 * W, hi = m->sp[n] + 128 * W;
        if (lo < m->sp[j + 1] && lo >= wk->rlo) {
            if (hi > m->sp[n] && hi <= wk->rhi) {
                each = 0;
            } else if (j >= m->top_j && m->top_hi == wk->rhi) {
                each = 0; /* found before, for these states */
            } else if (memo_top_in(m, j, wk->rhi)) {
                each = 0;
                m->top_j = j;
                m->top_hi = wk->rhi;
            }
        }
    }
    /* The image holding each pc has the tag the layout had (a state whose
     * pc lay in the image of the state before, also checked here, lies in
     * it again: the tag covers the image's range). Whether state j's lies
     * in the image of the walk's state before it, for the memo after. */
    const seen *sn = s->sn;
    uintptr_t look_j = m->pc[j] - ((m->info[j] & MI_ADJ) ? 1 : 0);
    uint64_t same_j = look_j - sn->lo < sn->hi - sn->lo ? MI_SAME_IMG : 0;
    if (!each) {
        /* The usual case: the slots, then the images, from what memo_save()
         * derived (the same checks as the loop below, in another order: any
         * that fails fails the states up to its step) */
        const uint32_t from = (uint32_t)~0u << j, to = n < 32 ? ((uint32_t)1 << n) - 1 : ~0u;
        if (m->ua_mask & from & to) {
            for (; k < n; k++)
                if (peek(m->ra_at[k]) != m->pc[k + 1])
                    goto fail;
        } else { /* (all aligned: peek()'s usual case, without its test) */
            for (size_t i = k; i < n; i++)
                if (*(const volatile uintptr_t *)m->ra_at[i] != m->pc[i + 1]) {
                    k = (unsigned)i;
                    goto fail;
                }
            k = n;
        }
        for (uint32_t b = m->fp_mask & from & to; b; b &= b - 1) {
            k = (unsigned)__builtin_ctz(b);
            if (peek(m->fp_at[k]) != m->fp[k + 1])
                goto fail;
        }
        k = j;
        if (!memo_image(wk, env, &sn, m->pc[j], m->info[j], m->tag[j]))
            goto fail;
        for (uint32_t b = m->img_mask & (from << 1) & to; b; b &= b - 1) {
            k = (unsigned)__builtin_ctz(b);
            if (!memo_image(wk, env, &sn, m->pc[k], m->info[k], m->tag[k]))
                goto fail;
        }
    }
    for (; each && k < n; k++) {
        f = m->info[k];
        if ((k == j || !(f & MI_SAME_IMG)) && !memo_image(wk, env, &sn, m->pc[k], f, m->tag[k]))
            goto fail;
        /* The step's slots lie in one stretch of stack vouched for, as the
         * step checks them; those used, unchanged. */
        uintptr_t cfa = m->sp[k + 1];
        if (each && !slots_ok(wk, env, cfa + (uintptr_t)((intptr_t)mi_off(f, 2) * (intptr_t)W),
                              cfa + (uintptr_t)((intptr_t)mi_off(f, 3) * (intptr_t)W)))
            goto fail;
        if (peek(cfa + (uintptr_t)((intptr_t)mi_off(f, 0) * (intptr_t)W)) != m->pc[k + 1])
            goto fail;
        if ((f & MI_FP_CHECK) &&
            peek(cfa + (uintptr_t)((intptr_t)mi_off(f, 1) * (intptr_t)W)) != m->fp[k + 1])
            goto fail;
    }
    /* the end: the outermost frame (its layout says so: its image and tag),
     * or a pc of 0 */
    f = m->info[n];
    if (!(f & MI_END0) && (n == j || !(f & MI_SAME_IMG)) &&
        !memo_image(wk, env, &sn, m->pc[n], f, m->tag[n]))
        goto fail;
    s->sn = sn;
    /* The frames, each checked by the collector as the step would (it may
     * end the walk there: full, or a CFA that does not go up); the usual
     * case, every frame straight into the head above the CFAs so far (the
     * memo's rise), at once. */
    size_t cnt = n - j - ((m->info[n] & MI_END0) ? 1 : 0);
    if (c->n_seg == 1 && c->head_n <= c->fast_end && c->fast_end - c->head_n >= cnt &&
        (cnt == 0 || m->sp[j + 1] > c->seg_hi[0])) {
        memcpy(c->out + c->head_n, &m->fr[j + 1], cnt * sizeof m->fr[0]);
        c->head_n += cnt;
        if (cnt)
            c->seg_hi[0] = m->sp[j + cnt];
    } else {
        for (k = j; k < n && m->pc[k + 1] != 0; k++)
            if (!btp_collector_cfa(c, m->sp[k + 1], 0) || !btp_collector_add(c, m->pc[k + 1]))
                break;
    }
    memo_save(wk, j, same_j);
    m->used++;
#if BTP_CAPTURE_CBF_STREAM
    if (c->cbf)
        memo_cbf(m, c, j);
#endif
    return 1;
fail:
    /* no state up to the one that failed can match (the rest from each
     * holds the step that failed) */
    wk->mi = k + 1 < n ? k + 1 : n;
    s->msp = memo_next(wk);
    return 0;
}
#endif

/*
 * Frames whose layouts are cached, one after the other, from cur (its pc
 * pushed already; *exact_io: it is not a return address): each is unwound
 * with its packed layout (as apply() would with its row, load for load),
 * checked as the walk checks any frame (the CFA moves up, pc not 0) and its
 * caller pushed, without leaving this loop.
 * FAST_DONE: the walk is over (the collector is full, the outermost frame,
 * a frame that cannot be unwound). FAST_MISS: cur (pushed) needs the full
 * step: its layout is not cached, or its saved registers' slots do not lie
 * in one stretch of stack known here (apply() checks them one by one);
 * *exact_io and *first_io are then cur's.
 */
__attribute__((no_sanitize_address, noinline)) static int fast_frames(
    walk *wk, btp_collector *c, const btp_cfi_env *env, btp_cfi_regs *cur, int *exact_io,
    int *first_io)
{
    const btp_cfi_regs *in = wk->cur_src ? wk->cur_src : cur;
    fast_state s = {in->pc,     in->r[BTP_CFI_SP], in->r[BTP_CFI_FP], in->valid,
                    !*exact_io, &no_image,         *first_io, UINTPTR_MAX};
    int st;
    wk->pend_n = 0;
    wk->pend_head = 0;
#if BTP_CFI_MEMO
    wk->rec_n = 0; /* a run of cached steps starts here */
    wk->hk = HEAD_OFF;
    if (wk->memo) {
        if (!s.adj && s.first) {
            /* the walk's start: its head from the memo as far as it holds,
             * and recorded on from there where it has held only in part
             * for HEAD_STALE walks in a row (a head recorded through a
             * path the walks no longer take; not at every change, where
             * walks alternate between entry points), or where it ended
             * where a walk left the cached layouts (the first walks) */
            uintptr_t sp0 = s.sp;
            unsigned taken = 0;
            int h = head_take(wk, &s, c, env, &taken);
            if (h == HEAD_OVER)
                return FAST_DONE;
            btp_cfi_memo *m = wk->memo;
            m->hpart = taken < m->hn ? m->hpart + 1 : 0;
            if (h == HEAD_NOT || m->hpart >= HEAD_STALE ||
                (taken == m->hn && !m->hend && taken < BTP_CFI_HEAD_N)) {
                m->hpart = 0;
                wk->hk = h == HEAD_NOT ? 0 : taken;
                wk->hsp0 = sp0;
                pend_flush(wk, cur); /* (before the head's record changes) */
            }
        }
        s.msp = memo_next(wk);
    }
#endif
    for (;;) {
        /* as many frames as need no call, then one that may; while the
         * collector takes no frame inline (it seeks its anchor, skips
         * frames, or has no stretch of stack yet) every frame needs a call,
         * and while the head is recorded each is recorded: the copy that
         * calls */
        if (s.adj && c->head_n < c->fast_end && c->n_seg == 1 && wk->hk == HEAD_OFF)
            st = fast_run(&s, wk, c, env, cur);
        else /* (while the head is recorded, not from the memo) */
            st = BTP_CFI_MEMO && wk->hk == HEAD_OFF && memo_here(&s, wk) ? FS_MEMO : FS_CALL;
#if BTP_CFI_MEMO
        if (st == FS_MEMO) {
            if (memo_try(&s, wk, c, env))
                return FAST_DONE;
            continue; /* this frame as any other (the memo's next state lies above) */
        }
#endif
        if (st == FS_CALL)
            st = fast_one(&s, wk, c, env, cur, 1);
        if (st != FS_OK)
            break;
    }
#if BTP_CFI_MEMO
    if (st == FS_END && wk->memo)
        memo_save_end(wk);
#endif
    if (st == FS_DONE || st == FS_END)
        return FAST_DONE; /* (cur is not used again) */
    pend_flush(wk, cur);
    cur->pc = s.pc;
    cur->r[BTP_CFI_SP] = s.sp;
    cur->r[BTP_CFI_FP] = s.fp;
    cur->valid = s.valid;
    *exact_io = !s.adj;
    *first_io = s.first;
    return st == FS_DONE || st == FS_END ? FAST_DONE : FAST_MISS;
}

/* Apply row rw to cur, giving the caller's registers. */
static int apply(const btp_cfi_env *env, const row *rw, unsigned ra, const btp_cfi_regs *cur,
                 btp_cfi_regs *next, uintptr_t *cfa_out)
{
    uintptr_t cfa;
    if (rw->cfa.kind == R_REG) {
        if (!has(cur, rw->cfa.reg))
            return STEP_FAIL;
        cfa = cur->r[rw->cfa.reg] + (uintptr_t)rw->cfa.v;
    } else if (rw->cfa.kind != R_EXPR || !eval(env, &rw->cfa, cur, NULL, &cfa)) {
        return STEP_FAIL;
    }
    *next = *cur;
    for (unsigned i = 0; i < BTP_CFI_NREG; i++) {
        const rule *u = &rw->r[i];
        uintptr_t a, v;
        switch (u->kind) {
        case R_SAME: continue;
        case R_UNDEF: next->valid &= ~bit(i); continue;
        case R_OFFSET:
            if (!load(env, cfa + (uintptr_t)u->v, &v))
                return STEP_FAIL;
            break;
        case R_VAL_OFFSET: v = cfa + (uintptr_t)u->v; break;
        case R_REG:
            if (!has(cur, u->reg)) {
                next->valid &= ~bit(i);
                continue;
            }
            v = cur->r[u->reg];
            break;
        case R_EXPR:
            if (!eval(env, u, cur, &cfa, &a) || !load(env, a, &v))
                return STEP_FAIL;
            break;
        case R_VAL_EXPR:
            if (!eval(env, u, cur, &cfa, &v))
                return STEP_FAIL;
            break;
        default: return STEP_FAIL;
        }
        next->r[i] = v;
        next->valid |= bit(i);
    }
    if (rw->r[ra].kind == R_UNDEF)
        return STEP_END; /* the outermost frame (_start, a thread's start) */
    if (!(next->valid & bit(ra)))
        return STEP_FAIL;
    next->pc = next->r[ra];
#if defined(__aarch64__)
    if (rw->ra_signed)
        next->pc = strip_pac(next->pc);
#endif
    /* The CFA is the caller's stack pointer unless a rule says otherwise
     * (a signal frame restores it from the saved context). */
    if (rw->r[BTP_CFI_SP].kind == R_SAME) {
        next->r[BTP_CFI_SP] = cfa;
        next->valid |= bit(BTP_CFI_SP);
    }
    *cfa_out = cfa;
    return STEP_OK;
}

/* Bytes [a - n, a) of code, if the image holding a - 1 lets us read them. */
static int code_before(const btp_cfi_image *img, uintptr_t a, unsigned n, uint8_t *out)
{
    if (a < img->text_lo + n || a > img->text_hi)
        return 0;
    memcpy(out, (const void *)(a - n), n);
    return 1;
}

/* Does `ra` look like the return address of a call: inside an image's text
 * and just after a call instruction? Used where no unwind table vouches for
 * a frame (a pc outside any image, code without FDEs). */
static int after_call(const btp_cfi_env *env, uintptr_t ra)
{
    btp_cfi_image img;
    if (ra < 2 || !env->find(env->ctx, ra - 1, &img))
        return 0;
#if defined(__x86_64__) || defined(__i386__)
    uint8_t b[8];
    unsigned have = 8;
    while (have >= 2 && !code_before(&img, ra, have, b))
        have--;
    if (have < 2)
        return 0;
    const uint8_t *end = b + have; /* end[-k] is the byte at ra - k */
    if (have >= 5 && end[-5] == 0xe8)
        return 1; /* call rel32 */
    /* call r/m (FF /2): the length its ModRM byte implies must end exactly
     * at ra. */
    for (unsigned k = 2; k <= have; k++) {
        const uint8_t *op = end - k;
        if (op[0] != 0xff || ((op[1] >> 3) & 7) != 2)
            continue;
        unsigned mod = op[1] >> 6, rm = op[1] & 7, len = 2;
        if (mod != 3 && rm == 4)
            len++; /* SIB */
        if (mod == 1)
            len += 1;
        else if (mod == 2 || (mod == 0 && rm == 5))
            len += 4;
        else if (mod == 0 && rm == 4 && k >= 3 && (op[2] & 7) == 5)
            len += 4; /* SIB without base: disp32 */
        if (len == k)
            return 1; /* (a REX prefix before the opcode changes nothing here) */
    }
    return 0;
#elif defined(__aarch64__)
    uint8_t b[4];
    uint32_t ins;
    if (!code_before(&img, ra, 4, b))
        return 0;
    memcpy(&ins, b, 4);
    return (ins & 0xfc000000u) == 0x94000000u ||  /* bl */
           (ins & 0xfffffc1fu) == 0xd63f0000u ||  /* blr */
           (ins & 0xfefff800u) == 0xd63f0800u;    /* blraa, blrab, blraaz, blrabz */
#else
    return 0;
#endif
}

/* Frame 0's pc is outside every image (a call through a NULL or wild
 * function pointer): the caller's return address is where the call left
 * it, on top of the stack (x86) or in the link register (aarch64). */
static int from_stack_top(const btp_cfi_env *env, const btp_cfi_regs *cur, btp_cfi_regs *next,
                          uintptr_t *cfa)
{
    if (!has(cur, BTP_CFI_SP))
        return STEP_FAIL;
    uintptr_t sp = cur->r[BTP_CFI_SP], ra;
#if defined(__aarch64__)
    if (!has(cur, BTP_CFI_LR))
        return STEP_FAIL;
    ra = strip_pac(cur->r[BTP_CFI_LR]);
    *cfa = sp;
#else
    if (!load(env, sp, &ra))
        return STEP_FAIL;
    *cfa = sp + W;
#endif
    if (!after_call(env, ra))
        return STEP_FAIL;
    *next = *cur;
    next->pc = ra;
#if !defined(__aarch64__)
    next->r[BTP_CFI_SP] = sp + W;
#endif
    return STEP_OK;
}

/* No FDE covers the pc (code without unwind tables): follow the frame
 * pointer if it looks like one and leads to a call's return address. */
static int fp_step(const btp_cfi_env *env, const btp_cfi_regs *cur, btp_cfi_regs *next,
                   uintptr_t *cfa)
{
    if (!has(cur, BTP_CFI_FP))
        return STEP_FAIL;
    uintptr_t fp = cur->r[BTP_CFI_FP], saved, ra;
    if (fp % W != 0 || (has(cur, BTP_CFI_SP) && fp < cur->r[BTP_CFI_SP]) ||
        !load(env, fp, &saved) || !load(env, fp + W, &ra))
        return STEP_FAIL;
#if defined(__aarch64__)
    ra = strip_pac(ra);
#endif
    if (!after_call(env, ra))
        return STEP_FAIL;
    /* Where the function kept the other registers is unknown. */
    next->valid = bit(BTP_CFI_FP);
    next->r[BTP_CFI_FP] = saved;
    next->pc = ra;
    *cfa = fp + 2 * W;
#if !defined(__aarch64__)
    /* x86: the record sits right under the caller's stack pointer. On
     * aarch64 it sits at the bottom of the frame: sp stays unknown. */
    next->r[BTP_CFI_SP] = fp + 2 * W;
    next->valid |= bit(BTP_CFI_SP);
#endif
    return STEP_OK;
}

#if defined(__aarch64__)
/*
 * aarch64 describes its signal trampoline (the vDSO's
 * __kernel_rt_sigreturn: mov x8, #139; svc #0) without rules for the
 * interrupted registers, so unwinders recognise it by its code, as
 * libgcc does: the signal frame (siginfo, then the ucontext with the
 * interrupted registers) lies at the stack pointer.
 */
static int sigreturn_step(const btp_cfi_env *env, const btp_cfi_image *img,
                          const btp_cfi_regs *cur, btp_cfi_regs *next, uintptr_t *cfa)
{
    if (!sigreturn_code(env, img, cur))
        return STEP_NO_INFO;
    uintptr_t mc = cur->r[BTP_CFI_SP] + sizeof(siginfo_t) + offsetof(ucontext_t, uc_mcontext);
    uintptr_t v;
    memset(next, 0, sizeof *next);
    for (unsigned i = 0; i < 31; i++) {
        if (!load(env, mc + offsetof(mcontext_t, regs) + i * W, &v))
            return STEP_FAIL;
        next->r[i] = v;
    }
    if (!load(env, mc + offsetof(mcontext_t, sp), &next->r[BTP_CFI_SP]) ||
        !load(env, mc + offsetof(mcontext_t, pc), &next->pc))
        return STEP_FAIL;
    next->valid = bit(BTP_CFI_NREG) - 1;
    *cfa = next->r[BTP_CFI_SP];
    return STEP_OK;
}
#endif

/* The walk from `start`; `ret`: its pc is a return address that a walk
 * through the frames below it would have reached (see btp_cfi_walk_ret). */
static __attribute__((noinline)) btp_status cfi_walk(btp_collector *c, const btp_cfi_regs *start,
                                                      const btp_cfi_env *env, int ret)
{
#if !BTP_CFI_SUPPORTED
    (void)c;
    (void)start;
    (void)env;
    (void)ret;
    return BTP_E_UNSUPPORTED;
#else
    walk wk;
    for (unsigned i = 0; i < CACHE_N; i++)
        wk.cache[i].look = 0;
    wk.next_slot = 0;
    wk.n_img = wk.n_keep = wk.next_img = 0;
    set_region(&wk, 0, 0);
    wk.memo = NULL;
    wk.hk = HEAD_OFF;
    wk.cur_src = NULL;
    if (env->cache) {
        /* the images the environment keeps: met without asking */
        const btp_cfi_image *const *keep = env->keep;
        unsigned n_keep = env->n_keep < BTP_CFI_KEEP_MAX ? env->n_keep : BTP_CFI_KEEP_MAX, n = 0;
        for (unsigned i = 0; i < n_keep; i++) {
            const btp_cfi_image *k = keep[i];
            if (k->tag && k->hi > k->lo)
                wk.img[n++] = k;
        }
        wk.n_img = n;
        wk.n_keep = wk.n_img;
        wk.slots = env->cache->slot;
        wk.mask = env->cache->mask;
        if (BTP_CFI_MEMO && env->region)
            wk.memo = env->memo;
        if (env->region && env->known.hi > env->known.lo) {
            set_region(&wk, env->known.lo, env->known.hi);
        }
        wk.mi = wk.memo ? BTP_CFI_MEMO_N - wk.memo->n : 0;
    }
    btp_cfi_regs cur, next;
    /* a return address is looked up inside its call, and is no walk's
     * first frame (the heuristics for an interrupted pc in no image, and the
     * head, which starts at an exact pc, are not for it) */
    int exact = !ret, first = !ret;
    /* cur is *start until something writes it (cur_own()): most walks end
     * in cached steps without */
    wk.cur_src = start;
    for (;;) {
        const btp_cfi_regs *at = wk.cur_src ? wk.cur_src : &cur;
        if (!btp_collector_add(c, at->pc))
            return BTP_OK;
        /* Frames whose layouts are cached, as far as they go. */
        if (env->cache && at->pc != 0 &&
            fast_frames(&wk, c, env, &cur, &exact, &first) == FAST_DONE)
            return BTP_OK;
        cur_own(&wk, &cur);
        /* cur (pushed, perhaps a later frame than the one fast_frames()
         * started from) takes the full step */
        /* A return address is looked up inside its call (the call may be
         * a function's last instruction); an interrupted pc as it is. */
        uintptr_t look = exact ? cur.pc : cur.pc - 1;
        btp_cfi_image scratch;
        uint32_t tag = 0;
        uintptr_t cfa = 0;
        uint8_t signal = 0;
        int st = STEP_NO_INFO;
        const btp_cfi_image *img =
            cur.pc != 0 ? find_image(&wk, env, look, &scratch, &tag) : NULL;
        int found = img != NULL;
#if defined(__aarch64__)
        if (cur.pc != 0 && !first) {
            memset(&next, 0, sizeof next);
            st = sigreturn_step(env, img, &cur, &next, &cfa);
            signal = st == STEP_OK;
        }
#endif
        btp_cfi_fast fast;
        if (st == STEP_NO_INFO)
            memset(&next, 0, sizeof next);
        if (st != STEP_NO_INFO) {
            /* the signal trampoline, or a cached layout, done above */
        } else if (!found) {
            if (!first)
                return BTP_OK; /* a return address into no image: nothing vouches for more */
            st = from_stack_top(env, &cur, &next, &cfa);
        } else {
            row rw;
            unsigned ra;
            if (row_for(&wk, img, look, &rw, &ra, &signal)) {
                if (env->cache && look != 0 &&
                    pack(&rw, ra, signal, look, tag, &fast))
                    btp_cfi_cache_put(env->cache, &fast);
                st = apply(env, &rw, ra, &cur, &next, &cfa);
            } else {
                st = fp_step(env, &cur, &next, &cfa);
            }
        }
        if (st != STEP_OK || next.pc == 0)
            return BTP_OK;
        /* The CFA moves up the stack; it may move to a stack not walked yet
         * only in a signal frame (from the alternate signal stack to the
         * thread's). Anything else is a cycle or garbage: the walk ends. */
        if (!btp_collector_cfa(c, cfa, signal))
            return BTP_OK;
        exact = signal;
        first = 0;
        cur = next;
    }
#endif
}

btp_status btp_cfi_walk(btp_collector *c, const btp_cfi_regs *start, const btp_cfi_env *env)
{
    return cfi_walk(c, start, env, 0);
}

btp_status btp_cfi_walk_ret(btp_collector *c, const btp_cfi_regs *start, const btp_cfi_env *env)
{
    return cfi_walk(c, start, env, 1);
}

btp_status btp_cfi_regs_from_context(const void *ucontext, btp_cfi_regs *out)
{
    const ucontext_t *uc = ucontext;
    memset(out, 0, sizeof *out);
#if defined(__linux__) && defined(__x86_64__)
    static const int map[BTP_CFI_NREG] = {REG_RAX, REG_RDX, REG_RCX, REG_RBX, REG_RSI, REG_RDI,
                                          REG_RBP, REG_RSP, REG_R8,  REG_R9,  REG_R10, REG_R11,
                                          REG_R12, REG_R13, REG_R14, REG_R15, REG_RIP};
    for (unsigned i = 0; i < BTP_CFI_NREG; i++)
        out->r[i] = (uintptr_t)uc->uc_mcontext.gregs[map[i]];
    out->pc = out->r[16];
    out->valid = bit(BTP_CFI_NREG) - 1;
    return BTP_OK;
#elif defined(__linux__) && defined(__i386__)
    static const int map[BTP_CFI_NREG] = {REG_EAX, REG_ECX, REG_EDX, REG_EBX, REG_ESP,
                                          REG_EBP, REG_ESI, REG_EDI, REG_EIP};
    for (unsigned i = 0; i < BTP_CFI_NREG; i++)
        out->r[i] = (uintptr_t)uc->uc_mcontext.gregs[map[i]];
    out->pc = out->r[8];
    out->valid = bit(BTP_CFI_NREG) - 1;
    return BTP_OK;
#elif defined(__linux__) && defined(__aarch64__)
    for (unsigned i = 0; i < 31; i++)
        out->r[i] = (uintptr_t)uc->uc_mcontext.regs[i];
    out->r[BTP_CFI_SP] = (uintptr_t)uc->uc_mcontext.sp;
    out->pc = (uintptr_t)uc->uc_mcontext.pc;
    out->valid = bit(BTP_CFI_NREG) - 1;
    return BTP_OK;
#else
    (void)uc;
    return BTP_E_UNSUPPORTED;
#endif
}
