/*
 * btp_image_map_self(): the loaded images of this very process, checked
 * against independent sources: /proc/self/maps (where each file's offset 0
 * and its executable mappings are), the files on disk (their build ID
 * notes, read here with plain stdio), the auxiliary vector (the vDSO), and
 * dlopen (an image loaded later comes last). Plus the buffer contract:
 * size queries, prefixes that fit, bad arguments.
 */
#include "../check.h"

#include <btpack/btpack.h>

#include <dlfcn.h>
#include <elf.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#define MAXI 512

static btp_image images[MAXI];
static unsigned char arena[1 << 16];

/* The build ID in the file's PT_NOTE segments, read from disk. */
static size_t build_id_on_disk(const char *path, unsigned char *out, size_t cap)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    ElfW(Ehdr) eh;
    size_t n = 0;
    if (fread(&eh, sizeof eh, 1, f) == 1 && memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 &&
        eh.e_ident[EI_CLASS] == (sizeof(void *) == 8 ? ELFCLASS64 : ELFCLASS32)) {
        for (unsigned i = 0; i < eh.e_phnum && n == 0; i++) {
            ElfW(Phdr) ph;
            if (fseek(f, (long)(eh.e_phoff + i * sizeof ph), SEEK_SET) != 0 ||
                fread(&ph, sizeof ph, 1, f) != 1 || ph.p_type != PT_NOTE || ph.p_filesz > 65536)
                continue;
            unsigned char notes[65536];
            if (fseek(f, (long)ph.p_offset, SEEK_SET) != 0 ||
                fread(notes, 1, ph.p_filesz, f) != ph.p_filesz)
                continue;
            size_t align = ph.p_align == 8 ? 8 : 4;
            for (size_t at = 0; at + 12 <= ph.p_filesz;) {
                uint32_t h[3];
                memcpy(h, notes + at, 12);
                size_t name = at + 12, desc = name + ((h[0] + align - 1) & ~(align - 1));
                size_t next = desc + ((h[1] + align - 1) & ~(align - 1));
                if (next > ph.p_filesz)
                    break;
                if (h[2] == NT_GNU_BUILD_ID && h[0] == 4 && memcmp(notes + name, "GNU", 4) == 0 &&
                    h[1] <= cap) {
                    memcpy(out, notes + desc, h[1]);
                    n = h[1];
                    break;
                }
                at = next;
            }
        }
    }
    fclose(f);
    return n;
}

/* From /proc/self/maps: the file mapped at offset 0 at `base`, and the end
 * of that file's last executable mapping. */
static int maps_of(uint64_t base, char *file, size_t cap, uint64_t *end_of_text)
{
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f)
        return 0;
    char line[8192], path[4096];
    int found = 0;
    *end_of_text = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long long lo, hi, off;
        char perms[8];
        path[0] = 0;
        if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %4095[^\n]", &lo, &hi, perms, &off, path) < 4)
            continue;
        if (!found && lo == base && off == 0) {
            snprintf(file, cap, "%s", path);
            found = 1;
        }
        if (found && strcmp(path, file) == 0 && strchr(perms, 'x'))
            *end_of_text = hi;
    }
    fclose(f);
    return found;
}

/* The map into images[0..max) and arena[0..bytes). */
static btp_status take(btp_image_map *map, size_t max, size_t bytes, btp_image_buf *buf)
{
    *buf = (btp_image_buf){images, max, 0, (char *)arena, bytes, 0};
    return btp_image_map_self(buf, map);
}

int main(void)
{
    btp_image_map map;
    btp_image_buf buf;
    btp_status st;

    CHECK(btp_image_map_self(NULL, &map) == BTP_E_INVALID_ARGUMENT, "NULL buf");
    buf = (btp_image_buf){images, MAXI, 0, (char *)arena, sizeof arena, 0};
    CHECK(btp_image_map_self(&buf, NULL) == BTP_E_INVALID_ARGUMENT, "NULL map");

    /* A size query with no room at all. */
    btp_image_buf none = {NULL, 0, 0, NULL, 0, 0};
    st = btp_image_map_self(&none, &map);
    size_t ni = none.n_images, na = none.n_bytes;
    CHECK(st == BTP_E_BUFFER_TOO_SMALL && map.n_images == 0 && ni >= 3 && na > 0,
          "size query: %s, %zu images, %zu bytes", btp_status_name(st), ni, na);

    /* The whole map. */
    st = take(&map, MAXI, sizeof arena, &buf);
    CHECK(st == BTP_OK && map.n_images == buf.n_images && buf.n_images == ni &&
              buf.n_bytes == na,
          "full map: %s, %zu images of %zu", btp_status_name(st), map.n_images, ni);
    CHECK(map.word_bits == 8 * sizeof(void *) && map.images == images, "word bits %u",
          map.word_bits);

    char exe[PATH_MAX], real[PATH_MAX];
    ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[k > 0 ? k : 0] = 0;
    CHECK(map.n_images > 0 && images[0].path && strcmp(images[0].path, exe) == 0,
          "the executable comes first: %s", map.n_images ? images[0].path : "(none)");

    int vdso = 0, with_id = 0;
    for (size_t i = 0; i < map.n_images; i++) {
        const btp_image *im = &images[i];
        CHECK(im->base < im->end_of_text && im->base % 4096 == 0 && im->end_of_text % 4096 == 0,
              "image %zu: base 0x%llx end 0x%llx", i, (unsigned long long)im->base,
              (unsigned long long)im->end_of_text);
        if (!im->path) {
            vdso++;
            CHECK(im->base == getauxval(AT_SYSINFO_EHDR) && im->name && im->name[0],
                  "vDSO at 0x%llx named %s", (unsigned long long)im->base,
                  im->name ? im->name : "(null)");
            continue;
        }
        char file[4096];
        uint64_t end = 0;
        CHECK(maps_of(im->base, file, sizeof file, &end), "%s: no offset-0 mapping at 0x%llx",
              im->path, (unsigned long long)im->base);
        CHECK(realpath(im->path, real) && strcmp(real, file) == 0, "%s is mapped as %s",
              im->path, file);
        CHECK(end == im->end_of_text, "%s: end of text 0x%llx, maps say 0x%llx", im->path,
              (unsigned long long)im->end_of_text, (unsigned long long)end);
        unsigned char id[64];
        size_t n = build_id_on_disk(im->path, id, sizeof id);
        CHECK(n == im->build_id_len && (n == 0 || memcmp(id, im->build_id, n) == 0),
              "%s: build ID of %zu bytes, the file has %zu", im->path, im->build_id_len, n);
        with_id += n > 0;
    }
    CHECK(vdso == (getauxval(AT_SYSINFO_EHDR) ? 1 : 0), "%d vDSO images", vdso);
    CHECK(with_id >= 3, "only %d images with build IDs", with_id);

    /* Too few slots, too few bytes: the sizes a retry needs; exact sizes fit. */
    size_t full_n = map.n_images;
    st = take(&map, 2, sizeof arena, &buf);
    CHECK(st == BTP_E_BUFFER_TOO_SMALL && buf.n_images == full_n, "2 slots: %s, %zu needed",
          btp_status_name(st), buf.n_images);
    st = take(&map, MAXI, na - 1, &buf);
    CHECK(st == BTP_E_BUFFER_TOO_SMALL && buf.n_bytes == na, "1 byte short: %s, %zu needed",
          btp_status_name(st), buf.n_bytes);
    st = take(&map, ni, na, &buf);
    CHECK(st == BTP_OK && map.n_images == full_n, "exact sizes: %s", btp_status_name(st));
    /* Appending to earlier content: the map covers both. */
    st = btp_image_map_self(&buf, &map);
    CHECK(st == BTP_E_BUFFER_TOO_SMALL, "no room to append: %s", btp_status_name(st));
    st = take(&map, MAXI, sizeof arena, &buf);
    size_t first = buf.n_images;
    st = btp_image_map_self(&buf, &map);
    CHECK(st == BTP_OK && map.n_images == 2 * first && images[first].base == images[0].base,
          "appended: %s, %zu images", btp_status_name(st), map.n_images);

    /* An image loaded now comes last. */
    void *h = dlopen("libresolv.so.2", RTLD_NOW);
    if (h) {
        st = take(&map, MAXI, sizeof arena, &buf);
        CHECK(st == BTP_OK && map.n_images > full_n && map.images[map.n_images - 1].path &&
                  strstr(map.images[map.n_images - 1].path, "libresolv.so.2"),
              "after dlopen: %zu images, last %s", map.n_images,
              map.n_images ? map.images[map.n_images - 1].path : "-");
        dlclose(h);
    }
    return check_finish();
}
