#!/usr/bin/env python3
"""btpack against Swift's own runtime (Swift 6.3.1's Runtime module and
swift-backtrace), through the btpack CLI as a user runs it.

usage: swift_interop.py BTPACK PROBE CIF_TOOL CORPUS_DIR VECTORS ADDR2LINE

PROBE is tests/swift/probe.swift compiled; CIF_TOOL tests/swift/cif_tool.c.
Parts (each prints what it exchanged; any mismatch fails the test):

 1. capture   Swift captures real backtraces (with images, without, with a
              limit, async); btpack reads its JSON and must agree frame by
              frame and image by image with Swift's own list.
 2. decode    btpack writes `swift` JSON (corpus traces of all three word
              sizes with image maps from the corpora's process maps, random
              16-bit traces, random image maps); Swift decodes every line and
              must see btpack's frames and images.
 3. encode    Swift encodes random frame lists and image maps; btpack must
              read Swift's bytes exactly and, in Swift mode, write the same
              bytes (the CBF differs by the `end` Swift 6.3.1 leaves out).
              Random image maps through Swift's CIF encoder against btpack's,
              including the inputs where Swift writes corrupt CIF (then the
              encoder's Swift-bugs mode must match it).
 4. vectors   the Swift results recorded in cif-swift.jsonl still hold, and
              the CBF vectors' account of Swift's decoder is what 6.3.1 does.
 5. crash     a Swift program crashes four ways under swift-backtrace's JSON
              crash logs; btpack reads each log, converts it to CBF+CIF and
              back without loss, and names the crashing function as Swift's
              own symbolication does, twice: `btpack symbolize` with the
              log's image map, and the image map with addr2line.
"""

import base64
import json
import os
import random
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cifgen  # noqa: E402
from views import KINDS, json_frames, log_frames, log_images, parse_probe  # noqa: E402

BTPACK, PROBE, CIF_TOOL, CORPUS, VECTORS, ADDR2LINE = [os.path.abspath(a) for a in sys.argv[1:7]]
failures = []
counts = {}


def fail(what):
    failures.append(what)
    print("FAIL: " + what)


def tally(key, n=1):
    counts[key] = counts.get(key, 0) + n


def run(cmd, data=b"", env=None, check=True):
    p = subprocess.run(cmd, input=data, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       env=env, timeout=120)
    if check and p.returncode != 0:
        raise RuntimeError("%s: exit %d: %s" % (" ".join(cmd[:3]), p.returncode,
                                                p.stderr.decode(errors="replace")[-800:]))
    return p


def b64(s):
    return base64.b64decode(s + "=" * (-len(s) % 4))


# ---- what btpack reads (through its swift-crashlog writer) -----------------

def btpack_view(swift_lines):
    """btpack's reading of Swift JSON lines: (frames, platform, images) each."""
    out = run([BTPACK, "convert", "--from", "swift", "--to", "swift-crashlog"],
              "".join(l + "\n" for l in swift_lines).encode()).stdout.decode()
    views = []
    for line in out.splitlines():
        log = json.loads(line)
        views.append((log_frames(log["threads"][0]), log["platform"].encode(),
                      log_images(log)))
    return views


def expected_images(images):
    """What a decoder gives back for cifgen images."""
    return [(cifgen.name_of(p) if p else None, p or None, b.hex() if b else None, base, eot)
            for p, b, base, eot in images]


def compare(what, got, want):
    if got != want:
        fail("%s:\n   btpack %s\n   swift  %s" % (what, str(got)[:600], str(want)[:600]))
        return False
    return True


# ---- 1. Swift captures, btpack reads ---------------------------------------

def part_capture():
    recs = parse_probe(run([PROBE, "capture"]).stdout.decode())
    views = btpack_view([r["json"] for r in recs])
    for rec, (frames, platform, images) in zip(recs, views):
        name = rec["case"]
        # Swift 6.3.1 writes no `end`, and its own decoder then adds a
        # "truncated" marker to every backtrace it captured (spec/cbf.md).
        dump = run([BTPACK, "dump", "--from", "b64"],
                   (json.loads(rec["json"])["backtrace"] + "\n").encode()).stdout.decode()
        if "input ends without end/trunc" in dump:
            tally("capture: Swift CBF without end")
            want = rec["frames"][:-1] if rec["frames"][-1:] == ["trunc"] else None
            if want is None:
                fail("capture %s: Swift shows no truncation for a stream without end" % name)
                continue
        else:
            want = rec["frames"]
        ok = compare("capture %s: frames" % name, frames, want)
        if rec.get("images") is None:
            ok &= compare("capture %s: image map" % name, images, None)
        else:
            ok &= compare("capture %s: platform" % name, platform, rec["platform"])
            ok &= compare("capture %s: images" % name, images, rec["images"])
            tally("images", len(rec["images"]))
        tally("capture: traces Swift -> btpack")
        tally("capture: image maps Swift -> btpack", rec.get("images") is not None)
        tally("capture: async frames", sum(f.startswith("async") for f in frames))
    if counts.get("capture: async frames", 0) == 0:
        fail("capture: no async frame was captured")
    print("capture: %d backtraces, %d with images, %d async frames" % (
        len(recs), counts.get("capture: image maps Swift -> btpack", 0),
        counts.get("capture: async frames", 0)))


# ---- 2. btpack writes, Swift decodes ---------------------------------------

def corpus_map(path):
    """An image map from a /proc/PID/maps listing: per file, the start of
    its offset-0 mapping and the end of its last executable mapping."""
    files = {}
    for line in open(path, "rb"):
        f = line.split(None, 5)
        if len(f) < 6 or not f[5].strip().startswith(b"/"):
            continue
        lo, hi = (int(x, 16) for x in f[0].split(b"-"))
        p = f[5].strip()
        e = files.setdefault(p, [None, None])
        if int(f[2], 16) == 0 and e[0] is None:
            e[0] = lo
        if b"x" in f[1]:
            e[1] = hi
    ims = [(p, b"", lo, hi) for p, (lo, hi) in files.items() if lo is not None and hi]
    return sorted(ims, key=lambda i: i[2])


def swift_decode(lines):
    out = run([PROBE, "decode-json"], "".join(l + "\n" for l in lines).encode())
    return parse_probe(out.stdout.decode())


def check_decoded(what, recs, frames, images, platform):
    bad = 0
    for i, rec in enumerate(recs):
        ok = rec.get("frames") == frames[i]
        if images[i] is None:
            ok = ok and rec.get("images") is None
        else:
            ok = ok and rec.get("images") == images[i] and rec.get("platform") == platform[i]
        if not ok:
            bad += 1
            if bad <= 3:
                fail("%s %d: Swift decoded\n   %s\n   %s\n  btpack wrote\n   %s\n   %s" % (
                    what, i, str(rec.get("frames"))[:300], str(rec.get("images"))[:300],
                    str(frames[i])[:300], str(images[i])[:300]))
    if bad > 3:
        fail("%s: %d more mismatches" % (what, bad - 3))
    return len(recs) - bad


def part_decode(rng, per_corpus):
    for corpus, bits in (("py311_regrtest", 64), ("gcc12_cc1_sqlite3", 64),
                         ("sqlite3_i386", 32)):
        text = run(["xz", "-dc", os.path.join(CORPUS, corpus + ".trace.xz")]).stdout
        lines, kept = [], 0
        for line in text.split(b"\n"):
            if line.startswith(b"#") or (line.startswith(b"m ") and kept < per_corpus):
                lines.append(line)
                kept += line.startswith(b"m ")
            if kept >= per_corpus:
                break
        src = b"\n".join(lines) + b"\n"
        swift = run([BTPACK, "convert", "--from", "trace", "--to", "swift"], src).stdout
        plain = run([BTPACK, "convert", "--from", "trace", "--to", "json"], src).stdout
        swift_lines = swift.decode().splitlines()
        want = [json_frames(l) for l in plain.decode().splitlines()]
        # The corpus process's own map, as a map of `bits` bits, on every line.
        ims = corpus_map(os.path.join(CORPUS, corpus + ".maps"))
        cif = base64.b64encode(cifgen.naive(bits, b"Linux (unknown)", ims)).decode()
        with_map = [l[:-1] + ',"imageMap":"%s"}' % cif for l in swift_lines]
        rewritten = run([BTPACK, "convert", "--from", "swift", "--to", "swift"],
                        "".join(l + "\n" for l in with_map).encode()).stdout.decode().splitlines()
        recs = swift_decode(swift_lines + rewritten)
        n = len(swift_lines)
        exp_images = expected_images(ims)
        good = check_decoded("decode %s" % corpus, recs, want + want,
                             [None] * n + [exp_images] * n,
                             [None] * n + [b"Linux (unknown)"] * n)
        tally("decode: traces btpack -> Swift", good)
        tally("decode: image maps btpack -> Swift", min(good, n))
        tally("decode: %d-bit traces" % bits, n)
        print("decode %s (%d-bit): %d traces, with and without its %d-image map" % (
            corpus, bits, n, len(ims)))

    # 16-bit traces (no corpus has them) and random image maps of every size.
    lines, maps = [], []
    for i in range(300):
        bits = 16 if i < 150 else rng.choice([16, 32, 64])
        mask = cifgen.WORD_MASK[bits]
        frames = []
        for _ in range(rng.randint(0, 40)):
            k = rng.choice(["pc", "ra", "ra", "ra", "async", "omit"])
            if k == "omit":
                frames.append({"type": "omit", "count": rng.randint(1, min(70000, mask))})
            else:
                frames.append({"type": k, "addr": "0x%x" % rng.randint(0, mask)})
            while rng.random() < 0.1:
                frames.append(dict(frames[-1]))
        lines.append(json.dumps({"word_bits": bits, "frames": frames,
                                 "truncated": rng.random() < 0.2}))
        maps.append(cifgen.random_map(rng, bits) if i >= 150 else None)
    swift_lines = run([BTPACK, "convert", "--from", "json", "--to", "swift"],
                      "".join(l + "\n" for l in lines).encode()).stdout.decode().splitlines()
    for i, m in enumerate(maps):
        if m:
            cif = base64.b64encode(cifgen.naive(*m)).decode()
            swift_lines[i] = swift_lines[i][:-1] + ',"imageMap":"%s"}' % cif
    swift_lines = run([BTPACK, "convert", "--from", "swift", "--to", "swift"],
                      "".join(l + "\n" for l in swift_lines).encode()).stdout.decode().splitlines()
    recs = swift_decode(swift_lines)
    good = check_decoded("decode random", recs, [json_frames(l) for l in lines],
                         [expected_images(m[2]) if m else None for m in maps],
                         [m[1] if m else None for m in maps])
    tally("decode: traces btpack -> Swift", good)
    tally("decode: image maps btpack -> Swift", sum(1 for m in maps if m))
    tally("decode: 16-bit traces", sum(1 for l in lines if '"word_bits": 16' in l))
    print("decode random: %d traces (%d 16-bit), %d random image maps" % (
        len(lines), counts["decode: 16-bit traces"], sum(1 for m in maps if m)))


# ---- 3. Swift encodes, btpack reads and writes the same bytes --------------

ARCH = {16: "msp430", 32: "i386", 64: "x86_64"}


def random_frames(rng, bits):
    mask = cifgen.WORD_MASK[bits]
    out, base = [], rng.randint(0, mask)
    for _ in range(rng.randint(1, 50)):
        k = rng.choice(["pc", "ra", "ra", "ra", "async", "omit"])
        if k == "omit":
            n = rng.choice([1, 5, 31, 32, 33, 1000, 65535, rng.randint(1, 1 << 30)])
            out.append(("omit", min(n, mask)))
        else:
            if rng.random() < 0.7:
                base = (base + rng.randint(-0x10000, 0x10000)) & mask
            else:
                base = rng.randint(0, mask)
            out.append((k, base))
        while rng.random() < 0.15:
            out.append(out[-1])
    return out


def part_encode(rng, n_traces, n_maps):
    specs, lines = [], []
    for i in range(n_traces):
        bits = (16, 32, 64)[i % 3]
        frames = random_frames(rng, bits)
        trunc = rng.random() < 0.2
        m = cifgen.random_map(rng, bits, max_images=40) if rng.random() < 0.6 else None
        words = []
        for k, v in frames:
            words += [k, "%d" % v if k == "omit" else "%x" % v]
        lines.append("%s %d %s %s%s" % (ARCH[bits], bits, cifgen.naive(*m).hex() if m else "-",
                                        " ".join(words), " trunc" if trunc else ""))
        specs.append((bits, frames, trunc, m))
    swift_json = run([PROBE, "encode-cbf"], "".join(l + "\n" for l in lines).encode())
    swift_json = swift_json.stdout.decode().splitlines()
    # btpack reads Swift's bytes exactly ...
    views = btpack_view(swift_json)
    good = 0
    for i, ((bits, frames, trunc, m), (bf, plat, ims)) in enumerate(zip(specs, views)):
        want = ["omit %d" % v if k == "omit" else "%s 0x%x" % (k, v) for k, v in frames]
        ok = compare("encode %d: frames read from Swift's CBF" % i, bf,
                     want + (["trunc"] if trunc else []))
        ok &= compare("encode %d: images read from Swift's CIF" % i, ims,
                      expected_images(m[2]) if m else None)
        good += ok
    # ... and writes them: CBF as Swift does plus `end`, CIF byte for byte.
    ours = run([BTPACK, "convert", "--from", "swift", "--to", "swift"],
               "".join(l + "\n" for l in swift_json).encode()).stdout.decode().splitlines()
    same_cbf = same_cif = 0
    for i, (theirs, mine) in enumerate(zip(swift_json, ours)):
        t, o = json.loads(theirs), json.loads(mine)
        tb, ob = b64(t["backtrace"]), b64(o["backtrace"])
        trunc = specs[i][2]
        if compare("encode %d: CBF bytes (btpack = Swift + end)" % i, ob.hex(),
                   (tb if trunc else tb + b"\x00").hex()):
            same_cbf += 1
        if "imageMap" in t or "imageMap" in o:
            if compare("encode %d: CIF bytes" % i, o.get("imageMap"), t.get("imageMap")):
                same_cif += 1
        if t["architecture"] != o["architecture"]:
            fail("encode %d: architecture %s became %s" % (i, t["architecture"],
                                                           o["architecture"]))
    maps = sum(1 for s in specs if s[3])
    # Swift writes an omit count as wide as it needs whatever the word size
    # (70000 frames in a 16-bit backtrace: `62 01 11 70`), which the trace
    # model cannot hold: btpack refuses it where it is (spec/cbf.md).
    wide = run([PROBE, "encode-cbf"], b"msp430 16 - pc 1000 omit 70000 ra 10\n").stdout
    if b64(json.loads(wide)["backtrace"]).hex() != "00111000620111702810":
        fail("encode: Swift's wide omit count is no longer 62 01 11 70")
    p = run([BTPACK, "convert", "--from", "swift", "--to", "json"], wide, check=False)
    if p.returncode != 1 or b"byte offset 4: external count wider than the word" not in p.stderr:
        fail("encode: btpack on Swift's wide omit count: %s" % p.stderr)
    tally("encode: traces Swift -> btpack", good)
    tally("encode: image maps Swift -> btpack", maps)
    print("encode: %d Swift backtraces (16/32/64-bit), %d with image maps: read exactly %d, "
          "same CBF bytes (plus end) %d, same CIF bytes %d" % (
              len(specs), maps, good, same_cbf, same_cif))

    # Swift's CIF encoder against btpack's on random maps, pathological ones
    # included; Swift gets btpack-independent CIF (cifgen.naive).
    cases = [cifgen.random_map(rng, pathological=(i % 4 == 0)) for i in range(n_maps)]
    naive = "".join(cifgen.naive(*c).hex() + "\n" for c in cases).encode()
    recs = parse_probe(run([PROBE, "cif"], naive).stdout.decode())
    swift_mode = run([CIF_TOOL, "reencode", "1"], naive).stdout.decode().split()
    bugs_mode = run([CIF_TOOL, "reencode", "3"], naive).stdout.decode().split()
    via_cli = run([BTPACK, "convert", "--from", "swift", "--to", "swift"], "".join(
        '{"architecture":"x","backtrace":"AgA","imageMap":"%s"}\n' %
        base64.b64encode(cifgen.naive(*c)).decode() for c in cases).encode())
    via_cli = [base64.b64decode(json.loads(l)["imageMap"] + "==").hex()
               for l in via_cli.stdout.decode().splitlines()]
    same = bug = 0
    for i, (c, rec) in enumerate(zip(cases, recs)):
        if rec.get("images") != expected_images(c[2]):
            fail("cif %d: Swift decoded the plain encoding differently" % i)
            continue
        theirs = rec.get("reencoded")
        if swift_mode[i] != via_cli[i]:
            fail("cif %d: the CLI's CIF differs from the library's Swift mode" % i)
        if swift_mode[i] == theirs:
            same += 1
        elif bugs_mode[i] == theirs and cifgen.may_hit_swift_bug(c[2]):
            bug += 1
            tally("cif: Swift's corrupt CIF reproduced: " + cifgen.swift_bug_kind(c[2]))
        else:
            fail("cif %d: Swift wrote %s\n   btpack %s" % (i, theirs, swift_mode[i]))
    tally("cif: image maps Swift -> btpack", len(recs))
    tally("cif: Swift's corrupt CIF reproduced", bug)
    print("cif: %d random maps through Swift's encoder: %d byte-identical, %d where Swift "
          "writes corrupt CIF reproduced by the bugs mode" % (len(recs), same, bug))


# ---- 4. the recorded vectors still hold ------------------------------------

def part_vectors():
    vecs = [json.loads(l) for l in open(VECTORS)]
    recs = []
    for v in vecs:
        # One process each: some inputs make Swift trap.
        p = run([PROBE, "cif"], (v["hex"] + "\n").encode(), check=False)
        r = parse_probe(p.stdout.decode())
        rec = r[0] if r else {}
        if p.returncode != 0:
            got = {"result": "trap"}
        elif rec.get("nil"):
            got = {"result": "nil"}
        else:
            got = {"result": "map", "platform": rec["platform"].hex(),
                   "images": [[x.hex() if isinstance(x, bytes) else x for x in im[:3]] +
                              ["0x%x" % im[3], "0x%x" % im[4]] for im in rec["images"]]}
            if "reencoded" in rec:
                got["reencoded"] = rec["reencoded"]
        want = v["swift_6_3_1"]
        if got != want:
            fail("vector %s: Swift now gives %s, recorded %s" % (v["id"], got, want))
        recs.append(got)
    tally("vectors: Swift results confirmed", len(recs))
    print("vectors: %d recorded Swift results confirmed" % len(recs))


def part_cbf_vectors():
    """Swift's decoding of the CBF vectors that say what Swift does with
    malformed and edge-case input (swift_frames / swift_frames_rle; where a
    vector also gives swift_pre_limit_frames_rle, that is 6.3.1: it has no
    cap on rep, spec/cbf.md)."""
    base = os.path.dirname(VECTORS)
    vecs = [json.loads(l) for f in ("cbf-public.jsonl", "cbf-edge-cases.jsonl")
            for l in open(os.path.join(base, f)) if '"valid"' not in l]
    agree = 0
    for v in vecs:
        want = v.get("swift_pre_limit_frames_rle", v.get("swift_frames_rle",
                                                          v.get("swift_frames")))
        line = json.dumps({"architecture": "x",
                           "backtrace": base64.b64encode(bytes.fromhex(v["hex"])).decode()})
        p = run([PROBE, "decode-json"], (line + "\n").encode(), check=False)
        if isinstance(want, str):  # "trap (...)"
            ok = p.returncode != 0
        else:
            exp = []
            for f in want:
                t = f["type"]
                text = ("trunc" if t == "truncated" else "omit %d" % f["count"] if t == "omit"
                        else "%s 0x%x" % (t, int(f["addr"], 16)))
                exp += [text] * f.get("copies", 1) if f.get("copies", 1) < 10 ** 6 else [text]
            recs = parse_probe(p.stdout.decode())
            got = recs[0].get("frames") if recs else None
            big = [f.get("copies", 1) for f in want if f.get("copies", 1) >= 10 ** 6]
            if big and big[0] > 3000000:
                # the probe stops listing at 3,000,000 frames
                ok = "LIMIT" in p.stdout.decode() and got is not None
            elif big:
                ok = got is not None and len(got) == len(exp) - 1 + big[0]
            else:
                ok = got == exp
        if ok:
            agree += 1
        else:
            fail("CBF vector %s: Swift 6.3.1 decodes %s" % (v["id"], p.stdout.decode()[:200]))
    tally("cbf vectors: Swift's decoding as recorded", agree)
    print("cbf vectors: %d of %d Swift decodings as the vectors say (pre-limit where given)" % (
        agree, len(vecs)))
    # The valid vectors through Swift's encoder: swift_hex, except that 6.3.1
    # writes no `end` (spec/cbf.md R1).
    valid = [json.loads(l) for l in open(os.path.join(base, "cbf-public.jsonl"))
             if '"valid"' in l]
    lines = []
    for v in valid:
        words = []
        for f in v["frames"]:
            words += (["omit", str(f["count"])] if f["type"] == "omit" else
                      [f["type"], f["addr"][2:]])
        lines.append("%s %d - %s%s" % (ARCH[v["word_bits"]], v["word_bits"], " ".join(words),
                                       " trunc" if v["truncated"] else ""))
    out = run([PROBE, "encode-cbf"], "".join(l + "\n" for l in lines).encode())
    same = noend = 0
    for v, line in zip(valid, out.stdout.decode().splitlines()):
        h = b64(json.loads(line)["backtrace"]).hex()
        if h == v["swift_hex"] and v["truncated"]:
            same += 1
        elif h + "00" == v["swift_hex"] and not v["truncated"]:
            noend += 1
        else:
            fail("CBF vector %s: Swift 6.3.1 encodes %s, vector says %s" % (v["id"], h,
                                                                            v["swift_hex"]))
    tally("cbf vectors: Swift encodes swift_hex without end", noend)
    tally("cbf vectors: Swift encodes swift_hex (truncated)", same)
    print("cbf vectors: of %d valid vectors Swift writes %d as swift_hex without its end, "
          "%d (truncated) exactly" % (len(valid), noend, same))


# ---- 5. crashes ------------------------------------------------------------

CRASHES = {"unwrap": "crashForceUnwrap", "index": "crashIndex", "fatal": "crashFatal",
           "null": "crashNullDeref"}


def part_crash():
    env = dict(os.environ, SWIFT_BACKTRACE="enable=yes,format=json,images=all")
    for kind, func in CRASHES.items():
        p = run([PROBE, "crash", kind], env=env, check=False)
        text = p.stderr.decode(errors="replace")
        logs = [json.loads(l) for l in text.splitlines() if l.startswith("{")]
        if p.returncode == 0 or len(logs) != 1:
            fail("crash %s: exit %d and %d crash logs" % (kind, p.returncode, len(logs)))
            continue
        log = logs[0]
        src = text.encode()
        # every thread, the crashed one first; then through CBF+CIF and back
        swift = run([BTPACK, "convert", "--from", "swift-crashlog", "--to", "swift"], src).stdout
        back = run([BTPACK, "convert", "--from", "swift", "--to", "swift-crashlog"], swift).stdout
        crashed = [i for i, t in enumerate(log["threads"]) if t.get("crashed")]
        order = crashed + [i for i in range(len(log["threads"])) if i not in crashed]
        want_frames = [log_frames(log["threads"][i]) for i in order]
        got = [json.loads(l) for l in back.decode().splitlines()]
        compare("crash %s: threads through CBF+CIF" % kind,
                [log_frames(g["threads"][0]) for g in got], want_frames)
        for g in got:
            compare("crash %s: images through CBF+CIF" % kind, log_images(g),
                    log_images(log))
            compare("crash %s: platform" % kind, g["platform"], log["platform"])
        tally("crash: threads Swift -> btpack", len(got))
        tally("crash: image maps Swift -> btpack")
        # the crashed thread alone, through --thread crashed
        one = run([BTPACK, "convert", "--from", "swift-crashlog", "--to", "json", "--thread",
                   "crashed"], src).stdout.decode().splitlines()
        if len(one) != 1:
            fail("crash %s: --thread crashed gave %d traces" % (kind, len(one)))
        # The crashing function: the first frame in the program itself, found
        # with the image map btpack read, named by addr2line.
        images = log_images(got[0]) or []
        prog = [im for im in images if im[1] and os.path.samefile(im[1], PROBE)]
        frames = log["threads"][order[0]]["frames"]
        found = None
        for f in frames:
            if f.get("inlined") or f["kind"] not in KINDS or f["address"] == "null":
                continue
            a = int(f["address"], 16)
            for name, path, _, base, eot in prog:
                if base <= a < eot:
                    found = (f, a - base - (f["kind"] == "returnAddress"), path)
                    break
            if found:
                break
        if not found:
            fail("crash %s: no frame lies in the program's image" % kind)
            continue
        f, off, path = found
        sym = run([ADDR2LINE, "-f", "-e", path, "0x%x" % off]).stdout.decode().split("\n")[0]
        if func not in sym:
            fail("crash %s: addr2line names %s, expected %s" % (kind, sym, func))
        if f.get("symbol") != sym:
            fail("crash %s: addr2line %s, Swift's symbolication %s" % (kind, sym,
                                                                      f.get("symbol")))
        else:
            tally("crash: functions named as Swift names them (image map + addr2line)")
        # btpack symbolize, with the crash log's image map (build IDs checked)
        out = run([BTPACK, "symbolize", "--from", "swift-crashlog", "--thread", "crashed",
                   "--to", "json"], src).stdout.decode().splitlines()
        named = None
        for fr in json.loads(out[0])["frames"] if out else []:
            if fr.get("image") and os.path.samefile(fr["image"], PROBE):
                outer = [x for x in fr.get("symbols", []) if not x.get("inlined")]
                named = outer[0]["function"] if outer else None
                break
        if named != sym:
            fail("crash %s: btpack symbolize names %s, Swift %s" % (kind, named, sym))
        else:
            tally("crash: functions named as Swift names them (btpack symbolize)")
        print("crash %s: %d thread(s), %d images; crashing function %s (%s)" % (
            kind, len(got), len(images), sym, f.get("description")))


def main():
    rng = random.Random(20261123)
    with tempfile.TemporaryDirectory() as tmp:
        os.chdir(tmp)
        parts = [("capture", part_capture, ()), ("decode", part_decode, (rng, 700)),
                 ("encode", part_encode, (rng, 300, 400)), ("vectors", part_vectors, ()),
                 ("cbf vectors", part_cbf_vectors, ()),
                 ("crash", part_crash, ())]
        for name, part, args in parts:
            try:
                part(*args)
            except Exception as e:  # a broken part is a failure, not a skip
                fail("%s: %s: %s" % (name, type(e).__name__, e))
    print("exchanged with Swift 6.3.1:")
    for k in sorted(counts):
        print("  %-45s %d" % (k, counts[k]))
    if failures:
        print("%d failure(s)" % len(failures))
        return 1
    print("all agree")
    return 0


if __name__ == "__main__":
    sys.exit(main())
