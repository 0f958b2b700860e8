/* The current process's loaded objects, as btp_image_map_self() and the
 * crash handler's install-time snapshot both see them. */
#ifndef BTPACK_CAPTURE_IMAGE_SELF_H
#define BTPACK_CAPTURE_IMAGE_SELF_H

#include "capture/elf_mem.h"

/* Called per loaded object in load order (dl_iterate_phdr's: the
 * executable first): its headers, its path (the executable's from
 * /proc/self/exe; NULL when there is no file: the vDSO) and, for the vDSO,
 * its name. Not async-signal-safe (dl_iterate_phdr takes the loader's
 * lock). */
typedef void (*btp_self_image_fn)(void *ctx, const btp_elf_mem *e, const char *path,
                                  const char *name);
void btp_image_self_each(btp_self_image_fn fn, void *ctx);

#endif
