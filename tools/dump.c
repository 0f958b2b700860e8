/*
 * btpack dump: disassemble CBF streams, one instruction per line with its
 * byte offset, raw bytes, mnemonic, operand and the computed address.
 *
 * The library's decoder decides what is valid and where a fault is; this
 * file only splits the bytes the decoder accepted into instructions for
 * display (CBF v0 instruction layout, spec/cbf.md) and recomputes addresses
 * with the same rules: operands big-endian and sign-extended, relative
 * values added modulo the word.
 */
#include "cli.h"

#include <getopt.h>
#include <string.h>

#include "diag.h"
#include "lines.h"
#include "output.h"

static const char dump_help[] =
    "usage: btpack dump [--from hex|b64|cbf|cif] [--strict] [IN...]\n"
    "\n"
    "Disassemble CBF streams: one instruction per line with its byte offset\n"
    "(decimal: in the line's stream, or in the binary input), raw bytes,\n"
    "mnemonic, operand and the computed address. A fault is shown at its\n"
    "offset with the decoder's cause; bytes after a stream's end/trunc are\n"
    "shown as trailing bytes.\n"
    "IN defaults to stdin; several inputs are shown in turn, each headed\n"
    "`# input NAME`. Without --from, hex, b64 and cbf are told apart by the\n"
    "input itself (as `btpack convert --help` says); a binary file given as\n"
    "--from hex or b64 is one error, not one per line.\n"
    "\n"
    "options:\n"
    "  --from FMT   hex: one stream per line as hex digits\n"
    "               b64: one stream per line in base64\n"
    "               cbf: raw binary, streams back to back\n"
    "               cif: one raw binary Swift image map (CIF): each field\n"
    "               and path opcode, the prefixes paths define, every image\n"
    "  --strict     decode with the strict policy\n"
    "  -h, --help   this help\n"
    "\n"
    "mnemonics: info (information byte), end, trunc, pc/ra/async with `rel +/-delta`\n"
    "or `abs value`, omit N, rep N (extra copies of the previous frame);\n"
    "`(ext)` marks the external-count forms.\n"
    "\n"
    "examples (the worked example of the CBF notes; a one-image map):\n"
    "  echo 02111000201021ff00357fff000010f0446103e829202080111010880901 | btpack dump\n"
    "  printf '\\2\\0\\1\\11\\20\\0\\20\\0\\0\\201\\200\\6z.so.1\\0' | btpack dump --from cif\n";

void dump_line(size_t off, const uint8_t *p, size_t n, const char *mn, const char *operand,
               const char *addr)
{
    char raw[64];
    size_t o = 0;
    for (size_t i = 0; i < n && o + 4 < sizeof raw; i++) {
        if (i == 9 && n > 10) {
            o += (size_t)snprintf(raw + o, sizeof raw - o, "...");
            break;
        }
        o += (size_t)snprintf(raw + o, sizeof raw - o, "%s%02x", i ? " " : "", p[i]);
    }
    raw[o] = 0;
    /* Pad columns only when something follows them. */
    if (addr[0])
        printf("%6zu  %-26s %-6s %-22s %s\n", off, raw, mn, operand, addr);
    else if (operand[0])
        printf("%6zu  %-26s %-6s %s\n", off, raw, mn, operand);
    else
        printf("%6zu  %-26s %s\n", off, raw, mn);
}

/* Bytes of the instruction at p[0..avail): 0 if it does not fit (the
 * decoder has reported that already). */
static size_t insn_len(uint8_t op, size_t avail)
{
    size_t n = 1;
    if (op >= 0x10 && op < 0x40)
        n = 2 + (op & 7u);
    else if (op >= 0x60 && op < 0x80)
        n = 2 + (op & 0x1fu);
    else if (op >= 0x88 && op < 0x90)
        n = 2 + (op & 7u);
    return n <= avail ? n : 0;
}

static uint64_t operand_value(const uint8_t *p, size_t n, int sign)
{
    uint64_t v = (sign && (p[0] & 0x80)) ? UINT64_MAX : 0;
    for (size_t i = 0; i < n; i++)
        v = v << 8 | p[i];
    return v;
}

/*
 * Disassemble the stream at p[0..len). `single`: the input holds this one
 * stream (hex/b64 line), so bytes after its end are trailing bytes; else the
 * next stream starts there. Offsets are shown plus `base` (the stream's
 * position in a binary input). Returns BTP_END with *stop_out = the stream's
 * length, or the decoder's error with *stop_out = its byte offset.
 */
/* Decode the stream at p[0..len) run by run (O(1) per run: no
 * expansion): BTP_END with *stop its length, or the fault with *stop its
 * offset. */
static btp_status scan_stream(btp_cbf_decoder *d, const uint8_t *p, size_t len, unsigned policy,
                              size_t *stop)
{
    btp_cbf_run run;
    btp_status st = btp_cbf_decoder_init(d, p, len, policy);
    while (st == BTP_OK)
        st = btp_cbf_decoder_next(d, &run);
    *stop = st == BTP_END ? btp_cbf_decoder_consumed(d) : btp_cbf_decoder_error_offset(d);
    return st;
}

static btp_status dump_stream(const uint8_t *p, size_t len, size_t base, unsigned policy,
                              int single, size_t *stop_out)
{
    btp_cbf_decoder d;
    size_t stop;
    btp_status st = scan_stream(&d, p, len, policy, &stop);
    *stop_out = stop;
    char operand[64], addr[64];
    unsigned bits = 0;
    uint64_t mask = 0, prev = 0;
    btp_frame last = {0};
    int have_last = 0;
    size_t pos = 0;
    if (stop > 0) {
        bits = btp_cbf_decoder_word_bits(&d);
        mask = btp_word_mask(bits);
        snprintf(operand, sizeof operand, "v0 %u-bit", bits);
        dump_line(base, p, 1, "info", operand, "");
        pos = 1;
    }
    while (pos < stop) {
        uint8_t op = p[pos];
        size_t n = insn_len(op, stop - pos);
        if (n == 0)
            break; /* cannot happen below the decoder's fault offset */
        const uint8_t *q = p + pos + 1;
        operand[0] = addr[0] = 0;
        const char *mn;
        if (op == 0x00 || op == 0x01) {
            mn = op ? "trunc" : "end";
        } else if (op < 0x40) {
            int abs = (op & 0x08) != 0;
            uint64_t v = operand_value(q, n - 1, 1) & mask;
            btp_frame_kind kind = (btp_frame_kind)((op >> 4) - 1);
            mn = trace_kind_name(kind);
            if (abs)
                snprintf(operand, sizeof operand, "abs 0x%llx", (unsigned long long)v);
            else if (v >> (bits - 1))
                snprintf(operand, sizeof operand, "rel -0x%llx",
                         (unsigned long long)((0 - v) & mask));
            else
                snprintf(operand, sizeof operand, "rel +0x%llx", (unsigned long long)v);
            prev = (abs ? v : prev + v) & mask;
            snprintf(addr, sizeof addr, "0x%llx", (unsigned long long)prev);
            last = (btp_frame){prev, kind};
            have_last = 1;
        } else if (op < 0x80) {
            uint64_t c = op < 0x60 ? (uint64_t)(op & 0x1f) + 1 : operand_value(q, n - 1, 0);
            mn = "omit";
            snprintf(operand, sizeof operand, "%llu%s", (unsigned long long)c,
                     op < 0x60 ? "" : " (ext)");
            last = (btp_frame){c, BTP_FRAME_OMIT};
            have_last = 1;
        } else {
            uint64_t c = op < 0x88 ? (uint64_t)(op & 7) + 1 : operand_value(q, n - 1, 0);
            mn = "rep";
            snprintf(operand, sizeof operand, "%llu%s", (unsigned long long)c,
                     op < 0x88 ? "" : " (ext)");
            if (have_last && last.kind == BTP_FRAME_OMIT)
                snprintf(addr, sizeof addr, "(omit %llu)", (unsigned long long)last.value);
            else if (have_last)
                snprintf(addr, sizeof addr, "(%s 0x%llx)", trace_kind_name(last.kind),
                         (unsigned long long)last.value);
        }
        dump_line(base + pos, p + pos, n, mn, operand, addr);
        pos += n;
    }
    if (st != BTP_END) {
        size_t k = len - stop < 8 ? len - stop : 8;
        snprintf(operand, sizeof operand, "%s", btp_status_name(st));
        dump_line(base + stop, p + stop, k, "FAULT", operand, btp_strerror(st));
        return st;
    }
    if (btp_cbf_decoder_terminator(&d) == BTP_CBF_TERM_NONE)
        printf("%6zu  (input ends without end/trunc)\n", base + stop);
    if (single && stop < len) {
        snprintf(operand, sizeof operand, "%zu byte%s", len - stop, len - stop == 1 ? "" : "s");
        dump_line(base + stop, p + stop, len - stop, "trail", operand, "(ignored; --strict rejects)");
    }
    return BTP_END;
}

/* Disassemble one input (`from`: hex, b64, cbf, or NULL with cif).
 * Returns 1 when anything was bad (reported), else 0. */
static int dump_input(input *in, const format *from, int cif, const cli_options *opt,
                      output *out)
{
    reader r = {.fmt = from, .name = in->name, .opt = opt, .word_bits = 64, .in = in};
    strbuf bytes = STRBUF_INIT;
    int bad = 0;
    if (cif) {
        /* One image map, read whole through the window: at most the largest
         * record a binary reader takes (real maps are kilobytes). */
        const uint8_t *p = NULL;
        size_t have = 0;
        for (size_t need = 65536;; need = need < BINARY_MAX_RECORD / 2 ? need * 2
                                                                      : BINARY_MAX_RECORD + 1) {
            p = rd_bytes(&r, need, &have);
            if (r.in_end || have > BINARY_MAX_RECORD)
                break;
        }
        if (r.fatal) {
            if (!r.in_failed)
                diag(DIAG_ERROR, in->name, NULL, "%s", r.msg);
            bad = 1;
        } else if (have > BINARY_MAX_RECORD) {
            diag(DIAG_ERROR, in->name, NULL, "more than %zu bytes: not one image map",
                 BINARY_MAX_RECORD);
            bad = 1;
        } else {
            bad = dump_cif(p, have, in->name, opt->strict) < 0;
        }
        sb_free(&r.win);
    } else if (!from->line_bytes) {
        /* Binary: streams back to back, split at end/trunc, read through a
         * window that grows only while a stream runs to its edge. */
        unsigned policy = cbf_policy(opt) & ~(unsigned)BTP_CBF_REJECT_TRAILING;
        for (unsigned long long k = 1; !output_failed(out); k++) {
            const uint8_t *p = NULL;
            size_t have = 0, stop;
            for (size_t need = 256;; need *= 2) {
                btp_cbf_decoder d;
                p = rd_bytes(&r, need, &have);
                if (!have)
                    break;
                btp_status st = scan_stream(&d, p, have, policy, &stop);
                int edge = st == BTP_END ? btp_cbf_decoder_terminator(&d) == BTP_CBF_TERM_NONE
                                         : stop + 40 >= have;
                if (!edge || r.in_end || have >= BINARY_MAX_RECORD)
                    break;
                if (need < have)
                    need = have;
            }
            if (!have) {
                if (r.fatal) {
                    if (!r.in_failed)
                        diag(DIAG_ERROR, in->name, NULL, "%s", r.msg);
                    bad = 1;
                }
                break;
            }
            printf("# stream %llu at byte offset %llu\n", k, (unsigned long long)r.pos);
            size_t used = 0;
            btp_status st = dump_stream(p, have, (size_t)r.pos, policy, 0, &used);
            if (st != BTP_END) {
                src_loc loc = {.offset = r.pos + used, .has_offset = 1};
                diag(DIAG_ERROR, in->name, &loc, "%s (%s); cannot find the next stream",
                     btp_strerror(st), btp_status_name(st));
                bad = 1;
                break;
            }
            rd_skip(&r, used);
        }
        sb_free(&r.win);
    } else {
        line_reader lr;
        const char *line;
        size_t len;
        int got;
        lines_init(&lr, in);
        while (!output_failed(out) && (got = lines_next(&lr, &line, &len)) > 0) {
            if (line_is_blank(line, len))
                continue;
            r.loc = (src_loc){.line = lr.lineno};
            sb_clear(&bytes);
            if (from->line_bytes(&r, line, len, &bytes) < 0) {
                diag(DIAG_ERROR, in->name, &r.err_loc, "%s", r.msg);
                bad = 1;
                continue;
            }
            printf("# line %zu: %zu byte%s\n", lr.lineno, bytes.len, bytes.len == 1 ? "" : "s");
            size_t stop = 0;
            btp_status st = dump_stream((const uint8_t *)bytes.data, bytes.len, 0,
                                        cbf_policy(opt), 1, &stop);
            if (st != BTP_END) {
                r.loc.offset = stop;
                r.loc.has_offset = 1;
                diag(DIAG_ERROR, in->name, &r.loc, "%s (%s)", btp_strerror(st),
                     btp_status_name(st));
                bad = 1;
            }
        }
        if (got < 0)
            bad = 1;
        lines_free(&lr);
    }
    sb_free(&bytes);
    return bad;
}

int cmd_dump(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"from", required_argument, NULL, 'f'},
        {"strict", no_argument, NULL, 's'},
        {"help", no_argument, NULL, 'h'},
        {0, 0, 0, 0},
    };
    cli_options opt = {.word_bits = 64, .max_frames = CLI_DEFAULT_MAX_FRAMES};
    const format *from = NULL;
    int ch, bad = 0, cif = 0;
    opterr = 0;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (ch) {
        case 'f':
            if (strcmp(optarg, "cif") == 0) {
                cif = 1;
                break;
            }
            if (cli_format_arg("dump", optarg, 1, 0, &from) < 0)
                return EXIT_USAGE;
            if (!from->line_bytes && strcmp(from->name, "cbf") != 0)
                return cli_usage_error("dump", "--from must be hex, b64 or cbf");
            break;
        case 's':
            opt.strict = 1;
            break;
        case 'h':
            fputs(dump_help, stdout);
            return EXIT_OK;
        default:
            return cli_bad_option("dump", argv);
        }
    }
    output out;
    output_stdio(&out);
    int n = argc - optind;
    for (int i = 0; i < (n ? n : 1) && !output_failed(&out); i++) {
        input in;
        if (input_open(&in, n ? argv[optind + i] : NULL) < 0) {
            bad = 1;
            input_close(&in);
            continue;
        }
        if (n > 1)
            printf("%s# input %s\n", i ? "\n" : "", in.name);
        const format *f = from;
        if (!f && !cif && (f = format_detect(&in)) && !f->line_bytes && f != format_find("cbf")) {
            diag(DIAG_ERROR, in.name, NULL, "input in %s format; dump reads CBF streams "
                 "(hex, b64, cbf) and Swift image maps (--from cif)", f->name);
            f = NULL;
        }
        if (cif || (f && format_check_text(&in, f) == 0))
            bad |= dump_input(&in, f, cif, &opt, &out);
        else
            bad = 1;
        input_close(&in);
    }
    if (output_close(&out, 1) < 0)
        bad = 1;
    return bad ? EXIT_BAD_INPUT : EXIT_OK;
}
