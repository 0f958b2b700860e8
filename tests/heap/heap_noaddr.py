#!/usr/bin/env python3
"""btpack heap record --no-addresses against a recording with addresses.

usage: heap_noaddr.py BTPACK NOADDR_PROG LOG_PTRS PRELOAD HEAP_PROG

Records tests/heap/noaddr_prog.c (single-threaded, the same history every
run; it prints every pointer it got) both ways and checks: the reports
agree on counts, peak, leaks and stacks; the log without addresses holds
none of the program's pointers (read back record by record with
log_ptrs), its allocations are unique among the live ones and its frees
name them; it carries the `addresses` item; heap map refuses it; the
environment variable does what the option does; heap_prog's threads,
signal handler, fork and abort give the same counts both ways."""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from pycheck import check, finish  # noqa: E402

btpack, prog, log_ptrs, preload, heap_prog = sys.argv[1:6]
tmp = tempfile.mkdtemp(prefix="btpack-noaddr-")


def run(args, **kw):
    return subprocess.run(args, capture_output=True, text=True, timeout=60, **kw)


def record(name, *opts):
    path = os.path.join(tmp, name + ".btlog")
    r = run([btpack, "heap", "record", "-o", path] + list(opts) + ["--", prog])
    check(r.returncode == 0, "%s: record exits 0 (%s)" % (name, r.stderr.strip()))
    return path, [int(x, 16) for x in r.stdout.split()]


def report(path):
    r = run([btpack, "heap", "report", "--json", "--top", "100", path])
    check(r.returncode == 0, "report %s: %s" % (path, r.stderr.strip()))
    return json.loads(r.stdout)


def records(path):
    r = run([log_ptrs, path])
    check(r.returncode == 0, "log_ptrs %s" % path)
    return [line.split() for line in r.stdout.splitlines()]


def summary(rep):
    """What must not depend on the addresses."""
    keys = ["events", "allocations", "frees", "bytes_allocated", "temporary", "peak",
            "leaked", "unmatched_frees", "frees_missing", "failed_allocations", "stacks"]
    out = {k: rep.get(k) for k in keys}
    out["peak"] = {k: v for k, v in (rep.get("peak") or {}).items() if k != "seconds"}
    for lst in ("leaks", "by_allocations", "by_bytes", "by_temporary", "by_peak"):
        out[lst] = [(s.get("allocations"), s.get("bytes"), s.get("leaked_bytes"),
                     s.get("peak_bytes"),
                     [loc.get("function") for f in s.get("frames", [])
                      for loc in f.get("symbols", [])])
                    for s in rep.get(lst, [])]
    return out


real_log, real_ptrs = record("real")
syn_log, syn_ptrs = record("synthetic", "--no-addresses")
check(len(real_ptrs) == 412 and len(syn_ptrs) == 412,
      "the program printed its 412 pointers (%d, %d)" % (len(real_ptrs), len(syn_ptrs)))

rr, rs = report(real_log), report(syn_log)
check(rr.get("addresses") == "real", "report says real addresses: %s" % rr.get("addresses"))
check(rs.get("addresses") == "synthetic",
      "report says synthetic addresses: %s" % rs.get("addresses"))
sr, ss = summary(rr), summary(rs)
for k in sr:
    check(sr[k] == ss[k], "report %s agrees: %s vs %s" % (k, sr[k], ss[k]))
check(rs.get("allocations") == 412 and rs.get("frees") == 410 and
      rs.get("leaked", {}).get("bytes") == 73000 and rs.get("unmatched_frees") == 0,
      "the program's own counts: %s %s %s" % (rs.get("allocations"), rs.get("frees"),
                                                rs.get("leaked")))
check(any("leak_two" in str(s) for s in ss["leaks"]), "leaks symbolized to leak_two")
text = run([btpack, "heap", "report", syn_log]).stdout
check("--no-addresses" in text and "synthetic" in text, "text report says synthetic")
check("synthetic" not in run([btpack, "heap", "report", real_log]).stdout,
      "the text report of a real log says nothing of it")

# The records: real pointers in one log, none of them in the other.
rec_r, rec_s = records(real_log), records(syn_log)
ptrs_r = {int(x[1], 16) for x in rec_r if x[0] in "af"}
ptrs_s = {int(x[1], 16) for x in rec_s if x[0] in "af"}
check(set(real_ptrs) <= ptrs_r, "the log with addresses holds the program's pointers")
check(not (set(syn_ptrs) & ptrs_s),
      "the log without addresses holds none of its run's pointers (%d found)"
      % len(set(syn_ptrs) & ptrs_s))
check(not (set(syn_ptrs) & {int(t, 16) for x in rec_s for t in x[1:2] if x[0] in "af"}),
      "no real pointer as any record's pointer")
# Synthetic allocations never collide with a live one; every free names one.
live, ok_unique, ok_frees, n_alloc = set(), True, True, 0
for x in rec_s:
    if x[0] == "a":
        p = int(x[1], 16)
        n_alloc += 1
        ok_unique &= p not in live
        live.add(p)
    elif x[0] == "f":
        p = int(x[1], 16)
        ok_frees &= p in live
        live.discard(p)
check(n_alloc == 412 and len([x for x in rec_r if x[0] == "a"]) == 412,
      "412 allocations in both logs (%d)" % n_alloc)
check(ok_unique, "synthetic addresses unique among live allocations")
check(ok_frees, "every free is of a live synthetic address")
keys_s = [x[1] for x in rec_s if x[0] == "m"]
keys_r = [x[1] for x in rec_r if x[0] == "m"]
check("addresses" in keys_s and keys_s.index("addresses") < keys_s.index("images"),
      "the `addresses` item, in the first metadata: %s" % keys_s)
check("addresses" not in keys_r, "no `addresses` item with real addresses")
check(os.path.getsize(syn_log) < os.path.getsize(real_log),
      "smaller without addresses (%d vs %d bytes)" % (os.path.getsize(syn_log),
                                                       os.path.getsize(real_log)))

# heap map refuses, naming the option; it draws the other.
html = os.path.join(tmp, "m.html")
r = run([btpack, "heap", "map", "-o", html, syn_log])
check(r.returncode != 0 and "--no-addresses" in r.stderr,
      "heap map refuses a log without addresses: %d %s" % (r.returncode, r.stderr.strip()))
r = run([btpack, "heap", "map", "-o", html, real_log])
check(r.returncode == 0, "heap map draws the log with addresses: %s" % r.stderr.strip())
# Other readers say so.
r = run([btpack, "convert", "--to", "json", syn_log])
check(r.returncode == 0 and "--no-addresses" in r.stderr, "convert notes synthetic pointers")
r = run([btpack, "convert", "--to", "json", real_log])
check("--no-addresses" not in r.stderr, "convert says nothing of a log with addresses")
# A log converted into a log stays one without addresses; one with them gains no item.
conv_s, conv_r = os.path.join(tmp, "conv-s.btlog"), os.path.join(tmp, "conv-r.btlog")
r = run([btpack, "convert", "--to", "log", "-o", conv_s, syn_log])
check(r.returncode == 0, "convert --to log of the log without addresses: %s" % r.stderr.strip())
check("addresses" in [x[1] for x in records(conv_s) if x[0] == "m"],
      "convert --to log carries the `addresses` item")
r = run([btpack, "heap", "map", "-o", html, conv_s])
check(r.returncode != 0 and "--no-addresses" in r.stderr, "heap map refuses the converted log")
r = run([btpack, "convert", "--to", "log", "-o", conv_r, real_log])
check(r.returncode == 0 and "addresses" not in [x[1] for x in records(conv_r) if x[0] == "m"],
      "convert --to log adds no `addresses` item to a log with addresses")

# The library preloaded by hand, with the environment variable.
env_log = os.path.join(tmp, "env.btlog")
env = dict(os.environ, LD_PRELOAD=preload, BTPACK_HEAP_OUTPUT=env_log,
           BTPACK_HEAP_NO_ADDRESSES="1")
r = run([prog], env=env)
env_ptrs = [int(x, 16) for x in r.stdout.split()]
rec_e = records(env_log)
check("addresses" in [x[1] for x in rec_e if x[0] == "m"], "BTPACK_HEAP_NO_ADDRESSES=1: item")
check(len(env_ptrs) == 412 and not (set(env_ptrs) & {int(x[1], 16) for x in rec_e
                                                     if x[0] in "af"}),
      "BTPACK_HEAP_NO_ADDRESSES=1: none of the pointers")
check(summary(report(env_log)) == ss, "BTPACK_HEAP_NO_ADDRESSES=1: the same report")
# Threads (their interleaving differs run to run: counts only), a signal
# handler, fork, and a crash that completes the log.
for mode, status in (("basic", 0), ("crash", 128 + 6)):
    counts = []
    for opts in ([], ["--no-addresses"]):
        path = os.path.join(tmp, "prog-%s-%d.btlog" % (mode, len(opts)))
        r = run([btpack, "heap", "record", "-o", path] + opts + ["--", heap_prog, mode])
        check(r.returncode == status, "heap_prog %s %s: status %d" % (mode, opts, r.returncode))
        rep = report(path)
        counts.append((rep.get("allocations"), rep.get("frees"), rep.get("leaked"),
                       rep.get("unmatched_frees"), rep.get("frees_missing"), rep.get("complete")))
    check(counts[0] == counts[1] and counts[0][0] > 80000,
          "heap_prog %s: the same counts both ways: %s" % (mode, counts))
finish()
