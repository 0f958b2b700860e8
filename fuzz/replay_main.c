/*
 * Replay driver: with fuzzing_engine=none every fuzz target links this main
 * instead of libFuzzer, so its seed corpus and regression inputs run as an
 * ordinary test in every build.
 *
 * Usage: TARGET PATH...   Each PATH is a file or a directory whose regular
 * files (not starting with '.') are replayed in name order. A missing
 * directory is allowed (an empty regression set has no directory in git),
 * but replaying nothing at all is a failure: the test must test something.
 * A broken property aborts inside the target, failing the test.
 */
#include "fuzz.h"

#include <dirent.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

static unsigned long replayed;

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "%s: %s\n", path, strerror(errno));
        return 1;
    }
    size_t cap = 4096, len = 0;
    uint8_t *buf = malloc(cap);
    for (;;) {
        if (!buf) {
            fprintf(stderr, "%s: out of memory\n", path);
            fclose(f);
            return 1;
        }
        len += fread(buf + len, 1, cap - len, f);
        if (len < cap)
            break;
        uint8_t *bigger = realloc(buf, cap * 2);
        if (!bigger)
            free(buf);
        buf = bigger;
        cap *= 2;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        fprintf(stderr, "%s: read error\n", path);
        free(buf);
        return 1;
    }
    LLVMFuzzerTestOneInput(buf, len);
    free(buf);
    replayed++;
    return 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int run_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) {
        if (errno == ENOENT) {
            printf("%s: no such directory, nothing to replay there\n", dir);
            return 0;
        }
        fprintf(stderr, "%s: %s\n", dir, strerror(errno));
        return 1;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    int failed = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            char **bigger = realloc(names, cap * sizeof *names);
            if (!bigger) {
                failed = 1;
                break;
            }
            names = bigger;
        }
        size_t len = strlen(dir) + 1 + strlen(e->d_name) + 1;
        if (!(names[n] = malloc(len))) {
            failed = 1;
            break;
        }
        snprintf(names[n++], len, "%s/%s", dir, e->d_name);
    }
    closedir(d);
    if (n)
        qsort(names, n, sizeof *names, by_name);
    unsigned long before = replayed;
    for (size_t i = 0; i < n; i++) {
        struct stat st;
        if (!failed && stat(names[i], &st) == 0 && S_ISREG(st.st_mode))
            failed |= run_file(names[i]);
        free(names[i]);
    }
    free(names);
    printf("%s: %lu inputs\n", dir, replayed - before);
    return failed;
}

int main(int argc, char **argv)
{
    int failed = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) == 0 && S_ISREG(st.st_mode))
            failed |= run_file(argv[i]);
        else
            failed |= run_dir(argv[i]);
    }
    printf("replayed %lu inputs\n", replayed);
    if (failed)
        return 1;
    if (replayed == 0) {
        fprintf(stderr, "nothing was replayed: the seed corpus is missing\n");
        return 1;
    }
    return 0;
}
