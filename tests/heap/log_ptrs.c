/* Print the pointer of every allocation and free of a trace log, one a
 * line (`a HEX SIZE`, `f HEX`), and every metadata item's key (`m KEY`),
 * for tests/heap/heap_noaddr.py. */
#include <btpack/log.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: log_ptrs LOG\n");
        return 2;
    }
    FILE *f = fopen(argv[1], "rb");
    if (!f)
        return 2;
    size_t cap = 1 << 20, len = 0;
    unsigned char *buf = malloc(cap);
    for (size_t n; buf && (n = fread(buf + len, 1, cap - len, f)) > 0;) {
        len += n;
        if (len == cap) {
            unsigned char *nb = realloc(buf, cap *= 2);
            if (!nb)
                free(buf);
            buf = nb;
        }
    }
    fclose(f);
    btp_log_reader *r;
    btp_log_reader_options o;
    btp_log_reader_options_init(&o);
    o.flags = BTP_LOG_META_RECORDS;
    btp_status st = buf ? btp_log_reader_open_opts(&r, buf, len, &o) : BTP_E_OUT_OF_MEMORY;
    if (st != BTP_OK) {
        fprintf(stderr, "log_ptrs: %s: %s\n", argv[1], btp_strerror(st));
        return 2;
    }
    btp_log_record rec;
    while ((st = btp_log_reader_next(r, &rec)) == BTP_OK) {
        if (rec.kind == BTP_LOG_ALLOC) {
            printf("a %" PRIx64 " %" PRIu64 "\n", rec.ptr, rec.size);
        } else if (rec.kind == BTP_LOG_FREE) {
            printf("f %" PRIx64 "\n", rec.ptr);
        } else if (rec.kind == BTP_LOG_META) {
            const char *key;
            const void *data;
            size_t dl;
            uint64_t at;
            if (btp_log_reader_meta(r, rec.meta, &key, &data, &dl, &at) == BTP_OK)
                printf("m %s\n", key);
        }
    }
    btp_log_reader_close(r);
    free(buf);
    if (st != BTP_END)
        fprintf(stderr, "log_ptrs: %s: %s\n", argv[1], btp_strerror(st));
    return st == BTP_END ? 0 : 1;
}
