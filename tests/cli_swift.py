#!/usr/bin/env python3
"""The swift and swift-crashlog formats and `dump --from cif` on output
recorded from Swift 6.3.1's runtime (tests/data/swift/, see its README), so
that they are checked on every machine, with or without a Swift toolchain.

usage: cli_swift.py BTPACK DATA_DIR

 - capture.jsonl (Backtrace JSON as Swift encodes it) against capture.txt
   (the same backtraces as Swift's decoder lists them): same frames (Swift
   adds a "truncated" marker to a stream without `end`, spec/cbf.md), same
   platform and images;
 - every crash log: each thread a trace, the crashed one first, inlined
   frames left out, "null" addresses 0; --thread crashed|N|all; through
   CBF+CIF (swift) and back to a crash log nothing of the threads, images
   or platform is lost; the crash-log writer's layout;
 - through a trace log: the images are stored with the records; a CIF
   build ID longer than a log holds is left out with a warning;
 - dump --from cif of a real map, and of a cut one;
 - bad input: the exact messages and exit statuses.
"""

import base64
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "swift"))
import cifgen  # noqa: E402
from views import json_frames, log_frames, log_images, parse_probe  # noqa: E402

BTPACK, DATA = sys.argv[1], sys.argv[2]
failures = 0


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print("FAIL: " + what)


def run(args, data=b"", rc=0):
    p = subprocess.run([BTPACK] + args, input=data, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=60)
    check(p.returncode == rc, "btpack %s: exit %d, wanted %d: %s" % (
        " ".join(args), p.returncode, rc, p.stderr.decode(errors="replace")[:300]))
    return p


def overlaps(a, b):
    """Two images of log_images() whose text ranges meet."""
    return a[3] < b[4] and b[3] < a[4]


def test_capture():
    src = open(os.path.join(DATA, "capture.jsonl"), "rb").read()
    swift = parse_probe(open(os.path.join(DATA, "capture.txt")).read())
    plain = run(["convert", "--from", "swift", "--to", "json"], src).stdout.decode().splitlines()
    logs = run(["convert", "--from", "swift", "--to", "swift-crashlog"], src).stdout.decode()
    logs = [json.loads(l) for l in logs.splitlines()]
    check(len(plain) == len(swift) == len(logs) == 4, "capture: %d traces" % len(plain))
    for i, (line, want, log) in enumerate(zip(plain, swift, logs)):
        # Swift 6.3.1 writes no `end`: its decoder adds "truncated".
        check(json_frames(line) + ["trunc"] == want["frames"], "capture %d: frames" % i)
        check(log_frames(log["threads"][0]) == json_frames(line), "capture %d: crash log" % i)
        if want["images"] is None:
            check("images" not in log, "capture %d: an image map from nowhere" % i)
        else:
            check(log["platform"].encode() == want["platform"], "capture %d: platform" % i)
            check(log_images(log) == want["images"], "capture %d: images" % i)
    # Written back as Swift JSON: same CIF bytes, CBF plus `end`.
    back = run(["convert", "--from", "swift", "--to", "swift"], src).stdout.decode().splitlines()
    for i, (a, b) in enumerate(zip(src.decode().splitlines(), back)):
        a, b = json.loads(a), json.loads(b)
        check(a.get("imageMap") == b.get("imageMap"), "capture %d: CIF bytes changed" % i)
        ca = base64.b64decode(a["backtrace"] + "==")
        cb = base64.b64decode(b["backtrace"] + "==")
        check(cb == ca + b"\x00", "capture %d: CBF %s became %s" % (i, ca.hex(), cb.hex()))
    check("\\/" in back[0] and "=" not in back[0], "capture: JSON not as Foundation writes it")
    # Into a trace log and out again: the image maps are stored with the
    # records (`images` items). A log holds one process's images over time:
    # a record gets the images of the latest map plus those of earlier maps
    # that nothing later overlaps (spec/log.md), a record that came without
    # a map the ones in effect; CIF's platform is kept (a `platform` line).
    log = run(["convert", "--from", "swift", "--to", "log"], src).stdout
    out = run(["convert", "--from", "log", "--to", "swift-crashlog"], log).stdout.decode()
    out = [json.loads(l) for l in out.splitlines()]
    check(len(out) == 4, "capture via a log: %d traces" % len(out))
    have = 0
    for i, (want, got) in enumerate(zip(swift, out)):
        check(log_frames(got["threads"][0]) + ["trunc"] == want["frames"],
              "capture %d via a log: frames" % i)
        if want["images"] is not None:
            have += 1
            check(got["platform"].encode() == want["platform"], "capture %d via a log: platform" % i)
            got_images = log_images(got)
            check(all(im in got_images for im in want["images"]),
                  "capture %d via a log: images" % i)
            check(all(not overlaps(im, w) for im in got_images if im not in want["images"]
                      for w in want["images"]), "capture %d via a log: stale images" % i)
    check(have > 0, "capture: no trace with an image map")


def test_crash_logs():
    names = sorted(n for n in os.listdir(DATA) if n.startswith("crash-"))
    check(len(names) >= 5, "only %d crash logs" % len(names))
    for name in names:
        path = os.path.join(DATA, name)
        text = open(path, "rb").read()
        log = [json.loads(l) for l in text.decode(errors="replace").splitlines()
               if l.startswith("{")][0]
        crashed = [i for i, t in enumerate(log["threads"]) if t.get("crashed")]
        order = crashed + [i for i in range(len(log["threads"])) if i not in crashed]
        want = [log_frames(log["threads"][i]) for i in order]
        got = run(["convert", "--from", "swift-crashlog", "--to", "json", path]).stdout
        check([json_frames(l) for l in got.decode().splitlines()] == want,
              "%s: threads as traces" % name)
        one = run(["convert", "--from", "swift-crashlog", "--to", "json", "--thread", "crashed",
                   path]).stdout.decode().splitlines()
        check(len(one) == 1 and json_frames(one[0]) == want[0], "%s: --thread crashed" % name)
        last = len(log["threads"]) - 1
        n = run(["convert", "--from", "swift-crashlog", "--to", "json", "--thread", str(last),
                 path]).stdout.decode().splitlines()
        check(len(n) == 1 and json_frames(n[0]) == log_frames(log["threads"][last]),
              "%s: --thread %d" % (name, last))
        # Through CBF+CIF and back.
        swift = run(["convert", "--from", "swift-crashlog", "--to", "swift", path]).stdout
        back = run(["convert", "--from", "swift", "--to", "swift-crashlog"], swift).stdout
        back = [json.loads(l) for l in back.decode().splitlines()]
        check([log_frames(b["threads"][0]) for b in back] == want, "%s: frames via CBF" % name)
        for b in back:
            check(log_images(b) == log_images(log), "%s: images via CIF" % name)
            check(b["platform"] == log["platform"], "%s: platform via CIF" % name)
            check(b["architecture"] == log["architecture"], "%s: architecture" % name)
        # Through a trace log and back: the images as stored `images`.
        log2 = run(["convert", "--from", "swift-crashlog", "--to", "log", path]).stdout
        back = run(["convert", "--from", "log", "--to", "swift-crashlog"], log2).stdout
        back = [json.loads(l) for l in back.decode().splitlines()]
        check([log_frames(b["threads"][0]) for b in back] == want, "%s: frames via a log" % name)
        check(back and all((log_images(b) or []) == log_images(log) for b in back),
              "%s: images via a log" % name)
        check(all(b["platform"] == log["platform"] for b in back), "%s: platform via a log" % name)
        # Crash log to crash log: one log, the threads with their names.
        same = run(["convert", "--from", "swift-crashlog", "--to", "swift-crashlog", path]).stdout
        lines = same.decode().splitlines()
        check(len(lines) == 1, "%s: %d logs written for one" % (name, len(lines)))
        out = json.loads(lines[0])
        check([t.get("name") for t in out["threads"]] ==
              [log["threads"][i].get("name") for i in order], "%s: thread names" % name)
        check([bool(t.get("crashed")) for t in out["threads"]] ==
              [bool(log["threads"][i].get("crashed")) for i in order], "%s: crashed" % name)
        check(lines[0].startswith('{ "timestamp": "1970-01-01T00:00:00.000000Z", "kind": '
                                  '"crashReport", "description": "Backtrace", "faultAddress": '
                                  '"0x0000000000000000", "platform": ') and
              lines[0].endswith(' ] , "backtraceTime": 0.0 }'), "%s: layout" % name)


def test_long_build_id_to_log():
    """CIF holds build IDs of up to 1024 bytes (Swift's runtime writes long
    ones); a log's image lines hold 64: the image is kept without it, and a
    warning says so. A platform with a newline and a backslash comes back."""
    cif = cifgen.naive(64, b"OS\n\\x 1", [(b"/lib/long.so", bytes(range(100)), 0x10000, 0x20000),
                                  (b"/lib/short.so", b"\x01\x02", 0x30000, 0x40000)])
    line = json.dumps({"architecture": "x86_64", "backtrace": "AhEQAA",
                       "imageMap": base64.b64encode(cif).decode().rstrip("=")})
    p = run(["convert", "--from", "swift", "--to", "log"], (line + "\n").encode())
    check(p.stderr.decode() == "btpack: warning: <stdin>:1: image 1 (/lib/long.so): its build ID "
          "of 100 bytes is longer than a log's image lines hold (64): stored without it\n",
          "long build ID: warning %r" % p.stderr.decode())
    back = run(["convert", "--from", "log", "--to", "swift-crashlog"], p.stdout).stdout
    got = json.loads(back.decode().splitlines()[0])
    check(got["platform"] == "OS\n\\x 1", "platform via a log: %r" % got["platform"])
    got = log_images(got)
    check(got == [(b"long.so", b"/lib/long.so", None, 0x10000, 0x20000),
                  (b"short.so", b"/lib/short.so", "0102", 0x30000, 0x40000)],
          "long build ID: images via a log %r" % got)


def test_dump():
    line = open(os.path.join(DATA, "capture.jsonl")).readline()
    cif = base64.b64decode(json.loads(line)["imageMap"] + "==")
    out = run(["dump", "--from", "cif"], cif).stdout.decode()
    images = sum(1 for l in out.splitlines() if l.startswith("# image ") and l[8].isdigit())
    check(images == cif[40] and "define 32 = " in out and "expand" in out,
          "dump: %d images" % images)
    p = run(["dump", "--from", "cif"], cif[:100], rc=1)
    check(b"FAULT  cif_truncated" in p.stdout and
          p.stderr.decode().startswith("btpack: <stdin>: byte offset "),
          "dump of a cut map: %s" % p.stderr)
    p = run(["dump", "--from", "cif", "--strict"], cif + b"\x00", rc=1)
    check(b"trailing_bytes" in p.stdout, "dump --strict with a trailing byte")


def test_map_word_size():
    # Swift writes a backtrace and its imageMap each with its own word size
    # (a 64-bit CBF next to a 32-bit map, as its runtime does when given
    # them): both are read and written back as they were.
    for line in (b'{"architecture":"x86_64","backtrace":"AhEQAA","imageMap":"AQAA"}\n',
                 b'{"architecture":"msp430","backtrace":"ABEQAA","imageMap":"AgAA"}\n'):
        out = json.loads(run(["convert", "--from", "swift", "--to", "swift"], line).stdout)
        want = json.loads(line)
        check(out["imageMap"] == want["imageMap"] and
              out["backtrace"].startswith(want["backtrace"][:2]),
              "map of its own word size: %r" % out)


def test_errors():
    cases = [
        (["convert", "--from", "swift", "--to", "json"],
         b'{"architecture":"x86_64","backtrace":"Ah*VQ"}\n',
         'btpack: <stdin>:1: "backtrace": character 3: invalid base64\n', 1),
        (["convert", "--from", "swift", "--to", "json"], b'{"backtrace":"AhEQAA"}\n',
         'btpack: <stdin>:1: "architecture" must be a UTF-8 string without NUL\n', 1),
        (["convert", "--from", "swift", "--to", "json"],
         b'{"architecture":"x86_64","backtrace":"AhEQAA","imageMap":"AgACAA"}\n',
         "btpack: <stdin>:1: imageMap: byte 4: image map ends inside a field "
         "(cif_truncated)\n", 1),
        (["convert", "--from", "swift-crashlog", "--to", "json"],
         b'junk line\n{ "kind": "other" }\n',
         'btpack: <stdin>:2: not a swift-backtrace crash log (needs "kind": "crashReport")\n', 1),
        (["convert", "--from", "swift-crashlog", "--to", "json", "--thread", "3"],
         b'{ "kind": "crashReport", "architecture": "arm64", "threads": [ { "frames": [] } ] }\n',
         "btpack: <stdin>:1: --thread 3: the log has 1 thread\n", 1),
        (["convert", "--from", "swift-crashlog", "--to", "json"],
         b'{ "kind": "crashReport", "architecture": "i386", "threads": [ { "frames": [ '
         b'{ "kind": "returnAddress", "address": "0x100000000" } ] } ] }\n',
         "btpack: <stdin>:1: frame 1: address 0x100000000 does not fit 32 bits\n", 1),
        # A build ID over 64 bytes could not be written as an image line.
        (["convert", "--from", "swift-crashlog", "--to", "json"],
         b'{ "kind": "crashReport", "architecture": "x86_64", "threads": [ { "frames": [] } ], '
         b'"images": [ { "baseAddress": "0x1000", "endOfText": "0x2000", "buildId": "'
         + b"ab" * 65 + b'" } ] }\n',
         'btpack: <stdin>:1: image 0: "buildId" of 65 bytes, longer than the 64 btpack keeps\n',
         1),
        (["convert", "--from", "swift", "--to", "json", "--thread", "0"], b"",
         "btpack convert: --thread applies to --from swift-crashlog only (see `btpack convert "
         "--help`)\n", 2),
        (["convert", "--from", "swift-crashlog", "--to", "json", "--thread", "x"], b"",
         "btpack convert: --thread must be a thread number (0, 1, ...), crashed or all, not "
         "'x' (see `btpack convert --help`)\n", 2),
    ]
    for args, data, msg, rc in cases:
        p = run(args, data, rc=rc)
        check(p.stderr.decode() == msg, "%s: message %r" % (" ".join(args), p.stderr.decode()))


for t in (test_capture, test_crash_logs, test_long_build_id_to_log, test_dump,
          test_map_word_size, test_errors):
    try:
        t()
    except Exception as e:
        check(False, "%s: %s: %s" % (t.__name__, type(e).__name__, e))
print("%s" % ("ok" if not failures else "%d failures" % failures))
sys.exit(1 if failures else 0)
