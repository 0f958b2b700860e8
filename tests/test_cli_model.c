/* The tool's building blocks: the trace model's checks and limits, number
 * parsing, the byte buffer, the shared line reader, and the image map a
 * log stores. */
#include "check.h"
#include "format.h"
#include "imagemap_text.h"
#include "lines.h"
#include "log/pieces.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int hex(const char *s, uint64_t *v)
{
    return parse_hex_u64(s, strlen(s), v);
}

static int dec(const char *s, uint64_t *v)
{
    return parse_dec_u64(s, strlen(s), v);
}

static void test_trace(void)
{
    trace t;
    trace_init(&t, 10);
    trace_reset(&t, 16);
    btp_frame ra = {0xffff, BTP_FRAME_RA};
    CHECK(trace_add(&t, ra, 3) == BTP_OK && t.n == 3, "3 copies");
    CHECK(t.n_runs == 1 && t.runs[0].count == 3 && t.runs[0].frame.value == 0xffff &&
              t.runs[0].frame.kind == BTP_FRAME_RA,
          "copies kept as one run");
    const btp_frame *flat = trace_frames(&t);
    CHECK(flat && flat[2].value == 0xffff && flat[2].kind == BTP_FRAME_RA, "expanded content");
    /* A count far past the limit fails before anything is allocated. */
    size_t cap = t.cap;
    CHECK(trace_add(&t, ra, UINT64_MAX) == BTP_E_LIMIT && t.n == 3 && t.cap == cap,
          "2^64-1 copies: limit, nothing added");
    CHECK(trace_add(&t, ra, 8) == BTP_E_LIMIT && t.n == 3, "11 > 10 frames");
    CHECK(trace_add(&t, ra, 7) == BTP_OK && t.n == 10 && t.n_runs == 1, "exactly 10 frames");
    trace_reset(&t, 16);
    CHECK(t.n == 0 && t.word_bits == 16 && !t.truncated && t.max_frames == 10, "reset");
    CHECK(trace_add(&t, (btp_frame){0x10000, BTP_FRAME_PC}, 1) == BTP_E_VALUE_TOO_WIDE,
          "address wider than 16 bits");
    CHECK(trace_add(&t, (btp_frame){0x10000, BTP_FRAME_OMIT}, 1) == BTP_E_VALUE_TOO_WIDE,
          "omit count wider than 16 bits");
    CHECK(trace_add(&t, ra, 0) == BTP_E_ZERO_COUNT, "0 copies");
    CHECK(t.n == 0, "nothing added by failures");
    CHECK(trace_add(&t, (btp_frame){0, BTP_FRAME_OMIT}, 1) == BTP_OK && t.n == 1,
          "omit 0 kept (what the default CBF policy decodes)");
    trace_reset(&t, 16);
    trace_reset(&t, 64);
    CHECK(trace_add(&t, (btp_frame){UINT64_MAX, BTP_FRAME_ASYNC}, 1) == BTP_OK, "64-bit max");
    trace_free(&t);

    /* a run of 10^8 frames costs one run, not 1.6 GB */
    trace_init(&t, 100000000);
    trace_reset(&t, 64);
    CHECK(trace_add(&t, ra, 1) == BTP_OK && trace_add(&t, ra, 99999999) == BTP_OK &&
              t.n == 100000000 && t.n_runs == 1 && t.cap <= 64,
          "10^8 copies: one run");
    CHECK(trace_add(&t, (btp_frame){1, BTP_FRAME_PC}, 1) == BTP_E_LIMIT, "past the limit");
    trace_free(&t);

    /* trace_add_frames: the same checks for a whole stack, all or nothing */
    btp_frame st[4] = {{1, BTP_FRAME_PC}, {0xffff, BTP_FRAME_RA}, {2, BTP_FRAME_OMIT},
                       {0x10000, BTP_FRAME_RA}};
    trace_init(&t, 6);
    trace_reset(&t, 16);
    CHECK(trace_add_frames(&t, st, 4) == BTP_E_VALUE_TOO_WIDE && t.n == 0,
          "a frame wider than 16 bits: nothing added");
    CHECK(trace_add_frames(&t, st, 3) == BTP_OK && t.n == 3 && t.n_runs == 3 &&
              t.runs[1].frame.value == 0xffff && t.runs[2].frame.kind == BTP_FRAME_OMIT,
          "3 frames appended in order");
    CHECK(trace_add_frames(&t, st, 0) == BTP_OK && t.n == 3, "0 frames");
    CHECK(trace_add_frames(&t, st, 3) == BTP_OK && t.n == 6, "exactly 6 frames");
    CHECK(trace_add_frames(&t, st, 1) == BTP_E_LIMIT && t.n == 6, "7 > 6 frames");
    trace_free(&t);
}

static void test_numbers(void)
{
    uint64_t v = 0;
    CHECK(hex("0x0", &v) == 0 && v == 0, "0x0");
    CHECK(hex("0XaBc", &v) == 0 && v == 0xabc, "case");
    CHECK(hex("0xffffffffffffffff", &v) == 0 && v == UINT64_MAX, "2^64-1");
    CHECK(hex("0x0000ffffffffffffffff", &v) == 0 && v == UINT64_MAX, "leading zeros");
    CHECK(hex("0x10000000000000000", &v) == -1, "2^64 overflows");
    CHECK(hex("0x", &v) == -1 && hex("10", &v) == -1 && hex("0xg", &v) == -1 &&
              hex("0x1 ", &v) == -1 && hex("", &v) == -1,
          "malformed hex");
    CHECK(dec("18446744073709551615", &v) == 0 && v == UINT64_MAX, "dec 2^64-1");
    CHECK(dec("18446744073709551616", &v) == -1, "dec 2^64 overflows");
    CHECK(dec("", &v) == -1 && dec("-1", &v) == -1 && dec("1x", &v) == -1, "malformed dec");
}

static void test_strbuf(void)
{
    strbuf sb = STRBUF_INIT;
    sb_adds(&sb, "a");
    sb_printf(&sb, "%d-%s", 42, "x");
    sb_hex(&sb, "\x01\xab", 2);
    sb_addc(&sb, '!');
    CHECK(sb.len == 10 && strcmp(sb.data, "a42-x01ab!") == 0, "content %s", sb.data);
    for (int i = 0; i < 10000; i++)
        sb_adds(&sb, "0123456789");
    CHECK(sb.len == 100010 && !sb.oom && sb.data[sb.len] == 0, "growth");
    sb_clear(&sb);
    CHECK(sb.len == 0 && sb.data[0] == 0, "clear");
    sb_free(&sb);

    /* fmt_hex_u64 against printf: every digit count, nibbles 0-9 and a-f,
     * and the bytes after the end it may scribble on (room for 18). */
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < 4000; i++) {
        uint64_t v = i < 64 ? (uint64_t)1 << i : i < 128 ? ((uint64_t)1 << (i - 64)) - 1
                                                         : x >> (i % 64);
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        char got[19], want[24];
        char *e = fmt_hex_u64(got, v);
        *e = 0;
        snprintf(want, sizeof want, "0x%llx", (unsigned long long)v);
        if (strcmp(got, want) != 0) {
            CHECK(0, "fmt_hex_u64(%s) gave %s", want, got);
            break;
        }
    }
    char d[21];
    CHECK(strcmp((*fmt_hex_u64(d, 0) = 0, d), "0x0") == 0, "fmt_hex_u64(0)");
    CHECK(strcmp((*fmt_dec_u64(d, UINT64_MAX) = 0, d), "18446744073709551615") == 0 &&
              strcmp((*fmt_dec_u64(d, 0) = 0, d), "0") == 0,
          "fmt_dec_u64");
}

static void test_lines(void)
{
    /* CRLF, an empty line, a long line across read chunks, no final newline. */
    char path[] = "/tmp/btpack-lines-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0, "mkstemp");
    if (fd < 0)
        return;
    FILE *f = fdopen(fd, "wb");
    size_t long_len = 200000;
    fputs("one\r\n\n", f);
    for (size_t i = 0; i < long_len; i++)
        fputc('a' + (int)(i % 26), f);
    fputs("\nlast", f);
    fclose(f);

    input in;
    line_reader lr;
    const char *line;
    size_t len;
    CHECK(input_open(&in, path) == 0, "open");
    lines_init(&lr, &in);
    CHECK(lines_next(&lr, &line, &len) == 1 && len == 3 && strcmp(line, "one") == 0 &&
              lr.lineno == 1,
          "CR removed");
    CHECK(lines_next(&lr, &line, &len) == 1 && len == 0 && lr.lineno == 2, "empty line");
    CHECK(line_is_blank(line, len), "blank");
    CHECK(lines_next(&lr, &line, &len) == 1 && len == long_len && line[long_len - 1] ==
              'a' + (int)((long_len - 1) % 26) && lr.lineno == 3,
          "long line");
    CHECK(lines_next(&lr, &line, &len) == 1 && strcmp(line, "last") == 0 && lr.lineno == 4,
          "final line without newline");
    CHECK(lines_next(&lr, &line, &len) == 0, "end");
    CHECK(lines_next(&lr, &line, &len) == 0, "end stays");
    CHECK(!line_is_blank(" x ", 3) && line_is_blank(" \t", 2), "line_is_blank");
    lines_free(&lr);
    input_close(&in);
    remove(path);
}

static btp_status to_strbuf(void *ctx, const void *data, size_t len)
{
    sb_add(ctx, data, len);
    return ((strbuf *)ctx)->oom ? BTP_E_OUT_OF_MEMORY : BTP_OK;
}

/* A log whose metadata blocks are (key, text) pairs, one allocation after
 * each, into sb. */
static int log_with(strbuf *sb, const char *const *meta, size_t n)
{
    btp_log_writer *w;
    sb_clear(sb);
    if (btp_log_writer_open(&w, to_strbuf, sb, NULL) != BTP_OK)
        return -1;
    btp_frame f = {0x1234, BTP_FRAME_RA};
    for (size_t i = 0; i + 1 < n; i += 2) {
        btp_log_writer_meta(w, meta[i], meta[i + 1], strlen(meta[i + 1]));
        btp_log_writer_alloc(w, 16, 0x10000 + 16 * i, &f, 1);
    }
    return btp_log_writer_close(w) == BTP_OK ? 0 : -1;
}

/* Stream the log in sb (in uneven pieces, as from a pipe) with its
 * metadata as records, as the tools read it: each item is taken into lm
 * and released at once. Reads up to record `upto` (UINT64_MAX: all).
 * Returns the last status of log_map_take() other than BTP_END (BTP_END:
 * none); *released: the reader holds none of the items taken. */
static btp_status stream_map(const strbuf *sb, log_map *lm, uint64_t upto, int *released)
{
    piece_src src = {(const unsigned char *)sb->data, sb->len, 0, 7, 13};
    btp_log_reader_options o;
    btp_log_reader_options_init(&o);
    o.flags = BTP_LOG_META_RECORDS;
    btp_log_reader *r;
    *released = 0;
    if (btp_log_reader_open_source(&r, pieces, &src, &o) != BTP_OK)
        return BTP_E_IO;
    log_map_init(lm, btp_log_reader_word_bits(r));
    btp_log_record rec;
    btp_status last = BTP_END;
    const char *key;
    const void *d;
    size_t len, items = 0;
    while (btp_log_reader_next(r, &rec) == BTP_OK) {
        if (rec.kind == BTP_LOG_META) {
            if (btp_log_reader_meta(r, rec.meta, &key, &d, &len, NULL) == BTP_OK) {
                btp_status st = log_map_take(lm, key, d, len);
                if (st != BTP_END)
                    last = st;
            }
            btp_log_reader_meta_release(r, rec.meta + 1);
            items = rec.meta + 1;
        } else if (rec.index >= upto) {
            break;
        }
    }
    *released = items && btp_log_reader_meta(r, items - 1, &key, &d, &len, NULL) ==
                             BTP_E_INVALID_ARGUMENT;
    btp_log_reader_close(r);
    return last;
}

static const char *path_at(log_map *lm, uint64_t addr)
{
    const btp_image *im = btp_image_map_find(log_map_get(lm), addr);
    return im && im->path ? im->path : "";
}

static size_t n_images(log_map *lm)
{
    const btp_image_map *m = log_map_get(lm);
    return m ? m->n_images : 0;
}

/* Every stored block counts, newest over older: an older image that
 * overlaps a newer one is left out; images only older blocks hold stay.
 * Taken as the log streams by, with every item released once taken. */
static void test_map_from_log(void)
{
    strbuf sb = STRBUF_INIT;
    log_map lm;
    int released;
    static const char *const images[] = {
        "images", "image 0x1000 0x2000 - /a.so\nimage 0x9000 0xa000 aabb /old.so\n",
        "maps", "00400000-00401000 r-xp 00000000 08:01 1 /ignored\n",
        "images", "image 0x1800 0x2800 - /b.so\nimage 0x5000 0x6000 - /c.so\n",
    };
    CHECK(log_with(&sb, images, 6) == 0, "log");
    CHECK(stream_map(&sb, &lm, 0, &released) == BTP_OK && n_images(&lm) == 2 &&
              !strcmp(path_at(&lm, 0x1100), "/a.so") && !strcmp(path_at(&lm, 0x9800), "/old.so"),
          "the first record sees the first block's map: %zu images", n_images(&lm));
    log_map_free(&lm);
    CHECK(stream_map(&sb, &lm, UINT64_MAX, &released) == BTP_OK && n_images(&lm) == 3,
          "images blocks merged: %zu images", n_images(&lm));
    CHECK(released, "every item released once taken");
    CHECK(!strcmp(path_at(&lm, 0x1900), "/b.so") && !strcmp(path_at(&lm, 0x1100), "") &&
              !strcmp(path_at(&lm, 0x5800), "/c.so") && !strcmp(path_at(&lm, 0x9800), "/old.so"),
          "newest block wins where images overlap");
    const btp_image *old = btp_image_map_find(log_map_get(&lm), 0x9800);
    CHECK(old && old->build_id_len == 2 && old->build_id[0] == 0xaa && old->build_id[1] == 0xbb,
          "build ID copied");
    CHECK(!strcmp(path_at(&lm, 0x400800), ""), "maps blocks unused when there are images");
    log_map_free(&lm);

    /* where the map comes from: (metadata, status, images, an address and
     * the path it is in, "" for none) */
    static const struct {
        const char *what;
        const char *meta[6];
        size_t n_meta;
        btp_status st;
        size_t images;
        uint64_t addr[2];
        const char *path[2];
    } cases[] = {
        {"maps blocks merged when there are no images",
         {"maps", "00400000-00401000 r-xp 00000000 08:01 1 /bin/x\n", "maps",
          "7f0000000000-7f0000001000 r-xp 00000000 08:01 2 /lib/y.so\n"},
         4, BTP_OK, 2, {0x400800, 0x7f0000000800}, {"/bin/x", "/lib/y.so"}},
        {"images replace maps met before them",
         {"maps", "00400000-00401000 r-xp 00000000 08:01 1 /bin/x\n", "images",
          "image 0x1000 0x2000 - /a.so\n"},
         4, BTP_OK, 1, {0x1100, 0x400800}, {"/a.so", ""}},
        {"a bad block: its status, no map (later blocks unused)",
         {"images", "image 0x1000 0x2000 - /a.so\n", "images",
          "image 0x3000 0x2000 - /backwards.so\n", "images", "image 0x5000 0x6000 - /c.so\n"},
         6, BTP_E_IMAGE_SYNTAX, 0, {0x1100, 0x5800}, {"", ""}},
        {"no map", {"comment", "# nothing here\n"}, 2, BTP_END, 0, {0x1100, 0}, {"", ""}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        CHECK(log_with(&sb, cases[i].meta, cases[i].n_meta) == 0, "log");
        btp_status st = stream_map(&sb, &lm, UINT64_MAX, &released);
        CHECK(st == cases[i].st && lm.st == cases[i].st && n_images(&lm) == cases[i].images &&
                  !strcmp(path_at(&lm, cases[i].addr[0]), cases[i].path[0]) &&
                  !strcmp(path_at(&lm, cases[i].addr[1]), cases[i].path[1]),
              "%s: %s, %zu images", cases[i].what, btp_status_name(st), n_images(&lm));
        CHECK(st != BTP_E_IMAGE_SYNTAX || lm.err_off == 13, "the bad field's offset: %zu",
              lm.err_off);
        log_map_free(&lm);
    }
    sb_free(&sb);

    /* An image a later block overlaps is gone, even when a still later one
     * replaces that image in turn (the map holds what the newest block that
     * covered an address said, and what nothing newer covered). */
    log_map_init(&lm, 64);
    const char *x = "image 0x1000 0x2000 - /x.so\n", *y = "image 0x1800 0x2800 - /y.so\n",
               *z = "image 0x2400 0x3000 - /z.so\n";
    CHECK(log_map_take(&lm, "images", x, strlen(x)) == BTP_OK, "x");
    const btp_image_map *m1 = log_map_get(&lm);
    CHECK(log_map_take(&lm, "images", y, strlen(y)) == BTP_OK, "y");
    CHECK(m1->n_images == 1 && !strcmp(m1->images[0].path, "/x.so"),
          "the map handed out stays as it was until the next one is asked for");
    const btp_image_map *m2 = log_map_get(&lm);
    CHECK(m2 != m1 && m2->n_images == 1 && !strcmp(path_at(&lm, 0x1100), ""),
          "a changed map comes at another address");
    CHECK(log_map_take(&lm, "images", z, strlen(z)) == BTP_OK && log_map_get(&lm) != m2 &&
              n_images(&lm) == 1 && !strcmp(path_at(&lm, 0x2500), "/z.so") &&
              !strcmp(path_at(&lm, 0x1100), ""),
          "x stays replaced");
    CHECK(log_map_take(&lm, "maps", "", 0) == BTP_END && log_map_take(&lm, "clock", "", 0) ==
              BTP_END, "maps after images and other keys are not used");
    log_map_free(&lm);
}

int main(void)
{
    test_trace();
    test_numbers();
    test_strbuf();
    test_lines();
    test_map_from_log();
    return check_finish();
}
