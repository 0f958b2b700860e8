/* Run a symbolizer program once for a whole batch of addresses, through
 * pipes (fork/exec, no shell): `PROG ARGS... -e FILE`, the addresses as
 * 0x-hex lines on its standard input, its whole standard output collected. */
#ifndef BTPACK_TOOLS_SYMBOLIZE_PIPE_H
#define BTPACK_TOOLS_SYMBOLIZE_PIPE_H

#include <stddef.h>
#include <stdint.h>

#include "strbuf.h"

/* args: NULL-terminated. Writes addrs[0..n) while reading the output (poll,
 * so neither pipe can fill up and block) into out. Returns 0, or -1 with
 * why[0..why_len) set (cannot run it, it failed, out of memory). */
int pipe_run(const char *prog, const char *const *args, const char *file,
             const uint64_t *addrs, size_t n, strbuf *out, char *why, size_t why_len);

#endif
