/*
 * A program that uses libbtpack as an outside project would: through
 * <btpack/btpack.h> only, linked as pkg-config or Meson says. It touches
 * every part that pulls in another library: each capture method built in
 * (libgcc_s/libgcc_eh, libunwind, glibc's backtrace), a zlib-compressed
 * trace log written and read back, and the CBF codec. Prints one line per
 * check and "N passed, M failed"; exits 1 on any failure.
 */
#include <btpack/btpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int passed, failed;

static void check(int ok, const char *what, const char *detail)
{
    printf("%s: %s%s%s\n", ok ? "ok" : "FAILED", what, detail ? ": " : "", detail ? detail : "");
    if (ok)
        passed++;
    else
        failed++;
}

/* A sink that collects the log in a fixed buffer. */
typedef struct membuf {
    unsigned char data[1 << 16];
    size_t len;
} membuf;

static btp_status to_mem(void *ctx, const void *data, size_t len)
{
    membuf *m = ctx;
    if (len > sizeof m->data - m->len)
        return BTP_E_BUFFER_TOO_SMALL;
    memcpy(m->data + m->len, data, len);
    m->len += len;
    return BTP_OK;
}

static void capture_each_method(void)
{
    static const btp_capture_method methods[] = {BTP_CAPTURE_FP, BTP_CAPTURE_LIBGCC,
                                                 BTP_CAPTURE_LIBUNWIND, BTP_CAPTURE_GLIBC};
    for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++) {
        if (!btp_capture_method_available(methods[i]))
            continue;
        btp_capture_options opt;
        memset(&opt, 0, sizeof opt);
        opt.method = methods[i];
        unsigned char cbf[512];
        size_t len = 0;
        btp_status s = btp_capture_cbf(&opt, NULL, cbf, sizeof cbf, &len);
        btp_frame frames[BTP_CAPTURE_CBF_MAX_FRAMES];
        btp_cbf_info info;
        btp_status d = btp_cbf_decode(cbf, len, BTP_CBF_POLICY_STRICT, frames,
                                      BTP_CAPTURE_CBF_MAX_FRAMES, &info);
        char detail[128];
        snprintf(detail, sizeof detail, "%s, %zu bytes of CBF, %zu frames", btp_status_name(s),
                 len, d == BTP_OK ? info.frames : 0);
        /* The unwinders see main and the C library's start code below
         * us; the fp walk sees main at least (this file may be built
         * without frame pointers). */
        size_t want = methods[i] == BTP_CAPTURE_FP ? 1 : 2;
        char what[64];
        snprintf(what, sizeof what, "capture with %s", btp_capture_method_name(methods[i]));
        check(s == BTP_OK && d == BTP_OK && info.frames >= want, what, detail);
    }
}

static void log_round_trip(void)
{
    static membuf m;
    btp_log_writer_options opt;
    btp_log_writer_options_init(&opt, 64);
    btp_log_writer *w = NULL;
    btp_frame stack[3] = {{0x401000, BTP_FRAME_PC}, {0x402000, BTP_FRAME_RA},
                          {0x403000, BTP_FRAME_RA}};
    btp_status s = btp_log_writer_open(&w, to_mem, &m, &opt);
    for (unsigned i = 0; s == BTP_OK && i < 100; i++)
        s = btp_log_writer_alloc(w, 16 + i, 0x10000 + 64 * i, stack, 3);
    if (s == BTP_OK)
        s = btp_log_writer_close(w);
    else
        btp_log_writer_abandon(w);
    check(s == BTP_OK, "write a trace log", btp_status_name(s));

    btp_log_reader *r = NULL;
    unsigned records = 0;
    s = btp_log_reader_open(&r, m.data, m.len, 0);
    btp_log_record rec;
    while (s == BTP_OK && (s = btp_log_reader_next(r, &rec)) == BTP_OK)
        records += rec.kind == BTP_LOG_ALLOC && rec.n_frames == 3 && rec.frames[2].value == 0x403000;
    btp_log_reader_close(r);
    char detail[96];
    snprintf(detail, sizeof detail, "%u of 100 records back, %s, zlib %s", records,
             btp_status_name(s), btp_log_have_zlib() ? "built in" : "not built in");
    check(s == BTP_END && records == 100, "read the trace log back", detail);
}

int main(void)
{
    check(strcmp(btp_version(), BTP_VERSION_STRING) == 0, "library version matches the header",
          btp_version());
    capture_each_method();
    log_round_trip();
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
