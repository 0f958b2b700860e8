/* Symbolize addresses with binutils' addr2line, run once for all of them
 * through pipes (fork/exec, no shell): `addr2line -f -C -e ELF`. */
#ifndef BTPACK_TOOLS_ADDR2LINE_H
#define BTPACK_TOOLS_ADDR2LINE_H

#include <stddef.h>
#include <stdint.h>

/* What addr2line said about one address. "??" when it does not know. */
typedef struct symbol {
    char *function;  /* demangled function name */
    char *location;  /* file:line */
} symbol;

/*
 * Run `prog -f -C -e elf` once, feeding addrs[0..n) on its standard input
 * while reading its output (poll, so neither pipe can fill up and block),
 * and fill syms[0..n) (strings owned by the caller: symbols_free()).
 * Returns 0, or -1 after printing why (cannot run it, it failed, its output
 * is not two lines per address).
 */
int addr2line_run(const char *prog, const char *elf, const uint64_t *addrs, size_t n,
                  symbol *syms);

void symbols_free(symbol *syms, size_t n);

#endif
