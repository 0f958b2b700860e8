/* The symbolizer (symbolizer.h): requests are deduplicated twice, per
 * (map, address, kind) for the caller's handles and per (file, address)
 * for the back end, so a corpus of millions of frames costs one back-end
 * run per file over its distinct addresses. */
#include "symbolize/symbolizer.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diag.h"
#include "strbuf.h"
#include "symbolize/backend.h"
#include "symbolize/debugfind.h"
#include "symbolize/elf.h"

/* ---- small helpers ------------------------------------------------------ */

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    h *= 0xff51afd7ed558ccdull;
    return h ^ (h >> 33);
}

static uint64_t hash_str(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (; s && *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

/* Open addressing over entry indices + 1 (0 = empty). Every entry type
 * starts with its uint64_t hash, so a table can rehash from the entries. */
typedef struct index_table {
    uint32_t *slot;
    size_t cap; /* power of two */
} index_table;

/* Make room for n entries (entries[] of `stride` bytes, hash first). */
static int table_reserve(index_table *t, size_t n, const void *entries, size_t stride)
{
    if ((n + 1) * 2 <= t->cap)
        return 0;
    size_t c = t->cap ? t->cap * 2 : 256;
    while ((n + 1) * 2 > c)
        c *= 2;
    uint32_t *s = calloc(c, sizeof *s);
    if (!s)
        return -1;
    for (size_t i = 0; i < t->cap; i++)
        if (t->slot[i]) {
            uint64_t h;
            memcpy(&h, (const char *)entries + (t->slot[i] - 1) * stride, sizeof h);
            size_t j = h & (c - 1);
            while (s[j])
                j = (j + 1) & (c - 1);
            s[j] = t->slot[i];
        }
    free(t->slot);
    t->slot = s;
    t->cap = c;
    return 0;
}

/* ---- model --------------------------------------------------------------- */

/* A file (path + build ID): what the back end runs on. */
typedef struct object {
    uint64_t hash;
    char *path;               /* NULL: no file ([vdso], anonymous) */
    unsigned char *build_id;  /* from the map, or NULL */
    size_t build_id_len;
    const char *build_id_hex; /* the map's, else the file's once opened (interned) */
    int identity;             /* --elf: lookups are addresses as linked */
    const char *debug_path;   /* the file the answers come from (interned) */
    const char *note;         /* why it gives nothing or less (interned) */
    uint64_t link_base;       /* the file's address of offset 0 */
    size_t first_lookup;      /* its lookups: a list through lookup.next */
} object;

/* A loaded image: an object at a base. */
typedef struct image {
    uint64_t hash;
    size_t object;
    uint64_t base, end;
    const char *name;         /* shown: the path, or "[vdso]" (interned) */
} image;

/* A distinct (object, offset) to look up. */
typedef struct lookup {
    uint64_t hash;
    size_t object;
    uint64_t rel;             /* address - base - (1 for a return address) */
    size_t next;              /* next lookup of the same object, SIZE_MAX at the end */
    size_t first_loc, n_locs; /* answers in locs[] */
    int symbol_only;          /* the function came from a symbol table */
} lookup;

/* A caller's request. */
typedef struct request {
    uint64_t hash;
    uint64_t epoch, addr;
    int ra;
    int mapped;               /* a map was in effect */
    long image;               /* -1: in no image */
    size_t lookup;            /* SIZE_MAX: none */
} request;

typedef struct string {
    uint64_t hash;
    char *s;
} string;

#define TABLE(type, name)                                                                          \
    type *name;                                                                                    \
    size_t n_##name, cap_##name;                                                                   \
    index_table name##_index

struct symbolizer {
    sym_options opt;
    const sym_backend *backend;
    TABLE(object, objects);
    TABLE(image, images);
    TABLE(lookup, lookups);
    TABLE(request, requests);
    TABLE(string, strings);
    sym_loc *locs;
    size_t n_locs, cap_locs;
    /* the map in effect */
    const btp_image_map *map;
    long *map_images;         /* map image i -> image id + 1, 0 not yet known */
    size_t cap_map_images;
    uint64_t epoch;
    long elf_image;           /* the --elf image, -1 not yet made */
    size_t backend_failures;  /* files the back end failed on */
};

static const char *const backend_names[] = {
#if BTP_CLI_HAVE_LIBDW
    "libdw",
#endif
    "addr2line", NULL};

const char *const *sym_backends(void)
{
    return backend_names;
}

const char *sym_default_backend(void)
{
    return backend_names[0];
}

symbolizer *sym_new(const sym_options *opt, char *why, size_t why_len)
{
    const char *want = opt->backend ? opt->backend : sym_default_backend();
    const sym_backend *b = NULL;
    if (strcmp(want, "addr2line") == 0)
        b = &sym_backend_addr2line;
    else if (strcmp(want, "libdw") == 0 && sym_backend_libdw.name)
        b = &sym_backend_libdw;
    if (!b) {
        snprintf(why, why_len, "unknown symbolizer back end '%s' (this build has:%s%s)", want,
                 backend_names[1] ? " libdw," : "", " addr2line");
        return NULL;
    }
    symbolizer *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(why, why_len, "out of memory");
        return NULL;
    }
    s->opt = *opt;
    s->backend = b;
    s->elf_image = -1;
    return s;
}

void sym_free(symbolizer *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n_objects; i++) {
        free(s->objects[i].path);
        free(s->objects[i].build_id);
    }
    for (size_t i = 0; i < s->n_strings; i++)
        free(s->strings[i].s);
    free(s->objects);
    free(s->objects_index.slot);
    free(s->images);
    free(s->images_index.slot);
    free(s->lookups);
    free(s->lookups_index.slot);
    free(s->requests);
    free(s->requests_index.slot);
    free(s->strings);
    free(s->strings_index.slot);
    free(s->locs);
    free(s->map_images);
    free(s);
}

/* The entry equal to key (its index), or SIZE_MAX with *slot at the empty
 * slot where it goes. The table must have room (table_reserve). */
static size_t table_find(const index_table *t, const void *entries, size_t stride, uint64_t h,
                         int (*equal)(const void *entry, const void *key), const void *key,
                         size_t *slot)
{
    size_t j = h & (t->cap - 1);
    for (uint32_t k; (k = t->slot[j]) != 0; j = (j + 1) & (t->cap - 1)) {
        const void *e = (const char *)entries + (k - 1) * stride;
        uint64_t eh;
        memcpy(&eh, e, sizeof eh);
        if (eh == h && equal(e, key))
            return k - 1;
    }
    *slot = j;
    return SIZE_MAX;
}

static int string_equal(const void *e, const void *key)
{
    return strcmp(((const string *)e)->s, key) == 0;
}

/* One copy of each distinct string; NULL stays NULL. Sets *oom on failure. */
static const char *intern(symbolizer *s, const char *str, int *oom)
{
    if (!str)
        return NULL;
    uint64_t h = hash_str(str);
    size_t slot;
    if (table_reserve(&s->strings_index, s->n_strings + 1, s->strings, sizeof *s->strings) < 0 ||
        array_grow(&s->strings, &s->cap_strings, s->n_strings + 1, sizeof *s->strings) < 0) {
        *oom = 1;
        return NULL;
    }
    size_t k = table_find(&s->strings_index, s->strings, sizeof *s->strings, h, string_equal, str,
                          &slot);
    if (k != SIZE_MAX)
        return s->strings[k].s;
    char *c = strdup(str);
    if (!c) {
        *oom = 1;
        return NULL;
    }
    s->strings[s->n_strings] = (string){h, c};
    s->strings_index.slot[slot] = (uint32_t)++s->n_strings;
    return c;
}

typedef struct object_key {
    const char *path;
    const unsigned char *build_id;
    size_t build_id_len;
    int identity;
} object_key;

static int object_equal(const void *e, const void *key)
{
    const object *o = e;
    const object_key *k = key;
    return o->identity == k->identity && o->build_id_len == k->build_id_len &&
           (!o->build_id_len || memcmp(o->build_id, k->build_id, k->build_id_len) == 0) &&
           (o->path && k->path ? strcmp(o->path, k->path) == 0 : o->path == k->path);
}

/* The object for (path, build ID), made when new. SIZE_MAX when out of memory. */
static size_t object_of(symbolizer *s, const object_key *key)
{
    uint64_t h = mix(hash_str(key->path), (uint64_t)key->identity);
    for (size_t i = 0; i < key->build_id_len; i++)
        h = mix(h, key->build_id[i]);
    size_t slot;
    if (table_reserve(&s->objects_index, s->n_objects + 1, s->objects, sizeof *s->objects) < 0 ||
        array_grow(&s->objects, &s->cap_objects, s->n_objects + 1, sizeof *s->objects) < 0)
        return SIZE_MAX;
    size_t k = table_find(&s->objects_index, s->objects, sizeof *s->objects, h, object_equal, key,
                          &slot);
    if (k != SIZE_MAX)
        return k;
    object o = {.hash = h, .identity = key->identity, .first_lookup = SIZE_MAX};
    int oom = 0;
    if (key->path && !(o.path = strdup(key->path)))
        return SIZE_MAX;
    if (key->build_id_len) {
        char hex[2 * 64 + 1];
        size_t n = key->build_id_len <= 64 ? key->build_id_len : 64;
        o.build_id = malloc(n);
        if (!o.build_id) {
            free(o.path);
            return SIZE_MAX;
        }
        memcpy(o.build_id, key->build_id, n);
        o.build_id_len = n;
        build_id_hex(o.build_id, n, hex);
        o.build_id_hex = intern(s, hex, &oom);
    }
    if (oom) {
        free(o.path);
        free(o.build_id);
        return SIZE_MAX;
    }
    s->objects[s->n_objects] = o;
    s->objects_index.slot[slot] = (uint32_t)++s->n_objects;
    return s->n_objects - 1;
}

typedef struct image_key {
    size_t object;
    uint64_t base;
    const char *name;
} image_key;

static int image_equal(const void *e, const void *key)
{
    const image *m = e;
    const image_key *k = key;
    return m->object == k->object && m->base == k->base && strcmp(m->name, k->name) == 0;
}

static long image_of(symbolizer *s, const btp_image *im)
{
    const char *path = im->path && im->path[0] ? im->path : NULL;
    object_key ok = {path, im->build_id, im->build_id ? im->build_id_len : 0, 0};
    size_t obj = object_of(s, &ok);
    if (obj == SIZE_MAX)
        return -1;
    int oom = 0;
    const char *name = intern(s, path ? path : im->name ? im->name : "(no name)", &oom);
    if (oom)
        return -1;
    image_key key = {obj, im->base, name};
    uint64_t h = mix(mix(obj, im->base), (uint64_t)(uintptr_t)name);
    size_t slot;
    if (table_reserve(&s->images_index, s->n_images + 1, s->images, sizeof *s->images) < 0 ||
        array_grow(&s->images, &s->cap_images, s->n_images + 1, sizeof *s->images) < 0)
        return -1;
    size_t k = table_find(&s->images_index, s->images, sizeof *s->images, h, image_equal, &key,
                          &slot);
    if (k != SIZE_MAX)
        return (long)k;
    s->images[s->n_images] = (image){h, obj, im->base, im->end_of_text, name};
    s->images_index.slot[slot] = (uint32_t)++s->n_images;
    return (long)s->n_images - 1;
}

static int same_image(const btp_image *a, const btp_image *b)
{
    return a->base == b->base && a->end_of_text == b->end_of_text &&
           a->build_id_len == b->build_id_len &&
           (!a->build_id_len || a->build_id == b->build_id ||
            memcmp(a->build_id, b->build_id, a->build_id_len) == 0) &&
           (a->path == b->path || (a->path && b->path && strcmp(a->path, b->path) == 0)) &&
           (a->name == b->name || (a->name && b->name && strcmp(a->name, b->name) == 0));
}

int sym_set_map(symbolizer *s, const btp_image_map *map)
{
    const btp_image_map *old = s->map;
    int same = old && map && old->n_images == map->n_images;
    for (size_t i = 0; same && i < map->n_images; i++)
        same = &old->images[i] == &map->images[i] || same_image(&old->images[i], &map->images[i]);
    s->map = map;
    if (same || (!old && !map))
        return 0;
    s->epoch++;
    size_t n = map ? map->n_images : 0;
    if (array_grow(&s->map_images, &s->cap_map_images, n + 1, sizeof *s->map_images) < 0)
        return -1;
    memset(s->map_images, 0, (n + 1) * sizeof *s->map_images);
    return 0;
}

typedef struct lookup_key {
    size_t object;
    uint64_t rel;
} lookup_key;

static int lookup_equal(const void *e, const void *key)
{
    const lookup *l = e;
    const lookup_key *k = key;
    return l->object == k->object && l->rel == k->rel;
}

static size_t lookup_of(symbolizer *s, size_t obj, uint64_t rel)
{
    lookup_key key = {obj, rel};
    uint64_t h = mix(mix(0, obj), rel);
    size_t slot;
    if (table_reserve(&s->lookups_index, s->n_lookups + 1, s->lookups, sizeof *s->lookups) < 0 ||
        array_grow(&s->lookups, &s->cap_lookups, s->n_lookups + 1, sizeof *s->lookups) < 0)
        return SIZE_MAX - 1;
    size_t k = table_find(&s->lookups_index, s->lookups, sizeof *s->lookups, h, lookup_equal, &key,
                          &slot);
    if (k != SIZE_MAX)
        return k;
    s->lookups[s->n_lookups] = (lookup){.hash = h, .object = obj, .rel = rel,
                                        .next = s->objects[obj].first_lookup};
    s->objects[obj].first_lookup = s->n_lookups;
    s->lookups_index.slot[slot] = (uint32_t)++s->n_lookups;
    return s->n_lookups - 1;
}

typedef struct request_key {
    uint64_t epoch, addr;
    int ra;
} request_key;

static int request_equal(const void *e, const void *key)
{
    const request *r = e;
    const request_key *k = key;
    return r->epoch == k->epoch && r->addr == k->addr && r->ra == k->ra;
}

long sym_add(symbolizer *s, uint64_t addr, btp_frame_kind kind)
{
    if (kind == BTP_FRAME_OMIT)
        return -1;
    /* a return address points after the call: the call is at addr - 1 */
    int ra = kind == BTP_FRAME_RA && addr > 0;
    request_key key = {s->epoch, addr, ra};
    uint64_t h = mix(mix(s->epoch, addr), (uint64_t)ra);
    size_t slot;
    if (table_reserve(&s->requests_index, s->n_requests + 1, s->requests, sizeof *s->requests) <
            0 ||
        array_grow(&s->requests, &s->cap_requests, s->n_requests + 1, sizeof *s->requests) < 0)
        return -1;
    size_t k = table_find(&s->requests_index, s->requests, sizeof *s->requests, h, request_equal,
                          &key, &slot);
    if (k != SIZE_MAX)
        return (long)k;
    request r = {.hash = h, .epoch = s->epoch, .addr = addr, .ra = ra, .mapped = s->map != NULL,
                 .image = -1, .lookup = SIZE_MAX};
    const btp_image *im = btp_image_map_find(s->map, addr);
    if (im) {
        size_t i = (size_t)(im - s->map->images);
        if (!s->map_images[i]) {
            long id = image_of(s, im);
            if (id < 0)
                return -1;
            s->map_images[i] = id + 1;
        }
        r.image = s->map_images[i] - 1;
        const image *m = &s->images[r.image];
        r.lookup = lookup_of(s, m->object, addr - m->base - (uint64_t)ra);
    } else if (s->opt.elf) {
        if (s->elf_image < 0) {
            object_key ok = {s->opt.elf, NULL, 0, 1};
            size_t obj = object_of(s, &ok);
            int oom = 0;
            const char *name = intern(s, s->opt.elf, &oom);
            if (obj == SIZE_MAX || oom ||
                array_grow(&s->images, &s->cap_images, s->n_images + 1, sizeof *s->images) < 0)
                return -1;
            /* not in the image index: only reachable through elf_image */
            s->images[s->n_images] = (image){0, obj, 0, UINT64_MAX, name};
            s->elf_image = (long)s->n_images++;
        }
        r.image = s->elf_image;
        r.lookup = lookup_of(s, s->images[r.image].object, addr - (uint64_t)ra);
    }
    if (r.lookup == SIZE_MAX - 1)
        return -1;
    /* the tables may have moved: find the slot again */
    table_find(&s->requests_index, s->requests, sizeof *s->requests, h, request_equal, &key, &slot);
    s->requests[s->n_requests] = r;
    s->requests_index.slot[slot] = (uint32_t)++s->n_requests;
    return (long)s->n_requests - 1;
}

/* ---- resolving ------------------------------------------------------------ */

typedef struct batch {
    symbolizer *s;
    const size_t *ids; /* lookup ids, in the order the back end was given */
    size_t last;       /* batch index of the latest emit, SIZE_MAX before any */
    int oom;
} batch;

static int add_loc(symbolizer *s, lookup *l, const char *function, const char *file,
                   unsigned line, int *oom)
{
    if (array_grow(&s->locs, &s->cap_locs, s->n_locs + 1, sizeof *s->locs) < 0) {
        *oom = 1;
        return -1;
    }
    if (!l->n_locs)
        l->first_loc = s->n_locs;
    s->locs[s->n_locs++] = (sym_loc){intern(s, function, oom), intern(s, file, oom), line};
    l->n_locs++;
    return *oom ? -1 : 0;
}

static int emit(void *ctx, size_t i, const char *function, const char *file, unsigned line)
{
    batch *b = ctx;
    if (b->last != SIZE_MAX && i < b->last)
        return 0; /* out of order: never from our back ends; ignore rather than corrupt */
    b->last = i;
    lookup *l = &b->s->lookups[b->ids[i]];
    if (l->n_locs && l->first_loc + l->n_locs != b->s->n_locs)
        return 0;
    return add_loc(b->s, l, function, file, line, &b->oom);
}

static const char *notef(symbolizer *s, int *oom, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static const char *notef(symbolizer *s, int *oom, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return intern(s, buf, oom);
}

/* Name a lookup from the symbol table where DWARF did not (or cannot be
 * trusted to: without a line, addr2line names the nearest symbol even
 * when it does not hold the address). */
static int symbol_fallback(symbolizer *s, lookup *l, elf_file *f, uint64_t vaddr, int *oom)
{
    sym_loc *first = l->n_locs ? &s->locs[l->first_loc] : NULL;
    sym_loc *outer = l->n_locs ? &s->locs[l->first_loc + l->n_locs - 1] : NULL;
    if (outer && outer->function && !strchr(outer->function, '(')) {
        /* A C++ function of internal linkage (static, anonymous namespace)
         * has no linkage name in DWARF, only its short name ("start"); the
         * symbol table has its mangled name. The symbol that holds the
         * address is the outermost function (the one whose code this is),
         * so its demangled name replaces the short one, as llvm-symbolizer
         * does: "(anonymous namespace)::start(int)". Inlined frames have no
         * symbol and keep their DWARF names. */
        const elf_sym *sym = elf_symbol_at(f, vaddr);
        char *d = sym && sym->name[0] == '_' && sym->name[1] == 'Z' ? sym_demangle(sym->name)
                                                                     : NULL;
        if (d && strstr(d, outer->function))
            outer->function = intern(s, d, oom);
        free(d);
        if (*oom)
            return -1;
    }
    if (first && first->function && first->file)
        return 0;
    const elf_sym *sym = elf_symbol_at(f, vaddr);
    char *d = sym ? sym_demangle(sym->name) : NULL;
    const char *name = d ? d : sym ? sym->name : NULL;
    int rc = 0;
    if (first) {
        first->function = intern(s, name, oom);
    } else if (name) {
        rc = add_loc(s, l, name, NULL, 0, oom);
    }
    l->symbol_only = name != NULL;
    if (first && l->n_locs == 1 && !first->function && !first->file)
        l->n_locs = 0; /* nothing known after all */
    free(d);
    return *oom ? -1 : rc;
}

static int resolve_object(symbolizer *s, size_t oi)
{
    object *o = &s->objects[oi];
    elf_file elf, dbg, *sym = NULL;
    char why[512];
    int oom = 0, have_elf = 0, mismatch = 0;
    char *dbg_path = NULL;
    memset(&dbg, 0, sizeof dbg);
    if (o->path)
        have_elf = elf_open(&elf, o->path, why, sizeof why) == 0;
    char file_hex[2 * 64 + 1] = "";
    if (have_elf && elf.build_id && elf.build_id_len <= 64)
        build_id_hex(elf.build_id, elf.build_id_len, file_hex);
    if (have_elf && o->build_id_len &&
        (elf.build_id_len != o->build_id_len || memcmp(elf.build_id, o->build_id,
                                                       o->build_id_len) != 0))
        mismatch = 1;
    if (!o->build_id_hex && file_hex[0])
        o->build_id_hex = intern(s, file_hex, &oom);
    const unsigned char *want = o->build_id_len ? o->build_id : have_elf ? elf.build_id : NULL;
    size_t want_len = o->build_id_len ? o->build_id_len : have_elf ? elf.build_id_len : 0;
    int elf_ok = have_elf && !mismatch;
    if (elf_ok)
        o->link_base = elf.link_base;
    if (s->opt.images_only) {
        if (have_elf)
            elf_close(&elf);
        return oom ? -1 : 0;
    }
    debug_dirs dd = {s->opt.debug_dirs, s->opt.n_debug_dirs, s->opt.no_system_debug_dir};
    if (elf_ok && elf.has_dwarf) {
        sym = &elf;
        o->debug_path = intern(s, o->path, &oom);
    } else if (!o->identity && (want_len || o->path) &&
               (dbg_path = debug_find(&dd, o->path, elf_ok ? &elf : NULL, want, want_len, &dbg))) {
        sym = &dbg;
        o->debug_path = intern(s, dbg_path, &oom);
    } else if (elf_ok && (elf.has_symtab || elf.has_dynsym)) {
        sym = &elf;
        o->debug_path = intern(s, o->path, &oom);
    }
    const char *path = o->path ? o->path : "";
    if (!sym) {
        if (!o->path)
            o->note = intern(s, "no file for this image (nothing to read symbols from)", &oom);
        else if (mismatch)
            o->note = notef(s, &oom,
                            "%s has build ID %s, the image had %s: not the file that was "
                            "loaded, and no debug file for %s found",
                            path, file_hex[0] ? file_hex : "(none)", o->build_id_hex,
                            o->build_id_hex);
        else if (!have_elf)
            o->note = notef(s, &oom, "%s: %s%s%s", path, why,
                            o->build_id_hex ? "; no debug file for build ID " : "",
                            o->build_id_hex ? o->build_id_hex : "");
        else
            o->note = notef(s, &oom,
                            "%s has no symbols (stripped) and no debug file was found "
                            "(install its debug package or give --debug-dir)",
                            path);
    } else if (!sym->has_dwarf) {
        o->note = notef(s, &oom, "no debug info in %s: function from its %s, no line",
                        o->debug_path, sym->has_symtab ? "symbol table" : "exported symbols");
    }
    /* a map without build IDs (maps text) names files by path alone: the
     * file here may be another version of the one loaded, whose names
     * would be wrong without a word */
    if (sym && have_elf && !o->build_id_len && s->opt.same_file &&
        s->opt.same_file(s->opt.same_file_ctx, path, elf.dev, elf.ino) == 0)
        o->note = notef(s, &oom,
                        "the file here is not the one mapped (another inode, no build ID "
                        "to compare): names may be another version's%s%s",
                        o->note ? "; " : "", o->note ? o->note : "");
    /* where file offset 0 is linked: from the file loaded, else the debug
     * file (it keeps the program headers) */
    uint64_t link_base = elf_ok ? elf.link_base : dbg.link_base;
    o->link_base = link_base;
    size_t n = 0;
    for (size_t k = o->first_lookup; k != SIZE_MAX; k = s->lookups[k].next)
        n++;
    size_t *ids = NULL;
    uint64_t *vaddrs = NULL;
    int rc = 0;
    if (sym && n) {
        ids = malloc(n * sizeof *ids);
        vaddrs = malloc(n * sizeof *vaddrs);
        if (!ids || !vaddrs) {
            rc = -1;
            goto out;
        }
        size_t i = 0;
        for (size_t k = o->first_lookup; k != SIZE_MAX; k = s->lookups[k].next, i++) {
            ids[i] = k;
            vaddrs[i] = o->identity ? s->lookups[k].rel : s->lookups[k].rel + link_base;
        }
        if (sym->has_dwarf) {
            batch b = {s, ids, SIZE_MAX, 0};
            char bwhy[512] = "";
            if (s->backend->resolve(s->opt.addr2line ? s->opt.addr2line : "addr2line",
                                    o->debug_path, vaddrs, n, emit, &b, bwhy, sizeof bwhy) < 0) {
                if (b.oom) {
                    rc = -1;
                    goto out;
                }
                /* the back end failed: what it gave may be partial; keep
                 * none of it, say why, and still name the functions from
                 * the symbol table below (a name without a line beats none) */
                for (size_t k = 0; k < n; k++)
                    s->lookups[ids[k]].n_locs = 0;
                o->note = notef(s, &oom, "%s back end failed on %s: %s; function from its "
                                "symbol table, no line", s->backend->name, o->debug_path, bwhy);
                s->backend_failures++;
            }
        }
        for (size_t k = 0; k < n; k++)
            if (symbol_fallback(s, &s->lookups[ids[k]], sym, vaddrs[k], &oom) < 0) {
                rc = -1;
                goto out;
            }
    }
out:
    free(ids);
    free(vaddrs);
    free(dbg_path);
    if (dbg.data)
        elf_close(&dbg);
    if (have_elf)
        elf_close(&elf);
    return rc < 0 || oom ? -1 : 0;
}

int sym_resolve(symbolizer *s)
{
    for (size_t i = 0; i < s->n_objects; i++)
        if (s->objects[i].first_lookup != SIZE_MAX && resolve_object(s, i) < 0)
            return -1;
    return 0;
}

int sym_backends_failed(const char *cmd, const symbolizer *s)
{
    if (!s || !s->backend_failures)
        return 0;
    diag(DIAG_ERROR, NULL, NULL,
         "%s: the %s back end failed on %zu file%s: frames there have no file:line (each "
         "says why)", cmd, s->backend->name, s->backend_failures,
         s->backend_failures == 1 ? "" : "s");
    return 1;
}

void sym_get(const symbolizer *s, long handle, sym_answer *a)
{
    memset(a, 0, sizeof *a);
    if (!s || handle < 0 || (size_t)handle >= s->n_requests) {
        a->note = "not an address";
        return;
    }
    const request *r = &s->requests[handle];
    if (r->image < 0) {
        a->note = r->mapped ? "not in any image of the map"
                         : "no image map for this address (give --maps FILE or --elf FILE)";
        a->offset = r->addr;
        return;
    }
    const image *m = &s->images[r->image];
    const object *o = &s->objects[m->object];
    const lookup *l = &s->lookups[r->lookup];
    a->image = m->name;
    a->build_id = o->build_id_hex;
    a->base = m->base;
    a->image_end = m->end;
    a->link_base = o->link_base;
    a->offset = r->addr - m->base;
    a->debug_file = o->debug_path;
    a->locs = l->n_locs ? &s->locs[l->first_loc] : NULL;
    a->n_locs = l->n_locs;
    a->note = o->note;
    if (!l->n_locs && !o->note)
        a->note = "no function or line at this address in the debug information";
}
