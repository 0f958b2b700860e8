/*
 * A test helper around the CIF codec, for the Swift interop tests:
 *
 *   cif_tool reencode FLAGS [no-build-ids]
 *                             stdin: CIF hex lines; each is decoded (default
 *                             policy) and encoded again with encoder FLAGS
 *                             (decimal BTP_CIF_ENC_*), without the build IDs
 *                             if asked: the hex, or "error <status name>"
 */
#include <btpack/btpack.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int hexval(int c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                          : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

int main(int argc, char **argv)
{
    if (argc < 3 || argc > 4 || strcmp(argv[1], "reencode") != 0 ||
        (argc == 4 && strcmp(argv[3], "no-build-ids") != 0)) {
        fprintf(stderr, "usage: cif_tool reencode FLAGS [no-build-ids] < hex-lines\n");
        return 2;
    }
    unsigned flags = (unsigned)strtoul(argv[2], NULL, 10);
    size_t cap = 1 << 20;
    char *line = malloc(cap);
    unsigned char *in = malloc(cap / 2), *out = malloc(cap), *arena = malloc(16 * cap);
    btp_image *images = malloc(BTP_CIF_MAX_IMAGES(cap / 2) * sizeof *images);
    btp_cif_prefix *table = malloc(cap * sizeof *table);
    if (!line || !in || !out || !arena || !images || !table)
        return 1;
    while (fgets(line, (int)cap, stdin)) {
        size_t n = 0;
        for (size_t i = 0; hexval(line[i]) >= 0 && hexval(line[i + 1]) >= 0; i += 2)
            in[n++] = (unsigned char)(hexval(line[i]) << 4 | hexval(line[i + 1]));
        btp_image_map map;
        size_t len = 0;
        btp_status st = btp_cif_decode(in, n, BTP_CIF_POLICY_DEFAULT, images,
                                       BTP_CIF_MAX_IMAGES(cap / 2), arena, 16 * cap, &map, NULL);
        if (st == BTP_OK && argc == 4)
            for (size_t i = 0; i < map.n_images; i++)
                images[i].build_id_len = 0;
        if (st == BTP_OK)
            st = btp_cif_encode(&map, flags, table, cap, out, cap, &len, NULL);
        if (st != BTP_OK) {
            printf("error %s\n", btp_status_name(st));
            continue;
        }
        for (size_t i = 0; i < len; i++)
            printf("%02x", out[i]);
        putchar('\n');
    }
    free(line);
    free(in);
    free(out);
    free(arena);
    free(images);
    free(table);
    return 0;
}
