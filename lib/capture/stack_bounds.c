/*
 * Where a thread's stack is: from pthread_getattr_np (exact, but neither
 * cheap nor async-signal-safe), or from /proc/self/maps read with plain
 * open/read (async-signal-safe, any thread, any stack).
 */
#include <btpack/capture.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

btp_status btp_stack_bounds_current(btp_stack_bounds *out)
{
    if (!out)
        return BTP_E_INVALID_ARGUMENT;
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) != 0)
        return BTP_E_IO;
    void *addr = NULL;
    size_t size = 0;
    int rc = pthread_attr_getstack(&attr, &addr, &size);
    pthread_attr_destroy(&attr);
    if (rc != 0 || !addr || size == 0)
        return BTP_E_IO;
    out->lo = (uintptr_t)addr;
    out->hi = out->lo + size;
    return out->hi > out->lo ? BTP_OK : BTP_E_IO;
}

/* Parse "start-end perms" at the head of a maps line; 1 on success. */
static int parse_head(const char *s, size_t n, uintptr_t *lo, uintptr_t *hi, int *readable)
{
    size_t i = 0;
    uintptr_t v[2] = {0, 0};
    for (int k = 0; k < 2; k++) {
        size_t digits = 0;
        while (i < n) {
            char ch = s[i];
            unsigned d;
            if (ch >= '0' && ch <= '9')
                d = (unsigned)(ch - '0');
            else if (ch >= 'a' && ch <= 'f')
                d = (unsigned)(ch - 'a' + 10);
            else
                break;
            if (digits >= 2 * sizeof(uintptr_t))
                return 0; /* wider than an address */
            v[k] = v[k] << 4 | d;
            digits++;
            i++;
        }
        if (digits == 0 || i >= n || s[i] != (k == 0 ? '-' : ' '))
            return 0;
        i++;
    }
    if (i >= n)
        return 0;
    *lo = v[0];
    *hi = v[1];
    *readable = s[i] == 'r';
    return v[1] > v[0];
}

btp_status btp_stack_bounds_of(uintptr_t addr, btp_stack_bounds *out)
{
    if (!out)
        return BTP_E_INVALID_ARGUMENT;
    int fd;
    do
        fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    while (fd < 0 && errno == EINTR);
    if (fd < 0)
        return BTP_E_IO;
    /* Only the head of each line matters ("start-end perms" fits in 48
     * bytes on 64-bit); the rest of a line is skipped. */
    char head[64];
    size_t head_n = 0;
    char buf[1024];
    btp_status st = BTP_END;
    for (;;) {
        ssize_t got = read(fd, buf, sizeof buf);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            st = BTP_E_IO;
            break;
        }
        if (got == 0)
            break;
        for (ssize_t i = 0; i < got; i++) {
            if (buf[i] != '\n') {
                if (head_n < sizeof head)
                    head[head_n++] = buf[i];
                continue;
            }
            uintptr_t lo, hi;
            int readable;
            if (parse_head(head, head_n, &lo, &hi, &readable) && addr >= lo && addr < hi) {
                if (!readable) {
                    close(fd);
                    return BTP_END;
                }
                out->lo = lo;
                out->hi = hi;
                close(fd);
                return BTP_OK;
            }
            head_n = 0;
        }
    }
    close(fd);
    return st;
}
