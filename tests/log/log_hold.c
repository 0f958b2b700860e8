/* BTP_LOG_WRITE_HOLD: a log whose blocks are held, taken and written by
 * another thread (btp_log_writer_take, btp_log_block_write) must be the
 * same bytes as one the writer writes itself: with and without zlib, small
 * blocks (many of them), metadata among the records, blocks left for close()
 * to write, and blocks dropped (btp_log_block_free, abandon) leaving a log
 * that reads as cut after its last written block. */
#include <btpack/btpack.h>
#include <pthread.h>
#include <stdatomic.h>

#include "check.h"
#include "log_synth.h"
#include "membuf.h"

#define RECORDS 60000
#define QUEUE 64

/* A queue of taken blocks written by the packer thread, in order. */
typedef struct packer {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    btp_log_block *q[QUEUE];
    size_t head, tail; /* pushed, popped */
    int stop;
    btp_status st;
    size_t written;
} packer;

static void *pack_main(void *arg)
{
    packer *p = arg;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (p->head == p->tail && !p->stop)
            pthread_cond_wait(&p->cond, &p->lock);
        if (p->head == p->tail)
            break;
        btp_log_block *b = p->q[p->tail % QUEUE];
        pthread_mutex_unlock(&p->lock);
        btp_status st = btp_log_block_write(b); /* outside the lock: the writer goes on */
        pthread_mutex_lock(&p->lock);
        p->tail++;
        p->written++;
        if (p->st == BTP_OK)
            p->st = st;
        pthread_cond_broadcast(&p->cond);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

/* Hand every held block to the packer (waiting while its queue is full). */
static void hand_over(btp_log_writer *w, packer *p)
{
    for (btp_log_block *b; (b = btp_log_writer_take(w)) != NULL;) {
        pthread_mutex_lock(&p->lock);
        while (p->head - p->tail == QUEUE)
            pthread_cond_wait(&p->cond, &p->lock);
        p->q[p->head++ % QUEUE] = b;
        pthread_cond_broadcast(&p->cond);
        pthread_mutex_unlock(&p->lock);
    }
}

static void wait_idle(packer *p)
{
    pthread_mutex_lock(&p->lock);
    while (p->head != p->tail)
        pthread_cond_wait(&p->cond, &p->lock);
    pthread_mutex_unlock(&p->lock);
}

enum { MODE_PLAIN, MODE_THREAD, MODE_CLOSE_WRITES, MODE_DROP_TAIL };

/* Write the synthetic stream; returns the number of blocks the packer
 * thread wrote (MODE_THREAD). */
static size_t write_log(membuf *out, unsigned flags, int mode, size_t *dropped_at)
{
    btp_log_writer_options o;
    btp_log_writer_options_init(&o, 64);
    o.flags = flags | (mode == MODE_PLAIN ? 0 : BTP_LOG_WRITE_HOLD);
    o.block_bytes = 4096;
    o.flush_interval_ms = 0;
    btp_log_writer *w;
    btp_status st = btp_log_writer_open(&w, mb_sink, out, &o);
    CHECK(st == BTP_OK, "open: %s", btp_strerror(st));
    if (st != BTP_OK)
        return 0;
    packer p = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};
    pthread_t t;
    int threaded = mode == MODE_THREAD;
    if (threaded)
        CHECK(pthread_create(&t, NULL, pack_main, &p) == 0, "pthread_create");
    synth s;
    synth_init(&s, 7, 64, 0);
    synth_rec r;
    for (int i = 0; i < RECORDS && st == BTP_OK; i++) {
        if (i % 9000 == 0) {
            char note[64];
            int n = snprintf(note, sizeof note, "note %d", i);
            st = btp_log_writer_meta(w, "comment", note, (size_t)n);
        }
        synth_next(&s, &r, i % 3 == 0);
        if (st == BTP_OK)
            st = synth_put(w, &r);
        if (threaded)
            hand_over(w, &p);
    }
    CHECK(st == BTP_OK, "write: %s", btp_strerror(st));
    size_t written = 0;
    if (threaded) {
        wait_idle(&p); /* every block taken is written before close */
        pthread_mutex_lock(&p.lock);
        p.stop = 1;
        pthread_cond_broadcast(&p.cond);
        pthread_mutex_unlock(&p.lock);
        pthread_join(t, NULL);
        CHECK(p.st == BTP_OK, "block write: %s", btp_strerror(p.st));
        written = p.written;
    }
    if (mode == MODE_DROP_TAIL) {
        /* write the held blocks but the last three, drop those: the log
         * ends after the last one written */
        btp_log_block *b[4096];
        size_t n = 0;
        while (n < 4096 && (b[n] = btp_log_writer_take(w)) != NULL)
            n++;
        CHECK(n > 3 && n < 4096, "held blocks: %zu", n);
        for (size_t i = 0; i + 3 < n; i++)
            CHECK(btp_log_block_write(b[i]) == BTP_OK, "block write");
        *dropped_at = out->len;
        for (size_t i = n > 3 ? n - 3 : 0; i < n; i++)
            btp_log_block_free(b[i]);
        btp_log_writer_abandon(w);
    } else {
        st = btp_log_writer_close(w);
        CHECK(st == BTP_OK, "close: %s", btp_strerror(st));
    }
    synth_free_all(&s);
    return written;
}

static uint64_t count_records(const membuf *m, btp_status *end)
{
    btp_log_reader *r;
    if (btp_log_reader_open(&r, m->p, m->len, 0) != BTP_OK) {
        *end = BTP_E_INVALID_ARGUMENT;
        return 0;
    }
    btp_log_record rec;
    uint64_t n = 0;
    while ((*end = btp_log_reader_next(r, &rec)) == BTP_OK)
        n++;
    btp_log_reader_close(r);
    return n;
}

int main(void)
{
    CHECK(btp_log_writer_take(NULL) == NULL, "take(NULL)");
    CHECK(btp_log_block_write(NULL) == BTP_E_INVALID_ARGUMENT, "write(NULL)");
    btp_log_block_free(NULL);
    unsigned zflags[2] = {btp_log_have_zlib() ? 0u : BTP_LOG_WRITE_NO_ZLIB, BTP_LOG_WRITE_NO_ZLIB};
    for (int z = 0; z < 2; z++) {
        membuf plain = {0}, thread = {0}, at_close = {0}, cut = {0};
        size_t dropped_at = 0;
        write_log(&plain, zflags[z], MODE_PLAIN, NULL);
        size_t by_thread = write_log(&thread, zflags[z], MODE_THREAD, NULL);
        write_log(&at_close, zflags[z], MODE_CLOSE_WRITES, NULL);
        write_log(&cut, zflags[z], MODE_DROP_TAIL, &dropped_at);
        CHECK(by_thread > 100, "blocks written by the packer thread: %zu", by_thread);
        CHECK(thread.len == plain.len && memcmp(thread.p, plain.p, plain.len) == 0,
              "held and written by a thread: %zu bytes, plain %zu", thread.len, plain.len);
        CHECK(at_close.len == plain.len && memcmp(at_close.p, plain.p, plain.len) == 0,
              "held and written by close: %zu bytes, plain %zu", at_close.len, plain.len);
        CHECK(dropped_at == cut.len && cut.len < plain.len &&
                  memcmp(cut.p, plain.p, cut.len) == 0,
              "dropped blocks: %zu bytes, a prefix of the plain log expected", cut.len);
        btp_status end;
        uint64_t all = count_records(&plain, &end);
        CHECK(end == BTP_END && all == RECORDS, "plain log: %llu records, %s",
              (unsigned long long)all, btp_strerror(end));
        uint64_t some = count_records(&cut, &end);
        CHECK(end == BTP_E_TRUNCATED_FILE && some > 0 && some < all,
              "cut log: %llu records, %s", (unsigned long long)some, btp_strerror(end));
        printf("zlib %s: %zu bytes, %zu blocks by the thread, cut log %llu of %llu records\n",
               zflags[z] ? "off" : "on", plain.len, by_thread, (unsigned long long)some,
               (unsigned long long)all);
        free(plain.p);
        free(thread.p);
        free(at_close.p);
        free(cut.p);
    }
    return check_finish();
}
