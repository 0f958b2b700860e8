#!/usr/bin/env python3
"""btpack heapmap on a small program built here with -g: its allocations
become ~m# records inside log text, and heapmap must name each record's
functions and call-site lines, the total, and the stacks largest first.

usage: lws_heapmap.py BTPACK ADDR2LINE SOURCE CC [CC ARGS...]
"""
import os
import re
import subprocess
import sys
import tempfile

from pycheck import check, finish

BTPACK, A2L, SRC, CC = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]


site = {}
for n, l in enumerate(open(SRC), 1):
    m = re.search(r"/\* (SITE_\w+) \*/", l)
    if m:
        site[m.group(1)] = n

tmpdir = tempfile.TemporaryDirectory(prefix="btpack-heapmap-")
tmp = tmpdir.name
exe = os.path.join(tmp, "prog")
subprocess.run(CC + ["-g", "-O0", "-fno-pie", "-no-pie", "-o", exe, SRC], check=True)
js = subprocess.run([exe], capture_output=True, check=True).stdout.decode()
lws = subprocess.run([BTPACK, "convert", "--from", "json", "--to", "lws"], input=js.encode(),
                     capture_output=True, check=True).stdout.decode().split("\n")[:-1]
check(len(lws) == 5, "5 records, got %d" % len(lws))
# A device log: timestamps, other lines, a record mid-line.
log = ["boot: starting"]
for i, m in enumerate(lws):
    log.append("[%d.%03d] heap: alloc %s live" % (i, i * 7, m))
    log.append("[%d.500] unrelated line" % i)
logpath = os.path.join(tmp, "device.log")
open(logpath, "w").write("\n".join(log) + "\n")

p = subprocess.run([BTPACK, "heapmap", "--elf", exe, "--addr2line", A2L, logpath],
                   capture_output=True)
out = p.stdout.decode()
check(p.returncode == 0, "heapmap exit %d: %s" % (p.returncode, p.stderr.decode()))
src = os.path.basename(SRC)


def frame_re(fn, s):
    return r"#\d+\s+0x[0-9a-f]+ %s \S*%s:%d( \(discriminator \d+\))?" % (fn, re.escape(src), site[s])


head, _, summary = out.partition("\nby allocating stack")
records = re.split(r"(?m)^(?=line \d+: )", head.split("\ntotal: ")[0])[1:]
check(len(records) == 5, "5 records printed: %r" % out)
want = [(100, "SITE_MAIN_LOOP", "alloc_small", "SITE_SMALL")] * 3 + \
       [(5000, "SITE_MAIN_BIG", "alloc_big", "SITE_BIG"), (7, "SITE_MAIN_ONCE", "alloc_small", "SITE_SMALL")]
for i, (r, (size, msite, fn, fsite)) in enumerate(zip(records, want)):
    lines = r.strip().split("\n")
    check(lines[0] == "line %d: %d bytes" % (2 + 2 * i, size), "record %d header %r" % (i, lines[0]))
    check(len(lines) == 4 and re.search(frame_re("record", "SITE_RECORD"), lines[1])
          and re.search(frame_re(fn, fsite), lines[2]) and re.search(frame_re("main", msite), lines[3]),
          "record %d frames:\n%s" % (i, r))
check("total: 5307 bytes in 5 allocations" in head, "total: %r" % head[-80:])

groups = re.split(r"(?m)^(?=\d+ bytes in )", summary)[1:]
check(len(groups) == 3 and "(3 stacks)" in summary, "3 stacks: %r" % summary)
gwant = [(5000, 1, "SITE_MAIN_BIG"), (300, 3, "SITE_MAIN_LOOP"), (7, 1, "SITE_MAIN_ONCE")]
for g, (b, c, msite) in zip(groups, gwant):
    check(g.startswith("%d bytes in %d allocation" % (b, c)) and re.search(frame_re("main", msite), g),
          "group %d/%d:\n%s" % (b, c, g))

# An addr2line that cannot run: the map is still printed, functions named
# from the symbol table without lines, and the exit status says it failed.
p = subprocess.run([BTPACK, "heapmap", "--elf", exe, "--addr2line", "/nonexistent/addr2line", logpath],
                   capture_output=True)
out = p.stdout.decode()
check(p.returncode == 1 and "total: 5307 bytes in 5 allocations" in out
      and re.search(r"#\d+\s+0x[0-9a-f]+ alloc_big\b", out) and src not in out
      and "addr2line back end failed on 1 file" in p.stderr.decode(),
      "unrunnable addr2line: %d %r %s" % (p.returncode, out[:300], p.stderr.decode()))

# A bad record is reported with its line; --keep-going still maps the rest.
open(logpath, "a").write("oops ~m#IF0BmUQugNCkgCnkhdAYpQa6wAAW\n")
p = subprocess.run([BTPACK, "heapmap", "--elf", exe, "--addr2line", A2L, logpath], capture_output=True)
check(p.returncode == 1 and ":12: column 6: bad ~m# record" in p.stderr.decode(),
      "bad record: %s" % p.stderr.decode())
p = subprocess.run([BTPACK, "heapmap", "--elf", exe, "--addr2line", A2L, "--keep-going", logpath],
                   capture_output=True)
check(p.returncode == 1 and "total: 5307 bytes in 5 allocations" in p.stdout.decode(), "keep going")

finish()
