/*
 * CIF speed: ns per image to encode (minimal and Swift mode) and decode
 * image maps, against a baseline measured in the same run: reading the
 * same images from /proc/PID/maps text (a plain line parser, the other
 * form an image map travels in).
 *
 *   cif_bench FILE.maps...     /proc/PID/maps listings (tests/data/corpus/)
 *
 * Each listing becomes an image map (one image per file: base = start of
 * its offset-0 mapping, end of text = end of its last executable mapping,
 * no build IDs: the text has none) and is also run with a 20-byte build ID
 * per image, as Swift captures them. Times: CPU time of the thread, median
 * of 15 repetitions of enough rounds to take about 20 ms. The decoded maps
 * are compared with the originals outside the timing.
 */
#include <btpack/btpack.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_IMAGES 4096
#define REPS 15

typedef struct listing {
    char *text;
    size_t len;
} listing;

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The baseline: /proc/PID/maps text into images (paths point into the
 * text, which the parser cuts into strings; a fresh copy per round). */
static size_t parse_maps(char *text, size_t len, btp_image *ims)
{
    size_t n = 0;
    char *line = text, *end = text + len;
    while (line < end) {
        char *nl = memchr(line, '\n', (size_t)(end - line));
        if (!nl)
            nl = end;
        *nl = 0;
        unsigned long long lo, hi, off;
        char perms[8];
        int path_at = 0;
        if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %n", &lo, &hi, perms, &off, &path_at) >= 4 &&
            path_at && line[path_at] == '/') {
            const char *path = line + path_at;
            size_t k = n;
            while (k > 0 && strcmp(ims[k - 1].path, path) != 0)
                k--;
            if (k == 0 && off == 0 && n < MAX_IMAGES) {
                ims[n++] = (btp_image){.path = path, .base = lo, .end_of_text = lo};
                k = n;
            }
            if (k && perms[2] == 'x')
                ims[k - 1].end_of_text = hi;
        }
        line = nl + 1;
    }
    return n;
}

static int same(const btp_image_map *a, const btp_image_map *b)
{
    if (a->n_images != b->n_images)
        return 0;
    for (size_t i = 0; i < a->n_images; i++)
        if (a->images[i].base != b->images[i].base ||
            a->images[i].end_of_text != b->images[i].end_of_text ||
            strcmp(a->images[i].path, b->images[i].path) != 0 ||
            a->images[i].build_id_len != b->images[i].build_id_len)
            return 0;
    return 1;
}

typedef enum { PARSE, ENCODE_MIN, ENCODE_SWIFT, DECODE } op;

static btp_image images[MAX_IMAGES], decoded[MAX_IMAGES];
static btp_cif_prefix table[1 << 16];
static unsigned char cif[1 << 20], arena[1 << 22];
static char scratch[1 << 22];

static void run_op(op o, const listing *l, const btp_image_map *m, size_t cif_len)
{
    btp_image_map out;
    size_t len;
    switch (o) {
    case PARSE:
        memcpy(scratch, l->text, l->len);
        parse_maps(scratch, l->len, decoded);
        break;
    case ENCODE_MIN:
    case ENCODE_SWIFT:
        btp_cif_encode(m, o == ENCODE_SWIFT ? BTP_CIF_ENC_SWIFT : 0, table, 1 << 16, cif,
                       sizeof cif, &len, NULL);
        break;
    case DECODE:
        btp_cif_decode(cif, cif_len, 0, decoded, MAX_IMAGES, arena, sizeof arena, &out, NULL);
        break;
    }
}

/* Median ns per image of op o. */
static double time_op(op o, const listing *l, const btp_image_map *m, size_t cif_len)
{
    double t[REPS];
    size_t rounds = 1;
    for (;;) { /* calibrate: about 20 ms per repetition */
        double t0 = now_ns();
        for (size_t r = 0; r < rounds; r++)
            run_op(o, l, m, cif_len);
        if (now_ns() - t0 > 2e7 || rounds > (1u << 24))
            break;
        rounds *= 2;
    }
    for (int k = 0; k < REPS; k++) {
        double t0 = now_ns();
        for (size_t r = 0; r < rounds; r++)
            run_op(o, l, m, cif_len);
        t[k] = (now_ns() - t0) / (double)rounds / (double)(m->n_images ? m->n_images : 1);
    }
    qsort(t, REPS, sizeof t[0], cmp_double);
    return t[REPS / 2];
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: cif_bench FILE.maps...\n");
        return 2;
    }
    static unsigned char ids[MAX_IMAGES][20];
    printf("%-22s %6s %7s %8s %8s | ns/image: %7s %7s %7s %7s | ratio to parse: %5s %5s\n",
           "maps", "images", "ids", "text B", "CIF B", "parse", "enc", "enc-sw", "dec", "enc",
           "dec");
    for (int a = 1; a < argc; a++) {
        FILE *f = fopen(argv[a], "rb");
        if (!f) {
            perror(argv[a]);
            return 1;
        }
        listing l = {.text = malloc(1 << 22)};
        l.len = fread(l.text, 1, (1 << 22) - 1, f);
        fclose(f);
        memcpy(scratch, l.text, l.len);
        btp_image_map m = {.word_bits = strstr(argv[a], "i386") ? 32 : 64,
                           .platform = "Linux (unknown)", .images = images,
                           .n_images = parse_maps(scratch, l.len, images)};
        /* the paths must outlive scratch, which the baseline reuses */
        static char paths[1 << 22];
        size_t used = 0;
        for (size_t i = 0; i < m.n_images; i++) {
            size_t n = strlen(images[i].path) + 1;
            memcpy(paths + used, images[i].path, n);
            images[i].path = paths + used;
            used += n;
        }
        const char *base = strrchr(argv[a], '/') ? strrchr(argv[a], '/') + 1 : argv[a];
        for (int with_ids = 0; with_ids < 2; with_ids++) {
            for (size_t i = 0; i < m.n_images; i++) {
                for (int k = 0; k < 20; k++)
                    ids[i][k] = (unsigned char)(i * 31 + k * 7);
                images[i].build_id = with_ids ? ids[i] : NULL;
                images[i].build_id_len = with_ids ? 20 : 0;
            }
            size_t cif_len = 0;
            if (btp_cif_encode(&m, BTP_CIF_ENC_SWIFT, table, 1 << 16, cif, sizeof cif, &cif_len,
                               NULL) != BTP_OK) {
                fprintf(stderr, "%s: cannot encode\n", argv[a]);
                return 1;
            }
            btp_image_map back;
            if (btp_cif_decode(cif, cif_len, 0, decoded, MAX_IMAGES, arena, sizeof arena, &back,
                               NULL) != BTP_OK || !same(&m, &back)) {
                fprintf(stderr, "%s: the map does not come back\n", argv[a]);
                return 1;
            }
            double parse = time_op(PARSE, &l, &m, cif_len);
            double enc = time_op(ENCODE_MIN, &l, &m, cif_len);
            double enc_sw = time_op(ENCODE_SWIFT, &l, &m, cif_len);
            double dec = time_op(DECODE, &l, &m, cif_len);
            printf("%-22.22s %6zu %7s %8zu %8zu | ns/image: %7.1f %7.1f %7.1f %7.1f | ratio to "
                   "parse: %5.2f %5.2f\n",
                   base, m.n_images, with_ids ? "20 B" : "none", l.len, cif_len, parse, enc,
                   enc_sw, dec, enc / parse, dec / parse);
        }
        free(l.text);
    }
    return 0;
}
