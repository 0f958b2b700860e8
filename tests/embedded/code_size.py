#!/usr/bin/env python3
"""Code size of each piece of btpack on a bare-metal target, from the link
maps of the size probes (tests/embedded/size_probe.c), checked against the
budgets in bench/embedded-size.tsv.

For each probe the input sections the linker kept (.text*, .rodata*) are
attributed to where they came from: the library (libbtpack.a), libgcc (the
compiler's helpers; for EHABI its unwinder), libc (memcpy, memset, abort).
A piece's own size is its library bytes; its total adds the libgcc and libc
bytes it brings beyond the empty probe. Fails when a piece's own size
exceeds its budget, or a piece or budget is missing.

  code_size.py --target CPU --budgets FILE name=MAP... [--markdown | --record]

--record prints budget lines for the measured sizes (3 % above, rounded up
to 16 bytes, but no higher than the goal of a piece that meets it), to
replace the target's lines in the budget file after a reviewed change in
size.
"""
import argparse
import re
import sys

SECTION = re.compile(r"^ (\.(?:text|rodata)\S*)(?:\s+0x([0-9a-fA-F]+)\s+0x([0-9a-fA-F]+)\s+(\S.*))?$")
CONT = re.compile(r"^\s+0x([0-9a-fA-F]+)\s+0x([0-9a-fA-F]+)\s+(\S.*)$")


# The goals the size table is measured against (own bytes).
GOALS = {"cbf_encode": "512", "cbf_chain32": "512", "cbf_decode": "1024", "fault_scan": "2048",
         "fault_fp": "2048", "fault_ehabi": "2048", "heap_fp": "2048"}


def origin(path):
    if "libbtpack.a" in path:
        return "btpack"
    if "libgcc.a" in path:
        return "libgcc"
    if re.search(r"libc(_nano)?\.a|libg(_nano)?\.a|libnosys\.a", path):
        return "libc"
    return "probe"


def read_map(path):
    """Bytes kept per origin."""
    sizes = {"btpack": 0, "libgcc": 0, "libc": 0, "probe": 0}
    with open(path) as f:
        lines = f.read().split("Linker script and memory map", 1)[-1].splitlines()
    i = 0
    while i < len(lines):
        m = SECTION.match(lines[i])
        if m:
            if m.group(2) is None and i + 1 < len(lines) and CONT.match(lines[i + 1]):
                c = CONT.match(lines[i + 1])
                size, src = int(c.group(2), 16), c.group(3)
                i += 1
            elif m.group(2) is not None:
                size, src = int(m.group(3), 16), m.group(4)
            else:
                size, src = 0, ""
            if size and not src.startswith("*"):
                sizes[origin(src)] += size
        i += 1
    return sizes


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", required=True)
    ap.add_argument("--budgets", required=True)
    ap.add_argument("--markdown", action="store_true", help="print a table row per piece")
    ap.add_argument("--record", action="store_true", help="print budget lines for these sizes")
    ap.add_argument("maps", nargs="+", help="NAME=MAP")
    args = ap.parse_args()
    maps = dict(m.split("=", 1) for m in args.maps)
    sizes = {name: read_map(path) for name, path in maps.items()}
    base = sizes.pop("base")
    budgets = {}
    with open(args.budgets) as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                target, piece, budget, goal = line.split()[:4]
                if target == args.target:
                    budgets[piece] = (int(budget), goal)
    passed = failed = 0
    if not args.record:
        print("%-12s %-12s %6s %6s %6s %6s %7s %6s" %
              ("target", "piece", "own", "libgcc", "libc", "total", "budget", "goal"))
    for piece, s in sizes.items():
        own = s["btpack"] - base["btpack"]
        gcc = s["libgcc"] - base["libgcc"]
        libc = s["libc"] - base["libc"]
        total = own + gcc + libc
        budget, goal = budgets.get(piece, (None, "-"))
        if args.record:
            goal = GOALS.get(piece, "-")
            budget = -(-own * 103 // 100) + 15 & ~15
            # A piece that meets its goal keeps it: its budget is no higher.
            if goal != "-" and own <= int(goal):
                budget = min(budget, int(goal))
            print("%s %s %d %s" % (args.target, piece, budget, goal))
            continue
        if args.markdown:
            print("| %s | %s | %d | %d | %d | %d | %s | %s |" %
                  (args.target, piece, own, gcc, libc, total, budget, goal))
        else:
            print("%-12s %-12s %6d %6d %6d %6d %7s %6s" %
                  (args.target, piece, own, gcc, libc, total, budget, goal))
        if budget is None:
            print("FAIL: no budget for %s on %s in %s" % (piece, args.target, args.budgets))
            failed += 1
        elif own > budget:
            print("FAIL: %s on %s is %d bytes, over its budget of %d" %
                  (piece, args.target, own, budget))
            failed += 1
        else:
            passed += 1
    for piece in budgets:
        if piece not in sizes:
            print("FAIL: budget for %s on %s, but no probe measures it" % (piece, args.target))
            failed += 1
    if args.record:
        return 0
    print("code-size (%s): %d passed, %d failed" % (args.target, passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
