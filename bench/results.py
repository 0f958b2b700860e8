#!/usr/bin/env python3
"""Turn a run of the benchmarks into bench/README.md's Results and Goals tables.

usage: bench/results.py [options] [CORPUS...]

Runs (or reads the saved output of) these and prints Markdown tables:
  BUILD/bench/btpack_bench --json --reps N CORPUS...   codecs: bytes and ns a frame,
                                                       the goals against gwp-asan and
                                                       lws-bitwise (stdout and stderr)
  bench/ir.py BUILD/bench/btpack_bench CORPUS...       instructions a frame (--ir)
  BUILD/bench/btpack_capture_bench --json --depth D    stack capture (--capture-depths)
  bench/capture_ir.py BUILD/bench/btpack_capture_bench instructions a capture (--capture-ir)
  bench/tracelog_bench.py BUILD/tools/btpack CORPUS... trace logs against xz (--tracelog)

options:
  --build DIR            build directory (default build-rel)
  --reps N               btpack_bench rounds (default 21)
  --ir                   run ir.py too (valgrind; a few minutes)
  --capture-depths L     run btpack_capture_bench at these depths (e.g. 10,30)
  --capture-rounds N     its rounds (default 21)
  --capture-ir           run capture_ir.py at those depths too (valgrind)
  --tracelog             run tracelog_bench.py too
  --tracelog-reps N      its rounds (default 21)
  --bench-out FILE       read btpack_bench --json's output (stdout and stderr together,
                         2>&1) instead of running it
  --ir-out FILE          read ir.py's output instead of running it
  --capture-out D=FILE   read btpack_capture_bench's output at depth D (--json or the text
                         form); may be repeated
  --capture-ir-out D=FILE  read capture_ir.py's output at depth D; may be repeated
  --tracelog-out FILE    read tracelog_bench.py's output
  --save DIR             keep the raw output of every program run, for the record
  --label TEXT           what the run was (commit, build, machine), printed above each table
  --write README         replace each table between <!-- results:NAME --> and
                         <!-- /results:NAME --> in README with this run's, where the run has
                         everything that table needs; print the others

A peer the build lacks (gwp-asan without compiler-rt, libunwind's rows) gives n/a, never an
error. Nothing here judges a single time: every verdict is a ratio of medians against the peer
of the same run, as the programs themselves compute it."""
import json
import os
import re
import subprocess
import sys
import textwrap
import time

HERE = os.path.dirname(os.path.abspath(__file__))

# (codec, peer, direction, goal): ours must be at least `goal` times faster than the peer.
CODEC_GOALS = [
    ("cbf-addr", "gwp-asan", "encode", 2.0),
    ("cbf-addr", "gwp-asan", "decode", 2.0),
    ("cbf", "gwp-asan", "encode", None),
    ("cbf", "gwp-asan", "decode", None),
    ("lws", "lws-bitwise", "encode", 10.0),
    ("lws", "lws-bitwise", "decode", 15.0),
]
# The goals of the capture rows (capture_bench.c prints its own; these are the ones the
# project states, in the order of the README's Goals table).
CAPTURE_GOALS = ["fp", "fp-cbf", "cfi-cbf", "libunwind-cbf", "libgcc-cbf", "glibc-cbf",
                 "libunwind", "libgcc", "glibc"]
TARGET_RE = re.compile(r"^\s*(PASS|FAIL)\s+(.*?): (\S+) ([\d.]+), (\S+) ([\d.]+) ns/frame "
                       r"\(ratio ([\d.]+); per round ([\d.]+)-([\d.]+)\)")
NOTE_RE = re.compile(r"^\* (\S+): over the (\d+) traces \((\d+) frames\) of at most (\d+) "
                     r"frames; the other (\d+)")
CAP_TEXT_RE = re.compile(r"^(\S+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+"
                         r"([\d.]+)\s+([\d.]+)\s*(.*)$")
CAP_CMP_RE = re.compile(r"([-+]?[\d.]+) / ([-+]?[\d.]+) / ([-+]?[\d.]+)(x| ns/frame over) "
                        r"?(\S+) \(goal <= ([\d.]+)x?\)")


def die(msg):
    sys.exit("results.py: " + msg)


def run(cmd, save, name):
    """Run cmd, return stdout and stderr together (the programs' verdicts go to stderr)."""
    sys.stderr.write("results.py: running %s\n" % " ".join(cmd))
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True)
    out = p.stdout + p.stderr
    if save:
        with open(os.path.join(save, name), "w") as f:
            f.write(out)
    if p.returncode != 0:
        die("%s failed (exit %d):\n%s" % (cmd[0], p.returncode, p.stderr[-2000:]))
    return out


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError as e:
        die("%s: %s" % (path, e))


# ---------------------------------------------------------------- parsing

def json_line(line):
    """The object a JSON Lines row holds, or None (a line cut short, or not an object)."""
    try:
        r = json.loads(line)
    except ValueError:
        return None
    return r if isinstance(r, dict) else None


def parse_bench(text):
    """btpack_bench --json: rows (JSON Lines on stdout), targets and notes (stderr)."""
    rows, targets, notes, corpora = {}, {}, {}, []
    corpus = None
    for line in text.splitlines():
        if line.startswith("{"):
            r = json_line(line)
            if r is None or "corpus" not in r or "codec" not in r:
                continue
            rows[(r["corpus"], r["codec"])] = r
            if r["corpus"] not in corpora:
                corpora.append(r["corpus"])
            continue
        m = re.match(r"^targets \((.*)\):$", line)
        if m:
            corpus = m.group(1)
            continue
        m = TARGET_RE.match(line)
        if m and corpus:
            ours, peer = m.group(3), m.group(5)
            direction = "decode" if " decode " in m.group(2) else "encode"
            targets[(corpus, ours, peer, direction)] = (float(m.group(8)), float(m.group(9)))
            continue
        m = NOTE_RE.match(line)
        if m:
            notes[m.group(1)] = "over the %s traces (%s frames) of at most %s frames; %s deeper" % (
                m.group(2), m.group(3), m.group(4), m.group(5))
    if not rows:
        die("no btpack_bench --json rows in the output")
    return {"rows": rows, "targets": targets, "notes": notes, "corpora": corpora}


def parse_ir(text):
    ir = {}
    for line in text.splitlines():
        f = line.split()
        if len(f) == 4 and f[0] != "corpus":
            try:
                ir[(f[0], f[1])] = (None if f[2] == "n/a" else float(f[2]),
                                    None if f[3] == "n/a" else float(f[3]))
            except ValueError:
                pass
    return ir


def parse_capture(text):
    """btpack_capture_bench's output, --json or text; returns {row: dict}."""
    rows = {}
    for line in text.splitlines():
        if line.startswith("{"):
            r = json_line(line)
            if r is not None and "row" in r:
                rows[r["row"]] = r
            continue
        m = CAP_TEXT_RE.match(line)
        if not m:
            if re.match(r"^(\S+)\s+-\s+not available", line):
                rows[line.split()[0]] = {"row": line.split()[0], "available": False}
            continue
        r = {"row": m.group(1), "available": True, "frames": int(m.group(2)),
             "ns_per_capture": [float(m.group(i)) for i in (3, 4, 5)],
             "ns_per_frame": [float(m.group(i)) for i in (6, 7, 8)]}
        c = CAP_CMP_RE.search(m.group(9))
        if c:
            key = "ratio" if c.group(4) == "x" else "added_ns_per_frame"
            r[key] = [float(c.group(i)) for i in (1, 2, 3)]
            r["peer"], r["goal"] = c.group(5), float(c.group(6))
        rows[r["row"]] = r
    if not rows:
        die("no btpack_capture_bench rows in the output")
    return rows


def parse_capture_ir(text):
    """capture_ir.py: row frames Ir/capture Ir/frame [vs peer]; returns {row: (frames,
    Ir a capture, comparison text)}."""
    rows = {}
    for line in text.splitlines():
        m = re.match(r"^(\S+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s*(.*)$", line)
        if m:
            cmp = re.sub(r" \(per frame\)$", "", m.group(5).strip())
            rows[m.group(1)] = (int(m.group(2)), float(m.group(3)), cmp)
    if not rows:
        die("no capture_ir.py rows in the output")
    return rows


def parse_tracelog(text):
    rows, per_round = {}, {}
    for line in text.splitlines():
        f = line.split()
        if len(f) == 8 and f[0] != "corpus" and "/" in f[5]:
            try:
                rows[f[0]] = {"text": int(f[1]), "xz": int(f[2]), "log": int(f[3]),
                              "size_ratio": float(f[4]),
                              "ours": [float(x) for x in f[5].split("/")],
                              "xz_dc": [float(x) for x in f[6].split("/")],
                              "time_ratio": float(f[7])}
            except ValueError:
                pass
        m = re.search(r"(\S+): decode [\d.]+x .*per-round ratios ([\d.]+)-([\d.]+)", line)
        if m:
            per_round[m.group(1)] = (float(m.group(2)), float(m.group(3)))
    for k, v in per_round.items():
        if k in rows:
            rows[k]["per_round"] = v
    if not rows:
        die("no tracelog_bench.py rows in the output")
    return rows


# ---------------------------------------------------------------- formatting

def num(x, fmt="%.2f"):
    return "n/a" if x is None else fmt % x


def ns_cell(r, d):
    if not r or r.get(d + "_ns_per_frame") is None:
        return "n/a"
    return "%.3f [%.3f-%.3f]" % (r[d + "_ns_per_frame"], r[d + "_ns_per_frame_min"],
                                 r[d + "_ns_per_frame_max"])


def table(head, rows):
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def verdict(ok):
    return "n/a" if ok is None else ("**yes**" if ok else "no")


def codec_ratio(bench, corpus, ours, peer, d):
    a, b = bench["rows"].get((corpus, ours)), bench["rows"].get((corpus, peer))
    if not a or not b or a.get(d + "_ns_per_frame") is None or b.get(d + "_ns_per_frame") is None:
        return None, None
    x, y = a[d + "_ns_per_frame"], b[d + "_ns_per_frame"]
    return (y / x if x > 0 else None), bench["targets"].get((corpus, ours, peer, d))


def codec_goals_md(bench, ir):
    rows = []
    for corpus in bench["corpora"]:
        for ours, peer, d, goal in CODEC_GOALS:
            a, b = bench["rows"].get((corpus, ours)), bench["rows"].get((corpus, peer))
            ratio, rng = codec_ratio(bench, corpus, ours, peer, d)
            irc = "n/a"
            if ir is not None:
                i = 0 if d == "encode" else 1
                x, y = ir.get((corpus, ours)), ir.get((corpus, peer))
                irc = "%s · %s" % (num(x[i] if x else None, "%.1f"),
                                   num(y[i] if y else None, "%.1f"))
            rows.append([corpus, "`%s` %s vs `%s`" % (ours, d, peer), ns_cell(a, d),
                         ns_cell(b, d), num(ratio),
                         "%.2f-%.2f" % rng if rng else "n/a",
                         "≥ %gx" % goal if goal else "(none)",
                         verdict(None if ratio is None or goal is None else ratio >= goal),
                         irc])
    return table(["corpus", "row", "ours ns/frame median [min-max]",
                  "peer ns/frame median [min-max]", "peer / ours", "per round", "goal", "met",
                  "Ir/frame ours · peer"], rows)


def codecs_md(bench, ir):
    rows = []
    for corpus in bench["corpora"]:
        for (c, codec), r in bench["rows"].items():
            if c != corpus:
                continue
            star = " \\*" if codec.startswith("lws") and corpus in bench["notes"] else ""
            i = ir.get((corpus, codec)) if ir is not None else None
            if r.get("bytes_per_frame") is None:
                rows.append([corpus, codec + star, "n/a", "n/a", "n/a", "n/a", "n/a"])
                continue
            rows.append([corpus, codec + star, "%.3f" % r["bytes_per_frame"],
                         "%.1f" % r["bytes_per_trace"], ns_cell(r, "encode"),
                         ns_cell(r, "decode"),
                         "n/a" if i is None else "%s / %s" % (num(i[0], "%.1f"),
                                                              num(i[1], "%.1f"))])
    out = table(["corpus", "codec", "bytes/frame", "bytes/trace", "encode ns/frame",
                 "decode ns/frame", "Ir/frame enc / dec"], rows)
    for corpus, note in bench["notes"].items():
        out += "\n\n\\* %s: %s." % (corpus, note)
    return out


def codec_ir_md(ir):
    rows = [[c, k, num(e, "%.1f"), num(d, "%.1f")] for (c, k), (e, d) in ir.items()]
    return table(["corpus", "codec", "encode Ir/frame", "decode Ir/frame"], rows)


def cap_cmp(r):
    for key, unit in (("ratio", "x"), ("added_ns_per_frame", " ns")):
        if key in r:
            v = r[key]
            sign = "%+.2f" if unit == " ns" else "%.2f"
            return (sign % v[1]) + unit, "[%s to %s]" % (sign % v[0], sign % v[2]), v[1]
    return None, None, None


def capture_md(caps, capir):
    depths = sorted(caps)
    names = []
    for d in depths:
        for n in caps[d]:
            if n not in names:
                names.append(n)
    rows = []
    for n in names:
        for d in depths:
            r = caps[d].get(n)
            if r is None:
                continue
            if not r.get("available"):
                rows.append([n, d, "n/a (not in this build)", "", "", "", "", "", ""])
                continue
            f = r["ns_per_frame"]
            med, rng, _ = cap_cmp(r)
            goal = r.get("goal")
            ok = None if med is None else cap_met(r)
            lim = ""
            if goal is not None and med:
                lim = "≤ %gx" % goal if "ratio" in r else "≤ +%g ns a frame" % goal
            irf = capir.get(d, {}).get(n)
            rows.append([n, d, "%.2f [%.2f-%.2f]" % (f[1], f[0], f[2]),
                         r.get("peer", "") or "", med or "", rng or "",
                         lim,
                         verdict(ok) if med else "",
                         "n/a" if not irf else "%.1f%s" % (irf[1] / irf[0],
                                                           " (%s)" % irf[2] if irf[2] else "")])
    return table(["row", "depth", "ns/frame median [min-max]", "peer", "vs peer, median",
                  "per round", "goal", "met", "Ir/frame (vs peer)"], rows)


def cap_met(r):
    _, _, v = cap_cmp(r)
    return None if v is None else v <= r["goal"]


def tracelog_md(tl):
    rows = []
    for name, r in tl.items():
        o, x = r["ours"], r["xz_dc"]
        pr = r.get("per_round")
        rows.append([name, "{:,}".format(r["xz"]), "{:,}".format(r["log"]),
                     "%.3f" % r["size_ratio"], verdict(r["size_ratio"] <= 0.5),
                     "%.4f / %.4f / %.4f" % tuple(o), "%.4f / %.4f / %.4f" % tuple(x),
                     "%.2f" % r["time_ratio"] + (" [%.2f-%.2f]" % pr if pr else ""),
                     verdict(r["time_ratio"] < 1)])
    return table(["corpus", "`xz -9e` bytes", "btlog bytes", "ratio (goal ≤ 0.5)", "met",
                  "text back: btpack s, min / median / max", "`xz -dc` s",
                  "ratio of medians [per round] (goal < 1)", "met"], rows)


def goals_md(bench, caps, tl, capir):
    rows = []
    if bench:
        for ours, peer, d, goal in CODEC_GOALS:
            if goal is None:
                continue
            for corpus in bench["corpora"]:
                ratio, _ = codec_ratio(bench, corpus, ours, peer, d)
                rows.append(["`%s` %s ≥ %gx `%s`, %s" % (ours, d, goal, peer, corpus),
                             num(ratio), verdict(None if ratio is None else ratio >= goal)])
    else:
        rows.append(["codecs", "not run", "n/a"])
    if tl:
        for name, r in tl.items():
            rows.append(["trace log ≤ 0.5x `xz -9e`, %s" % name, "%.3f" % r["size_ratio"],
                         verdict(r["size_ratio"] <= 0.5)])
        for name, r in tl.items():
            rows.append(["text back faster than `xz -dc`, %s" % name, "%.2f" % r["time_ratio"],
                         verdict(r["time_ratio"] < 1)])
    else:
        rows.append(["trace logs against xz", "not run", "n/a"])
    if caps:
        for n in CAPTURE_GOALS:
            for d in sorted(caps):
                r = caps[d].get(n)
                if r is None:
                    continue
                med, _, _ = cap_cmp(r) if r.get("available") else (None, None, None)
                if med is None:
                    rows.append(["%s, depth %d" % (n, d), "n/a", "n/a"])
                    continue
                if "ratio" in r:
                    what = "%s ≤ %gx `%s`, depth %d" % (n, r["goal"], r["peer"], d)
                else:
                    what = "%s ≤ +%g ns a frame over %s, depth %d" % (n, r["goal"], r["peer"], d)
                irf = capir.get(d, {}).get(n)
                rows.append([what, med + (" (by Ir: %s)" % irf[2] if irf and irf[2] else ""),
                             verdict(cap_met(r))])
    else:
        rows.append(["stack capture", "not run", "n/a"])
    return table(["goal", "measured (ratio of medians)", "met"], rows)


# ---------------------------------------------------------------- main

def git_label():
    try:
        c = subprocess.run(["git", "-C", HERE, "describe", "--always", "--dirty"],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                           universal_newlines=True).stdout.strip()
    except OSError:
        c = "unknown"
    with open("/proc/loadavg") as f:
        load = f.read().split()[0]
    return "commit %s, %s UTC, load average %s at the start" % (
        c or "unknown", time.strftime("%Y-%m-%d %H:%M", time.gmtime()), load)


def main():
    args = sys.argv[1:]
    if not args or args[0] in ("-h", "--help"):
        print(__doc__)
        return 0
    o = {"build": "build-rel", "reps": "21", "ir": False, "capture_depths": "",
         "capture_rounds": "21", "tracelog": False, "tracelog_reps": "21", "bench_out": None,
         "ir_out": None, "capture_out": [], "capture_ir": False, "capture_ir_out": [],
         "tracelog_out": None, "save": None, "label": None, "write": None}
    corpora = []
    flags = {"--ir": "ir", "--tracelog": "tracelog", "--capture-ir": "capture_ir"}
    i = 0
    while i < len(args):
        a = args[i]
        if a in flags:
            o[flags[a]] = True
        elif a.startswith("--"):
            key = a[2:].replace("-", "_")
            if key not in o or i + 1 >= len(args):
                die("bad option %s (see --help)" % a)
            i += 1
            if key in ("capture_out", "capture_ir_out"):
                o[key].append(args[i])
            else:
                o[key] = args[i]
        else:
            corpora.append(a)
        i += 1
    if o["save"]:
        os.makedirs(o["save"], exist_ok=True)
    label = o["label"] or git_label()
    bench_bin = os.path.join(o["build"], "bench", "btpack_bench")

    bench = ir = tl = None
    caps = {}
    if o["bench_out"]:
        bench = parse_bench(read(o["bench_out"]))
    elif corpora:
        bench = parse_bench(run([bench_bin, "--json", "--reps", o["reps"]] + corpora,
                                o["save"], "btpack_bench.out"))
    if o["ir_out"]:
        ir = parse_ir(read(o["ir_out"]))
    elif o["ir"]:
        if not corpora:
            die("--ir needs the corpora")
        ir = parse_ir(run([sys.executable, os.path.join(HERE, "ir.py"), bench_bin] + corpora,
                          o["save"], "ir.out"))
    for spec in o["capture_out"]:
        d, _, path = spec.partition("=")
        if not d.isdigit() or not path:
            die("--capture-out wants DEPTH=FILE, not %s" % spec)
        caps[int(d)] = parse_capture(read(path))
    for d in [x for x in o["capture_depths"].split(",") if x]:
        if int(d) in caps:
            continue
        caps[int(d)] = parse_capture(run(
            [os.path.join(o["build"], "bench", "btpack_capture_bench"), "--json", "--depth", d,
             "--rounds", o["capture_rounds"]], o["save"], "capture_%s.out" % d))
    capir = {}
    for spec in o["capture_ir_out"]:
        d, _, path = spec.partition("=")
        if not d.isdigit() or not path:
            die("--capture-ir-out wants DEPTH=FILE, not %s" % spec)
        capir[int(d)] = parse_capture_ir(read(path))
    if o["capture_ir"]:
        for d in [x for x in o["capture_depths"].split(",") if x]:
            if int(d) not in capir:
                capir[int(d)] = parse_capture_ir(run(
                    [sys.executable, os.path.join(HERE, "capture_ir.py"),
                     os.path.join(o["build"], "bench", "btpack_capture_bench"), "--depth", d],
                    o["save"], "capture_ir_%s.out" % d))
    if o["tracelog_out"]:
        tl = parse_tracelog(read(o["tracelog_out"]))
    elif o["tracelog"]:
        if not corpora:
            die("--tracelog needs the corpora")
        tl = parse_tracelog(run([sys.executable, os.path.join(HERE, "tracelog_bench.py"),
                                 os.path.join(o["build"], "tools", "btpack")] + corpora +
                                ["--reps", o["tracelog_reps"]], o["save"], "tracelog.out"))
    if not (bench or ir or caps or tl):
        die("nothing to report: give corpora, --capture-depths, or saved outputs (--help)")

    rounds = ""
    if bench:
        r = next(iter(bench["rows"].values()))
        rounds = " (%s rounds)" % r.get("encode_rounds")
    blocks = {}
    if bench:
        blocks["codec-goals"] = ("Codecs against their peers: %s%s; peer / ours per frame from "
                                 "the medians, per-round range from btpack_bench's targets." %
                                 (label, rounds), codec_goals_md(bench, ir))
        blocks["codecs"] = ("Every codec: %s%s; ns a frame median [min-max]." % (label, rounds),
                            codecs_md(bench, ir))
    if ir is not None:
        blocks["codec-ir"] = ("Instructions a frame (`ir.py`, harness included): %s." % label,
                              codec_ir_md(ir))
    if tl:
        blocks["tracelog"] = ("Trace logs against xz (`tracelog_bench.py`): %s." % label,
                              tracelog_md(tl))
    if caps:
        nrounds = sorted({r.get("rounds") for c in caps.values() for r in c.values()
                          if r.get("rounds")}) or [o["capture_rounds"]]
        blocks["capture"] = ("Stack capture (`btpack_capture_bench --rounds %s`): %s; "
                             "comparisons are medians over the rounds of the per-round ratio "
                             "[min to max]; Ir from `capture_ir.py` where run." %
                             ("/".join(str(x) for x in nrounds), label),
                             capture_md(caps, capir))
    full = bench and caps and tl
    blocks["goals"] = ("Goals: %s." % label, goals_md(bench, caps, tl, capir))

    if o["write"]:
        text = read(o["write"])
        for name, (head, md) in blocks.items():
            if name == "goals" and not full:
                sys.stderr.write("results.py: goals not written: the run lacks codecs, capture "
                                 "or trace logs\n")
                continue
            pat = re.compile(r"(<!-- results:%s -->\n).*?(<!-- /results:%s -->)" %
                             (re.escape(name), re.escape(name)), re.S)
            if not pat.search(text):
                sys.stderr.write("results.py: no <!-- results:%s --> block in %s\n" %
                                 (name, o["write"]))
                continue
            text = pat.sub(lambda m: m.group(1) + textwrap.fill(head, 100) + "\n\n" + md + "\n" +
                           m.group(2), text)
            sys.stderr.write("results.py: wrote %s\n" % name)
        with open(o["write"], "w") as f:
            f.write(text)
    for name, (head, md) in blocks.items():
        print("<!-- results:%s -->\n%s\n\n%s\n<!-- /results:%s -->\n" % (
            name, textwrap.fill(head, 100), md, name))
    return 0


if __name__ == "__main__":
    sys.exit(main())
