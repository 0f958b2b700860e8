/* Argument helpers shared by the subcommands (see cli.h). */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "diag.h"

const char cli_log_limits_help[] =
    "  --max-nodes N, --max-live N, --max-expansion N\n"
    "                    (from log) what reading a log may cost: call-tree nodes\n"
    "                    per segment and live allocations (default 1048576 each,\n"
    "                    what the writer uses), and tree nodes, records and frames\n"
    "                    per byte of log (default 8192: zlib logs need under 30,\n"
    "                    LZMA2 heap logs a few thousand; 0: no limit); a log\n"
    "                    built to explode stops with an error naming the limit\n";

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "btpack%s%s: ", cmd ? " " : "", cmd ? cmd : "");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, " (see `btpack%s%s --help`)\n", cmd ? " " : "", cmd ? cmd : "");
    return EXIT_USAGE;
}

void cli_list_formats(FILE *f, int readers, int writers)
{
    const format *fmt;
    for (size_t i = 0; (fmt = format_at(i)) != NULL; i++) {
        int r = fmt->read_line || fmt->read_next || fmt->line_bytes, w = fmt->write != NULL;
        if ((readers && !r) || (writers && !w))
            continue;
        fprintf(f, "  %-7s %s%s\n", fmt->name, fmt->help,
                r && w ? "" : r ? " [input only]" : " [output only]");
    }
}

int cli_format_arg(const char *cmd, const char *arg, int need_reader, int need_writer,
                   const format **out)
{
    const format *fmt = format_find(arg);
    if (!fmt) {
        cli_usage_error(cmd, "unknown format '%s'", arg);
        fputs("formats:\n", stderr);
        cli_list_formats(stderr, need_reader, need_writer);
        return -1;
    }
    if (need_reader && !(fmt->read_line || fmt->read_next || fmt->line_bytes)) {
        cli_usage_error(cmd, "format '%s' cannot be read, only written", arg);
        return -1;
    }
    if (need_writer && !fmt->write) {
        cli_usage_error(cmd, "format '%s' cannot be written, only read", arg);
        return -1;
    }
    *out = fmt;
    return 0;
}

int cli_word_bits_arg(const char *cmd, const char *arg, unsigned *out)
{
    uint64_t v;
    if (parse_dec_u64(arg, strlen(arg), &v) < 0 || v > 64 || !btp_word_bits_valid((unsigned)v)) {
        cli_usage_error(cmd, "--word-bits must be 16, 32 or 64, not '%s'", arg);
        return -1;
    }
    *out = (unsigned)v;
    return 0;
}

int cli_count_arg(const char *cmd, const char *opt, const char *arg, size_t *out)
{
    uint64_t v;
    if (parse_dec_u64(arg, strlen(arg), &v) < 0 || v == 0 || v > SIZE_MAX / sizeof(btp_frame)) {
        cli_usage_error(cmd, "%s needs a positive number, not '%s'", opt, arg);
        return -1;
    }
    *out = (size_t)v;
    return 0;
}

int cli_seconds_arg(const char *cmd, const char *opt, const char *arg, uint32_t *ms)
{
    /* D[.DDD] seconds, at most a day: milliseconds are what counts */
    const char *dot = strchr(arg, '.');
    size_t whole = dot ? (size_t)(dot - arg) : strlen(arg);
    size_t frac = dot ? strlen(dot + 1) : 0;
    uint64_t s = 0, f = 0;
    if (whole == 0 || parse_dec_u64(arg, whole, &s) < 0 || s > 86400 || (dot && frac == 0) ||
        frac > 3 || (frac && parse_dec_u64(dot + 1, frac, &f) < 0)) {
        cli_usage_error(cmd, "%s needs seconds (such as 1, 0.25 or 0), not '%s'", opt, arg);
        return -1;
    }
    for (size_t i = frac; i < 3; i++)
        f *= 10;
    *ms = (uint32_t)(s * 1000 + f);
    return 0;
}

/* A count that fits 32 bits (log reader limits). */
static int u32_arg(const char *cmd, const char *opt, const char *arg, int zero_ok,
                   uint32_t *out)
{
    uint64_t v;
    if (parse_dec_u64(arg, strlen(arg), &v) < 0 || v > UINT32_MAX || (!zero_ok && v == 0)) {
        cli_usage_error(cmd, "%s needs a %snumber below 2^32, not '%s'", opt,
                        zero_ok ? "" : "positive ", arg);
        return -1;
    }
    *out = (uint32_t)v;
    return 0;
}

int cli_thread_arg(const char *cmd, const char *arg, cli_options *opt)
{
    uint64_t v;
    opt->thread_given = 1;
    if (strcmp(arg, "all") == 0) {
        opt->thread_sel = CLI_THREADS_ALL;
    } else if (strcmp(arg, "crashed") == 0) {
        opt->thread_sel = CLI_THREADS_CRASHED;
    } else if (parse_dec_u64(arg, strlen(arg), &v) == 0 && v < SIZE_MAX) {
        opt->thread_sel = CLI_THREADS_INDEX;
        opt->thread_index = (size_t)v;
    } else {
        cli_usage_error(cmd, "--thread must be a thread number (0, 1, ...), crashed or all, "
                             "not '%s'", arg);
        return -1;
    }
    return 0;
}

int cli_check_thread_option(const char *cmd, const cli_options *opt, const format *from)
{
    if (opt->thread_given && strcmp(from->name, "swift-crashlog") != 0)
        return cli_usage_error(cmd, "--thread applies to --from swift-crashlog only");
    return 0;
}

int cli_read_option(const char *cmd, int ch, const char *arg, cli_options *opt)
{
    switch (ch) {
    case 'N':
        return u32_arg(cmd, "--max-nodes", arg, 0, &opt->log_max_nodes) < 0 ? -1 : 1;
    case 'L':
        return u32_arg(cmd, "--max-live", arg, 0, &opt->log_max_live) < 0 ? -1 : 1;
    case 'X':
        opt->log_max_expansion_set = 1;
        return u32_arg(cmd, "--max-expansion", arg, 1, &opt->log_max_expansion) < 0 ? -1 : 1;
    case 'w':
        return cli_word_bits_arg(cmd, arg, &opt->word_bits) < 0 ? -1 : 1;
    case 's':
        opt->strict = 1;
        return 1;
    case 'k':
        opt->keep_going = 1;
        return 1;
    case 'v':
        progress_enable(1);
        return 1;
    case 'W': {
        uint64_t v;
        if (parse_dec_u64(arg, strlen(arg), &v) < 0) {
            cli_usage_error(cmd, "--max-warnings needs a number (0: no limit), not '%s'", arg);
            return -1;
        }
        diag_repeat_limit(v);
        return 1;
    }
    case 'm':
        return cli_count_arg(cmd, "--max-frames", arg, &opt->max_frames) < 0 ? -1 : 1;
    case 'R':
        return cli_thread_arg(cmd, arg, opt) < 0 ? -1 : 1;
    default:
        return 0;
    }
}

int cli_check_elf(const char *path)
{
    struct stat st;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    const char *why = NULL;
    if (fd < 0)
        why = strerror(errno);
    else if (fstat(fd, &st) != 0)
        why = strerror(errno);
    else if (!S_ISREG(st.st_mode))
        why = S_ISDIR(st.st_mode) ? "a directory" : "not a regular file";
    /* a wrong file would otherwise only show as a note on every frame */
    unsigned char magic[4];
    if (!why && (read(fd, magic, sizeof magic) != (ssize_t)sizeof magic ||
                 memcmp(magic, "\177ELF", 4) != 0))
        why = "not an ELF file";
    if (fd >= 0)
        close(fd);
    if (!why)
        return 0;
    diag(DIAG_ERROR, path, NULL, "cannot read the ELF file: %s", why);
    return -1;
}

int cli_bad_option(const char *cmd, char *const argv[])
{
    extern int optind, optopt;
    const char *bad = argv[optind - 1];
    if (optopt && bad && bad[0] == '-' && bad[1] != '-')
        return cli_usage_error(cmd, "unknown option or missing value: '-%c'", optopt);
    return cli_usage_error(cmd, "unknown option or missing value: '%s'", bad ? bad : "?");
}

int cli_shared_option(const char *cmd, int ch, const char *arg, cli_options *opt,
                      char *const argv[])
{
    switch (cli_read_option(cmd, ch, arg, opt)) {
    case 1:
        return -1;
    case 0:
        return cli_bad_option(cmd, argv);
    default:
        return EXIT_USAGE;
    }
}
