"""btpack symbolize on a C++ program of ours built with -g (sym_prog_cxx):
every frame of ours, with every back end, gets its demangled name
(namespaces, templates, const member, constructor, anonymous namespace),
the functions inlined there, and the line of its marker comment.

One known difference is held to each back end's own standard: a function
of internal linkage inlined somewhere (note<double> here) has no linkage
name in DWARF. libdw gives its DWARF name, as llvm-symbolizer does;
binutils' addr2line names it after the function its code sits in (its
symbol), which is wrong, so only its file and line are checked there.

usage: symbolize_cxx.py BTPACK SYM_PROG_CXX SOURCE"""
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from pycheck import check, finish  # noqa: E402

BTPACK, PROG, SRC = sys.argv[1:4]
PROG = os.path.abspath(PROG)

# marker key -> the demangled name of the function that line is in
NAMES = {
    "note": "note<double>",
    "record": "void shapes::detail::record<double>(int, double)",
    "fill": "shapes::detail::Grid<double, 4>::fill(int, double)",
    "draw": "shapes::Canvas::draw(char const*) const",
    "ctor": "shapes::Canvas::Canvas(int)",
    "start": "(anonymous namespace)::start(int)",
    "main": "main",
}
# the frames of ours, innermost first; each a list of locations, innermost first
STACK = [["note", "record", "fill"], ["draw"], ["ctor"], ["start"], ["main"]]


def run(args):
    p = subprocess.run([BTPACK] + args, capture_output=True)
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")


def backends():
    rc, out, _ = run(["symbolize", "--help"])
    m = re.search(r"this build has: ([a-z0-9, ]+)", out)
    return [b.strip() for b in m.group(1).split(",")] if m else ["addr2line"]


lines = {}
for n, line in enumerate(open(SRC), 1):
    m = re.search(r"@frame:(\w+)", line)
    if m:
        lines[m.group(1)] = n
check(set(lines) == set(NAMES), "markers in the source: %s" % sorted(lines))
src = os.path.basename(SRC)

with tempfile.TemporaryDirectory() as tmp:
    rec = os.path.join(tmp, "rec.txt")
    subprocess.run([PROG, rec], check=True)
    for be in backends():
        rc, out, err = run(["symbolize", "--to", "json", "--backend", be, rec])
        check(rc == 0 and len(out.splitlines()) == 1, "%s: exit %d, %s" % (be, rc, err))
        if rc != 0:
            continue
        # the C runtime's _start (a walk through libc reaches it, one by frame
        # pointers does not) is in our file but not ours
        frames = [f for f in json.loads(out)["frames"] if f.get("image") == PROG and
                  not (f["symbols"] and f["symbols"][0].get("function") == "_start")]
        got = [[(s.get("function"), os.path.basename(s.get("file", "")), s.get("line"))
                for s in f["symbols"]] for f in frames]
        want = [[(NAMES[k], src, lines[k]) for k in keys] for keys in STACK]
        if be == "addr2line" and got and got[0]:
            # see above: only note's file and line
            got[0][0] = (NAMES["note"],) + got[0][0][1:]
        check(got == want, "%s: our frames\n got  %s\n want %s" % (be, got, want))
        # the text form prints the same names
        rc, text, err = run(["symbolize", "--to", "text", "--backend", be, rec])
        check(rc == 0 and "in shapes::Canvas::draw(char const*) const at " in text and
              "inlined into shapes::detail::Grid<double, 4>::fill(int, double) at " in text,
              "%s: text output\n%s%s" % (be, text, err))
finish()
