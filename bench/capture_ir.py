#!/usr/bin/env python3
"""Instructions per frame of each capture row, counted by callgrind: unlike
time, they do not depend on the load of the machine.

usage: bench/capture_ir.py BTPACK_CAPTURE_BENCH [--depth N]

Runs BTPACK_CAPTURE_BENCH --ir under valgrind --tool=callgrind; the program
dumps the counts of 1000 captures per row (after a warm-up that fills every
cache) and this prints instructions per capture and per frame, and for each
comparison row the ratio to its peer (ratios of instructions, not of time:
a pointer chase and a table lookup of the same count can differ in time)."""
import sys

import callgrind_dumps

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
    dumps = callgrind_dumps.run([bench, "--ir"] + rest)
    if dumps is None:
        return 1
    counts = {}
    order = []
    for desc, total in dumps:
        if len(desc) == 4 and desc[0] == "capture":
            name, frames, captures = desc[1], int(desc[2]), int(desc[3])
            counts[name] = (total / captures, frames)
            order.append(name)
    print("instructions per capture and per frame (callgrind, 1000 captures a row)")
    print("%-18s %6s %12s %10s   %s" % ("row", "frames", "Ir/capture", "Ir/frame", "vs peer"))
    for name in order:
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
