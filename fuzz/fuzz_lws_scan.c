/*
 * Fuzz target: finding `~m#` records in log text, and decoding each.
 *
 * Input: log text (in a buffer ending at a guard page). Properties:
 *  - btp_lws_scan() returns records in order, each inside the text,
 *    starting with "~m#", made of base64 characters and '=' only, ending
 *    at the first other character; the position only moves forward, and
 *    the scan ends with BTP_END in at most one call per byte;
 *  - every "~m#" in the text is the start of a returned record (none is
 *    missed, and none can sit inside another record);
 *  - each record decodes (at 32 and 64 bits) to a documented status;
 *    base64 errors point inside the record.
 */
#include "fuzz.h"
#include "guard.h"

#include <btpack/lws.h>
#include <string.h>

static fuzz_guard in_guard;

static int record_char(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           c == '+' || c == '/' || c == '-' || c == '_' || c == '=';
}

static int is_lead(const char *t, size_t n, size_t i)
{
    return i + 3 <= n && t[i] == '~' && t[i + 1] == 'm' && t[i + 2] == '#';
}

static void decode_record(const char *rec, size_t len, unsigned word_bits)
{
    btp_frame frames[BTP_LWS_MAX_FRAMES];
    btp_lws_info info;
    btp_status st = btp_lws_m_decode(rec, len, word_bits, frames, BTP_LWS_MAX_FRAMES, &info);
    switch (st) {
    case BTP_OK:
        FUZZ_CHECK(info.depth <= BTP_LWS_MAX_FRAMES, "depth %zu", info.depth);
        break;
    case BTP_E_BAD_BASE64:
        FUZZ_CHECK(info.error_column >= 3 && info.error_column < len, "column %zu of %zu",
                   info.error_column, len);
        break;
    case BTP_E_LIMIT:            /* payload longer than any record */
    case BTP_E_LENGTH_MISMATCH:
    case BTP_E_OUT_OF_BITS:
    case BTP_E_BAD_REFERENCE:
    case BTP_E_BIT_COUNT_TOO_WIDE:
        break;
    default:
        FUZZ_CHECK(0, "undocumented status %d", st);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)fuzz_guard_copy(&in_guard, data, size);
    size_t pos = 0, next_lead = 0, calls = 0;
    for (;;) {
        FUZZ_CHECK(++calls <= size + 1, "more calls than bytes");
        size_t before = pos, start, len;
        btp_status st = btp_lws_scan(text, size, &pos, &start, &len);
        if (st == BTP_END) {
            FUZZ_CHECK(pos == size, "end at %zu of %zu", pos, size);
            for (size_t i = next_lead; i < size; i++)
                FUZZ_CHECK(!is_lead(text, size, i), "record at %zu missed", i);
            break;
        }
        FUZZ_CHECK(st == BTP_OK, "status %d", st);
        FUZZ_CHECK(start >= before && len >= 3 && start + len <= size && pos == start + len,
                   "record [%zu, +%zu) after %zu, pos %zu", start, len, before, pos);
        FUZZ_CHECK(is_lead(text, size, start), "record at %zu does not start with ~m#", start);
        for (size_t i = next_lead; i < start; i++)
            FUZZ_CHECK(!is_lead(text, size, i), "record at %zu skipped", i);
        for (size_t i = start + 3; i < start + len; i++)
            FUZZ_CHECK(record_char((unsigned char)text[i]), "0x%02x inside a record",
                       (unsigned char)text[i]);
        FUZZ_CHECK(start + len == size || !record_char((unsigned char)text[start + len]),
                   "record ends early at %zu", start + len);
        next_lead = start + len;
        decode_record(text + start, len, 32);
        decode_record(text + start, len, 64);
    }
    return 0;
}
