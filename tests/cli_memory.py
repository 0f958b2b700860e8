#!/usr/bin/env python3
"""Bounded memory on any input: `btpack` reads each format from a pipe fed
by this script and its peak resident memory (the child's ru_maxrss) must
not grow with the input: the same stream at a quarter of the size and at
full size may differ by at most GROWTH, and the peak stays under CEILING.

- log: 1 GiB of a valid trace log (metadata blocks of 1 MiB comments and,
  every 32 MiB, a real block of records), through `stats` and `convert`,
  and a quarter of it through `heap report`;
- CSV heap records: 64 MiB through `heap report`;
- cbf: 256 MiB of CBF (streams of 100,000 `rep` instructions, and small
  streams), through `convert` and `stats`;
- trace: 256 MiB of comment lines;
- json: memory per line a small multiple of the line (one line of 8 MiB
  of 0s; one of 600,000 frames), at most LINE_FACTOR times it; swift the
  same (its line read in place); swift-crashlog, whose reader builds a
  line's tree, at most TREE_FACTOR times it (its values are bounded by the
  line's length);
- writers stream a long run out: a crash log of a 4,000,000-frame `rep`;
- the hostile files of tests/data/hostile/: each stops with the error
  that names its limit, within CEILING (or, rep-1e8.hex, reads as one run).

usage: cli_memory.py BTPACK HOSTILE_DIR
"""
import os
import struct
import subprocess
import sys
import tempfile
import time
import zlib

from pycheck import check, finish

BTPACK = sys.argv[1]
HOSTILE = sys.argv[2]
# Under AddressSanitizer freed memory waits in a quarantine (256 MB by
# default) before it is reused, which would count as growth: keep it small.
if "ASAN_OPTIONS" in os.environ:
    os.environ["ASAN_OPTIONS"] += ":quarantine_size_mb=4:thread_local_quarantine_size_kb=64"
sys.path.insert(0, HOSTILE)
from make_hostile import block_header, file_header, varint  # noqa: E402
MIB = 1 << 20
GROWTH = 16 * MIB     # what the peak may grow from a quarter of the input to all of it
CEILING = 160 * MIB   # sanitizer builds hold more: still far below the input
LINE_FACTOR = 4       # JSON: peak over the floor at most this many times the line
TREE_FACTOR = 16      # swift-crashlog: the same for a line read into a tree
if "ASAN_OPTIONS" in os.environ:
    TREE_FACTOR = 24  # each of the tree's small allocations carries a redzone there


def record_block():
    """A real block of records that starts a segment (so it can be repeated
    anywhere, under a new segment number each time), from a log btpack
    writes: (header fields, payload)."""
    text = b"# stkshim v1 word=64\n" + b"".join(
        b"m %d 0x%x 0x%x 0x401000\n" % (16 + i % 50, 0x10000 + 64 * i, 0x402000 + 16 * (i % 37))
        for i in range(3000))
    log = subprocess.run([BTPACK, "convert", "--from", "trace", "--to", "log"], input=text,
                         stdout=subprocess.PIPE, check=True).stdout
    off = 32
    while off + 80 <= len(log):
        stored = struct.unpack_from("<I", log, off + 8)[0]
        if log[off + 4] == 2:
            return log[off:off + 80], log[off + 80:off + 80 + stored]
        off += 80 + stored
    raise RuntimeError("no record block")


def log_stream(size):
    """A valid log of about `size` bytes, in pieces."""
    hdr, payload = record_block()
    records = struct.unpack_from("<I", hdr, 20)[0]
    flags, raw_len, crc = hdr[5], struct.unpack_from("<I", hdr, 12)[0], struct.unpack_from(
        "<I", hdr, 60)[0]
    counts = hdr[40:60]
    yield file_header()
    data = b"# " + b"c" * (MIB - 3) + b"\n"
    meta = varint(7) + b"comment" + varint(len(data)) + data
    meta_crc = zlib.crc32(meta)
    index = first = 0
    for i in range(size // MIB):
        if i % 32 == 0:
            yield block_header(2, len(payload), raw_len, crc, index, first, records, flags,
                               counts, segment=i // 32) + payload
            index += 1
            first += records
        yield block_header(1, len(meta), len(meta), meta_crc, index, first) + meta
        index += 1
    end = varint(first) + varint(index)
    yield block_header(3, len(end), len(end), zlib.crc32(end), index, first) + end


def repeat(chunk, size):
    for _ in range(-(-size // len(chunk))):  # at least size bytes
        yield chunk


def cbf_reps():
    """A stream of 10^8 frames in 900 KB: pc, then 100,000 reps of 1000."""
    return (bytes([0x02, 0x19, 0x10, 0x00]) + (bytes([0x8F]) + (1000).to_bytes(8, "big")) *
            100000 + b"\x00")


def cbf_small():
    ex = bytes.fromhex("02111000201021ff00357fff000010f0446103e829202080111010880901")
    return ex * (MIB // len(ex))




def comments():
    return b"# " + b"c" * (MIB - 3) + b"\n"


def csv_heap():
    """CSV heap records among other text: allocations and their frees."""
    pairs = b"".join(b"m,%d,0x%x\nuart: tick\nf,,0x%x\n" % (16 + i % 64, 0x50000000 + 64 * i,
                                                            0x50000000 + 64 * i)
                     for i in range(1000))
    return pairs * (MIB // len(pairs))


def peak(args, pieces):
    """Run btpack on what pieces yields through a pipe: (status, peak RSS
    in bytes, bytes fed, seconds)."""
    p = subprocess.Popen([BTPACK] + args, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE)
    fed, t0 = 0, time.monotonic()
    try:
        for piece in pieces:
            p.stdin.write(piece)
            fed += len(piece)
        p.stdin.close()
    except BrokenPipeError:
        pass
    err = p.stderr.read()
    _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    return p.returncode, usage.ru_maxrss * 1024, fed, time.monotonic() - t0, err


CASES = [
    ("log stats", ["stats", "--from", "log"], lambda n: log_stream(n), 1024 * MIB),
    ("log -> trace", ["convert", "--from", "log", "--to", "trace"], lambda n: log_stream(n),
     256 * MIB),
    ("cbf reps -> cbf", ["convert", "--from", "cbf", "--to", "cbf", "--max-frames",
                         "1000000000000"], lambda n: repeat(cbf_reps(), n), 256 * MIB),
    ("small cbf stats", ["stats", "--from", "cbf"], lambda n: repeat(cbf_small(), n), 32 * MIB),
    ("trace comments -> trace", ["convert", "--from", "trace", "--to", "trace"],
     lambda n: repeat(comments(), n), 256 * MIB),
    # the format told from the first bytes of the pipe
    ("log heap report", ["heap", "report"], lambda n: log_stream(n), 256 * MIB),
    ("csv heap report", ["heap", "report"], lambda n: repeat(csv_heap(), n), 64 * MIB),
]

for name, args, gen, size in CASES:
    try:
        rc1, small, fed1, t1, err1 = peak(args, gen(size // 4))
        rc2, big, fed2, t2, err2 = peak(args, gen(size))
    except (RuntimeError, subprocess.CalledProcessError) as e:
        check(False, "%s: %s" % (name, e))
        continue
    print("%-24s %5d MiB: peak %6.1f MiB (%d MiB: %6.1f MiB), %.1f s" %
          (name, fed2 // MIB, big / MIB, fed1 // MIB, small / MIB, t1 + t2))
    check(rc1 == 0 and rc2 == 0, "%s: exit %d/%d %s" % (name, rc1, rc2, (err1 + err2)[:300]))
    check(fed2 >= size * 0.99, "%s: fed %d bytes" % (name, fed2))
    check(big - small <= GROWTH, "%s: peak grew %.1f MiB from %d to %d MiB of input" %
          (name, (big - small) / MIB, fed1 // MIB, fed2 // MIB))
    check(big <= CEILING, "%s: peak %.1f MiB" % (name, big / MIB))
# JSON: one long line costs a small multiple of itself. The lines are
# written to files piece by piece, so that this script stays small: a
# child's peak counts what the forked interpreter held. The floor is the
# peak on a tiny line.
def zeros(head):
    """A writer of one line: head, then an array of 8 MiB of 0s, closed."""
    def make(f):
        f.write(head + b"[0")
        for _ in range(128):
            f.write(b",0" * (MIB // 32))
        f.write(b"]}\n")
    return make


def json_frames(f):
    f.write(b'{"word_bits":64,"frames":[{"type":"ra","addr":"0x400000"}')
    for k in range(60):
        f.write(b"".join(b',{"type":"ra","addr":"0x%x"}' % (0x400000 + 10000 * k + i)
                         for i in range(1, 10001)))
    f.write(b'],"truncated":false}\n')


def peak_file(args, path):
    with open(path, "rb") as f:
        p = subprocess.Popen([BTPACK] + args, stdin=f, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE)
        t0 = time.monotonic()
        err = p.stderr.read()
        _, status, usage = os.wait4(p.pid, 0)
    return os.waitstatus_to_exitcode(status), usage.ru_maxrss * 1024, time.monotonic() - t0, err


with tempfile.TemporaryDirectory() as tmp:
    tiny = os.path.join(tmp, "tiny.json")
    with open(tiny, "wb") as f:
        f.write(b'{"frames":[]}\n')
    _, floor, _, _ = peak_file(["convert", "--from", "json", "--to", "hex"], tiny)
    for name, fmt, make, want_rc, factor in [
            ("json line of 0s", "json", zeros(b'{"frames":'), 1, LINE_FACTOR),
            ("json line of frames", "json", json_frames, 0, LINE_FACTOR),
            ("swift line of 0s", "swift",
             zeros(b'{"architecture":"x86_64","backtrace":"AiEVAAA","other":'), 0, LINE_FACTOR),
            ("swift-crashlog line of 0s", "swift-crashlog",
             zeros(b'{"kind":"crashReport","architecture":"x86_64","threads":[],"other":'), 1,
             TREE_FACTOR)]:
        path = os.path.join(tmp, "line.json")
        with open(path, "wb") as f:
            make(f)
        size = os.path.getsize(path)
        rc, top, t, err = peak_file(["convert", "--from", fmt, "--to", "hex"], path)
        print("%-26s %5.1f MiB: peak %6.1f MiB (floor %.1f), %.1f s" %
              (name, size / MIB, top / MIB, floor / MIB, t))
        check(rc == want_rc, "%s: exit %d %s" % (name, rc, err[:200]))
        check(top - floor <= factor * size, "%s: %.1f MiB over the floor for a %.1f MiB "
              "line" % (name, (top - floor) / MIB, size / MIB))
    # a crash log written as it comes: 4,000,000 frames (252 MB of text) of
    # one `rep` stream out
    rep4m = os.path.join(tmp, "rep4m.hex")
    with open(rep4m, "wb") as f:
        f.write(b"0218108f00000000003d08ff00\n")
    rc, top, t, err = peak_file(["convert", "--from", "hex", "--to", "swift-crashlog",
                                 "--max-frames", "4000000", rep4m], os.devnull)
    print("%-26s peak %6.1f MiB, %.1f s" % ("crash log of a 4M rep", top / MIB, t))
    check(rc == 0 and top <= CEILING, "crash log of a 4M rep: exit %d, peak %.1f MiB %s" %
          (rc, top / MIB, err[:200]))
# Small files that claim gigabytes: stopped, with the limit named.
HOSTILE_CASES = [
    (["stats", "expand-frames.btlog"], 1, "--max-expansion"),
    (["convert", "--from", "log", "--to", "hex", "expand-frames.btlog"], 1, "--max-expansion"),
    (["stats", "expand-nodes.btlog"], 1, "--max-nodes"),
    (["stats", "--max-nodes", "16777216", "expand-nodes.btlog"], 1, "--max-expansion"),
    (["stats", "live-allocations.btlog"], 1, "--max-live"),
    (["convert", "--from", "log", "--to", "trace", "live-allocations.btlog"], 1, "--max-live"),
    (["stats", "--max-frames", "100000000", "rep-1e8.hex"], 0, "frames          100000000"),
    (["convert", "--from", "hex", "--to", "cbf", "--max-frames", "100000000", "rep-1e8.hex"], 0,
     None),
    (["convert", "--from", "hex", "--to", "hex", "rep-1e8.hex"], 1, "--max-frames"),
]
for args, want_rc, want in HOSTILE_CASES:
    args = args[:-1] + [os.path.join(HOSTILE, args[-1])]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        p = subprocess.Popen([BTPACK] + args, stdout=out, stderr=err)
        _, status, usage = os.wait4(p.pid, 0)
        rc = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        text = (out.read(1 << 12) + err.read()).decode("utf-8", "replace")
    name = " ".join(args[:-1] + [os.path.basename(args[-1])])
    print("%-60s exit %d, peak %6.1f MiB" % (name[:60], rc, usage.ru_maxrss / 1024))
    check(rc == want_rc and (want is None or want in text), "%s: exit %d, %r" %
          (name, rc, text[-300:]))
    check(usage.ru_maxrss * 1024 <= CEILING, "%s: peak %.1f MiB" %
          (name, usage.ru_maxrss / 1024))
finish()
