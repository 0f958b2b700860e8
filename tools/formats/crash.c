/* crash: the records btpack's crash handler writes (include/btpack/capture.h),
 * v2 (`image` lines with build IDs) and v1 (only `map` lines):
 *
 *   btpack-crash v2 signal=11 code=1 addr=0x10 pid=42 tid=42 method=libgcc
 *   cbf <one CBF stream as hex>
 *   image 0x<base> 0x<end of text> <build ID or -> <path or ->
 *   map <a /proc/self/maps line>
 *   end
 *
 * Text before a record (a program's own output) is skipped; several
 * records may follow each other. Unknown header fields and line kinds are
 * ignored (later versions add some). A record without `end` was cut short:
 * it is used as it is, with a warning. Each record becomes one trace whose
 * image map comes from its `image` lines, else from its `map` lines, and
 * whose context is the header line. Reader only. */
#include "format.h"

#include <stdlib.h>
#include <string.h>

#include "diag.h"
#include "imagemap_text.h"
#include "lines.h"

typedef struct crash_state {
    /* the record's images, in the one of the two not given with a trace
     * last, so that the map given stays as it was until another is (a
     * symbolizer compares the two to see a change: sym_set_map()) */
    owned_map images[2];
    int cur, given;
    strbuf maps;    /* the `map` lines' text */
    strbuf header;  /* the header line, NUL-terminated */
    strbuf bytes;   /* the CBF stream */
    size_t lineno;  /* lines before r->pos */
} crash_state;

static int crash_open(reader *r)
{
    r->state = calloc(1, sizeof(crash_state));
    return r->state ? 0 : rd_error(r, "out of memory");
}

static void crash_close(reader *r)
{
    crash_state *s = r->state;
    if (s) {
        owned_map_free(&s->images[0]);
        owned_map_free(&s->images[1]);
        sb_free(&s->maps);
        sb_free(&s->header);
        sb_free(&s->bytes);
    }
    free(s);
    r->state = NULL;
}

/* The next line of the input (*b, *len, without its newline; valid until
 * the next call), read through the reader's window; advances. Returns 1, 0
 * at the end, -1 on a read error or a line longer than LINES_MAX_LEN. */
static int next_line(reader *r, crash_state *s, const char **b, size_t *len)
{
    const char *p, *nl;
    size_t have;
    for (size_t need = 256;; need = have * 2) {
        p = (const char *)rd_bytes(r, need, &have);
        if (!have)
            return r->fatal ? -1 : 0;
        nl = memchr(p, '\n', have);
        if (nl || r->in_end)
            break;
        if (have >= LINES_MAX_LEN) {
            r->fatal = 1;
            r->loc = (src_loc){.line = s->lineno + 1};
            return rd_error(r, "line longer than %zu bytes", LINES_MAX_LEN);
        }
    }
    *len = nl ? (size_t)(nl - p) : have;
    *b = p;
    rd_skip(r, *len + (nl != NULL));
    s->lineno++;
    if (*len && p[*len - 1] == '\r')
        (*len)--;
    return 1;
}

static int starts(const char *b, size_t len, const char *word)
{
    size_t n = strlen(word);
    return len >= n && memcmp(b, word, n) == 0;
}

/* "btpack-crash vN" with N >= 1 */
static int is_header(const char *b, size_t len)
{
    return starts(b, len, "btpack-crash v") && len > 14 && b[14] >= '1' && b[14] <= '9';
}

/* word size from the cbf line's information byte, to parse image lines */
static int crash_read_next(reader *r, trace *t)
{
    crash_state *s = r->state;
    const char *b = NULL;
    size_t len = 0;
    /* skip to the next record */
    for (;;) {
        int got = next_line(r, s, &b, &len);
        if (got <= 0)
            return got;
        if (is_header(b, len))
            break;
    }
    r->loc = (src_loc){.line = s->lineno};
    size_t header_line = s->lineno;
    sb_clear(&s->header);
    sb_add(&s->header, b, len);
    sb_clear(&s->maps);
    sb_clear(&s->bytes);
    s->cur = !s->given;
    owned_map_clear(&s->images[s->cur], 64);
    /* image lines are kept as text until the word size is known */
    strbuf image_text = STRBUF_INIT;
    size_t image_first_line = 0, cbf_line = 0;
    int ended = 0, rc = 1;
    for (;;) {
        uint64_t at = r->pos;
        int got = next_line(r, s, &b, &len);
        if (got < 0) {
            rc = -1;
            goto out;
        }
        if (got == 0)
            break;
        if (is_header(b, len)) { /* the next record: leave it for the next call */
            r->pos = at;
            s->lineno--;
            break;
        }
        if (len == 3 && memcmp(b, "end", 3) == 0) {
            ended = 1;
            break;
        }
        if (starts(b, len, "cbf ")) {
            r->loc = (src_loc){.line = s->lineno};
            if (cbf_line) {
                rc = rd_error(r, "a second cbf line in the record of line %zu", header_line);
                goto out;
            }
            cbf_line = s->lineno;
            size_t i = 4;
            while (i < len && b[i] == ' ')
                i++;
            if ((len - i) % 2) {
                rc = rd_error(r, "odd number of hex digits in the cbf line");
                goto out;
            }
            char *d = sb_reserve(&s->bytes, (len - i) / 2);
            if (!d) {
                rc = rd_error(r, "out of memory");
                goto out;
            }
            for (size_t k = i; k < len; k += 2) {
                int hi = hex_digit(b[k]), lo = hex_digit(b[k + 1]);
                if (hi < 0 || lo < 0) {
                    rc = rd_error(r, "column %zu: not a hex digit", (hi < 0 ? k : k + 1) + 1);
                    goto out;
                }
                *d++ = (char)(hi << 4 | lo);
            }
            s->bytes.len += (len - i) / 2;
        } else if (starts(b, len, "image ")) {
            if (!image_first_line)
                image_first_line = s->lineno;
            sb_add(&image_text, b, len);
            sb_addc(&image_text, '\n');
        } else if (starts(b, len, "map ")) {
            sb_add(&s->maps, b + 4, len - 4);
            sb_addc(&s->maps, '\n');
        }
        /* anything else: a line kind of a later version */
    }
    if (s->maps.oom || image_text.oom || s->header.oom) {
        rc = rd_error(r, "out of memory");
        goto out;
    }
    r->loc = (src_loc){.line = header_line};
    if (!cbf_line) {
        rc = rd_error(r, "crash record without a cbf line%s", ended ? "" : " (cut short)");
        goto out;
    }
    if (!ended)
        diag(DIAG_WARNING, r->name, &r->loc,
             "crash record cut short (no end line): using what it has");
    r->loc = (src_loc){.line = cbf_line};
    size_t used;
    if (cbf_to_trace(r, (const uint8_t *)s->bytes.data, s->bytes.len, cbf_policy(r->opt), 0, t,
                     &used) < 0) {
        rc = -1;
        goto out;
    }
    r->loc = (src_loc){.line = header_line};
    t->loc = r->loc;
    size_t off = 0;
    btp_status st = BTP_OK;
    if (image_text.len) {
        st = owned_map_image_lines(&s->images[s->cur], image_text.data, image_text.len, t->word_bits,
                                   &off);
        if (st != BTP_OK) {
            /* which image line, which column: from the offset in the text */
            size_t line = image_first_line, line_start = 0;
            for (size_t k = 0; k < off && k < image_text.len; k++)
                if (image_text.data[k] == '\n')
                    line++, line_start = k + 1;
            r->loc = (src_loc){.line = line};
            rc = rd_error(r, "column %zu: bad image line: %s", off - line_start + 1,
                          btp_strerror(st));
            goto out;
        }
        t->image_map = &s->images[s->cur].map;
        s->given = s->cur;
    } else if (s->maps.len) {
        st = owned_map_procmaps(&s->images[s->cur], s->maps.data, s->maps.len, t->word_bits, &off);
        if (st != BTP_OK) {
            rc = rd_error(r, "bad map line: %s at byte %zu of the map lines", btp_strerror(st),
                          off);
            goto out;
        }
        t->image_map = &s->images[s->cur].map;
        s->given = s->cur;
    }
    t->context = s->header.data;
out:
    sb_free(&image_text);
    return rc;
}

const format fmt_crash = {
    .name = "crash",
    .help = "btpack crash records (text: header, cbf, image and map lines; v1 and v2)",
    .binary = 1,
    .open = crash_open,
    .close = crash_close,
    .read_next = crash_read_next,
};
