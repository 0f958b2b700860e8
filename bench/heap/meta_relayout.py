#!/usr/bin/env python3
"""Rewrite a heap tracer's log of one item per META block into the layout the
tracer writes now (spec/log.md "META payload", "END payload"; spec/heap.md),
for comparing sizes on the same run: the META blocks before the first record
become one block of several items (flag ITEMS), the META blocks after the last
record go into the END block, and in each `clock` item of those, of three
samples in a row with the same record count the middle one is dropped. The
record blocks and the metadata between them are copied as they are (only
their block numbers change). Blocks are stored zlib-compressed when smaller,
as the writer does (level 9, the tracer's).

usage: meta_relayout.py IN.btlog OUT.btlog
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests"))
from btlog_blocks import blocks as log_blocks, pack_block, read_varint, varint  # noqa: E402


def items(raw):
    """[(key, data)] of a META payload."""
    out, p = [], 0
    while p < len(raw):
        n, p = read_varint(raw, p)
        key = raw[p:p + n]
        n, p = read_varint(raw, p + n)
        out.append((key, raw[p:p + n]))
        p += n
    return out


def pack_items(its):
    return b"".join(varint(len(k)) + k + varint(len(d)) + d for k, d in its)


def clock_rule(data):
    kept = []
    for line in data.decode().splitlines():
        rec = line.split()[0]
        if len(kept) >= 2 and kept[-1].split()[0] == rec == kept[-2].split()[0]:
            kept[-1] = line
        else:
            kept.append(line)
    return "".join(l + "\n" for l in kept).encode()


def main(src, dst):
    d = open(src, "rb").read()
    blocks = log_blocks(d)
    kinds = [h[4] for h, _ in blocks]
    if kinds[-1] != 3 or 2 not in kinds or any(h[5] & 0x80 for h, _ in blocks):
        sys.exit("%s: not a complete log of one item per block with records" % src)
    first = kinds.index(2)
    last = len(kinds) - 1 - kinds[::-1].index(2)
    out = [d[:32]]
    lead = [it for _, raw in blocks[:first] for it in items(raw)]
    out.append(pack_block(blocks[0][0], pack_items(lead), 0,
                          flags=0x80 if len(lead) > 1 else 0))
    for h, raw in blocks[first:last + 1]:
        out.append(pack_block(h, raw, len(out) - 1))
    tail = [(k, clock_rule(v) if k == b"clock" else v)
            for _, raw in blocks[last + 1:-1] for k, v in items(raw)]
    h, raw = blocks[-1]
    records = read_varint(raw, 0)[0]
    index = len(out) - 1
    out.append(pack_block(h, varint(records) + varint(index) + pack_items(tail), index,
                          flags=0x80 if tail else 0))
    open(dst, "wb").write(b"".join(out))


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
