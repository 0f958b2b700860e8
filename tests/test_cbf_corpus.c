/*
 * Every trace of the real-world corpora round-trips through the CBF
 * encoder and decoder exactly:
 *   test_cbf_corpus NAME.trace.xz...
 * Each `m` record's call stack (return addresses, innermost first) is
 * encoded as `ra` frames at the corpus's word size and at every other word
 * size its addresses fit, one-shot, frame by frame and as runs, and decoded
 * back both one-shot and as runs (tests/cbf_testutil.h). A stack of
 * maxdepth frames was cut by the capture, so it is encoded as truncated.
 * The record count must equal the trailer's `traces=`, so a corpus that
 * fails to decompress or parse cannot pass.
 */
#include <btpack/btpack.h>

#include <errno.h>
#include <sys/wait.h>

#include "cbf_testutil.h"

/* "key=N" inside a comment line, or 0. */
static unsigned long long header_field(const char *line, const char *key)
{
    const char *p = strstr(line, key);
    return p ? strtoull(p + strlen(key), NULL, 10) : 0;
}

typedef struct corpus_stats {
    unsigned long traces, roundtrips, frames;
    unsigned long long bytes; /* CBF bytes at the corpus's own word size */
} corpus_stats;

/* Parse the addresses of an `m` line ("m SIZE PTR ADDR..."); returns the
 * count, or -1 on a malformed line. */
static long parse_stack(char *line, btp_frame *frames, size_t max, uint64_t *widest)
{
    char *save = NULL, *tok = strtok_r(line, " \n", &save);
    long n = 0;
    *widest = 0;
    for (int field = 0; tok; field++, tok = strtok_r(NULL, " \n", &save)) {
        if (field < 3)
            continue; /* "m", size, pointer */
        char *end;
        errno = 0;
        uint64_t a = strtoull(tok, &end, 16);
        if (errno || *end || strncmp(tok, "0x", 2) != 0 || (size_t)n == max)
            return -1;
        frames[n++] = tu_frame(BTP_FRAME_RA, a);
        *widest |= a;
    }
    return n;
}

static void run_corpus(const char *path)
{
    static const unsigned sizes[] = {16, 32, 64};
    enum { MAX_DEPTH = 4096 };
    static btp_frame frames[MAX_DEPTH];
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "xz -dc '%s'", path);
    FILE *f = popen(cmd, "r");
    CHECK(f != NULL, "%s: cannot run xz", path);
    if (!f)
        return;
    char *line = NULL;
    size_t cap = 0;
    unsigned word = 0;
    unsigned long long maxdepth = 0, want_traces = 0;
    corpus_stats s = {0, 0, 0, 0};
    unsigned long bad_lines = 0, failed = 0;
    while (getline(&line, &cap, f) > 0) {
        if (line[0] == '#') {
            if (strstr(line, "stkshim")) {
                word = (unsigned)header_field(line, " word=");
                maxdepth = header_field(line, " maxdepth=");
            } else if (strstr(line, "# end ")) {
                want_traces = header_field(line, " traces=");
            }
            continue;
        }
        if (line[0] != 'm')
            continue;
        uint64_t widest;
        long n = parse_stack(line, frames, MAX_DEPTH, &widest);
        if (n < 0 || !btp_word_bits_valid(word) || widest > btp_word_mask(word)) {
            bad_lines++;
            continue;
        }
        s.traces++;
        s.frames += (unsigned long)n;
        char what[64];
        snprintf(what, sizeof what, "trace %lu", s.traces);
        for (unsigned i = 0; i < 3; i++) {
            if (widest > btp_word_mask(sizes[i]))
                continue;
            unsigned long before = check_failed_;
            size_t len = tu_check_roundtrip(what, frames, (size_t)n,
                                            (unsigned long long)n == maxdepth, sizes[i], 0);
            if (check_failed_ != before && ++failed > 20) {
                fprintf(stderr, "%s: too many failures, stopping\n", path);
                goto done;
            }
            s.roundtrips++;
            if (sizes[i] == word)
                s.bytes += len;
        }
    }
done:
    free(line);
    int rc = pclose(f);
    CHECK(rc != -1 && WIFEXITED(rc) && WEXITSTATUS(rc) == 0, "%s: xz failed", path);
    CHECK(bad_lines == 0, "%s: %lu malformed records", path, bad_lines);
    CHECK(want_traces > 0 && s.traces == want_traces, "%s: %lu traces, trailer says %llu", path,
          s.traces, want_traces);
    printf("%s: %lu traces, %lu frames, %lu round trips; %u-bit CBF %.3f bytes/frame\n", path,
           s.traces, s.frames, s.roundtrips, word,
           s.frames ? (double)s.bytes / (double)s.frames : 0.0);
}

int main(int argc, char **argv)
{
    CHECK(argc > 1, "usage: %s NAME.trace.xz...", argv[0]);
    for (int i = 1; i < argc; i++)
        run_corpus(argv[i]);
    return check_finish();
}
