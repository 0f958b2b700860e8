/*
 * The current process's image map from dl_iterate_phdr: each loaded
 * object's path, build ID, base and end of text, read from its program
 * headers in memory (see btp_image_map_self() in imagemap.h).
 */
#include <btpack/imagemap.h>

#include "capture/image_self.h"

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

typedef struct self_map {
    btp_image *images;
    size_t max_images;
    unsigned char *arena;
    size_t arena_size;
    size_t n;
    size_t used;
    size_t need_images;
    size_t need_arena;
    int full; /* an image did not fit: keep the load-order prefix only */
} self_map;

static void add_image(void *ctx, const btp_elf_mem *e, const char *path, const char *name)
{
    self_map *w = ctx;
    size_t path_n = path ? strlen(path) + 1 : 0;
    size_t name_n = name ? strlen(name) + 1 : 0;
    size_t bytes = path_n + name_n + e->build_id_len;
    w->need_images++;
    w->need_arena += bytes;
    if (w->full || w->n >= w->max_images || bytes > w->arena_size - w->used) {
        w->full = 1;
        return;
    }
    btp_image *img = &w->images[w->n++];
    memset(img, 0, sizeof *img);
    unsigned char *p = w->arena + w->used;
    w->used += bytes;
    if (path) {
        memcpy(p, path, path_n);
        img->path = (const char *)p;
        p += path_n;
    }
    if (name) {
        memcpy(p, name, name_n);
        img->name = (const char *)p;
        p += name_n;
    }
    if (e->build_id_len) {
        memcpy(p, e->build_id, e->build_id_len);
        img->build_id = p;
        img->build_id_len = e->build_id_len;
    }
    img->base = e->base;
    img->end_of_text = e->end_of_text;
}

btp_status btp_image_map_self(btp_image_map *map, btp_image *images, size_t max_images,
                              void *arena, size_t arena_size, size_t *images_needed,
                              size_t *arena_needed)
{
    if (!map || (max_images && !images) || (arena_size && !arena))
        return BTP_E_INVALID_ARGUMENT;
    self_map w;
    memset(&w, 0, sizeof w);
    w.images = images;
    w.max_images = max_images;
    w.arena = arena;
    w.arena_size = arena_size;
    btp_image_self_each(add_image, &w);
    map->word_bits = (unsigned)(8 * sizeof(void *));
    map->platform = NULL;
    map->images = images;
    map->n_images = w.n;
    if (images_needed)
        *images_needed = w.need_images;
    if (arena_needed)
        *arena_needed = w.need_arena;
    return w.full ? BTP_E_BUFFER_TOO_SMALL : BTP_OK;
}
