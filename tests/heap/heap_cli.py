#!/usr/bin/env python3
"""btpack heap record|report|map, run as a user would.

usage: heap_cli.py BTPACK HEAP_PROG [--no-tracer]

Records tests/heap/heap_prog.c (threads, every allocation function, a
signal handler that allocates, fork, exec, _exit, abort) and checks the
report against what the program is known to do; reads seed-style CSV
records and lws ~m# logs with known answers; checks the map outputs."""
import base64
import json
import os
import subprocess
import sys
import tempfile
import zlib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import btlog_blocks  # noqa: E402
from pycheck import check, finish  # noqa: E402

btpack, prog = sys.argv[1], sys.argv[2]
tracer = "--no-tracer" not in sys.argv[3:]
tmp = tempfile.mkdtemp(prefix="btpack-heap-")
THREADS, PER_THREAD = 4, 20000


def run(args, **kw):
    return subprocess.run([btpack] + args, capture_output=True, text=True, timeout=60, **kw)


def report(path, *extra):
    r = run(["heap", "report", "--json", "--top", "1000"] + list(extra) + [path])
    try:
        return r.returncode, json.loads(r.stdout), r.stderr
    except ValueError:
        return r.returncode, None, r.stderr + r.stdout


def sites_with(rep, key, name):
    """Sites of list `key` with a frame in function name (inlined or not)."""
    return [s for s in rep.get(key, [])
            if any(loc.get("function") == name
                   for f in s["frames"] for loc in f.get("symbols", []))]


def log_blocks(path):
    """(kind, [metadata keys]) of each block of a log."""
    read_varint = btlog_blocks.read_varint
    out = []
    for h, raw in btlog_blocks.blocks(open(path, "rb").read()):
        kind, flags = h[4], h[5]
        keys, p = [], 0
        if kind == 3:  # END: its counts, then items (flag ITEMS)
            p = read_varint(raw, read_varint(raw, 0)[1])[1] if flags & btlog_blocks.ITEMS \
                else len(raw)
        while kind != 2 and p < len(raw):
            n, p = read_varint(raw, p)
            keys.append(raw[p:p + n].decode())
            p += n
            n, p = read_varint(raw, p)
            p += n
        out.append((kind, keys))
    return out


def check_layout(mode, path, end_keys):
    """The tracer's metadata: what symbolizing needs in the first block,
    before any record; the last notes in the END block, none on their own."""
    b = log_blocks(path)
    check(len(b) >= 3 and b[0] == (1, ["tracer", "cmdline", "images"]) and b[1][0] == 2,
          "%s: first blocks %s" % (mode, b[:2]))
    # (images again when objects were loaded or unloaded since the start)
    check(b[-1][0] == 3 and [k for k in b[-1][1] if k != "images"] == end_keys and
          b[-2][0] == 2, "%s: last blocks %s, want END %s" % (mode, b[-2:], end_keys))


def check_prog_log(mode, path, rc_expected):
    r = run(["heap", "record", "-o", path, "--", prog, mode])
    check(r.returncode == rc_expected, "%s: record exit %d, want %d: %s" %
          (mode, r.returncode, rc_expected, r.stderr))
    rc, rep, err = report(path)
    check(rep is not None, "%s: report --json parses: %s" % (mode, err))
    if rep is None:
        return None
    check(rep["complete"], "%s: complete=%s" % (mode, rep["complete"]))
    # the three leaks of leaky(): exactly 1001+1002+1003 bytes from one stack
    leaks = sites_with(rep, "leaks", "leaky")
    check(len(leaks) == 1 and leaks[0]["leaked_bytes"] == 3006 and
          leaks[0]["leaked_allocations"] == 3, "%s: leaky(): %s" % (mode, leaks))
    # every worker allocation recorded and freed: 4 x 5000 of 48 bytes
    work = [s for s in sites_with(rep, "by_allocations", "worker")]
    n = sum(s["allocations"] for s in work)
    check(n == THREADS * PER_THREAD, "%s: worker allocations %d" % (mode, n))
    check(all(s["leaked_allocations"] == 0 for s in work), "%s: worker leaks" % mode)
    check(sum(s["bytes"] for s in work) == 48 * THREADS * PER_THREAD, "%s: worker bytes" % mode)
    # each allocation function recorded from every_function()
    every = sites_with(rep, "by_allocations", "every_function")
    sizes = sorted(s["bytes"] for s in every)
    check(sum(s["allocations"] for s in every) == 8 and
          sizes == sorted([100, 5000, 3000, 100, 128, 200, 300, 400]),
          "%s: every_function sites %s" % (mode, [(s["allocations"], s["bytes"]) for s in every]))
    check(all(s["leaked_allocations"] == 0 for s in every), "%s: every_function leaks" % mode)
    # the signal handler's 10 allocations of 4321 bytes
    sig = sites_with(rep, "by_allocations", "on_usr1")
    check(sum(s["allocations"] for s in sig) == 10, "%s: on_usr1 %s" % (mode, sig))
    # fork: the child's allocation is not in the parent's log
    check(not sites_with(rep, "by_allocations", "child_work"), "%s: child traced" % mode)
    check(rep["unmatched_frees"] == 0,
          "%s: unmatched frees %d" % (mode, rep["unmatched_frees"]))
    check("lost=0" in rep.get("tracer", "lost=0"), "%s: tracer lost events: %s" %
          (mode, rep.get("tracer")))
    return rep


if tracer:
    rep = check_prog_log("basic", os.path.join(tmp, "basic.btlog"), 0)
    check_layout("basic", os.path.join(tmp, "basic.btlog"), ["clock", "tracer-end"])
    check_prog_log("_exit", os.path.join(tmp, "exit.btlog"), 0)
    check_layout("_exit", os.path.join(tmp, "exit.btlog"), ["clock", "tracer-end"])
    rep = check_prog_log("exec", os.path.join(tmp, "exec.btlog"), 0)
    check_layout("exec", os.path.join(tmp, "exec.btlog"), ["exec", "clock", "tracer-end"])
    r = run(["heap", "report", os.path.join(tmp, "exec.btlog")])
    check("exec " in r.stdout and "end=exec " in r.stdout, "exec notes: %s" % r.stdout[:400])
    # a crash: abort() kills it, after the tracer completed the log
    rep = check_prog_log("crash", os.path.join(tmp, "crash.btlog"), 128 + 6)
    check(rep is not None and "end=SIGABRT " in rep.get("tracer", ""),
          "crash: tracer %s" % (rep or {}).get("tracer"))
    check_layout("crash", os.path.join(tmp, "crash.btlog"), ["clock", "tracer-end"])
    # SIGKILL: the log ends without its END block; the report says so and
    # reports what the flushed blocks hold
    r = run(["heap", "record", "-o", os.path.join(tmp, "kill.btlog"), "--", prog, "kill"],
            env=dict(os.environ, BTPACK_HEAP_FLUSH_MS="100"))
    check(r.returncode == 128 + 9, "kill: exit %d" % r.returncode)
    rc, rep, err = report(os.path.join(tmp, "kill.btlog"))
    check(rc == 0 and rep is not None and rep["complete"] is False,
          "kill: report of a cut log: %s" % err)
    # text report and map of a real recording
    r = run(["heap", "report", os.path.join(tmp, "basic.btlog")])
    check(r.returncode == 0 and "peak heap:" in r.stdout and "leaky" in r.stdout,
          "text report: %s" % r.stderr)
    html = os.path.join(tmp, "basic.html")
    r = run(["heap", "map", "-o", html, os.path.join(tmp, "basic.btlog")])
    text = open(html).read() if os.path.exists(html) else ""
    check(r.returncode == 0 and "leaky" in text and "/*BTPACK_HEAP_DATA*/" not in text,
          "map html: %s" % r.stderr)
    # self-contained: nothing fetched from anywhere
    for bad in ("http://", "https://", "<link", "src=", "import("):
        check(bad not in text.replace("http://www.w3.org/2000/svg", ""),
              "map html refers to %s" % bad)
    # usage errors
    r = run(["heap", "record"])
    check(r.returncode == 2, "record without a command: %d" % r.returncode)
    r = run(["heap", "record", "-o", os.path.join(tmp, "x.btlog"), "--", "/nonexistent/prog"])
    check(r.returncode == 127, "record of a missing program: %d" % r.returncode)
    # -o onto a file that is there: it stays as it was until CMD has run
    # and written a trace, and CMD reading it is refused
    keep = os.path.join(tmp, "keep.txt")
    noexec = os.path.join(tmp, "noexec.sh")
    with open(noexec, "w") as f:
        f.write("#!/bin/sh\n")
    os.chmod(noexec, 0o644)
    for cmd, want in ((["/nonexistent/prog"], 127), ([noexec], 126),
                      (["sort", keep], 2), (["/bin/sh", "-c", "cat < " + keep], -1)):
        with open(keep, "w") as f:
            f.write("precious\n")
        # bytes: before, CMD read the log being written in place of the file
        r = subprocess.run([btpack, "heap", "record", "-o", keep, "--"] + cmd,
                           capture_output=True, timeout=60)
        r.stdout, r.stderr = (x.decode("latin-1") for x in (r.stdout, r.stderr))
        body = open(keep, "rb").read().decode("latin-1") if os.path.exists(keep) else None
        if want < 0:  # CMD ran, read the file whole, and then the log replaced it
            check(r.returncode == 0 and r.stdout == "precious\n" and body is not None and
                  body.startswith("\x89BTPLOG"), "record -o onto what %s reads: %d %r %s" %
                  (cmd, r.returncode, r.stdout, r.stderr))
            continue
        check(r.returncode == want and body == "precious\n",
              "record -o onto a file, %s: exit %d (want %d), file %r: %s" %
              (cmd, r.returncode, want, body and body[:40], r.stderr))
        check(want == 2 or "cannot run" in r.stderr, "record %s: %s" % (cmd, r.stderr))
    check(not [n for n in os.listdir(tmp) if n.startswith(".keep.txt.")],
          "record left a temporary file: %s" % os.listdir(tmp))
    # a program that exits 127 itself is not a program that could not run
    r = run(["heap", "record", "-o", os.path.join(tmp, "x127.btlog"), "--",
             "/bin/sh", "-c", "exit 127"])
    check(r.returncode == 127 and "cannot run" not in r.stderr and
          os.path.getsize(os.path.join(tmp, "x127.btlog")) > 0, "exit 127: %s" % r.stderr)
    # the log cannot be written whole (a file size limit stands in for a
    # full disk): an error, and the file stays as it was unless --keep-partial
    def fsize_limit():
        import resource
        import signal
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes fail with EFBIG
        resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, 64 * 1024))
    keep_path = os.path.join(tmp, "full.btlog")
    for keep in ([], ["--keep-partial"]):
        with open(keep_path, "w") as f:
            f.write("precious\n")
        r = subprocess.run([btpack, "heap", "record", "--zlib", "0", "-o", keep_path] + keep +
                           ["--", prog, "basic"], capture_output=True, text=True, timeout=60,
                           preexec_fn=fsize_limit)
        body = open(keep_path, "rb").read()
        check(r.returncode == 1 and "could not write the trace log" in r.stderr and
              "File too large" in r.stderr,
              "record %s past the file size limit: exit %d: %s" % (keep, r.returncode, r.stderr))
        if keep:
            check(body.startswith(b"\x89BTPLOG") and "incomplete output kept" in r.stderr,
                  "record --keep-partial past the limit: %r %s" % (body[:16], r.stderr))
        else:
            check(body == b"precious\n", "record past the file size limit replaced the file")
        check(not [n for n in os.listdir(tmp) if n.startswith(".full.btlog.")],
              "record past the file size limit left a temporary file")
    r = run(["heap", "record", "-o", "-", "--", "true"])
    check(r.returncode == 2 and "-o -" in r.stderr, "record -o -: %s" % r.stderr)

# ---- seed-style CSV records among other log text --------------------------
csv = os.path.join(tmp, "uart.log")
with open(csv, "w") as f:
    f.write("boot: heap at 0x50000000\n"
            "m,12,0x50000000\n"
            "m,10,0x5000000C\n"
            "[ 0.1] net: link up\n"
            "c,40,0x50000034\n"
            "f,,0x50000000\n"
            "f,,0x5000000C\n"
            "m,12,0x50000000\n"
            "12:00:01.5 m,0000001c,5000005c\n"   # %8.8x sizes, no 0x: hex (28)
            "f,,0x50000100\n"                    # never allocated: unmatched
            "m,8,0x50000034\n"                   # the c,40 lost its free
            "f,,0x5000005c\n")
rc, rep, err = report(csv)
check(rep is not None and rc == 0, "csv report: %s" % err)
if rep:
    check(rep["format"] == "csv", "csv detected")
    check(rep["allocations"] == 6 and rep["frees"] == 3, "csv counts %s" % rep)
    check(rep["bytes_allocated"] == 12 + 10 + 40 + 12 + 28 + 8, "csv bytes")
    check(rep["unmatched_frees"] == 1 and rep["frees_missing"] == 1, "csv unmatched")
    check(rep["leaked"]["bytes"] == 12 + 8 and rep["leaked"]["allocations"] == 2, "csv leaks")
    check(rep["peak"] == {"bytes": 80, "allocations": 3, "event": 6}, "csv peak %s" % rep["peak"])
r = run(["heap", "report", csv])
check(r.returncode == 0 and "1 frees of pointers not allocated in the input (first at line 10)"
      in r.stdout, "csv text: %s" % r.stdout)
bad = os.path.join(tmp, "bad.log")
with open(bad, "w") as f:
    f.write("m,12,0x1000\nm,zz,0x2000\n")
r = run(["heap", "report", bad])
check(r.returncode == 1 and ":2:" in r.stderr, "malformed csv: %s" % r.stderr)
r = run(["heap", "report", "--keep-going", bad])
check(r.returncode == 1 and "allocations: 1 " in r.stdout, "csv keep-going: %s" % r.stdout)

# ---- CSV records with the allocating stack (m,SIZE,PTR,CBF-HEX) -------------
# What btp_cm_record_alloc_line writes on a device: the chain as a 32-bit
# CBF stream in hex digits.
def cbf_hex(chain):
    r = run(["convert", "--from", "addrs", "--to", "hex", "--word-bits", "32"], input=chain + "\n")
    return r.stdout.strip()


a_stack = cbf_hex("pc:0x8001000 0x8002000 0x8003000")
b_stack = cbf_hex("pc:0x8001000 0x8004000 0x8003000")
stk = os.path.join(tmp, "stacks.log")
with open(stk, "w") as f:
    f.write("firmware: heap\n"
            "m,100,0x20000958,%s\n" % a_stack +
            "m,16,0x200009c0,%s\n" % b_stack +
            "f,,0x200009c0\n"
            "m,17,0x200009c0,%s \n" % b_stack +   # trailing space
            "m,2049,0x0,%s\n" % b_stack +          # failed
            "m,8,0x20000a00\n")                    # no stack
rc, rep, err = report(stk)
check(rep is not None and rc == 0, "csv with stacks: %s" % err)
if rep:
    check(rep["format"] == "csv" and rep["word_bits"] == 32 and rep["allocations"] == 4 and
          rep["frees"] == 1 and rep["failed_allocations"] == 1 and rep["stacks"] == 3,
          "csv with stacks: counts %s" % {k: rep[k] for k in ("format", "word_bits", "allocations",
                                                              "frees", "stacks")})
    leaks = {lk["leaked_bytes"]: [f["addr"] for f in lk["frames"]] for lk in rep["leaks"]}
    check(leaks == {100: ["0x8001000", "0x8002000", "0x8003000"],
                    17: ["0x8001000", "0x8004000", "0x8003000"], 8: []},
          "csv with stacks: leaks %s" % leaks)
for line, why in ((("m,1,0x10,%s0\n" % a_stack), "odd number of hex digits"),
                  ("m,1,0x10,%s00\n" % a_stack, "column 10"),
                  ("m,1,0x10,ff00\n", "column 10"),
                  ("f,,0x10,%s\n" % a_stack, "malformed heap record")):
    with open(bad, "w") as f:
        f.write("m,4,0x20\n" + line)
    r = run(["heap", "report", bad])
    check(r.returncode == 1 and ":2:" in r.stderr and why in r.stderr,
          "bad stack %r: %s" % (line, r.stderr))

# ---- libwebsockets ~m# dumps ------------------------------------------------
lws = os.path.join(tmp, "lws.log")
with open(lws, "w") as f:
    f.write("[2024/01/01 00:00:00:0000] N: dump: ~m#IF0BmagugNDWgCnkhdAYpQa6wAAV\n"
            "other text\n"
            "~m#IF0BmagugNDWgCnkhdAYpQa6wAAV ~m#IF0BmagugNDWgCnkhdAYpQa6wAAV\n")
rc, rep, err = report(lws)
check(rep is not None and rc == 0, "lws report: %s" % err)
if rep:
    check(rep["format"] == "lws" and rep["allocations"] == 3 and
          rep["bytes_allocated"] == 3 * 7520 and rep["leaked"]["stacks"] == 1,
          "lws: %s" % {k: rep[k] for k in ("format", "allocations", "bytes_allocated")})
    frames = rep["leaks"][0]["frames"] if rep["leaks"] else []
    r = run(["convert", "--from", "lws", "--to", "addrs", lws])
    want = r.stdout.split("\n")[0].split()
    check([f["addr"] for f in frames] == want and len(want) == 4,
          "lws frames %s, convert says %s" % (frames, want))

# ---- maps of text inputs ----------------------------------------------------
for name, src in (("csv", csv), ("lws", lws)):
    svg = os.path.join(tmp, name + ".svg")
    r = run(["heap", "map", "-o", svg, src])
    body = open(svg).read() if os.path.exists(svg) else ""
    check(r.returncode == 0 and body.startswith("<svg") and body.count("<rect") > 2,
          "%s svg: %s" % (name, r.stderr))
    r = run(["heap", "map", src])
    check(r.returncode == 0 and r.stdout.startswith("<!DOCTYPE html>"), "%s html to stdout" % name)
# the suffix in capitals names SVG too, not HTML under an .SVG name
up = os.path.join(tmp, "csv-upper.SVG")
r = run(["heap", "map", "-o", up, csv])
body = open(up).read() if os.path.exists(up) else ""
check(r.returncode == 0 and body.startswith("<svg"), "-o FILE.SVG writes SVG: %s" % body[:20])
# ---- input that holds no heap records --------------------------------------
# said to be so, never reported as a heap that allocated nothing
notheap = [("empty", b"", "empty input"),
           ("text", b"root:x:0:0:root:/root:/bin/bash\nplain text\n", "not a heap log"),
           ("binary", bytes(range(256)) * 8, "binary data that is not a btpack trace log")]
if tracer and os.path.exists(os.path.join(tmp, "basic.btlog")):
    with open(os.path.join(tmp, "basic.btlog"), "rb") as f:  # its magic damaged
        notheap.append(("magic", b"\0\0\0\0" + f.read()[4:], "binary data"))
for name, body, why in notheap:
    path = os.path.join(tmp, "notheap-" + name)
    with open(path, "wb") as f:
        f.write(body)
    html = os.path.join(tmp, "notheap.html")
    with open(html, "w") as f:
        f.write("kept\n")
    for args in (["heap", "report", path], ["heap", "report", "--json", path],
                 ["heap", "map", "-o", html, path]):
        r = run(args)
        check(r.returncode == 1 and why in r.stderr and "no heap records" in r.stderr and
              "allocations" not in r.stdout,
              "%s of %s: exit %d: %s%s" % (args[1], name, r.returncode, r.stderr, r.stdout[:200]))
    check(open(html).read() == "kept\n", "heap map -o of %s replaced its output" % name)
r = run(["heap", "report", "--from", "csv", os.path.join(tmp, "notheap-empty")])
check(r.returncode == 0 and "allocations: 0 " in r.stdout, "empty --from csv: %s" % r.stderr)


def map_columns(html):
    """The allocations of a map page: its data JSON, the base64 columns
    inflated when deflated, six columns of LEB128 varints (spec/heap.md
    section 4) decoded here independently of the page."""
    tag = '<script id="heapdata" type="application/json">'
    a = html.index(tag) + len(tag)
    d = json.loads(html[a:html.index("</script>", a)])
    raw = base64.b64decode(d["cols"])
    if d["enc"] == "deflate":
        raw = zlib.decompress(raw)
    check(d["enc"] in ("deflate", "raw") and len(raw) == d["raw_len"], "map data: %s" % d["enc"])
    vals, v, shift = [], 0, 0
    for b in raw:
        v |= (b & 127) << shift
        shift += 7
        if b < 128:
            vals.append(v)
            v, shift = 0, 0
    n = d["n"]
    check(len(vals) == 6 * n and shift == 0, "map columns: %d values for %d" % (len(vals), n))
    cols = [vals[k * n:(k + 1) * n] for k in range(6)]
    for k in (0, 2):   # zigzag deltas
        acc, out = 0, []
        for z in cols[k]:
            acc += (z >> 1) ^ -(z & 1)
            out.append(acc)
        cols[k] = out
    return d, cols


r = run(["heap", "map", csv])
if r.returncode == 0:
    d, (y, h, t0, life, site, size) = map_columns(r.stdout)
    # the CSV's six allocations in order: sizes, addresses (one region from
    # 0x50000000, unit 1), events counting each m/c/f line
    check(size == [12, 10, 40, 12, 28, 8] and h == size, "map sizes %s heights %s" % (size, h))
    check([int(d["regions"][0][0]) + v for v in y] ==
          [0x50000000, 0x5000000C, 0x50000034, 0x50000000, 0x5000005c, 0x50000034],
          "map addresses %s" % y)
    check(t0 == sorted(t0) and len(set(t0)) == 6, "map events %s" % t0)
    check(life.count(0) == 2 and all(t0[i] + life[i] - 1 <= d["t_end"] for i in range(6) if life[i]),
          "map lifetimes %s" % life)
    check(all(s < len(d["sites"]) for s in site), "map sites %s" % site)
r = run(["heap", "map", os.path.join(tmp, "missing.btlog")])
check(r.returncode == 1 and "missing.btlog" in r.stderr, "missing input: %s" % r.stderr)
r = run(["heap", "--help"])
check(r.returncode == 0 and "btpack heap record" in r.stdout, "help")
finish()
