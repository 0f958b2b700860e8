/*
 * libwebsockets `~m#` blob encoder: libwebsockets' own choices (byte for
 * byte where libwebsockets is correct) or the smallest encoding.
 *
 * Signal-safe: arithmetic on the caller's arrays and buffer only.
 */
#include "bitio.h"
#include "common/compiler.h"
#include "lws_internal.h"

/* The nearest reference by vector arithmetic on doubles (encode_sse2,
 * encode_avx2): x86-64, with SSE2 (always there) or AVX2 (where the
 * processor has it). BTP_LWS_AVX2=0 leaves the AVX2 encoder out (the tests
 * build such a copy to check the SSE2 one on processors with AVX2). */
#if !BTP_CODEC_SMALL && defined(__x86_64__) && defined(__GNUC__)
#define LWS_SIMD 1
#include <immintrin.h>
#else
#define LWS_SIMD 0
#endif
#ifndef BTP_LWS_AVX2
#define BTP_LWS_AVX2 1
#endif
#define LWS_AVX2 (LWS_SIMD && BTP_LWS_AVX2)

/* How one frame is written. */
typedef struct lws_choice {
    int delta;     /* 0: literal */
    size_t ref;    /* delta: index of the reference frame */
    int sign;      /* delta: 1 = reference - mag */
    uint64_t mag;  /* delta: |difference| */
    unsigned cost; /* bits, extra bits included */
} lws_choice;

/* The extra bit after a field holding v, as gcc-built libwebsockets writes
 * it: its loop's last step tests `v & (1 << -1)`, which x86 evaluates as a
 * test of bit 31 of an int mask sign-extended to the word. */
static BTP_ALWAYS_INLINE unsigned extra_bit(uint64_t v, const unsigned word_bits)
{
    return word_bits == 32 ? (unsigned)(v >> 31) & 1u : (v >> 31) != 0;
}

/* A field of nominal width `width` (<= 63) holding v, then its extra bit. */
static BTP_ALWAYS_INLINE void put_field(bit_writer *w, uint64_t v, unsigned width,
                                        const unsigned word_bits)
{
    bw_put64(w, v << 1 | extra_bit(v, word_bits), width + 1);
}

/* A count and value pair; v must fit 63 bits. */
static BTP_ALWAYS_INLINE void put_counted(bit_writer *w, uint64_t v, const unsigned word_bits)
{
    unsigned n = lws_sigbits(v);
    put_field(w, n, LWS_W_COUNT, word_bits);
    put_field(w, v, n, word_bits);
}

/* Bits a count+value pair takes; 0 if the value needs 64 bits (a count of
 * 64 does not fit the 6-bit field). */
static unsigned counted_cost(uint64_t v)
{
    unsigned n = lws_sigbits(v);
    return n > 63 ? 0 : LWS_W_COUNT + 1 + n + 1;
}

static const unsigned literal_head = LWS_W_KIND + 1;
static const unsigned delta_head = LWS_W_KIND + 1 + LWS_W_REF + 1 + LWS_W_SIGN + 1;

/* The delta from frame value r to v libwebsockets writes: the plain
 * difference of the two numbers with its sign (an exact repeat uses sign
 * 1). If that magnitude has bit 63 set, the other way round the word is
 * the only one a count can express. */
static lws_choice delta_to(uint64_t v, uint64_t r, size_t ref)
{
    lws_choice c = {1, ref, v <= r, v > r ? v - r : r - v, 0};
    unsigned cost = counted_cost(c.mag);
    if (!cost) {
        c.sign = !c.sign;
        c.mag = 0 - c.mag;
        cost = counted_cost(c.mag);
    }
    c.cost = cost ? delta_head + cost : 0;
    return c;
}

/* The cheapest delta from frames [lo, i); cost 0 if none can be written.
 * Earliest reference on ties. */
static lws_choice best_delta(const btp_frame *f, size_t lo, size_t i)
{
    lws_choice best = {0};
    for (size_t r = lo; r < i; r++) {
        lws_choice c = delta_to(f[i].value, f[r].value, r);
        if (c.cost && (!best.cost || c.cost < best.cost))
            best = c;
    }
    return best;
}

static lws_choice choose(const btp_frame *f, size_t i, int optimal)
{
    uint64_t v = f[i].value;
    size_t lo = i > LWS_REFS ? i - LWS_REFS : 0;
    unsigned lcost = counted_cost(v);
    lws_choice lit = {0, 0, 0, 0, lcost ? literal_head + lcost : 0};
    if (optimal) {
        lws_choice d = best_delta(f, lo, i);
        return d.cost && (!lit.cost || d.cost < lit.cost) ? d : lit;
    }
    /* libwebsockets: the nearest reference by plain difference, earliest on
     * ties; a delta only if it is not frame 0 and saves >= 5 value bits. */
    size_t near = 0;
    uint64_t best = 0;
    for (size_t r = lo; r < i; r++) {
        uint64_t r_v = f[r].value, m = v > r_v ? v - r_v : r_v - v;
        if (r == lo || m < best) {
            best = m;
            near = r;
        }
    }
    if (i > 0 && near > 0 && lws_sigbits(v) >= lws_sigbits(best) + 5)
        return delta_to(v, f[near].value, near);
    if (lit.cost)
        return lit;
    /* Bit 63 set: libwebsockets cannot write it at all; take the cheapest
     * delta there is. */
    return best_delta(f, lo, i);
}

/* How libwebsockets' encoder writes frame i (spec/lws.md): the nearest of
 * frames max(0, i-8)..i-1 by plain difference, earliest on ties; a delta
 * only if that frame is not frame 0 and sigbits(value) >= sigbits(|delta|)
 * + 5. The scan walks the frames by pointer and picks the minimum with
 * conditional moves; the rare cases (a value with bit 63 set, which no
 * literal holds, or a magnitude with bit 63 set) go to choose(). */
static BTP_ALWAYS_INLINE lws_choice choose_lws(const btp_frame *f, size_t i)
{
    uint64_t v = f[i].value, best = UINT64_MAX;
    const btp_frame *r = f + (i > LWS_REFS ? i - LWS_REFS : 0), *near = r;
    for (; r < f + i; r++) {
        uint64_t m = v > r->value ? v - r->value : r->value - v;
        int closer = m < best;
        near = closer ? r : near;
        best = closer ? m : best;
    }
    if (near > f && lws_sigbits(v) >= lws_sigbits(best) + 5 && !(best >> 63)) {
        lws_choice c = {1, (size_t)(near - f), v <= near->value, best, 1};
        return c;
    }
    if (!(v >> 63)) {
        lws_choice c = {0, 0, 0, 0, 1};
        return c;
    }
    return choose(f, i, 0);
}

/* Write frame i as c says. The fixed-width fields and the count are below
 * 2^31, so their extra bits are 0: a literal's kind and count are one
 * 9-bit field, a delta's kind, reference, sign and count one of 15 bits,
 * and that with the value one write when they fit in 57 bits (a 47-bit
 * literal does; the small build makes two, which is less code). */
static BTP_ALWAYS_INLINE void put_frame(bit_writer *w, size_t i, uint64_t value, lws_choice c,
                                        const unsigned word_bits)
{
    uint64_t head, v;
    unsigned head_bits;
    if (!c.delta) {
        v = value;
        head_bits = 2 + LWS_W_COUNT + 1;
        head = (uint64_t)lws_sigbits(v) << 1;
    } else {
        v = c.mag;
        head_bits = 2 + 4 + 2 + LWS_W_COUNT + 1;
        head = (uint64_t)1 << 14 | (uint64_t)(i - 1 - c.ref) << 10 | (uint64_t)c.sign << 8 |
               (uint64_t)lws_sigbits(v) << 1;
    }
    unsigned n = lws_sigbits(v) + 1; /* the value and its extra bit */
    uint64_t field = v << 1 | extra_bit(v, word_bits);
    if (!BTP_CODEC_SMALL && head_bits + n <= 57) {
        bw_put(w, head << n | field, head_bits + n);
    } else {
        bw_put(w, head, head_bits);
        bw_put64(w, field, n);
    }
}

/* dst[0..n) = src[0..n), by hand: a compiler would turn a plain loop into
 * a call to memcpy, which this signal-safe code must not make. */
static void copy_bytes(void *dst, const uint8_t *src, size_t n)
{
    uint8_t *d = dst;
    for (size_t i = 0; i < n; i++) {
        BTP_OPAQUE(i);
        d[i] = src[i];
    }
}

/* The blob's end after its last field: zero padding to a byte (the writer
 * leaves it), then the length. Returns the length. */
static BTP_ALWAYS_INLINE size_t put_trailer(bit_writer *w, uint8_t *out)
{
    size_t bytes = bw_bytes(w, out), total = bytes + LWS_TRAILER_BITS / 8;
    out[bytes] = (uint8_t)(total >> 8);
    out[bytes + 1] = (uint8_t)total;
    return total;
}

/* btp_lws_encode's work after its checks, with the word size a constant
 * in each copy (no test of it per extra bit). out has room for the
 * largest blob and the writer's slack. Returns the blob's length, or 0
 * with *err_frame set when a frame cannot be written. */
static BTP_ALWAYS_INLINE size_t encode_w(const btp_frame *frames, size_t n, uint64_t alloc_size,
                                         unsigned flags, uint8_t *out, size_t *err_frame,
                                         const unsigned word_bits)
{
    bit_writer w;
    bw_init(&w, out);
    put_field(&w, n, LWS_W_DEPTH, word_bits);
    for (size_t i = 0; i < n; i++) {
        /* The small build: one choose() for both. */
        int optimal = (flags & BTP_LWS_ENC_OPTIMAL) != 0;
        lws_choice c = BTP_CODEC_SMALL ? choose(frames, i, optimal)
                       : optimal       ? choose(frames, i, 1)
                                       : choose_lws(frames, i);
        if (!c.cost) {
            *err_frame = i;
            return 0;
        }
        put_frame(&w, i, frames[i].value, c, word_bits);
    }
    put_counted(&w, alloc_size, word_bits);
    return put_trailer(&w, out);
}

#if !BTP_CODEC_SMALL
/* A count-then-value pair (the count below 2^31, so its extra bit is 0)
 * after a head of head_bits bits, as one write when it fits in 57 bits
 * (always on 32-bit words), else head and value apart. */
static BTP_ALWAYS_INLINE void put_record(bit_writer *w, uint64_t head, unsigned head_bits,
                                         uint64_t v, unsigned n, const unsigned word_bits)
{
    uint64_t field = v << 1 | extra_bit(v, word_bits);
    unsigned bits = head_bits + n + 1;
    if (word_bits == 32 || bits <= 57) {
        bw_put(w, head << (n + 1) | field, bits);
    } else {
        bw_put(w, head, head_bits);
        bw_put64(w, field, n + 1);
    }
}

/* The blob's start: the depth n (6 bits, extra bit 0) left pending in w
 * for the first frame's write. */
static BTP_ALWAYS_INLINE void start_blob(bit_writer *w, uint8_t *out, size_t n)
{
    bw_init(w, out);
    w->acc = (uint64_t)n << 1;
    w->bits = LWS_W_DEPTH + 1;
}

/* The blob's end: the size (a count and value), then put_trailer. */
static BTP_ALWAYS_INLINE size_t put_size(bit_writer *w, uint8_t *out, uint64_t alloc_size,
                                         const unsigned word_bits)
{
    put_record(w, (uint64_t)lws_sigbits(alloc_size) << 1, 7, alloc_size, lws_sigbits(alloc_size),
               word_bits);
    return put_trailer(w, out);
}

/* One reference of the scan below: the frame j back from frame i, keyed by
 * |difference| << 3 with 8 - j in the low bits, so that the smallest key is
 * the nearest frame and, among equally near ones, the earliest (the
 * largest j), as libwebsockets picks. The magnitude is made before the
 * low bits go in (BTP_OPAQUE), which keeps it at a negation and a
 * conditional move instead of two subtractions with the bits in each. */
#define LWS_REF(j)                                                                               \
    do {                                                                                         \
        uint64_t t_ = (uint64_t)__builtin_llabs((long long)(a_i - a[i - (j)]));                  \
        BTP_OPAQUE(t_);                                                                          \
        t_ |= 8 - (j);                                                                           \
        best = t_ < best ? t_ : best;                                                            \
    } while (0)

/* Index of the highest set bit of x != 0. */
static BTP_ALWAYS_INLINE unsigned top_bit(uint64_t x)
{
    return 63u ^ btp_clz64(x); /* (not 63 - clz: the compiler folds the xor into its bsr) */
}

/*
 * Frame i, whose nearest earlier frame has the key best (UINT64_MAX for
 * none), written as libwebsockets writes it: a delta when that frame is not
 * frame 0 (only possible while first, i.e. i <= 8) and sigbits(v) >=
 * sigbits(|d|) + 5; else a literal. With a_i = v << 3 and best = |d| << 3 |
 * low bits, top_bit(a_i | 8) is sigbits(v) + 2 and top_bit(best | 8) is
 * sigbits(|d|) + 2, so the test is one comparison of the two.
 * The extra bits: a count is below 2^31 (extra bit 0); on a 32-bit word a
 * value's is its bit 31, and a delta's magnitude is below 2^27 (sigbits(v)
 * <= 32); on a 64-bit word it is 1 when the value has 32 bits or more.
 */
static BTP_ALWAYS_INLINE void put_frame_fast(bit_writer *w, const uint64_t *a, size_t i,
                                             uint64_t best, const int first,
                                             const unsigned word_bits)
{
    uint64_t a_i = a[i];
    unsigned la = top_bit(a_i | 8), lb = top_bit(best | 8);
    unsigned low = (unsigned)best & 7; /* 8 - j for the frame j back */
    uint64_t rec;
    unsigned n, head_bits;
    if (la >= lb + 5 && !(first && low + i == 8)) {
        n = lb - 2;
        /* kind 1|0, reference j - 1 = 7 - low (23 - low is 23 ^ low), sign,
         * count: the 15 bits of the head but its last (the count's extra
         * bit, 0), and then |d| << 1 = best >> 2 without its low bit. */
        uint64_t head = ((uint64_t)(23 ^ low) << 2 | (a_i <= a[i + low - 8])) << 7 | n;
        head_bits = 15;
        rec = (best >> 2 & ~(uint64_t)1) | (word_bits == 32 ? 0 : (n + 32) >> 6);
        if (word_bits == 32 || head_bits + n + 1 <= 57) {
            rec |= head << (n + 2);
        } else {
            bw_put(w, head << 1, head_bits);
            head_bits = 0;
        }
    } else {
        n = la - 2;
        head_bits = 9;
        /* value << 1 = a_i >> 2 without its low bit */
        rec = (a_i >> 2 & ~(uint64_t)1) | (word_bits == 32 ? a_i >> 34 & 1 : (n + 32) >> 6);
        if (word_bits == 32 || head_bits + n + 1 <= 57) {
            rec |= (uint64_t)n << (n + 2);
        } else {
            bw_put(w, (uint64_t)n << 1, head_bits);
            head_bits = 0;
        }
    }
    if (word_bits == 32)
        bw_put(w, rec, head_bits + n + 1);
    else
        bw_put64(w, rec, head_bits + n + 1);
}

/* Frame i (a constant, at most 8) of encode_fast_w: the scan of frames
 * i-1 .. 0 unrolled, then the frame. */
static BTP_ALWAYS_INLINE void first_frame(bit_writer *w, const uint64_t *a, const size_t i,
                                          const unsigned word_bits)
{
    uint64_t a_i = a[i], best = UINT64_MAX;
    for (size_t j = i; j >= 1; j--)
        LWS_REF(j);
    put_frame_fast(w, a, i, best, 1, word_bits);
}

/*
 * libwebsockets' choices (choose_lws) for a record whose frames are all
 * return addresses below 2^60, from a[k] = frames[k].value << 3: then every
 * difference of two of them is below 2^63 in magnitude as a signed number,
 * and its key (LWS_REF) fits 64 bits. The scan of the 8 frames before a
 * frame is straight-line code with no branch (a copy of it for each of the
 * first 9 frames), and each frame is one write (two for a value
 * of more than 47 bits): its kind, count or reference, sign and count,
 * and the value.
 */
static BTP_ALWAYS_INLINE size_t encode_fast_w(const uint64_t *a, size_t n, uint64_t alloc_size,
                                              uint8_t *out, const unsigned word_bits)
{
    bit_writer w;
    start_blob(&w, out, n);
    /* Frames 0 to 8, each with its own straight-line scan of the frames
     * before it (no dispatch on how many there are). */
    do {
        if (n == 0)
            break;
        first_frame(&w, a, 0, word_bits);
        if (n == 1)
            break;
        first_frame(&w, a, 1, word_bits);
        if (n == 2)
            break;
        first_frame(&w, a, 2, word_bits);
        if (n == 3)
            break;
        first_frame(&w, a, 3, word_bits);
        if (n == 4)
            break;
        first_frame(&w, a, 4, word_bits);
        if (n == 5)
            break;
        first_frame(&w, a, 5, word_bits);
        if (n == 6)
            break;
        first_frame(&w, a, 6, word_bits);
        if (n == 7)
            break;
        first_frame(&w, a, 7, word_bits);
        if (n == 8)
            break;
        first_frame(&w, a, 8, word_bits);
    } while (0);
    size_t i = LWS_REFS + 1;
    for (; i < n; i++) {
        uint64_t a_i = a[i], best = UINT64_MAX;
        LWS_REF(8);
        LWS_REF(7);
        LWS_REF(6);
        LWS_REF(5);
        LWS_REF(4);
        LWS_REF(3);
        LWS_REF(2);
        LWS_REF(1);
        put_frame_fast(&w, a, i, best, 0, word_bits);
    }
    return put_size(&w, out, alloc_size, word_bits);
}
#undef LWS_REF

#if LWS_SIMD
/*
 * The SSE2 encoder: the nearest reference by vector arithmetic, for return
 * addresses below 2^49: the frames' values << 3 (below 2^52) in the low
 * bits of the double 2^52, i.e. the doubles 2^52 + (value << 3). The
 * difference of two of them is exact (both lie in [2^52, 2^53), where
 * doubles are the integers), and so is that magnitude plus a reference's
 * age below 8: the keys of LWS_REF, computed and compared as doubles, and
 * converted back exactly (below 2^53). The keys are made for two frames at
 * once, one reference distance at a time (no minimum across a vector), then
 * the frames written one by one.
 */
#define LWS_E_BIAS UINT64_C(0x4330000000000000)
#define LWS_E_VALUE (((uint64_t)1 << 52) - 1)
/* Before frame 0 (and after the last): the double 0, whose key (2^52 +
 * value << 3 + age, also exact) loses to any frame's (below 2^52) and, when
 * no frame is there (frame 0), says "literal" (a key of 53 bits). */
#define LWS_E_NONE 0

/* Rounded up to the four frames of a step (of the AVX2 encoder). */
#define LWS_SIMD_FRAMES ((BTP_LWS_MAX_FRAMES + 3) & ~3)

typedef struct lws_simd {
    uint64_t a[LWS_SIMD_FRAMES];            /* frame k's value << 3 */
    /* e[8 + k]: frame k's double (above); room for 4 past the last */
    uint64_t e[LWS_REFS + BTP_LWS_MAX_FRAMES + 4];
    double key[LWS_SIMD_FRAMES];            /* frame k's key of its nearest */
} lws_simd;

/* load4_avx2 reads two frames as one 32-byte vector. */
_Static_assert(sizeof(btp_frame) == 16, "btp_frame is a value and a kind in 16 bytes");

/* Fill s->a and s->e from frames[0..n). Returns 0 (nothing for the scan)
 * when a frame is not a return address or above `limit`. */
static BTP_ALWAYS_INLINE int simd_pass(const btp_frame *frames, size_t n, lws_simd *s,
                                       uint64_t limit)
{
    uint64_t any = 0;
    unsigned kinds = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t a_i = frames[i].value << 3 & LWS_E_VALUE;
        any |= frames[i].value;
        kinds |= (unsigned)frames[i].kind ^ BTP_FRAME_RA;
        s->a[i] = a_i;
        s->e[i + LWS_REFS] = a_i | LWS_E_BIAS;
    }
    for (size_t m = 0; m < LWS_REFS; m++)
        s->e[m] = LWS_E_NONE;
    for (size_t i = n; i & 3; i++)
        s->e[i + LWS_REFS] = LWS_E_NONE;
    return !kinds && any <= limit;
}

/* The ages a reference distance j adds to its keys (LWS_REF): 8 - j. */
static const double lws_age[LWS_REFS][4] __attribute__((aligned(32))) = {
    {0, 0, 0, 0}, {1, 1, 1, 1}, {2, 2, 2, 2}, {3, 3, 3, 3},
    {4, 4, 4, 4}, {5, 5, 5, 5}, {6, 6, 6, 6}, {7, 7, 7, 7}};

/* s->key[0..n) from s->e, two frames a step (keys past n: any). The ages
 * are read from memory in the loop: kept in registers they cost more to
 * load per call than they save on the few steps of a call. */
static inline void keys_sse2(lws_simd *s, size_t n)
{
    const double *e = (const double *)s->e + LWS_REFS;
    const __m128d abs = _mm_castsi128_pd(_mm_set1_epi64x(INT64_MAX));
    for (size_t g = 0; g < n; g += 2) {
        const double(*age)[4] = lws_age;
        BTP_OPAQUE(age);
        __m128d v = _mm_loadu_pd(e + g);
        __m128d best = _mm_and_pd(_mm_sub_pd(v, _mm_loadu_pd(e + g - 8)), abs);
        for (int j = LWS_REFS - 1; j >= 1; j--) {
            __m128d d = _mm_and_pd(_mm_sub_pd(v, _mm_loadu_pd(e + g - j)), abs);
            best = _mm_min_pd(best, _mm_add_pd(d, _mm_load_pd(age[LWS_REFS - j])));
        }
        _mm_storeu_pd(s->key + g, best);
    }
}

/* encode_fast_w's writing from the keys (from frame 9 on without the test
 * for frame 0 as the nearest). */
static BTP_ALWAYS_INLINE size_t simd_write(const lws_simd *s, size_t n, uint64_t alloc_size,
                                           uint8_t *out, const unsigned word_bits)
{
    bit_writer w;
    start_blob(&w, out, n);
    size_t i = 0, first = n < LWS_REFS + 1 ? n : LWS_REFS + 1;
    for (; i < first; i++)
        put_frame_fast(&w, s->a, i, (uint64_t)(int64_t)s->key[i], 1, word_bits);
    for (; i < n; i++)
        put_frame_fast(&w, s->a, i, (uint64_t)(int64_t)s->key[i], 0, word_bits);
    return put_size(&w, out, alloc_size, word_bits);
}

/* encode_fast_w for return addresses below 2^49 within the word; 0 for
 * other frames (the caller then goes another way). No AVX2 or BMI needed.
 * Not inlined: its arrays stay off btp_lws_encode's stack on the other
 * paths. */
static BTP_NOINLINE size_t encode_sse2(const btp_frame *frames, size_t n, uint64_t alloc_size, uint8_t *out,
                          unsigned word_bits)
{
    lws_simd s;
    if (!simd_pass(frames, n, &s, word_bits == 64 ? LWS_E_VALUE >> 3 : UINT32_MAX))
        return 0;
    keys_sse2(&s, n);
    return word_bits == 64 ? simd_write(&s, n, alloc_size, out, 64)
                           : simd_write(&s, n, alloc_size, out, 32);
}

#if LWS_AVX2
/*
 * The AVX2 encoder: four frames a step, each frame's record (its bits and
 * their number) made in the vectors, then the records written one by one.
 * Frame values v below 2^47 as the doubles X = 16v (exact). A reference
 * of value r, j frames back, has the key
 *     |(X - 1/2) - 16r| + 2 (8 - j) + 1/2 = 16 |v - r| + 2 (8 - j) + s,
 * s = 1 when v <= r (the sign libwebsockets writes), else 0: all exact
 * (below 2^51, halves at most), the nearest the smallest, on ties the
 * earliest (largest j), as LWS_REF orders them, and the sign comes along.
 * Before frame 0: -2^51, whose keys (2^51 and more, exact too) lose to any
 * frame's and make frame 0 a literal.
 */
#define LWS_X_NONE (-0x1p51)

/* The constants of records4_avx2, each in four lanes (doubles by their
 * bits): read from memory where they are used (in registers they were
 * loaded, spilled and reloaded each call, for the few steps of a call). */
enum {
    LWS_K_AGE = 0, /* 8 rows: 2 (8 - j) + 1/2 for j = 8..1 */
    LWS_K_BIAS = LWS_REFS, /* 2^52 */
    LWS_K_ABS,     /* all but the sign */
    LWS_K_HALF,    /* 1/2 */
    LWS_K_SIXTEEN, /* 16.0 */
    LWS_K_TWO51,   /* 2^51 */
    LWS_K_7,
    LWS_K_5,
    LWS_K_4,
    LWS_K_1026,
    LWS_K_DELTA,   /* 2^48 - 2 */
    LWS_K_32,
    LWS_K_23,
    LWS_K_1,
    LWS_K_2,
    LWS_K_16,
    LWS_K_6,
    LWS_K_RA,      /* BTP_FRAME_RA in each 32-bit lane */
    LWS_K_N
};
#define LWS_K4(x) {x, x, x, x}
static const uint64_t lws_k[LWS_K_N][4] __attribute__((aligned(32))) = {
    LWS_K4(UINT64_C(0x3fe0000000000000)), LWS_K4(UINT64_C(0x4004000000000000)),
    LWS_K4(UINT64_C(0x4012000000000000)), LWS_K4(UINT64_C(0x401a000000000000)),
    LWS_K4(UINT64_C(0x4021000000000000)), LWS_K4(UINT64_C(0x4025000000000000)),
    LWS_K4(UINT64_C(0x4029000000000000)), LWS_K4(UINT64_C(0x402d000000000000)),
    LWS_K4(LWS_E_BIAS),
    LWS_K4(UINT64_C(0x7fffffffffffffff)),
    LWS_K4(UINT64_C(0x3fe0000000000000)),
    LWS_K4(UINT64_C(0x4030000000000000)),
    LWS_K4(UINT64_C(0x4320000000000000)),
    LWS_K4(7),
    LWS_K4(5),
    LWS_K4(4),
    LWS_K4(1026),
    LWS_K4(((uint64_t)1 << 48) - 2),
    LWS_K4(32),
    LWS_K4(23),
    LWS_K4(1),
    LWS_K4(2),
    LWS_K4(16),
    LWS_K4(6),
    LWS_K4((uint64_t)BTP_FRAME_RA << 32 | BTP_FRAME_RA)};
#undef LWS_K4

/* Constant row i of lws_k, as integers or as doubles. */
#define LWS_KI(i) _mm256_load_si256((const __m256i *)k[i])
#define LWS_KD(i) _mm256_load_pd((const double *)k[i])

/* The values of f[0..3] in order (two frames a 32-byte load); *any and *ra
 * (each kind == BTP_FRAME_RA in the low half of its 64-bit lane) updated. */
__attribute__((target("avx2"))) static inline __m256i load4_avx2(const btp_frame *f, __m256i *any,
                                                                __m256i *ra,
                                                                const uint64_t (*k)[4])
{
    __m256i f01 = _mm256_loadu_si256((const __m256i *)f);
    __m256i f23 = _mm256_loadu_si256((const __m256i *)(f + 2));
    __m256i v = _mm256_permute4x64_epi64(_mm256_unpacklo_epi64(f01, f23), 0xd8);
    *any = _mm256_or_si256(*any, v);
    *ra = _mm256_and_si256(*ra,
                           _mm256_cmpeq_epi32(_mm256_unpackhi_epi64(f01, f23), LWS_KI(LWS_K_RA)));
    return v;
}

/*
 * The records of frames g..g+3, values v, into rec[g..g+3] and len[g..g+3]
 * (what put_frame_fast writes: libwebsockets' choice between a delta from
 * the nearest of the 8 frames before and a literal). *p and *pp hold the
 * doubles of the four and eight frames before (moved on here), *back
 * 8 - (g..g+3): the age a frame-0 reference would have (then a literal).
 * The references' vectors are shuffles of *pp, *p and the new ones, not
 * loads: the frames' doubles are never stored. k: lws_k.
 */
__attribute__((target("avx2"))) static BTP_ALWAYS_INLINE void
records4_avx2(__m256i v, size_t g, __m256d *p, __m256d *pp, __m256i *back, uint64_t *rec,
              uint64_t *len, const uint64_t (*k)[4], const unsigned word_bits)
{
    __m256d x = _mm256_sub_pd(
        _mm256_castsi256_pd(_mm256_or_si256(_mm256_slli_epi64(v, 4), LWS_KI(LWS_K_BIAS))),
        LWS_KD(LWS_K_BIAS));
    /* rJ: the doubles of the frames J back */
    __m256d r8 = *pp, r4 = *p;
    __m256d r6 = _mm256_permute2f128_pd(r8, r4, 0x21), r2 = _mm256_permute2f128_pd(r4, x, 0x21);
    __m256d r7 = _mm256_shuffle_pd(r8, r6, 0x5), r5 = _mm256_shuffle_pd(r6, r4, 0x5);
    __m256d r3 = _mm256_shuffle_pd(r4, r2, 0x5), r1 = _mm256_shuffle_pd(r2, x, 0x5);
    *pp = r4;
    *p = x;
    __m256d xh = _mm256_sub_pd(x, LWS_KD(LWS_K_HALF));
#define LWS_KEY(j)                                                                               \
    _mm256_add_pd(_mm256_and_pd(_mm256_sub_pd(xh, r##j), LWS_KD(LWS_K_ABS)),                     \
                  LWS_KD(LWS_K_AGE + LWS_REFS - j))
    /* the smallest as a tree (the keys differ: any order gives it), not a
     * chain of 8 minimums */
    __m256d best =
        _mm256_min_pd(_mm256_min_pd(_mm256_min_pd(LWS_KEY(1), LWS_KEY(2)),
                                    _mm256_min_pd(LWS_KEY(3), LWS_KEY(4))),
                      _mm256_min_pd(_mm256_min_pd(LWS_KEY(5), LWS_KEY(6)),
                                    _mm256_min_pd(LWS_KEY(7), LWS_KEY(8))));
#undef LWS_KEY
    /* 1023 + 3 + sigbits(v) and 1023 + 3 + sigbits(|d|): exponents */
    __m256i la =
        _mm256_srli_epi64(_mm256_castpd_si256(_mm256_max_pd(x, LWS_KD(LWS_K_SIXTEEN))), 52);
    __m256i lb =
        _mm256_srli_epi64(_mm256_castpd_si256(_mm256_max_pd(best, LWS_KD(LWS_K_SIXTEEN))), 52);
    /* the key's bits (below 2^51 but before frame 0: any then) */
    __m256i key = _mm256_castpd_si256(
        _mm256_add_pd(_mm256_min_pd(best, LWS_KD(LWS_K_TWO51)), LWS_KD(LWS_K_BIAS)));
    __m256i age = _mm256_and_si256(_mm256_srli_epi64(key, 1), LWS_KI(LWS_K_7));
    /* a literal unless sigbits(v) >= sigbits(|d|) + 5 and the nearest is
     * not frame 0 */
    __m256i lit = _mm256_or_si256(_mm256_cmpgt_epi64(_mm256_add_epi64(lb, LWS_KI(LWS_K_5)), la),
                                  _mm256_cmpeq_epi64(age, *back));
    *back = _mm256_sub_epi64(*back, LWS_KI(LWS_K_4));
    __m256i n = _mm256_sub_epi64(_mm256_blendv_epi8(lb, la, lit), LWS_KI(LWS_K_1026));
    /* value << 1 or |d| << 1, and the extra bit */
    __m256i val =
        _mm256_blendv_epi8(_mm256_and_si256(_mm256_srli_epi64(key, 3), LWS_KI(LWS_K_DELTA)),
                           _mm256_add_epi64(v, v), lit);
    __m256i extra = word_bits == 32
                        ? _mm256_and_si256(_mm256_srli_epi64(v, 31), lit)
                        : _mm256_srli_epi64(_mm256_add_epi64(n, LWS_KI(LWS_K_32)), 6);
    /* the head but its last bit (0): a delta's kind, reference 7 - age
     * (23 ^ age), sign and count; a literal's count */
    __m256i head =
        _mm256_or_si256(_mm256_slli_epi64(_mm256_xor_si256(age, LWS_KI(LWS_K_23)), 9),
                        _mm256_slli_epi64(_mm256_and_si256(key, LWS_KI(LWS_K_1)), 7));
    head = _mm256_or_si256(_mm256_andnot_si256(lit, head), n);
    __m256i rec4 =
        _mm256_or_si256(_mm256_sllv_epi64(head, _mm256_add_epi64(n, LWS_KI(LWS_K_2))),
                        _mm256_or_si256(val, extra));
    /* 16 + n bits for a delta, 10 + n for a literal */
    __m256i len4 = _mm256_sub_epi64(_mm256_add_epi64(n, LWS_KI(LWS_K_16)),
                                    _mm256_and_si256(lit, LWS_KI(LWS_K_6)));
    _mm256_storeu_si256((__m256i *)(rec + g), rec4);
    _mm256_storeu_si256((__m256i *)(len + g), len4);
}
#undef LWS_KI
#undef LWS_KD

/* encode_fast_w for return addresses below 2^47 within the word, with the
 * records made four at a time (records4_avx2); 0 for other frames. */
__attribute__((target("avx2,bmi,bmi2"))) static BTP_ALWAYS_INLINE size_t
encode_avx2_w(const btp_frame *frames, size_t n, uint64_t alloc_size, uint8_t *out,
              const unsigned word_bits)
{
    uint64_t rec[LWS_SIMD_FRAMES], len[LWS_SIMD_FRAMES];
    __m256i any = _mm256_setzero_si256(), ra = _mm256_set1_epi32(-1);
    __m256i back = _mm256_setr_epi64x(8, 7, 6, 5);
    __m256d p = _mm256_set1_pd(LWS_X_NONE), pp = p;
    size_t g = 0;
    for (; g + 4 <= n; g += 4) {
        const uint64_t(*k)[4] = lws_k;
        __asm__ volatile("" : "+r"(k)); /* (no copy of the constants in registers) */
        records4_avx2(load4_avx2(frames + g, &any, &ra, k), g, &p, &pp, &back, rec, len, k,
                      word_bits);
    }
    if (n & 3) {
        /* Frames g..n-1: from the last four frames when there are four
         * (nothing read past frames[n - 1]), else from a copy. */
        const uint64_t(*k)[4] = lws_k;
        __asm__ volatile("" : "+r"(k));
        __m256i v;
        if (n >= 4) {
            v = load4_avx2(frames + n - 4, &any, &ra, k);
            v = (n & 3) == 1   ? _mm256_permute4x64_epi64(v, 0x93)
                : (n & 3) == 2 ? _mm256_permute4x64_epi64(v, 0x4e)
                               : _mm256_permute4x64_epi64(v, 0x39);
        } else {
            btp_frame f[4] = {{0, BTP_FRAME_RA}, {0, BTP_FRAME_RA}, {0, BTP_FRAME_RA},
                              {0, BTP_FRAME_RA}};
            for (size_t i = 0; i < n; i++)
                f[i] = frames[i];
            v = load4_avx2(f, &any, &ra, k);
        }
        records4_avx2(v, g, &p, &pp, &back, rec, len, k, word_bits);
    }
    uint64_t limit = word_bits == 64 ? ((uint64_t)1 << 47) - 1 : UINT32_MAX;
    if ((_mm256_movemask_ps(_mm256_castsi256_ps(ra)) & 0x55) != 0x55 ||
        !_mm256_testz_si256(any, _mm256_set1_epi64x((long long)~limit)))
        return 0;
    bit_writer w;
    start_blob(&w, out, n);
    for (size_t i = 0; i < n; i++) {
        if (word_bits == 32)
            bw_put(&w, rec[i], (unsigned)len[i]);
        else
            bw_put64(&w, rec[i], (unsigned)len[i]);
    }
    return put_size(&w, out, alloc_size, word_bits);
}

__attribute__((target("avx2,bmi,bmi2"))) static size_t
encode_avx2(const btp_frame *frames, size_t n, uint64_t alloc_size, uint8_t *out,
            unsigned word_bits)
{
    return word_bits == 64 ? encode_avx2_w(frames, n, alloc_size, out, 64)
                           : encode_avx2_w(frames, n, alloc_size, out, 32);
}

#endif
#endif
#endif

/*
 * Encode what the vector path did not (btp_lws_encode's checks passed):
 * return addresses below 2^60 by encode_fast_w, anything else the general
 * way, which finds the fault (and the same frame) or encodes it. Sets
 * *total; on a frame error *err_frame (may be NULL). Kept out of
 * btp_lws_encode so that the vector path's call stays small.
 */
static BTP_NOINLINE btp_status encode_rest(const btp_frame *frames, size_t n, uint64_t alloc_size,
                                           unsigned word_bits, unsigned flags, uint8_t *out,
                                           size_t *total, size_t *err_frame)
{
    const uint64_t mask = btp_word_mask(word_bits);
#if !BTP_CODEC_SMALL
    /* One pass checks the frames and keeps value << 3 for the scan. */
    uint64_t a[BTP_LWS_MAX_FRAMES], any = 0;
    unsigned kinds = 0;
    for (size_t i = 0; i < n; i++) {
        any |= frames[i].value;
        kinds |= (unsigned)frames[i].kind ^ BTP_FRAME_RA;
        a[i] = frames[i].value << 3;
    }
    if (!(flags & BTP_LWS_ENC_OPTIMAL) && !kinds &&
        any <= (word_bits == 64 ? mask >> 4 : mask)) {
        *total = word_bits == 64 ? encode_fast_w(a, n, alloc_size, out, 64)
                                 : encode_fast_w(a, n, alloc_size, out, 32);
        return BTP_OK;
    }
#endif
    for (size_t i = 0; i < n; i++) {
        btp_frame_kind k = frames[i].kind;
        int ok = k == BTP_FRAME_RA ||
                 ((flags & BTP_LWS_ENC_ANY_ADDRESS) && (k == BTP_FRAME_PC || k == BTP_FRAME_ASYNC));
        if (!ok || frames[i].value > mask) {
            if (err_frame)
                *err_frame = i;
            return ok ? BTP_E_VALUE_TOO_WIDE : BTP_E_UNREPRESENTABLE;
        }
    }

    size_t bad = 0;
    /* One copy per word size, or in the small build one for both. */
    *total = BTP_CODEC_SMALL   ? encode_w(frames, n, alloc_size, flags, out, &bad, word_bits)
             : word_bits == 64 ? encode_w(frames, n, alloc_size, flags, out, &bad, 64)
                               : encode_w(frames, n, alloc_size, flags, out, &bad, 32);
    if (!*total) {
        if (err_frame)
            *err_frame = bad;
        return BTP_E_UNREPRESENTABLE;
    }
    return BTP_OK;
}

btp_status btp_lws_encode(const btp_frame *frames, size_t n, uint64_t alloc_size,
                          unsigned word_bits, unsigned flags, void *buf, size_t cap,
                          size_t *len_out, size_t *err_frame)
{
    if (len_out)
        *len_out = 0;
    if (err_frame)
        *err_frame = 0;
    if (!lws_word_ok(word_bits) || (n && !frames) || (cap && !buf))
        return BTP_E_INVALID_ARGUMENT;
    if (n > BTP_LWS_MAX_FRAMES)
        return BTP_E_DEPTH_TOO_LARGE;
    const uint64_t mask = btp_word_mask(word_bits);
    if (alloc_size > mask || !counted_cost(alloc_size))
        return alloc_size > mask ? BTP_E_VALUE_TOO_WIDE : BTP_E_UNREPRESENTABLE;
    /* Straight into the caller's buffer when it has room for the largest
     * blob and the writer's 8 bytes of slack, else into a local one and
     * copied (by hand: no libc here). */
    uint8_t local[BTP_LWS_BLOB_MAX + 8];
    uint8_t *out = cap >= sizeof local ? (uint8_t *)buf : local;
    size_t total = 0;
#if LWS_SIMD
    /* The common case: libwebsockets' choices, return addresses below 2^47
     * (AVX2) or 2^49 (SSE2) within the word; 0 if not. */
    if (!(flags & BTP_LWS_ENC_OPTIMAL))
#if LWS_AVX2
        total = lws_cpu_v3() ? encode_avx2(frames, n, alloc_size, out, word_bits)
                           : encode_sse2(frames, n, alloc_size, out, word_bits);
#else
        total = encode_sse2(frames, n, alloc_size, out, word_bits);
#endif
#endif
    if (!total) {
        btp_status st =
            encode_rest(frames, n, alloc_size, word_bits, flags, out, &total, err_frame);
        if (st != BTP_OK)
            return st;
    }
    if (len_out)
        *len_out = total;
    if (total > cap)
        return BTP_E_BUFFER_TOO_SMALL;
    if (out == local)
        copy_bytes(buf, local, total);
    return BTP_OK;
}
