/*
 * What the codec unit tests need from POSIX, on a bare-metal target (see
 * shim/sys/mman.h): a page size, and mappings with checked guard pages.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Small pages: the tests map a few pages at a time, RAM is small. */
#define PAGE 64
#define GUARD_BYTE 0xA5
#define MAX_GUARDS 16

static struct {
    uint8_t *p;
    size_t len;
} guards[MAX_GUARDS];

long sysconf(int name)
{
    return name == _SC_PAGESIZE ? PAGE : -1;
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t offset)
{
    (void)addr, (void)prot, (void)flags, (void)fd, (void)offset;
    /* No page alignment: the tests only use offsets into the mapping. */
    void *p = calloc(1, len ? len : 1);
    return p ? p : MAP_FAILED;
}

int mprotect(void *addr, size_t len, int prot)
{
    if (prot != PROT_NONE)
        return 0;
    for (int i = 0; i < MAX_GUARDS; i++) {
        if (!guards[i].p) {
            guards[i].p = addr;
            guards[i].len = len;
            memset(addr, GUARD_BYTE, len);
            return 0;
        }
    }
    return -1;
}

int munmap(void *addr, size_t len)
{
    uint8_t *lo = addr, *hi = lo + len;
    for (int i = 0; i < MAX_GUARDS; i++) {
        if (guards[i].p >= lo && guards[i].p < hi) {
            for (size_t k = 0; k < guards[i].len; k++) {
                if (guards[i].p[k] != GUARD_BYTE) {
                    printf("guard page written at +%zu: a write past the end of a buffer\n", k);
                    exit(1);
                }
            }
            guards[i].p = NULL;
        }
    }
    free(addr);
    return 0;
}
