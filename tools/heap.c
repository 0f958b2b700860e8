/* btpack heap: record a program's heap with libbtpack-heap.so, report on
 * it, draw it. `record` is here; report and map in heap_report.c and
 * heap_map.c, reading through heap_model.c. */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "diag.h"
#include "heap_cmd.h"
#include "output.h"

#ifndef BTP_HEAP_LIBDIR
#define BTP_HEAP_LIBDIR "/usr/local/lib"
#endif
#define PRELOAD_NAME "libbtpack-heap.so"

static const char heap_help[] =
    "usage: btpack heap record [-o FILE.btlog] [--method M] [--no-addresses] -- CMD [ARGS...]\n"
    "       btpack heap report [--json] [--top N] [--elf FILE] [IN]\n"
    "       btpack heap map [-o heap.html|heap.svg] [--elf FILE] [IN]\n"
    "\n"
    "Heap profiling with compact backtraces.\n"
    "  record  run CMD with libbtpack-heap.so preloaded: every malloc, calloc, realloc,\n"
    "          reallocarray, free, posix_memalign, aligned_alloc, memalign, valloc and\n"
    "          pvalloc (so C++ new/delete too) is written with its stack to a trace log,\n"
    "          with the process's images and build IDs. Only CMD's own process is traced\n"
    "          (not its children); an exec completes the log.\n"
    "  report  peak heap and when, leaks grouped by allocating stack, top stacks by\n"
    "          allocations, bytes and temporary allocations, symbolized.\n"
    "  map     a picture: addresses on one axis, time on the other, each allocation a\n"
    "          bar from its malloc to its free coloured by stack, heap in use below;\n"
    "          hover for size and stack. One self-contained HTML file (or SVG).\n"
    "\n"
    "IN is a trace log from `heap record`, or a text log with CSV records\n"
    "(m,SIZE,PTR[,CBF]  c,SIZE,PTR[,CBF]  f,,PTR) or libwebsockets ~m# records among other text\n"
    "(detected; --from log|csv|lws to say). `btpack heap COMMAND --help` for more.\n"
    "\n"
    "examples:\n"
    "  btpack heap record -o ls.btlog -- ls -l /\n"
    "  btpack heap report ls.btlog\n"
    "  btpack heap map -o ls.html ls.btlog\n";

static const char record_help[] =
    "usage: btpack heap record [-o FILE.btlog] [--method M] [--no-addresses]\n"
    "                          [--lzma N | --zlib N] [--keep-partial] -- CMD [ARGS...]\n"
    "\n"
    "Run CMD with libbtpack-heap.so preloaded and record its heap into FILE (default\n"
    "btpack-heap.CMD.PID.btlog). Exits with CMD's exit status (128+N if signal N\n"
    "killed it; 127 if CMD is not found, 126 if it cannot be run). Statically\n"
    "linked and setuid programs cannot be traced this way.\n"
    "Forked children are not traced; an exec ends the recording (the log is\n"
    "completed first). A crash (SIGSEGV, SIGABRT, SIGBUS, ...) completes the log\n"
    "before the program dies; killed otherwise (SIGKILL), it loses the events since\n"
    "the last flush: at most BTPACK_HEAP_FLUSH_MS milliseconds (default 5000).\n"
    "\n"
    "options:\n"
    "  -o FILE        the trace log to write: written beside FILE and renamed over\n"
    "                 it once CMD has run, so a CMD that cannot run leaves FILE\n"
    "                 as it was (FILE among CMD's arguments is refused)\n"
    "  --keep-partial when writing the log fails (disk full), keep what was\n"
    "                 written as FILE (by default FILE stays as it was)\n"
    "  --method M     stack capture method: fp, cfi, libgcc, libunwind, glibc\n"
    "                 (BTPACK_STACKTRACE_METHOD; default: the build's default)\n"
    "  --no-addresses write synthetic addresses (a counter) instead of the real\n"
    "                 ones: a log several times smaller, for `heap report`\n"
    "                 (peak, leaks, stacks: the same); `heap map` refuses it\n"
    "                 (BTPACK_HEAP_NO_ADDRESSES=1 when preloading by hand)\n"
    "  --lzma N       compress the log's blocks with LZMA2 at preset 1..9 (the\n"
    "                 default, at 2: zlib 9's time; 6 is smaller and slower)\n"
    "  --zlib N       with zlib instead, level 1..9, or 0 for none (the default\n"
    "                 in a build without liblzma, at 9; BTPACK_HEAP_ZLIB)\n"
    "  --preload LIB  the tracer library (default: BTPACK_HEAP_PRELOAD, the build\n"
    "                 tree's, or the installed " BTP_HEAP_LIBDIR "/" PRELOAD_NAME ")\n"
    "  -h, --help     this help\n"
    "\n"
    "example:\n"
    "  btpack heap record -o sort.btlog -- sort /etc/passwd\n"
    "  btpack heap report sort.btlog\n";

/* The tracer library: BTPACK_HEAP_PRELOAD, next to the btpack binary in a
 * build tree (../preload/), or the installed one. */
static int find_preload(const char *given, char *out, size_t cap)
{
    const char *env = getenv("BTPACK_HEAP_PRELOAD");
    if (given || (env && *env)) {
        const char *p = given ? given : env;
        if (!realpath(p, out) || access(out, R_OK) != 0) {
            diag(DIAG_ERROR, NULL, NULL, "cannot read the tracer library %s", p);
            return -1;
        }
        return 0;
    }
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) {
        self[n] = 0;
        char *slash = strrchr(self, '/');
        if (slash) {
            *slash = 0;
            char cand[PATH_MAX + 64];
            snprintf(cand, sizeof cand, "%s/../preload/" PRELOAD_NAME, self);
            if (access(cand, R_OK) == 0 && realpath(cand, out))
                return 0;
        }
    }
    snprintf(out, cap, "%s/%s", BTP_HEAP_LIBDIR, PRELOAD_NAME);
    if (access(out, R_OK) == 0)
        return 0;
    diag(DIAG_ERROR, NULL, NULL,
         "cannot find %s (set BTPACK_HEAP_PRELOAD or give --preload)", PRELOAD_NAME);
    return -1;
}

static int heap_record(int argc, char **argv)
{
    static const struct option opts[] = {
        {"output", required_argument, NULL, 'o'}, {"method", required_argument, NULL, 'M'},
        {"zlib", required_argument, NULL, 'z'},   {"lzma", required_argument, NULL, 'x'},
        {"preload", required_argument, NULL, 'P'},
        {"keep-partial", no_argument, NULL, 'K'}, {"no-addresses", no_argument, NULL, 'A'},
        {"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0}};
    const char *out = NULL, *method = NULL, *zlib = NULL, *lzma = NULL, *preload = NULL;
    int keep_partial = 0, no_addresses = 0;
    int ch;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "+o:h", opts, NULL)) != -1) {
        switch (ch) {
        case 'o': out = optarg; break;
        case 'M': method = optarg; break;
        case 'z': zlib = optarg; break;
        case 'x': lzma = optarg; break;
        case 'P': preload = optarg; break;
        case 'A': no_addresses = 1; break;
        case 'K': keep_partial = 1; break;
        case 'h': fputs(record_help, stdout); return EXIT_OK;
        default: return cli_bad_option("heap record", argv);
        }
    }
    if (optind >= argc)
        return cli_usage_error("heap record", "no command to run (btpack heap record -- CMD ...)");
    if (method) {
        btp_capture_method m;
        if (btp_capture_method_parse(method, &m) != BTP_OK)
            return cli_usage_error("heap record", "unknown --method '%s'", method);
    }
    if (zlib && (strlen(zlib) != 1 || zlib[0] < '0' || zlib[0] > '9'))
        return cli_usage_error("heap record", "--zlib takes 0..9");
    if (lzma && (strlen(lzma) != 1 || lzma[0] < '1' || lzma[0] > '9'))
        return cli_usage_error("heap record", "--lzma takes 1..9");
    if (lzma && zlib)
        return cli_usage_error("heap record", "--lzma and --zlib: give one of them");
    if (lzma && !btp_log_have_lzma())
        return cli_usage_error("heap record", "--lzma: this btpack is built without liblzma");
    char lib[PATH_MAX + 64];
    if (find_preload(preload, lib, sizeof lib) < 0)
        return EXIT_USAGE;
    char defname[PATH_MAX];
    if (!out) {
        const char *base = strrchr(argv[optind], '/');
        snprintf(defname, sizeof defname, "btpack-heap.%s.%d.btlog",
                 base ? base + 1 : argv[optind], (int)getpid());
        out = defname;
    }
    if (strcmp(out, "-") == 0)
        return cli_usage_error("heap record", "-o -: the trace log is binary and CMD may "
                               "print to stdout; give a file");
    /* The log goes to a temporary file beside OUT, renamed over OUT once
     * CMD has ended and written one: a file already there survives a
     * command that cannot run, and CMD reading OUT (refused when it is one
     * of CMD's arguments) never reads a log half written. A signal that
     * ends btpack first puts what was written in place: the tracer goes on
     * writing the same file. */
    output o;
    int orc = output_open(&o, out, argv + optind, argc - optind, OUTPUT_KEEP_PARTIAL);
    if (orc != 0)
        return orc;
    o.flags &= ~OUTPUT_KEEP_PARTIAL; /* from here on, only for signals */
    /* The library opens the file in CMD's process: an absolute path does
     * not depend on where that starts. */
    const char *target = o.tmp ? o.tmp : out;
    char abs_out[PATH_MAX * 2];
    char cwd[PATH_MAX];
    if (target[0] == '/') {
        snprintf(abs_out, sizeof abs_out, "%s", target);
    } else if (getcwd(cwd, sizeof cwd)) {
        snprintf(abs_out, sizeof abs_out, "%s/%s", cwd, target);
    } else {
        diag(DIAG_ERROR, NULL, NULL, "heap record: cannot tell the current directory: %s",
             strerror(errno));
        output_close(&o, 0);
        return EXIT_BAD_INPUT;
    }
    const char *old = getenv("LD_PRELOAD");
    char *pre = malloc(strlen(lib) + (old ? strlen(old) : 0) + 2);
    /* exec failure is told through this pipe: closed on exec, or errno;
     * the tracer's failure to write the log through the other */
    int ep[2] = {-1, -1}, sp[2] = {-1, -1};
    if (!pre || pipe2(ep, O_CLOEXEC) != 0 || pipe2(sp, O_CLOEXEC | O_NONBLOCK) != 0) {
        diag(DIAG_ERROR, NULL, NULL, "heap record: %s", pre ? strerror(errno) : "out of memory");
        free(pre);
        if (ep[0] >= 0)
            close(ep[0]), close(ep[1]);
        output_close(&o, 0);
        return EXIT_BAD_INPUT;
    }
    sprintf(pre, "%s%s%s", lib, old && *old ? ":" : "", old && *old ? old : "");
    /* Like time(1): the terminal's ^C and ^\ are for the program. */
    struct sigaction ign = {.sa_handler = SIG_IGN}, old_int, old_quit;
    sigemptyset(&ign.sa_mask);
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        diag(DIAG_ERROR, NULL, NULL, "fork: %s", strerror(errno));
        free(pre);
        close(ep[0]);
        close(ep[1]);
        close(sp[0]);
        close(sp[1]);
        output_close(&o, 0);
        return EXIT_BAD_INPUT;
    }
    if (pid == 0) {
        close(ep[0]);
        close(sp[0]);
        char sfd[16];
        snprintf(sfd, sizeof sfd, "%d", sp[1]);
        setenv("BTPACK_HEAP_STATUS_FD", sfd, 1);
        fcntl(sp[1], F_SETFD, 0); /* for the tracer in CMD; it closes it on exec */
        setenv("LD_PRELOAD", pre, 1);
        setenv("BTPACK_HEAP_OUTPUT", abs_out, 1);
        if (method)
            setenv("BTPACK_STACKTRACE_METHOD", method, 1);
        if (no_addresses)
            setenv("BTPACK_HEAP_NO_ADDRESSES", "1", 1);
        if (zlib)
            setenv("BTPACK_HEAP_ZLIB", zlib, 1);
        if (lzma) {
            setenv("BTPACK_HEAP_LZMA", lzma, 1);
            unsetenv("BTPACK_HEAP_ZLIB"); /* one from the environment would win */
        }
        execvp(argv[optind], argv + optind);
        int err = errno;
        if (write(ep[1], &err, sizeof err) < 0) {
            /* the parent then sees CMD exit with 127 */
        }
        _exit(err == ENOENT ? 127 : 126);
    }
    free(pre);
    close(ep[1]);
    close(sp[1]);
    sigaction(SIGINT, &ign, &old_int);
    sigaction(SIGQUIT, &ign, &old_quit);
    int exec_errno = 0;
    ssize_t got;
    while ((got = read(ep[0], &exec_errno, sizeof exec_errno)) < 0 && errno == EINTR)
        ;
    close(ep[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGQUIT, &old_quit, NULL);
    /* CMD's children may hold the pipe still: read what is there */
    char told[64] = "";
    ssize_t tn = read(sp[0], told, sizeof told - 1);
    close(sp[0]);
    int write_errno = 0;
    if (tn > 6 && strncmp(told, "write ", 6) == 0)
        write_errno = atoi(told + 6);
    if (got == (ssize_t)sizeof exec_errno) {
        /* as a shell says it: 127 not found, 126 found but not runnable */
        diag(DIAG_ERROR, NULL, NULL, "heap record: cannot run %s: %s%s", argv[optind],
             strerror(exec_errno), o.tmp ? "; nothing written" : "");
        output_close(&o, 0);
        return exec_errno == ENOENT ? 127 : 126;
    }
    int rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    struct stat st;
    int via_tmp = o.tmp != NULL;
    int have = via_tmp ? fstat(o.fd, &st) == 0 && st.st_size > 0 : stat(out, &st) == 0;
    if (write_errno) {
        /* a log cut short by a full disk must not pass for the whole run,
         * nor replace what was there unless asked to (as convert) */
        diag(DIAG_ERROR, out, NULL, "the tracer could not write the trace log: %s%s",
             strerror(write_errno), keep_partial && have ? "" : "; nothing written");
        if (keep_partial && have)
            o.flags |= OUTPUT_KEEP_PARTIAL;
        output_close(&o, 0);
        return rc ? rc : EXIT_BAD_INPUT;
    }
    if (output_close(&o, have) < 0)
        return rc ? rc : EXIT_BAD_INPUT;
    if (!have) {
        diag(DIAG_WARNING, NULL, NULL,
             "%s wrote no trace (a static or setuid program ignores LD_PRELOAD)%s",
             argv[optind], via_tmp ? "; nothing written" : "");
        return rc ? rc : EXIT_BAD_INPUT;
    }
    fprintf(stderr, "btpack: heap: %s %s %d; trace %s (%lld bytes)\n", argv[optind],
            WIFEXITED(status) ? "exited with status" : "killed by signal",
            WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status), out,
            (long long)st.st_size);
    fprintf(stderr, "btpack: heap: next: btpack heap report %s\n", out);
    return rc;
}

int cmd_heap(int argc, char **argv)
{
    if (argc < 2) {
        fputs(heap_help, stderr);
        return EXIT_USAGE;
    }
    const char *sub = argv[1];
    if (!strcmp(sub, "--help") || !strcmp(sub, "-h") || !strcmp(sub, "help")) {
        fputs(heap_help, stdout);
        return EXIT_OK;
    }
    if (!strcmp(sub, "record"))
        return heap_record(argc - 1, argv + 1);
    if (!strcmp(sub, "report"))
        return heap_report(argc - 1, argv + 1);
    if (!strcmp(sub, "map"))
        return heap_map(argc - 1, argv + 1);
    return cli_usage_error("heap", "unknown subcommand '%s' (record, report or map)", sub);
}
