#!/usr/bin/env python3
"""Trace logs against xz: size of a .btlog of each corpus's text against `xz -9e` of the text,
and the time to reproduce the text (`btpack convert --from log --to trace`) against `xz -dc`.

Usage: tracelog_bench.py BTPACK CORPUS.trace.xz... [--reps N]

Per corpus: the text's bytes, `xz -9e` of it, the log (`btpack convert --from trace --to log`,
no maps: the text holds none), their ratio (goal: at most 0.5); then N interleaved rounds of
both decoders, each writing the text to /dev/null, timed as the child's CPU time (user +
system, from wait4: the machine is shared) with min / median / max and the ratio of the
medians (goal: below 1). The log must give the text back byte for byte."""
import os
import statistics
import subprocess
import sys
import tempfile


def cpu(cmd, out=os.devnull):
    with open(out, "wb") as null:
        p = subprocess.Popen(cmd, stdout=null)
        _, status, ru = os.wait4(p.pid, 0)
    if status != 0:
        sys.exit("%s failed" % " ".join(cmd))
    return ru.ru_utime + ru.ru_stime


def main():
    args = sys.argv[1:]
    reps = 11
    if "--reps" in args:
        i = args.index("--reps")
        reps = int(args[i + 1])
        del args[i:i + 2]
    if len(args) < 2:
        sys.exit(__doc__)
    btpack, corpora = args[0], args[1:]
    verdict = []
    with tempfile.TemporaryDirectory() as tmp:
        print("%-18s %10s %9s %9s %6s   %-26s %-26s %6s" % (
            "corpus", "text", "xz -9e", "btlog", "ratio", "btpack s min/med/max",
            "xz -dc s min/med/max", "ratio"))
        for path in corpora:
            name = os.path.basename(path).split(".")[0]
            text = os.path.join(tmp, name + ".trace")
            xzf = text + ".xz"
            log = os.path.join(tmp, name + ".btlog")
            with open(text, "wb") as f:
                subprocess.run(["xz", "-dc", path], stdout=f, check=True)
            xz_write = cpu(["xz", "-9e", "-c", text], xzf)
            log_write = cpu([btpack, "convert", "--from", "trace", "--to", "log", "-o", log,
                             text])
            back = subprocess.run([btpack, "convert", "--from", "log", "--to", "trace", log],
                                  stdout=subprocess.PIPE, check=True).stdout
            with open(text, "rb") as f:
                if back != f.read():
                    sys.exit("%s: the log does not give the text back" % name)
            sizes = [os.path.getsize(p) for p in (text, xzf, log)]
            ours, peer = [], []
            for _ in range(reps):
                ours.append(cpu([btpack, "convert", "--from", "log", "--to", "trace", log]))
                peer.append(cpu(["xz", "-dc", xzf]))
            size_ratio = sizes[2] / sizes[1]
            time_ratio = statistics.median(ours) / statistics.median(peer)
            fmt = lambda a: "%.4f/%.4f/%.4f" % (min(a), statistics.median(a), max(a))
            print("%-18s %10d %9d %9d %6.3f   %-26s %-26s %6.2f" % (
                name, sizes[0], sizes[1], sizes[2], size_ratio, fmt(ours), fmt(peer),
                time_ratio))
            verdict.append("%s  %s: btlog %.3fx xz -9e (goal <= 0.5)" % (
                "PASS" if size_ratio <= 0.5 else "FAIL", name, size_ratio))
            verdict.append("      %s: writing took %.3f s, xz -9e %.3f s (one run each)" % (
                name, log_write, xz_write))
            verdict.append("%s  %s: decode %.2fx the time of xz -dc (goal < 1; per-round "
                           "ratios %.2f-%.2f)" % (
                               "PASS" if time_ratio < 1 else "FAIL", name, time_ratio,
                               min(a / b for a, b in zip(ours, peer)),
                               max(a / b for a, b in zip(ours, peer))))
    print("\n".join(verdict))


if __name__ == "__main__":
    main()
