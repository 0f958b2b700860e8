#!/usr/bin/env python3
"""A trace log writer killed at random moments.

`btpack convert --from trace --to log --flush-interval S` reads records
from a pipe fed in bursts and pauses, writing the log to a file; it is
killed with SIGKILL at a random moment. Every time, the log must read back
as an exact prefix of the records fed, and every record fed more than S
(plus a margin for scheduling on a loaded machine) before the kill must be
in it: the loss is bounded in time, not only in bytes.

usage: log_kill.py BTPACK
Prints the largest lag seen (how long before the kill the first missing
record was fed).
"""
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from pycheck import check, finish  # noqa: E402

BTPACK = sys.argv[1]
INTERVAL = 0.25  # --flush-interval
MARGIN = 0.35    # scheduling slack allowed on top of it
RUNS = 6


def record(i):
    # allocation records with stacks that repeat and vary, as a real tracer's
    frames = " ".join("0x%x" % (0x401000 + 16 * ((i * 7 + k) % 97)) for k in range(3 + i % 9))
    return "m %d 0x%x %s\n" % (16 + i % 64, 0x100000 + 32 * i, frames)


def feed(pipe, fed, stop, rng):
    """Write records in bursts and pauses; fed gets (time, records written)."""
    i = 0
    try:
        pipe.write(b"# stkshim v1 word=64\n")
        while not stop.is_set():
            n = rng.randint(1, 300)
            pipe.write("".join(record(i + k) for k in range(n)).encode())
            pipe.flush()
            i += n
            fed.append((time.monotonic(), i))
            time.sleep(rng.choice([0, 0.002, 0.01, 0.03, 0.05]) if rng.random() < 0.95
                       else rng.uniform(0.3, 0.6))
    except (BrokenPipeError, ValueError):
        pass


def one_run(tmp, seed):
    rng = random.Random(seed)
    path = os.path.join(tmp, "kill-%d.btlog" % seed)
    with open(path, "wb") as out:
        p = subprocess.Popen([BTPACK, "convert", "--from", "trace", "--to", "log",
                              "--flush-interval", str(INTERVAL)],
                             stdin=subprocess.PIPE, stdout=out, stderr=subprocess.DEVNULL)
    fed, stop = [], threading.Event()
    t = threading.Thread(target=feed, args=(p.stdin, fed, stop, rng))
    t.start()
    time.sleep(rng.uniform(0.4, 1.4))
    p.send_signal(signal.SIGKILL)
    t_kill = time.monotonic()
    p.wait()
    stop.set()
    t.join()
    try:
        p.stdin.close()
    except BrokenPipeError:
        pass
    r = subprocess.run([BTPACK, "convert", "--from", "log", "--to", "trace", path],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    lines = [l for l in r.stdout.decode().splitlines(True) if not l.startswith("#")]
    n = len(lines)
    exact = lines == [record(i) for i in range(n)]
    # every record fed before t_kill - INTERVAL - MARGIN must be there
    due = max([count for when, count in fed if when <= t_kill - INTERVAL - MARGIN] or [0])
    total = fed[-1][1] if fed else 0
    # how far behind the log was: when the first missing record was fed
    missing_at = next((when for when, count in fed if count > n), t_kill)
    lag = t_kill - missing_at
    check(p.returncode == -signal.SIGKILL, "run %d: the writer ran until killed (status %s)" %
          (seed, p.returncode))
    check(exact, "run %d: the log reads back as an exact prefix (%d records): %s" %
          (seed, n, r.stderr.decode()[:300]))
    check(n >= due, "run %d: %d records in the log, %d were fed %.2f s before the kill "
          "(%d fed in all, lag %.3f s)" % (seed, n, due, INTERVAL + MARGIN, total, lag))
    return lag, n, total


with tempfile.TemporaryDirectory() as tmp:
    lags = []
    for seed in range(RUNS):
        lag, n, total = one_run(tmp, seed)
        lags.append(lag)
        print("run %d: %d of %d records fed survived; the log was %.3f s behind" %
              (seed, n, total, lag))
    print("largest lag %.3f s (--flush-interval %.2f s)" % (max(lags), INTERVAL))
finish()
