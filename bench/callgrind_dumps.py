"""Run a benchmark under callgrind and read the counts it dumps (ir.py and
capture_ir.py): instructions do not depend on the load of the machine, so
the benchmarks dump them around the code they measure (CALLGRIND_ZERO_STATS,
CALLGRIND_DUMP_STATS_AT("words ...")) and these scripts divide."""
import glob
import os
import re
import subprocess
import sys
import tempfile


def _dump_number(path):
    # cg.out.N for the N-th dump; cg.out itself (the counts at exit) last.
    suffix = path.rsplit(".", 1)[-1]
    return int(suffix) if suffix.isdigit() else sys.maxsize


def run(argv):
    """Run argv under callgrind. Returns [(the words of a dump's trigger,
    its instructions)] in dump order, or None when the program failed (its
    stderr is copied to ours)."""
    dumps = []
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "cg.out")
        r = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out] + argv,
                           capture_output=True, text=True)
        if r.returncode != 0:
            sys.stderr.write(r.stderr)
            return None
        for path in sorted(glob.glob(out + "*"), key=_dump_number):
            desc = total = None
            with open(path) as f:
                for line in f:
                    m = re.match(r"desc: Trigger: Client Request: (.*)", line)
                    if m:
                        desc = m.group(1).split()
                    m = re.match(r"(?:summary|totals): (\d+)", line)
                    if m:
                        total = int(m.group(1))
            if desc and total is not None:
                dumps.append((desc, total))
    return dumps
