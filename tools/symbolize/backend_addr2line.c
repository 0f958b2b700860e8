/* The addr2line back end: binutils' addr2line (or a compatible program)
 * run once per file through pipes: `PROG -a -f -C -i -e FILE`, all
 * addresses on its standard input. With -a each answer starts with the
 * address echoed back, so a variable number of inlined frames per address
 * still parses unambiguously, and the echo is checked against what was
 * asked. */
#include "symbolize/backend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize/pipe.h"
#include "strbuf.h"

/* "0x" and only hex digits: an echoed address (no function name looks like
 * that: identifiers do not start with a digit). */
static int is_addr_line(const char *s, size_t n, uint64_t *v)
{
    if (n < 3 || n > 18 || s[0] != '0' || s[1] != 'x')
        return 0;
    uint64_t x = 0;
    for (size_t i = 2; i < n; i++) {
        char c = s[i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0)
            return 0;
        x = x << 4 | (uint64_t)d;
    }
    *v = x;
    return 1;
}

/* "file:line", "file:line (discriminator N)", "??:0", "??:?" */
static void split_location(char *loc, const char **file, unsigned *line)
{
    char *d = strstr(loc, " (discriminator ");
    if (d)
        *d = 0;
    char *colon = strrchr(loc, ':');
    *file = NULL;
    *line = 0;
    if (!colon)
        return;
    *colon = 0;
    unsigned long l = strtoul(colon + 1, NULL, 10);
    *line = l <= 0xffffffffu ? (unsigned)l : 0;
    if (strcmp(loc, "??") != 0)
        *file = loc;
}

static int a2l_resolve(const char *prog, const char *file, const uint64_t *vaddrs, size_t n,
                       sym_emit_fn emit, void *ctx, char *why, size_t why_len)
{
    static const char *const args[] = {"-a", "-f", "-C", "-i", NULL};
    strbuf out = STRBUF_INIT;
    if (pipe_run(prog ? prog : "addr2line", args, file, vaddrs, n, &out, why, why_len) < 0) {
        sb_free(&out); /* what it read before it failed */
        return -1;
    }
    size_t pos = 0, i = 0;
    int have = 0, rc = 0;
    char *fn = NULL;
    while (pos < out.len && rc == 0) {
        const char *b = out.data + pos, *nl = memchr(b, '\n', out.len - pos);
        size_t len = nl ? (size_t)(nl - b) : out.len - pos;
        pos += len + (nl != NULL);
        uint64_t v;
        if (!fn && is_addr_line(b, len, &v)) {
            if (have)
                i++;
            if (i >= n || v != vaddrs[i]) {
                snprintf(why, why_len, "%s answered for 0x%llx, expected 0x%llx", prog,
                         (unsigned long long)v, (unsigned long long)(i < n ? vaddrs[i] : 0));
                rc = -1;
                break;
            }
            have = 1;
            continue;
        }
        if (!have) {
            snprintf(why, why_len, "unexpected output from %s", prog);
            rc = -1;
            break;
        }
        char *line = strndup(b, len);
        if (!line) {
            rc = -1;
            break;
        }
        if (!fn) { /* function line; its location follows */
            fn = line;
            continue;
        }
        const char *src;
        unsigned ln;
        split_location(line, &src, &ln);
        if (emit(ctx, i, strcmp(fn, "??") ? fn : NULL, src, ln) < 0)
            rc = -1;
        free(fn);
        free(line);
        fn = NULL;
    }
    if (rc == 0 && (fn || (n && (!have || i + 1 != n)))) {
        snprintf(why, why_len, "%s gave %zu answers for %zu addresses", prog, have ? i + 1 : 0,
                 n);
        rc = -1;
    }
    free(fn);
    sb_free(&out);
    return rc;
}

const sym_backend sym_backend_addr2line = {"addr2line", a2l_resolve};
