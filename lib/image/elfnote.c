/* The GNU build ID in an ELF note area (imagemap.h). */
#include "image/image_internal.h"

#include <string.h>

#define NT_GNU_BUILD_ID_TYPE 3

static uint32_t rd32(const unsigned char *p, int swap)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return swap ? (v >> 24) | ((v >> 8) & 0xff00) | ((v << 8) & 0xff0000) | (v << 24) : v;
}

btp_status btp_elf_notes_build_id(const void *notes, size_t len, int swap,
                                  const unsigned char **id, size_t *id_len)
{
    if ((!notes && len) || !id || !id_len)
        return BTP_E_INVALID_ARGUMENT;
    const unsigned char *p = notes;
    *id = NULL;
    *id_len = 0;
    size_t i = 0;
    while (len - i >= 12) {
        uint32_t namesz = rd32(p + i, swap), descsz = rd32(p + i + 4, swap),
                 type = rd32(p + i + 8, swap);
        size_t name_room = ((size_t)namesz + 3) & ~(size_t)3;
        size_t desc_room = ((size_t)descsz + 3) & ~(size_t)3;
        i += 12;
        if (namesz > len - i || name_room > len - i)
            return BTP_E_BAD_NOTE;
        const unsigned char *name = p + i;
        i += name_room;
        if (descsz > len - i)
            return BTP_E_BAD_NOTE;
        if (type == NT_GNU_BUILD_ID_TYPE && namesz == 4 &&
            btp_image_same_bytes((const char *)name, "GNU", 4) && descsz > 0) {
            *id = p + i;
            *id_len = descsz;
            return BTP_OK;
        }
        /* the padding after the last descriptor may be missing */
        i += desc_room <= len - i ? desc_room : len - i;
    }
    return BTP_OK;
}
