#!/usr/bin/env python3
"""Instructions per frame of each capture row, counted by callgrind: unlike
time, they do not depend on the load of the machine.

usage: bench/capture_ir.py BTPACK_CAPTURE_BENCH [--depth N]

Runs BTPACK_CAPTURE_BENCH --ir under valgrind --tool=callgrind; the program
dumps the counts of 1000 captures per row (after a warm-up that fills every
cache) and this prints instructions per capture and per frame, and for each
comparison row the ratio to its peer (ratios of instructions, not of time:
a pointer chase and a table lookup of the same count can differ in time)."""
import glob
import os
import re
import subprocess
import sys
import tempfile

# row -> peer, as in capture_bench.c
PEERS = {
    "fp": "fp-bare", "fp-cbf": "fp", "libunwind": "unw_backtrace",
    "libunwind-cbf": "libunwind", "cfi": "unw_backtrace", "cfi-cbf": "cfi",
    "libgcc": "_Unwind_Backtrace", "libgcc-cbf": "libgcc", "glibc": "backtrace",
    "glibc-cbf": "glibc", "default": "unw_backtrace",
}


def main():
    args = sys.argv[1:]
    if not args or args[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if args else 2
    bench, rest = args[0], args[1:]
    counts = {}
    order = []
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "cg.out")
        cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out, bench,
               "--ir"] + rest
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            sys.stderr.write(r.stderr)
            return 1
        for path in glob.glob(out + "*"):
            desc = total = None
            with open(path) as f:
                for line in f:
                    m = re.match(r"desc: Trigger: Client Request: capture (.*)", line)
                    if m:
                        desc = m.group(1).split()
                    m = re.match(r"(?:summary|totals): (\d+)", line)
                    if m:
                        total = int(m.group(1))
            if desc and total is not None and len(desc) == 3:
                name, frames, captures = desc[0], int(desc[1]), int(desc[2])
                counts[name] = (total / captures, frames)
                order.append((os.path.getmtime(path), path, name))
    print("instructions per capture and per frame (callgrind, 1000 captures a row)")
    print("%-18s %6s %12s %10s   %s" % ("row", "frames", "Ir/capture", "Ir/frame", "vs peer"))
    for _, _, name in sorted(order, key=lambda t: (t[0], t[1])):
        per, frames = counts[name]
        peer = PEERS.get(name)
        cmp = ""
        if peer in counts:
            pper, pframes = counts[peer]
            if name.endswith("-cbf"):
                cmp = "%+.1f Ir/frame over %s" % ((per - pper) / pframes, peer)
            else:
                cmp = "%.2fx %s (per frame)" % ((per / frames) / (pper / pframes), peer)
        print("%-18s %6d %12.1f %10.1f   %s" % (name, frames, per, per / frames, cmp))
    return 0


sys.exit(main())
