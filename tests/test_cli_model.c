/* The tool's building blocks: the trace model's checks and limits, number
 * parsing, the byte buffer, the shared line reader, and the image map a
 * log stores. */
#include "check.h"
#include "format.h"
#include "imagemap_text.h"
#include "lines.h"

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
    CHECK(t.frames[2].value == 0xffff && t.frames[2].kind == BTP_FRAME_RA, "copy content");
    /* A count far past the limit fails before anything is allocated. */
    size_t cap = t.cap;
    CHECK(trace_add(&t, ra, UINT64_MAX) == BTP_E_LIMIT && t.n == 3 && t.cap == cap,
          "2^64-1 copies: limit, nothing added");
    CHECK(trace_add(&t, ra, 8) == BTP_E_LIMIT && t.n == 3, "11 > 10 frames");
    CHECK(trace_add(&t, ra, 7) == BTP_OK && t.n == 10, "exactly 10 frames");
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

    /* trace_add_frames: the same checks for a whole stack, all or nothing */
    btp_frame st[4] = {{1, BTP_FRAME_PC}, {0xffff, BTP_FRAME_RA}, {2, BTP_FRAME_OMIT},
                       {0x10000, BTP_FRAME_RA}};
    trace_init(&t, 6);
    trace_reset(&t, 16);
    CHECK(trace_add_frames(&t, st, 4) == BTP_E_VALUE_TOO_WIDE && t.n == 0,
          "a frame wider than 16 bits: nothing added");
    CHECK(trace_add_frames(&t, st, 3) == BTP_OK && t.n == 3 && t.frames[1].value == 0xffff &&
              t.frames[2].kind == BTP_FRAME_OMIT,
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
 * each; read to its end. */
static btp_log_reader *log_with(strbuf *sb, const char *const *meta, size_t n)
{
    btp_log_writer *w;
    sb_clear(sb);
    if (btp_log_writer_open(&w, to_strbuf, sb, NULL) != BTP_OK)
        return NULL;
    btp_frame f = {0x1234, BTP_FRAME_RA};
    for (size_t i = 0; i + 1 < n; i += 2) {
        btp_log_writer_meta(w, meta[i], meta[i + 1], strlen(meta[i + 1]));
        btp_log_writer_alloc(w, 16, 0x10000 + 16 * i, &f, 1);
    }
    btp_log_reader *r = NULL;
    btp_log_record rec;
    if (btp_log_writer_close(w) != BTP_OK || btp_log_reader_open(&r, sb->data, sb->len, 0) != BTP_OK)
        return NULL;
    while (btp_log_reader_next(r, &rec) == BTP_OK)
        ;
    return r;
}

static const char *path_at(const owned_map *m, uint64_t addr)
{
    const btp_image *im = btp_image_map_find(&m->map, addr);
    return im && im->path ? im->path : "";
}

/* Every stored block counts, newest first: an older image that overlaps a
 * newer one is left out; images only older blocks hold stay. */
static void test_map_from_log(void)
{
    strbuf sb = STRBUF_INIT;
    owned_map m = {0};
    size_t off = 0;
    static const char *const images[] = {
        "images", "image 0x1000 0x2000 - /a.so\nimage 0x9000 0xa000 aabb /old.so\n",
        "maps", "00400000-00401000 r-xp 00000000 08:01 1 /ignored\n",
        "images", "image 0x1800 0x2800 - /b.so\nimage 0x5000 0x6000 - /c.so\n",
    };
    btp_log_reader *r = log_with(&sb, images, 6);
    CHECK(r && owned_map_from_log(&m, r, &off) == BTP_OK && m.map.n_images == 3,
          "images blocks merged: %zu images", m.map.n_images);
    CHECK(!strcmp(path_at(&m, 0x1900), "/b.so") && !strcmp(path_at(&m, 0x1100), "") &&
              !strcmp(path_at(&m, 0x5800), "/c.so") && !strcmp(path_at(&m, 0x9800), "/old.so"),
          "newest block wins where images overlap");
    const btp_image *old = btp_image_map_find(&m.map, 0x9800);
    CHECK(old && old->build_id_len == 2 && old->build_id[0] == 0xaa && old->build_id[1] == 0xbb,
          "build ID copied");
    CHECK(!strcmp(path_at(&m, 0x400800), ""), "maps blocks unused when there are images");
    btp_log_reader_close(r);

    static const char *const maps[] = {
        "maps", "00400000-00401000 r-xp 00000000 08:01 1 /bin/x\n",
        "maps", "7f0000000000-7f0000001000 r-xp 00000000 08:01 2 /lib/y.so\n",
    };
    r = log_with(&sb, maps, 4);
    CHECK(r && owned_map_from_log(&m, r, &off) == BTP_OK && m.map.n_images == 2 &&
              !strcmp(path_at(&m, 0x400800), "/bin/x") &&
              !strcmp(path_at(&m, 0x7f0000000800), "/lib/y.so"),
          "maps blocks merged when there are no images");
    btp_log_reader_close(r);

    static const char *const bad[] = {
        "images", "image 0x1000 0x2000 - /a.so\n",
        "images", "image 0x3000 0x2000 - /backwards.so\n",
    };
    r = log_with(&sb, bad, 4);
    CHECK(r && owned_map_from_log(&m, r, &off) == BTP_E_IMAGE_SYNTAX && m.map.n_images == 0,
          "a bad block: its status, an empty map");
    btp_log_reader_close(r);

    static const char *const none[] = {"comment", "# nothing here\n"};
    r = log_with(&sb, none, 2);
    CHECK(r && owned_map_from_log(&m, r, &off) == BTP_END && m.map.n_images == 0, "no map");
    btp_log_reader_close(r);
    owned_map_free(&m);
    sb_free(&sb);
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
