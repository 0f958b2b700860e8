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
    fputs("usage: btpack COMMAND [options] [IN]\n"
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
        printf("btpack %s (library %s)\n", BTP_VERSION_STRING, btp_version());
        printf("log compression: %s\n",
               btp_log_have_zlib() ? "zlib" : "none (built without zlib)");
        return EXIT_OK;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(cmd, commands[i].name) == 0)
            return commands[i].run(argc - 1, argv + 1);
    return cli_usage_error(NULL, "unknown command '%s'", cmd);
}
