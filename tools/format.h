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

/* --compress: a log's blocks with zlib (the default where zlib is built in,
 * else stored), LZMA2, or stored (--no-zlib). */
enum { CLI_COMPRESS_DEFAULT, CLI_COMPRESS_LZMA, CLI_COMPRESS_ZLIB, CLI_COMPRESS_NONE };

/* Options shared by the subcommands. */
typedef struct cli_options {
    unsigned word_bits;  /* --word-bits, for formats that do not carry it (default 64) */
    int strict;          /* --strict: strict CBF policy */
    int keep_going;      /* --keep-going: skip bad records */
    size_t max_frames;   /* --max-frames: frames per trace after expanding runs */
    /* Allocation logs: */
    const char *maps_path; /* --maps: /proc/PID/maps text to store in a log */
    int log_compress;      /* --compress (CLI_COMPRESS_*): how log blocks are packed */
    size_t log_block_bytes; /* --block-size: a log's raw block payload (0: 2 MiB when
                              the input is all there, no flush interval; else the
                              library's default) */
    strbuf *comments;      /* set when the writer keeps comment lines (format.comments):
                              readers append the comment lines they meet (with their
                              newlines); the writer takes them before its next record,
                              at the end, and whenever they pass COMMENTS_AT_MOST
                              (a TRACE_COMMENTS event) */
    int *synthetic;        /* set when the writer keeps a log's `addresses synthetic`
                              item (btpack convert): a log reader that meets the item
                              sets *synthetic, and the log writer stores it before its
                              next record */
    int alloc_size_set;  /* --alloc-size given: */
    uint64_t alloc_size; /* the size of traces whose input has none (lws default 0) */
    int allow_truncated; /* --allow-truncated: write truncated traces into lws anyway */
    int lws_optimal;     /* --lws-optimal: smallest lws encoding, not libwebsockets' */
    uint32_t flush_interval_ms; /* --flush-interval: output waits at most this long */
    /* Trace log reading limits (btp_log_reader_options; 0: the default): */
    uint32_t log_max_nodes, log_max_live, log_max_expansion;
    int log_max_expansion_set;  /* --max-expansion given (0 allowed: no limit) */
    /* Called by the input before it reads (input.h): the writer's chance to
     * flush what is due while the input waits. */
    input_idle_fn idle;
    void *idle_ctx;
    /* Set when the writer keeps what it made of stacks (format.has_stack):
     * whether it has the stack with this key (trace.stack_key). A reader
     * that numbers its stacks may then hand a record on with its frames
     * left out (trace.frames_elided). */
    int (*stack_known)(void *ctx, uint64_t key);
    void *stack_known_ctx;
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
#define COMMENTS_AT_MOST ((size_t)1 << 20) /* comment bytes held before the writer takes them */

struct format;

typedef struct reader {
    const struct format *fmt;
    const char *name;          /* input name for messages */
    const cli_options *opt;
    unsigned word_bits;        /* word size for formats without their own; a
                                  format may change it (trace's header line) */
    void *state;               /* the format's own, from its open() */
    /* binary formats: the input and the read position (byte offset of the
     * next record); rd_bytes() gives the bytes from there */
    input *in;
    uint64_t pos;
    strbuf win;                /* input bytes [win_off, win_off + win.len) */
    uint64_t win_off;
    int in_end;                /* the input has no more bytes */
    int in_failed;             /* reading it failed (reported already) */
    /* the record being read and the pending error */
    src_loc loc;
    src_loc err_loc;
    char msg[320];
    int fatal;                 /* the input cannot be read any further */
    int more;                  /* read_line: the line holds another record; call
                                  again with the same line (set per call) */
    int not_a_record;          /* the error is about the input, not one record
                                  (damage, lost records): no "trace skipped" */
} reader;

/* Binary readers: the largest record (one CBF stream) they take. */
#define BINARY_MAX_RECORD ((size_t)64 << 20)

/* Binary readers: the input's bytes from r->pos on, at least `need` of them
 * unless the input ends first; *have gets how many there are (all that was
 * read, possibly more than need). Valid until the next call. On a read
 * error (reported already) sets r->in_failed and r->fatal and gives 0
 * bytes. Memory: a window of about need + 64 KiB. */
const uint8_t *rd_bytes(reader *r, size_t need, size_t *have);

/* Binary readers: consume n bytes (r->pos += n). */
void rd_skip(reader *r, size_t n);

typedef struct writer {
    const struct format *fmt;
    const cli_options *opt;
    void *state;               /* the format's own, from its begin() */
    src_loc err_loc;
    char msg[320];
    /* Bytes of `out` that belong to the output even when the current write
     * fails: a streaming writer (log) emits its header, the metadata and
     * the blocks of earlier records during a call, and moves this to the
     * end of what it emitted. A failed write is rolled back to here, never
     * further; the caller sets it to out->len before each call. */
    size_t committed;
    /* Set by the caller that writes `out` somewhere (convert): write out
     * what `out` holds now. Writers call wr_spill() in long loops, once
     * they know the record is valid, so that a trace of 10^8 frames streams
     * out instead of being built in memory; after that they must not fail. */
    int (*spill)(void *ctx);
    void *spill_ctx;
} writer;

/* In a writer's loop: when `out` holds more than a MiB and the caller can
 * take it, hand it on (w->spill). Returns 0, or -1 when the output failed
 * (reported already: the writer returns -1 without a message). */
int wr_spill(writer *w, strbuf *out);

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

    /* Binary reader over the input from r->pos (rd_bytes()): the next
     * record, advancing r->pos. Returns 1, 0 at the end, -1 on bad input
     * (set r->fatal when the position after the bad record is unknown). */
    int (*read_next)(reader *r, trace *t);

    /* Writer: append t to out. Returns 0, or -1 (wr_error) when the format
     * cannot express t: what it appended beyond w->committed is then
     * dropped. begin/end (optional) write a header/footer. */
    int (*write)(writer *w, const trace *t, strbuf *out);
    int (*begin)(writer *w, strbuf *out);
    int (*end)(writer *w, strbuf *out);
    /* Optional, for a writer that holds records back (log): append what is
     * due by now (cli_options.flush_interval_ms) to out, and set *wait_ms to
     * when the rest will be (UINT32_MAX: nothing held). 0 or -1 (wr_error). */
    int (*tick)(writer *w, strbuf *out, uint32_t *wait_ms);
    /* Optional, for a writer that keeps what it made of a stack by its key
     * (trace.stack_key): 1 when it has the stack with this key and will
     * write a trace of it without its frames (trace.frames_elided), else 0.
     * What it says holds until its next write. */
    int (*has_stack)(writer *w, uint64_t key);
} format;

/* The registry (formats/registry.c). */
const format *format_find(const char *name);
const format *format_at(size_t i); /* NULL past the last */

/* The format of `in` read from its first bytes (tools/detect.c; the rules
 * are format_detect_help, a paragraph of --help): peeked, not taken, at
 * most 64 KiB and no further than the first line that tells. Returns the
 * format, or NULL after printing why it cannot tell (`btpack: <input>:
 * cannot tell the input format: ...; use --from FMT`). */
const format *format_detect(input *in);
extern const char format_detect_help[];
/* 1 when p[0..n) holds bytes no text has (NUL, control characters other
 * than white space and ESC). */
int detect_binary(const uint8_t *p, size_t n);
/* For a format that reads text lines of hex or base64 (fmt->line_bytes):
 * 0 when the input starts as text, else -1 after one error that says what
 * it seems to be (`binary input: use --from cbf`), instead of an error per
 * line. Other formats: 0. */
int format_check_text(input *in, const format *fmt);

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
/* The same without the "0x": 1..16 hex digits filling s[0..n). */
int parse_hex_digits_u64(const char *s, size_t n, uint64_t *out);
/* Parse 1..20 decimal digits filling s[0..n) exactly, no overflow. */
int parse_dec_u64(const char *s, size_t n, uint64_t *out);

/* CBF <-> trace (cbf_trace.c). */

/* Decode one CBF stream from p[0..len) into t (word size from its
 * information byte, runs expanded up to max_frames). `base` is added to
 * byte offsets in messages. *consumed gets the stream's length. policy:
 * BTP_CBF_POLICY_*. Returns 0 or -1 (rd_error_at). */
int cbf_to_trace(reader *r, const uint8_t *p, size_t len, unsigned policy, uint64_t base,
                 trace *t, size_t *consumed);


/* Trace logs (formats/log.c), shared with `btpack stats` on a log. */
/* Open the library's streaming reader on r->in with the options of
 * r->opt. On failure r->msg says why (unless the input reported it). */
btp_status log_open_reader(reader *r, btp_log_reader **out);
/* Put a status of the library reader into r->msg/err_loc: the lost
 * records and their bytes, the limit to raise; sets r->fatal when reading
 * cannot go on, r->not_a_record. Returns -1. */
int log_status(reader *r, btp_log_reader *lr, btp_status st);
/* For commands that read a log's records themselves (stats, heap): the
 * next record of a reader from log_open_reader(). Metadata items go to
 * `meta` (may be NULL) with the number of records before them, as they
 * come, and are then released. Damage is reported (diag(), as log_status()
 * words it; a log cut short as a warning with `cut_note` after it when
 * that is given). Returns BTP_OK with *rec, BTP_END, or the error's status
 * once reported (r->fatal: reading cannot go on). */
typedef void (*log_meta_fn)(void *ctx, const char *key, const void *data, size_t len,
                            uint64_t record);
btp_status log_next_record(reader *r, btp_log_reader *lr, btp_log_record *rec, log_meta_fn meta,
                           void *ctx, const char *cut_note);

/* Whether a log's metadata item says its heap addresses are synthetic
 * (key `addresses`, data `synthetic`: `heap record --no-addresses`). */
int log_meta_synthetic(const char *key, const void *data, size_t len);

/* The policy for a single stream per record under the options. */
unsigned cbf_policy(const cli_options *opt);

/* Append the CBF encoding of t to out: the minimal one, or as `flags`
 * (BTP_CBF_ENC_*) ask. Returns 0 or -1 (wr_error). */
int cbf_from_trace(writer *w, const trace *t, unsigned flags, strbuf *out);

#endif
