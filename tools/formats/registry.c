/* The one table of CLI formats. To add a format: write formats/NAME.c
 * defining `const format fmt_NAME`, declare it here and add it to the table
 * (see README.md). The order is the order of `btpack --help`. */
#include "format.h"

#include <string.h>

extern const format fmt_json, fmt_hex, fmt_b64, fmt_cbf, fmt_addrs, fmt_trace;
extern const format fmt_log, fmt_crash;
extern const format fmt_lws, fmt_lws_b;
extern const format fmt_swift, fmt_swift_crashlog;

static const format *const formats[] = {
    &fmt_json,
    &fmt_hex,
    &fmt_b64,
    &fmt_cbf,
    &fmt_addrs,
    &fmt_trace,
    &fmt_log,
    &fmt_crash,
    &fmt_lws,
    &fmt_lws_b,
    &fmt_swift,
    &fmt_swift_crashlog,
};

const format *format_find(const char *name)
{
    for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++)
        if (strcmp(formats[i]->name, name) == 0)
            return formats[i];
    return NULL;
}

const format *format_at(size_t i)
{
    return i < sizeof formats / sizeof formats[0] ? formats[i] : NULL;
}
