#!/usr/bin/env python3
"""Instructions a traced allocation costs the program's thread, from a callgrind
profile of that thread (--separate-threads=yes; the command is in history.md,
"The cfi walk's head, kept images and cheaper memo upkeep").

    python3 bench/heap/wrapper_ir.py CALLGRIND_OUT-01

Prints the captures (calls of btp_capture and btp_capture_cfi_caller), the
capture's instructions a call (inclusive), and the tracer's entry points'
own work a capture: the inclusive cost of malloc, free, calloc, realloc,
posix_memalign, aligned_alloc and memalign of libbtpack-heap.so, less their
calls into libc (the real functions), the capture, and the draining of the
rings (valgrind runs one thread at a time, so the program's thread finds
its ring full and drains it itself: the writer thread's work).
"""
import re
import subprocess
import sys

ENTRIES = ('malloc', 'free', 'calloc', 'realloc', 'posix_memalign', 'aligned_alloc', 'memalign')
CAPTURES = ('btp_capture', 'btp_capture_cfi_caller')


def main(path):
    out = subprocess.run(['callgrind_annotate', '--tree=calling', '--inclusive=yes', path],
                         capture_output=True, text=True, check=True).stdout
    line_re = re.compile(r'\s*([\d,]+) \([^)]*\)\s+(\*|>)\s+(\S+?)(?: \(([\d,]+)x\))? \[(.*)\]')
    fn, incl, arcs = None, {}, {}
    for line in out.splitlines():
        m = line_re.match(line)
        if not m:
            continue
        cost = int(m.group(1).replace(',', ''))
        name = m.group(3).split(':', 1)[1]
        obj = 'heap' if 'libbtpack-heap' in m.group(5) else m.group(5).split('/')[-1]
        key = (name, obj)
        if m.group(2) == '*':
            fn = key
            incl[fn] = cost
        else:
            c0, n0 = arcs.get((fn, key), (0, 0))
            arcs[(fn, key)] = (c0 + cost, n0 + int(m.group(4).replace(',', '')))
    own = 0
    for e in ENTRIES:
        k = (e, 'heap')
        if k in incl:
            own += incl[k] - sum(c for (a, b), (c, n) in arcs.items()
                                 if a == k and b[1] == 'libc.so.6')
    cap = sum(incl.get((c, 'heap'), 0) for c in CAPTURES)
    n = sum(calls for (a, b), (c, calls) in arcs.items() if b[1] == 'heap' and b[0] in CAPTURES)
    drain = sum(c for (a, b), (c, calls) in arcs.items()
                if a[0] == 'wait_room' and b[0].startswith('drain'))
    own -= cap + drain
    if n == 0:
        sys.exit('no captures in ' + path)
    print(f'captures {n}  capture {cap / n:.1f}  entry points {own / n:.1f}  '
          f'together {(cap + own) / n:.1f} instructions a capture')


if __name__ == '__main__':
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
