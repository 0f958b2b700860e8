"""Image maps for the Swift interop tests: random maps and a plain CIF
writer of its own (spec/cif.md), so that what Swift and btpack are given is
not produced by either of them.

naive() makes the simplest valid CIF of a map: absolute 8-byte addresses
and end offsets, minimal counts, every path literal. Both decoders read it;
both encoders write something else (shorter), which is what the tests
compare."""

import random

WORD_MASK = {16: 0xffff, 32: 0xffffffff, 64: 0xffffffffffffffff}


def count(n):
    """A count in 7-bit groups, minimal."""
    groups = []
    while True:
        groups.append(n & 0x7f)
        n >>= 7
        if not n:
            break
    groups.reverse()
    return bytes([g | 0x80 for g in groups[:-1]] + [groups[-1]])


def sign_extend(v, word):
    s = 1 << (word - 1)
    return ((v ^ s) - s) & WORD_MASK[64]


def naive(word, platform, images):
    """images: (path bytes, build ID bytes, base, end of text)."""
    out = bytearray([{16: 0, 32: 1, 64: 2}[word], len(platform)]) + platform
    out += count(len(images))
    for path, bid, base, eot in images:
        b = sign_extend(base, word)
        off = (sign_extend(eot, word) - b) & WORD_MASK[64]
        out += bytes([0x3f]) + b.to_bytes(8, "big") + off.to_bytes(8, "big")
        out += count(len(bid)) + bid
        p = path
        while p:
            out += bytes([min(63, len(p))]) + p[:63]
            p = p[63:]
        out += b"\x00"
    return bytes(out)


def name_of(path):
    """The name a decoder derives: the text after the last '/' or '\\'."""
    if not path:
        return None
    i = max(path.rfind(b"/"), path.rfind(b"\\"))
    return path[i + 1:]


COMPONENTS = [b"usr", b"lib", b"lib64", b"x86_64-linux-gnu", b"opt", b"swift", b"linux",
              b"System", b"Library", b"Frameworks", b"local", b"home", b"a", b"b",
              b"libfoo.so", b"libc.so.6", b"C:", b"Program Files", b"Windows", b"System32",
              b"Applications", b"iOSSupport", b"PrivateFrameworks", b"lib\xc3\xa9",
              b"\xe2\x82\xac", b"x" * 70]


def random_path(r, pathological):
    k = r.random()
    if k < 0.05:
        return b""
    if k < 0.15:
        longest = 70 if pathological else 64
        name = r.choice([b"AppKit", b"Foo", b"X", b"N" * r.randint(1, longest)])
        version = r.choice([b"A", b"C", b"1"])
        head = r.choice([b"", b"/System/Library/Frameworks", b"/Library/Frameworks", b"/opt"])
        return head + b"/" + name + b".framework/Versions/" + version + b"/" + name
    sep = b"\\" if r.random() < 0.1 else b"/"
    path = sep.join(r.choice(COMPONENTS) for _ in range(r.randint(1, 6)))
    return sep + path if r.random() < 0.8 else path


def separators(images):
    return sum(p.count(b"/") + p.count(b"\\") for p, _, _, _ in images)


def random_map(r, word=None, pathological=False, max_images=200):
    """A random map. Unless pathological, it avoids the two inputs on which
    Swift's encoder writes corrupt CIF (framework names over 64 bytes and
    prefix codes from 320 on, which need 288 prefixes or more)."""
    word = word or r.choice([16, 32, 64, 64, 64])
    mask = WORD_MASK[word]
    n = r.choice([0, 1, 2, 3, 5, 10, 30, r.randint(0, max_images)])
    platform = r.choice([b"", b"Linux (unknown)", b"Linux (Debian GNU/Linux 12 (bookworm))",
                         b"macOS 26.1 (25B64)", b"x" * 255])
    images = []
    addr = r.randint(0, mask)
    for _ in range(n):
        if r.random() < 0.7:
            step = r.choice([0x1000, 0x10000, 0x200000, r.randint(0, 1 << min(word, 40))])
            addr = (addr + step) & mask
        else:
            addr = r.randint(0, mask)
        size = r.choice([0, 1, 0x1000, 0x7f, 0x80, 0xffff, r.randint(0, 1 << min(word - 1, 36))])
        size = min(size, mask - addr)
        bid = r.choice([b"", bytes(r.randrange(256) for _ in range(20)),
                        bytes(r.randrange(256) for _ in range(r.choice([1, 16, 63, 64, 127, 128,
                                                                          200])))])
        images.append((random_path(r, pathological), bid, addr, addr + size))
        if not pathological and separators(images) >= 280:
            images.pop()
            break
    return word, platform, images


def may_hit_swift_bug(images):
    """Whether Swift's encoder could write corrupt CIF for these images."""
    for path, _, _, _ in images:
        name = name_of(path)
        if name and len(name) > 64 and b".framework/Versions/" in path:
            return True
    return separators(images) >= 288


def swift_bug_kind(images):
    kinds = []
    for path, _, _, _ in images:
        name = name_of(path)
        if name and len(name) > 64 and b".framework/Versions/" in path:
            kinds.append("framework name over 64 bytes")
            break
    if separators(images) >= 288:
        kinds.append("288+ prefixes (long reference length)")
    return ", ".join(kinds)
