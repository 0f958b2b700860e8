/*
 * The part of <sys/mman.h> the codec unit tests use, for bare-metal runs
 * (baremetal_shim.c): anonymous mappings are heap blocks, and a PROT_NONE
 * "guard page" is filled with a pattern that munmap checks, so a write past
 * a buffer that ends at the guard still fails the test (at munmap instead
 * of at the write).
 */
#ifndef BTPACK_TESTS_SHIM_SYS_MMAN_H
#define BTPACK_TESTS_SHIM_SYS_MMAN_H

#include <stddef.h>
#include <sys/types.h>

#define PROT_NONE 0
#define PROT_READ 1
#define PROT_WRITE 2
#define MAP_PRIVATE 2
#define MAP_ANONYMOUS 0x20
#define MAP_FAILED ((void *)-1)

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t offset);
int mprotect(void *addr, size_t len, int prot);
int munmap(void *addr, size_t len);

#endif
