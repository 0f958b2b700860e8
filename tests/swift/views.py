"""What Swift and btpack say about backtraces, in one comparable form, for
the Swift tests (swift_interop.py, ../cli_swift.py).

Frames are strings "pc 0x1000", "ra 0x..", "async 0x..", "omit N", "trunc";
images are tuples (name, path, build ID hex, base, end of text) with name
and path as bytes (None when absent)."""

import json

KINDS = {"programCounter": "pc", "returnAddress": "ra", "asyncResumePoint": "async"}


def parse_probe(text):
    """tests/swift/probe.swift's text form: records of dict(case, json,
    arch, frames, platform, images, reencoded, cif, nil)."""
    recs, cur = [], {}
    for line in text.splitlines():
        word, _, rest = line.partition(" ")
        if word == "end":
            recs.append(cur)
            cur = {}
        elif word in ("case", "json", "reencoded", "cif", "error"):
            cur[word] = rest
        elif word == "arch":
            cur["arch"] = rest
            cur["frames"] = []
        elif word in ("pc", "ra", "async", "omit"):
            v, _, times = rest.partition(" x")
            cur["frames"] += ["%s %s" % (word, v)] * (int(times) if times else 1)
        elif word == "trunc":
            cur["frames"].append("trunc")
        elif word == "images":
            cur["images"] = None
        elif word == "platform":
            cur["platform"] = bytes.fromhex(rest.rsplit(" ", 1)[0])
            cur["images"] = []
        elif word == "image":
            n, p, b, base, eot = rest.split(" ")
            unhex = lambda h: None if h == "-" else bytes.fromhex(h)  # noqa: E731
            cur["images"].append((unhex(n), unhex(p), None if b in "-=" else b,
                                  int(base, 16), int(eot, 16)))
        elif word == "nil":
            cur["nil"] = True
    return recs


def log_frames(thread):
    """A crash-log thread's frames (inlined copies left out)."""
    out = []
    for f in thread["frames"]:
        if f.get("inlined"):
            continue
        k = f["kind"]
        if k == "truncated":
            out.append("trunc")
        elif k == "omittedFrames":
            out.append("omit %d" % f["count"])
        else:
            a = f["address"]
            out.append("%s 0x%x" % (KINDS[k], 0 if a == "null" else int(a, 16)))
    return out


def log_images(log):
    """A crash log's images, or None without an "images" key."""
    if "images" not in log:
        return None
    enc = lambda s: None if s is None else s.encode()  # noqa: E731
    return [(enc(im.get("name")), enc(im.get("path")), im.get("buildId"),
             int(im["baseAddress"], 16), int(im["endOfText"], 16)) for im in log["images"]]


def json_frames(line):
    """A btpack `json` line's frames."""
    t = json.loads(line)
    out = ["omit %d" % f["count"] if f["type"] == "omit" else
           "%s 0x%x" % (f["type"], int(f["addr"], 16)) for f in t["frames"]]
    return out + (["trunc"] if t["truncated"] else [])
