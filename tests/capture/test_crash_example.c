/*
 * End to end: run tools/crash_example, which crashes with btpack's crash
 * handler installed; take the `cbf` line of its record through
 * `btpack convert --from hex --to addrs`, place each address in its image
 * with the record's `map` lines, and ask addr2line for the function names:
 * they must be the example's call chain.
 *
 * usage: test_crash_example CRASH_EXAMPLE BTPACK ADDR2LINE
 */
#include "../check.h"

#include <btpack/btpack.h>

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *example, *btpack, *addr2line;

/* The example must die by its signal: under ASan, whose handlers the crash
 * handler would chain to, they stay out. Called in the child. */
static void sanitizers_hands_off(void)
{
    static char opts[4096];
    const char *old = getenv("ASAN_OPTIONS");
    snprintf(opts, sizeof opts, "%s%shandle_segv=0:handle_sigbus=0:handle_sigfpe=0:"
             "handle_sigill=0:handle_abort=0", old ? old : "", old && old[0] ? ":" : "");
    setenv("ASAN_OPTIONS", opts, 1);
}

#define MAXA 128

typedef struct record {
    char text[1 << 20];
    size_t len;
    uint64_t addr[MAXA];
    int is_pc[MAXA];
    size_t n;
    int omit; /* the converted trace holds an omit */
} record;

static record rec;

/* Run the example in mode `how` with method `method` (NULL: the handler's
 * default); returns the signal that killed it, or -1. */
static int run_example(const char *how, const char *method, const char *out)
{
    pid_t pid = fork();
    if (pid == 0) {
        if (method)
            setenv("BTPACK_STACKTRACE_METHOD", method, 1);
        else
            unsetenv("BTPACK_STACKTRACE_METHOD");
        /* No core files from a test. */
        struct rlimit none = {0, 0};
        setrlimit(RLIMIT_CORE, &none);
        sanitizers_hands_off();
        execl(example, example, how, out, (char *)NULL);
        _exit(127);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid)
        return -1;
    return WIFSIGNALED(status) ? WTERMSIG(status) : -1;
}

/* Run the example with its record going to stderr, a pipe nobody reads:
 * it must still die by SIGSEGV, not by SIGPIPE. */
static int run_example_into_closed_pipe(void)
{
    pid_t pid = fork();
    if (pid == 0) {
        int p[2];
        struct rlimit none = {0, 0};
        setrlimit(RLIMIT_CORE, &none);
        if (pipe(p) != 0 || dup2(p[1], 2) < 0)
            _exit(126);
        close(p[0]);
        close(p[1]);
        unsetenv("BTPACK_STACKTRACE_METHOD");
        sanitizers_hands_off();
        execl(example, example, "segv", (char *)NULL);
        _exit(127);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid)
        return -1;
    return WIFSIGNALED(status) ? WTERMSIG(status) : -1;
}

static int read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    rec.len = fread(rec.text, 1, sizeof rec.text - 1, f);
    rec.text[rec.len] = 0;
    fclose(f);
    return 1;
}

/* The line starting with `prefix`, copied into buf without its newline. */
static int find_line(const char *prefix, char *buf, size_t cap)
{
    size_t k = strlen(prefix);
    for (const char *p = rec.text; p && *p;) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        if (n >= k && memcmp(p, prefix, k) == 0 && n < cap) {
            memcpy(buf, p, n);
            buf[n] = 0;
            return 1;
        }
        p = nl ? nl + 1 : NULL;
    }
    return 0;
}

/* Decode the cbf line with the CLI into rec.addr. */
static int convert_with_cli(const char *dir)
{
    char hex[4096];
    if (!find_line("cbf ", hex, sizeof hex))
        return 0;
    char in[4200], cmd[8192];
    snprintf(in, sizeof in, "%s/cbf.hex", dir);
    FILE *f = fopen(in, "w");
    if (!f)
        return 0;
    fprintf(f, "%s\n", hex + 4);
    fclose(f);
    snprintf(cmd, sizeof cmd, "'%s' convert --from hex --to addrs < '%s'", btpack, in);
    FILE *p = popen(cmd, "r");
    if (!p)
        return 0;
    char line[8192];
    rec.n = 0;
    rec.omit = 0;
    if (fgets(line, sizeof line, p)) {
        for (char *tok = strtok(line, " \n"); tok && rec.n < MAXA; tok = strtok(NULL, " \n")) {
            int pc = strncmp(tok, "pc:", 3) == 0;
            if (pc)
                tok += 3;
            if (strncmp(tok, "omit:", 5) == 0)
                rec.omit = 1;
            if (strncmp(tok, "0x", 2) != 0)
                continue; /* omit:N, trunc */
            rec.addr[rec.n] = strtoull(tok, NULL, 16);
            rec.is_pc[rec.n] = pc;
            rec.n++;
        }
    }
    return pclose(p) == 0 && rec.n > 0;
}

/* The record's next `map` line from *pos on: its range, file offset and
 * path. Returns 0 when there are no more. */
static int next_map(const char **pos, unsigned long long *lo, unsigned long long *hi,
                    unsigned long long *off, char *file)
{
    for (const char *p = *pos; p && *p;) {
        const char *nl = strchr(p, '\n');
        char perms[8];
        int ok = strncmp(p, "map ", 4) == 0 &&
                 sscanf(p + 4, "%llx-%llx %7s %llx %*s %*s %4095s", lo, hi, perms, off, file) == 5;
        p = nl ? nl + 1 : NULL;
        if (ok) {
            *pos = p;
            return 1;
        }
    }
    return 0;
}

/* Find the mapping holding a; give the file's virtual address for it (the
 * load base is the start of the file's offset-0 mapping: PIE and shared
 * objects) and its path. */
static int place(uint64_t a, uint64_t *vaddr, char *path, size_t cap)
{
    unsigned long long lo, hi, off;
    char file[4096], found[4096] = "";
    for (const char *p = rec.text; next_map(&p, &lo, &hi, &off, file);)
        if (a >= lo && a < hi) {
            snprintf(found, sizeof found, "%s", file);
            break;
        }
    if (!found[0])
        return 0;
    for (const char *p = rec.text; next_map(&p, &lo, &hi, &off, file);)
        if (off == 0 && strcmp(file, found) == 0) {
            *vaddr = a - lo;
            snprintf(path, cap, "%s", found);
            return 1;
        }
    return 0;
}

/* Names of the frames that lie in the example binary, innermost first. */
static size_t example_names(char names[][128], size_t max)
{
    size_t k = 0;
    for (size_t i = 0; i < rec.n && k < max; i++) {
        /* a return address is looked up inside its call instruction */
        uint64_t a = rec.is_pc[i] ? rec.addr[i] : rec.addr[i] - 1;
        uint64_t v;
        char path[4096];
        if (!place(a, &v, path, sizeof path))
            continue;
        const char *base = strrchr(path, '/');
        if (!base || strcmp(base + 1, "crash_example") != 0)
            continue;
        char cmd[8192];
        snprintf(cmd, sizeof cmd, "'%s' -f -e '%s' 0x%llx", addr2line, path,
                 (unsigned long long)v);
        FILE *p = popen(cmd, "r");
        if (!p)
            continue;
        char fn[256] = "";
        /* an optimising build names parts and clones of a function
         * (crash_level3.cold, f.isra.0): a C name has no dot, so the
         * function is what comes before one */
        if (fgets(fn, sizeof fn, p))
            fn[strcspn(fn, ".\n")] = 0;
        pclose(p);
        snprintf(names[k++], 128, "%s", fn);
    }
    return k;
}

static void check_chain(const char *what, int from_pc)
{
    static char names[MAXA][128];
    size_t k = example_names(names, MAXA);
    static const char *const want[] = {"crash_level3", "crash_level2", "crash_level1", "main"};
    /* Find crash_level3, then the rest must follow it. */
    size_t at = 0;
    while (at < k && strcmp(names[at], "crash_level3") != 0)
        at++;
    CHECK(at < k, "%s: crash_level3 not among %zu frames in the example", what, k);
    if (from_pc)
        CHECK(at == 0 && rec.is_pc[0], "%s: the first frame is not the faulting pc", what);
    for (size_t i = 0; i < 4 && at < k; i++)
        CHECK(at + i < k && strcmp(names[at + i], want[i]) == 0, "%s: frame %zu is %s, not %s",
              what, at + i, at + i < k ? names[at + i] : "(none)", want[i]);
}

static void scenario(const char *dir, const char *how, const char *method, int sig, int names,
                     int from_pc)
{
    char out[4200], what[128], header[512], expect[64];
    snprintf(out, sizeof out, "%s/crash.txt", dir);
    snprintf(what, sizeof what, "%s/%s", how, method ? method : "default");
    remove(out);
    int got = run_example(how, method, out);
    CHECK(got == sig, "%s: died by %d, expected %d", what, got, sig);
    CHECK(read_file(out), "%s: no record", what);
    snprintf(expect, sizeof expect, "btpack-crash v2 signal=%d ", sig);
    CHECK(find_line("btpack-crash v2 ", header, sizeof header) &&
              strncmp(header, expect, strlen(expect)) == 0,
          "%s: header %s", what, header);
    snprintf(expect, sizeof expect, " method=%s", method ? method : "cfi");
    CHECK(strstr(header, expect) != NULL, "%s: header %s lacks %s", what, header, expect);
    CHECK(rec.len >= 4 && strcmp(rec.text + rec.len - 4, "end\n") == 0, "%s: no end line", what);
    CHECK(strstr(rec.text, "\nmap ") != NULL, "%s: no map lines", what);
    CHECK(convert_with_cli(dir), "%s: btpack convert failed", what);
    if (names)
        check_chain(what, from_pc);
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: test_crash_example CRASH_EXAMPLE BTPACK ADDR2LINE\n");
        return 2;
    }
    example = argv[1];
    btpack = argv[2];
    addr2line = argv[3];
    char dir[] = "/tmp/btpack-crash-XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");

    /* A segfault, walked with the handler's default method (cfi). */
    scenario(dir, "segv", NULL, SIGSEGV, 1, 1);
    /* Every other method built in, from the same context. */
    const char *methods[] = {"fp", "libgcc", "libunwind", "glibc"};
    for (size_t i = 0; i < 4; i++) {
        btp_capture_method m;
        if (btp_capture_method_parse(methods[i], &m) == BTP_OK && btp_capture_method_available(m))
            scenario(dir, "segv", methods[i], SIGSEGV, 1, 1);
    }
    /* abort(): the pc is inside libc, which has no frame pointers: the
     * default method walks through it; fp is only held to a record. */
    scenario(dir, "abort", NULL, SIGABRT, 1, 0);
    scenario(dir, "abort", "fp", SIGABRT, 0, 0);
    if (btp_capture_method_available(BTP_CAPTURE_LIBGCC))
        scenario(dir, "abort", "libgcc", SIGABRT, 1, 0);
    /* A stack overflow: the handler runs on its alternate stack and the
     * record keeps the top and the bottom of the deep stack. */
    scenario(dir, "overflow", NULL, SIGSEGV, 1, 0);
    CHECK(rec.omit, "overflow: no omit in the record");

    int sig = run_example_into_closed_pipe();
    CHECK(sig == SIGSEGV, "record into a closed pipe: died by %d", sig);

    char path[4200];
    snprintf(path, sizeof path, "%s/crash.txt", dir);
    remove(path);
    snprintf(path, sizeof path, "%s/cbf.hex", dir);
    remove(path);
    rmdir(dir);
    return check_finish();
}
