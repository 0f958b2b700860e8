#!/usr/bin/env python3
"""The `log` format through the real `btpack`:

- every corpus: trace -> log -> trace gives the decompressed file back byte for
  byte (comments included), with and without zlib;
- log -> every other writable format equals trace -> that format;
- allocation formats on small records: trace <-> log <-> json;
- stats on a log (counts, sections, symbolized module offsets from the maps);
- a cut and a damaged log: what is recovered, messages, exit status;
- metadata items several to a block and in the END block read as they do
  one to a block.

usage: log_cli.py BTPACK CORPUS_DIR
"""
import json
import lzma
import os
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import btlog_blocks  # noqa: E402
from pycheck import check, finish  # noqa: E402

BTPACK, CORPUS = sys.argv[1], sys.argv[2]
STORED = os.path.join(CORPUS, "..", "log", "synthetic-zlib.btlog")


def run(args, data=None):
    p = subprocess.run([BTPACK] + args, input=data, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=600)
    return p.returncode, p.stdout, p.stderr.decode("utf-8", "replace")


def conv(frm, to, *args, data=None):
    return run(["convert", "--from", frm, "--to", to] + list(args), data)


def writable_formats():
    """The output formats `btpack convert --help` lists."""
    out = run(["convert", "--help"])[1].decode()
    section = out.split("output formats:\n", 1)[1].split("\n\n", 1)[0]
    return [l.split()[0] for l in section.splitlines() if l.startswith("  ")]


def have_zlib():
    rc, out, _ = run(["--version"])
    return b"log compression: zlib" in out


def have_lzma():
    rc, out, _ = run(["--version"])
    return b"log compression:" in out and b"lzma" in out.split(b"log compression:")[1].split(b"\n")[0]


def test_corpora(tmp):
    zlib = have_zlib()
    if not zlib:
        print("built without zlib: the size target (log smaller than .trace.xz) is not checked")
    fmts = writable_formats()
    check("log" in fmts and "trace" in fmts, "log and trace listed as output formats")
    for name, word in [("sqlite3_i386", 32), ("gcc12_cc1_sqlite3", 64), ("py311_regrtest", 64)]:
        src = os.path.join(CORPUS, name + ".trace.xz")
        maps = os.path.join(CORPUS, name + ".maps")
        with lzma.open(src) as f:
            text = f.read()
        log = os.path.join(tmp, name + ".btlog")
        rc, out, err = conv("trace", "log", "--maps", maps, "-o", log, src)
        check(rc == 0 and out == b"", "%s: trace -> log: %s" % (name, err))
        size = os.path.getsize(log)
        xz = os.path.getsize(src)
        print("%s: log %d bytes, .trace.xz %d bytes (%.1f%%)" % (name, size, xz, 100.0 * size / xz))
        if zlib:
            check(size < xz, "%s: log (%d) smaller than the .trace.xz (%d)" % (name, size, xz))
        rc, back, err = conv("log", "trace", log)
        check(rc == 0 and back == text, "%s: log -> trace is the original file (%s)" % (name, err))
        rc, out, err = conv("trace", "log", "--no-zlib", "-o", log + ".raw", src)
        check(rc == 0, "%s: --no-zlib: %s" % (name, err))
        rc, back, err = conv("log", "trace", log + ".raw")
        check(rc == 0 and back == text, "%s: uncompressed log -> trace: %s" % (name, err))
        if zlib:
            check(os.path.getsize(log + ".raw") > size, "%s: --no-zlib stores more bytes" % name)
        os.unlink(log + ".raw")
        if have_lzma():
            rc, out, err = conv("trace", "log", "--compress", "lzma", "--maps", maps,
                                "-o", log + ".xz", src)
            rc2, back, err2 = conv("log", "trace", log + ".xz")
            check(rc == 0 and rc2 == 0 and back == text, "%s: LZMA2 log -> trace: %s%s" %
                  (name, err, err2))
            check(not zlib or os.path.getsize(log + ".xz") < size,
                  "%s: LZMA2 log (%d) smaller than zlib's (%d)" %
                  (name, os.path.getsize(log + ".xz"), size))
            os.unlink(log + ".xz")
        if name == "sqlite3_i386" and zlib:
            # A version 2 log written before MODEL2 (pointer deltas as LEB128,
            # stack numbers as they are): the first 1500 lines of this corpus
            old = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "log",
                               "v2-before-model2.btlog")
            want = b"".join(text.splitlines(keepends=True)[:1500])
            rc, back, err = conv("log", "trace", old)
            check(rc == 0 and back == want, "a log from before MODEL2 reads back: %s" % err)
            # A MODEL2 log of allocations and frees (6,000 records of a cc1 heap
            # trace: bins, deltas, free ranks), written before MODEL3
            data = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "log")
            with lzma.open(os.path.join(data, "heap6000.trace.xz")) as f:
                want = f.read()
            rc, back, err = conv("log", "trace", os.path.join(data, "v2-model2-heap.btlog"))
            check(rc == 0 and back == want, "a MODEL2 heap log reads back: %s" % err)
            # the same records written with MODEL3 (before MODEL4: dictionary
            # as CBF, stack numbers as LEB128)
            rc, back, err = conv("log", "trace", os.path.join(data, "v2-model3-heap.btlog"))
            check(rc == 0 and back == want, "a MODEL3 heap log reads back: %s" % err)
            # the same records written now (MODEL4) read back the same (smaller on
            # the corpora, bench/README.md; about as small on these 6,000)
            src2 = os.path.join(tmp, "heap6000.trace")
            with open(src2, "wb") as f:
                f.write(want)
            rc, out, err = conv("trace", "log", "-o", src2 + ".btlog", src2)
            rc2, back, err2 = conv("log", "trace", src2 + ".btlog")
            check(rc == 0 and rc2 == 0 and back == want, "heap records -> MODEL4 log -> trace: %s%s"
                  % (err, err2))
        if name == "sqlite3_i386":
            for to in fmts:
                if to in ("log", "trace"):
                    continue
                # --keep-going: lws holds at most 31 frames, deeper stacks are skipped
                rc1, a, e1 = conv("trace", to, "--keep-going", src)
                rc2, b, e2 = conv("log", to, "--keep-going", log)
                if to in ("swift", "swift-crashlog"):
                    # These carry the log's stored maps as each trace's image
                    # map (the .trace has none): same traces, and the map.
                    check(b"imageMap" in b[:20000] or b'"images"' in b[:20000],
                          "%s: log -> %s carries the stored maps" % (name, to))
                    a = conv(to, "json", data=a)[1]
                    b = conv(to, "json", data=b)[1]
                check(rc1 == rc2 and len(a) > 1000 and a == b,
                      "%s: log -> %s equals trace -> %s (%s %s)" % (name, to, to, e1[:300],
                                                                 e2[:300]))
                if to == "lws":
                    # lws records (allocation size and stack) -> log -> lws
                    rc, log2, err = conv("lws", "log", "--word-bits", "32", data=a)
                    rc2, back, err2 = conv("log", "lws", data=log2)
                    check(rc == 0 and rc2 == 0 and back == a,
                          "lws -> log -> lws: %s %s" % (err[:300], err2[:300]))
            rc, out, err = run(["stats", log, "--top", "2"])
            s = out.decode()
            for want in ["records         220389 (110196 allocations, 110193 frees, 0 backtraces)",
                         "distinct stacks 499", "tree nodes", "word size       32",
                         "top 2 allocation stacks by count:", "sqlite3-i386+0x7508d",
                         "top 2 allocation stacks by bytes:", "live at end     4640 bytes in 3"]:
                check(want in s, "stats shows %r:\n%s%s" % (want, s[:3000], err))
            rc2, out2, _ = run(["stats", "--from", "log", log, "--top", "2"])
            check(rc == 0 and rc2 == 0 and out2 == out, "stats: --from log same as sniffed")


SMALL = (b"# stkshim v1 method=x word=64 pid=1 comm=a every=1 maxdepth=256\n"
         b"m 32 0x1000 0x401000 0x402000 0x403000\n"
         b"m 48 0x1040 0x401010 0x402000 0x403000\n"
         b"f 0x1000\n"
         b"m 32 0x1000 0x401000 0x402000 0x403000\n"
         b"f 0xdead0\n"
         b"f 0x1040\n"
         b"m 0 0x2000\n"
         b"# end alloc_calls=4 traces=4 frees=3 truncated=0 stopped_early=0\n")


def test_small(tmp):
    rc, log, err = conv("trace", "log", data=SMALL)
    check(rc == 0 and log[:8] == b"\x89BTPLOG\n", "small trace -> log: %s" % err)
    rc, back, err = conv("log", "trace", data=log)
    check(rc == 0 and back == SMALL, "small log -> trace: %r %s" % (back, err))
    rc, js, err = conv("log", "json", data=log)
    rc2, js2, _ = conv("trace", "json", data=SMALL)
    check(rc == 0 and js == js2 and b'"alloc_size":48' in js, "log -> json: %r %s" % (js, err))
    # json (plain traces, one with an allocation size) -> log -> json
    rc, log2, err = conv("json", "log", data=js)
    rc, js3, err = conv("log", "json", data=log2)
    check(rc == 0 and js3 == js, "json -> log -> json: %r %s" % (js3, err))
    # plain traces with every frame kind and truncation, 32-bit
    plain = ('{"word_bits":32,"frames":[{"type":"pc","addr":"0x10"},{"type":"omit","count":4},'
             '{"type":"async","addr":"0xffffffff"}],"truncated":true}\n').encode()
    rc, log3, err = conv("json", "log", data=plain)
    rc, back, err = conv("log", "json", data=log3)
    check(rc == 0 and back == plain, "plain traces through a log: %r %s" % (back, err))
    # trace cannot hold plain traces; log holds one word size
    rc, _, err = conv("log", "trace", data=log3)
    check(rc == 1 and "allocation records" in err, "plain log -> trace: %s" % err)
    mixed = plain + b'{"word_bits":64,"frames":[{"type":"ra","addr":"0x10"}],"truncated":false}\n'
    rc, _, err = conv("json", "log", data=mixed)
    check(rc == 1 and "one word size" in err, "two word sizes: %s" % err)
    # empty input gives a valid empty log
    rc, empty, err = conv("trace", "log", data=b"")
    rc2, back, err2 = conv("log", "trace", data=empty)
    check(rc == 0 and rc2 == 0 and back == b"", "empty log: %r %s %s" % (back, err, err2))
    # not a log
    rc, _, err = conv("log", "json", data=b"hello world, this is not a log at all....")
    check(rc == 1 and "not a readable btpack log" in err, "garbage: %s" % err)
    rc, _, err = conv("trace", "log", "--maps", os.path.join(tmp, "nope"), data=SMALL)
    check(rc == 1 and "--maps" in err, "missing maps file: %s" % err)
    # a compressed log: read with zlib, refused clearly without
    rc, out, err = conv("log", "json", STORED)
    if have_zlib():
        check(rc == 0 and out.count(b"\n") > 1000, "stored compressed log: %s" % err)
    else:
        check(rc == 1 and "no zlib" in err and "rebuild btpack with zlib" in err,
              "compressed log without zlib: %s" % err)


def test_damage(tmp):
    src = os.path.join(CORPUS, "py311_regrtest.trace.xz")
    with lzma.open(src) as f:
        lines = [l for l in f.read().splitlines(True) if not l.startswith(b"#")]
    # blocks of 32 KiB (a file otherwise gets 2 MiB ones: one block here)
    rc, log, err = conv("trace", "log", "--no-zlib", "--block-size", "32768", src)
    check(rc == 0, "py311 -> log: %s" % err)
    # cut in the middle: complete blocks come out, then the error, exit 1
    cut = log[:len(log) // 2]
    rc, out, err = conv("log", "trace", data=cut)
    got = [l for l in out.splitlines(True) if not l.startswith(b"#")]
    check(rc == 1 and "ends inside a block" in err and 0 < len(got) < len(lines) and
          got == lines[:len(got)], "cut log: %d of %d lines, %s" % (len(got), len(lines), err))
    # a flipped byte in the middle: strict stops, --keep-going goes on
    bad = bytearray(log)
    bad[len(bad) // 2] ^= 0x55
    rc, out, err = conv("log", "trace", data=bytes(bad))
    got1 = [l for l in out.splitlines(True) if not l.startswith(b"#")]
    check(rc == 1 and "checksum" in err and "byte offset" in err and got1 == lines[:len(got1)],
          "flipped byte, strict: %s" % err)
    rc, out, err = conv("log", "trace", "--keep-going", data=bytes(bad))
    got2 = [l for l in out.splitlines(True) if not l.startswith(b"#")]
    check(rc == 1 and len(got2) > len(got1) and set(got2) <= set(lines),
          "flipped byte, keep going: %d then %d of %d lines: %s" %
          (len(got1), len(got2), len(lines), err[:500]))


def blocks_of(log):
    """(offset, end, kind, records, first_record) of every block (spec/log.md,
    version 2: 80-byte block headers)."""
    import struct
    out, off = [], 32
    while off + 80 <= len(log):
        stored, recs = struct.unpack_from("<I", log, off + 8)[0], struct.unpack_from(
            "<I", log, off + 20)[0]
        first = struct.unpack_from("<Q", log, off + 32)[0]
        out.append((off, off + 80 + stored, log[off + 4], recs, first))
        off += 80 + stored
    return out


def test_promises(tmp):
    """What a trace log promises: nothing a failed record or damage did not
    take is lost, and every loss is reported with its records and bytes."""
    good = [{"word_bits": 64, "frames": [{"type": "ra", "addr": hex(0x1000 + i)}],
             "truncated": False, "alloc_size": 8} for i in range(1000)]
    deep = {"word_bits": 64, "frames": [{"type": "ra", "addr": hex(0x1000 + i)}
                                        for i in range(4100)], "truncated": False}
    trunc = {"word_bits": 64, "frames": [], "truncated": True, "alloc_size": 8}
    import json
    for first in [deep, trunc]:
        src = "".join(json.dumps(t) + "\n" for t in [first] + good).encode()
        rc, log, err = conv("json", "log", "--keep-going", data=src)
        check(rc == 1 and "1 bad record skipped" in err and log[:8] == b"\x89BTPLOG\n",
              "first record refused: %s" % err)
        rc, back, err = conv("log", "json", data=log)
        check(rc == 0 and back.count(b"\n") == 1000, "the 1000 good records stay: %d %s" %
              (back.count(b"\n"), err))
    # mid-stream: a flushed block and a comment before a refused record
    lines = [b"# stkshim v1 word=64\n"] + [b"m 16 0x%x 0x401000 0x402000\n" % (0x1000 + 16 * i)
                                          for i in range(3000)]
    lines += [b"# a comment\n", b"m 8 0x9000 " + b" ".join(b"0x%x" % (0x1000 + i)
                                                         for i in range(4100)) + b"\n"]
    lines += [b"m 16 0x%x 0x401000\n" % (0x100000 + 16 * i) for i in range(3)]
    src = b"".join(lines)
    rc, log, err = conv("trace", "log", "--keep-going", data=src)
    check(rc == 1 and "4100 frames" in err, "mid-stream refusal: %s" % err)
    rc, back, err = conv("log", "trace", data=log)
    want = b"".join(l for l in lines if not l.startswith(b"m 8 0x9000"))
    check(rc == 0 and back == want, "mid-stream: everything else read back strictly: %s" % err)

    # a whole block cut out
    src = os.path.join(CORPUS, "py311_regrtest.trace.xz")
    rc, log, err = conv("trace", "log", "--no-zlib", "--block-size", "32768", src)
    blocks = [b for b in blocks_of(log) if b[2] == 2]
    check(rc == 0 and len(blocks) >= 3, "blocks: %s" % blocks)
    rc, one, err = conv("trace", "log", "--no-zlib", src)
    check(rc == 0 and len([b for b in blocks_of(one) if b[2] == 2]) == 1,
          "a file's records in 2 MiB blocks: %s" % err)
    for bad_size in ("0", "2097153", "x"):
        rc, _, err = conv("trace", "log", "--block-size", bad_size, data=SMALL)
        check(rc == 2 and "--block-size" in err, "--block-size %s: %s" % (bad_size, err))
    b = blocks[1]
    cut = log[:b[0]] + log[b[1]:]
    rc, out, err = conv("log", "trace", data=cut)
    check(rc == 1 and "%d records lost (records %d to %d)" % (b[3], b[4], b[4] + b[3] - 1) in err
          and "byte offset %d" % b[0] in err, "block cut out, strict: %s" % err[:300])
    rc, out, err = conv("log", "trace", "--keep-going", data=cut)
    check(rc == 1 and "warning" in err and "%d records lost" % b[3] in err,
          "block cut out, keep going: %s" % err[:300])
    # a damaged block: the damage, then the loss with its byte range
    bad = bytearray(log)
    bad[b[0] + 100] ^= 0x20
    rc, out, err = conv("log", "trace", "--keep-going", data=bytes(bad))
    check(rc == 1 and "checksum" in err and
          "%d records lost (records %d to %d, in bytes %d to %d)" %
          (b[3], b[4], b[4] + b[3] - 1, b[0], b[1]) in err, "damaged block: %s" % err[:400])
    # cut inside a block: how many records it took
    rc, out, err = conv("log", "trace", data=log[:b[0] + 1000])
    check(rc == 1 and "losing its %d records from record %d on" % (b[3], b[4]) in err,
          "cut inside a block: %s" % err)
    # one flipped bit in the file header
    rc, full, _ = conv("log", "trace", data=log)
    for at in [0, 9, 13, 28]:
        flip = bytearray(log)
        flip[at] ^= 0x04
        rc, out, err = conv("log", "trace", data=bytes(flip))
        check(rc == 1 and out == b"" and ("--keep-going" in err or at == 0),
              "header flip %d, strict: %s" % (at, err))
        rc, out, err = conv("log", "trace", "--keep-going", data=bytes(flip))
        check(rc == 1 and out == full and "file header" in err,
              "header flip %d, keep going: every record: %s" % (at, err))


def test_segment_reuse(tmp):
    """A segment number used twice: a log of segment 0, then the record
    block of another log, also segment 0 (its header's block index and first
    record made to follow on, with a valid checksum). Stack numbers of the
    two name different stacks, so a reader that took the second block would
    hand out equal (segment, stack) for unequal stacks, and `log -> trace`,
    which reuses a stack's text by that pair, would print one log's frames
    under the other's records. The second block must be refused as damage."""
    import struct
    import zlib as z

    def log_of(text):
        rc, log, err = conv("trace", "log", "--no-zlib", data=text)
        check(rc == 0, "splice input -> log: %s" % err)
        return log

    a_lines = [b"m 16 0x%x 0x401000 0x402000\n" % (0x1000 + 16 * i) for i in range(20)]
    b_lines = [b"m 32 0x%x 0x501000 0x502000 0x503000\n" % (0x9000 + 32 * i) for i in range(20)]
    a, b = log_of(b"".join(a_lines)), log_of(b"".join(b_lines))
    ablk = [x for x in blocks_of(a) if x[2] == 2]
    bblk = [x for x in blocks_of(b) if x[2] == 2]
    end = [x for x in blocks_of(a) if x[2] == 3]
    check(len(ablk) == 1 and len(bblk) == 1 and len(end) == 1, "one record block each")
    if len(ablk) != 1 or len(bblk) != 1 or len(end) != 1:
        return
    def splice(segment):
        head = bytearray(b[bblk[0][0]:bblk[0][0] + 80])
        head[16:20] = struct.pack("<I", segment)
        head[24:32] = struct.pack("<Q", 1)                 # block index after a's
        head[32:40] = struct.pack("<Q", 20)                # first record after a's
        head[76:80] = struct.pack("<I", z.crc32(bytes(head[:76])))
        tail = bytes(a[:ablk[0][1]]) + bytes(head) + b[bblk[0][0] + 80:bblk[0][1]]
        endp = bytes([40, 2])                              # records 40, blocks 2 (varints)
        eh = bytearray(a[end[0][0]:end[0][0] + 80])
        eh[8:12] = eh[12:16] = struct.pack("<I", len(endp))
        eh[24:32] = struct.pack("<Q", 2)
        eh[32:40] = struct.pack("<Q", 40)
        eh[60:64] = struct.pack("<I", z.crc32(endp))
        eh[76:80] = struct.pack("<I", z.crc32(bytes(eh[:76])))
        return tail + bytes(eh) + endp

    for flags in ([], ["--keep-going"]):
        rc, out, err = conv("log", "trace", *flags, data=splice(0))
        got = [l for l in out.splitlines(keepends=True) if not l.startswith(b"#")]
        check(rc == 1 and "corrupt" in err and got == a_lines,
              "segment 0 twice %s: the first log's records, then refused: %r %s" %
              (" ".join(flags), got[len(a_lines) - 1:len(a_lines) + 2], err[:300]))
    # the same block as segment 1 is a new segment: its stack numbers start
    # again and must not be taken for segment 0's (whose text the writer
    # keeps, and for which the reader leaves the frames out)
    rc, out, err = conv("log", "trace", data=splice(1))
    got = [l for l in out.splitlines(keepends=True) if not l.startswith(b"#")]
    check(rc == 0 and got == a_lines + b_lines,
          "segment 1 after segment 0: both logs' records: %r %s" % (got[18:22], err[:300]))


def regroup(log, end_items, compress):
    """The version 2 log `log` with its leading META blocks made one block
    of several items (flag ITEMS) and end_items [(key, data)] added to its
    END block, as btp_log_writer_meta_items() and close_items() write them
    (spec/log.md, "META payload", "END payload"); blocks zlib-compressed
    when `compress` and smaller (whatever they were before)."""
    blocks = btlog_blocks.blocks(log)

    def pack(h, raw, index):
        return btlog_blocks.pack_block(h, raw, index, compress)

    lead = 0
    while blocks[lead][0][4] == 1:
        lead += 1
    out = [log[:32], pack(blocks[0][0][:5] + bytes([0x80]) + blocks[0][0][6:],
                          b"".join(b[1] for b in blocks[:lead]), 0)]
    for i, (h, raw) in enumerate(blocks[lead:-1]):
        out.append(pack(h, raw, 1 + i))
    h, raw = blocks[-1]
    assert h[4] == 3
    records = struct.unpack_from("<Q", h, 32)[0]
    varint = btlog_blocks.varint
    items = b"".join(varint(len(k)) + k + varint(len(d)) + d for k, d in end_items)
    h[5] |= 0x80
    out.append(pack(h, varint(records) + varint(len(blocks) - lead) + items,
                    len(blocks) - lead))
    return b"".join(out)


def test_items(tmp):
    """A log with its metadata several items to a block, and its last items
    in the END block, reads as the log of one item per block: the same
    records, comments and stored maps (convert, stats, heap report)."""
    src = os.path.join(tmp, "items.trace")
    with lzma.open(os.path.join(CORPUS, "sqlite3_i386.trace.xz")) as f:
        text = b"".join(f.read().splitlines(keepends=True)[:3000])
    with open(src, "wb") as f:
        f.write(text)
    one = os.path.join(tmp, "one.btlog")
    # zlib, as regroup() packs the blocks again: the same record bytes in both
    rc, _, err = conv("trace", "log", "--maps", os.path.join(CORPUS, "sqlite3_i386.maps"),
                      "--compress", "zlib" if have_zlib() else "none", "-o", one, src)
    check(rc == 0, "trace -> log: %s" % err)
    data = open(one, "rb").read()
    several = os.path.join(tmp, "several.btlog")
    with open(several, "wb") as f:
        # a clock of 2 s over the records, and the tracer's last note
        f.write(regroup(data, [(b"clock", b"0 0\n2999 2000000000\n"),
                               (b"tracer-end", b"end=exit\n")], have_zlib()))
    check(os.path.getsize(several) < len(data), "fewer bytes: %d of %d" %
          (os.path.getsize(several), len(data)))
    for to in ("trace", "json"):
        rc1, a, e1 = conv("log", to, one)
        rc2, b, e2 = conv("log", to, several)
        check(rc1 == 0 and rc2 == 0 and a == b and len(a) > 1000,
              "log -> %s: the same from both: %s %s" % (to, e1, e2))
    rc, a, e1 = run(["stats", one])
    rc2, b, e2 = run(["stats", several])
    same = [l for l in a.splitlines() if l.split()[:1] in ([b"records"], [b"allocations"])]
    check(rc == 0 and rc2 == 0 and same and all(l in b.splitlines() for l in same),
          "stats: the same counts: %s %s" % (e1, e2))
    rc, a, e1 = run(["heap", "report", "--json", one])
    rc2, b, e2 = run(["heap", "report", "--json", several])
    if rc == 0 and rc2 == 0:
        a, b = json.loads(a), json.loads(b)
        check(b.pop("tracer", None) == "end=exit", "the END block's tracer-end")
        seconds = b["peak"].pop("seconds", None)
        check(seconds is not None and 0.5 < seconds < 1.5,
              "the END block's clock times the peak: %s" % seconds)
        for k in ("tracer", "input"):
            a.pop(k, None), b.pop(k, None)
        a["peak"].pop("seconds", None)
        check(a == b, "heap report: the same from both")
    else:
        check(False, "heap report: %s %s" % (e1, e2))
    # cut inside the END block: every record, reported as cut short
    with open(several + ".cut", "wb") as f:
        f.write(open(several, "rb").read()[:-3])
    rc, out, err = conv("log", "trace", several + ".cut")
    check(rc != 0 and out == conv("log", "trace", one)[1] and "cut short" in err,
          "a log cut in its END block: every record, and the cut: %s" % err)


def test_symbols(tmp):
    """stats --elf: an address in the btpack binary itself is named."""
    import shutil
    if not shutil.which("nm") or not shutil.which("addr2line"):
        print("nm or addr2line not found: --elf symbolization not checked")
        return
    out = subprocess.run(["nm", BTPACK], stdout=subprocess.PIPE).stdout.decode()
    addr = next((int(l.split()[0], 16) for l in out.splitlines()
                 if l.endswith(" cmd_stats")), None)
    check(addr is not None, "cmd_stats in nm output")
    if addr is None:
        return
    text = ("m 8 0x10 0x%x\n" % (addr + 1)).encode()
    rc, log, err = conv("trace", "log", data=text)
    path = os.path.join(tmp, "sym.btlog")
    with open(path, "wb") as f:
        f.write(log)
    rc, out, err = run(["stats", "--elf", BTPACK, path])
    check(rc == 0 and b"cmd_stats" in out, "stats --elf names the function: %s %s" %
          (out[-400:], err))


def stored_images(log):
    """{path: build ID or "-"} of the `image` lines a log stores."""
    out = {}
    for _, pl in btlog_blocks.blocks(open(log, "rb").read()):
        for l in pl.split(b"\n"):
            f = l[l.find(b"image "):].split(b" ", 4) if b"image " in l else []
            if len(f) == 5:
                out[f[4].decode("utf-8", "replace")] = f[3].decode()
    return out


def test_maps_build_ids(tmp):
    """--maps stores a build ID only for the file that was mapped: this
    process's own maps get their C library's, the same text with that
    line's inode (or, on a real device, its device) changed gets none, as
    maps from another machine (the corpus's) get none for files this one
    holds at the same paths."""
    maps = open("/proc/self/maps").read()
    libc = next((l.split(None, 5)[5] for l in maps.splitlines()
                 if len(l.split(None, 5)) == 6 and "/libc.so" in l.split(None, 5)[5]), None)
    if libc is None:
        print("note: no C library in this process's maps: build IDs not checked")
        return
    st = os.stat(libc)

    def build_ids(text, name):
        path, log = os.path.join(tmp, name + ".maps"), os.path.join(tmp, name + ".btlog")
        with open(path, "w") as f:
            f.write(text)
        rc, _, err = conv("trace", "log", "--maps", path, "-o", log,
                          data=b"m 16 0x5000 0x401000 0x402000\n")
        check(rc == 0, "%s: trace -> log: %s" % (name, err))
        return stored_images(log) if rc == 0 else {}

    def changed(field, value):
        lines = []
        for l in maps.splitlines():
            f = l.split(None, 5)
            if len(f) == 6 and f[5] == libc:
                f[field] = value
                l = " ".join(f)
            lines.append(l)
        return "\n".join(lines) + "\n"

    got = build_ids(maps, "self").get(libc, "")
    check(len(got) >= 16 and got != "-", "own maps: %s has a build ID: %r" % (libc, got))
    got = build_ids(changed(4, str(st.st_ino + 1)), "inode").get(libc, "")
    check(got == "-", "another inode: %s without a build ID: %r" % (libc, got))
    if os.major(st.st_dev):
        other = "%02x:%02x" % (os.major(st.st_dev) ^ 1, os.minor(st.st_dev))
        got = build_ids(changed(3, other), "dev").get(libc, "")
        check(got == "-", "another device: %s without a build ID: %r" % (libc, got))
    # the corpus's maps are another machine's: none of its files is this one's
    rc, _, err = conv("trace", "log", "--maps", os.path.join(CORPUS, "sqlite3_i386.maps"),
                      "-o", os.path.join(tmp, "corpus.btlog"),
                      data=b"# word=32\nm 16 0x5000 0x5661b000\n")
    ids = stored_images(os.path.join(tmp, "corpus.btlog")) if rc == 0 else {}
    check(rc == 0 and ids and set(ids.values()) == {"-"},
          "corpus maps: no build IDs from this machine's files: %s %s" % (ids, err))
    print("--maps: build IDs for the files mapped only (%s)" % libc)


with tempfile.TemporaryDirectory() as tmp:
    for t in [test_corpora, test_small, test_damage, test_promises, test_segment_reuse,
              test_items, test_symbols, test_maps_build_ids]:
        t(tmp)
finish()
