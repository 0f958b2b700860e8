/* The one status enum: names and messages. */
#include <btpack/btpack.h>

struct status_text {
    btp_status status;
    const char *name;
    const char *message;
};

/* Kept in one table so a new status is added in exactly one place. */
static const struct status_text texts[] = {
    {BTP_OK, "ok", "success"},
    {BTP_END, "end", "end of stream"},
    {BTP_E_INVALID_ARGUMENT, "invalid_argument", "invalid argument"},
    {BTP_E_BUFFER_TOO_SMALL, "buffer_too_small", "output buffer too small"},
    {BTP_E_OUT_OF_MEMORY, "out_of_memory", "out of memory"},
    {BTP_E_IO, "io", "input/output error"},
    {BTP_E_LIMIT, "limit", "a configured limit was exceeded"},
    {BTP_E_UNSUPPORTED, "unsupported", "not supported by this build"},
    {BTP_E_SYNTAX, "syntax", "malformed text input"},
    {BTP_E_VALUE_TOO_WIDE, "value_too_wide", "value does not fit the word size"},
    {BTP_E_ZERO_COUNT, "zero_count", "count of zero where at least one is required"},
    {BTP_E_EMPTY_INPUT, "empty_input", "empty input: no information byte"},
    {BTP_E_BAD_VERSION, "bad_version", "unsupported CBF version"},
    {BTP_E_RESERVED_SIZE, "reserved_size", "reserved word size in information byte"},
    {BTP_E_RESERVED_OPCODE, "reserved_opcode", "reserved opcode"},
    {BTP_E_TRUNCATED_OPERAND, "truncated_operand", "input ends inside an operand"},
    {BTP_E_ADDRESS_TOO_WIDE, "address_too_wide", "address operand wider than the word"},
    {BTP_E_COUNT_TOO_WIDE, "count_too_wide", "external count wider than the word"},
    {BTP_E_REP_WITHOUT_FRAME, "rep_without_frame", "rep with no frame before it"},
    {BTP_E_FIRST_ADDRESS_RELATIVE, "first_address_relative",
     "first address is relative (strict mode requires absolute)"},
    {BTP_E_TRAILING_BYTES, "trailing_bytes", "bytes after the end of the stream"},
    {BTP_E_BAD_BASE64, "bad_base64", "invalid base64"},
    {BTP_E_LENGTH_MISMATCH, "length_mismatch", "length trailer does not match the payload size"},
    {BTP_E_OUT_OF_BITS, "out_of_bits", "bitstream ends inside a field"},
    {BTP_E_BAD_REFERENCE, "bad_reference", "reference to a frame that does not exist yet"},
    {BTP_E_BIT_COUNT_TOO_WIDE, "bit_count_too_wide", "bit count larger than the word"},
    {BTP_E_DEPTH_TOO_LARGE, "depth_too_large", "more frames than the format can hold"},
    {BTP_E_UNREPRESENTABLE, "unrepresentable", "frame or value the format cannot express"},
    {BTP_E_BAD_MAGIC, "bad_magic", "not a btpack trace log"},
    {BTP_E_BAD_LOG_VERSION, "bad_log_version", "unsupported trace log version or feature"},
    {BTP_E_CHECKSUM, "checksum", "block checksum mismatch"},
    {BTP_E_CORRUPT, "corrupt", "corrupt block contents"},
    {BTP_E_TRUNCATED_FILE, "truncated_file", "file ends inside a block"},
    {BTP_E_NO_ZLIB, "no_zlib", "compressed block, but this build has no zlib"},
    {BTP_E_ZLIB, "zlib", "zlib error"},
    {BTP_E_NO_LZMA, "no_lzma", "LZMA-compressed block, but this build has no liblzma"},
    {BTP_E_LZMA, "lzma", "liblzma error"},
    {BTP_E_NO_METHOD, "no_method", "stack capture method not available"},
    {BTP_E_CIF_TRUNCATED, "cif_truncated", "image map ends inside a field"},
    {BTP_E_CIF_BAD_VERSION, "cif_bad_version", "unsupported image map (CIF) version"},
    {BTP_E_CIF_RESERVED_SIZE, "cif_reserved_size", "reserved word size in image map information byte"},
    {BTP_E_CIF_COUNT_TOO_WIDE, "cif_count_too_wide", "image map count does not fit 63 bits"},
    {BTP_E_CIF_BAD_PREFIX, "cif_bad_prefix", "path refers to an undefined prefix code"},
    {BTP_E_CIF_NUL_IN_STRING, "cif_nul_in_string", "NUL byte in an image path or the platform"},
    {BTP_E_CIF_BAD_RANGE, "cif_bad_range", "end of text below the image's base address"},
    {BTP_E_CIF_RESERVED_BIT, "cif_reserved_bit", "reserved bit set in an image header"},
    {BTP_E_CIF_EMPTY_TEXT, "cif_empty_text", "end of text equal to the image's base address"},
    {BTP_E_CIF_BAD_UTF8, "cif_bad_utf8", "image path or platform is not valid UTF-8"},
    {BTP_E_CIF_BUILD_ID_TOO_LONG, "cif_build_id_too_long", "build ID longer than 1024 bytes"},
    {BTP_E_CIF_STRING_TOO_LONG, "cif_string_too_long", "platform string longer than 255 bytes"},
    {BTP_E_MAPS_SYNTAX, "maps_syntax", "malformed /proc/PID/maps line"},
    {BTP_E_IMAGE_SYNTAX, "image_syntax", "malformed image line"},
    {BTP_E_BAD_NOTE, "bad_note", "ELF note runs past its area"},
    {BTP_E_HEAP_FOREIGN, "heap_foreign",
     "pointer has no valid allocation header (not from this heap, or freed twice)"},
    {BTP_E_HEAP_CORRUPT, "heap_corrupt", "allocation list is damaged"},
    {BTP_E_CM_FRAME_BOUNDS, "cm_frame_bounds",
     "exception frame outside the stack bounds given"},
    {BTP_E_CM_EXC_RETURN, "cm_exc_return", "not an EXC_RETURN value"},
    {BTP_E_RECORDS_LOST, "records_lost", "records of the log are missing"},
    {BTP_E_NODES_LIMIT, "nodes_limit", "the log's call tree is larger than the reader's limit"},
    {BTP_E_LIVE_LIMIT, "live_limit",
     "the log tracks more live allocations than the reader's limit"},
    {BTP_E_EXPANSION_LIMIT, "expansion_limit",
     "the log expands to more work per byte than the reader's limit"},
    {BTP_E_META_LIMIT, "meta_limit", "the log holds more metadata than the reader keeps"},
};

static const struct status_text *find(btp_status s)
{
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
        if (texts[i].status == s)
            return &texts[i];
    return NULL;
}

const char *btp_strerror(btp_status status)
{
    const struct status_text *t = find(status);
    return t ? t->message : "unknown status";
}

const char *btp_status_name(btp_status status)
{
    const struct status_text *t = find(status);
    return t ? t->name : "unknown";
}

const char *btp_version(void)
{
    return BTP_VERSION_STRING;
}
