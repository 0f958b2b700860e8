"""`btpack --version` names every optional feature of the build: its
`features:` line has +NAME for each one built in and -NAME for each one
left out, exactly the build's `Features` summary (btpack_features in
meson.build, passed here as NAME=0|1).

usage: version_features.py BTPACK NAME=0|1...
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from pycheck import check, finish  # noqa: E402


def main(argv):
    if len(argv) < 3:
        sys.stderr.write(__doc__)
        return 2
    want = {}
    for a in argv[2:]:
        name, _, value = a.partition("=")
        want[name] = value in ("1", "true", "True")
    p = subprocess.run([argv[1], "--version"], capture_output=True, text=True)
    lines = p.stdout.splitlines()
    check(p.returncode == 0 and lines and lines[0].startswith("btpack "),
          "--version: exit %d, %r" % (p.returncode, p.stdout))
    feats = [l for l in lines if l.startswith("features: ")]
    check(len(feats) == 1, "no single `features:` line in:\n" + p.stdout)
    got = {}
    for item in feats[0].split()[1:] if feats else []:
        if item[:1] in "+-" and len(item) > 1:
            got[item[1:]] = item[0] == "+"
        else:
            check(False, "features: item %r is neither +NAME nor -NAME" % item)
    for name in sorted(set(want) | set(got)):
        if name not in got:
            check(False, "--version does not say whether %s is built in" % name)
        elif name not in want:
            check(False, "--version names %s, which the build does not know" % name)
        else:
            check(got[name] == want[name], "--version says %s%s, the build says %s" % (
                "+" if got[name] else "-", name, "built in" if want[name] else "not built in"))
    methods = [l for l in lines if l.startswith("capture methods: ")]
    check(len(methods) == 1, "no single `capture methods:` line in:\n" + p.stdout)
    if methods and "libunwind" in want:
        listed = methods[0].split("(")[0].split()[2:]
        check(("libunwind" in listed) == want["libunwind"],
              "capture methods %r disagree with libunwind=%s" % (listed, want["libunwind"]))
    finish()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
