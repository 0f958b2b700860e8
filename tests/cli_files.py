#!/usr/bin/env python3
"""A user's files through the real `btpack`: nothing a command writes may
destroy or half-write a file.

- an output that is the input (same path, symlink, hard link, stdin or
  stdout redirected onto it) is refused and the file is left as it was;
- `-o` goes to a temporary file renamed into place on success: on an error
  or SIGTERM the old file stays and no temporary file is left (with
  --keep-partial what was written replaces it);
- binary output to a terminal is refused unless -o or --force;
- every command reports a write error (/dev/full, a closed pipe) once, with
  exit status 1;
- an empty trace goes through every format and back (or is refused loudly).

usage: cli_files.py BTPACK
"""
import json
import lzma
import os
import pty
import signal
import subprocess
import sys
import tempfile
import time

from pycheck import check, finish

BTPACK = sys.argv[1]


def run(args, stdin=b"", stdout=subprocess.PIPE, **kw):
    p = subprocess.run([BTPACK] + args, input=stdin, stdout=stdout, stderr=subprocess.PIPE,
                       timeout=60, **kw)
    return p.returncode, p.stdout, p.stderr.decode("utf-8", "replace")


def conv(frm, to, *args, data=b""):
    return run(["convert", "--from", frm, "--to", to] + list(args), data)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


def leftovers(d, keep):
    """Files in d other than those named in keep (temporary files)."""
    return sorted(set(os.listdir(d)) - set(keep))


HEX = b"02191000201001\n0219100000\n"
TRACE = b"# stkshim v1 word=64\nm 16 0x1000 0x401000 0x402000\nf 0x1000\nm 8 0x2000\n"


def test_output_is_input(d):
    # One file per format that can be read and written back as itself.
    files = {}
    for fmt, ext in [("cbf", "cbf"), ("hex", "hex"), ("log", "btlog")]:
        rc, out, err = conv("hex", fmt, data=HEX)
        check(rc == 0 and out, "hex -> %s: %s" % (fmt, err))
        files[fmt] = (os.path.join(d, "same." + ext), out)
    files["trace"] = (os.path.join(d, "same.trace.xz"), lzma.compress(TRACE))
    for fmt, (path, data) in files.items():
        link, hard = path + ".sym", path + ".hard"
        write(path, data)
        os.symlink(os.path.basename(path), link)
        os.link(path, hard)
        for out in [path, link, hard]:
            rc, _, err = conv(fmt, fmt, "-o", out, path)
            check(rc == 2 and "is the input" in err and read(path) == data,
                  "%s: -o %s refused, file kept: %d %s" % (fmt, os.path.basename(out), rc, err))
        # the input as stdin, the output its path
        with open(path, "rb") as f:
            p = subprocess.run([BTPACK, "convert", "--from", fmt, "--to", fmt, "-o", path],
                               stdin=f, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        check(p.returncode == 2 and read(path) == data, "%s: -o IN < IN refused: %s" %
              (fmt, p.stderr))
        # stdout appended onto the input (`>> IN`): would never end
        with open(path, "ab") as f:
            p = subprocess.run([BTPACK, "convert", "--from", fmt, "--to", fmt, path], stdout=f,
                               stderr=subprocess.PIPE, timeout=30)
        check(p.returncode == 2 and read(path) == data, "%s: >> IN refused: %s" %
              (fmt, p.stderr))
        for p_ in (link, hard):
            os.unlink(p_)
    check(not [n for n in os.listdir(d) if n.startswith(".")], "no temporary files: %s" %
          os.listdir(d))
    # A symlink output that is not the input: its target is replaced, the link stays.
    target, link = os.path.join(d, "target.json"), os.path.join(d, "link.json")
    write(target, b"old\n")
    os.symlink("target.json", link)
    rc, _, err = conv("hex", "json", "-o", link, data=HEX)
    check(rc == 0 and os.path.islink(link) and read(target).count(b"\n") == 2,
          "-o through a symlink writes its target: %s" % err)


def test_failure_keeps_old_file(d):
    out = os.path.join(d, "out.json")
    bad = HEX + b"0219zz\n"
    write(out, b"precious\n")
    os.chmod(out, 0o640)
    rc, so, err = conv("hex", "json", "-o", out, data=bad)
    check(rc == 1 and read(out) == b"precious\n" and "not a hex digit" in err,
          "failed conversion leaves the old file: %r %s" % (read(out), err))
    check(leftovers(d, ["out.json"]) == [], "no temporary file after a failure: %s" %
          leftovers(d, ["out.json"]))
    new = os.path.join(d, "new.json")
    rc, _, err = conv("hex", "json", "-o", new, data=bad)
    check(rc == 1 and not os.path.exists(new), "failed conversion creates no file")
    rc, _, err = conv("hex", "json", "--keep-partial", "-o", out, data=bad)
    check(rc == 1 and read(out).count(b"\n") == 2 and "--keep-partial" in err,
          "--keep-partial keeps the traces before the error: %r %s" % (read(out), err))
    # --keep-going: the bad trace is skipped, the output is the result
    rc, _, err = conv("hex", "json", "--keep-going", "-o", out, data=bad)
    check(rc == 1 and read(out).count(b"\n") == 2, "--keep-going keeps the output: %s" % err)
    check(os.stat(out).st_mode & 0o777 == 0o640, "a replaced file keeps its mode: %o" %
          os.stat(out).st_mode)
    rc, _, err = conv("hex", "json", "-o", new, data=HEX)
    umask = os.umask(0)
    os.umask(umask)
    check(rc == 0 and os.stat(new).st_mode & 0o777 == 0o666 & ~umask,
          "a new file gets the umask's mode: %o" % os.stat(new).st_mode)
    rc, _, err = conv("hex", "json", "-o", os.path.join(d, "nodir", "x.json"), data=HEX)
    check(rc == 1 and "cannot create" in err, "missing directory: %s" % err)
    if os.geteuid() != 0:  # root may write anything
        ro = os.path.join(d, "ro.json")
        write(ro, b"read-only\n")
        os.chmod(ro, 0o444)
        rc, _, err = conv("hex", "json", "-o", ro, data=HEX)
        check(rc == 1 and read(ro) == b"read-only\n", "a read-only file is not replaced: %s" % err)


def test_signal(d):
    """SIGTERM while converting a pipe: the old file stays, no temporary
    file is left; with --keep-partial the partial output replaces it, and
    an output with nothing in it yet replaces nothing."""
    out = os.path.join(d, "sig.json")
    for keep, data in [(False, HEX), (True, HEX), (True, b"")]:
        write(out, b"precious\n")
        args = [BTPACK, "convert", "--from", "hex", "--to", "json", "-o", out]
        if keep:
            args.append("--keep-partial")
        p = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        try:
            p.stdin.write(data)
            p.stdin.flush()
        except BrokenPipeError:
            pass  # it has already stopped: the checks below say why
        time.sleep(0.3)
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=10)
        try:
            p.stdin.close()
        except BrokenPipeError:
            pass
        check(p.returncode == -signal.SIGTERM, "killed by SIGTERM: %s" % p.returncode)
        if keep and data:
            check(read(out) != b"precious\n", "--keep-partial: partial output in place")
        elif keep:
            check(read(out) == b"precious\n", "--keep-partial, nothing written yet: the "
                  "old file stays, not replaced by an empty one")
        else:
            check(read(out) == b"precious\n", "SIGTERM: the old file stays")
        check(leftovers(d, ["sig.json"]) == [], "SIGTERM leaves no temporary file: %s" %
              leftovers(d, ["sig.json"]))


def test_terminal(d):
    cbf = conv("hex", "cbf", data=HEX)[1]
    for to, binary in [("cbf", True), ("log", True), ("json", False)]:
        master, slave = pty.openpty()
        try:
            rc, _, err = run(["convert", "--from", "hex", "--to", to], HEX, stdout=slave)
            if binary:
                check(rc == 2 and "terminal" in err and "--force" in err,
                      "%s to a terminal refused: %d %s" % (to, rc, err))
                rc, _, err = run(["convert", "--from", "hex", "--to", to, "--force"], HEX,
                                 stdout=slave)
                check(rc == 0, "%s to a terminal with --force: %s" % (to, err))
            else:
                check(rc == 0, "text to a terminal: %s" % err)
        finally:
            os.close(slave)
            os.close(master)
    out = os.path.join(d, "t.cbf")
    rc, _, err = conv("hex", "cbf", "-o", out, data=HEX)
    check(rc == 0 and read(out) == cbf, "-o FILE for binary output: %s" % err)


def test_write_errors(d):
    src = os.path.join(d, "in.hex")
    write(src, HEX * 2000)
    lws = os.path.join(d, "in.lws")
    write(lws, b"~m#CBUAiAAABw==\n")
    cmds = [["dump", src], ["stats", src], ["convert", "--from", "hex", "--to", "json", src],
            ["convert", "--from", "hex", "--to", "cbf", src],
            ["heapmap", "--elf", BTPACK, lws], ["symbolize", "--from", "hex", src]]
    for cmd in cmds:
        with open("/dev/full", "wb") as full:
            rc, _, err = run(cmd, stdout=full)
        check(rc == 1 and err.count("write error") == 1 and "No space left" in err,
              "%s > /dev/full: one message, exit 1: %d %r" % (cmd[0], rc, err))
        # a closed pipe, SIGPIPE ignored (as under many supervisors)
        r, w = os.pipe()
        os.close(r)
        try:
            rc, _, err = run(cmd, stdout=w, restore_signals=False,
                             preexec_fn=lambda: signal.signal(signal.SIGPIPE, signal.SIG_IGN))
        finally:
            os.close(w)
        check(rc == 1 and err.count("write error") == 1 and "Broken pipe" in err,
              "%s to a closed pipe: one message, exit 1: %d %r" % (cmd[0], rc, err))
    rc, _, err = run(["convert", "--from", "hex", "--to", "json", "-o", "/dev/full", src])
    check(rc == 1 and err.count("write error") == 1, "-o /dev/full: %s" % err)


EMPTY = [
    {"word_bits": 64, "frames": [{"type": "ra", "addr": "0x10"}], "truncated": False},
    {"word_bits": 64, "frames": [], "truncated": False},
    {"word_bits": 64, "frames": [], "truncated": True},
    {"word_bits": 64, "frames": [{"type": "ra", "addr": "0x20"}], "truncated": False},
]


def jsonl(traces):
    return "".join(json.dumps(t, separators=(",", ":")) + "\n" for t in traces).encode()


def test_empty_traces(d):
    """Every format takes an empty trace and gives it back, or refuses it
    with a message and exit status 1: never fewer traces with exit 0."""
    out = run(["convert", "--help"])[1].decode()
    fmts = [l.split()[0] for l in out.split("output formats:\n", 1)[1].split("\n\n", 1)[0]
            .splitlines() if l.startswith("  ")]
    check(len(fmts) >= 8, "output formats listed: %s" % fmts)
    for sized in [False, True]:
        traces = [dict(t) for t in EMPTY]
        if sized:
            for t in traces:
                t["alloc_size"] = 8
        src = jsonl(traces)
        for fmt in fmts:
            rc, mid, err = conv("json", fmt, data=src)
            if rc != 0:
                check(rc == 1 and "cannot write" in err, "%s: refused loudly: %s" % (fmt, err))
                # without the truncated empty trace (lws cannot mark truncation)
                rc, mid, err = conv("json", fmt, "--keep-going", data=src)
                check(rc == 1 and err.count("skipped") >= 1, "%s: --keep-going: %s" %
                      (fmt, err))
            rc2, back, err2 = conv(fmt, "json", data=mid)
            # sizes are not what this is about (some formats hold none)
            got = [json.loads(l) for l in back.decode().splitlines()]
            for g in got:
                g.pop("alloc_size", None)
            want = [{k: v for k, v in t.items() if k != "alloc_size"} for t in traces
                    if rc == 0 or not t["truncated"] or t["frames"]]
            if fmt in ("trace",):
                continue  # allocation records only: checked below
            check(rc2 == 0 and got == want, "%s (%s): empty traces round trip: %r %s" %
                  (fmt, "sized" if sized else "plain", got, err2))
    # allocation records with an empty stack: trace and log
    alloc = b"# stkshim v1 word=64\nm 16 0x1000\nm 8 0x2000 0x10\nf 0x1000\nm 4 0x3000\n"
    for fmt in ["trace", "log"]:
        rc, mid, err = conv("trace", fmt, data=alloc)
        rc2, back, err2 = conv(fmt, "trace", data=mid)
        check(rc == 0 and rc2 == 0 and [l for l in back.splitlines() if not l.startswith(b"#")]
              == [l for l in alloc.splitlines() if not l.startswith(b"#")],
              "trace -> %s -> trace with empty stacks: %r %s %s" % (fmt, back, err, err2))
    rc, out, err = conv("addrs", "json", data=b"empty\n0x10\n")
    check(rc == 0 and out.count(b"\n") == 2 and b'"frames":[]' in out, "addrs `empty`: %s" % err)
    rc, _, err = conv("addrs", "json", data=b"0x10 empty\n")
    check(rc == 1 and "only token" in err, "addrs `empty` alone: %s" % err)


with tempfile.TemporaryDirectory() as tmp:
    for t in [test_output_is_input, test_failure_keeps_old_file, test_signal, test_terminal,
              test_write_errors, test_empty_traces]:
        sub = os.path.join(tmp, t.__name__)
        os.mkdir(sub)
        t(sub)
finish()
