/*
 * The one in-memory trace every CLI format reads into and writes from, so
 * `btpack convert` is any-to-any with no pairwise code.
 */
#ifndef BTPACK_TOOLS_TRACE_H
#define BTPACK_TOOLS_TRACE_H

#include <btpack/btpack.h>

/* Where a record came from, for messages. */
typedef struct src_loc {
    size_t line;     /* 1-based line of a text input, 0 if none */
    uint64_t offset; /* byte offset (binary input, or inside a line's CBF stream) */
    int has_offset;
} src_loc;

/* What a record is. Formats that hold only backtraces read and write
 * TRACE_PLAIN; the allocation formats (trace records, logs) keep the rest so
 * converting between them loses nothing. */
typedef enum trace_event {
    TRACE_PLAIN = 0, /* a backtrace */
    TRACE_ALLOC = 1, /* an allocation: backtrace, size, pointer ('m' record) */
    TRACE_FREE = 2,  /* a free of `pointer` ('f' record); no frames */
    /* No record: the comment lines read so far (cli_options.comments) grew
     * large and go to the writer now, so that memory does not grow with a
     * run of comments. Only given when a writer keeps comments. */
    TRACE_COMMENTS = 3
} trace_event;

/* A frame and how many times in a row it comes (a CBF `rep`, or equal
 * frames one after the other). */
typedef struct trace_run {
    btp_frame frame;
    uint64_t count; /* >= 1 */
} trace_run;

/* A new field needs its reset in trace_reset() (trace.c), which sets them
 * one by one. */
typedef struct trace {
    trace_event event;
    unsigned word_bits;  /* 16, 32 or 64 */
    int truncated;       /* the stack was cut (CBF trunc, addrs `trunc`) */
    /* The frames as runs, innermost first, equal neighbours always merged
     * (so equal frame sequences have equal runs): memory follows the input,
     * not the frames a `rep` expands to, and writers stream a long run out
     * (wr_spill()) instead of building it in memory. */
    trace_run *runs;
    size_t n_runs, cap;
    size_t n;            /* frames, runs expanded */
    size_t max_frames;   /* trace_add refuses to grow beyond this */
    btp_frame *flat;     /* trace_frames()' expansion */
    size_t flat_cap;
    int has_alloc_size;
    uint64_t alloc_size; /* requested allocation size */
    int has_pointer;
    uint64_t pointer;    /* ALLOC/FREE: the block's address */
    src_loc loc;         /* where the record started */
    const char *input;   /* the name of the input it came from, for messages
                            (set by the read loop, read.c) */
    /* The images loaded when the trace was taken (crash records, Swift JSON,
     * logs with maps), or NULL. Owned by the reader that set it, valid until
     * its next record; trace_reset() clears it. */
    const btp_image_map *image_map;
    /* A line saying where the trace came from (a crash record's header
     * line), or NULL; owned by the reader like image_map. */
    const char *context;
    /* The machine as the input names it ("x86_64", "arm64", "i386": Swift
     * JSON, crash logs), or NULL; owned by the reader like image_map. */
    const char *arch;
    /* Crash logs: the thread's name (or NULL) and whether it is the one
     * that crashed. */
    const char *thread_name;
    int crashed;
    /* Set by readers that know which records share a stack (the trace
     * log numbers its stacks): equal keys from one reader mean equal
     * frames, so a writer may reuse what it made of that stack. The low 32
     * bits are a dense number (0, 1, 2, ... as stacks first appear), the
     * high 32 bits a generation: a new generation starts the numbering
     * again and may reuse numbers for other stacks. */
    int has_stack_key;
    uint64_t stack_key;
    /* The frames are left out (no runs; n still counts them): a reader
     * does this only when the writer said it has this stack_key
     * (cli_options.stack_known), which saves turning frames into runs that
     * nothing reads (15-25 % of the instructions of a log back to text). */
    int frames_elided;
} trace;

/* Set up an empty trace that will hold at most max_frames frames. */
void trace_init(trace *t, size_t max_frames);

/* Forget the previous record (keeps the buffers) and start a plain trace
 * of the given word size. */
void trace_reset(trace *t, unsigned word_bits);

/*
 * Append `copies` copies of f after checking it against the word size.
 * Returns BTP_OK, BTP_E_VALUE_TOO_WIDE (address or omit count does not fit
 * the word), BTP_E_ZERO_COUNT (copies == 0; an omit of 0 frames is kept),
 * BTP_E_LIMIT (the trace would exceed max_frames: checked before anything is
 * allocated, so a count of 2^64 fails at once) or BTP_E_OUT_OF_MEMORY.
 * Nothing is appended on failure. Costs one run at most, whatever copies.
 */
btp_status trace_add(trace *t, btp_frame f, uint64_t copies);

/* Append the n frames f[0..n) (one copy each): trace_add for a whole stack
 * in one step, with one word-size check and one limit check, for readers
 * that get stacks as arrays (log). Same returns as trace_add except
 * BTP_E_ZERO_COUNT; nothing is appended on failure. */
btp_status trace_add_frames(trace *t, const btp_frame *f, size_t n);

/* The t->n frames expanded into one array (valid until t changes), or
 * NULL when out of memory. Costs t->n frames of memory: for writers whose
 * format bounds the frame count (log, lws), after checking it. The array
 * is a cache inside t, so this takes the const trace writers are given. */
const btp_frame *trace_frames(const trace *t);

void trace_free(trace *t);

/* Name of a frame kind as the text formats write it: "pc", "ra", "async",
 * "omit". */
const char *trace_kind_name(btp_frame_kind k);

#endif
