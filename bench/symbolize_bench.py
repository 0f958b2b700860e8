"""btpack symbolize throughput on 100,000 frames of the py311 corpus (its
traces with its maps; needs the corpus's binaries, which are on the Debian 12
machines this project runs on), against symbolizing the same addresses by
hand with one addr2line (binutils) and one eu-addr2line (elfutils) process
per image, all in the same run.

usage: python3 bench/symbolize_bench.py BTPACK CORPUS_DIR [FRAMES]"""
import lzma
import os
import shutil
import subprocess
import sys
import time

BTPACK, CORPUS = sys.argv[1:3]
WANT = int(sys.argv[3]) if len(sys.argv) > 3 else 100000

# the first traces with WANT frames in all
lines, n = [], 0
with lzma.open(os.path.join(CORPUS, "py311_regrtest.trace.xz"), "rt") as f:
    for line in f:
        if line.startswith("m "):
            k = len(line.split()) - 3
            if n + k > WANT:
                break
            lines.append(line)
            n += k
data = "".join(lines).encode()
maps_path = os.path.join(CORPUS, "py311_regrtest.maps")

# images by hand: /proc/PID/maps -> (path, base, end of text)
images = {}
for l in open(maps_path):
    f = l.split(None, 5)
    if len(f) < 6 or not f[5].strip().startswith("/"):
        continue
    path = f[5].strip()
    start, end = (int(x, 16) for x in f[0].split("-"))
    if int(f[2], 16) == 0 and path not in images:
        images[path] = [start, 0]
    if path in images and "x" in f[1]:
        images[path][1] = max(images[path][1], end)
per_file = {}
for line in lines:
    for a in line.split()[3:]:
        a = int(a, 16)
        for path, (base, end) in images.items():
            if base <= a < end:
                per_file.setdefault(path, []).append(a - base - 1)
                break
looked = sum(len(v) for v in per_file.values())


def timed(cmd, inp):
    t = time.perf_counter()
    p = subprocess.run(cmd, input=inp, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t, p.returncode


def by_hand(prog, extra):
    total = 0.0
    for path, addrs in per_file.items():
        if not os.path.exists(path):
            continue
        inp = "".join("0x%x\n" % a for a in addrs).encode()
        dt, rc = timed([prog] + extra + ["-e", path], inp)
        total += dt
    return total


print("frames %d in %d traces; %d in images that are on this machine, %d distinct; %d files" %
      (n, len(lines), looked, len(set((p, a) for p, v in per_file.items() for a in v)), len(per_file)))
rows = []
for be in ["libdw", "addr2line"]:
    best = None
    for _ in range(3):
        dt, rc = timed([BTPACK, "symbolize", "--from", "trace", "--maps", maps_path, "--to", "json",
                        "--backend", be, "-"], data)
        if rc != 0:
            break
        best = dt if best is None else min(best, dt)
    if best is not None:
        rows.append(("btpack symbolize --backend " + be, best))
for prog, extra in [("addr2line", ["-f", "-C", "-i"]), ("eu-addr2line", ["-f", "-C", "-i"])]:
    if shutil.which(prog):
        rows.append(("%s by hand, one process per image" % prog,
                     min(by_hand(prog, extra) for _ in range(3))))
base = rows[0][1] if rows else 1
for name, dt in rows:
    print("%-48s %8.3f s  %10.0f frames/s  %6.2fx the time of the first" % (name, dt, n / dt, dt / base))
