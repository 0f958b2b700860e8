/*
 * btpack dump --from cif: a Swift image map (CIF) field by field.
 *
 * The library's decoder reads the map and reports each field as it goes
 * (btp_cif_walk); this file only prints them, so what is shown is exactly
 * what the decoder read, and a fault is shown at the offset where the
 * decoder stopped.
 */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

#include "cif_map.h"
#include "diag.h"

typedef struct dump_ctx {
    const uint8_t *in;
    size_t len;
} dump_ctx;

/* text[0..n) quoted, bytes outside printable ASCII as \xHH, cut at about
 * cap characters with "...". */
static void quote(char *out, size_t cap, const char *text, size_t n)
{
    size_t o = 0;
    out[o++] = '"';
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)text[i];
        if (o + 8 >= cap) {
            memcpy(out + o, "...", 3);
            o += 3;
            break;
        }
        if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\')
            out[o++] = (char)c;
        else
            o += (size_t)snprintf(out + o, cap - o, "\\x%02x", c);
    }
    out[o++] = '"';
    out[o] = 0;
}

static void visit(void *vctx, const btp_cif_event *ev)
{
    dump_ctx *c = vctx;
    char op[160], rem[160];
    const uint8_t *p = c->in + ev->offset;
    op[0] = rem[0] = 0;
    switch (ev->field) {
    case BTP_CIF_F_INFO:
        snprintf(op, sizeof op, "v0 %u-bit", (unsigned)ev->value);
        dump_line(ev->offset, p, ev->len, "info", op, "");
        break;
    case BTP_CIF_F_PLATFORM:
        quote(op, sizeof op, ev->text, ev->text_len);
        dump_line(ev->offset, p, ev->len, "platform", op, "");
        break;
    case BTP_CIF_F_COUNT:
        snprintf(op, sizeof op, "%llu image%s", (unsigned long long)ev->value,
                 ev->value == 1 ? "" : "s");
        dump_line(ev->offset, p, ev->len, "count", op, "");
        break;
    case BTP_CIF_F_HEADER:
        printf("# image %zu\n", ev->image);
        snprintf(op, sizeof op, "%s base %u byte%s, end %u byte%s",
                 (ev->value & 0x80) ? "relative" : "absolute", (unsigned)((ev->value >> 3) & 7) + 1,
                 ((ev->value >> 3) & 7) ? "s" : "", (unsigned)(ev->value & 7) + 1,
                 (ev->value & 7) ? "s" : "");
        dump_line(ev->offset, p, ev->len, "header", op, (ev->value & 0x40) ? "(bit 6 set)" : "");
        break;
    case BTP_CIF_F_BASE:
        snprintf(op, sizeof op, "0x%llx", (unsigned long long)ev->value);
        dump_line(ev->offset, p, ev->len, "base", op, ev->relative ? "(previous + delta)" : "");
        break;
    case BTP_CIF_F_END:
        snprintf(op, sizeof op, "0x%llx", (unsigned long long)ev->value);
        dump_line(ev->offset, p, ev->len, "eot", op, "(end of text)");
        break;
    case BTP_CIF_F_BUILD_ID: {
        size_t o = 0;
        for (size_t i = 0; i < ev->text_len && o + 6 < sizeof op; i++)
            o += (size_t)snprintf(op + o, sizeof op - o, "%02x", (unsigned char)ev->text[i]);
        if (ev->text_len * 2 >= sizeof op - 6)
            strcpy(op + o, "...");
        if (!ev->text_len)
            strcpy(op, "none");
        dump_line(ev->offset, p, ev->len, "buildid", op, "");
        break;
    }
    case BTP_CIF_F_PATH_STR:
        quote(op, sizeof op, ev->text, ev->text_len);
        dump_line(ev->offset, p, ev->len, "str", op, "");
        break;
    case BTP_CIF_F_PATH_DEFINE:
        quote(rem, sizeof rem, ev->text, ev->text_len);
        printf("%6s  %-26s %-6s %llu = %s\n", "", "", "define", (unsigned long long)ev->value,
               rem);
        break;
    case BTP_CIF_F_PATH_EXPAND:
        snprintf(op, sizeof op, "%llu", (unsigned long long)ev->value);
        quote(rem, sizeof rem, ev->text, ev->text_len);
        dump_line(ev->offset, p, ev->len, "expand", op, rem);
        break;
    case BTP_CIF_F_PATH_FRAMEWORK:
        snprintf(op, sizeof op, "version %c", ev->value >= 0x20 && ev->value < 0x7f ?
                 (char)ev->value : '?');
        quote(rem, sizeof rem, ev->text, ev->text_len);
        dump_line(ev->offset, p, ev->len, "framework", op, rem);
        break;
    case BTP_CIF_F_PATH_END:
        dump_line(ev->offset, p, ev->len, "end", "", "");
        break;
    case BTP_CIF_F_PATH:
        if (ev->text_len)
            quote(op, sizeof op, ev->text, ev->text_len);
        printf("%6s  %-26s %-6s %s\n", "", "", "path", ev->text_len ? op : "(none)");
        break;
    case BTP_CIF_F_PATH_DROPPED:
        snprintf(op, sizeof op, "%s", btp_status_name((btp_status)ev->value));
        printf("%6zu  %-26s %-6s %s\n", ev->offset, "", "dropped", op);
        break;
    }
}

int dump_cif(const uint8_t *p, size_t len, const char *name, int strict)
{
    cif_map m = {0};
    btp_cif_info info;
    dump_ctx c = {.in = p, .len = len};
    printf("# image map: %zu byte%s\n", len, len == 1 ? "" : "s");
    /* Storage as cif_map_decode sizes it, walked once with the visitor. */
    btp_status st = cif_map_decode(&m, p, len, cif_map_policy(strict), &info);
    if (st != BTP_E_OUT_OF_MEMORY)
        st = btp_cif_walk(p, len, cif_map_policy(strict), m.images, m.max_images, m.arena,
                          m.arena_size, &m.map, &info, visit, &c);
    int rc = 0;
    if (st != BTP_OK) {
        char op[64];
        size_t off = info.error_offset, k = len - off < 8 ? len - off : 8;
        snprintf(op, sizeof op, "%s", btp_status_name(st));
        dump_line(off, p + off, k, "FAULT", op, btp_strerror(st));
        src_loc loc = {.offset = off, .has_offset = 1};
        diag(DIAG_ERROR, name, &loc, "%s (%s)", btp_strerror(st), btp_status_name(st));
        rc = -1;
    } else if (info.consumed < len) {
        char op[64];
        snprintf(op, sizeof op, "%zu byte%s", len - info.consumed,
                 len - info.consumed == 1 ? "" : "s");
        dump_line(info.consumed, p + info.consumed, len - info.consumed, "trail", op,
                  "(ignored; --strict rejects)");
    }
    cif_map_free(&m);
    return rc;
}
