"""btpack symbolize, run as a user would:
- a program of ours built with -g writes a crash record; every frame must
  name the function and line that the marker comments in its source give,
  with both back ends, from v1 records (map lines) and v2 (image lines);
- bad input: missing file, wrong build ID, stripped binary (and its debug
  file found by build ID with --debug-dir), addresses in no image, no map;
- output shapes: JSON Lines, text, LLVM symbolizer markup (and what
  llvm-symbolizer --filter-markup makes of it, when one that has it is here);
- the bundled corpora with their maps, where their binaries are on this
  machine (checked against a second, independent DWARF reader).

usage: symbolize_cli.py BTPACK SYM_PROG SYM_PROG_SOURCE CORPUS_DIR"""
import json
import lzma
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from pycheck import check, finish  # noqa: E402

BTPACK, PROG, SRC, CORPUS = sys.argv[1:5]
PROG = os.path.abspath(PROG)


def run(args, data=None):
    p = subprocess.run([BTPACK] + args, input=data, capture_output=True)
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")


def backends():
    rc, out, _ = run(["symbolize", "--help"])
    m = re.search(r"this build has: ([a-z0-9, ]+)", out)
    return [b.strip() for b in m.group(1).split(",")] if m else ["addr2line"]


def markers():
    """frame name -> line of its marker comment"""
    want = {}
    for n, line in enumerate(open(SRC), 1):
        m = re.search(r"@frame:(\w+)", line)
        if m:
            want[m.group(1)] = n
    return want


def build_id(path):
    out = subprocess.run(["readelf", "-n", path], capture_output=True).stdout.decode()
    m = re.search(r"Build ID: ([0-9a-f]+)", out)
    return m.group(1) if m else None


def v2_from_v1(text, fix=None):
    """A v2 record from a v1 one: image lines (with build IDs read from the
    files) instead of map lines. fix(path, build_id) -> (path, build_id)."""
    lines = text.split("\n")
    head = lines[0].replace("btpack-crash v1", "btpack-crash v2")
    cbf = next(l for l in lines if l.startswith("cbf "))
    images = []  # [path, base, end]
    for l in lines:
        if not l.startswith("map "):
            continue
        f = l[4:].split(None, 5)
        if len(f) < 6 or not f[5].startswith("/"):
            continue
        start, end = (int(x, 16) for x in f[0].split("-"))
        off = int(f[2], 16)
        if off == 0 and not any(i[0] == f[5] for i in images):
            images.append([f[5], start, 0])
        img = next((i for i in images if i[0] == f[5]), None)
        if img and "x" in f[1]:
            img[2] = max(img[2], end)
    out = [head + " fallback=fp futurefield=1", cbf, "thread 1 (a line kind of a later version)"]
    for path, base, end in images:
        if not end:
            continue
        bid = build_id(path) or "-"
        p2, bid2 = fix(path, bid) if fix else (path, bid)
        out.append("image 0x%x 0x%x %s %s" % (base, end, bid2, p2.replace("\\", "\\\\")))
    return "\n".join(out + ["end", ""])


def frames_of(js_line):
    return json.loads(js_line)["frames"]


def ours(frames):
    """(function, line, inlined-into function, its line) for frames in our
    program; the C runtime's _start (which a walk through libc reaches, and
    one by frame pointers does not) is not ours"""
    res = []
    for f in frames:
        if f.get("image") != PROG:
            continue
        s = f["symbols"]
        if s and s[0].get("function") == "_start":
            continue
        res.append(tuple((x.get("function"), x.get("line"), os.path.basename(x.get("file", "")))
                         for x in s))
    return res


def expect_ours(frames, what):
    w = markers()
    src = os.path.basename(SRC)
    got = ours(frames)
    want = [((("write_here", w["write_here"], src), ("sym_level3", w["sym_level3"], src))),
            (("sym_level2", w["sym_level2"], src),), (("sym_level1", w["sym_level1"], src),),
            (("main", w["main"], src),)]
    check(got == want, "%s: our frames\n got  %s\n want %s" % (what, got, want))


with tempfile.TemporaryDirectory() as tmp:
    written = os.path.join(tmp, "written.txt")
    subprocess.run([PROG, written], check=True)
    text = open(written).read()
    check(text.startswith("btpack-crash v2 ") and "\ncbf " in text and "\nimage " in text,
          "sym_prog wrote a record: %r" % text[:200])
    # The handler writes v2; the v1 record is the same without image lines.
    v1 = "\n".join(l.replace("btpack-crash v2 ", "btpack-crash v1 ", 1)
                   for l in text.split("\n") if not l.startswith("image "))
    rec = os.path.join(tmp, "rec.txt")
    open(rec, "w").write(v1)

    # v1 and v2, sniffed and --from crash, each back end
    v2 = v2_from_v1(v1)
    v2path = os.path.join(tmp, "rec2.txt")
    open(v2path, "w").write("program output before the record\n" + v2)
    for be in backends():
        for path, args, what in [(rec, [], "v1 sniffed"), (rec, ["--from", "crash"], "v1 --from crash"),
                                 (v2path, ["--from", "crash"], "v2 --from crash"), (v2path, [], "v2 sniffed")]:
            rc, out, err = run(["symbolize", "--to", "json", "--backend", be] + args + [path])
            check(rc == 0 and len(out.splitlines()) == 1, "%s %s: exit %d, %s" % (be, what, rc, err))
            if rc == 0:
                t = json.loads(out.splitlines()[0])
                check(t["context"].startswith("btpack-crash v"), "%s: context %r" % (what, t["context"]))
                expect_ours(t["frames"], "%s %s" % (be, what))
                check(all(f.get("build_id") == build_id(PROG) for f in t["frames"]
                          if f.get("image") == PROG), "%s: build IDs" % what)

    # How many frames lie in our program (the notes below want one on each).
    rc, out, err = run(["symbolize", "--to", "json", "--from", "crash", v2path])
    n_prog = len([f for f in frames_of(out) if f.get("image") == PROG]) if rc == 0 else -1
    check(n_prog >= 4, "%d frames in our program" % n_prog)

    # two records back to back, the second cut short (no end line)
    two = os.path.join(tmp, "two.txt")
    open(two, "w").write(v1 + "noise\n" + v2[:v2.index("\nend")] + "\n")
    rc, out, err = run(["symbolize", "--to", "json", two])
    check(rc == 0 and len(out.splitlines()) == 2 and "cut short" in err,
          "two records, the second cut short: %d %r %s" % (rc, out[:100], err))
    for line in out.splitlines():
        expect_ours(frames_of(line), "back to back")

    # text output: one line per frame, inlined frames indented
    rc, out, err = run(["symbolize", "--to", "text", rec])
    w = markers()
    check(rc == 0 and re.search(r"(?m)^#0 +0x[0-9a-f]{16} in write_here at \S*sym_prog\.c:%d \(sym_prog\+0x[0-9a-f]+\)$"
                                % w["write_here"], out)
          and re.search(r"(?m)^    inlined into sym_level3 at \S*sym_prog\.c:%d$" % w["sym_level3"], out)
          and re.search(r"(?m)^#3 +0x[0-9a-f]+ in main at \S*sym_prog\.c:%d " % w["main"], out),
          "text output:\n%s%s" % (out, err))

    # an addr2line back end that cannot run, or dies without answering: every
    # frame of our program says so, keeps the function its symbol table names
    # (write_here is inlined: the symbol holding it is sym_level3)
    # (no line), and the command ends with status 1 after saying why
    dies = os.path.join(tmp, "a2l-dies")
    open(dies, "w").write("#!/bin/sh\nexit 3\n")
    os.chmod(dies, 0o755)
    for a2l, want in (("/nonexistent/addr2line", "cannot run"), (dies, "exit status 3")):
        rc, out, err = run(["symbolize", "--to", "json", "--addr2line", a2l, rec])
        fr = [f for f in frames_of(out) if f.get("image") == PROG]
        names = [f["symbols"][0].get("function") if f["symbols"] else None for f in fr]
        check(rc == 1 and len(fr) == n_prog and "back end failed on" in err
              and all("back end failed" in f.get("note", "") and
                      all("line" not in x for x in f["symbols"]) for f in fr)
              and "sym_level3" in names and "main" in names
              and want in err + " ".join(f.get("note", "") for f in fr),
              "addr2line %s: rc %d, %s, %s" % (a2l, rc, [(n, f.get("note")) for n, f in zip(names, fr)],
                                             err))

    # wrong build ID: not used, a note on each of its frames
    bad = v2_from_v1(v1, lambda p, b: (p, "00" * 20 if p == PROG else b))
    rc, out, err = run(["symbolize", "--to", "json", "--from", "crash", "-"], bad.encode())
    fr = [f for f in frames_of(out) if f.get("image") == PROG]
    check(rc == 0 and len(fr) == n_prog and all(not f["symbols"] and "build ID" in f["note"] for f in fr),
          "wrong build ID: %s" % fr)
    # missing file
    gone = v2_from_v1(v1, lambda p, b: ("/nonexistent/sym_prog" if p == PROG else p, b))
    rc, out, err = run(["symbolize", "--to", "json", "--from", "crash", "-"], gone.encode())
    fr = [f for f in frames_of(out) if f.get("image") == "/nonexistent/sym_prog"]
    check(rc == 0 and len(fr) == n_prog and all(not f["symbols"] and "No such file" in f["note"] for f in fr),
          "missing file: %s" % fr)
    # stripped copy: no name at all (its functions are not exported), never a wrong one
    stripped = os.path.join(tmp, "sym_prog.stripped")
    subprocess.run(["strip", "--strip-all", "-o", stripped, PROG], check=True)
    st = v2_from_v1(v1, lambda p, b: (stripped if p == PROG else p, b))
    rc, out, err = run(["symbolize", "--to", "json", "--from", "crash", "-"], st.encode())
    fr = [f for f in frames_of(out) if f.get("image") == stripped]
    check(rc == 0 and len(fr) == n_prog and all(not f["symbols"] and "stripped" in f["note"] for f in fr),
          "stripped: %s" % fr)
    # ... and its debug file found by build ID under --debug-dir
    bid = build_id(PROG)
    dbg = os.path.join(tmp, "dbg", ".build-id", bid[:2])
    os.makedirs(dbg)
    shutil.copy(PROG, os.path.join(dbg, bid[2:] + ".debug"))
    for be in backends():
        rc, out, err = run(["symbolize", "--to", "json", "--backend", be, "--from", "crash",
                            "--debug-dir", os.path.join(tmp, "dbg"), "-"], st.encode())
        t = frames_of(out)
        for f in t:
            if f.get("image") == stripped:
                f["image"] = PROG
        expect_ours(t, "%s: stripped + --debug-dir" % be)

    # addresses in no image, and no map at all
    maps = os.path.join(tmp, "maps")
    open(maps, "w").write("".join(l[4:] + "\n" for l in v1.split("\n") if l.startswith("map ")))
    rc, out, err = run(["symbolize", "--to", "json", "--from", "addrs", "--maps", maps], b"0x10 0x20\n")
    fr = frames_of(out) if rc == 0 else []
    check(len(fr) == 2 and all(not f["symbols"] and "not in any image" in f["note"] for f in fr),
          "outside every image: %s %s" % (out, err))
    rc, out, err = run(["symbolize", "--to", "json", "--from", "addrs"], b"0x10\n")
    check(rc == 0 and "no image map" in out, "no map: %s %s" % (out, err))
    # --maps with the addresses of the record: the same answers as the record's own maps
    addrs = subprocess.run([BTPACK, "convert", "--from", "hex", "--to", "addrs"],
                           input=next(l[4:] for l in v1.split("\n") if l.startswith("cbf ")).encode(),
                           capture_output=True).stdout
    rc, out, err = run(["symbolize", "--to", "json", "--from", "addrs", "--maps", maps], addrs)
    check(rc == 0, "addrs + --maps: %s" % err)
    if rc == 0:
        expect_ours(frames_of(out), "addrs + --maps")
        check(not any("not the one mapped" in (f.get("note") or "") for f in frames_of(out)),
              "addrs + --maps: the mapped files themselves get no warning")
    # maps text naming the program with another inode (another machine's, or
    # from before it was rebuilt): still named from the file here, each of
    # its frames saying the names may be another version's
    def other_inode(line):
        f = line.split()
        if len(f) >= 6 and line.endswith(PROG):
            f[4] = str(int(f[4]) + 1)
            return " ".join(f)
        return line
    moved = os.path.join(tmp, "maps-moved")
    open(moved, "w").write("".join(other_inode(l) + "\n" for l in open(maps).read().splitlines()))
    rc, out, err = run(["symbolize", "--to", "json", "--from", "addrs", "--maps", moved], addrs)
    fr = [f for f in frames_of(out) if f.get("image") == PROG] if rc == 0 else []
    check(len(fr) == n_prog and all("not the one mapped" in (f.get("note") or "") and
                                    f["symbols"] for f in fr),
          "another inode: names kept, each frame warned: %s %s" % (fr, err))
    others = [f for f in frames_of(out) if f.get("image") != PROG] if rc == 0 else []
    check(not any("not the one mapped" in (f.get("note") or "") for f in others),
          "another inode: only the program's frames warned")
    # bad records and options: clear errors, no crash
    for data, want in [(b"btpack-crash v2 signal=1\nend\n", "without a cbf line"),
                       (b"btpack-crash v2\ncbf 0zz\nend\n", "hex"),
                       (b"btpack-crash v2\ncbf 02111000201021ff00\nimage 0x1 zz - -\nend\n", "bad image line"),
                       (b"btpack-crash v1\ncbf 02111000201021ff00\nmap nonsense\nend\n", "bad map line")]:
        rc, out, err = run(["symbolize", "--to", "json", "--from", "crash", "-"], data)
        check(rc == 1 and want in err and "Traceback" not in err, "bad record %r: %d %s" % (data, rc, err))
    # records with as many images, other ones at the same addresses (a bad
    # record between them): each address placed by its own record's images
    recs = "".join("btpack-crash v2 signal=11 pid=%d\ncbf 0229150000\n%s\nend\n" % (i, img)
                   for i, img in enumerate(["image 0x1000 0x2000 - /bin/true",
                                            "image 0x1000 zz - -",
                                            "image 0x1000 0x2000 - /bin/false"]))
    rc, out, err = run(["symbolize", "--to", "json", "--keep-going", "--from", "crash", "-"],
                       recs.encode())
    check(rc == 1 and [frames_of(l)[0].get("image") for l in out.splitlines()] ==
          ["/bin/true", "/bin/false"],
          "each record's own images: %s %s" % (out, err))
    # ... and so in the formats that carry image maps from line to line
    for fmt in ("swift", "swift-crashlog"):
        conv = subprocess.run([BTPACK, "convert", "--keep-going", "--from", "crash", "--to", fmt],
                              input=recs.encode(), capture_output=True).stdout
        rc, out, err = run(["symbolize", "--to", "json", "--from", fmt, "-"], conv)
        check(rc == 0 and [frames_of(l)[0].get("image") for l in out.splitlines()] ==
              ["/bin/true", "/bin/false"], "%s: each line's own images: %s %s" % (fmt, out, err))
    rc, out, err = run(["symbolize", "--to", "yaml", rec])
    check(rc == 2 and "--to" in err, "bad --to: %s" % err)
    rc, out, err = run(["symbolize", "--backend", "nope", rec])
    check(rc == 2 and "nope" in err, "bad --backend: %s" % err)

    # LLVM symbolizer markup: the shape, then llvm-symbolizer's reading of it
    rc, out, err = run(["symbolize", "--to", "markup", rec])
    lines = out.splitlines()
    check(rc == 0 and lines[0] == "{{{reset}}}"
          and all(re.fullmatch(r"\{\{\{(reset|module:\d+:[^:]+:elf:[0-9a-f]+|"
                               r"mmap:0x[0-9a-f]+:0x[0-9a-f]+:load:\d+:rx:0x[0-9a-f]+|bt:\d+:0x[0-9a-f]+:(pc|ra))\}\}\}", l)
                  for l in lines)
          and sum(l.startswith("{{{bt:") for l in lines) == len(frames_of(run(["symbolize", "--to", "json", rec])[1]))
          and "{{{module:0:sym_prog:elf:%s}}}" % bid in out,
          "markup shape:\n%s" % out)
    llvm = next((p for p in [shutil.which("llvm-symbolizer"), "/opt/swift/usr/bin/llvm-symbolizer"]
                 if p and os.path.exists(p) and "--filter-markup" in
                 subprocess.run([p, "--help"], capture_output=True).stdout.decode()), None)
    if llvm:
        p = subprocess.run([llvm, "--filter-markup", "--debug-file-directory=" + os.path.join(tmp, "dbg")],
                           input=out.encode(), capture_output=True)
        o = p.stdout.decode()
        check(all(re.search(r"\b%s\b.*sym_prog\.c:%d" % (fn, ln), o)
                  for fn, ln in markers().items() if fn != "write_here"),
              "llvm-symbolizer --filter-markup:\n%s%s" % (o, p.stderr.decode()))
    else:
        print("note: no llvm-symbolizer with --filter-markup here: markup checked by shape only")

    # the corpora with their maps, where the binaries are here
    def corpus_traces(name, n):
        with lzma.open(os.path.join(CORPUS, name + ".trace.xz"), "rt") as f:
            out = []
            for line in f:
                out.append(line)
                if len(out) >= n:
                    break
        return "".join(out).encode()

    py_lib = "/root/.pyenv/versions/3.11.7/lib/libpython3.11.so.1.0"
    if os.path.exists(py_lib):
        data = corpus_traces("py311_regrtest", 400)
        res = {}
        for be in backends():
            rc, out, err = run(["symbolize", "--to", "json", "--backend", be, "--from", "trace",
                                "--maps", os.path.join(CORPUS, "py311_regrtest.maps"), "-"], data)
            check(rc == 0, "py311 %s: %s" % (be, err[:300]))
            res[be] = [f for l in out.splitlines() for f in frames_of(l) if f.get("image") == py_lib]
        a = res[backends()[0]]
        named = sum(1 for f in a if f["symbols"] and f["symbols"][0].get("function"))
        check(len(a) > 5000 and named == len(a), "py311: every libpython frame named: %d of %d" % (named, len(a)))
        if len(res) == 2:
            x, y = res.values()
            fx = [f["symbols"][-1].get("function") if f["symbols"] else None for f in x]
            fy = [f["symbols"][-1].get("function") if f["symbols"] else None for f in y]
            same = sum(1 for p, q in zip(fx, fy) if p == q)
            check(len(fx) == len(fy) and same == len(fx),
                  "py311: libdw and addr2line agree on the function of %d of %d frames: %s" %
                  (same, len(fx), [(p, q) for p, q in zip(fx, fy) if p != q][:5]))
        print("py311_regrtest: %d libpython frames symbolized" % len(a))
    else:
        print("note: %s is not on this machine: py311 corpus not symbolized" % py_lib)
    cc1 = "/usr/lib/gcc/x86_64-linux-gnu/12/cc1"
    if os.path.exists(cc1):
        rc, out, err = run(["symbolize", "--to", "json", "--from", "trace", "--maps",
                            os.path.join(CORPUS, "gcc12_cc1_sqlite3.maps"), "-"],
                           corpus_traces("gcc12_cc1_sqlite3", 400))
        fr = [f for l in out.splitlines() for f in frames_of(l)]
        incc1 = [f for f in fr if f.get("image") == cc1]
        # Debian's cc1 is stripped, with no debug file here: names only from
        # its exported (dynamic) symbols, which hold their sizes, no lines, and
        # a note on every frame saying so
        check(rc == 0 and len(incc1) > 1000 and all(cc1 in f.get("note", "") and
                                                    all("line" not in x for x in f["symbols"])
                                                    for f in incc1),
              "cc1 frames: %d, notes %s" % (len(incc1), set(f.get("note") for f in incc1[:50])))
        print("gcc12_cc1_sqlite3: %d cc1 frames, %d named" % (len(incc1), sum(1 for f in incc1 if f["symbols"])))
    else:
        print("note: %s is not on this machine: gcc12 corpus not symbolized" % cc1)
    print("note: sqlite3_i386's binaries (/build/src/sqlite-32/sqlite3-i386, /usr/lib32) are not "
          "on this machine: not symbolized" if not os.path.exists("/build/src/sqlite-32/sqlite3-i386")
          else "")
finish()
