#!/usr/bin/env python3
"""Every trace of the bundled corpora round-trips through the real `btpack`:

  trace -> cbf -> addrs                 (all three corpora)
  trace -> json -> hex -> b64 -> addrs  (the 32-bit corpus)

and equals the `m` record stacks read directly from the file.

usage: cli_corpus.py BTPACK CORPUS_DIR
"""
import lzma
import os
import subprocess
import sys

from pycheck import check, finish

BTPACK, CORPUS = sys.argv[1], sys.argv[2]


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

finish()
