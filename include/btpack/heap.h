/*
 * Allocation metadata: a compact backtrace and the size kept in a small
 * header in front of each allocation of a program's own allocator or an
 * RTOS heap, live allocations kept findable, walked and dumped.
 *
 * The allocator stays the caller's. For each allocation the caller asks its
 * allocator for btp_heap_overhead(h) more bytes, then btp_heap_attach() puts
 * the header at the start of that raw block, encodes the stack into the
 * header's slot (CBF or the libwebsockets bitstream, the heap's choice, in at
 * most slot_bytes), links the header into the heap's live list and returns
 * the pointer to give the program. On free, btp_heap_detach() checks the
 * header, unlinks it and gives back the raw block for the real free.
 *
 *   raw block:  [ header | slot (compact backtrace) | pad ][ user bytes ... ]
 *               ^ raw                                    ^ user = raw + overhead
 *
 * Two parts, kept apart:
 *  - Freestanding (lib/heap/heap_meta.c): everything declared before the
 *    "Hosted" line below. No libc beyond memcpy/memset, no allocation, no OS;
 *    safe inside malloc and on a microcontroller. Locking is the caller's:
 *    a lock hook pair in the config is called around every list operation
 *    (seed of this design: a wrapper without the allocator's global lock
 *    corrupts its list once two threads allocate). Encoding happens outside
 *    the lock.
 *  - Hosted (lib/heap/heap_hosted.c): capture the current stack with
 *    btp_capture() and write live allocations to a trace log.
 *
 * Stack footprint (deepest path, bytes, gcc 12 -fstack-usage; the table is
 * in spec/heap.md): on a Cortex-M4 (-Os) attach ~410 (CBF) / ~370 (lws),
 * detach 24, walk 64 + the callback, the JSON dump ~820 (CBF) / ~1.4 KiB
 * (lws), the lws dump ~1.35 KiB; on x86_64 (-O2) about a third more.
 * Nothing recurses.
 *
 * Hostile input: the metadata lives next to memory the program writes, so a
 * buffer underrun can damage it. Every header carries a magic tied to its
 * own address; detach refuses a pointer whose header does not carry it
 * (BTP_E_HEAP_FOREIGN: not ours, or freed twice) and a header whose links
 * do not point back at it (BTP_E_HEAP_CORRUPT). Walks stop after count
 * nodes, so a damaged list cannot loop forever. Slot contents are decoded
 * with the bounds-checked codecs.
 *
 * Thread-safety: one btp_heap may be used from any number of threads when a
 * lock hook is configured; without one, from one thread at a time.
 */
#ifndef BTPACK_HEAP_H
#define BTPACK_HEAP_H

#include <btpack/btpack.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum btp_heap_codec {
    BTP_HEAP_CBF = 0, /* Compact Backtrace Format: any depth, cut with `trunc` */
    BTP_HEAP_LWS = 1  /* libwebsockets bitstream (carries the size): <= 31 frames */
} btp_heap_codec;

/* Default slot size in bytes: ~10-20 frames of CBF on a 32-bit device. */
#define BTP_HEAP_SLOT_DEFAULT 48u
/* Largest slot (the header stores the backtrace length in 16 bits). */
#define BTP_HEAP_SLOT_MAX 4096u

/* Doubly linked list link, the first member of every header. */
typedef struct btp_heap_link {
    struct btp_heap_link *prev, *next;
} btp_heap_link;

/* The header in front of each allocation (public so a build can size its
 * pools at compile time: overhead = round_up(sizeof(btp_heap_hdr) + slot,
 * align)). Fields are the library's; read them through btp_heap_walk(). */
typedef struct btp_heap_hdr {
    btp_heap_link link;
    size_t size;       /* bytes the program asked for */
    uint32_t magic;    /* BTP_HEAP_MAGIC ^ low 32 bits of the header's address */
    uint16_t bt_len;   /* bytes of backtrace in the slot */
    uint8_t codec;     /* btp_heap_codec */
    uint8_t flags;     /* BTP_HEAP_F_* */
} btp_heap_hdr;

#define BTP_HEAP_MAGIC 0x50485442u /* "BTHP" */

enum {
    BTP_HEAP_F_TRUNCATED = 1u << 0 /* the stack did not fit the slot: cut */
};

typedef void (*btp_heap_lock_fn)(void *ctx);

/* Caller-allocated configuration; zero-initialised gives the defaults. */
typedef struct btp_heap_config {
    btp_heap_codec codec;    /* default CBF */
    unsigned word_bits;      /* 16 (CBF only), 32, 64; 0: the size of a pointer */
    size_t slot_bytes;       /* backtrace room; 0: BTP_HEAP_SLOT_DEFAULT; CBF >= 2, LWS >= 8 */
    size_t align;            /* the allocator's alignment, kept for the user
                                pointer: a power of two; 0: 2 * sizeof(void *) */
    btp_heap_lock_fn lock;   /* both or neither; called around list changes */
    btp_heap_lock_fn unlock;
    void *lock_ctx;
    uint64_t reserved[BTP_RESERVED_WORDS]; /* zero (see btpack.h) */
} btp_heap_config;

/* A heap: its live list and counters. Caller-allocated (e.g. static). */
typedef struct btp_heap {
    btp_heap_link head;      /* list sentinel */
    size_t count;            /* live allocations */
    uint64_t bytes;          /* live bytes (sizes the program asked for) */
    uint64_t peak_bytes;     /* largest `bytes` so far */
    uint64_t total_allocs;   /* attaches so far */
    size_t overhead;         /* header + slot + padding */
    size_t slot_bytes;
    unsigned word_bits;
    btp_heap_codec codec;
    btp_heap_lock_fn lock, unlock;
    void *lock_ctx;
} btp_heap;

/*
 * Set up *h from cfg (NULL: defaults). Returns BTP_OK or
 * BTP_E_INVALID_ARGUMENT (NULL h, unknown codec, word size the codec cannot
 * hold, slot out of range, align not a power of two, one lock hook alone).
 */
BTP_API btp_status btp_heap_init(btp_heap *h, const btp_heap_config *cfg);

/* Bytes to add to every allocation request: header + slot, rounded up to
 * the alignment. 0 for NULL. */
BTP_API size_t btp_heap_overhead(const btp_heap *h);

/*
 * Put the header at raw (a block of at least overhead + size bytes, aligned
 * to the configured alignment), encode frames[0..n) (innermost first; PC,
 * RA or ASYNC addresses, OMIT counts) into its slot, link it and return the
 * user pointer raw + overhead in *user.
 * A stack that does not fit the slot is cut and flagged
 * BTP_HEAP_F_TRUNCATED: CBF keeps its innermost frames and ends with
 * `trunc`; LWS keeps the innermost frames that fit (at most 31, up to the
 * first OMIT). A frame the word size cannot hold ends the stack there (also
 * flagged). Returns BTP_OK or BTP_E_INVALID_ARGUMENT (NULL h/raw/user,
 * NULL frames with n > 0). Never allocates; the lock is held only to link.
 */
BTP_API btp_status btp_heap_attach(btp_heap *h, void *raw, size_t size, const btp_frame *frames,
                                   size_t n, void **user);

/*
 * Check and unlink the header of `user` and give back the raw block for
 * the real free in *raw (and the size the program asked for in *size, may
 * be NULL). Returns BTP_OK; BTP_E_HEAP_FOREIGN when the header's magic is
 * wrong (a pointer this heap never returned, a double free, an underrun
 * that hit the magic): nothing is changed, *raw is NULL, do not free it;
 * BTP_E_HEAP_CORRUPT when the list links around it are broken (nothing is
 * changed); BTP_E_INVALID_ARGUMENT.
 */
BTP_API btp_status btp_heap_detach(btp_heap *h, void *user, void **raw, size_t *size);

/*
 * After the caller's realloc moved (or resized) a block whose header it
 * detached with btp_heap_detach(): relink the header now at new_raw with the
 * new size, keeping its backtrace. *user gets the new user pointer.
 * Returns BTP_OK, BTP_E_HEAP_FOREIGN (no detached header at new_raw),
 * BTP_E_INVALID_ARGUMENT.
 */
BTP_API btp_status btp_heap_reattach(btp_heap *h, void *new_raw, size_t size, void **user);

/* One live allocation as a walk sees it (valid during the callback). */
typedef struct btp_heap_alloc {
    void *ptr;                /* the user pointer */
    size_t size;
    const uint8_t *bt;        /* the encoded backtrace, bt_len bytes */
    size_t bt_len;
    btp_heap_codec codec;
    unsigned word_bits;
    int truncated;
} btp_heap_alloc;

/* Walk callback: return 0 to go on, anything else to stop the walk. Called
 * with the heap's lock held: it must not allocate from or free to this heap. */
typedef int (*btp_heap_walk_fn)(void *ctx, const btp_heap_alloc *a);

/*
 * Call fn for each live allocation, oldest first, with the lock held.
 * Returns BTP_OK, BTP_END when fn stopped the walk, BTP_E_HEAP_CORRUPT when
 * a header on the list has a wrong magic or the list holds more nodes than
 * `count` (the walk stops there), BTP_E_INVALID_ARGUMENT.
 */
BTP_API btp_status btp_heap_walk(btp_heap *h, btp_heap_walk_fn fn, void *ctx);

/*
 * Decode an allocation's backtrace into out[0..cap), innermost first.
 * *n gets the frames written. Returns BTP_OK, BTP_E_LIMIT (more than cap:
 * the first cap are in out), or the codec's decode error.
 */
BTP_API btp_status btp_heap_frames(const btp_heap_alloc *a, btp_frame *out, size_t cap,
                                   size_t *n);

/* Where a dump's text goes: called with each piece in order (not
 * NUL-terminated). Return 0 to go on, non-zero to stop the dump. */
typedef int (*btp_heap_emit_fn)(void *ctx, const char *text, size_t len);

/*
 * Dump every live allocation as one line of text through emit:
 *  btp_heap_dump_lws:  "~m#<base64>\n", libwebsockets' convention (the
 *                      blob carries size and frames; a CBF slot is decoded
 *                      and re-encoded, its first 31 frames). `btpack heap
 *                      report` and `btpack convert --from lws` read them.
 *  btp_heap_dump_json: {"word_bits":W,"alloc_size":N,"ptr":"0x..","frames":
 *                      [{"type":"ra","addr":"0x.."},...],"truncated":B}\n,
 *                      the CLI's json format plus "ptr".
 * Return BTP_OK, BTP_END when emit stopped, BTP_E_HEAP_CORRUPT (as
 * btp_heap_walk), or the first codec error met (that allocation is written
 * without frames and the dump goes on). Lock held throughout; see walk.
 */
BTP_API btp_status btp_heap_dump_lws(btp_heap *h, btp_heap_emit_fn emit, void *ctx);
BTP_API btp_status btp_heap_dump_json(btp_heap *h, btp_heap_emit_fn emit, void *ctx);

/* ------------------------------------------------------------------ */
/* Hosted (Linux/POSIX; lib/heap/heap_hosted.c)                         */
/* ------------------------------------------------------------------ */

struct btp_capture_options;
struct btp_log_writer;

/* Frames btp_heap_attach_here() captures (on its stack: 16 bytes each). */
#define BTP_HEAP_CAPTURE_FRAMES 64

/*
 * btp_heap_attach() with the current thread's stack, captured with
 * btp_capture(opt) (opt may be NULL: defaults); the first frame is the
 * caller's return address. Capture errors attach an empty stack and are
 * returned after the attach (the allocation is valid either way).
 * Async-signal-safety and locking: as the capture method and lock hook.
 */
BTP_API btp_status btp_heap_attach_here(btp_heap *h, const struct btp_capture_options *opt,
                                        void *raw, size_t size, void **user);

/*
 * Write every live allocation as an ALLOC record (size, user pointer,
 * frames) to a trace log writer. The lock is held throughout and the writer
 * allocates with malloc: when h instruments malloc itself, take a lock that
 * the writer's own allocations do not need. Returns BTP_OK, the writer's
 * error, BTP_E_HEAP_CORRUPT, BTP_E_INVALID_ARGUMENT.
 */
BTP_API btp_status btp_heap_dump_log(btp_heap *h, struct btp_log_writer *w);

#ifdef __cplusplus
}
#endif

#endif
