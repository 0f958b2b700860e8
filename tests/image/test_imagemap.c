/* lib/image: /proc/PID/maps text and image lines into image maps, lookup,
 * build-ID notes; every field of hostile input and every buffer size. */
#include <btpack/btpack.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"

static const char maps[] =
    "00400000-00401000 r--p 00000000 fe:00 11 /usr/bin/prog\n"
    "00401000-00402000 r-xp 00001000 fe:00 11 /usr/bin/prog\n"
    "00402000-00403000 r--p 00002000 fe:00 11 /usr/bin/prog\n"
    "00403000-00404000 rw-p 00003000 fe:00 11 /usr/bin/prog\n"
    "00404000-00425000 rw-p 00000000 00:00 0          [heap]\n"
    "7f0000000000-7f0000001000 r--p 00000000 fe:00 22 /usr/lib/locale/C.utf8/LC_CTYPE\n"
    "7f0000010000-7f0000020000 r--p 00000000 fe:00 33 /lib/with space/libc.so.6\n"
    "7f0000020000-7f0000080000 r-xp 00010000 fe:00 33 /lib/with space/libc.so.6\n"
    "7f0000080000-7f0000090000 r--p 00070000 fe:00 33 /lib/with space/libc.so.6\n"
    "7f00000a0000-7f00000a1000 r-xp 00000000 fe:00 44 /tiny\n"
    "7f00000a1000-7f00000a2000 rw-p 00000000 fe:00 44 /tiny\n"
    "7f00000b0000-7f00000b8000 r-xp 00008000 fe:00 55 /cut/libcut.so (deleted)\n"
    "7ffc00000000-7ffc00002000 r-xp 00000000 00:00 0                          [vdso]\n"
    "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0   [vsyscall]";

static void test_procmaps(void)
{
    btp_image images[16];
    char bytes[512];
    btp_image_buf buf = {images, 16, 0, bytes, sizeof bytes, 0};
    btp_image_map map;
    size_t off = 99;
    btp_status st = btp_image_map_from_procmaps(maps, strlen(maps), 64, &buf, &map, &off);
    CHECK(st == BTP_OK, "parse: %s at %zu", btp_status_name(st), off);
    CHECK(map.n_images == 5, "5 images (prog, libc, tiny, libcut, vdso), got %zu", map.n_images);
    if (map.n_images != 5)
        return;
    CHECK(strcmp(map.images[0].path, "/usr/bin/prog") == 0 && map.images[0].base == 0x400000 &&
              map.images[0].end_of_text == 0x402000,
          "prog %s %llx %llx", map.images[0].path, (unsigned long long)map.images[0].base,
          (unsigned long long)map.images[0].end_of_text);
    CHECK(strcmp(map.images[1].path, "/lib/with space/libc.so.6") == 0 &&
              map.images[1].base == 0x7f0000010000 && map.images[1].end_of_text == 0x7f0000080000,
          "libc");
    CHECK(strcmp(map.images[2].path, "/tiny") == 0 && map.images[2].base == 0x7f00000a0000 &&
              map.images[2].end_of_text == 0x7f00000a1000,
          "a tiny file's second offset-0 mapping joins its image");
    CHECK(strcmp(map.images[3].path, "/cut/libcut.so (deleted)") == 0 &&
              map.images[3].base == 0x7f00000a8000,
          "no offset-0 mapping: base = start - offset (%llx)",
          (unsigned long long)map.images[3].base);
    CHECK(!map.images[4].path && strcmp(map.images[4].name, "[vdso]") == 0, "vdso");
    CHECK(btp_image_map_find(&map, 0x401000) == &map.images[0], "find in text");
    CHECK(btp_image_map_find(&map, 0x400010) == &map.images[0], "find in the headers");
    CHECK(btp_image_map_find(&map, 0x402000) == NULL, "end of text is outside");
    CHECK(btp_image_map_find(&map, 0x404000) == NULL, "heap: no image");
    CHECK(btp_image_map_find(&map, 0x7f000007ffff) == &map.images[1], "last byte of libc");
    CHECK(btp_image_map_find(NULL, 0x401000) == NULL, "NULL map");

    /* every smaller buffer: BTP_E_BUFFER_TOO_SMALL and the sizes needed */
    size_t need_images = buf.n_images, need_bytes = buf.n_bytes;
    for (size_t ni = 0; ni <= need_images; ni++)
        for (size_t nb = 0; nb <= need_bytes; nb += (nb < need_bytes - 1 ? 7 : 1)) {
            btp_image_buf b = {images, ni, 0, bytes, nb, 0};
            st = btp_image_map_from_procmaps(maps, strlen(maps), 64, &b, &map, &off);
            int fits = ni == need_images && nb == need_bytes;
            CHECK(fits ? st == BTP_OK : st == BTP_E_BUFFER_TOO_SMALL, "%zu/%zu: %s", ni, nb,
                  btp_status_name(st));
            CHECK(b.n_images == need_images && b.n_bytes == need_bytes, "needed %zu/%zu", ni, nb);
        }
}

static void expect_bad(const char *text, unsigned word_bits, btp_status want, size_t want_off)
{
    btp_image images[4];
    char bytes[256];
    btp_image_buf buf = {images, 4, 0, bytes, sizeof bytes, 0};
    btp_image_map map;
    size_t off = 12345;
    btp_status st = btp_image_map_from_procmaps(text, strlen(text), word_bits, &buf, &map, &off);
    CHECK(st == want && off == want_off, "\"%s\": %s at %zu, want %s at %zu", text,
          btp_status_name(st), off, btp_status_name(want), want_off);
}

static void test_procmaps_hostile(void)
{
    expect_bad("zz", 64, BTP_E_MAPS_SYNTAX, 0);
    expect_bad("1000 r-xp 0 0:0 0 /x", 64, BTP_E_MAPS_SYNTAX, 4);
    expect_bad("1000-1000 r-xp 0 0:0 0 /x", 64, BTP_E_MAPS_SYNTAX, 5);
    expect_bad("2000-1000 r-xp 0 0:0 0 /x", 64, BTP_E_MAPS_SYNTAX, 5);
    expect_bad("1000-2000 rwxq 0 0:0 0 /x", 64, BTP_E_MAPS_SYNTAX, 10);
    expect_bad("1000-2000 r-x 0 0:0 0 /x", 64, BTP_E_MAPS_SYNTAX, 10);
    expect_bad("1000-2000 r-xp 0 0:0 x /x", 64, BTP_E_MAPS_SYNTAX, 21);
    expect_bad("1000-2000 r-xp 0 00 0 /x", 64, BTP_E_MAPS_SYNTAX, 19);
    expect_bad("1000-2000 r-xp 0 0:0 123456789012345678901 /x", 64, BTP_E_MAPS_SYNTAX, 41);
    expect_bad("00000000000000001-2 r-xp 0 0:0 0 /x", 64, BTP_E_MAPS_SYNTAX, 0);
    expect_bad("1000-100000000 r-xp 0 0:0 0 /x", 32, BTP_E_VALUE_TOO_WIDE, 5);
    expect_bad("1000-2000 r-xp 0 0:0 0 /x\nbad", 64, BTP_E_MAPS_SYNTAX, 29); /* "bad" is hex */
    {
        /* a mapping below where its file starts is not of that load: it starts
         * an image of its own, and no image ends before its base */
        static const char below[] = "ffdc0000-ffde1000 rw-p 0 0:0 0 [vdso]\n"
                                    "f7f96000-f7f98000 r-xp 0 0:0 0 [vdso]\n"
                                    "5000-6000 r--p 0 8:1 7 /x\n"
                                    "1000-2000 r-xp 1000 8:1 7 /x\n";
        btp_image ims[4];
        char b[64];
        btp_image_buf nb = {ims, 4, 0, b, sizeof b, 0};
        btp_image_map m;
        btp_status st = btp_image_map_from_procmaps(below, sizeof below - 1, 32, &nb, &m, NULL);
        CHECK(st == BTP_OK && m.n_images == 2 && !m.images[0].path &&
                  m.images[0].base == 0xf7f96000 && m.images[0].end_of_text == 0xf7f98000 &&
                  strcmp(m.images[1].path, "/x") == 0 && m.images[1].base == 0 &&
                  m.images[1].end_of_text == 0x2000,
              "mappings below their file's base: %s, %zu images", btp_status_name(st),
              m.n_images);
    }
    {
        /* a NUL in a path (the kernel never writes one): refused at its byte,
         * not a path cut short */
        static const char nul[] = "1000-2000 r-xp 0 0:0 0 /a\0b\n";
        btp_image ims[2];
        char b[64];
        btp_image_buf nb = {ims, 2, 0, b, sizeof b, 0};
        btp_image_map m;
        size_t off = 0;
        btp_status st = btp_image_map_from_procmaps(nul, sizeof nul - 1, 64, &nb, &m, &off);
        CHECK(st == BTP_E_MAPS_SYNTAX && off == 25, "NUL in a path: %s at %zu",
              btp_status_name(st), off);
    }
    /* blank lines and CRLF are fine; pseudo-paths and anonymous code are not images */
    btp_image images[2];
    char bytes[64];
    btp_image_buf buf = {images, 2, 0, bytes, sizeof bytes, 0};
    btp_image_map map;
    const char *ok = "\n  \n1000-2000 r-xp 0 0:0 0 /x\r\n3000-4000 r-xp 0 0:0 0\n"
                     "5000-6000 r-xp 0 0:0 0 [anon:jit]\n";
    CHECK(btp_image_map_from_procmaps(ok, strlen(ok), 16, &buf, &map, NULL) == BTP_OK &&
              map.n_images == 1 && strcmp(map.images[0].path, "/x") == 0,
          "blank lines, CRLF, anonymous code");
    CHECK(btp_image_map_from_procmaps(NULL, 1, 64, &buf, &map, NULL) == BTP_E_INVALID_ARGUMENT,
          "NULL text");
    CHECK(btp_image_map_from_procmaps(ok, 1, 48, &buf, &map, NULL) == BTP_E_INVALID_ARGUMENT,
          "bad word size");
    /* many files: every one becomes an image, in order */
    char big[64 * 60];
    size_t n = 0;
    for (int i = 0; i < 60; i++)
        n += (size_t)snprintf(big + n, sizeof big - n, "%x000-%x000 r-xp 0 0:0 %d /f%d\n",
                              i + 1, i + 2, i, i);
    btp_image many[60];
    char mb[600];
    btp_image_buf mbuf = {many, 60, 0, mb, sizeof mb, 0};
    CHECK(btp_image_map_from_procmaps(big, n, 64, &mbuf, &map, NULL) == BTP_OK &&
              map.n_images == 60 && strcmp(map.images[59].path, "/f59") == 0 &&
              map.images[59].base == 0x3c000,
          "60 files");
}

static void roundtrip(const char *path, const unsigned char *id, size_t id_len)
{
    btp_image im = {NULL, path, id, id_len, 0x7f0000001000, 0x7f0000009000};
    char line[256];
    size_t len = 0;
    btp_status st = btp_image_line_format(&im, line, sizeof line, &len);
    CHECK(st == BTP_OK, "format %s", btp_status_name(st));
    /* every smaller buffer: too small, and the length needed */
    for (size_t cap = 0; cap < len; cap++) {
        size_t l2 = 0;
        CHECK(btp_image_line_format(&im, line, cap, &l2) == BTP_E_BUFFER_TOO_SMALL && l2 == len,
              "cap %zu", cap);
    }
    btp_image_line_format(&im, line, sizeof line, &len);
    btp_image out[1];
    char bytes[256];
    btp_image_buf buf = {out, 1, 0, bytes, sizeof bytes, 0};
    size_t off = 0;
    st = btp_image_line_parse(line, len, 64, &buf, &off);
    CHECK(st == BTP_OK, "parse back \"%.*s\": %s at %zu", (int)len, line, btp_status_name(st), off);
    if (st != BTP_OK)
        return;
    const char *p = path && *path ? path : NULL;
    CHECK(out[0].base == im.base && out[0].end_of_text == im.end_of_text &&
              out[0].build_id_len == id_len &&
              (!id_len || memcmp(out[0].build_id, id, id_len) == 0) &&
              (p ? out[0].path && strcmp(out[0].path, p) == 0 : out[0].path == NULL),
          "round trip of \"%.*s\"", (int)len, line);
}

static void test_image_lines(void)
{
    static const unsigned char id[20] = {0x93, 0xac, 0x61, 0xec, 0x5a, 0x8e, 0xb1, 0x39, 0x6f, 0x9f,
                                         0xbd, 0x35, 0x0e, 0x31, 0x69, 0xa5, 0x58, 0x52, 0x8a, 0x40};
    char line[160];
    size_t len;
    btp_image im = {NULL, "/usr/lib/x86_64-linux-gnu/libc.so.6", id, 20, 0x7f0392f9d000,
                    0x7f0393119000};
    CHECK(btp_image_line_format(&im, line, sizeof line, &len) == BTP_OK &&
              len == strlen("image 0x7f0392f9d000 0x7f0393119000 "
                            "93ac61ec5a8eb1396f9fbd350e3169a558528a40 "
                            "/usr/lib/x86_64-linux-gnu/libc.so.6") &&
              memcmp(line, "image 0x7f0392f9d000 0x7f0393119000 93ac61ec5a8eb1396f9fbd350e3169a5"
                           "58528a40 /usr/lib/x86_64-linux-gnu/libc.so.6", len) == 0,
          "exact line: %.*s", (int)len, line);
    roundtrip("/usr/lib/libc.so.6", id, 20);
    roundtrip("/a path/with\\back\nnew\x01\x7f line", id, 1);
    roundtrip("-", NULL, 0);
    roundtrip(NULL, id, 20);
    roundtrip("", NULL, 0);
    static const char *const bad[] = {
        "", "imag 0x1 0x2 - -", "image 1 0x2 - -", "image 0x1 0x2 - ", "image 0x1 0x2 -",
        "image 0x2 0x1 - -", "image 0x1 0x2 abc -", "image 0x1 0x2 zz -", "image 0x1 0x2 - /a\\q",
        "image 0x1 0x2 - /a\\x0", "image 0x1 0x2 - /a\\x00", "image 0x1 0x2 - /a\\",
        "image 0x11111111111111111 0x2 - -", "image 0x1  0x2 - -",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        btp_image out[1];
        char bytes[64];
        btp_image_buf buf = {out, 1, 0, bytes, sizeof bytes, 0};
        size_t off = 999;
        btp_status st = btp_image_line_parse(bad[i], strlen(bad[i]), 64, &buf, &off);
        CHECK(st == BTP_E_IMAGE_SYNTAX && off <= strlen(bad[i]), "\"%s\": %s at %zu", bad[i],
              btp_status_name(st), off);
    }
    btp_image out[1];
    char bytes[64];
    btp_image_buf buf = {out, 1, 0, bytes, sizeof bytes, 0};
    static const char nul[] = "image 0x1 0x2 - /a\0b";
    size_t nul_off = 0;
    btp_status nul_st = btp_image_line_parse(nul, sizeof nul - 1, 64, &buf, &nul_off);
    CHECK(nul_st == BTP_E_IMAGE_SYNTAX && nul_off == 18, "NUL in a path: %s at %zu",
          btp_status_name(nul_st), nul_off);
    const char *wide = "image 0x100000000 0x100000001 - -";
    CHECK(btp_image_line_parse(wide, strlen(wide), 32, &buf, NULL) == BTP_E_VALUE_TOO_WIDE,
          "too wide for 32 bits");
    char longid[6 + 8 + 130 + 4] = "image 0x1 0x2 ";
    memset(longid + 14, 'a', 130);
    memcpy(longid + 144, " -", 3);
    CHECK(btp_image_line_parse(longid, strlen(longid), 64, &buf, NULL) == BTP_E_IMAGE_SYNTAX,
          "build ID longer than 64 bytes");
}

static void test_notes(void)
{
    /* an ABI note, then the build ID */
    unsigned char n[64] = {0};
    uint32_t h1[3] = {4, 16, 1}, h2[3] = {4, 8, 3};
    memcpy(n, h1, 12);
    memcpy(n + 12, "GNU", 4);
    memcpy(n + 32, h2, 12);
    memcpy(n + 44, "GNU", 4);
    memcpy(n + 48, "\x01\x02\x03\x04\x05\x06\x07\x08", 8);
    const unsigned char *id = NULL;
    size_t len = 0;
    CHECK(btp_elf_notes_build_id(n, 56, 0, &id, &len) == BTP_OK && len == 8 && id == n + 48,
          "found");
    for (size_t cut = 45; cut < 56; cut++)
        CHECK(btp_elf_notes_build_id(n, cut, 0, &id, &len) == BTP_E_BAD_NOTE, "cut at %zu", cut);
    CHECK(btp_elf_notes_build_id(n, 32, 0, &id, &len) == BTP_OK && !id && !len, "none");
    uint32_t huge[3] = {4, 0xfffffff0u, 3};
    memcpy(n + 32, huge, 12);
    CHECK(btp_elf_notes_build_id(n, 64, 0, &id, &len) == BTP_E_BAD_NOTE, "huge descsz");
}

int main(void)
{
    test_procmaps();
    test_procmaps_hostile();
    test_image_lines();
    test_notes();
    return check_finish();
}
