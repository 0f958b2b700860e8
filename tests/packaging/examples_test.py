"""Every example btpack shows a user runs and does what it says: the
examples of `btpack --help` and of each `btpack COMMAND --help`, the
commands in the README's ```sh blocks and the EXAMPLES of btpack(1).

Each source runs in a scratch directory of its own, in order (an example may
read what an earlier one of the same source wrote), with `btpack` on PATH
being the binary under test and `tests/` and `build/` pointing into the
source and build trees, as in a checkout. Inputs an example names as a
stand-in for the user's own file (device.log, stacks.txt, ...) are made from
the bundled data (FIXTURES) when the example needs them and no earlier
example made them. An example passes when it exits 0 (or as EXPECT says)
and prints or writes something.

usage: examples_test.py BTPACK SOURCE_ROOT BUILD_ROOT BTPACK_1
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import helptext  # noqa: E402
from pycheck import check, finish  # noqa: E402

BTPACK, SRC, BUILD, MAN1 = (os.path.abspath(a) for a in sys.argv[1:5]) if len(sys.argv) == 5 \
    else (None,) * 4

# README commands that are not run here, with the reason.
NOT_RUN = {
    "bash scripts/test.sh": "it runs this very suite (.ci/run does)",
    "meson setup build --werror": "the build this suite runs in",
    "ninja -C build": "the build this suite runs in",
    "meson test -C build": "this very suite",
    "meson install -C build": "`meson install` is the install test's (tests/check_install.sh)",
}

# Why an example cannot run in this build (the heap tracer is not built
# under sanitizers, which interpose malloc themselves), by the subcommand it
# runs; the build that has it runs these examples.
NOT_BUILT = {}
if os.environ.get("BTPACK_HEAP_TRACER") == "absent":
    NOT_BUILT["btpack heap record"] = ("this build has no heap tracer "
                                       "(not built under sanitizers); the plain build runs it")

# Outcomes other than exit 0, by how the command line ends.
EXPECT = {
    # --keep-going skips the damaged block, recovers the rest, exits 1.
    "--keep-going tests/data/log/damaged-block.btlog": {"status": 1},
    # The example crashes on purpose and leaves its record behind.
    "crash_example segv crash.txt": {"signal": signal.SIGSEGV, "writes": "crash.txt"},
    "crash_example abort crash.txt": {"signal": signal.SIGABRT, "writes": "crash.txt"},
}


def lws_log(word_bits):
    """Log text with the libwebsockets records of that word size that
    libwebsockets itself decodes, with every address whole."""
    lines = []
    with open(os.path.join(SRC, "tests/data/vectors/lws-public.jsonl"), encoding="utf-8") as f:
        for n, line in enumerate(f):
            v = json.loads(line)
            if (v["kind"] == "valid" and v["word_bits"] == word_bits and v.get("roundtrip_exact")
                    and str(v["lws_decoder_result"]).startswith("OK")):
                lines.append("[2024/05/01 10:%02d:%02d:0000] N: heap: %s\n" % (n // 60, n % 60,
                                                                               v["m_line"]))
    return "".join(lines)


def write(text, mode="w"):
    def make(path):
        with open(path, mode) as f:
            f.write(text)
    return make


def link(rel):
    return lambda path: os.symlink(os.path.join(SRC, rel), path)


# The user's files the examples name, made from the bundled data.
FIXTURES = {
    "stacks.txt": write("pc:0x80491a0 0x8049b2c 0x804a010\n0x8049b2c omit:2 0x804a010 trunc\n"),
    # Return addresses inside the text of app.maps' program.
    "stack.txt": write("0x56620100 0x56630200 0x56640300\n"),
    "device.log": lambda p: write(lws_log(64))(p),
    "esp32.log": lambda p: write(lws_log(32))(p),
    "app.maps": link("tests/data/corpus/sqlite3_i386.maps"),
    "sqlite3_i386.trace.xz": link("tests/data/corpus/sqlite3_i386.trace.xz"),
    # Two CBF streams: one ended by `end`, one by `trunc`.
    "traces.cbf": write(bytes.fromhex("02111000201021ff0000" "02111000201001"), "wb"),
    # A crash record, as the crash example leaves one (it dies by SIGSEGV).
    "crash.txt": lambda p: subprocess.run([os.path.join(BUILD, "tools", "crash_example"),
                                           "segv", p], capture_output=True),
    # Any ELF serves heapmap (its addresses then symbolize as ??).
    "myapp": lambda p: os.symlink(BTPACK, p),
    # A crash log swift-backtrace wrote (two threads), and Swift Backtrace
    # JSON as Swift's JSONEncoder wrote it (tests/data/swift/README.md).
    "crash.log": link("tests/data/swift/crash-threads.log"),
    "backtraces.jsonl": link("tests/data/swift/capture.jsonl"),
    # What `btpack heap record` writes, for the report and map examples
    # where the tracer cannot run (see TRACER).
    "ls.btlog": link("tests/data/log/synthetic-zlib.btlog"),
    "sort.btlog": link("tests/data/log/synthetic-zlib.btlog"),
}

# The heap tracer `btpack heap record` preloads: not built under sanitizers
# (they interpose malloc themselves), so its examples cannot run there.
TRACER = os.path.join(BUILD, "preload", "libbtpack-heap.so") if BUILD else None

def readme_examples():
    out, block, cont = [], False, ""
    with open(os.path.join(SRC, "README.md"), encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("```"):
                block = line.strip() == "```sh"
            elif block and line.strip():
                cont = helptext.join_continued(out, cont, re.sub(r"\s{2,}#.*$", "", line).strip())
    return out


def man_examples():
    out, in_examples, nf, cont = [], False, False, ""
    with open(MAN1, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith(".SH"):
                in_examples = line.strip() == ".SH EXAMPLES"
            elif in_examples and line.startswith(".nf"):
                nf = True
            elif in_examples and line.startswith(".fi"):
                nf = False
            elif in_examples and nf and not line.startswith("."):
                text = line.replace("\\-", "-").replace("\\e", "\\")
                cont = helptext.join_continued(out, cont, text)
    return out


def scratch(name):
    d = tempfile.mkdtemp(prefix="btpack-examples-%s-" % name)
    os.symlink(os.path.join(SRC, "tests"), os.path.join(d, "tests"))
    os.symlink(BUILD, os.path.join(d, "build"))
    os.mkdir(os.path.join(d, ".bin"))
    os.symlink(BTPACK, os.path.join(d, ".bin", "btpack"))
    return d


def supports(program, option):
    """Whether the installed program lists option in its --help."""
    p = subprocess.run([program, "--help"], capture_output=True, text=True)
    return option in p.stdout + p.stderr


# Options of other programs that examples use and that not every version
# has (Debian 12's llvm-symbolizer is LLVM 14; --filter-markup is LLVM 15's).
NEWER_OPTIONS = {"llvm-symbolizer": ["--filter-markup"]}


def missing_program(cmd):
    """Why the command line cannot run here: the first program it runs that
    is not installed, or is too old for an option it is given; else None."""
    for segment in re.split(r"[|;&]+", cmd):
        words = [w for w in segment.split() if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", w)]
        if not words or "/" in words[0] or words[0] in ("btpack", "echo", "cd", "export"):
            continue
        if not shutil.which(words[0]):
            return "%s is not installed" % words[0]
        for opt in NEWER_OPTIONS.get(words[0], []):
            if opt in words and not supports(words[0], opt):
                return "the %s found on PATH has no %s" % (shutil.which(words[0]), opt)
    return None


def run_example(source, cmd, cwd):
    words = cmd.split()
    for i, w in enumerate(words):
        path = os.path.join(cwd, w)
        base = os.path.basename(w)
        # The README shows trace logs a reader has: bundled, or made by an
        # example before.
        if source == "README.md" and w.endswith(".btlog") and words[i - 1] not in ("-o",
                                                                                   "--output"):
            check(os.path.lexists(path), "README.md example `%s` reads %s, which is neither "
                  "bundled nor written by an earlier example" % (cmd, w))
            continue
        if (base in FIXTURES and not os.path.lexists(path)
                and words[i - 1] not in ("-o", "--output")):
            FIXTURES[base](path)
    expect = next((e for key, e in EXPECT.items() if cmd.endswith(key)), {})
    env = dict(os.environ, PATH=os.path.join(cwd, ".bin") + os.pathsep + os.environ["PATH"])
    p = subprocess.run(["bash", "-o", "pipefail", "-c", cmd], cwd=cwd, env=env,
                       capture_output=True, timeout=120)
    status = p.returncode
    where = "%s example `%s`" % (source, cmd)
    detail = "\n  stderr: %s" % p.stderr.decode(errors="replace").strip()[-800:]
    if "signal" in expect:
        # Killed by signal N: -N when bash ran the command in its own
        # process, 128 + N when it ran it as a child.
        ok = status in (-expect["signal"], 128 + expect["signal"])
        check(ok, "%s: wanted signal %d, exit %d%s" % (where, expect["signal"], status, detail))
    elif status == 128 + signal.SIGPIPE and "| head" in cmd:
        ok = True  # head closed the pipe early, as it should
    else:
        ok = status == expect.get("status", 0)
        check(ok, "%s: exit %d, wanted %d%s" % (where, status, expect.get("status", 0), detail))
    outputs = outputs_of(cmd)
    outputs += [expect["writes"]] if "writes" in expect else []
    for o in outputs:
        path = os.path.join(cwd, o)
        check(os.path.isfile(path) and os.path.getsize(path) > 0,
              "%s: wrote nothing to %s" % (where, o))
    if not outputs and ok:
        check(p.stdout.strip(), "%s: printed nothing%s" % (where, detail))


# Examples already run that read only bundled files and write none: the
# same command line in another source is the same test (the README and the
# --help texts share several).
already_run = {}


def reads_bundled_only(cmd):
    """No -o, and every word that looks like a path is under tests/."""
    return not any(w in ("-o", "--output") or (not w.startswith(("-", "tests/"))
                                                and ("." in w or "/" in w))
                   for w in cmd.split()[1:])


def outputs_of(cmd):
    words = cmd.split()
    return [words[i + 1] for i, w in enumerate(words[:-1]) if w in ("-o", "--output")]


def not_built(cmd, unmade):
    """Why this build cannot run the command line: it runs something the
    build lacks, or reads a file only such a command would have made."""
    for prefix, why in NOT_BUILT.items():
        if prefix in cmd:
            return why
    for w in cmd.split():
        if w in unmade:
            return "it reads %s, which `%s` (not run) would have written" % (w, unmade[w])
    return None


def run_source(name, examples):
    check(examples, "%s: no examples found" % name)
    cwd = scratch(name.replace(" ", "-").replace("/", "_"))
    unmade = {}
    try:
        for cmd in examples:
            if cmd in NOT_RUN:
                print("not run: %s example `%s`: %s" % (name, cmd, NOT_RUN[cmd]))
                continue
            why = not_built(cmd, unmade)
            if why:
                print("not run: %s example `%s`: %s" % (name, cmd, why))
                unmade.update((o, cmd) for o in outputs_of(cmd))
                continue
            if cmd in already_run:
                print("same as the %s example `%s`, run once" % (already_run[cmd], cmd))
                continue
            if reads_bundled_only(cmd):
                already_run[cmd] = name
            missing = missing_program(cmd)
            if cmd.startswith("btpack heap record") and not os.path.exists(TRACER):
                missing = "the heap tracer is not built here (sanitizer build)"
            if missing:
                print("not run: %s example `%s`: %s" % (name, cmd, missing))
                continue
            if cmd.startswith("bash scripts/"):
                # The quick-start scripts, on this build and without apt-get.
                cmd = "BTPACK_BUILD_DIR=build BTPACK_NO_INSTALL=1 " + cmd
                os.symlink(os.path.join(SRC, "scripts"), os.path.join(cwd, "scripts"))
            run_example(name, cmd, cwd)
    finally:
        shutil.rmtree(cwd)


def check_size_table():
    """The README's table of the demo's sizes shows every format the demo
    writes, the trace log among them, each with what it holds and what to
    pick it for, so that CBF does not stand next to the xz archive
    unexplained; and the demo prints the same rows."""
    with open(os.path.join(SRC, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    with open(os.path.join(SRC, "scripts", "demo.sh"), encoding="utf-8") as f:
        demo = f.read()
    rows = [l for l in readme.splitlines() if l.startswith("| ") and re.search(r"\| [\d,]+ \|", l)]
    check(re.search(r"^\| format \| bytes \| holds \| pick it for \|$", readme, re.M),
          "README.md: no size table with what each format holds and is for")
    for name in ("trace records (text)", "xz (as shipped)", "JSON Lines", "CBF",
                 "trace log (`.btlog`)"):
        row = [r for r in rows if name in r]
        check(row and len([c for c in row[0].split("|") if c.strip()]) == 4,
              "README.md size table: no full row for %s" % name)
        check(name.replace("`", "") in demo, "scripts/demo.sh prints no row for %s" % name)


def main():
    if BTPACK is None:
        sys.stderr.write(__doc__)
        return 2
    check_size_table()
    top = helptext.run(BTPACK, [])
    run_source("btpack --help", helptext.examples(top))
    for cmd in helptext.section(top, "commands"):
        run_source("btpack %s --help" % cmd, helptext.examples(helptext.run(BTPACK, [cmd])))
    run_source("README.md", readme_examples())
    run_source("btpack(1)", man_examples())
    finish()


if __name__ == "__main__":
    sys.exit(main())
