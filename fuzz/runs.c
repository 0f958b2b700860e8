/* Canonical run lists and the checked CBF cursor decode: see runs.h. */
#include "runs.h"

#include "fuzz.h"

#include <string.h>

void fuzz_runs_add(fuzz_runs *r, btp_frame f, fuzz_count count)
{
    if (count == 0)
        return;
    if (r->n && r->v[r->n - 1].frame.kind == f.kind && r->v[r->n - 1].frame.value == f.value) {
        r->v[r->n - 1].count += count;
        return;
    }
    r->v = fuzz_reserve(r->v, &r->cap, r->n + 1, sizeof *r->v);
    r->v[r->n].frame = f;
    r->v[r->n].count = count;
    r->n++;
}

void fuzz_runs_clear(fuzz_runs *r)
{
    r->n = 0;
}

void fuzz_runs_free(fuzz_runs *r)
{
    free(r->v);
    r->v = NULL;
    r->n = r->cap = 0;
}

fuzz_count fuzz_runs_total(const fuzz_runs *r)
{
    fuzz_count t = 0;
    for (size_t i = 0; i < r->n; i++)
        t += r->v[i].count;
    return t;
}

static int same_frame(btp_frame a, btp_frame b)
{
    return a.kind == b.kind && a.value == b.value;
}

int fuzz_frames_equal(const btp_frame *a, const btp_frame *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!same_frame(a[i], b[i]))
            return 0;
    return 1;
}

int fuzz_runs_equal(const fuzz_runs *a, const fuzz_runs *b)
{
    if (a->n != b->n)
        return 0;
    for (size_t i = 0; i < a->n; i++)
        if (!same_frame(a->v[i].frame, b->v[i].frame) || a->v[i].count != b->v[i].count)
            return 0;
    return 1;
}

int fuzz_runs_is_prefix(const fuzz_runs *a, const fuzz_runs *b)
{
    if (a->n > b->n)
        return 0;
    for (size_t i = 0; i < a->n; i++) {
        if (!same_frame(a->v[i].frame, b->v[i].frame) || a->v[i].count > b->v[i].count)
            return 0;
        /* Only the last run of a may be shorter than b's. */
        if (i + 1 < a->n && a->v[i].count != b->v[i].count)
            return 0;
    }
    return 1;
}

static int decoder_error(btp_status st)
{
    switch (st) {
    case BTP_E_RESERVED_OPCODE:
    case BTP_E_TRUNCATED_OPERAND:
    case BTP_E_ADDRESS_TOO_WIDE:
    case BTP_E_COUNT_TOO_WIDE:
    case BTP_E_REP_WITHOUT_FRAME:
    case BTP_E_FIRST_ADDRESS_RELATIVE:
    case BTP_E_ZERO_COUNT:
    case BTP_E_TRAILING_BYTES:
        return 1;
    default:
        return 0;
    }
}

btp_status fuzz_cbf_decode(const uint8_t *buf, size_t len, unsigned policy, fuzz_cbf_stream *s)
{
    btp_cbf_decoder d;
    btp_cbf_run run;
    fuzz_runs_clear(&s->runs);
    s->word_bits = 0;
    s->consumed = s->err_offset = 0;
    s->terminator = BTP_CBF_TERM_NONE;
    btp_status st = btp_cbf_decoder_init(&d, buf, len, policy);
    if (st != BTP_OK) {
        FUZZ_CHECK(st == BTP_E_EMPTY_INPUT || st == BTP_E_BAD_VERSION ||
                       st == BTP_E_RESERVED_SIZE,
                   "init status %d", st);
        FUZZ_CHECK((st == BTP_E_EMPTY_INPUT) == (len == 0), "empty input misreported");
        FUZZ_CHECK(btp_cbf_decoder_error_offset(&d) == 0, "init error offset");
        return s->status = st;
    }
    s->word_bits = btp_cbf_decoder_word_bits(&d);
    FUZZ_CHECK(btp_word_bits_valid(s->word_bits), "word bits %u", s->word_bits);
    uint64_t mask = btp_word_mask(s->word_bits);
    size_t prev_consumed = btp_cbf_decoder_consumed(&d);
    FUZZ_CHECK(prev_consumed == 1, "information byte consumed %zu", prev_consumed);
    /* Every successful call consumes at least one byte, so len calls are
     * enough; one more must report the end or an error. */
    for (size_t calls = 0;; calls++) {
        FUZZ_CHECK(calls <= len, "more than %zu runs from %zu bytes", calls, len);
        st = btp_cbf_decoder_next(&d, &run);
        size_t consumed = btp_cbf_decoder_consumed(&d);
        FUZZ_CHECK(consumed <= len, "consumed %zu of %zu", consumed, len);
        if (st != BTP_OK)
            break;
        FUZZ_CHECK(consumed > prev_consumed, "a run consumed nothing");
        prev_consumed = consumed;
        FUZZ_CHECK(run.count >= 1, "run of 0 copies");
        FUZZ_CHECK((unsigned)run.frame.kind <= BTP_FRAME_OMIT, "kind %d", run.frame.kind);
        if (btp_frame_is_address(run.frame))
            FUZZ_CHECK(run.frame.value <= mask, "address 0x%llx wider than the word",
                       (unsigned long long)run.frame.value);
        else if (!(policy & BTP_CBF_ACCEPT_WIDE))
            FUZZ_CHECK(run.frame.value <= mask, "omit count wider than the word");
        if (policy & BTP_CBF_REJECT_ZERO_COUNT)
            FUZZ_CHECK(btp_frame_is_address(run.frame) || run.frame.value != 0, "omit 0");
        fuzz_runs_add(&s->runs, run.frame, run.count);
    }
    s->consumed = btp_cbf_decoder_consumed(&d);
    s->terminator = btp_cbf_decoder_terminator(&d);
    s->err_offset = btp_cbf_decoder_error_offset(&d);
    /* Sticky: asking again gives the same answer. */
    FUZZ_CHECK(btp_cbf_decoder_next(&d, &run) == st, "status not sticky");
    if (st == BTP_END) {
        FUZZ_CHECK(s->err_offset == 0, "error offset after a clean end");
        if (s->terminator == BTP_CBF_TERM_NONE)
            FUZZ_CHECK(s->consumed == len, "no terminator but input left");
        else
            FUZZ_CHECK(s->consumed >= 2 && (buf[s->consumed - 1] == 0) ==
                                               (s->terminator == BTP_CBF_TERM_END),
                       "terminator does not match the byte before consumed");
        if (policy & BTP_CBF_REJECT_TRAILING)
            FUZZ_CHECK(s->consumed == len, "trailing bytes accepted");
        return s->status = BTP_OK;
    }
    FUZZ_CHECK(decoder_error(st), "unexpected status %d", st);
    FUZZ_CHECK(s->err_offset >= 1 && s->err_offset < len, "error offset %zu of %zu",
               s->err_offset, len);
    if (st == BTP_E_FIRST_ADDRESS_RELATIVE)
        FUZZ_CHECK(policy & BTP_CBF_REJECT_RELATIVE_FIRST, "relative-first without policy");
    if (st == BTP_E_ZERO_COUNT)
        FUZZ_CHECK(policy & BTP_CBF_REJECT_ZERO_COUNT, "zero count without policy");
    if (st == BTP_E_TRAILING_BYTES)
        FUZZ_CHECK(policy & BTP_CBF_REJECT_TRAILING, "trailing bytes without policy");
    return s->status = st;
}
