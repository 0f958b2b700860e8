/*
 * The crash handler's view of memory and images (see crash_view.h).
 *
 * From /proc/self/maps (read with open/read into fixed tables): readable
 * memory in two classes, anonymous (stacks, heap: where saved registers
 * are read) and file-backed (images: where unwind tables are read), and
 * executable memory. Device mappings and the kernel's special ones ([vvar]
 * and the like) are in neither: reading them can fault or have effects.
 * The images are what lib/image's parser makes of the same text (files
 * mapped executable, the vDSO); each one's ELF header, program headers and
 * build ID note are then read from memory, each read checked against the
 * file class. Load order comes from the snapshot taken at install time
 * (dl_iterate_phdr); an image loaded since then has no place in it and
 * comes after, by address.
 */
#include "capture/crash_view.h"

#include "capture/guard.h"
#include "capture/image_self.h"

#include <stddef.h>
#include <string.h>
#include <sys/mman.h>

#include "capture/procmaps.h"

/* ------------------------------------------------------------------ */
/* Range sets (sorted: /proc/self/maps lists mappings by address)       */
/* ------------------------------------------------------------------ */

static void add_range(btp_range_set *s, uintptr_t lo, uintptr_t hi)
{
    if (s->n > 0) {
        btp_range *last = &s->r[s->n - 1];
        if (lo == last->hi) {
            last->hi = hi; /* adjacent: one range */
            return;
        }
        if (lo < last->hi)
            return; /* out of order: cannot happen in maps; ignored */
    }
    if (s->n < s->cap)
        s->r[s->n++] = (btp_range){lo, hi};
    /* A full set drops ranges: reads there are refused (the safe side). */
}

/* In n elements of `stride` bytes sorted by the address at byte `key` of
 * each, the last one whose address is <= a (0 when none is: the caller
 * checks). */
static size_t last_at_or_below(const void *base, size_t n, size_t stride, size_t key, uintptr_t a)
{
    size_t lo = 0, hi = n;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        uintptr_t k;
        memcpy(&k, (const char *)base + mid * stride + key, sizeof k);
        if (k <= a)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

/* The range holding [a, a + len), or NULL. */
static const btp_range *range_of(const btp_range_set *s, uintptr_t a, size_t len)
{
    if (a + len < a || s->n == 0)
        return NULL;
    const btp_range *r =
        &s->r[last_at_or_below(s->r, s->n, sizeof *s->r, offsetof(btp_range, lo), a)];
    return a >= r->lo && a + len <= r->hi ? r : NULL;
}

static int file_ok(const void *ctx, uintptr_t a, size_t len)
{
    return range_of(&((const btp_crash_view *)ctx)->file, a, len) != NULL;
}

/* ------------------------------------------------------------------ */
/* The install-time snapshot                                            */
/* ------------------------------------------------------------------ */

#define SNAP_MAX 1024
#define SNAP_PATHS (128 * 1024)

typedef struct snapshot {
    size_t n;
    btp_crash_image img[SNAP_MAX];
    size_t paths_used;
    char paths[SNAP_PATHS];
} snapshot;

/* Written by btp_crash_snapshot_take() (install time), read by handlers. */
static snapshot *snap;

static void snap_add(void *ctx, const btp_elf_mem *e, const char *path, const char *name)
{
    snapshot *s = ctx;
    (void)name;
    if (s->n == SNAP_MAX)
        return;
    btp_crash_image *img = &s->img[s->n];
    memset(img, 0, sizeof *img);
    img->e = *e;
    img->base = e->base;
    img->end_of_text = e->end_of_text;
    img->order = (uint32_t)s->n;
    size_t len = path ? strlen(path) : 0;
    if (len && len < SNAP_PATHS - s->paths_used) {
        memcpy(s->paths + s->paths_used, path, len + 1);
        img->path = s->paths + s->paths_used;
        s->paths_used += len + 1;
    }
    s->n++;
}

int btp_crash_snapshot_take(void)
{
    if (!snap) {
        void *m = mmap(NULL, sizeof(snapshot), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                       -1, 0);
        if (m == MAP_FAILED)
            return 0;
        snap = m;
    }
    snap->n = 0;
    snap->paths_used = 0;
    btp_image_self_each(snap_add, snap);
    return 1;
}

/* ------------------------------------------------------------------ */
/* Building the view                                                    */
/* ------------------------------------------------------------------ */

/* Carve the scratch memory into the tables; 0 if it is too small. */
static int carve(btp_crash_view *v, unsigned char *p, size_t size)
{
    const size_t n_anon = 8192, n_file = 8192, n_exec = 4096, n_img = 1024;
    const size_t text = 512 * 1024, paths = 256 * 1024, line = 4 * BTP_MAPS_LINE_MAX + 128;
    size_t need = (n_anon + n_file + n_exec) * sizeof(btp_range) +
                  n_img * (sizeof(btp_crash_image) + sizeof(btp_image) + sizeof(uint16_t)) +
                  text + paths + line;
    if (!p || size < need)
        return 0;
    v->anon = (btp_range_set){(btp_range *)(void *)p, 0, n_anon};
    p += n_anon * sizeof(btp_range);
    v->file = (btp_range_set){(btp_range *)(void *)p, 0, n_file};
    p += n_file * sizeof(btp_range);
    v->exec = (btp_range_set){(btp_range *)(void *)p, 0, n_exec};
    p += n_exec * sizeof(btp_range);
    v->img = (btp_crash_image *)(void *)p;
    v->cap_img = n_img;
    p += n_img * sizeof(btp_crash_image);
    v->parsed = (btp_image *)(void *)p;
    p += n_img * sizeof(btp_image);
    v->order = (uint16_t *)(void *)p;
    p += n_img * sizeof(uint16_t);
    v->maps_text = (char *)p;
    v->maps_cap = text;
    p += text;
    v->paths = (char *)p;
    v->paths_cap = paths;
    p += paths;
    v->line = (char *)p;
    v->line_cap = line;
    return 1;
}

/* The snapshot's position of an image with this base and build ID. */
static uint32_t snapshot_order(const btp_crash_image *c, uint32_t otherwise)
{
    const snapshot *s = snap;
    if (!s)
        return otherwise;
    for (size_t i = 0; i < s->n; i++) {
        const btp_elf_mem *x = &s->img[i].e;
        if (x->base == c->base && x->build_id_len == c->e.build_id_len &&
            memcmp(x->build_id, c->e.build_id, c->e.build_id_len) == 0)
            return (uint32_t)i;
    }
    return otherwise;
}

typedef struct parse_job {
    const btp_crash_view *v;
    btp_crash_image *c;
} parse_job;

static void parse_headers(void *arg)
{
    parse_job *j = arg;
    btp_elf_mem e;
    if (btp_elf_mem_from_header(&e, (uintptr_t)j->c->base, file_ok, j->v))
        j->c->e = e;
}

/* The images lib/image's parser finds in the maps text, sorted by base,
 * each with what its headers in memory say. */
static int images_from_text(btp_crash_view *v)
{
    btp_image_buf buf = {v->parsed, v->cap_img, 0, v->paths, v->paths_cap, 0};
    btp_image_map map;
    if (!v->maps_whole ||
        btp_image_map_from_procmaps(v->maps_text, v->maps_len, (unsigned)(8 * sizeof(uintptr_t)),
                                    &buf, &map, NULL) != BTP_OK)
        return 0;
    v->n_img = 0;
    for (size_t i = 0; i < map.n_images; i++) {
        /* insertion by base (the parser's order is nearly that already) */
        size_t k = v->n_img++;
        while (k > 0 && v->img[k - 1].base > (uintptr_t)map.images[i].base) {
            v->img[k] = v->img[k - 1];
            k--;
        }
        btp_crash_image *c = &v->img[k];
        memset(c, 0, sizeof *c);
        c->path = map.images[i].path;
        c->base = (uintptr_t)map.images[i].base; /* (the parser reduced them to our word) */
        c->end_of_text = (uintptr_t)map.images[i].end_of_text;
    }
    for (size_t i = 0; i < v->n_img; i++) {
        parse_job j = {v, &v->img[i]};
        if (btp_guarded(parse_headers, &j))
            memset(&v->img[i].e, 0, sizeof v->img[i].e); /* truncated under its mapping */
        v->img[i].order = snapshot_order(&v->img[i], (uint32_t)(SNAP_MAX + i));
    }
    /* Load order: insertion sort of the indices (few images, in a crash). */
    for (size_t i = 0; i < v->n_img; i++) {
        size_t j = i;
        while (j > 0 && v->img[v->order[j - 1]].order > v->img[i].order) {
            v->order[j] = v->order[j - 1];
            j--;
        }
        v->order[j] = (uint16_t)i;
    }
    v->images_by_address = 1;
    return 1;
}

/* Readable and executable memory from the maps, and a copy of the text. */
static int ranges_from_maps(btp_crash_view *v)
{
    btp_maps_reader r;
    if (!btp_maps_open(&r))
        return 0;
    r.copy = v->maps_text;
    r.copy_cap = v->maps_cap;
    btp_maps_line m;
    size_t lines = 0;
    while (btp_maps_next(&r, &m)) {
        lines++;
        int cls = btp_maps_kind(&m);
        if (cls == BTP_MAPS_OTHER || m.perms[0] != 'r')
            continue;
        add_range(cls == BTP_MAPS_ANON ? &v->anon : &v->file, m.lo, m.hi);
        if (m.perms[2] == 'x')
            add_range(&v->exec, m.lo, m.hi);
    }
    btp_maps_close(&r);
    v->maps_len = r.copy_len;
    v->maps_whole = !r.copy_full && r.copy_len > 0;
    return lines > 0;
}

static void use_snapshot_images(btp_crash_view *v)
{
    v->order = NULL;
    v->images_by_address = 0;
    v->img = snap ? snap->img : NULL;
    v->n_img = snap ? snap->n : 0;
}

void btp_crash_view_build(btp_crash_view *v, void *scratch, size_t size)
{
    memset(v, 0, sizeof *v);
    btp_cfi_self_env(&v->self, &v->self_env, NULL, BTP_CAPTURE_ASYNC_SIGNAL_SAFE);
    if (carve(v, scratch, size) && ranges_from_maps(v)) {
        v->from_maps = 1;
        if (!images_from_text(v))
            use_snapshot_images(v); /* the text did not fit: the images of install time */
        return;
    }
    /* The snapshot alone: images as of install time, stacks from the
     * thread's known bounds. */
    memset(&v->anon, 0, sizeof v->anon);
    memset(&v->file, 0, sizeof v->file);
    memset(&v->exec, 0, sizeof v->exec);
    v->maps_whole = 0;
    use_snapshot_images(v);
}

btp_image btp_crash_view_image(const btp_crash_view *v, size_t i)
{
    const btp_crash_image *c = &v->img[v->order ? v->order[i] : i];
    btp_image im;
    memset(&im, 0, sizeof im);
    im.path = c->path;
    im.base = c->base;
    im.end_of_text = c->end_of_text;
    if (c->e.build_id_len) {
        im.build_id = c->e.build_id;
        im.build_id_len = c->e.build_id_len;
    }
    return im;
}

/* ------------------------------------------------------------------ */
/* The walker's environment                                             */
/* ------------------------------------------------------------------ */

/* The image whose text holds pc: by binary search when the images are in
 * address order, else (the snapshot) one by one. */
static const btp_crash_image *image_of(const btp_crash_view *v, uintptr_t pc)
{
    if (!v->images_by_address) {
        for (size_t i = 0; i < v->n_img; i++)
            if (v->img[i].e.base && pc >= v->img[i].e.text_lo && pc < v->img[i].e.end_of_text)
                return &v->img[i];
        return NULL;
    }
    if (v->n_img == 0)
        return NULL;
    const btp_crash_image *c = &v->img[last_at_or_below(
        v->img, v->n_img, sizeof *v->img, offsetof(btp_crash_image, base), pc)];
    return c->e.base && pc >= c->e.text_lo && pc < c->e.end_of_text ? c : NULL;
}

static int view_find(void *ctx, uintptr_t pc, btp_cfi_image *out)
{
    const btp_crash_view *v = ctx;
    const btp_crash_image *c = image_of(v, pc);
    if (!c)
        return 0;
    const btp_elf_mem *e = &c->e;
    memset(out, 0, sizeof *out);
    if (!v->from_maps) {
        /* The snapshot's own segments say what may be read. */
        out->text_lo = e->text_lo;
        out->text_hi = e->end_of_text;
        for (unsigned k = 0; k < e->n_segs; k++)
            if (e->eh_hdr >= e->seg_lo[k] && e->eh_hdr < e->seg_hi[k]) {
                out->eh_hdr = e->eh_hdr;
                out->lo = e->seg_lo[k];
                out->hi = e->seg_hi[k];
            }
        return 1;
    }
    const btp_range *text = range_of(&v->exec, pc, 1);
    if (!text)
        return 0;
    out->text_lo = text->lo;
    out->text_hi = text->hi;
    const btp_range *tab = e->eh_hdr ? range_of(&v->file, e->eh_hdr, 1) : NULL;
    if (tab) {
        out->eh_hdr = e->eh_hdr;
        out->lo = tab->lo;
        out->hi = tab->hi;
    }
    return 1;
}

static int view_stack_ok(void *ctx, uintptr_t a, size_t len)
{
    btp_crash_view *v = ctx;
    if (!v->from_maps)
        return v->self_env.stack_ok(v->self_env.ctx, a, len);
    return range_of(&v->anon, a, len) != NULL;
}

static int view_code_ok(void *ctx, uintptr_t a, size_t len)
{
    const btp_crash_view *v = ctx;
    return v->from_maps && range_of(&v->exec, a, len) != NULL;
}

void btp_crash_view_env(btp_crash_view *v, btp_cfi_env *env)
{
    env->find = view_find;
    env->stack_ok = view_stack_ok;
    env->code_ok = view_code_ok;
    env->region = NULL;
    env->known.lo = env->known.hi = 0;
    env->cache = NULL; /* the crash handler walks with nothing but the maps */
    env->memo = NULL;
    env->keep = NULL;
    env->n_keep = 0;
    env->ctx = v;
}
