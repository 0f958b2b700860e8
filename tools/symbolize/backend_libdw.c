/* The libdw back end (elfutils, optional: Meson feature `libdw`): DWARF
 * read in-process, once per file. For each address: the line table's
 * file:line, then the scopes that hold it (dwarf_getscopes), innermost
 * first: each inlined subroutine is a frame whose caller's position is its
 * DW_AT_call_file/DW_AT_call_line, up to the enclosing subprogram. */
#include "symbolize/backend.h"

#if BTP_CLI_HAVE_LIBDW
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <dwarf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static int one(Dwfl_Module *mod, Dwarf_Addr a, size_t i, sym_emit_fn emit, void *ctx)
{
    const char *file = NULL;
    int line = 0;
    Dwfl_Line *l = dwfl_module_getsrc(mod, a);
    if (l)
        file = dwfl_lineinfo(l, NULL, &line, NULL, NULL, NULL);
    unsigned uline = line > 0 ? (unsigned)line : 0;
    Dwarf_Addr bias;
    Dwarf_Die *cudie = dwfl_module_addrdie(mod, a, &bias);
    Dwarf_Die *scopes = NULL;
    int n = cudie ? dwarf_getscopes(cudie, a - bias, &scopes) : 0;
    /* Past an inlined subroutine dwarf_getscopes goes on with the scopes of
     * its abstract definition; the callers are the parents of the concrete
     * DIE itself: start again from the innermost function-like scope. */
    for (int k = 0; k < n; k++) {
        int tag = dwarf_tag(&scopes[k]);
        if (tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine) {
            Dwarf_Die inner = scopes[k];
            free(scopes);
            scopes = NULL;
            n = dwarf_getscopes_die(&inner, &scopes);
            break;
        }
    }
    int emitted = 0, rc = 0;
    for (int k = 0; k < n && rc == 0; k++) {
        int tag = dwarf_tag(&scopes[k]);
        if (tag != DW_TAG_subprogram && tag != DW_TAG_inlined_subroutine)
            continue;
        char *fn = die_function(&scopes[k]);
        char *full = full_path(cudie, file);
        rc = emit(ctx, i, fn, full, uline);
        free(fn);
        free(full);
        emitted = 1;
        if (tag == DW_TAG_subprogram)
            break;
        call_site(&scopes[k], &file, &uline);
    }
    free(scopes);
    if (!emitted && rc == 0) { /* no DWARF function here: line only (the caller adds a symbol) */
        char *full = full_path(cudie, file);
        rc = emit(ctx, i, NULL, full, uline);
        free(full);
    }
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
    for (size_t i = 0; i < n && rc == 0; i++)
        rc = one(mod, vaddrs[i] + bias, i, emit, ctx);
    dwfl_end(dwfl);
    return rc;
}

const sym_backend sym_backend_libdw = {"libdw", dw_resolve};
#else
const sym_backend sym_backend_libdw = {NULL, NULL};
#endif
