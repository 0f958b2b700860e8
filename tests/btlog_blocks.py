"""The blocks of a btpack trace log (spec/log.md), for the Python tests and
bench scripts that take a log apart or put one together by hand: LEB128
varints, a version 2 log's blocks with their payloads decompressed (zlib or
LZMA2), and a block packed again."""
import lzma
import struct
import zlib

ZLIB, LZMA, ITEMS = 0x01, 0x40, 0x80  # block header flags


def varint(v):
    out = bytearray()
    while True:
        out.append((v & 0x7f) | (0x80 if v >> 7 else 0))
        v >>= 7
        if not v:
            return bytes(out)


def read_varint(d, p):
    """(value, position after it) of the varint at d[p]."""
    v = s = 0
    while True:
        b = d[p]
        p += 1
        v |= (b & 0x7f) << s
        s += 7
        if not b & 0x80:
            return v, p


def blocks(log):
    """[(header as a bytearray, raw payload)] of a version 2 log: a 32-byte
    file header, then 80-byte block headers and their payloads."""
    out, pos = [], 32
    while pos + 80 <= len(log):
        h = bytearray(log[pos:pos + 80])
        stored, raw_len = struct.unpack_from("<II", h, 8)
        pl = log[pos + 80:pos + 80 + stored]
        if h[5] & ZLIB:
            pl = zlib.decompress(pl)
        elif h[5] & LZMA:  # a raw LZMA2 stream, dictionary max(raw_len, 4096)
            pl = lzma.decompress(pl, format=lzma.FORMAT_RAW, filters=[
                {"id": lzma.FILTER_LZMA2, "dict_size": max(raw_len, 4096)}])
        out.append((h, pl))
        pos += 80 + stored
    return out


def pack_block(header, raw, index, compress=True, flags=0):
    """A block of payload raw with header's fields, block number index and
    flags added, zlib-compressed (level 9) when compress and smaller; its
    lengths and checksums made to fit."""
    h = bytearray(header)
    z = zlib.compress(raw, 9)
    stored = z if compress and len(z) < len(raw) else raw
    h[5] = (h[5] & ~(ZLIB | LZMA) & 0xff) | flags | (ZLIB if stored is z else 0)
    struct.pack_into("<II", h, 8, len(stored), len(raw))
    struct.pack_into("<Q", h, 24, index)
    struct.pack_into("<I", h, 60, zlib.crc32(stored))
    struct.pack_into("<I", h, 76, zlib.crc32(bytes(h[:76])))
    return bytes(h) + stored
