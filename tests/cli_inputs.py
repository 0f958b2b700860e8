#!/usr/bin/env python3
"""How the commands take their inputs, through the real `btpack`:

- several inputs, read in order as one (convert, stats, dump, symbolize,
  heapmap), messages naming the input; -o may be none of them;
- --from read from the input when it is not given (every readable format,
  xz, stdin, a pipe that is not waited on), an explicit --from winning, and
  an error asking for --from when the input does not say;
- a binary file read as hex or base64: one message that says what it seems
  to be, not one per line;
- --elf FILE that cannot be read: an error (status 1, nothing read) for
  every command that takes it;
- --keep-going: warnings with the same cause capped, with a count of the
  rest and where they were;
- -v/--progress (convert, stats, symbolize, heap report and map): bytes, records and their
  rates on a terminal (a pty),
  nothing when stderr is not one or without the option.

usage: cli_inputs.py BTPACK DATA_DIR
"""
import json
import lzma
import os
import pty
import select
import subprocess
import sys
import tempfile
import time

from pycheck import check, finish

BTPACK, DATA = sys.argv[1], sys.argv[2]
LOG = os.path.join(DATA, "log", "synthetic-zlib.btlog")
CRASHLOG = os.path.join(DATA, "swift", "crash-threads.log")


def run(args, stdin=b"", cwd=None):
    p = subprocess.run([BTPACK] + args, input=stdin, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=60, cwd=cwd)
    return p.returncode, p.stdout, p.stderr.decode("utf-8", "replace")


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)
    return path


HEX = ["02191000201021ff0000", "02191000201001", "0219100000"]


def lws_record():
    """A ~m# line of the first of HEX."""
    rc, out, err = run(["convert", "--from", "hex", "--to", "lws"], (HEX[0] + "\n").encode())
    check(rc == 0 and out.startswith(b"~m#"), "making a ~m# record: %s" % err)
    return out


def test_several_inputs(d):
    cbf = [write(os.path.join(d, "%s.cbf" % n), bytes.fromhex(h)) for n, h in zip("abc", HEX)]
    one = [run(["convert", "--from", "cbf", "--to", "json", p])[1] for p in cbf]
    rc, out, err = run(["convert", "--from", "cbf", "--to", "json"] + cbf)
    check(rc == 0 and out == b"".join(one), "convert a b c: the concatenation: %d %r %s"
          % (rc, out, err))
    # into a log and back: one log holding all three in order
    log = os.path.join(d, "abc.btlog")
    rc, _, err = run(["convert", "--from", "cbf", "--to", "log", "-o", log] + cbf)
    rc2, out, _ = run(["convert", "--from", "log", "--to", "hex", log])
    check(rc == 0 and rc2 == 0 and out.decode().split() == HEX,
          "three inputs into one log: %r %s" % (out, err))
    # stdin among them, as `-`
    rc, out, _ = run(["convert", "--from", "cbf", "--to", "json", cbf[0], "-", cbf[2]],
                     stdin=bytes.fromhex(HEX[1]))
    check(rc == 0 and out == b"".join(one), "convert a - c: %d %r" % (rc, out))
    # an input that cannot be opened: named; it stops the rest without
    # --keep-going, not with it
    missing = os.path.join(d, "missing.cbf")
    rc, out, err = run(["convert", "--from", "cbf", "--to", "json", cbf[0], missing, cbf[2]])
    check(rc == 1 and "missing.cbf: cannot open" in err and out == one[0],
          "a missing input stops: %d %r %s" % (rc, out, err))
    rc, out, err = run(["convert", "--keep-going", "--from", "cbf", "--to", "json", cbf[0],
                        missing, cbf[2]])
    check(rc == 1 and "missing.cbf: cannot open" in err and out == one[0] + one[2],
          "--keep-going reads on past a missing input: %d %r %s" % (rc, out, err))
    # a bad record names its input
    bad = write(os.path.join(d, "bad.cbf"), bytes.fromhex("0219"))
    rc, out, err = run(["convert", "--from", "cbf", "--to", "json", cbf[0], bad])
    check(rc == 1 and "bad.cbf: byte offset" in err, "a bad record names its file: %s" % err)
    # -o that is one of the inputs, not only the first
    rc, _, err = run(["convert", "--from", "cbf", "--to", "cbf", "-o", cbf[2], cbf[0], cbf[2]])
    check(rc == 2 and "is the input" in err and open(cbf[2], "rb").read() == bytes.fromhex(HEX[2]),
          "-o the second input is refused: %d %s" % (rc, err))
    # stats counts them together
    rc, out, err = run(["stats", "--from", "cbf"] + cbf)
    check(rc == 0 and b"traces          3\n" in out and b"frames          6\n" in out,
          "stats a b c: %r %s" % (out, err))
    # a trace log among them gets its own report
    rc, out, err = run(["stats", cbf[0], LOG])
    check(rc == 0 and ("==> %s <==" % LOG).encode() in out and b"==> the other inputs <==" in out
          and b"traces          1\n" in out, "stats a.cbf LOG: %r %s" % (out[-300:], err))
    # dump heads each input
    rc, out, err = run(["dump", "--from", "cbf"] + cbf[:2])
    text = out.decode()
    check(rc == 0 and text.startswith("# input %s\n# stream 1" % cbf[0])
          and "\n# input %s\n# stream 1" % cbf[1] in text, "dump a b: %s %s" % (text, err))
    # symbolize numbers traces on across inputs
    rc, out, err = run(["symbolize", "--from", "cbf", "--to", "json"] + cbf)
    lines = out.decode().splitlines()
    check(rc == 0 and len(lines) == 3, "symbolize a b c: %d traces: %s" % (len(lines), err))
    # heapmap reads every log given
    lws = write(os.path.join(d, "dev.log"), b"[0] N: heap: " + lws_record())
    rc1, out1, _ = run(["heapmap", "--elf", BTPACK, lws])
    rc2, out2, err = run(["heapmap", "--elf", BTPACK, lws, lws])
    check(rc1 == 0 and rc2 == 0 and out2.count(b"\n") > out1.count(b"\n"),
          "heapmap LOG LOG: %d %d %s" % (rc1, rc2, err))
    # a log with no ~m# record is not a heap of 0 bytes
    plain = write(os.path.join(d, "plain.log"), b"[0] N: boot\n[1] N: link up\n")
    for args in ([plain], [plain, plain], []):
        rc, out, err = run(["heapmap", "--elf", BTPACK] + args)
        check(rc == 1 and not out and "no libwebsockets ~m# record" in err and
              (len(args) != 1 or plain in err), "heapmap %s without records: %d %r %s" %
              (args, rc, out[:80], err))


def samples(d):
    """A file per readable format (name, path), the same two traces in each
    format that can be written, plus the read-only ones."""
    src = write(os.path.join(d, "src.hex"), ("\n".join(HEX[:2]) + "\n").encode())
    out = []
    for fmt in ["json", "hex", "b64", "cbf", "addrs", "log", "lws", "lws-b", "swift"]:
        path = os.path.join(d, "sample." + fmt)
        args = ["convert", "--from", "hex", "--to", fmt, "-o", path, src]
        if fmt.startswith("lws"):
            args += ["--allow-truncated"]
        rc, _, err = run(args)
        check(rc == 0, "making the %s sample: %s" % (fmt, err))
        out.append((fmt, path))
    trace = write(os.path.join(d, "sample.trace"),
                  b"# stkshim v1 word=64\nm 16 0x1000 0x401000 0x402000\nf 0x1000\n")
    crash = write(os.path.join(d, "sample.crash"),
                  b"program output\nbtpack-crash v2 signal=11\ncbf " + HEX[0].encode()
                  + b"\nend\n")
    out += [("trace", trace), ("crash", crash), ("swift-crashlog", CRASHLOG)]
    return out


def readable_formats():
    """The formats `btpack --help` lists that can be read."""
    rc, out, _ = run(["--help"])
    lines = out.decode().split("\nformats:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    return [l.split()[0] for l in lines if "[output only]" not in l]


def test_detection(d):
    made = samples(d)
    for fmt in readable_formats():
        check(fmt in [f for f, _ in made], "no detection test for the format %s" % fmt)
    for fmt, path in made:
        want = run(["convert", "--from", fmt, "--to", "json", path])
        got = run(["convert", "--to", "json", path])
        check(got[0] == 0 and got[1] == want[1] and want[1],
              "%s detected: %d %s" % (fmt, got[0], got[2]))
        # stdin, and xz-compressed
        with open(path, "rb") as f:
            data = f.read()
        got = run(["convert", "--to", "json"], stdin=data)
        check(got[0] == 0 and got[1] == want[1], "%s detected on stdin: %s" % (fmt, got[2]))
        xz = write(os.path.join(d, fmt + ".xz"), lzma.compress(data))
        got = run(["convert", "--to", "json", xz])
        check(got[0] == 0 and got[1] == want[1], "%s.xz detected: %s" % (fmt, got[2]))
    # every command that takes --from detects
    cbf = os.path.join(d, "sample.cbf")
    rc, out, err = run(["stats", cbf])
    check(rc == 0 and b"traces          2\n" in out, "stats detects cbf: %s" % err)
    rc, out, err = run(["dump", cbf])
    check(rc == 0 and b"info   v0 64-bit" in out, "dump detects cbf: %s" % err)
    rc, out, err = run(["dump", os.path.join(d, "sample.b64")])
    check(rc == 0 and b"# line 1: 10 bytes" in out, "dump detects b64: %s" % err)
    rc, out, err = run(["symbolize", "--to", "json", os.path.join(d, "sample.addrs")])
    check(rc == 0 and len(out.splitlines()) == 2, "symbolize detects addrs: %s" % err)
    # several inputs, each in its own format
    rc, out, err = run(["convert", "--to", "hex", cbf, os.path.join(d, "sample.json"), LOG])
    lines = out.decode().split()
    check(rc == 0 and lines[:4] == HEX[:2] * 2 and len(lines) > 4,
          "inputs of three formats: %r %s" % (lines[:5], err))
    # a device log with noise before its records
    rc, out, err = run(["convert", "--to", "json"], stdin=b"\x07\xff\x00 boot\n" + lws_record())
    check(rc == 0 and out.startswith(b'{"word_bits":64'), "lws after noise: %s" % err)
    # comments and blank lines before the first record
    got = run(["convert", "--to", "hex"], stdin=b"\n# stacks\n\npc:0x1000 0x1010 trunc\n")
    check(got[0] == 0 and got[1] == b"02191000201001\n", "addrs after comments: %r %s"
          % (got[1], got[2]))
    # an explicit --from wins over what the input looks like
    got = run(["convert", "--from", "hex", "--to", "json", os.path.join(d, "sample.addrs")])
    check(got[0] == 1 and "hex digit" in got[2], "--from hex on addrs: %s" % got[2])
    # the input does not say: an error that asks for --from, naming the input
    for data, what in [(b"hello world\n", "text"), (b'{"a":1}\n', "JSON of neither kind"),
                       (b"\x7fELF\x02\x01\x01\x00" + bytes(64), "binary")]:
        path = write(os.path.join(d, "unknown"), data)
        for cmd in (["convert", "--to", "json"], ["stats"], ["dump"], ["symbolize"]):
            rc, out, err = run(cmd + [path])
            check(rc == 1 and "unknown: cannot tell the input format" in err and "--from" in err
                  and not out, "%s: %s: %d %s" % (what, cmd[0], rc, err))
    # a pipe that sends one line and waits: converted at once, not after
    # 64 KiB or the end
    p = subprocess.Popen([BTPACK, "convert", "--to", "hex", "--flush-interval", "0.1"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdin.write(b"pc:0x1000 0x1010 trunc\n")
    p.stdin.flush()
    ready = select.select([p.stdout], [], [], 10)[0]
    line = os.read(p.stdout.fileno(), 100) if ready else b""
    p.stdin.close()
    p.wait(timeout=30)
    check(line == b"02191000201001\n", "a pipe's first line detected and converted before its "
          "end: %r" % line)
    # the rules are in --help
    rc, out, _ = run(["convert", "--help"])
    rules = out.decode().split("\nWithout --from, the format is read from the input")
    check(len(rules) == 2, "convert --help does not say how the format is told without --from")
    for fmt in ("log", "cbf", "lws", "lws-b", "crash", "swift-crashlog", "swift", "json", "trace",
                "hex", "b64", "addrs"):
        check(any(l.startswith("  ") and l.split()[:1] == [fmt] and len(l.split()) > 3
                  for l in rules[-1].split("\n\n")[0].splitlines()),
              "convert --help: no detection rule for %s" % fmt)


def test_binary_as_text(d):
    cbf = write(os.path.join(d, "s.cbf"), bytes.fromhex(HEX[0]) * 300)
    for cmd in (["dump", "--from", "hex"], ["dump", "--from", "b64"],
                ["convert", "--from", "hex", "--to", "json"], ["stats", "--from", "b64"]):
        rc, out, err = run(cmd + [cbf])
        check(rc == 1 and err.count("\n") == 1 and "binary input" in err
              and "use --from cbf" in err, "%s on CBF: %d %s" % (" ".join(cmd), rc, err[:300]))
    rc, out, err = run(["dump", "--from", "hex", LOG])
    check(rc == 1 and err.count("\n") == 1 and "use --from log" in err, "dump --from hex LOG: %s"
          % err[:300])
    # without --from: disassembled
    rc, out, err = run(["dump", cbf])
    check(rc == 0 and out.count(b"# stream ") == 300 and not err, "dump s.cbf: %d %s" % (rc, err))


def test_elf(d):
    lws = write(os.path.join(d, "dev.log"), lws_record())
    for cmd in (["stats", LOG], ["heapmap", lws], ["symbolize", lws],
                ["heap", "report", LOG], ["heap", "map", "-o", os.path.join(d, "m.html"), LOG]):
        for elf, why in (("/nonexistent", "No such file"), (d, "a directory"),
                         (lws, "not an ELF file")):
            rc, out, err = run(cmd[:2] + ["--elf", elf] + cmd[2:])
            check(rc == 1 and not out and "cannot read the ELF file" in err and why in err,
                  "%s --elf %s: %d %r %s" % (" ".join(cmd[:2]), why, rc, out[:80], err))
    check(not os.path.exists(os.path.join(d, "m.html")), "heap map wrote a map with a bad --elf")
    rc, out, err = run(["stats", "--elf", BTPACK, LOG])
    check(rc == 0 and out, "stats --elf with a readable file: %d %s" % (rc, err))


def test_keep_going_summary(d):
    lines = ["02191000201021ff0000" if i % 500 == 0 else "zz" for i in range(3000)]
    bad = write(os.path.join(d, "bad.hex"), ("\n".join(lines) + "\n").encode())
    rc, out, err = run(["convert", "--keep-going", "--from", "hex", "--to", "hex", bad])
    warn = err.splitlines()
    check(rc == 1 and out.count(b"\n") == 6 and len(warn) <= 6, "3000 bad lines: %d lines of "
          "warnings: %s" % (len(warn), "\n".join(warn[:8])))
    check(sum("not a hex digit" in w and "bad.hex:" in w for w in warn) >= 3,
          "the first bad lines are shown: %s" % err[:400])
    check(any("2991 more warnings like" in w and "(lines 5 to 3000)" in w for w in warn),
          "a count of those not shown and where: %s" % err[-400:])
    check(any("2994 bad records skipped" in w for w in warn), "the total: %s" % err[-300:])
    # a trace log with a damaged block: one line for the block, a few for
    # the records it takes with it
    with open(LOG, "rb") as f:
        data = bytearray(f.read())
    data[len(data) // 2] ^= 0x55
    dmg = write(os.path.join(d, "damaged.btlog"), bytes(data))
    rc, out, err = run(["convert", "--keep-going", "--from", "log", "--to", "addrs", dmg])
    warn = err.splitlines()
    check(rc == 1 and out and len(warn) <= 12 and any("records lost" in w for w in warn)
          and any("more warnings like" in w for w in warn),
          "damaged block: %d lines of warnings: %s" % (len(warn), err[:600]))
    # different causes are each shown
    mixed = write(os.path.join(d, "mixed.hex"), b"zz\n021\nzz\n021\nzz\n021\nzz\n021\n")
    rc, out, err = run(["convert", "--keep-going", "--from", "hex", "--to", "hex", mixed])
    check(err.count("digit; trace skipped\n") == 3 and err.count("(3); trace skipped\n") == 3
          and err.count("1 more warning like") == 2, "two causes: %s" % err)
    # --max-warnings: as many as asked, 0 for all (scripts that match each
    # warning to its line)
    for n, shown in (("0", 2994), ("10", 10), ("1", 1)):
        rc, out, err = run(["convert", "--keep-going", "--max-warnings", n, "--from", "hex",
                            "--to", "hex", bad])
        check(rc == 1 and err.count("; trace skipped\n") == shown
              and ("more warnings like" in err) == (n != "0"),
              "--max-warnings %s: %d shown" % (n, err.count("; trace skipped\n")))


def on_pty(args):
    """Run btpack with stderr on a terminal: (status, what it wrote there)."""
    master, slave = pty.openpty()
    p = subprocess.Popen([BTPACK] + args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=slave)
    os.close(slave)
    got = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # the terminal closed with the process
            break
        if not chunk:
            break
        got += chunk
    os.close(master)
    return p.wait(timeout=60), got.decode("utf-8", "replace")


def test_progress(d):
    corpus = os.path.join(DATA, "corpus", "sqlite3_i386.trace.xz")
    out = os.path.join(d, "out.json")
    for cmd in (["convert", "-v", "--to", "json", "-o", out, corpus],
                ["stats", "--progress", LOG], ["stats", "-v", corpus],
                ["symbolize", "-v", "--to", "json", os.path.join(d, "s.cbf")],
                ["heap", "report", "-v", LOG], ["heap", "map", "--progress", "-o", out, LOG]):
        rc, err = on_pty(cmd)
        check(rc == 0 and "records/s" in err and "/s," in err and "records in " in err,
              "%s: progress on a terminal: %r" % (" ".join(cmd[:3]), err[-300:]))
    rc, err = on_pty(["convert", "-v", "--to", "json", "-o", out, corpus])
    check("sqlite3_i386.trace.xz: " in err and "220389 records in" in err,
          "the last line: the input and its records: %r" % err[-300:])
    # silent without -v, and with -v when stderr is not a terminal
    rc, err = on_pty(["convert", "--from", "trace", "--to", "json", "-o", out, corpus])
    check(rc == 0 and err == "", "no -v: nothing on the terminal: %r" % err[-200:])
    rc, _, err = run(["convert", "-v", "--to", "json", "-o", out, corpus])
    check(rc == 0 and err == "", "-v with stderr not a terminal: nothing: %r" % err[-200:])


def main():
    with tempfile.TemporaryDirectory(prefix="btpack-inputs-") as d:
        t0 = time.time()
        test_several_inputs(d)
        test_detection(d)
        test_binary_as_text(d)
        test_elf(d)
        test_keep_going_summary(d)
        test_progress(d)
        print("%.1f s" % (time.time() - t0))
    finish()


if __name__ == "__main__":
    main()
