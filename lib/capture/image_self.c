/*
 * The current process's image map from dl_iterate_phdr: each loaded
 * object's path, build ID, base and end of text, read from its program
 * headers in memory (see btp_image_map_self() in imagemap.h).
 */
#include <btpack/imagemap.h>

#include "capture/image_self.h"

#include "image/image_internal.h"

#include <link.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

typedef struct each_walk {
    btp_self_image_fn fn;
    void *ctx;
    int first; /* the next object is the first (the executable) */
    uintptr_t vdso;
    const char *exe; /* the executable's path, or NULL */
} each_walk;

static int on_object(struct dl_phdr_info *info, size_t size, void *data)
{
    each_walk *w = data;
    (void)size;
    int first = w->first;
    w->first = 0;
    btp_elf_mem e;
    if (!btp_elf_mem_from_phdrs(&e, (uintptr_t)info->dlpi_addr, (uintptr_t)info->dlpi_phdr,
                                info->dlpi_phnum, NULL, NULL))
        return 0;
    const char *dl_name = info->dlpi_name ? info->dlpi_name : "";
    if (w->vdso && e.base == w->vdso)
        w->fn(w->ctx, &e, NULL, dl_name[0] ? dl_name : "[vdso]"); /* no file behind it */
    else if (first && !dl_name[0])
        w->fn(w->ctx, &e, w->exe, NULL);
    else
        w->fn(w->ctx, &e, dl_name[0] ? dl_name : NULL, NULL);
    return 0;
}

void btp_image_self_each(btp_self_image_fn fn, void *ctx)
{
    char exe[4096];
    ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[k > 0 ? k : 0] = 0;
    each_walk w;
    w.fn = fn;
    w.ctx = ctx;
    w.first = 1;
    w.vdso = (uintptr_t)getauxval(AT_SYSINFO_EHDR);
    w.exe = k > 0 ? exe : NULL;
    (void)btp_elf_page_size(); /* cached now, outside any signal handler */
    dl_iterate_phdr(on_object, &w);
}

static void add_image(void *ctx, const btp_elf_mem *e, const char *path, const char *name)
{
    btp_image_buf *buf = ctx;
    size_t path_n = path ? strlen(path) + 1 : 0;
    size_t name_n = name ? strlen(name) + 1 : 0;
    btp_image *img = btp_image_buf_image(buf);
    char *p = btp_image_buf_bytes(buf, path_n);
    char *n = btp_image_buf_bytes(buf, name_n);
    char *id = btp_image_buf_bytes(buf, e->build_id_len);
    if (!img)
        return;
    memset(img, 0, sizeof *img);
    if (path && p) {
        memcpy(p, path, path_n);
        img->path = p;
    }
    if (name && n) {
        memcpy(n, name, name_n);
        img->name = n;
    }
    if (e->build_id_len && id) {
        memcpy(id, e->build_id, e->build_id_len);
        img->build_id = (const unsigned char *)id;
        img->build_id_len = e->build_id_len;
    }
    img->base = e->base;
    img->end_of_text = e->end_of_text;
}

btp_status btp_image_map_self(btp_image_buf *buf, btp_image_map *map)
{
    if (!buf || !map)
        return BTP_E_INVALID_ARGUMENT;
    btp_image_self_each(add_image, buf);
    return btp_image_buf_finish(buf, (unsigned)(8 * sizeof(void *)), map);
}
