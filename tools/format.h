/*
 * CLI formats: a descriptor per format (tools/formats/NAME.c), registered in
 * one table (tools/formats/registry.c). See tools/formats/README.md.
 *
 * A reader turns input records into the trace model (trace.h); a writer
 * formats a trace into a buffer that is written only when the whole trace
 * succeeded. Readers report bad input with rd_error()/rd_error_at() and
 * return -1; the driver (read.c) prints it as
 * `btpack: <input>:<line>: <cause>` and stops, or skips the record with
 * --keep-going.
 */
#ifndef BTPACK_TOOLS_FORMAT_H
#define BTPACK_TOOLS_FORMAT_H

#include "input.h"
#include "strbuf.h"
#include "trace.h"

/* Options shared by the subcommands. */
typedef struct cli_options {
    unsigned word_bits;  /* --word-bits, for formats that do not carry it (default 64) */
    int strict;          /* --strict: strict CBF policy */
    int keep_going;      /* --keep-going: skip bad records */
    size_t max_frames;   /* --max-frames: frames per trace after expanding runs */
    /* Allocation logs: */
    const char *maps_path; /* --maps: /proc/PID/maps text to store in a log */
    int no_zlib;           /* --no-zlib: store log blocks uncompressed */
    strbuf *comments;      /* set when the writer keeps comment lines (format.comments):
                              readers append the comment lines they meet (with their
                              newlines); the writer takes them before its next record
                              and at the end */
    int alloc_size_set;  /* --alloc-size given: */
    uint64_t alloc_size; /* the size of traces whose input has none (lws default 0) */
    int allow_truncated; /* --allow-truncated: write truncated traces into lws anyway */
    int lws_optimal;     /* --lws-optimal: smallest lws encoding, not libwebsockets' */
    int thread_given;    /* --thread was given */
    int thread_sel;      /* --thread (crash logs): CLI_THREADS_* */
    size_t thread_index; /* --thread N */
} cli_options;

/* Which threads of a crash log become traces. */
enum {
    CLI_THREADS_ALL = 0,     /* every thread, the crashed one first (default) */
    CLI_THREADS_CRASHED = 1, /* the crashed thread */
    CLI_THREADS_INDEX = 2    /* thread number thread_index (0-based, log order) */
};

#define CLI_DEFAULT_MAX_FRAMES ((size_t)1 << 20)

struct format;

typedef struct reader {
    const struct format *fmt;
    const char *name;          /* input name for messages */
    const cli_options *opt;
    unsigned word_bits;        /* word size for formats without their own; a
                                  format may change it (trace's header line) */
    void *state;               /* the format's own, from its open() */
    /* binary formats: the whole input and the read position */
    const uint8_t *data;
    size_t len, pos;
    /* the record being read and the pending error */
    src_loc loc;
    src_loc err_loc;
    char msg[320];
    int fatal;                 /* the input cannot be read any further */
    int more;                  /* read_line: the line holds another record; call
                                  again with the same line (set per call) */
} reader;

typedef struct writer {
    const struct format *fmt;
    const cli_options *opt;
    void *state;               /* the format's own, from its begin() */
    const char *in_name;       /* the input's name, for warnings */
    src_loc err_loc;
    char msg[320];
} writer;

typedef struct format {
    const char *name;
    const char *help;          /* one line for --help */
    int binary;                /* binary input/output (not line-based text) */
    int events;                /* the writer takes TRACE_FREE records (others never see them) */
    int comments;              /* the writer keeps comment lines (cli_options.comments) */

    /* Optional setup/teardown of reader state (r->state). */
    int (*open)(reader *r);
    void (*close)(reader *r);

    /* Text formats holding one CBF stream per line: the line's bytes. The
     * driver decodes them (and `btpack dump` disassembles them). */
    int (*line_bytes)(reader *r, const char *line, size_t len, strbuf *out);

    /* Text reader: one non-blank line. Returns 1 when t holds a record, 0
     * for a line without one (comment, header), -1 on bad input. */
    int (*read_line)(reader *r, const char *line, size_t len, trace *t);

    /* Binary reader over r->data[r->pos..r->len): the next record, advancing
     * r->pos. Returns 1, 0 at the end, -1 on bad input (set r->fatal when
     * the position after the bad record is unknown). */
    int (*read_next)(reader *r, trace *t);

    /* Writer: append t to out. Returns 0, or -1 (wr_error) when the format
     * cannot express t. begin/end (optional) write a header/footer. */
    int (*write)(writer *w, const trace *t, strbuf *out);
    int (*begin)(writer *w, strbuf *out);
    int (*end)(writer *w, strbuf *out);
} format;

/* The registry (formats/registry.c). */
const format *format_find(const char *name);
const format *format_at(size_t i); /* NULL past the last */

/* Record an error at the current record (r->loc) / at a byte offset (of
 * the binary input, or of the current line's CBF stream). Return -1. */
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
int rd_error(reader *r, const char *fmt, ...);
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
int rd_error_at(reader *r, uint64_t offset, const char *fmt, ...);
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
int wr_error(writer *w, const char *fmt, ...);

/* Add a frame to t, turning a trace_add failure into an error message that
 * names the frame. Returns 0 or -1. */
int rd_add_frame(reader *r, trace *t, btp_frame f, uint64_t copies);

/* 0..15 for a hex digit of either case, -1 for anything else. */
int hex_digit(char c);
/* Parse "0x" followed by 1..16 hex digits (any case) filling s[0..n)
 * exactly. Returns 0 or -1. */
int parse_hex_u64(const char *s, size_t n, uint64_t *out);
/* Parse 1..20 decimal digits filling s[0..n) exactly, no overflow. */
int parse_dec_u64(const char *s, size_t n, uint64_t *out);

/* CBF <-> trace (cbf_trace.c). */

/* Decode one CBF stream from p[0..len) into t (word size from its
 * information byte, runs expanded up to max_frames). `base` is added to
 * byte offsets in messages. *consumed gets the stream's length. policy:
 * BTP_CBF_POLICY_*. Returns 0 or -1 (rd_error_at). */
int cbf_to_trace(reader *r, const uint8_t *p, size_t len, unsigned policy, uint64_t base,
                 trace *t, size_t *consumed);

/* The policy for a single stream per record under the options. */
unsigned cbf_policy(const cli_options *opt);

/* Append the minimal CBF encoding of t to out. Returns 0 or -1 (wr_error). */
int cbf_from_trace(writer *w, const trace *t, strbuf *out);

#endif
