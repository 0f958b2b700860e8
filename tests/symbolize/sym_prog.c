/*
 * A program of ours built with -g: it writes a crash record (without
 * crashing) from a few calls deep, through an inlined function, so that
 * `btpack symbolize` can be checked against the source: each call line
 * carries a marker comment that names the frame it makes.
 *
 *   sym_prog OUT
 */
#include <btpack/btpack.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#define NOINL __attribute__((noinline))

volatile int sink, failed;

static inline __attribute__((always_inline)) void write_here(int fd)
{
    failed += btp_crash_write_record(fd, NULL, 0, 0, 0, NULL) != BTP_OK; /* @frame:write_here */
}

NOINL void sym_level3(int fd);
NOINL void sym_level2(int fd);
NOINL void sym_level1(int fd);

NOINL void sym_level3(int fd)
{
    write_here(fd); /* @frame:sym_level3 */
    sink++;
}

NOINL void sym_level2(int fd)
{
    sym_level3(fd); /* @frame:sym_level2 */
    sink++;
}

NOINL void sym_level1(int fd)
{
    sym_level2(fd); /* @frame:sym_level1 */
    sink++;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: sym_prog OUT\n");
        return 2;
    }
    int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        perror(argv[1]);
        return 1;
    }
    sym_level1(fd); /* @frame:main */
    close(fd);
    return failed;
}
