"""btpack symbolize throughput against symbolizing the same addresses by hand
with one addr2line (binutils) and one eu-addr2line (elfutils) process per
image, all in the same run, on two inputs of 100,000 frames:

  corpus    the first traces of the py311_regrtest corpus with 100,000
            frames in all, with its maps (few distinct addresses: a real
            program's allocations come from a few hundred call sites);
  distinct  100,000 distinct addresses, instruction boundaries spread
            evenly over the text of the corpus's libpython (from `objdump
            -d`; those whose byte before, where a return address is looked
            up, is inside a function symbol, not padding), as return
            addresses in traces of 100 frames, with the corpus's maps: no
            answer can be shared.

Needs the corpus's binaries, which are on the Debian 12 machines this
project runs on (the script says which inputs it cannot make). Every way
runs REPS times, the ways interleaved (one of each, then again), so that a
busy spell of a shared machine hits all of them alike; the figures are the
minimum and median of the wall time and of the CPU time (user + system of
the process and its children: the addr2line back end's and the by-hand
runs' addr2line processes count).

Ways, on every input:
  btpack symbolize --backend libdw | addr2line   (JSON Lines output)
  addr2line -f -C -i -e FILE, eu-addr2line -f -C -i -e FILE, one process per
  image with debug information or symbols, its addresses (minus 1: return
  addresses) on standard input, as file addresses;
  the same with each image's distinct addresses only (sort -u: what a careful
  user does by hand; on `distinct` it is the same input, so not run again).

Before the timing, the two back ends' answers are compared frame by frame,
and where they differ llvm-symbolizer (when installed) is asked which one it
agrees with; --compare-only stops there.

usage: python3 bench/symbolize_bench.py BTPACK CORPUS_DIR [--reps N]
                                        [--frames N] [--inputs corpus,distinct]
                                        [--ways W1,W2,...] [--json] [--compare-only]"""
import argparse
import json
import lzma
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time

ap = argparse.ArgumentParser(usage=__doc__.split("usage: ")[1])
ap.add_argument("btpack")
ap.add_argument("corpus_dir")
ap.add_argument("--reps", type=int, default=3)
ap.add_argument("--frames", type=int, default=100000)
ap.add_argument("--inputs", default="corpus,distinct")
ap.add_argument("--ways", default=None, help="only these ways (names as printed)")
ap.add_argument("--json", action="store_true", help="one JSON object per row")
ap.add_argument("--compare-only", action="store_true",
                help="only compare the back ends' answers (no timing)")
args = ap.parse_args()
if args.reps < 1 or args.frames < 1:
    sys.exit("--reps and --frames must be at least 1")

maps_path = os.path.join(args.corpus_dir, "py311_regrtest.maps")
LIBPYTHON = "/root/.pyenv/versions/3.11.7/lib/libpython3.11.so.1.0"


def images_of(path):
    """/proc/PID/maps -> {file: [base, end of text]}"""
    images = {}
    for line in open(path):
        f = line.split(None, 5)
        if len(f) < 6 or not f[5].strip().startswith("/"):
            continue
        p = f[5].strip()
        start, end = (int(x, 16) for x in f[0].split("-"))
        if int(f[2], 16) == 0 and p not in images:
            images[p] = [start, 0]
        if p in images and "x" in f[1]:
            images[p][1] = max(images[p][1], end)
    return images


def link_base(path):
    """The file address of offset 0: the first PT_LOAD's page-aligned vaddr."""
    out = subprocess.run(["readelf", "-lW", path], capture_output=True, text=True).stdout
    for line in out.splitlines():
        f = line.split()
        if f and f[0] == "LOAD":
            return int(f[2], 16) & ~0xfff
    return 0


def corpus_input():
    lines, n = [], 0
    with lzma.open(os.path.join(args.corpus_dir, "py311_regrtest.trace.xz"), "rt") as f:
        for line in f:
            if line.startswith("m "):
                k = len(line.split()) - 3
                if n + k > args.frames:
                    break
                lines.append(line)
                n += k
    addrs = [int(a, 16) for line in lines for a in line.split()[3:]]
    return "trace", "".join(lines).encode(), addrs


def distinct_input():
    if not os.path.exists(LIBPYTHON) or not shutil.which("objdump"):
        return None
    base = images_of(maps_path).get(LIBPYTHON, [None])[0]
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", LIBPYTHON],
                         capture_output=True, text=True).stdout
    insns = []
    for line in out.splitlines():
        head = line.split(":", 1)[0].strip()
        if line.startswith(" ") and head and all(c in "0123456789abcdef" for c in head):
            insns.append(int(head, 16))
    # keep those whose byte before (where a return address is looked up)
    # is inside a function: not the padding between functions
    funcs = []
    syms = subprocess.run(["readelf", "-sW", LIBPYTHON], capture_output=True, text=True).stdout
    for line in syms.splitlines():
        f = line.split()
        if len(f) >= 8 and f[3] == "FUNC" and f[2].isdigit() and int(f[2]) > 0:
            funcs.append((int(f[1], 16), int(f[1], 16) + int(f[2])))
    funcs.sort()
    inside, k = [], 0
    for a in sorted(set(insns)):
        while k < len(funcs) and funcs[k][1] <= a - 1:
            k += 1
        if k < len(funcs) and funcs[k][0] <= a - 1:
            inside.append(a)
    insns = inside
    if base is None or len(insns) < args.frames:
        return None
    lb = link_base(LIBPYTHON)
    step = len(insns) / args.frames
    addrs = [base + insns[int(i * step)] - lb for i in range(args.frames)]
    text = "".join(" ".join("0x%x" % a for a in addrs[t:t + 100]) + "\n"
                   for t in range(0, len(addrs), 100))
    return "addrs", text.encode(), addrs


def by_hand_inputs(addrs, distinct):
    """{file: stdin bytes} for the images that are on this machine"""
    per_file = {}
    images = images_of(maps_path)
    bases = {p: link_base(p) for p in images if os.path.exists(p)}
    for a in addrs:
        for p, (base, end) in images.items():
            if base <= a < end:
                if p in bases:
                    per_file.setdefault(p, []).append(a - 1 - base + bases[p])
                break
    if distinct:
        per_file = {p: sorted(set(v)) for p, v in per_file.items()}
    return {p: "".join("0x%x\n" % a for a in v).encode() for p, v in per_file.items()}


def timed(cmd, inp):
    """(wall s, CPU s of the child, exit status)"""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    p = subprocess.run(cmd, input=inp, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    return wall, cpu, p.returncode, len(p.stdout)


def btpack_way(fmt, data, backend):
    def run():
        return timed([args.btpack, "symbolize", "--from", fmt, "--maps", maps_path, "--to", "json",
                      "--backend", backend, "-"], data)
    return run


def hand_way(prog, inputs):
    def run():
        wall = cpu = 0.0
        out = 0
        for path, inp in inputs.items():
            w, c, rc, n = timed([prog, "-f", "-C", "-i", "-e", path], inp)
            # eu-addr2line exits 1 when it could not place some address (a
            # frame of a stripped file): a failure only when it said nothing
            if rc not in (0, 1) or n < inp.count(b"\n") * 4:
                return w, c, rc or 1, n
            wall, cpu, out = wall + w, cpu + c, out + n
        return wall, cpu, 0, out
    return run


def compare_backends(fmt, data):
    """How many frames libdw and addr2line answer differently, and how."""
    outs = []
    for be in ["libdw", "addr2line"]:
        p = subprocess.run([args.btpack, "symbolize", "--from", fmt, "--maps", maps_path, "--to",
                            "json", "--backend", be, "-"], input=data, capture_output=True)
        outs.append([f for line in p.stdout.decode().splitlines()
                     for f in json.loads(line)["frames"]])
    kinds = {"frames": 0, "same": 0, "locations": 0, "function": 0, "file": 0, "line": 0}
    differ = []
    for x, y in zip(*outs):
        kinds["frames"] += 1
        sx, sy = x.get("symbols", []), y.get("symbols", [])
        if sx == sy:
            kinds["same"] += 1
            continue
        differ.append((x, y))
        if len(sx) != len(sy):
            kinds["locations"] += 1
        else:
            for field in ["function", "file", "line"]:
                if any(a.get(field) != b.get(field) for a, b in zip(sx, sy)):
                    kinds[field] += 1
                    break
    kinds.update(arbiter(differ))
    return kinds


def arbiter(differ):
    """Where the back ends differ, which one llvm-symbolizer (a third DWARF
    reader) agrees with, on what differs: the locations' function names, or
    their file names (the last path component: the three join directories
    differently; function names are compared only where the back ends
    differ in them, since llvm-symbolizer may pick another alias of the
    same function from the symbol table). Counted per distinct (image,
    offset)."""
    llvm = shutil.which("llvm-symbolizer")
    res = {"llvm_libdw": 0, "llvm_addr2line": 0, "llvm_neither": 0}
    if not llvm:
        return res
    by_image = {}
    for x, y in differ:
        if x.get("image") and x["image"].startswith("/"):
            key = int(x["offset"], 16) - (1 if x["type"] == "ra" else 0)
            by_image.setdefault(x["image"], {})[key] = (x["symbols"], y["symbols"])
    def names(symbols, functions):
        return [(s.get("function") if functions else None, os.path.basename(s.get("file") or ""))
                for s in symbols]
    for image, frames in by_image.items():
        lb = link_base(image)
        offs = sorted(frames)
        p = subprocess.run([llvm, "--obj=" + image, "--inlining", "--demangle"],
                           input="".join("0x%x\n" % (o + lb) for o in offs),
                           capture_output=True, text=True)
        blocks = p.stdout.strip("\n").split("\n\n")
        for o, blk in zip(offs, blocks):
            ls = blk.split("\n")
            want = []
            for i in range(0, len(ls) - 1, 2):
                fn, loc = ls[i], ls[i + 1].rsplit(":", 2)[0]
                want.append((None if fn == "??" else fn,
                             "" if loc == "??" else os.path.basename(loc)))
            dw, a2l = frames[o]
            fns = [s.get("function") for s in dw] != [s.get("function") for s in a2l]
            want = [(fn if fns else None, f) for fn, f in want]
            if names(dw, fns) == want:
                res["llvm_libdw"] += 1
            elif names(a2l, fns) == want:
                res["llvm_addr2line"] += 1
            else:
                res["llvm_neither"] += 1
    return res


makers = {"corpus": corpus_input, "distinct": distinct_input}
ways_wanted = set(args.ways.split(",")) if args.ways else None
rows = []
for name in args.inputs.split(","):
    if name not in makers:
        sys.exit("unknown input %r (corpus, distinct)" % name)
    made = makers[name]()
    if made is None:
        print("%s: cannot be made here (needs %s and objdump)" % (name, LIBPYTHON))
        continue
    fmt, data, addrs = made
    hand_all = by_hand_inputs(addrs, False)
    n_hand = sum(inp.count(b"\n") for inp in hand_all.values())
    distinct_hand = by_hand_inputs(addrs, True)
    n_distinct = sum(inp.count(b"\n") for inp in distinct_hand.values())
    print("input %s: %d frames, %d distinct; %d in %d images on this machine (%d distinct)" %
          (name, len(addrs), len(set(addrs)), n_hand, len(hand_all), n_distinct))
    ways = [("btpack symbolize --backend libdw", btpack_way(fmt, data, "libdw")),
            ("btpack symbolize --backend addr2line", btpack_way(fmt, data, "addr2line"))]
    for prog in ["addr2line", "eu-addr2line"]:
        if not shutil.which(prog):
            print("note: no %s here" % prog)
            continue
        ways.append(("%s by hand, all addresses" % prog, hand_way(prog, hand_all)))
        if n_distinct != n_hand:
            ways.append(("%s by hand, distinct addresses" % prog, hand_way(prog, distinct_hand)))
    if ways_wanted:
        ways = [w for w in ways if w[0] in ways_wanted]
    k = compare_backends(fmt, data)
    print("  libdw and addr2line back ends: %d of %d frames answered alike; differing: %d in "
          "the number of (inlined) locations, else %d in a function name, %d in a file, "
          "%d in a line" % (k["same"], k["frames"], k["locations"], k["function"], k["file"],
                            k["line"]))
    if k["llvm_libdw"] + k["llvm_addr2line"] + k["llvm_neither"]:
        print("  where they differ, llvm-symbolizer agrees with libdw "
              "at %d distinct addresses, with addr2line at %d, with neither at %d" %
              (k["llvm_libdw"], k["llvm_addr2line"], k["llvm_neither"]))
    if args.compare_only:
        continue
    times = {w: [] for w, _ in ways}
    for rep in range(args.reps):
        for w, run in ways:
            wall, cpu, rc, out = run()
            if rc != 0:
                sys.exit("%s failed (exit %d) on %s" % (w, rc, name))
            times[w].append((wall, cpu))
            print("  rep %d  %-45s wall %8.2f s  cpu %8.2f s" % (rep + 1, w, wall, cpu), flush=True)
    print("%s, %d frames, %d reps: min / median; frames/s from the median" %
          (name, len(addrs), args.reps))
    print("  %-45s %8s %8s %8s %8s %11s %11s" % ("way", "wall min", "median", "cpu min", "median",
                                                  "frames/s", "frames/s"))
    print("  %-45s %8s %8s %8s %8s %11s %11s" % ("", "s", "s", "s", "s", "wall", "cpu"))
    for w, _ in ways:
        wl = [t[0] for t in times[w]]
        cl = [t[1] for t in times[w]]
        mw, mc = statistics.median(wl), statistics.median(cl)
        row = {"input": name, "way": w, "frames": len(addrs), "reps": args.reps,
               "wall_min": min(wl), "wall_median": mw, "cpu_min": min(cl), "cpu_median": mc}
        rows.append(row)
        print("  %-45s %8.2f %8.2f %8.2f %8.2f %11.0f %11.0f" %
              (w, min(wl), mw, min(cl), mc, len(addrs) / mw, len(addrs) / mc if mc else 0))
if args.json:
    for r in rows:
        print(json.dumps(r))
