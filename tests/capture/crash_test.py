#!/usr/bin/env python3
"""Programs that crash on purpose (tests/capture/crash_prog.c, built with and
without frame pointers) with btpack's crash handler installed: every fatal
cause, in the main thread and in a worker, with a handler installed before
ours; eight threads crashing at once; the stacks that broke unwinders before
(a call through a NULL pointer, a wild or self-pointing saved frame
pointer); every capture method.

Each record (crash record v2, spec/capture.md) is decoded with the
independent CBF model (tests/refmodel.py), each address placed in an image
through the record's own `image` lines, and the program's frames named by
addr2line (binutils). The user's functions must appear in order from the
crashing one to main (or the thread's start routine); the process must die
by the original signal; the handler installed before ours must run after
the record was written.

usage: crash_test.py --addr2line PATH CRASH_PROG_FP CRASH_PROG_NOFP [--measure]
  BTPACK_TEST_WRAPPER (environment): a command to run the programs under,
  for a cross build (e.g. "qemu-aarch64 -L /usr/aarch64-linux-gnu").
  --measure  no checks: a table of user frames kept per cause x build x
             method, handler latency and record bytes (for bench notes).
"""
import argparse
import concurrent.futures
import os
import re
import signal
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import refmodel  # noqa: E402
from pycheck import check, finish  # noqa: E402

CAUSES = {
    # cause: (signal, crashing function, first frame is the crash in it)
    "segv": (signal.SIGSEGV, "do_segv", True),
    "overflow": (signal.SIGSEGV, "do_overflow", True),
    "bus": (signal.SIGBUS, "do_bus", True),
    "ill": (signal.SIGILL, "do_ill", True),
    "fpe": (signal.SIGFPE, "do_fpe", True),
    "abort": (signal.SIGABRT, "do_abort", False),
    "assert": (signal.SIGABRT, "do_assert", False),
    "nullcall": (signal.SIGSEGV, "do_nullcall", False),
    "corruptfp": (signal.SIGSEGV, "do_segv", True),
    "selffp": (signal.SIGSEGV, "do_segv", True),
}
FATAL = ["segv", "overflow", "bus", "ill", "fpe", "abort", "assert"]
METHODS = ["cfi", "fp", "libgcc", "libunwind", "glibc"]

# The crash programs must die by their signal, not by a sanitizer's report
# of it: under ASan, its own handlers stay out (ours chain to it otherwise).
ASAN_OFF = "handle_segv=0:handle_sigbus=0:handle_sigfpe=0:handle_sigill=0:handle_abort=0"


def unescape_path(p):
    if p == "-":
        return None
    out, i = bytearray(), 0
    b = p.encode("utf-8", "surrogateescape")
    while i < len(b):
        if b[i] == 0x5C and i + 1 < len(b):
            n = b[i + 1]
            if n == 0x5C:
                out.append(0x5C)
                i += 2
                continue
            if n == ord("n"):
                out.append(0x0A)
                i += 2
                continue
            if n == ord("x") and i + 3 < len(b):
                out.append(int(b[i + 2:i + 4], 16))
                i += 4
                continue
        out.append(b[i])
        i += 1
    return out.decode("utf-8", "surrogateescape")


def parse_records(text):
    """Every record in text: dicts with header fields, cbf bytes, images,
    whether `end` was seen, and the lines after it."""
    recs, cur = [], None
    for line in text.split("\n"):
        if line.startswith("btpack-crash "):
            parts = line.split(" ")
            cur = {"version": parts[1], "fields": dict(p.split("=", 1) for p in parts[2:] if "=" in p),
                   "cbf": None, "images": [], "maps": 0, "map_lines": [], "end": False,
                   "after": []}
            recs.append(cur)
        elif cur is None:
            continue
        elif cur["end"]:
            if line:
                cur["after"].append(line)
        elif line.startswith("cbf "):
            cur["cbf"] = bytes.fromhex(line[4:])
        elif line.startswith("image "):
            f = line.split(" ", 4)
            cur["images"].append((int(f[1], 16), int(f[2], 16), None if f[3] == "-" else f[3],
                                  unescape_path(f[4])))
        elif line.startswith("map "):
            cur["maps"] += 1
            f = line[4:].split(None, 5)
            lo, hi = (int(x, 16) for x in f[0].split("-"))
            cur["map_lines"].append((lo, hi, f[1], int(f[2], 16), f[5] if len(f) > 5 else ""))
        elif line == "end":
            cur["end"] = True
    return recs


def build_id_on_disk(path, cache={}):
    """The build ID readelf finds in the file (binutils), or None."""
    if path not in cache:
        p = subprocess.run([os.path.join(os.path.dirname(ARGS.addr2line), "readelf"), "-n", path],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        cache[path] = None
        for line in p.stdout.decode(errors="replace").split("\n"):
            if "Build ID:" in line:
                cache[path] = line.split("Build ID:")[1].strip()
                break
    return cache[path]


def check_images(r):
    """The record's image lines against independent sources: build IDs
    against readelf on the files, base and end of text against the
    record's own copy of /proc/self/maps."""
    what = describe(r)
    maps = r.rec["map_lines"]
    for base, end, bid, path in r.rec["images"]:
        name = path if path else "[vdso]"
        mine = [m for m in maps if m[4] == name]
        check(any(m[0] == base and m[3] == 0 for m in mine),
              "%s: %s base 0x%x is no offset-0 mapping" % (what, name, base))
        text = [m[1] for m in mine if "x" in m[2]]
        check(text and max(text) == end, "%s: %s end of text 0x%x, maps say %s" %
              (what, name, end, text and hex(max(text))))
        if path:
            check(bid == build_id_on_disk(path), "%s: %s build ID %s, readelf says %s" %
                  (what, path, bid, build_id_on_disk(path)))


NOT_BUILT_IN = 77  # crash_prog's exit status when the method is not built in


def elf_class(path):
    with open(path, "rb") as f:
        return f.read(5)[4]


def elf_machine(path):
    with open(path, "rb") as f:
        return struct.unpack_from("<H", f.read(20), 18)[0]


def first_load_offset(path, cache={}):
    """p_vaddr - p_offset of the first PT_LOAD (0 for PIE): a file virtual
    address is run-time address - base + this."""
    if path not in cache:
        with open(path, "rb") as f:
            h = f.read(64)
            assert h[:4] == b"\x7fELF" and h[4] in (1, 2), path
            wide = h[4] == 2
            phoff, = struct.unpack_from("<Q" if wide else "<I", h, 32 if wide else 28)
            phentsize, phnum = struct.unpack_from("<HH", h, 54 if wide else 42)
            f.seek(phoff)
            ph = f.read(phentsize * phnum)
        cache[path] = 0
        for i in range(phnum):
            if wide:
                p_type, _, p_offset, p_vaddr = struct.unpack_from("<IIQQ", ph, i * phentsize)
            else:
                p_type, p_offset, p_vaddr = struct.unpack_from("<III", ph, i * phentsize)
            if p_type == 1:
                cache[path] = (p_vaddr - p_offset) & ~0xFFF
                break
    return cache[path]


class Result:
    pass


def run_case(args, prog, cause, where, method=None, extra=(), timeout=30):
    r = Result()
    r.cause, r.where, r.method, r.extra = cause, where, method, list(extra)
    r.prog = prog
    fd, out = tempfile.mkstemp(prefix="btpack-crash-", suffix=".txt")
    os.close(fd)
    cmd = [prog, cause, where, out] + (["--method", method] if method else []) + list(extra)
    # A cross build's programs run under an emulator (e.g. "qemu-aarch64 -L
    # /usr/aarch64-linux-gnu"); empty for a native build.
    cmd = os.environ.get("BTPACK_TEST_WRAPPER", "").split() + cmd
    env = dict(os.environ)
    env["ASAN_OPTIONS"] = (env.get("ASAN_OPTIONS", "") + ":" + ASAN_OFF).lstrip(":")
    env.pop("BTPACK_STACKTRACE_METHOD", None)
    try:
        p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=timeout)
        r.rc, r.stderr = p.returncode, p.stderr.decode(errors="replace")
    except subprocess.TimeoutExpired:
        r.rc, r.stderr = "timeout", ""
    with open(out, "rb") as f:
        r.raw = f.read()
    os.unlink(out)
    r.text = r.raw.decode("utf-8", "surrogateescape")
    r.records = parse_records(r.text)
    r.rec = r.records[0] if r.records else None
    r.frames, r.names = [], []
    if r.rec and r.rec["cbf"]:
        d = refmodel.cbf_decode(r.rec["cbf"])
        r.frames = d.frames(limit=100000) or [] if d.error is None else []
        r.names = symbolize(args, r, prog)
    return r


def symbolize(args, r, prog):
    """Per frame: the function's name if the frame is in the program, ""
    for another image, "?" outside every image, None for an omit."""
    exe = os.path.realpath(prog)
    looks, slots = [], []
    names = []
    for kind, value in r.frames:
        if kind == "omit":
            names.append(None)
            continue
        a = value if kind == "pc" else value - 1
        img = next((i for i in r.rec["images"] if i[0] <= a < i[1]), None)
        if img is None:
            names.append("?")
        elif img[3] and os.path.realpath(img[3]) == exe:
            names.append("")
            slots.append(len(names) - 1)
            looks.append(a - img[0] + first_load_offset(exe))
        else:
            names.append("")
    if looks:
        p = subprocess.run([args.addr2line, "-f", "-e", exe] + ["0x%x" % v for v in looks],
                           stdout=subprocess.PIPE, check=True)
        lines = p.stdout.decode().split("\n")
        for k, slot in enumerate(slots):
            names[slot] = "user:" + lines[2 * k]
    return names


def user_chain(r):
    """The user's functions in the record, innermost first: runs of the
    recursing function collapsed, _start left out."""
    chain = []
    for n in r.names:
        if n and n.startswith("user:"):
            # an optimising build names parts and clones of a function
            # (do_abort.cold, level2.isra.0): they are that function
            fn = re.sub(r"(\.(cold|part|isra|constprop)(\.\d+)?)+$", "", n[5:])
            if fn == "_start" or (chain and chain[-1] == fn == "do_overflow"):
                continue
            chain.append(fn)
    return chain


def is_subsequence(got, want, ends=False):
    """got is want with frames left out (keeping the first and last of
    want when ends)."""
    it = iter(want)
    if not all(any(g == w for w in it) for g in got):
        return False
    return not ends or (got[:1] == want[:1] and got[-1:] == want[-1:])


def expected_chain(cause, where):
    return [CAUSES[cause][1], "level3", "level2", "level1",
            "main" if where == "main" else "thread_start"]


def kept(r):
    """How many of the expected user frames the record has, in order (frames
    left out between them do not stop the count)."""
    want = expected_chain(r.cause, r.where)
    k = n = 0
    for fn in user_chain(r):
        if fn in want[k:]:
            k = want.index(fn, k) + 1
            n += 1
    return n


def describe(r):
    return "%s %s %s %s %s" % (os.path.basename(r.prog), r.cause, r.where, r.method or "default",
                               " ".join(r.extra))


def check_record(r, whole=True):
    """The checks every record gets; whole: the user chain must be complete."""
    what = describe(r)
    sig = CAUSES[r.cause][0]
    check(r.rc == -sig, "%s: died by %r, not signal %d (%s)" % (what, r.rc, sig, r.stderr[-300:]))
    check(len(r.records) == 1, "%s: %d records" % (what, len(r.records)))
    if not r.rec:
        return
    check(r.rec["version"] == "v2" and r.rec["fields"].get("signal") == str(int(sig)),
          "%s: header %s" % (what, r.rec["fields"]))
    check(r.rec["end"], "%s: no end line" % what)
    check(len(r.frames) >= 1, "%s: no frames" % what)
    check(len(r.rec["images"]) >= 3, "%s: %d image lines" % (what, len(r.rec["images"])))
    # (check_images compares each with its file; libc has one on any Debian)
    check(any(i[2] and len(i[2]) >= 16 and "libc.so" in (i[3] or "") for i in r.rec["images"]),
          "%s: no build ID for libc" % what)
    if not whole or not r.frames:
        return
    chain = user_chain(r)
    want = expected_chain(r.cause, r.where)
    check(chain == want, "%s: user frames %s, expected %s" % (what, chain, want))
    # aarch64 has no division trap: its fpe is raise(SIGFPE), from libc.
    if CAUSES[r.cause][2] and not (r.cause == "fpe" and elf_machine(r.prog) == 183):
        check(r.frames[0][0] == "pc" and r.names[0] == "user:" + want[0],
              "%s: first frame %s %s" % (what, r.frames[0], r.names[0]))


def check_prev(r, want_lines):
    what = describe(r)
    if not r.rec:
        return
    prev = [a for a in r.rec["after"] if a.startswith("prev-handler ")]
    check(len(prev) == want_lines,
          "%s: %d lines of the previous handler after the record, expected %d" %
          (what, len(prev), want_lines))


def test(args, progs):
    jobs = []
    # Every fatal cause x build x thread, with a previous handler (SA_SIGINFO
    # or plain, alternately) that must run after ours.
    k = 0
    for build, prog in progs.items():
        for cause in FATAL:
            for where in ("main", "thread"):
                prev = "sa" if k % 2 == 0 else "plain"
                k += 1
                jobs.append(("whole", prog, cause, where, None, ["--prev", prev]))
    for build, prog in progs.items():
        # Call through a NULL function pointer: the caller from the stack top.
        jobs.append(("whole", prog, "nullcall", "main", None, []))
        jobs.append(("whole", prog, "nullcall", "thread", None, []))
        # Eight threads at once: one record, no deadlock.
        jobs.append(("many", prog, "segv", "many", None, ["--prev", "sa"]))
        # Chaining options.
        jobs.append(("nochain", prog, "segv", "main", None, ["--prev", "sa", "--no-chain"]))
        jobs.append(("twice", prog, "abort", "main", None, ["--prev", "sa", "--install-twice"]))
        jobs.append(("whole", prog, "segv", "main", None, ["--prev", "ign"]))
        jobs.append(("whole", prog, "abort", "thread", None, ["--prev", "ign", "--no-map-lines"]))
        # Images loaded and unloaded after the handler was installed.
        jobs.append(("dlopen", prog, "segv", "thread", None, ["--dlopen", "libresolv.so.2"]))
        jobs.append(("dlclose", prog, "segv", "main", None, ["--dlclose", "libresolv.so.2"]))
        # Every method on a crash in user code and one in libc.
        for method in METHODS:
            for cause in ("segv", "abort"):
                jobs.append(("method", prog, cause, "main", method, []))
    # Frame-pointer chains that broke the walk before, every method.
    for method in METHODS:
        for cause in ("corruptfp", "selffp"):
            jobs.append(("broken", progs["fp"], cause, "main", method, []))

    def go(j):
        kind, prog, cause, where, method, extra = j
        return kind, run_case(args, prog, cause, where, method, extra)

    workers = max(2, min(8, os.cpu_count() or 2))
    with concurrent.futures.ThreadPoolExecutor(workers) as ex:
        results = list(ex.map(go, jobs))
    skipped = set(r.method for _, r in results if r.rc == NOT_BUILT_IN)
    for m in sorted(skipped):
        print("method %s is not built in: its cases are skipped" % m)
    results = [(kind, r) for kind, r in results if r.rc != NOT_BUILT_IN]
    for kind, r in results:
        if kind == "whole":
            check_record(r)
            if r.rec and r.rec["maps"]:
                check_images(r)
            check(r.rec is None or "fallback" not in r.rec["fields"],
                  "%s: fell back: %s" % (describe(r), r.rec and r.rec["fields"]))
            if "--prev" in r.extra and r.extra[r.extra.index("--prev") + 1] != "ign":
                check_prev(r, 1)
            if "--no-map-lines" in r.extra and r.rec:
                check(r.rec["maps"] == 0, "%s: map lines" % describe(r))
            elif r.rec:
                check(r.rec["maps"] > 0, "%s: no map lines" % describe(r))
            if r.cause == "nullcall" and r.frames:
                check(r.frames[0] == ("pc", 0), "%s: first frame %s" % (describe(r), r.frames[0]))
        elif kind == "many":
            check_record(r, whole=False)
            check(r.rc != "timeout", "%s: deadlock" % describe(r))
            check(r.text.count("btpack-crash ") == 1 and r.text.count("\nend\n") == 1,
                  "%s: %d headers" % (describe(r), r.text.count("btpack-crash ")))
            if r.rec and r.frames:
                chain = user_chain(r)
                check(chain == expected_chain("segv", "thread"),
                      "%s: user frames %s" % (describe(r), chain))
        elif kind in ("dlopen", "dlclose"):
            check_record(r)
            if r.rec:
                check_images(r)
                names = [os.path.basename(i[3] or "") for i in r.rec["images"]]
                if kind == "dlopen":
                    check(names[-1:] == ["libresolv.so.2"],
                          "%s: the image loaded last is not the last line: %s" % (describe(r), names))
                else:
                    check("libresolv.so.2" not in names,
                          "%s: an unloaded image is listed: %s" % (describe(r), names))
        elif kind == "nochain":
            check_record(r)
            check_prev(r, 0)
        elif kind == "twice":
            check_record(r)
            check_prev(r, 1)
        elif kind == "method":
            # fp cannot pass libc (built without frame pointers) nor code of
            # ours built without them, and loses the caller of a leaf
            # without a frame; every other method must see the whole chain.
            check_record(r, whole=r.method != "fp")
            if r.method == "fp" and r.cause == "segv" and r.prog == progs["fp"]:
                check(is_subsequence(user_chain(r), expected_chain("segv", "main"), ends=True),
                      "%s: user frames %s" % (describe(r), user_chain(r)))
            check(r.rec is None or r.rec["fields"].get("method") == r.method,
                  "%s: header %s" % (describe(r), r.rec and r.rec["fields"]))
        elif kind == "broken":
            # The walk ends where the chain breaks: the record holds the
            # crash and the frames up to there, never a fault or a loop.
            check_record(r, whole=False)
            fb = r.rec["fields"].get("fallback") if r.rec else None
            check(fb in (None, "cfi"), "%s: fallback %s" % (describe(r), fb))
            if r.method == "glibc" and r.cause == "selffp" and elf_class(r.prog) == 1:
                # glibc's i386 backtrace() has no progress check: it repeats a
                # frame whose saved frame pointer points at itself until its
                # array is full (spec/capture.md). Known, not ours to fix.
                print("note: %s: %d frames (glibc on i386)" % (describe(r), len(r.frames)))
                continue
            chain = user_chain(r)
            want = ["do_segv", "level3", "level2", "level1"]
            check((chain[:4] == want or (r.method == "fp" and is_subsequence(chain, want)))
                  and len(r.frames) < 40,
                  "%s: %d frames, user %s" % (describe(r), len(r.frames), chain))
    print("%d crashes" % len(results))
    finish()


def measure(args, progs):
    jobs = []
    for build, prog in progs.items():
        for cause in FATAL + ["nullcall"]:
            for where in ("main", "thread"):
                for method in METHODS:
                    jobs.append((build, prog, cause, where, method, ["--prev", "sa"]))
    for build, prog in progs.items():
        for cause in ("corruptfp", "selffp"):
            for method in METHODS:
                jobs.append((build, prog, cause, "main", method, ["--prev", "sa"]))

    def go(j):
        build, prog, cause, where, method, extra = j
        return build, run_case(args, prog, cause, where, method, extra)

    with concurrent.futures.ThreadPoolExecutor(2) as ex:
        results = list(ex.map(go, jobs))
    table = {}
    for build, r in results:
        fb = r.rec["fields"].get("fallback") if r.rec else None
        cell = "%d%s" % (kept(r) if r.rec else 0, "*" if fb else "")
        if r.rc == NOT_BUILT_IN:
            cell = "-"
        table[(build, r.cause, r.where, r.method)] = cell
    print("user frames kept of 5 (do_<cause>, level3, level2, level1, main/thread_start);"
          " * = the method failed or faulted and a fallback wrote the record")
    print("%-6s %-10s %-7s " % ("build", "cause", "thread") + " ".join("%9s" % m for m in METHODS))
    for build in progs:
        for cause in FATAL + ["nullcall", "corruptfp", "selffp"]:
            for where in ("main", "thread"):
                if (build, cause, where, METHODS[0]) not in table:
                    continue
                print("%-6s %-10s %-7s " % (build, cause, where) +
                      " ".join("%9s" % table[(build, cause, where, m)] for m in METHODS))
    # Latency (signal to the previous handler, which runs after the record)
    # and record bytes: a segv in main of the program without frame
    # pointers, 15 runs each, per method, with and without map lines.
    print("latency: from just before the crash to the start of the handler installed before"
          " ours (so: delivery, the whole record, its write, one more delivery)")
    for method in METHODS:
        for flags, label in (([], "map lines"), (["--no-map-lines"], "image lines only")):
            lat, size = [], []
            for _ in range(15):
                r = run_case(args, progs["nofp"], "segv", "main", method, ["--prev", "sa"] + flags)
                if r.rc == NOT_BUILT_IN or not r.rec:
                    break
                prev = [a for a in r.rec["after"] if a.startswith("prev-handler")]
                lat.append(int(prev[0].split("latency_ns=")[1]))
                end = r.raw.find(b"\nend\n")
                size.append(end + 5 if end >= 0 else len(r.raw))
            if not lat:
                continue
            lat.sort()
            print("%-9s %-16s latency median %5.0f us (min %5.0f), record %5d bytes, %d image lines"
                  % (method, label, lat[len(lat) // 2] / 1000, lat[0] / 1000,
                     sorted(size)[len(size) // 2], len(r.rec["images"])))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--addr2line", required=True)
    ap.add_argument("--measure", action="store_true")
    ap.add_argument("prog_fp")
    ap.add_argument("prog_nofp")
    args = ap.parse_args()
    global ARGS
    ARGS = args
    progs = {"fp": args.prog_fp, "nofp": args.prog_nofp}
    if args.measure:
        measure(args, progs)
    else:
        test(args, progs)


if __name__ == "__main__":
    main()
