/* Helpers the capture tests share: checking that an address lies inside a
 * named function (dladdr1 with the symbol's size; test programs are linked
 * with export_dynamic so their functions are in the dynamic symbol table). */
#ifndef BTPACK_TESTS_CAPTURE_CHAIN_H
#define BTPACK_TESTS_CAPTURE_CHAIN_H

#include <btpack/btpack.h>
#include <dlfcn.h>
#include <link.h>
#include <string.h>

#if defined(__clang__)
#define NOINL __attribute__((noinline))
#else
#define NOINL __attribute__((noinline, noclone))
#endif
/* After a call, keeps it from being a tail call (so the return address
 * stays inside the caller). */
#define BARRIER() __asm__ volatile("" ::: "memory")

/* An undefined instruction: SIGILL (__builtin_trap is SIGTRAP's brk on
 * aarch64). */
#if defined(__x86_64__) || defined(__i386__)
#define UNDEFINED_INSTRUCTION() __asm__ volatile("ud2")
#elif defined(__aarch64__)
#define UNDEFINED_INSTRUCTION() __asm__ volatile("udf #0")
#else
#define UNDEFINED_INSTRUCTION() __builtin_trap()
#endif

/* Name of the function holding addr (for return addresses, pass addr - 1:
 * the call instruction), or "?" */
static inline const char *function_at(uintptr_t addr)
{
    Dl_info info;
    const ElfW(Sym) *sym = NULL;
    if (!dladdr1((void *)addr, &info, (void **)&sym, RTLD_DL_SYMENT) || !info.dli_sname || !sym)
        return "?";
    uintptr_t start = (uintptr_t)info.dli_saddr;
    if (addr < start || addr >= start + sym->st_size)
        return "?";
    return info.dli_sname;
}

/* Non-zero if the frame's address lies inside the function `name`: a return
 * address is looked up one byte back (inside the call), a pc as it is. */
static inline int frame_in(btp_frame f, const char *name, int exact_pc)
{
    if (f.kind == BTP_FRAME_OMIT)
        return 0;
    uintptr_t a = (uintptr_t)f.value;
    return strcmp(function_at(exact_pc ? a : a - 1), name) == 0;
}

#endif
