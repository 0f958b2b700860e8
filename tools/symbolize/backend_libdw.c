/* The libdw back end (elfutils, optional: Meson feature `libdw`): DWARF
 * read in-process, once per file. For each address: the line table's
 * file:line, then the functions that hold it, innermost first: each
 * inlined subroutine is a frame whose caller's position is its
 * DW_AT_call_file/DW_AT_call_line, up to the enclosing subprogram. The
 * functions come from an index of each unit's scopes made on the unit's
 * first address (below). */
#include "symbolize/backend.h"

#if BTP_CLI_HAVE_LIBDW
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <dwarf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strbuf.h"

/* The file given is the one with the DWARF; never look for another. */
static int no_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname,
                        Dwarf_Addr base, const char *file_name, const char *debuglink_file,
                        GElf_Word debuglink_crc, char **debuginfo_file_name)
{
    (void)mod, (void)userdata, (void)modname, (void)base, (void)file_name;
    (void)debuglink_file, (void)debuglink_crc, (void)debuginfo_file_name;
    return -1;
}

static const Dwfl_Callbacks callbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = no_debuginfo,
    .section_address = dwfl_offline_section_address,
};

/* The function's name: its linkage name demangled, else DW_AT_name (both
 * through DW_AT_abstract_origin/DW_AT_specification). Free the result. */
static char *die_function(Dwarf_Die *die)
{
    Dwarf_Attribute a;
    const char *s = NULL;
    if (dwarf_attr_integrate(die, DW_AT_linkage_name, &a) ||
        dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &a)) {
        s = dwarf_formstring(&a);
        char *d = s ? sym_demangle(s) : NULL;
        if (d)
            return d;
    }
    if (!s && dwarf_attr_integrate(die, DW_AT_name, &a))
        s = dwarf_formstring(&a);
    return s ? strdup(s) : NULL;
}

/* DW_AT_call_file / DW_AT_call_line of an inlined subroutine. */
static void call_site(Dwarf_Die *die, const char **file, unsigned *line)
{
    Dwarf_Attribute a;
    Dwarf_Word v;
    Dwarf_Die cu;
    Dwarf_Files *files;
    size_t nfiles;
    *file = NULL;
    *line = 0;
    if (dwarf_attr(die, DW_AT_call_line, &a) && dwarf_formudata(&a, &v) == 0)
        *line = v <= 0xffffffffu ? (unsigned)v : 0;
    if (dwarf_attr(die, DW_AT_call_file, &a) && dwarf_formudata(&a, &v) == 0 &&
        dwarf_diecu(die, &cu, NULL, NULL) && dwarf_getsrcfiles(&cu, &files, &nfiles) == 0 &&
        v < nfiles)
        *file = dwarf_filesrc(files, v, NULL, NULL);
}

/* A relative source path joined to its unit's absolute DW_AT_comp_dir, as
 * addr2line prints it; anything else as it is. Free the result (NULL when
 * file is NULL). */
static char *full_path(Dwarf_Die *cu, const char *file)
{
    Dwarf_Attribute a;
    const char *dir = cu && dwarf_attr(cu, DW_AT_comp_dir, &a) ? dwarf_formstring(&a) : NULL;
    if (!file)
        return NULL;
    if (file[0] == '/' || !dir || dir[0] != '/')
        return strdup(file);
    size_t n = strlen(dir) + strlen(file) + 2;
    char *p = malloc(n);
    if (p)
        snprintf(p, n, "%s/%s", dir, file);
    return p;
}

/* ---- the scopes of a unit, indexed once ----------------------------------
 *
 * dwarf_getscopes() walks the unit's DIE tree from its root for every
 * address (and dwarf_getscopes_die() once more past an inlined frame): on a
 * large unit that is most of a millisecond per address. Instead each unit
 * that holds an address is walked once, the way dwarf_getscopes walks it,
 * and its functions and inlined subroutines are kept as a tree of address
 * ranges: an address then costs a binary search per level of inlining.
 */

/* A function (DW_TAG_subprogram) or inlined subroutine with addresses;
 * node 0 of a unit stands for the unit itself. */
typedef struct scope_node {
    Dwarf_Die die;
    size_t first_iv, n_iv; /* the ranges of its children in unit.ivs, by lo */
} scope_node;

typedef struct scope_iv {
    Dwarf_Addr lo, hi; /* [lo, hi) */
    size_t parent, node;
} scope_iv;

typedef struct unit_index {
    Dwarf_Off off; /* the unit DIE's offset: the key */
    Dwarf_Die cu;
    scope_node *nodes;
    size_t n_nodes, cap_nodes;
    scope_iv *ivs;
    size_t n_ivs, cap_ivs;
} unit_index;

/* Deeper DIE trees are not followed (a hostile file could nest without
 * end); real ones are a few dozen deep. */
#define MAX_DEPTH 512

/* Tags whose children may hold code (libdw's list for dwarf_getscopes);
 * those with addresses are descended into only where they have some. */
static int may_hold_scopes(int tag)
{
    switch (tag) {
    case DW_TAG_module:
    case DW_TAG_lexical_block:
    case DW_TAG_with_stmt:
    case DW_TAG_catch_block:
    case DW_TAG_try_block:
    case DW_TAG_entry_point:
    case DW_TAG_inlined_subroutine:
    case DW_TAG_subprogram:
    case DW_TAG_namespace:
    case DW_TAG_class_type:
    case DW_TAG_structure_type:
        return 1;
    default:
        return 0;
    }
}

static int iv_order(const void *a, const void *b)
{
    const scope_iv *x = a, *y = b;
    if (x->parent != y->parent)
        return x->parent < y->parent ? -1 : 1;
    if (x->lo != y->lo)
        return x->lo < y->lo ? -1 : 1;
    return x->hi < y->hi ? -1 : x->hi > y->hi;
}

/* A new node for die under parent, with its ranges. 1: made, 0: the DIE
 * has no addresses, -1: out of memory. */
static int add_node(unit_index *u, Dwarf_Die *die, size_t parent, size_t *made)
{
    Dwarf_Addr base, lo, hi;
    ptrdiff_t off = 0;
    size_t node = u->n_nodes, first = u->n_ivs;
    while ((off = dwarf_ranges(die, off, &base, &lo, &hi)) > 0) {
        if (lo >= hi)
            continue;
        if (array_grow(&u->ivs, &u->cap_ivs, u->n_ivs + 1, sizeof *u->ivs) < 0)
            return -1;
        u->ivs[u->n_ivs++] = (scope_iv){lo, hi, parent, node};
    }
    if (u->n_ivs == first)
        return 0;
    if (array_grow(&u->nodes, &u->cap_nodes, u->n_nodes + 1, sizeof *u->nodes) < 0)
        return -1;
    u->nodes[u->n_nodes++] = (scope_node){*die, 0, 0};
    *made = node;
    return 1;
}

typedef struct walk_level {
    Dwarf_Die die; /* the next DIE to visit at this level */
    size_t parent; /* the node its functions belong to */
    int done;
} walk_level;

/* Walk the unit once and index it. 0, or -1 when out of memory. */
static int index_unit(unit_index *u)
{
    walk_level st[MAX_DEPTH];
    size_t depth = 0;
    Dwarf_Off *imported = NULL; /* partial units already walked */
    size_t n_imported = 0, cap_imported = 0;
    int rc = 0;
    u->nodes = NULL;
    u->n_nodes = u->cap_nodes = 0;
    u->ivs = NULL;
    u->n_ivs = u->cap_ivs = 0;
    if (array_grow(&u->nodes, &u->cap_nodes, 1, sizeof *u->nodes) < 0)
        return -1;
    u->nodes[u->n_nodes++] = (scope_node){u->cu, 0, 0};
    Dwarf_Die first;
    if (dwarf_child(&u->cu, &first) == 0)
        st[depth++] = (walk_level){first, 0, 0};
    while (depth && rc == 0) {
        walk_level *l = &st[depth - 1];
        if (l->done) {
            depth--;
            continue;
        }
        Dwarf_Die die = l->die, child;
        size_t parent = l->parent, node = parent;
        if (dwarf_siblingof(&die, &l->die) != 0)
            l->done = 1;
        int tag = dwarf_tag(&die), descend = 0;
        if (tag == DW_TAG_imported_unit) {
            /* a partial unit's DIEs count as if they stood here (dwz) */
            Dwarf_Attribute a;
            Dwarf_Die pu;
            if (!dwarf_attr(&die, DW_AT_import, &a) || !dwarf_formref_die(&a, &pu))
                continue;
            Dwarf_Off off = dwarf_dieoffset(&pu);
            size_t k = 0;
            while (k < n_imported && imported[k] != off)
                k++;
            if (k < n_imported)
                continue; /* once per unit: no cycles, no blow-up */
            if (array_grow(&imported, &cap_imported, n_imported + 1, sizeof *imported) < 0) {
                rc = -1;
                break;
            }
            imported[n_imported++] = off;
            if (depth < MAX_DEPTH && dwarf_child(&pu, &child) == 0)
                st[depth++] = (walk_level){child, parent, 0};
            continue;
        }
        if (!may_hold_scopes(tag))
            continue;
        if (tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine) {
            int r = add_node(u, &die, parent, &node);
            if (r < 0)
                rc = -1;
            descend = r > 0;
        } else if (tag == DW_TAG_namespace || tag == DW_TAG_class_type ||
                   tag == DW_TAG_structure_type || tag == DW_TAG_module) {
            descend = 1;
        } else {
            /* lexical blocks and the like: transparent, where they have code */
            Dwarf_Addr base, lo, hi;
            descend = dwarf_ranges(&die, 0, &base, &lo, &hi) > 0;
        }
        if (rc == 0 && descend && depth < MAX_DEPTH && dwarf_child(&die, &child) == 0)
            st[depth++] = (walk_level){child, node, 0};
    }
    free(imported);
    if (rc < 0)
        return -1;
    qsort(u->ivs, u->n_ivs, sizeof *u->ivs, iv_order);
    for (size_t i = 0; i < u->n_ivs;) {
        size_t p = u->ivs[i].parent, j = i;
        while (j < u->n_ivs && u->ivs[j].parent == p)
            j++;
        u->nodes[p].first_iv = i;
        u->nodes[p].n_iv = j - i;
        i = j;
    }
    return 0;
}

/* The child of node p whose range holds a (the last range starting at or
 * before a; siblings do not overlap in sound DWARF, and where a hostile
 * file makes them, fewer frames come out, never a loop), or SIZE_MAX. */
static size_t child_at(const unit_index *u, size_t p, Dwarf_Addr a)
{
    const scope_iv *iv = u->ivs + u->nodes[p].first_iv;
    size_t lo = 0, hi = u->nodes[p].n_iv;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (iv[mid].lo <= a)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo && a < iv[lo - 1].hi ? iv[lo - 1].node : SIZE_MAX;
}

/* The units indexed so far, by offset (open addressing; cap a power of 2). */
typedef struct unit_cache {
    unit_index *units;
    size_t n, cap;
} unit_cache;

static void cache_free(unit_cache *c)
{
    for (size_t i = 0; i < c->cap; i++)
        if (c->units[i].nodes) {
            free(c->units[i].nodes);
            free(c->units[i].ivs);
        }
    free(c->units);
}

static size_t slot_of(Dwarf_Off off, size_t cap)
{
    uint64_t h = (uint64_t)off * 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 20) & (cap - 1);
}

/* The index of the unit cudie, made on first use; NULL when out of memory. */
static unit_index *unit_of(unit_cache *c, Dwarf_Die *cudie)
{
    Dwarf_Off off = dwarf_dieoffset(cudie);
    if (c->cap) {
        for (size_t j = slot_of(off, c->cap);; j = (j + 1) & (c->cap - 1)) {
            if (!c->units[j].nodes)
                break;
            if (c->units[j].off == off)
                return &c->units[j];
        }
    }
    if ((c->n + 1) * 2 > c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 64;
        unit_index *u = calloc(cap, sizeof *u);
        if (!u)
            return NULL;
        for (size_t i = 0; i < c->cap; i++)
            if (c->units[i].nodes) {
                size_t j = slot_of(c->units[i].off, cap);
                while (u[j].nodes)
                    j = (j + 1) & (cap - 1);
                u[j] = c->units[i];
            }
        free(c->units);
        c->units = u;
        c->cap = cap;
    }
    size_t j = slot_of(off, c->cap);
    while (c->units[j].nodes)
        j = (j + 1) & (c->cap - 1);
    unit_index *u = &c->units[j];
    u->off = off;
    u->cu = *cudie;
    if (index_unit(u) < 0) {
        free(u->nodes);
        free(u->ivs);
        u->nodes = NULL;
        return NULL;
    }
    c->n++;
    return u;
}

static int one(Dwfl_Module *mod, unit_cache *cache, Dwarf_Addr a, size_t i, sym_emit_fn emit,
               void *ctx)
{
    const char *file = NULL;
    int line = 0;
    Dwfl_Line *l = dwfl_module_getsrc(mod, a);
    if (l)
        file = dwfl_lineinfo(l, NULL, &line, NULL, NULL, NULL);
    unsigned uline = line > 0 ? (unsigned)line : 0;
    Dwarf_Addr bias;
    Dwarf_Die *cudie = dwfl_module_addrdie(mod, a, &bias);
    /* the functions that hold the address, outermost first */
    size_t path[MAX_DEPTH], n = 0;
    if (cudie) {
        unit_index *u = unit_of(cache, cudie);
        if (!u)
            return -1;
        for (size_t p = 0; n < MAX_DEPTH && (p = child_at(u, p, a - bias)) != SIZE_MAX;)
            path[n++] = p;
        /* innermost first, up to the enclosing subprogram */
        int rc = 0;
        for (size_t k = n; k-- > 0 && rc == 0;) {
            Dwarf_Die *die = &u->nodes[path[k]].die;
            int tag = dwarf_tag(die);
            char *fn = die_function(die);
            char *full = full_path(cudie, file);
            rc = emit(ctx, i, fn, full, uline);
            free(fn);
            free(full);
            if (tag == DW_TAG_subprogram)
                break;
            call_site(die, &file, &uline);
        }
        if (n || rc)
            return rc;
    }
    /* no DWARF function here: line only (the caller adds a symbol) */
    char *full = full_path(cudie, file);
    int rc = emit(ctx, i, NULL, full, uline);
    free(full);
    return rc;
}

static int dw_resolve(const char *prog, const char *file, const uint64_t *vaddrs, size_t n,
                      sym_emit_fn emit, void *ctx, char *why, size_t why_len)
{
    (void)prog;
    Dwfl *dwfl = dwfl_begin(&callbacks);
    if (!dwfl) {
        snprintf(why, why_len, "libdw: %s", dwfl_errmsg(-1));
        return -1;
    }
    dwfl_report_begin(dwfl);
    Dwfl_Module *mod = dwfl_report_offline(dwfl, "", file, -1);
    dwfl_report_end(dwfl, NULL, NULL);
    Dwarf_Addr bias = 0;
    if (!mod || !dwfl_module_getelf(mod, &bias)) {
        snprintf(why, why_len, "libdw: %s", dwfl_errmsg(-1));
        dwfl_end(dwfl);
        return -1;
    }
    int rc = 0;
    unit_cache cache = {NULL, 0, 0};
    for (size_t i = 0; i < n && rc == 0; i++)
        rc = one(mod, &cache, vaddrs[i] + bias, i, emit, ctx);
    cache_free(&cache);
    dwfl_end(dwfl);
    return rc;
}

const sym_backend sym_backend_libdw = {"libdw", dw_resolve};
#else
const sym_backend sym_backend_libdw = {NULL, NULL};
#endif
