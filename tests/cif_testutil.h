/* What the CIF tests share: comparing two image maps. */
#ifndef BTPACK_TESTS_CIF_TESTUTIL_H
#define BTPACK_TESTS_CIF_TESTUTIL_H

#include <btpack/btpack.h>

#include <string.h>

/* The name a decoder gives an image: its own, or its path's last component
 * after '/' or '\'. */
static inline const char *cif_test_name(const btp_image *im)
{
    const char *name = im->name, *p = im->path;
    if (!name && p)
        for (name = p; *p; p++)
            if (*p == '/' || *p == '\\')
                name = p + 1;
    return name ? name : "";
}

/* The same maps as CIF carries them: word size, platform, and per image
 * path, name, build ID and addresses (absent and empty strings alike). */
static inline int cif_same_map(const btp_image_map *a, const btp_image_map *b)
{
    if (a->word_bits != b->word_bits || a->n_images != b->n_images ||
        strcmp(a->platform ? a->platform : "", b->platform ? b->platform : "") != 0)
        return 0;
    for (size_t i = 0; i < a->n_images; i++) {
        const btp_image *x = &a->images[i], *y = &b->images[i];
        if (x->base != y->base || x->end_of_text != y->end_of_text ||
            x->build_id_len != y->build_id_len ||
            (x->build_id_len && memcmp(x->build_id, y->build_id, x->build_id_len) != 0) ||
            strcmp(x->path ? x->path : "", y->path ? y->path : "") != 0 ||
            strcmp(cif_test_name(x), cif_test_name(y)) != 0)
            return 0;
    }
    return 1;
}

#endif
