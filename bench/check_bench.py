"""Functional test of btpack_bench (not of speed: times are only checked to
be there). usage: check_bench.py BTPACK_BENCH CORPUS.trace.xz...

From each bundled corpus it cuts the first records into a new file (plain
text, and xz-compressed by Python), runs the benchmark on it, and checks:
the JSON Lines have exactly the documented keys; every codec the build has
produced figures (the program itself checks every decoder's output against
the original frames and fails otherwise); the sizes of raw, varint,
zlib-raw and xz-raw equal what this script computes on its own from the
record format; plain and xz input give the same sizes; malformed files are
refused with the line at fault."""
import json
import lzma
import os
import subprocess
import sys
import tempfile
import zlib

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
from pycheck import check, finish  # noqa: E402

KEYS = ["corpus", "codec", "bytes_per_frame", "bytes_per_trace", "encode_ns_per_frame",
        "decode_ns_per_frame", "encode_ns_per_frame_min", "encode_ns_per_frame_max",
        "decode_ns_per_frame_min", "decode_ns_per_frame_max", "encode_rounds", "decode_rounds"]
CODECS = ["raw", "varint", "gwp-asan", "cbf", "cbf-addr", "cbf-swift", "lws", "lws-optimal",
          "lws-bitwise", "log", "log-zlib", "zlib-raw", "xz-raw"]


def run(bench, *args):
    return subprocess.run([bench, *args], capture_output=True, text=True, timeout=600)


def parse(text):
    """Traces (word size, [(size, [frames])]) of a corpus text."""
    word, traces = 64, []
    for line in text.splitlines():
        if line.startswith("# stkshim") and " word=32" in line:
            word = 32
        if line.startswith("m "):
            f = line.split()
            traces.append((int(f[1]), [int(x, 16) for x in f[3:]]))
    return word, traces


def varint_size(word, frames):
    mask, prev, total = (1 << word) - 1, 0, 0
    for v in frames:
        d = (v - prev) & mask
        z = ((d << 1) ^ (mask if d >> (word - 1) else 0)) & mask
        total += max(1, (z.bit_length() + 6) // 7)
        prev = v
    return total


def raw_stream(word, traces):
    out = bytearray()
    for _, frames in traces:
        out += len(frames).to_bytes(2, "little")
        for v in frames:
            out += v.to_bytes(word // 8, "little")
    return bytes(out)


def expected_sizes(word, traces):
    stream = raw_stream(word, traces)
    return {
        "raw": sum(len(f) for _, f in traces) * word // 8,
        "varint": sum(varint_size(word, f) for _, f in traces),
        # gwp_asan works on 64-bit uintptr_t whatever the corpus's words
        "gwp-asan": sum(varint_size(64, f) for _, f in traces),
        "zlib-raw": len(zlib.compress(stream, 9)),
        "xz-raw": len(lzma.compress(stream, format=lzma.FORMAT_XZ, check=lzma.CHECK_CRC64,
                                    preset=9)),
    }


def rows_of(stdout):
    rows = {}
    for line in stdout.splitlines():
        o = json.loads(line)
        check(list(o) == KEYS, "JSON keys %s" % list(o))
        rows[o["codec"]] = o
    return rows


def main():
    bench, corpora = sys.argv[1], sys.argv[2:]
    listed = run(bench, "--list").stdout
    available = [c for c in CODECS if "[" not in
                 next(l for l in listed.splitlines() if l.startswith(c + " "))]
    with tempfile.TemporaryDirectory() as tmp:
        for path in corpora:
            text = lzma.open(path, "rt").read()
            lines = text.splitlines(keepends=True)
            # A header, about 300 records (some frees among them), and a
            # record with a repeated frame and one with no frames, which
            # the real corpora may lack.
            head = "".join(lines[:300])
            word, traces = parse(head)
            a = traces[0][1][0]
            head += "m 16 0x10 %s %s %s\n" % (hex(a), hex(a), hex(a + 4)) + "m 8 0x20\n"
            word, traces = parse(head)
            name = os.path.basename(path).split(".")[0] + "_head"
            plain = os.path.join(tmp, name + ".trace")
            packed = os.path.join(tmp, name + ".trace.xz")
            with open(plain, "w") as f:
                f.write(head)
            with lzma.open(packed, "wt") as f:
                f.write(head)

            r = run(bench, "--json", "--reps", "1", plain)
            check(r.returncode == 0, "%s: exit %d: %s" % (plain, r.returncode, r.stderr))
            rows = rows_of(r.stdout)
            check(list(rows) == CODECS, "%s: codecs %s" % (name, list(rows)))
            nframes = sum(len(f) for _, f in traces)
            for codec, o in rows.items():
                check(o["corpus"] == name, "corpus name %s" % o["corpus"])
                if codec in available:
                    check(all(o[k] is not None and o[k] > 0 for k in KEYS[2:]),
                          "%s %s: missing figures %s" % (name, codec, o))
                    check(o["encode_ns_per_frame_min"] <= o["encode_ns_per_frame"] <=
                          o["encode_ns_per_frame_max"] and
                          o["decode_ns_per_frame_min"] <= o["decode_ns_per_frame"] <=
                          o["decode_ns_per_frame_max"], "%s %s: min/median/max %s" % (name, codec, o))
                else:
                    check(all(o[k] is None for k in KEYS[2:]), "%s %s: n/a row" % (name, codec))
            for codec, size in expected_sizes(word, traces).items():
                if codec in available:
                    got = rows[codec]["bytes_per_frame"]
                    check(abs(got - size / nframes) < 1e-4,
                          "%s %s: %s bytes/frame, expected %.4f" % (name, codec, got,
                                                                    size / nframes))

            r2 = run(bench, "--json", "--reps", "1", packed)
            check(r2.returncode == 0, "%s: exit %d: %s" % (packed, r2.returncode, r2.stderr))
            rows2 = rows_of(r2.stdout)
            for codec in available:
                check(rows2.get(codec, {}).get("bytes_per_trace") ==
                      rows[codec]["bytes_per_trace"], "%s: xz input differs" % codec)

            # cbf and cbf-addr write the same streams
            check(rows["cbf-addr"]["bytes_per_frame"] == rows["cbf"]["bytes_per_frame"],
                  "%s: cbf-addr size differs from cbf" % name)

            r3 = run(bench, "--reps", "1", "--codecs", "raw,cbf", plain)
            check(r3.returncode == 0 and "targets (%s)" % name in r3.stdout,
                  "text output: %s" % r3.stdout)

        bad = {
            "junk": "# stkshim v1 word=64\nm 1 0x10 0x1\nhello\n",
            "badhex": "m 1 0x10 0x1g\n",
            "wide": "# stkshim v1 word=32\nm 1 0x10 0x100000000\n",
            "longhex": "m 1 0x10 0x11111111111111111\n",
            "empty": "",
        }
        for what, body in bad.items():
            p = os.path.join(tmp, what + ".trace")
            with open(p, "w") as f:
                f.write(body)
            r = run(bench, "--reps", "1", p)
            check(r.returncode != 0 and "btpack_bench: " + p in r.stderr,
                  "%s accepted or no message: %d %s" % (what, r.returncode, r.stderr))
        r = run(bench, "--reps", "1", os.path.join(tmp, "junk.trace"))
        check("line 3" in r.stderr, "line number of the fault: %s" % r.stderr)
    finish()


main()
