#!/usr/bin/env python3
"""Write the fuzz targets' seed corpora (fuzz/corpus/<name>/) from the test
vectors and corpora in tests/data/.

Run from anywhere: python3 fuzz/make_seeds.py [BUILD_DIR]. With a build
directory, the trace-log seeds are written too, by its fuzz/log_seedgen
(the library's own log writer); without, they are left as they are. The
output is committed;
re-run it when the vectors change. It is deterministic (file names are a
hash of the content) and keeps the corpora small: a few hundred files in
all, each a single input. Only existing encodings are copied (hex strings
of the vectors); nothing here encodes CBF or lws itself.
"""
import base64
import hashlib
import json
import lzma
import os
import shutil
import subprocess
import tempfile
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "tests", "data")
OUT = os.path.join(ROOT, "fuzz", "corpus")


def jsonl(name):
    with open(os.path.join(DATA, "vectors", name)) as f:
        return [json.loads(line) for line in f if line.strip()]


def corpus_traces(name, count):
    """The first `count` distinct `m` records' addresses of a corpus."""
    seen, traces = set(), []
    with lzma.open(os.path.join(DATA, "corpus", name + ".trace.xz"), "rt") as f:
        for line in f:
            if not line.startswith("m "):
                continue
            addrs = tuple(int(a, 16) for a in line.split()[3:])
            if addrs and addrs not in seen:
                seen.add(addrs)
                traces.append(addrs)
                if len(traces) == count:
                    break
    return traces


class Corpus:
    def __init__(self, name):
        self.dir = os.path.join(OUT, name)
        shutil.rmtree(self.dir, ignore_errors=True)
        os.makedirs(self.dir)
        self.count = 0

    def add(self, data):
        if isinstance(data, str):
            data = data.encode()
        path = os.path.join(self.dir, hashlib.sha1(data).hexdigest()[:16])
        if not os.path.exists(path):
            with open(path, "wb") as f:
                f.write(data)
            self.count += 1


def cbf_seeds():
    c = Corpus("cbf")
    for i, v in enumerate(jsonl("cbf-public.jsonl")):
        if v["kind"] == "valid":
            if i % 2 == 0:
                c.add(bytes.fromhex(v["swift_hex"]))
            if i % 3 == 0:
                c.add(bytes.fromhex(v["alt_hex"]))
            if i % 10 == 0:
                c.add(bytes.fromhex(v["verbose_hex"]))
        else:
            c.add(bytes.fromhex(v["hex"]))
    for v in jsonl("cbf-edge-cases.jsonl"):
        c.add(bytes.fromhex(v["hex"]))
    return c


# Record header bits of fuzz_cbf_encode.c.
KINDS = {"pc": 0, "ra": 1, "async": 2, "omit": 3}


def encode_records(word_bits, frames, flags=0):
    """frames: (kind, value) pairs -> the cbf_encode target's input."""
    out = bytearray([{16: 0, 32: 1, 64: 2}[word_bits] | flags])
    prev = None
    for kind, value in frames[:64]:
        if value == prev:
            out.append(0x80 | KINDS[kind])
            continue
        n = max(1, (value.bit_length() + 7) // 8)
        out.append(KINDS[kind] | (n - 1) << 2)
        out += value.to_bytes(n, "big")
        prev = value
    return bytes(out)


def cbf_encode_seeds():
    c = Corpus("cbf_encode")
    for i, v in enumerate(jsonl("cbf-public.jsonl")):
        if v["kind"] != "valid" or i % 3:
            continue
        frames = [(f["type"], int(f["addr"], 16)) if f["type"] != "omit"
                  else ("omit", f["count"]) for f in v["frames"]]
        c.add(encode_records(v["word_bits"], frames, 8 if v["truncated"] else 0))
    for name, word in (("py311_regrtest", 64), ("gcc12_cc1_sqlite3", 64), ("sqlite3_i386", 32)):
        for j, t in enumerate(corpus_traces(name, 8)):
            frames = [("pc" if k == 0 else "ra", a) for k, a in enumerate(t)]
            c.add(encode_records(word, frames, 4 if j % 2 else 0))
    # Runs with explicit copy counts, small and full-width.
    c.add(bytes([0x02, 0x04, 0x10, 0x00, 0x21, 0x10, 0x20, 0x05, 0xa1, 0x07, 0x03, 0x00]))
    c.add(bytes([0x00, 0x04, 0x12, 0x34, 0x61, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01]))
    return c


def base64_seeds():
    c = Corpus("base64")
    for i, v in enumerate(jsonl("cbf-public.jsonl")):
        if v["kind"] == "valid" and i % 8 == 0:
            c.add(bytes([i % 4]) + v["swift_b64"].encode())
    for i, v in enumerate(jsonl("lws-public.jsonl")):
        if i % 6 == 0 and v["m_line"].startswith("~m#"):
            payload = v["m_line"][3:]
            c.add(bytes([i % 4]) + payload.encode())
            if i % 12 == 0:
                spaced = " ".join(payload[k:k + 16] for k in range(0, len(payload), 16))
                c.add(bytes([1]) + spaced.encode())
    c.add(bytes([2]) + base64.urlsafe_b64encode(bytes(range(0, 256, 7))))
    return c


def lws_seeds():
    """Blobs (lws_blob), log text (lws_text), ~b# lines (lws_b) and both
    directions of the CBF <-> lws transcoder (cbf_lws)."""
    blob, text, bline, trans = (Corpus(n) for n in ("lws_blob", "lws_text", "lws_b", "cbf_lws"))
    vectors = jsonl("lws-public.jsonl")
    for i, v in enumerate(vectors):
        word = 1 if v["word_bits"] == 64 else 0
        if v.get("blob_hex") and i % 2 == 0:
            b = bytes.fromhex(v["blob_hex"])
            blob.add(bytes([word]) + b)
            if i % 4 == 0:
                trans.add(bytes([1 | word << 2 | (i & 2)]) + b)
        if i % 5 == 0:
            text.add(f"[2026/11/21 13:00:{i % 60:02d}] N: alloc {v['m_line']} size\n")
        if i % 9 == 0 and i + 1 < len(vectors):
            text.add(vectors[i]["m_line"] + " " + vectors[i + 1]["m_line"] + "\n")
        if v.get("b_line") and i % 2 == 1:
            bline.add(bytes([word]) + v["b_line"].encode())
    for i, v in enumerate(jsonl("cbf-public.jsonl")):
        if v["kind"] == "valid" and i % 5 == 0:
            trans.add(bytes([(i & 2) | (i % 32) << 3]) + bytes.fromhex(v["swift_hex"]))
    return blob, text, bline, trans


def cli_seeds():
    """Inputs of the CLI formats: an option byte (fuzz_cli_format.c: bit 0
    --strict, bits 1-2 word size 16/32/64/64, bit 3 --keep-going), then a
    small file of several records."""
    names = ("hex", "b64", "json", "addrs", "trace", "lws", "lws_b", "cbf")
    cs = {n: Corpus("cli_" + n) for n in names}
    cbf = [v for v in jsonl("cbf-public.jsonl") if v["kind"] == "valid"]
    bad = [v for v in jsonl("cbf-public.jsonl") if v["kind"] == "malformed"]
    lws = jsonl("lws-public.jsonl")

    def opt(word, k):
        return bytes([{16: 0, 32: 1, 64: 2}[word] << 1 | (k & 1) | (k & 2) << 2])

    def addrs(v):
        out = []
        for f in v["frames"]:
            if f["type"] == "omit":
                out.append(f"omit:{f['count']}")
            else:
                out.append(("" if f["type"] == "ra" else f["type"] + ":") + f["addr"])
        return " ".join(out + (["trunc"] if v["truncated"] else []))

    for k in range(0, len(cbf), 3):
        group = cbf[k:k + 3]
        word = group[0]["word_bits"]
        same = [v for v in group if v["word_bits"] == word]
        o = opt(word, k)
        cs["hex"].add(o + "".join(v["swift_hex"] + "\n" for v in group).encode())
        cs["b64"].add(o + "".join(v["swift_b64"] + "\n" for v in group).encode())
        cs["json"].add(o + "".join(json.dumps(v) + "\n" for v in group).encode())
        cs["addrs"].add(o + "".join(addrs(v) + "\n" for v in same).encode())
        cs["cbf"].add(o + b"".join(bytes.fromhex(v["spec_hex"]) for v in group))
    for k, v in enumerate(bad[::4]):
        cs["hex"].add(opt(64, k) + ("02100100\n" + v["hex"] + "\n02\n").encode())
    for k in range(0, len(lws), 6):
        group = lws[k:k + 6]
        o = opt(group[0]["word_bits"], k)
        cs["lws"].add(o + "".join(f"t={i} {v['m_line']} x\n" for i, v in enumerate(group)).encode())
        lines = [v["b_line"] for v in group if v.get("b_line")]
        if lines:
            cs["lws_b"].add(o + "".join(line + "\n" for line in lines).encode())
    for name in ("py311_regrtest", "gcc12_cc1_sqlite3", "sqlite3_i386"):
        with lzma.open(os.path.join(DATA, "corpus", name + ".trace.xz"), "rt") as f:
            lines = [next(f) for _ in range(40)]
        for k in range(0, 40, 10):
            cs["trace"].add(opt(64, k) + ("".join(lines[:1] + lines[1 + k:9 + k])).encode())
    return list(cs.values())


def corpus_maps(name):
    with open(os.path.join(DATA, "corpus", name + ".maps")) as f:
        return f.read().splitlines(keepends=True)


def image_of_maps(lines):
    """(base, end of text, path) per file of /proc/PID/maps lines, as
    btp_image_map_from_procmaps groups them (enough for seeds)."""
    images = {}
    for line in lines:
        f = line.split(None, 5)
        if len(f) < 6 or not f[5].strip().startswith("/"):
            continue
        path = f[5].strip()
        start, end = (int(x, 16) for x in f[0].split("-"))
        if path not in images:
            images[path] = [start - int(f[2], 16), 0]
        if "x" in f[1]:
            images[path][1] = max(images[path][1], end)
    return [(b, e, p) for p, (b, e) in images.items() if e]


def escape_path(p):
    out = []
    for ch in p:
        if ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ord(ch) < 0x20 or ord(ch) == 0x7f:
            out.append("\\x%02x" % ord(ch))
        else:
            out.append(ch)
    return "".join(out)


def image_line(base, end, build_id, path):
    return "image 0x%x 0x%x %s %s" % (base, end, build_id or "-",
                                      "\\x2d" if path == "-" else escape_path(path) if path else "-")


# Hand-made edge cases of /proc/PID/maps: the vDSO, a deleted file, a file
# smaller than a page (its data mapped at offset 0 again), a listing cut
# before a file's offset-0 mapping, an escaped newline in a path, CRLF.
MAPS_EDGES = [
    "7ffd1000-7ffd3000 r-xp 00000000 00:00 0                          [vdso]\n",
    "400000-401000 r-xp 00000000 08:01 12 /tmp/a.out (deleted)\n",
    "7f0000000000-7f0000001000 r-xp 00000000 08:01 77 /lib/tiny.so\n"
    "7f0000001000-7f0000002000 r--p 00000000 08:01 77 /lib/tiny.so\n",
    "7f0000002000-7f0000003000 r-xp 00002000 08:01 78 /lib/cut.so\n",
    "7f0000004000-7f0000005000 r-xp 00000000 08:01 79 /tmp/odd\\012name\r\n",
    "56000000-56001000 r--p 00000000 08:01 5 /bin/x\n56001000-56002000 r-xp 00001000 08:01 5 /bin/x",
]


def image_seeds():
    """/proc/PID/maps text (image_procmaps) and image lines (image_line);
    byte 0: word size 16/32/64 as 0/1/2."""
    pm, il = Corpus("image_procmaps"), Corpus("image_line")
    for name, word in (("py311_regrtest", 2), ("gcc12_cc1_sqlite3", 2), ("sqlite3_i386", 1)):
        lines = corpus_maps(name)
        for k in range(0, min(len(lines), 120), 40):
            pm.add(bytes([word]) + "".join(lines[k:k + 40]).encode())
        imgs = image_of_maps(lines)
        for k in range(0, len(imgs), 8):
            text = "\n".join(image_line(b, e, ("%02x" % (i * 37 % 256)) * (20 if i % 2 else 0) or None,
                                        p) for i, (b, e, p) in enumerate(imgs[k:k + 8]))
            il.add(bytes([word]) + text.encode())
    for k, text in enumerate(MAPS_EDGES):
        pm.add(bytes([k % 3]) + text.encode())
    il.add(bytes([2]) + b"image 0x7ffd1000 0x7ffd3000 - -\nimage 0x1 0x2 ab \\x2d\n"
           b"image 0x10 0x20 00112233445566778899aabbccddeeff00112233 /a\\nb\\\\c\\x01\r\n")
    return [pm, il]


CBF_FOR_CRASH = 8  # how many crash-record seeds


def crash_seeds():
    """btpack crash records (cli_crash): v1 with map lines, v2 with image
    lines and build IDs, text around them, two back to back, one cut
    short; the same option byte as the other CLI formats."""
    c = Corpus("cli_crash")
    cbf = [v for v in jsonl("cbf-public.jsonl") if v["kind"] == "valid" and v["word_bits"] == 64]
    maps = corpus_maps("py311_regrtest")
    imgs = image_of_maps(maps)
    for k in range(CBF_FOR_CRASH):
        v = cbf[k * 7 % len(cbf)]
        head = "btpack-crash v%d signal=11 code=1 addr=0x10 pid=42 tid=42 method=fp" % (1 + k % 2)
        body = ["cbf " + v["swift_hex"]]
        if k % 2:
            body += [image_line(b, e, ("%02x" % (i + k)) * 20, p)
                     for i, (b, e, p) in enumerate(imgs[k:k + 6])]
        else:
            body += ["map " + line.rstrip("\n") for line in maps[k * 10:k * 10 + 12]]
        rec = "\n".join([head] + body + ["end"]) + "\n"
        if k % 4 == 1:
            rec = "program output before the crash\n" + rec + rec.replace("pid=42", "pid=43")
        if k % 4 == 3:
            rec = rec[:rec.rindex("end")]  # cut short
        c.add(bytes([k & 9]) + rec.encode())
    c.add(bytes([0]) + b"btpack-crash v2 signal=6\ncbf 02111000201021ff00\nthread 1\nend\n")
    return c
def swift_seeds():
    """CIF maps (the vectors recorded from Swift's runtime, behind the
    arena/table option byte), Swift Backtrace JSON captured from the
    runtime, and its JSON crash logs (tests/data/swift/)."""
    cif, js, logs = Corpus("cif"), Corpus("cli_swift"), Corpus("cli_swift_crashlog")
    for i, v in enumerate(jsonl("cif-swift.jsonl")):
        blob = bytes.fromhex(v["hex"])
        if len(blob) < 4096:
            cif.add(bytes([(i * 37) & 0xff]) + blob)
    swift = os.path.join(DATA, "swift")
    with open(os.path.join(swift, "capture.jsonl"), "rb") as f:
        lines = f.read().splitlines(keepends=True)
    for k, line in enumerate(lines):
        js.add(bytes([4 | (k & 1) | (k & 2) << 2]) + line)
    js.add(bytes([4]) + b"".join(lines))
    for name in sorted(os.listdir(swift)):
        if name.startswith("crash-"):
            with open(os.path.join(swift, name), "rb") as f:
                logs.add(bytes([4]) + f.read())
    return [cif, js, logs]


# (seed, word bits, records, block bytes, dictionary cap, pack (0 stored, 1 zlib,
# 2 LZMA2)[, items]): several blocks and segments in a few hundred bytes; with
# items, blocks of several metadata items and items in the end block.
LOGS = [(1, 64, 30, 256, 64, 1), (2, 32, 40, 200, 32, 0), (3, 16, 20, 128, 1 << 20, 0),
        (4, 64, 60, 300, 40, 1), (5, 64, 5, 4096, 1 << 20, 1), (6, 32, 80, 512, 64, 1),
        (7, 64, 25, 160, 40, 0), (8, 64, 30, 256, 64, 1, 1), (9, 32, 20, 4096, 1 << 20, 0, 1),
        # blocks of a few hundred records: MODEL4's range-coded tags (M4_TAGS)
        (10, 64, 400, 4096, 1 << 20, 0), (11, 32, 300, 2048, 120, 0),
        (12, 64, 400, 8192, 1 << 20, 1),
        # LZMA2 blocks
        (8, 64, 60, 300, 40, 2), (9, 32, 80, 2048, 64, 2)]


def log_seeds(build):
    gen = os.path.join(build, "fuzz", "log_seedgen")
    if not os.access(gen, os.X_OK):
        print(f"{gen} not built: fuzz/corpus/log left as it is")
        return []
    c = Corpus("log")
    tmp = os.path.join(tempfile.mkdtemp(), "log")
        (7, 64, 25, 160, 40, 0), (8, 64, 30, 256, 64, 1, 1), (9, 32, 20, 4096, 1 << 20, 0, 1),
        (8, 64, 60, 300, 40, 2), (9, 32, 80, 2048, 64, 2)]
        with open(tmp, "rb") as f:
            log = f.read()
        os.unlink(tmp)
        # Option byte: plain, and keep-going with a cut/seek position.
        c.add(bytes([0]) + log)
        c.add(bytes([1 | (seed * 37 % 128) << 1]) + log)
    # Real heap records (cc1 under glibc malloc: bins, next chunks, freed
    # pointers, free ranks of every kind), in small blocks, by the CLI's writer
    btpack = os.path.join(build, "tools", "btpack")
    with lzma.open(os.path.join(DATA, "log", "heap6000.trace.xz")) as f:
        lines = f.read().splitlines(keepends=True)
    for first, count, block, pack in ((1, 400, 1024, "zlib"), (3000, 300, 4096, "zlib"),
                                      (5000, 300, 4096, "lzma")):
        with open(tmp + ".trace", "wb") as f:
            f.write(lines[0] + b"".join(lines[first:first + count]))
        subprocess.run([btpack, "convert", "--from", "trace", "--to", "log", "--block-size",
                        str(block), "--compress", pack, "-o", tmp, tmp + ".trace"], check=True)
        with open(tmp, "rb") as f:
            log = f.read()
        os.unlink(tmp)
        os.unlink(tmp + ".trace")
        c.add(bytes([0]) + log)
        c.add(bytes([1 | (first * 37 % 128) << 1]) + log)
    # Logs of the older codings, which readers keep reading: the test logs,
    # and the seeds this script wrote when the writer wrote MODEL2 and MODEL3
    # (kept as they were, option byte included)
    for name in ("v2-before-model2.btlog", "v2-model2-heap.btlog", "v2-model3-heap.btlog"):
        with open(os.path.join(DATA, "log", name), "rb") as f:
            c.add(bytes([0]) + f.read())
    for coding in ("fuzz-model2", "fuzz-model3"):
        old = os.path.join(DATA, "log", coding)
        for name in sorted(os.listdir(old)):
            with open(os.path.join(old, name), "rb") as f:
                c.add(f.read())
    os.rmdir(os.path.dirname(tmp))
    return [c]


def main():
    made = [cbf_seeds(), cbf_encode_seeds(), base64_seeds(), *lws_seeds(), *cli_seeds(),
            *image_seeds(), crash_seeds(), *swift_seeds()]
    if len(sys.argv) > 1:
        made += log_seeds(sys.argv[1])
    for c in made:
        print(f"{os.path.relpath(c.dir, ROOT)}: {c.count} files")
    print(f"total: {sum(c.count for c in made)} files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
