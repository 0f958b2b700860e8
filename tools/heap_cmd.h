/* The `btpack heap` subcommands (heap.c dispatches). */
#ifndef BTPACK_TOOLS_HEAP_CMD_H
#define BTPACK_TOOLS_HEAP_CMD_H

#include "heap_model.h"

int heap_report(int argc, char **argv);
int heap_map(int argc, char **argv);

/* Options report and map share: --from, --elf, --word-bits, --keep-going,
 * the log reading limits (--max-nodes, --max-live, --max-expansion).
 * Returns 1 when ch was one (stored), 0 when not, -1 after a usage error. */
typedef struct heap_read_opts {
    heap_input from;
    const char *elf;
    cli_options cli;
} heap_read_opts;

int heap_read_option(const char *cmd, int ch, const char *arg, heap_read_opts *o);
#define HEAP_READ_LONGOPTS                                                              \
    {"from", required_argument, NULL, 'F'}, {"elf", required_argument, NULL, 'E'},      \
        {"word-bits", required_argument, NULL, 'w'},                                    \
        {"keep-going", no_argument, NULL, 'k'}, CLI_LOG_LIMIT_LONGOPTS,                 \
        {"max-warnings", required_argument, NULL, 'W'}, {"progress", no_argument, NULL, 'v'}

#endif
