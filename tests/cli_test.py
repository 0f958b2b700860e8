#!/usr/bin/env python3
"""CLI tests: run the real `btpack` binary on small inputs.

usage: cli_test.py BTPACK

Prints "N passed, N failed" and exits non-zero on failure, like the C tests.
"""
import base64
import os
import subprocess
import sys
import tempfile
import time

from pycheck import check, finish

BTPACK = sys.argv[1]


def run(args, stdin=b"", timeout=60):
    """Run btpack; returns (status, stdout bytes, stderr text)."""
    p = subprocess.run([BTPACK] + args, input=stdin, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=timeout)
    return p.returncode, p.stdout, p.stderr.decode("utf-8", "replace")


def conv(frm, to, data, *extra):
    return run(["convert", "--from", frm, "--to", to] + list(extra), data)


# The worked example of the CBF notes (Swift's own test, 64-bit).
EXAMPLE_HEX = "02111000201021ff00357fff000010f0446103e8292020801110108809" "01"
EXAMPLE_JSON = (
    '{"word_bits":64,"frames":['
    '{"type":"pc","addr":"0x1000"},{"type":"ra","addr":"0x1010"},'
    '{"type":"ra","addr":"0xf10"},{"type":"async","addr":"0x7fff00002000"},'
    '{"type":"omit","count":5},{"type":"omit","count":1000},'
    '{"type":"ra","addr":"0x2020"},{"type":"ra","addr":"0x2020"},'
    + ",".join(['{"type":"pc","addr":"0x3030"}'] * 10)
    + '],"truncated":true}\n')
EXAMPLE_ADDRS = ("pc:0x1000 0x1010 0xf10 async:0x7fff00002000 omit:5 omit:1000 0x2020 0x2020 "
                 + " ".join(["pc:0x3030"] * 10) + " trunc\n")
# Its disassembly, checked by hand against the notes' reading of each instruction.
EXAMPLE_DUMP = """\
# line 1: 30 bytes
     0  02                         info   v0 64-bit
     1  11 10 00                   pc     rel +0x1000            0x1000
     4  20 10                      ra     rel +0x10              0x1010
     6  21 ff 00                   ra     rel -0x100             0xf10
     9  35 7f ff 00 00 10 f0       async  rel +0x7fff000010f0    0x7fff00002000
    16  44                         omit   5
    17  61 03 e8                   omit   1000 (ext)
    20  29 20 20                   ra     abs 0x2020             0x2020
    23  80                         rep    1                      (ra 0x2020)
    24  11 10 10                   pc     rel +0x1010            0x3030
    27  88 09                      rep    9 (ext)                (pc 0x3030)
    29  01                         trunc
"""

# Traces for the every-pair test, one set per word size (formats such as
# addrs do not carry the word size: --word-bits gives it). RICH uses every
# frame kind; PLAIN only return addresses (what every format, including
# narrower ones, can hold).
RICH = [
    (64, EXAMPLE_JSON +
     '{"word_bits":64,"frames":[{"type":"ra","addr":"0xffffffffffffffff"}],"truncated":false}\n'),
    (32, '{"word_bits":32,"frames":[{"type":"ra","addr":"0xb6f01234"},'
     '{"type":"ra","addr":"0x12345"},{"type":"omit","count":40},'
     '{"type":"async","addr":"0xffffffff"}],"truncated":false}\n'),
    (16, '{"word_bits":16,"frames":[{"type":"pc","addr":"0xffff"},{"type":"ra","addr":"0x0"}],'
     '"truncated":true}\n'),
]
PLAIN = [
    (64, '{"word_bits":64,"frames":[{"type":"ra","addr":"0x55710c32d94a"},'
     '{"type":"ra","addr":"0x7ff1ff7d9c7f"},{"type":"ra","addr":"0x55710c32d94a"}],'
     '"truncated":false}\n'
     '{"word_bits":64,"frames":[{"type":"ra","addr":"0x401000"}],"truncated":false}\n'),
    (32, '{"word_bits":32,"frames":[{"type":"ra","addr":"0x5668f08d"},'
     '{"type":"ra","addr":"0xf7763398"}],"truncated":false}\n'),
]


def formats_from_help():
    """(name, readable, writable) of every format `btpack --help` lists."""
    rc, out, _ = run(["--help"])
    check(rc == 0, "btpack --help exits 0")
    lines = out.decode().splitlines()
    start = lines.index("formats:") + 1
    fmts = []
    for line in lines[start:]:
        if not line.startswith("  "):
            break
        name = line.split()[0]
        fmts.append((name, "[output only]" not in line, "[input only]" not in line))
    return fmts


def test_exact_outputs():
    rc, out, err = conv("hex", "json", (EXAMPLE_HEX + "\n").encode())
    check(rc == 0 and out.decode() == EXAMPLE_JSON, "hex -> json exact text: %r %s" % (out, err))
    rc, out, _ = conv("hex", "addrs", (EXAMPLE_HEX + "\n").encode())
    check(rc == 0 and out.decode() == EXAMPLE_ADDRS, "hex -> addrs exact text: %r" % out)
    # Minimal re-encoding: the first address absolute (same length as Swift's).
    rc, out, _ = conv("json", "hex", EXAMPLE_JSON.encode())
    check(rc == 0 and out.decode() == "02191000201021ff00357fff000010f0446103e829202080111010880901\n",
          "json -> hex minimal: %r" % out)
    rc, out, _ = conv("hex", "b64", b"02111000201001\n")
    check(rc == 0 and out == b"AhkQACAQAQ\n", "b64 has no padding: %r" % out)
    rc, out, err = run(["dump", "-"], (EXAMPLE_HEX + "\n").encode())
    check(rc == 0 and out.decode() == EXAMPLE_DUMP, "dump of the worked example:\n%s%s" %
          (out.decode(), err))


def sized(data, src_json):
    """Formats that always carry an allocation size (lws, lws-b) give traces
    without one the default size 0 (--alloc-size): drop it again to compare."""
    if b'"alloc_size"' in src_json.encode():
        return data
    return data.replace(b',"alloc_size":0}', b'}')


def canon(fmt, data, src_json, wbits):
    """What to compare of a rendering: sized() text; a log (binary, one with
    a size stores an allocation record, one without a plain trace) as the
    json it reads back as."""
    if fmt == "log":
        rc, data, _ = conv("log", "json", data, *wbits)
    return sized(data, src_json)


def test_every_pair():
    fmts = formats_from_help()
    names = [f[0] for f in fmts]
    for must in ["json", "hex", "b64", "cbf", "addrs", "trace"]:
        check(must in names, "format %s listed in --help" % must)
    core = {"json", "hex", "b64", "cbf", "addrs"}
    # Formats that hold allocation records only (size and pointer) cannot take
    # these plain traces; tests/log/log_cli.py runs them on allocation records.
    alloc_only = {"trace"}
    fmts = [f for f in fmts if f[0] not in alloc_only]
    sets = [(wb, js, True) for wb, js in RICH] + [(wb, js, False) for wb, js in PLAIN]
    for wb, src_json, only_core in sets:
        wbits = ["--word-bits", str(wb)]
        # Each readable and writable format's rendering of the traces.
        rendered = {}
        for name, readable, writable in fmts:
            if readable and writable and (name in core or not only_core):
                rc, out, err = conv("json", name, src_json.encode(), *wbits)
                check(rc == 0, "json -> %s: %s" % (name, err))
                rendered[name] = out
        for frm, data in rendered.items():
            for to, readable, writable in fmts:
                if not writable or (only_core and to not in core):
                    continue
                rc, out, err = conv(frm, to, data, *wbits)
                check(rc == 0, "%s -> %s exits 0: %s" % (frm, to, err))
                if to in rendered:
                    check(canon(to, out, src_json, wbits) ==
                          canon(to, rendered[to], src_json, wbits),
                          "%d-bit: %s -> %s equals json -> %s" %
                          (wb, frm, to, to))
                if readable:
                    rc, back, err = conv(to, "json", out, *wbits)
                    check(rc == 0 and sized(back, src_json).decode() == src_json,
                          "%d-bit: %s -> %s -> json round trip: %s %r" %
                          (wb, frm, to, err, back[:200]))


def test_trace_format():
    data = (b"# stkshim v1 method=x word=32 pid=1 comm=a every=1 maxdepth=256\n"
            b"m 32 0x57d231a0 0x5668f08d 0x56650a02\n"
            b"f 0x57d231a0\n"
            b"\n"
            b"m 7 0x10 0xf7763398\n"
            b"# end alloc_calls=2 traces=2 frees=1 truncated=0 stopped_early=0\n")
    rc, out, err = conv("trace", "addrs", data)
    check(rc == 0 and out == b"0x5668f08d 0x56650a02\n0xf7763398\n", "trace -> addrs: %r %s" %
          (out, err))
    rc, out, _ = conv("trace", "json", data)
    check(rc == 0 and out.decode().splitlines()[1] ==
          '{"word_bits":32,"frames":[{"type":"ra","addr":"0xf7763398"}],"truncated":false,'
          '"alloc_size":7}', "trace -> json keeps word size and alloc size: %r" % out)
    rc, out, _ = conv("json", "json", out)
    check(rc == 0 and b'"alloc_size":32' in out, "json alloc_size read back")
    rc, out, err = conv("trace", "hex", data.replace(b"0x56650a02", b"0x156650a02"))
    check(rc == 1 and ":2:" in err and "does not fit 32 bits" in err and out == b"",
          "64-bit address in a 32-bit trace: %s" % err)
    rc, out, err = conv("trace", "hex", b"m 1 0x1 0x2\nx 1\n")
    check(rc == 1 and ":2:" in err and out.count(b"\n") == 1, "bad record line: %s" % err)
    rc, _, err = conv("hex", "trace", b"0200\n")
    check(rc == 1 and "allocation records" in err, "trace holds allocations only: %s" % err)


def test_errors():
    # Text: the message names the input, the line and the cause; nothing is
    # written for the bad trace; the good ones before it are.
    data = b"02111000201001\n\n   \r\n0211\n02191000\n"
    rc, out, err = conv("hex", "addrs", data)
    check(rc == 1, "bad hex exits 1")
    check("btpack: <stdin>:4: byte offset 1: " in err and "truncated_operand" in err,
          "hex error names line 4 and offset 1: %s" % err)
    check(out == b"pc:0x1000 0x1010 trunc\n", "only the trace before the error: %r" % out)
    # --keep-going: bad traces skipped with a warning, the rest written, exit 1.
    rc, out, err = conv("hex", "addrs", data + b"zz\n", "--keep-going")
    check(rc == 1, "--keep-going exits 1")
    check(out == b"pc:0x1000 0x1010 trunc\npc:0x1000\n", "--keep-going writes the good: %r" % out)
    check("warning" in err and ":4:" in err and ":6:" in err and "not a hex digit" in err,
          "--keep-going warnings: %s" % err)
    rc, _, err = conv("hex", "addrs", b"021\n")
    check(rc == 1 and ":1:" in err and "odd number of hex digits" in err, "odd hex: %s" % err)
    # Binary: byte offsets into the input.
    cbf = bytes.fromhex("02191000201001") + bytes.fromhex("0219100090")
    rc, out, err = conv("cbf", "addrs", cbf)
    check(rc == 1 and "byte offset 11" in err and "reserved_opcode" in err,
          "cbf error at byte offset 11: %s" % err)
    check(out == b"pc:0x1000 0x1010 trunc\n", "cbf: the stream before the fault: %r" % out)
    rc, _, err = conv("json", "hex", b'{"word_bits":64,"frames":[{"type":"xx"}]}\n')
    check(rc == 1 and ":1:" in err and "type" in err, "bad json frame: %s" % err)
    rc, _, err = conv("json", "hex", b'\n{"frames":[}\n')
    check(rc == 1 and ":2: column 12" in err, "json syntax error names line and column: %s" % err)
    rc, _, err = conv("json", "hex", b'{"word_bits":16,"frames":[{"type":"ra","addr":"0x10000"}]}')
    check(rc == 1 and "does not fit 16 bits" in err, "address too wide for the word: %s" % err)
    rc, _, err = conv("json", "hex", b'{"frames":[{"type":"omit","count":0}]}')
    check(rc == 1 and "count of zero" in err, "omit 0 cannot be written as CBF: %s" % err)
    rc, out, err = conv("hex", "json", b"02600000\n")
    check(rc == 0 and b'{"type":"omit","count":0}' in out,
          "an external omit count of 0 decodes (default policy): %r %s" % (out, err))
    rc, _, err = conv("hex", "json", b"02600000\n", "--strict")
    check(rc == 1 and "zero_count" in err, "--strict refuses it: %s" % err)
    rc, _, err = conv("addrs", "hex", b"0x10 0xzz\n")
    check(rc == 1 and ":1: token 2" in err, "bad addrs token: %s" % err)
    rc, _, err = conv("addrs", "hex", b"0x10 trunc 0x20\n")
    check(rc == 1 and "last token" in err, "trunc not last: %s" % err)
    rc, _, err = conv("json", "hex", b'{"word_bits":4294967360,"frames":[]}')
    check(rc == 1 and "word_bits" in err, "word_bits 2^32+64 rejected: %s" % err)
    rc, _, err = conv("addrs", "hex", b"0x10000\n", "--word-bits", "16")
    check(rc == 1 and "does not fit 16 bits" in err, "--word-bits applies to addrs: %s" % err)


def test_limits():
    # A rep of 2^63 copies: an error at once, never an allocation or a hang.
    t0 = time.monotonic()
    rc, out, err = conv("hex", "json", b"0218108f7fffffffffffffff00\n")
    check(rc == 1 and out == b"" and "--max-frames" in err, "huge rep errors: %s" % err)
    check(time.monotonic() - t0 < 10, "huge rep errors quickly")
    rc, _, err = run(["stats"], b"0218108f7fffffffffffffff00\n", timeout=10)
    check(rc == 1 and "--max-frames" in err, "stats: huge rep errors: %s" % err)
    rc, out, _ = conv("hex", "addrs", b"0218108100\n", "--max-frames", "2")
    check(rc == 1 and out == b"", "3 frames > --max-frames 2")
    rc, out, _ = conv("hex", "addrs", b"0218108100\n", "--max-frames", "3")
    check(rc == 0 and out == b"pc:0x10 pc:0x10 pc:0x10\n", "3 frames = --max-frames 3: %r" % out)
    rc, _, err = conv("hex", "addrs", b"", "--max-frames", "0")
    check(rc == 2, "--max-frames 0 is a usage error")


def test_b64_input():
    raw = bytes.fromhex(EXAMPLE_HEX)
    std = base64.b64encode(raw)
    check(b"+" in std and b"/" in std, "example's base64 uses + and /")
    url = base64.urlsafe_b64encode(raw)
    short = base64.b64encode(bytes.fromhex("02111000201001"))
    check(short.endswith(b"=="), "padded input")
    for text in [std, url]:
        rc, out, err = conv("b64", "json", text + b"\n")
        check(rc == 0 and out.decode() == EXAMPLE_JSON, "b64 %r: %s" % (text[:12], err))
    rc, out, err = conv("b64", "hex", short + b"\n")
    check(rc == 0 and out == b"02191000201001\n", "b64 padded: %r %s" % (out, err))
    rc, out, err = conv("b64", "hex", short.rstrip(b"=") + b"\n")
    check(rc == 0 and out == b"02191000201001\n", "b64 unpadded: %r %s" % (out, err))
    rc, _, err = conv("b64", "hex", b"AhE*\n")
    check(rc == 1 and ":1: column 4" in err, "bad base64 character: %s" % err)


def test_cbf_streams():
    a, b = "02191000201001", "012b1234567800"
    rc, out, err = conv("hex", "cbf", ("%s\n%s\n" % (a, b)).encode())
    check(rc == 0 and out == bytes.fromhex(a + b), "cbf output back to back: %r" % out)
    rc, out, err = conv("cbf", "hex", bytes.fromhex(a + b))
    check(rc == 0 and out.decode() == "%s\n%s\n" % (a, b), "cbf input split: %r %s" % (out, err))
    # Strict: each stream checked, but streams may follow each other.
    rc, out, err = conv("cbf", "hex", bytes.fromhex(a + b), "--strict")
    check(rc == 0 and out.decode() == "%s\n%s\n" % (a, b), "strict cbf back to back: %s" % err)
    # A stream with a relative first address (as Swift writes): lenient ok, strict not.
    rc, out, _ = conv("hex", "hex", b"02111000201001\n")
    check(rc == 0 and out == b"02191000201001\n", "relative first address read by default")
    rc, out, err = conv("hex", "hex", b"02111000201001\n", "--strict")
    check(rc == 1 and "first_address_relative" in err, "strict: relative first: %s" % err)
    # Bytes after end on a hex line: ignored by default, an error with --strict.
    rc, out, _ = conv("hex", "hex", b"021910000000\n")
    check(rc == 0 and out == b"0219100000\n", "trailing bytes ignored by default: %r" % out)
    rc, out, err = conv("hex", "hex", b"021910000000\n", "--strict")
    check(rc == 1 and "byte offset 5" in err and "trailing_bytes" in err,
          "strict: trailing bytes: %s" % err)
    rc, out, err = run(["dump", "--from", "cbf"], bytes.fromhex(a + b))
    check(rc == 0 and b"# stream 2 at byte offset 7" in out and b"abs 0x12345678" in out,
          "dump of back-to-back streams: %s" % out.decode())
    rc, out, err = run(["dump"], b"021910000000\n")
    check(rc == 0 and b"trail" in out, "dump shows trailing bytes: %s" % out.decode())
    rc, out, err = run(["dump"], b"021910009a\n")
    check(rc == 1 and b"FAULT  reserved_opcode" in out and ":1: byte offset 4" in err,
          "dump shows the fault: %s %s" % (out.decode(), err))


def test_io():
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "in.addrs")
        dst = os.path.join(d, "out.json")
        with open(src, "w") as f:
            f.write("# a comment\n0x10 0x20\n  # indented comment\n\npc:0x30 omit:3 trunc\n")
        rc, out, err = run(["convert", "--from", "addrs", "--to", "json", "-o", dst, src])
        check(rc == 0 and out == b"", "-o writes nothing to stdout: %s" % err)
        with open(dst) as f:
            got = f.read()
        check(got == '{"word_bits":64,"frames":[{"type":"ra","addr":"0x10"},'
              '{"type":"ra","addr":"0x20"}],"truncated":false}\n'
              '{"word_bits":64,"frames":[{"type":"pc","addr":"0x30"},{"type":"omit","count":3}],'
              '"truncated":true}\n', "addrs with comments -> json file: %r" % got)
        rc, out, _ = run(["convert", "--from", "json", "--to", "addrs", "-"], got.encode())
        check(rc == 0 and out == b"0x10 0x20\npc:0x30 omit:3 trunc\n", "stdin via '-'")
        rc, _, err = run(["convert", "--from", "hex", "--to", "json", os.path.join(d, "nope")])
        check(rc == 1 and "nope" in err and "cannot open" in err, "missing input: %s" % err)
        # xz input is decompressed on the fly (when the tool has liblzma).
        try:
            import lzma
            xz = lzma.compress(b"02191000201001\n")
            rc, out, err = conv("hex", "addrs", xz)
            check((rc == 0 and out == b"pc:0x1000 0x1010 trunc\n") or
                  (rc == 1 and "xz -dc" in err), "xz input: %r %s" % (out, err))
        except ImportError:
            pass


def test_stats():
    rc, out, err = run(["stats", "--from", "hex"], b"02191000201001\n0119123400\n")
    text = out.decode()
    check(rc == 0, "stats exits 0: %s" % err)
    for want in ["traces          2", "frames          3", "truncated       1",
                 "CBF bytes       12", "bytes/frame     4.000", "bytes/trace     6.0",
                 "depth           min 1  median 2  mean 1.5  max 2", "word size       32 64"]:
        check(want in text, "stats shows %r:\n%s" % (want, text))


def test_usage():
    for sub in ["convert", "dump", "stats"]:
        rc, out, _ = run([sub, "--help"])
        check(rc == 0 and b"usage: btpack " + sub.encode() in out and b"example" in out,
              "%s --help" % sub)
    rc, out, _ = run(["convert", "--help"])
    check(b"input formats:" in out and b"  addrs" in out and b"output formats:" in out,
          "convert --help lists formats")
    rc, out, _ = run(["--version"])
    check(rc == 0 and out.startswith(b"btpack "), "--version: %r" % out)
    for args in [["convert", "--from", "nope", "--to", "hex"], ["convert", "--bogus"],
                 ["convert", "--from", "hex"], ["nocommand"], ["dump", "--from", "json"],
                 ["stats", "--word-bits", "12"], []]:
        rc, _, err = run(args)
        check(rc == 2 and "btpack" in err, "usage error exits 2: %s %s" % (args, err))


for t in [test_exact_outputs, test_every_pair, test_trace_format, test_errors, test_limits,
          test_b64_input, test_cbf_streams, test_io, test_stats, test_usage]:
    t()
finish()
