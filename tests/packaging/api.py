"""The public API as the headers declare it: every BTP_API function of
include/btpack/*.h, with where it is and whether a comment documents it.

A declaration is documented when a comment ends on the line just above it,
or above a run of declarations it belongs to (one comment may introduce a
group of accessors), or on its own last line. A blank line ends a group.

usage: api.py names INCLUDE_DIR      the exported function names, sorted
       api.py comments INCLUDE_DIR   check that each one is documented
"""
import glob
import os
import re
import sys

DECL_NAME = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(")


def declarations(include_dir):
    """[(header, line number, name, documented)] in header order."""
    out = []
    for path in sorted(glob.glob(os.path.join(include_dir, "btpack", "*.h"))):
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
        spans = []  # (first, last) line index of each BTP_API statement
        i = 0
        while i < len(lines):
            if lines[i].startswith("BTP_API "):
                j = i
                while ";" not in lines[j] and j + 1 < len(lines):
                    j += 1
                spans.append((i, j))
                i = j + 1
            else:
                i += 1
        last_of = {last: first for first, last in spans}
        for first, last in spans:
            m = DECL_NAME.search(" ".join(lines[first:last + 1]))
            if not m:
                raise SystemExit("%s:%d: cannot find the function name" % (path, first + 1))
            above = first - 1
            while above in last_of:  # skip the declarations of the same group
                above = last_of[above] - 1
            prev = lines[above].rstrip() if above >= 0 else ""
            documented = (prev.endswith("*/") or prev.lstrip().startswith("//")
                          or lines[last].rstrip().endswith("*/"))
            out.append((os.path.relpath(path, include_dir), first + 1, m.group(1), documented))
    return out


def main(argv):
    if len(argv) != 3 or argv[1] not in ("names", "comments"):
        sys.stderr.write(__doc__)
        return 2
    decls = declarations(argv[2])
    if not decls:
        print("no BTP_API declarations found under %s" % argv[2])
        print("0 passed, 1 failed")
        return 1
    if argv[1] == "names":
        print("\n".join(sorted({d[2] for d in decls})))
        return 0
    bad = [d for d in decls if not d[3]]
    for header, line, name, _ in bad:
        print("%s:%d: %s has no comment saying what it does" % (header, line, name))
    print("%d passed, %d failed" % (len(decls) - len(bad), len(bad)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
