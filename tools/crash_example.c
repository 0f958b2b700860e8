/*
 * crash_example: installs btpack's crash handler, then crashes on purpose a
 * few calls deep, so the record it writes can be turned back into names:
 *
 *   crash_example [segv|abort|overflow] [OUT] 2>/dev/null; test $? -gt 128
 *   btpack symbolize OUT              # or --to json, --to markup
 *
 * btpack symbolize recognises the record, places each address in an image
 * through the image map the record carries, and prints per frame the
 * function, the functions inlined there and file:line (the line needs
 * DWARF: this program's build type, debugoptimized by default, has it;
 * without, the function comes from the symbol table and a note says so).
 *
 * OUT defaults to standard error. The method is the crash handler's default
 * (cfi: whole stacks through libc and code without frame pointers) unless
 * BTPACK_STACKTRACE_METHOD names another. Built with frame pointers so that
 * the fp method can be compared; each function calls another before it
 * crashes, so none of them is a frameless leaf.
 */
#include <btpack/btpack.h>

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__clang__)
#define NOINL __attribute__((noinline))
#else
#define NOINL __attribute__((noinline, noclone))
#endif
#define BARRIER() __asm__ volatile("" ::: "memory")

int *crash_target(void);
void crash_level3(int how);
unsigned crash_recurse(unsigned depth);
void crash_level2(int how);
void crash_level1(int how);

static int *volatile bad_address = (int *)16;

NOINL int *crash_target(void)
{
    BARRIER();
    return bad_address;
}

/* Runs until the stack overflows (the handler then runs on its alternate
 * stack, and the record shows the deep stack as head, omit, tail). */
NOINL unsigned crash_recurse(unsigned depth)
{
    volatile char pad[1024];
    pad[0] = (char)depth;
    if (depth == UINT32_MAX) /* never: stack runs out long before */
        return 0;
    unsigned r = crash_recurse(depth + 1) + pad[0];
    BARRIER();
    return r;
}

/* Not instrumented, so that under ASan the store itself faults. */
__attribute__((no_sanitize_address)) NOINL void crash_level3(int how)
{
    if (how == 1)
        abort();
    if (how == 2)
        crash_recurse(0);
    *(volatile int *)crash_target() = 42;
    BARRIER();
}

NOINL void crash_level2(int how)
{
    crash_level3(how);
    BARRIER();
}

NOINL void crash_level1(int how)
{
    crash_level2(how);
    BARRIER();
}

int main(int argc, char **argv)
{
    static const char *const modes[] = {"segv", "abort", "overflow"};
    int how = -1;
    for (int i = 0; i < 3; i++)
        if (argc < 2 || strcmp(argv[1], modes[i]) == 0) {
            how = i;
            break;
        }
    if (how < 0) {
        fprintf(stderr, "usage: crash_example [segv|abort|overflow] [OUT]\n");
        return 2;
    }
    int fd = 2;
    if (argc > 2) {
        fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0) {
            perror(argv[2]);
            return 1;
        }
    }
    btp_crash_options opt;
    memset(&opt, 0, sizeof opt);
    /* The environment may pick the method; without BTPACK_STACKTRACE_METHOD
     * the crash handler's own default (cfi) holds. */
    const char *env = getenv("BTPACK_STACKTRACE_METHOD");
    const char *verbose = getenv("BTPACK_STACKTRACE_METHOD_VERBOSE");
    if (env && env[0]) {
        if (btp_capture_options_init(&opt.capture) != BTP_OK)
            return 1;
    } else if (verbose && verbose[0] && strcmp(verbose, "0") != 0) {
        fprintf(stderr, "crash_example: the crash handler uses cfi "
                        "(BTPACK_STACKTRACE_METHOD picks another)\n");
    }
    btp_status st = btp_crash_install(fd, &opt);
    if (st != BTP_OK) {
        fprintf(stderr, "crash_example: %s\n", btp_strerror(st));
        return 1;
    }
    crash_level1(how);
    return 0;
}
