#!/usr/bin/env python3
"""Every trace of the bundled corpora round-trips through the real `btpack`:

  trace -> cbf -> addrs                 (all three corpora)
  trace -> json -> hex -> b64 -> addrs  (the 32-bit corpus)

and equals the `m` record stacks read directly from the file.

and, given README.md, that the sizes its quick-start table quotes for the
32-bit corpus are the ones this build writes.

usage: cli_corpus.py BTPACK CORPUS_DIR [README]
"""
import lzma
import os
import re
import subprocess
import sys
import tempfile

from pycheck import check, finish

BTPACK, CORPUS = sys.argv[1], sys.argv[2]
README = sys.argv[3] if len(sys.argv) > 3 else None


def btpack(frm, to, data=None, path=None):
    args = [BTPACK, "convert", "--from", frm, "--to", to] + ([path] if path else [])
    p = subprocess.run(args, input=data, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if path and p.returncode and b"without liblzma" in p.stderr:
        # A build without liblzma (-Dlzma=disabled): decompress here.
        with lzma.open(path, "rb") as f:
            return btpack(frm, to, data=f.read())
    check(p.returncode == 0, "%s -> %s: %s" % (frm, to, p.stderr.decode()[:300]))
    return p.stdout


def stacks(path):
    """The `m` records' stacks as lists of ints, straight from the file."""
    out = []
    with lzma.open(path, "rt") as f:
        for line in f:
            if line.startswith("m "):
                out.append([int(a, 16) for a in line.split()[3:]])
    return out


def from_addrs(text):
    return [[int(a, 16) for a in line.split()] for line in text.decode().splitlines()]


def compare(name, chain, want, got):
    check(len(got) == len(want), "%s %s: %d traces, want %d" % (name, chain, len(got), len(want)))
    bad = next((i for i, (a, b) in enumerate(zip(want, got)) if a != b), None)
    check(bad is None, "%s %s: trace %s differs" % (name, chain, bad))
    print("%s: %s: %d traces, %d frames" % (name, chain, len(got), sum(map(len, got))))


def readme_sizes(path, cbf, js):
    """README's quick-start table against what scripts/demo.sh makes of
    the same file: a format change must update the figures users read."""
    with open(README, encoding="utf-8") as f:
        rows = dict(re.findall(r"^\| ([^|]+?) \| ([0-9,]+) \|", f.read(), re.M))
    with tempfile.TemporaryDirectory() as tmp:
        log = os.path.join(tmp, "t.btlog")
        p = subprocess.run([BTPACK, "convert", "--from", "trace", "--to", "log", "--maps",
                            path.replace(".trace.xz", ".maps"), "-o", log, path],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        check(p.returncode == 0, "trace -> log: %s" % p.stderr.decode()[:300])
        log_size = os.path.getsize(log)
    with lzma.open(path, "rb") as f:
        text_size = len(f.read())
    for row, got in [("trace records (text)", text_size), ("JSON Lines", len(js)),
                     ("CBF, one stream per stack", len(cbf)),
                     ("btpack trace log (`.btlog`)", log_size)]:
        quoted = rows.get(row)
        check(quoted is not None, "README.md: no row %r in the quick-start table" % row)
        if quoted is not None:
            same = int(quoted.replace(",", "")) == got
            check(same, "README.md quotes %s bytes for %r; this build writes %d" % (quoted, row, got))
            if same:
                print("README.md: %s: %s bytes, as quoted" % (row, quoted))


for name, word in [("sqlite3_i386", 32), ("gcc12_cc1_sqlite3", 64), ("py311_regrtest", 64)]:
    path = os.path.join(CORPUS, name + ".trace.xz")
    want = stacks(path)
    check(len(want) > 1000, "%s has traces" % name)
    cbf = btpack("trace", "cbf", path=path)
    check(cbf[:1] == bytes([{16: 0, 32: 1, 64: 2}[word]]), "%s: CBF word size" % name)
    compare(name, "trace->cbf->addrs", want, from_addrs(btpack("cbf", "addrs", cbf)))
    if word == 32:
        js = btpack("trace", "json", path=path)
        hx = btpack("json", "hex", js)
        b64 = btpack("hex", "b64", hx)
        compare(name, "trace->json->hex->b64->addrs", want, from_addrs(btpack("b64", "addrs", b64)))
        if README:
            readme_sizes(path, cbf, js)

finish()
