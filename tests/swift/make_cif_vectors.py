#!/usr/bin/env python3
"""Writes tests/data/vectors/cif-swift.jsonl: CIF inputs with what Swift
6.3.1's runtime does with each (observed by running PROBE, the compiled
tests/swift/probe.swift) and what btpack's decoder must do under each
policy (written here, by hand, from spec/cif.md).

usage: make_cif_vectors.py PROBE > tests/data/vectors/cif-swift.jsonl

Each line:
  id, kind ("valid" or "malformed"), hex, note;
  swift_6_3_1: {"result": "map", "platform": HEX, "images": [[NAME, PATH,
      BUILD_ID (hex or null), "0xBASE", "0xEND"], ...], "reencoded": HEX}
      | {"result": "nil"} (Swift's decoder gives no map)
      | {"result": "trap"} (Swift's process dies);
  expect: {"default"|"strict"|"swift": [STATUS, OFFSET]} for btpack's
      policies; with "ok", OFFSET is the map's length (bytes consumed);
  swift_agrees: true when btpack's Swift policy must give Swift's images,
      else a reason (a documented difference, spec/cif.md);
  swift_bug (valid only): Swift's re-encoding is corrupt for this map, and
      only the encoder's Swift-bugs mode reproduces it.
tests/test_cif_vectors.c checks the btpack side, swift_interop.py (part 4)
checks that Swift still does what is recorded.
"""

import json
import os
import random
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cifgen  # noqa: E402

PROBE = sys.argv[1]


class B:
    """A byte string being built, with named offsets."""

    def __init__(self):
        self.b = bytearray()
        self.at = {}

    def mark(self, name):
        self.at[name] = len(self.b)
        return self

    def add(self, data):
        self.b += bytes(data)
        return self


def header(b, size=2, platform=b"Linux (unknown)"):
    b.add([size, len(platform)]).add(platform)
    return b


def image(b, base, off, bid=b"", path=b"\x00", hbyte=None, tag=""):
    """An absolute image with an 8-byte base and the shortest offset."""
    e = off.to_bytes(8, "big", signed=True).lstrip(b"\xff" if off < 0 else b"\x00")
    if not e or (e[0] & 0x80) != (0x80 if off < 0 else 0):
        e = (b"\xff" if off < 0 else b"\x00") + e
    h = (7 << 3) | (len(e) - 1) if hbyte is None else hbyte
    b.mark("hdr" + tag).add([h]).mark("base" + tag).add(base.to_bytes(8, "big"))
    b.mark("eot" + tag).add(e).mark("bid" + tag).add(cifgen.count(len(bid))).add(bid)
    b.mark("path" + tag).add(path)
    return b


def lit(s):
    out = b""
    while s:
        out += bytes([min(63, len(s))]) + s[:63]
        s = s[63:]
    return out + b"\x00"


BASE = 0x7f0000000000
OK = "ok"


def malformed():
    """(id, bytes, {policy: (status, offset)}, swift_agrees, note)."""
    out = []

    def add(id_, b, d, s, l, agrees=True, note=""):
        n = len(b.b)
        fix = lambda e: [e[0], n if e[1] is None else e[1]]  # noqa: E731
        out.append((id_, bytes(b.b), {"default": fix(d), "strict": fix(s), "swift": fix(l)},
                    agrees, note))

    b = header(B()).add([1])
    image(b, BASE, 0x1000, b"\xab", lit(b"/x/libfoo.so"))
    ok_len = len(b.b)
    b.add(b"\xff\xff")
    add("trailing", b, (OK, ok_len), ("trailing_bytes", ok_len), (OK, ok_len),
        note="bytes after the last image: Swift ignores them")

    b = header(B()).add([1])
    image(b, BASE, 0x1000, b"", lit(b"/a.so"), hbyte=0x40 | (7 << 3) | 1)
    add("header-bit6", b, (OK, None), ("cif_reserved_bit", b.at["hdr"]), (OK, None),
        note="header bit 6 set: Swift ignores it")

    b = header(B()).add([1])
    image(b, BASE, -0x10, b"", lit(b"/a.so"))
    add("eot-below-base", b, ("cif_bad_range", b.at["eot"]), ("cif_bad_range", b.at["eot"]),
        (OK, None), agrees="Swift decodes the map, but reading that image traps",
        note="end of text 16 bytes below the base")

    b = header(B()).add([1])
    image(b, BASE, 0, b"", lit(b"/a.so"))
    add("eot-equals-base", b, (OK, None), ("cif_empty_text", b.at["eot"]), (OK, None),
        note="zero-size text: Swift 6.3.1 accepts (newer Swift rejects)")

    b = header(B(), platform=b"ab\xffcd").add([1])
    image(b, BASE, 0x1000, b"", lit(b"/a.so"))
    add("platform-bad-utf8", b, (OK, None), ("cif_bad_utf8", 1), (OK, None),
        agrees="Swift replaces the bad byte with U+FFFD, btpack keeps the bytes")

    b = header(B()).add([1])
    image(b, BASE, 0x1000, b"", lit(b"/a\xff/b.so"))
    add("path-bad-utf8", b, (OK, None), ("cif_bad_utf8", b.at["path"]), (OK, None),
        agrees="Swift replaces the bad byte with U+FFFD, btpack keeps the bytes")

    b = header(B()).add([1])
    image(b, BASE, 0x1000, b"", lit(b"/a\x00b.so"))
    nul = b.at["path"] + 3
    add("path-nul", b, ("cif_nul_in_string", nul), ("cif_nul_in_string", nul), (OK, None),
        agrees="Swift keeps the NUL in the path; btpack's C strings cannot, its Swift "
               "policy drops the path")

    b = header(B(), platform=b"a\x00b").add([0])
    add("platform-nul", b, ("cif_nul_in_string", 3), ("cif_nul_in_string", 3), (OK, None),
        agrees="Swift keeps the NUL; btpack's Swift policy drops the platform")

    b = header(B()).add([2])
    image(b, BASE, 0x1000, b"", b"\x8c" + lit(b"/a.so"), tag="0")
    image(b, BASE + 0x10000, 0x1000, b"", lit(b"/b.so"), tag="1")
    # Swift's policy reads image 1 from the byte after the code: header 05
    # (1-byte base "/", 6-byte end offset "a.so" 00 39), an empty build ID,
    # no path (00); the real image 1 is left over as trailing bytes.
    add("reserved-code-12", b, ("cif_bad_prefix", b.at["path0"]),
        ("cif_bad_prefix", b.at["path0"]), (OK, b.at["path0"] + 11),
        note="prefix code 12 (reserved): Swift drops the path and reads the next image from "
             "the byte after the code, which is garbage here")

    b = header(B()).add([1])
    image(b, BASE, 0x1000, b"", b"\x8c" + lit(b"/a.so"))
    add("reserved-code-12-last", b, ("cif_bad_prefix", b.at["path"]),
        ("cif_bad_prefix", b.at["path"]), (OK, b.at["path"] + 1),
        note="the same in the last image: the map survives without that path")

    b = header(B()).add([1])
    image(b, BASE, 0x1000, b"", b"\xa0" + lit(b"/a.so"))
    add("undefined-dynamic-code", b, ("cif_bad_prefix", b.at["path"]),
        ("cif_bad_prefix", b.at["path"]), (OK, b.at["path"] + 1),
        note="prefix code 32 before any prefix was defined")

    b = header(B()).add([1])
    image(b, BASE, 0x1000, b"", b"\x05/a.s")
    add("path-truncated", b, ("cif_truncated", b.at["path"]),
        ("cif_truncated", b.at["path"]), (OK, None), note="a str running past the end")

    b = header(B()).add([1])
    image(b, BASE, 0x1000, b"", b"\x05/a.so")
    add("path-without-end", b, ("cif_truncated", len(b.b)), ("cif_truncated", len(b.b)),
        (OK, None), note="the input ends where the path's `end` should be")

    b = header(B()).add([2])
    image(b, BASE, 0x1000, b"", lit(b"/a.so"))
    add("fewer-images-than-count", b, ("cif_truncated", len(b.b)),
        ("cif_truncated", len(b.b)), ("cif_truncated", len(b.b)), agrees="Swift: no map")

    b = header(B()).add([1])
    image(b, BASE, 0x1000, b"", lit(b"/a.so"))
    end1 = len(b.b)
    image(b, BASE + 0x10000, 0x1000, b"", lit(b"/b.so"), tag="1")
    add("more-images-than-count", b, (OK, end1), ("trailing_bytes", end1), (OK, end1),
        note="a second image the count does not announce: trailing bytes")

    b = header(B()).add([0x80, 0x80, 0x01])
    image(b, BASE, 0x1000, b"", lit(b"/a.so"))
    add("count-two-empty-groups", b, (OK, None), (OK, None), (OK, None),
        note="image count 1 written 80 80 01")

    b = header(B()).mark("count").add([0xbd, 0x84, 0x40])
    image(b, BASE, 0x1000, b"", lit(b"/a.so"))
    add("count-million", b, ("cif_truncated", len(b.b)), ("cif_truncated", len(b.b)),
        ("cif_truncated", len(b.b)),
        agrees="Swift: no map (after reserving room for a million)",
        note="image count 1000000 in a 48-byte map")

    b = header(B(), platform=b"").mark("count").add([0xff] * 9 + [0x7f])
    add("count-negative", b, ("cif_count_too_wide", 2), ("cif_count_too_wide", 2),
        ("cif_count_too_wide", 2), agrees="Swift traps", note="an image count of 2^64-1")

    b = header(B()).add([1])
    image(b, BASE, 0x1000, b"", lit(b"/a.so"))
    b.b[b.at["bid"]:b.at["bid"] + 1] = bytes([0x81] + [0xff] * 8 + [0x7f])
    b.at["path"] += 9
    add("build-id-length-negative", b, ("cif_count_too_wide", b.at["bid"]),
        ("cif_count_too_wide", b.at["bid"]), (OK, None),
        note="a build-ID length that wraps negative in Swift's Int: no build ID")

    b = header(B()).add([1])
    image(b, BASE, 0x1000, b"", b"")
    b.b[b.at["bid"]:] = bytes([0x8f, 0x50]) + b"\x11" * 10
    add("build-id-truncated", b, ("cif_truncated", b.at["bid"]),
        ("cif_build_id_too_long", b.at["bid"]), ("cif_truncated", b.at["bid"]),
        agrees="Swift: no map", note="a 2000-byte build ID in 12 bytes")

    b = header(B()).add([1])
    image(b, BASE, 0x1000, b"\x11" * 1025, lit(b"/a.so"))
    add("build-id-1025", b, (OK, None), ("cif_build_id_too_long", b.at["bid"]), (OK, None),
        note="Swift 6.3.1 reads it; newer Swift refuses over 1024")

    b = header(B()).add([1])
    image(b, BASE, 0x1000, b"", b"\xc7" + b"\xff" * 8 + lit(b"/q.so"))
    add("long-code-overflow", b, ("cif_bad_prefix", b.at["path"]),
        ("cif_bad_prefix", b.at["path"]), (OK, b.at["path"] + 9),
        note="a long prefix reference of 2^64-1 (+64 overflows)")

    b = header(B()).add([1])
    image(b, BASE, 0x1000, b"", b"\xc1\x00")
    add("long-code-truncated", b, ("cif_truncated", b.at["path"]),
        ("cif_truncated", b.at["path"]), (OK, None))

    b = header(B()).add([1])
    image(b, BASE, 0x1000, b"", b"\x45CAppK")
    add("framework-truncated", b, ("cif_truncated", b.at["path"]),
        ("cif_truncated", b.at["path"]), (OK, None))

    # Prefix code 64 (the 33rd dynamic prefix) referred to in the long form
    # with 1 and with 2 operand bytes: decoders from Feb 2025 on read any k.
    deep = lit(b"/" + b"/".join(bytes([c]) for c in b"abcdefghijklmnopqrstuvwxyzABCDEFGH") +
               b"/z.so")
    for k in (1, 2):
        b = header(B()).add([2])
        image(b, BASE, 0x1000, b"", deep, tag="0")
        image(b, BASE + 0x10000, 0x1000, b"", bytes([0xc0 | (k - 1)]) + bytes(k) + lit(b"/q.so"),
              tag="1")
        add("long-reference-%d-byte%s" % (k, "s" * (k > 1)), b, (OK, None), (OK, None),
            (OK, None), note="code 64 as c%d %s" % (k - 1, "00 " * k))

    b = header(B()).add([1])
    image(b, BASE, 0x1000, b"", b"\x45\x01AppKit")
    add("framework-version-01", b, (OK, None), (OK, None), (OK, None),
        note="version byte 01: Versions/\\x01/ (6.3.1 has no shallow frameworks)")

    b = B().add([4 | 2, 0, 0])
    add("version-1", b, ("cif_bad_version", 0), ("cif_bad_version", 0), ("cif_bad_version", 0),
        agrees="Swift: no map")
    b = B().add([3, 0, 0])
    add("word-size-3", b, ("cif_reserved_size", 0), ("cif_reserved_size", 0),
        ("cif_reserved_size", 0), agrees="Swift: no map")
    b = B().add([2])
    add("info-only", b, ("cif_truncated", 1), ("cif_truncated", 1), ("cif_truncated", 1),
        agrees="Swift: no map")
    b = B()
    add("empty", b, ("empty_input", 0), ("empty_input", 0), ("empty_input", 0),
        agrees="Swift: no map")
    b = B().add([2, 15]).add(b"Linux")
    add("platform-truncated", b, ("cif_truncated", 1), ("cif_truncated", 1),
        ("cif_truncated", 1), agrees="Swift: no map")
    b = B().add([2, 0, 1, 0x3f, 0, 0])
    add("address-truncated", b, ("cif_truncated", 4), ("cif_truncated", 4),
        ("cif_truncated", 4), agrees="Swift: no map")

    b = B().add([2, 1])
    image(b, BASE, 0x1000, b"", lit(b"/a.so"))
    add("no-platform-layout", b, (OK, 4), ("trailing_bytes", 4), (OK, 4),
        note="the oldest layout (no platform): read as platform \"?\" and 0 images")
    return out


def valid(rng):
    """(id, word, platform, images, note)."""
    out = []
    fw = lambda n, v=b"A": b"/" + n + b".framework/Versions/" + v + b"/" + n  # noqa: E731
    out.append(("count-quirks", 64, b"Linux (unknown)",
                [(b"/usr/lib/libx.so", bytes(range(64)), 0x10000, 0x11000),
                 (b"/usr/lib/liby.so", bytes(range(127)), 0x20000, 0x21000),
                 (b"/usr/lib/libz.so", bytes(range(128)), 0x30000, 0x31000)],
                "build IDs of 64, 127 and 128 bytes: Swift writes 80 40, 80 7f, 81 00"))
    out.append(("image-count-64", 64, b"", [(b"/l%d.so" % i, b"", 0x1000 * (i + 1),
                                             0x1000 * (i + 1) + 0x800) for i in range(64)],
                "64 images: Swift writes the count 80 40"))
    out.append(("framework-64", 64, b"macOS 26.1 (25B64)",
                [(b"/System/Library/Frameworks" + fw(b"F" * 64), b"", 0x180000000,
                  0x181000000)], "the framework shortcut with the longest name it can hold"))
    out.append(("framework-65", 64, b"macOS 26.1 (25B64)",
                [(b"/System/Library/Frameworks" + fw(b"F" * 65), b"", 0x180000000,
                  0x181000000)], "a framework name of 65 bytes: Swift writes a corrupt "
                                 "opcode, btpack the literal path"))
    many = [(b"/" + b"/".join(b"d%d" % k for k in range(i * 10, i * 10 + 10)) + b"/lib.so",
             b"", 0x100000 * (i + 1), 0x100000 * (i + 1) + 0x1000) for i in range(30)]
    many.append((b"/d290/d291/d292/d293/x.so", b"", 0x10000000, 0x10001000))
    out.append(("long-reference-320", 64, b"test", many,
                "300+ prefixes, then a reference to code 320+: Swift writes too few bytes"))
    out.append(("sign-boundary-32", 32, b"Linux (unknown)",
                [(b"/usr/bin/app", b"", 0x10000, 0x11000),
                 (b"/opt/big/lib.so", b"", 0x7ffff000, 0x80001000),
                 (b"/usr/lib/libc.so.6", b"", 0xb7000000, 0xb7100000)],
                "32-bit: text across 0x80000000 gets a 5-byte offset"))
    out.append(("word-16", 16, b"", [(b"/rom/app", b"\x01\x02", 0x100, 0x7fff),
                                     (b"/rom/lib", b"", 0x8000, 0xff00)], "16-bit"))
    for i in range(20):
        w, p, ims = cifgen.random_map(rng, max_images=30)
        # zero-size text is a strict-policy error (vector eot-equals-base)
        ims = [(pa, b, base, eot + (eot == base)) for pa, b, base, eot in ims]
        out.append(("random-%02d" % i, w, p, ims, "random"))
    return out


# The worked examples of the format notes (shared/formats/cif.md §11),
# derived there by hand from Swift's sources: Swift's runtime must decode
# each and encode it back byte for byte.
EXAMPLES = [
    ("example-1-empty", "020f4c696e75782028756e6b6e6f776e2900"),
    ("example-2-linux", "02264c696e7578202844656269616e20474e552f4c696e75782031322028626f6f6b776f72"
     "6d292904295555555540002000140102030405060708090a0b0c0d0e0f1011121314102f7573722f62696e2f6"
     "3726173686572002a7ffff7c0000019500002abcd811b2f7838365f36342d6c696e75782d676e752f6c696263"
     "2e736f2e36009220000007f0000081a280066d2e736f2e3600921c300002c0000111801736342f6c642d6c696e"
     "75782d7838362d36342e736f2e3200"),
    ("example-3-32bit", "010f4c696e75782028756e6b6e6f776e2903110100001000000c2f7573722f62696e2f61"
     "7070001c7ffff000ff00002000000f2f6f70742f6269672f6c69622e736f001ab700000010000000818006632e"
     "736f2e3600"),
    ("example-4-macos", "02136d61634f532031352e302028323441333335290523018000000001000000008445434"
     "170704b69749a020000004000000084454150686f746f739a010000000400000081800c6f626a632e412e6479"
     "6c6962009a010000004000000081192f73776966742f6c69627377696674436f72652e64796c6962009a0100"
     "00000800000081a0801773776966745f436f6e63757272656e63792e64796c696200"),
    ("example-5-long-reference", "02047465737402117f00000100003f2f412f422f432f442f452f462f472f48"
     "2f492f4a2f4b2f4c2f4d2f4e2f4f2f502f512f522f532f542f552f562f572f582f592f5a2f612f622f632f642f6"
     "52f11662f672f682f692f6a2f6b2f6c2f6d2f6e00891000010000c000092f65787472612e736f00"),
]


def swift_result(data):
    p = subprocess.run([PROBE, "cif"], input=(data.hex() + "\n").encode(),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    if p.returncode != 0:
        return {"result": "trap"}
    lines = p.stdout.decode().splitlines()
    if lines and lines[0] == "nil":
        return {"result": "nil"}
    res = {"result": "map", "images": []}
    for line in lines:
        word, _, rest = line.partition(" ")
        if word == "platform":
            res["platform"] = rest.rsplit(" ", 1)[0]
        elif word == "image":
            n, pa, b, base, eot = rest.split(" ")
            res["images"].append([None if n == "-" else n, None if pa == "-" else pa,
                                  None if b in "-=" else b, base, eot])
        elif word == "reencoded":
            res["reencoded"] = rest
    return res


def main():
    rng = random.Random(12)
    for id_, data, expect, agrees, note in malformed():
        print(json.dumps({"id": id_, "kind": "malformed", "hex": data.hex(), "note": note,
                          "swift_6_3_1": swift_result(data), "expect": expect,
                          "swift_agrees": agrees}))
    for id_, h in EXAMPLES:
        print_valid(id_, bytes.fromhex(h), "worked example of the format notes, byte for byte")
    for id_, word, platform, images, note in valid(rng):
        print_valid(id_, cifgen.naive(word, platform, images), note,
                    cifgen.swift_bug_kind(images) if cifgen.may_hit_swift_bug(images) else None)


def print_valid(id_, data, note, swift_bug=None):
    line = {"id": id_, "kind": "valid", "hex": data.hex(), "note": note,
            "swift_6_3_1": swift_result(data),
            "expect": {k: ["ok", len(data)] for k in ("default", "strict", "swift")},
            "swift_agrees": True}
    if swift_bug:
        line["swift_bug"] = swift_bug
    print(json.dumps(line))


if __name__ == "__main__":
    main()
