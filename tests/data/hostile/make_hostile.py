#!/usr/bin/env python3
"""Write the hostile inputs of this folder (see README.md): small files that
are valid but expand to gigabytes or days of work. Deterministic: running it
again gives the same bytes.

usage: make_hostile.py [DIR]   (default: the folder of this script)

Also a module: file_header(), block_header() and varint() build trace logs
for other tests (tests/cli_memory.py).
"""
import os
import sys
import zlib

MAX_BLOCK = 4 << 20


def le(v, n):
    return v.to_bytes(n, "little")


def varint(v):
    out = b""
    while v >= 0x80:
        out += bytes([v & 0x7F | 0x80])
        v >>= 7
    return out + bytes([v])


def zigzag(v):
    return (v << 1) ^ (v >> 63) if v >= 0 else ((-v) << 1) - 1


def file_header(word=64, max_nodes=1 << 20, max_live=1 << 20):
    """A version 2 file header (spec/log.md)."""
    fh = b"\x89BTPLOG\n" + bytes([2, word]) + le(0, 2) + le(max_nodes, 4) + le(max_live, 4)
    fh += bytes(8)
    return fh + le(zlib.crc32(fh), 4)


def block_header(kind, stored_len, raw_len, crc, index, first, records=0, flags=0,
                 counts=b"\0" * 20, segment=0, word=64, max_nodes=1 << 20, max_live=1 << 20):
    """A version 2 block header for a payload of stored_len bytes (raw_len
    inflated) whose CRC is crc; counts: the 20 bytes of stacks_before ..
    live_before."""
    h = (b"BTL2" + bytes([kind, flags, word, 0]) + le(stored_len, 4) + le(raw_len, 4) +
         le(segment, 4) + le(records, 4) + le(index, 8) + le(first, 8) + counts + le(crc, 4) +
         le(max_nodes, 4) + le(max_live, 4) + bytes(4))
    return h + le(zlib.crc32(h), 4)


class Log:
    """A version 2 trace log (spec/log.md), block by block."""

    def __init__(self, max_nodes=1 << 20, max_live=1 << 20, word=64):
        self.params = dict(word=word, max_nodes=max_nodes, max_live=max_live)
        self.data = bytearray(file_header(word, max_nodes, max_live))
        self.index = 0
        self.records = 0

    def block(self, kind, raw, flags=0, records=0, segment=0, counts=(0, 0, 1, 0, 0)):
        """counts: stacks_before, stacks_added, nodes_before, nodes_added, live_before."""
        assert len(raw) <= MAX_BLOCK
        stored = zlib.compress(raw, 9)
        if len(stored) < len(raw):
            flags |= 1
        else:
            stored = raw
        self.data += block_header(kind, len(stored), len(raw), zlib.crc32(stored), self.index,
                                  self.records, records, flags,
                                  b"".join(le(c, 4) for c in counts), segment,
                                  **self.params) + stored
        self.index += 1
        self.records += records

    def records_block(self, sections, records, **kw):
        raw = b"".join(varint(len(s)) + s for s in sections)
        self.block(2, raw, records=records, **kw)

    def end(self):
        self.block(3, varint(self.records) + varint(self.index))
        return bytes(self.data)


SEGMENT_START = 2
# CBF v0, 64-bit: pc abs 0x1000, then 4095 x pc rel +0x10: a stack of 4096
# distinct frames (the deepest a log holds)
DEEP_4096 = bytes([0x02, 0x19, 0x10, 0x00]) + bytes([0x10, 0x10]) * 4095 + b"\x00"


def expand_frames():
    """2.1M plain backtraces, each the same 4096-frame stack: about 4 KB that
    describe 8.6 * 10^9 frames (some 230 GB as JSON)."""
    log = Log()
    total, first = 2100000, 2000000
    dict_ = varint(0) + DEEP_4096
    log.records_block([dict_, b"\xfc" * first, b"\x00" * first, b"", b"", b""], first,
                      flags=SEGMENT_START, counts=(0, 1, 1, 4096, 0))
    rest = total - first
    log.records_block([b"", b"\xfc" * rest, b"\x00" * rest, b"", b"", b""], rest,
                      counts=(1, 0, 4097, 0, 0))
    return log.end()


def expand_nodes():
    """200 segments, each building 4095 stacks of 4096 frames (16.8M tree
    nodes) from 9 bytes apiece: some 30 KB that cost 3.4 * 10^9 nodes."""
    log = Log(max_nodes=1 << 24)
    # pc abs 0x1000, rep 4095 (external count), end
    entry = varint(0) + bytes([0x02, 0x19, 0x10, 0x00, 0x89, 0x0F, 0xFF, 0x00])
    k = 4095
    for seg in range(200):
        log.records_block([entry * k, b"", b"", b"", b"", b""], 0, flags=SEGMENT_START,
                          segment=seg, counts=(0, k, 1, k * 4096, 0))
    return log.end()


def live_allocations():
    """17M allocations never freed, in a log whose live table holds 2^24:
    some 50 KB that need 16.8M live entries (over 600 MB)."""
    log = Log(max_live=1 << 24)
    per, blocks = 1300000, 13
    ptr = 0x100000
    for b in range(blocks):
        # the first allocation of a block carries its size and pointer; the
        # rest are SIZE_SAME, 16 bytes after the one before
        tags = b"\x00" + b"\x02" * (per - 1)
        ptrs = varint(zigzag(ptr)) + varint(zigzag(16)) * (per - 1)
        dict_ = varint(0) + b"\x02\x00" if b == 0 else b""  # stack 0: the empty stack
        live = min(b * per, 1 << 24)
        log.records_block([dict_, tags, b"\x00" * per, varint(16), ptrs, b""], per,
                          flags=SEGMENT_START if b == 0 else 0,
                          counts=(0 if b == 0 else 1, 1 if b == 0 else 0, 1, 0, live))
        ptr += 16 * per
    return log.end()


FILES = {
    "expand-frames.btlog": expand_frames,
    "expand-nodes.btlog": expand_nodes,
    "live-allocations.btlog": live_allocations,
    # 38 bytes: one CBF stream, pc 0x10 and a rep of 99,999,999 (--max-frames 1e8)
    "rep-1e8.hex": lambda: b"0218108f0000000005f5e0ff00\n",
}

if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    for name, make in FILES.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(make())
        print(name, os.path.getsize(os.path.join(out, name)))
