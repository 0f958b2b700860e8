/* What the commands print of a symbolizer answer (symbolizer.h): the JSON
 * fields `btpack symbolize --to json` and `heap report --json` share, and
 * the one-line form of `stats` on a log and `heap report|map`. */
#include "symbolize/symbolizer.h"

#include <string.h>

void sym_answer_json(strbuf *o, const sym_answer *a)
{
    if (a->image) {
        sb_adds(o, ",\"image\":");
        sb_json_string(o, a->image, strlen(a->image));
        sb_printf(o, ",\"offset\":\"0x%llx\"", (unsigned long long)a->offset);
    }
    if (a->build_id)
        sb_printf(o, ",\"build_id\":\"%s\"", a->build_id);
    sb_adds(o, ",\"symbols\":[");
    for (size_t j = 0; j < a->n_locs; j++) {
        const sym_loc *l = &a->locs[j];
        sb_adds(o, j ? ",{" : "{");
        int comma = 0;
        if (l->function) {
            sb_adds(o, "\"function\":");
            sb_json_string(o, l->function, strlen(l->function));
            comma = 1;
        }
        if (l->file) {
            sb_adds(o, comma ? ",\"file\":" : "\"file\":");
            sb_json_string(o, l->file, strlen(l->file));
            sb_printf(o, ",\"line\":%u", l->line);
            comma = 1;
        }
        sb_printf(o, "%s\"inlined\":%s}", comma ? "," : "", j + 1 < a->n_locs ? "true" : "false");
    }
    sb_addc(o, ']');
    if (a->note) {
        sb_adds(o, ",\"note\":");
        sb_json_string(o, a->note, strlen(a->note));
    }
}

void sym_answer_line(strbuf *o, uint64_t addr, const sym_answer *a)
{
    sb_hex_u64(o, addr);
    if (a->image && a->base) { /* not for --elf, whose offsets are the addresses */
        const char *base = strrchr(a->image, '/');
        sb_printf(o, "  %s+0x%llx", base ? base + 1 : a->image, (unsigned long long)a->offset);
    }
    if (a->n_locs && a->locs[0].function) {
        sb_printf(o, "  %s", a->locs[0].function);
        if (a->locs[0].file)
            sb_printf(o, " %s:%u", a->locs[0].file, a->locs[0].line);
        if (a->n_locs > 1 && a->locs[a->n_locs - 1].function)
            sb_printf(o, " (inlined into %s)", a->locs[a->n_locs - 1].function);
    }
}
