/* What the subcommands share: the read loop, argument helpers, the
 * subcommands themselves. */
#ifndef BTPACK_TOOLS_CLI_H
#define BTPACK_TOOLS_CLI_H

#include <stdio.h>

#include "format.h"

/* Exit statuses. */
enum { EXIT_OK = 0, EXIT_BAD_INPUT = 1, EXIT_USAGE = 2 };

/* Called for each record read. Returns 0 to go on, 1 when the record was bad
 * (the sink printed why; the read fails, or goes on with --keep-going), -1
 * to stop at once (e.g. a write error, already printed). */
typedef int (*trace_sink)(void *ctx, trace *t);

/*
 * Read every record of the inputs paths[0..n) in order (n == 0: stdin
 * alone; "-" is stdin) in format fmt, or in the format each input says it
 * is when fmt is NULL (format_detect()), and hand them to sink. Bad
 * records are reported (`btpack: <input>:<line>: <cause>`); with
 * opt->keep_going they are skipped with a warning, and an input that
 * cannot be opened or read does not stop the inputs after it. Returns
 * EXIT_OK, EXIT_BAD_INPUT when anything was bad or could not be read, or
 * EXIT_USAGE (--thread for input that is no crash log).
 */
int read_traces(const format *fmt, const cli_options *opt, char *const *paths, int n,
                trace_sink sink, void *ctx);
/* The same for one input opened already (its name is in->name). */
int read_input(const format *fmt, const cli_options *opt, input *in, trace_sink sink, void *ctx);

/* The name of `path` for messages. */
const char *input_name(const char *path);

/* Argument helpers: print a usage error and return -1 on bad values.
 * `cmd` names the subcommand in messages. */
int cli_format_arg(const char *cmd, const char *arg, int need_reader, int need_writer,
                   const format **out);
int cli_word_bits_arg(const char *cmd, const char *arg, unsigned *out);
int cli_count_arg(const char *cmd, const char *opt, const char *arg, size_t *out);
/* D[.DDD] seconds (at most a day) as milliseconds; a usage error and -1 if
 * not. */
int cli_seconds_arg(const char *cmd, const char *opt, const char *arg, uint32_t *ms);
/* --help lines for the trace log reading limits (--max-nodes, ...). */
extern const char cli_log_limits_help[];
/* --thread N|crashed|all (crash logs) into opt. */
int cli_thread_arg(const char *cmd, const char *arg, cli_options *opt);
/* EXIT_USAGE (after saying so) when --thread was given for input that is
 * not a crash log, else 0. */
int cli_check_thread_option(const char *cmd, const cli_options *opt, const format *from);
/* The reading options that convert, stats and heapmap share. A command lists
 * those it takes in its getopt_long table with these short codes and hands
 * every code its own switch does not know to cli_read_option(): 'w'
 * --word-bits N, 's' --strict, 'k' --keep-going, 'm' --max-frames N,
 * 'R' --thread N|crashed|all, 'v' -v/--progress, 'W' --max-warnings N; for
 * trace logs 'N' --max-nodes N, 'L'
 * --max-live N, 'X' --max-expansion N.
 * Returns 1 when `ch` was one of them (stored in *opt), 0 when it was not,
 * -1 on a bad value (usage error printed). */
int cli_read_option(const char *cmd, int ch, const char *arg, cli_options *opt);
/* The getopt_long entries of those options: the seven every reader of
 * traces takes, and the three trace log limits. */
#define CLI_READ_LONGOPTS                                                                         \
    {"word-bits", required_argument, NULL, 'w'}, {"strict", no_argument, NULL, 's'},              \
        {"keep-going", no_argument, NULL, 'k'}, {"progress", no_argument, NULL, 'v'},             \
        {"max-warnings", required_argument, NULL, 'W'},                                           \
        {"max-frames", required_argument, NULL, 'm'}, {"thread", required_argument, NULL, 'R'}
#define CLI_LOG_LIMIT_LONGOPTS                                                                    \
    {"max-nodes", required_argument, NULL, 'N'}, {"max-live", required_argument, NULL, 'L'},      \
        {"max-expansion", required_argument, NULL, 'X'}
/* --elf FILE of any command: 0 when FILE is a regular file btpack can
 * read, else -1 after saying why (`btpack: FILE: cannot read the ELF
 * file: ...`; the command exits with status 1). Checked before any input
 * is read, so that a mistyped path is never passed over in silence. */
int cli_check_elf(const char *path);
/* Report an unknown option or missing argument from getopt_long. */
int cli_bad_option(const char *cmd, char *const argv[]);
/* A command's `default:` case of its getopt_long loop: cli_read_option(),
 * then cli_bad_option() for a code it does not know. Returns -1 when `ch`
 * was a shared option (stored in *opt), else the status to exit with. */
int cli_shared_option(const char *cmd, int ch, const char *arg, cli_options *opt,
                      char *const argv[]);
/* Print a usage error `btpack CMD: ...` and return EXIT_USAGE. */
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
int cli_usage_error(const char *cmd, const char *fmt, ...);
/* List the formats with their one-line help: readers, writers or both. */
void cli_list_formats(FILE *f, int readers, int writers);

/* btpack dump's line: byte offset, raw bytes (the first 9, then "..."),
 * mnemonic, operand and a remark, columns padded only when something
 * follows. */
void dump_line(size_t off, const uint8_t *p, size_t n, const char *mn, const char *operand,
               const char *addr);
/* Disassemble the CIF image map p[0..len) (dump_cif.c). Returns 0, or -1
 * after printing the fault (`name` names the input). */
int dump_cif(const uint8_t *p, size_t len, const char *name, int strict);

int cmd_convert(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_stats(int argc, char **argv);
int cmd_heapmap(int argc, char **argv);
int cmd_heap(int argc, char **argv);
int cmd_symbolize(int argc, char **argv);

/* btpack stats on a trace log read from `in` (logstats.c). */
int log_stats(input *in, const cli_options *opt, const char *elf, size_t top);

#endif
