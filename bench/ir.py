#!/usr/bin/env python3
"""Instructions per frame of each codec, counted by callgrind: a measure that,
unlike time, does not depend on the load of the machine.

usage: bench/ir.py BTPACK_BENCH [--codecs a,b,...] CORPUS...

Runs BTPACK_BENCH --ir --reps 1 under valgrind --tool=callgrind (about 50
times slower than natively: the default codecs are the per-trace ones),
reads the dump the benchmark asks for around each codec's first timed
encode and decode (the whole corpus through the same loop the timing uses,
so the harness's few instructions a trace are counted for every codec
alike) and prints instructions per frame."""
import sys

import callgrind_dumps

DEFAULT = "raw,varint,gwp-asan,cbf,cbf-addr,lws,lws-bitwise"


def main():
    args = sys.argv[1:]
    if len(args) < 2 or args[0] in ("-h", "--help"):
        print(__doc__)
        return 2
    bench, codecs = args[0], DEFAULT
    rest = args[1:]
    if rest[0] == "--codecs" and len(rest) > 2:
        codecs, rest = rest[1], rest[2:]
    dumps = callgrind_dumps.run([bench, "--ir", "--reps", "1", "--budget", "0", "--codecs",
                                 codecs] + rest)
    if dumps is None:
        return 1
    counts = {}
    for desc, total in dumps:
        if len(desc) == 4:
            corpus, codec, direction, frames = desc
            counts[(corpus, codec, direction)] = total / int(frames)
    corpora = sorted({k[0] for k in counts}, key=lambda c: min(
        i for i, k in enumerate(counts) if k[0] == c))
    print("instructions per frame (callgrind; harness loop included)")
    print("%-22s %-12s %10s %10s" % ("corpus", "codec", "encode", "decode"))
    for corpus in corpora:
        for codec in codecs.split(","):
            e, d = counts.get((corpus, codec, "encode")), counts.get((corpus, codec, "decode"))
            if e is None and d is None:
                print("%-22s %-12s %10s %10s" % (corpus, codec, "n/a", "n/a"))
                continue
            print("%-22s %-12s %10.1f %10.1f" % (corpus, codec, e, d))
    return 0


sys.exit(main())
