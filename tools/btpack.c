/* btpack: the command-line tool. Subcommand dispatch, --help, --version. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

typedef struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *help;
} command;

/* One table: a new subcommand is one line here plus its file. */
static const command commands[] = {
    {"convert", cmd_convert, "convert backtraces between formats"},
    {"dump", cmd_dump, "disassemble CBF streams instruction by instruction"},
    {"stats", cmd_stats, "sizes and depth distribution of a set of traces"},
    {"heapmap", cmd_heapmap, "symbolize libwebsockets ~m# allocation records, by call site"},
    {"heap", cmd_heap, "record a program's heap (LD_PRELOAD), report on it, draw its map"},
    {"symbolize", cmd_symbolize, "function names and file:line for every frame (crash records too)"},
};

static void usage(FILE *f)
{
    fputs("usage: btpack COMMAND [options] [IN...]\n"
          "       btpack --version | --help\n"
          "\n"
          "Compact stack backtraces: Swift's Compact Backtrace Format (CBF), JSON,\n"
          "hex, base64, address lists and allocation trace records.\n"
          "\n"
          "commands:\n",
          f);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].help);
    fputs("\nformats:\n", f);
    cli_list_formats(f, 0, 0);
    fputs("\n`btpack COMMAND --help` explains each command, with examples.\n"
          "examples:\n"
          "  btpack convert --from trace --to cbf -o s.cbf tests/data/corpus/sqlite3_i386.trace.xz\n"
          "  btpack stats --from cbf s.cbf\n"
          "  echo 02111000201001 | btpack dump\n",
          f);
}

/* The versions, then what this build has, one fact per line for scripts:
 * each optional library, + when built in and - when not (the build's
 * `Features` summary lists the same): zlib (compressed trace logs), liblzma
 * (.xz input, LZMA2 trace logs), libunwind (a capture method), libdw (symbolize in-process),
 * libstdc++ (C++ names demangled; the runtime is opened when a name needs
 * it); and the capture methods. */
static void version(void)
{
    printf("btpack %s (library %s)\n", BTP_VERSION_STRING, btp_version());
    printf("features: %czlib %cliblzma %clibunwind %clibdw %clibstdc++\n",
           btp_log_have_zlib() ? '+' : '-', BTP_CLI_HAVE_LZMA ? '+' : '-',
           btp_capture_method_available(BTP_CAPTURE_LIBUNWIND) ? '+' : '-',
           BTP_CLI_HAVE_LIBDW ? '+' : '-', BTP_CLI_HAVE_CXA_DEMANGLE ? '+' : '-');
    printf("log compression: %s%s%s\n", btp_log_have_zlib() ? "zlib" : "",
           btp_log_have_zlib() && btp_log_have_lzma() ? " " : "",
           btp_log_have_lzma() ? "lzma"
           : btp_log_have_zlib() ? "" : "none (built without zlib and liblzma)");
    fputs("capture methods:", stdout);
    static const btp_capture_method methods[] = {BTP_CAPTURE_FP, BTP_CAPTURE_LIBGCC,
                                                 BTP_CAPTURE_LIBUNWIND, BTP_CAPTURE_GLIBC};
    for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++)
        if (btp_capture_method_available(methods[i]))
            printf(" %s", btp_capture_method_name(methods[i]));
    printf(" (default %s)\n", btp_capture_method_name(btp_capture_method_default()));
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        usage(stdout);
        return EXIT_OK;
    }
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "-V") == 0) {
        version();
        return EXIT_OK;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(cmd, commands[i].name) == 0)
            return commands[i].run(argc - 1, argv + 1);
    return cli_usage_error(NULL, "unknown command '%s'", cmd);
}
