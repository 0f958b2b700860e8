"""libbtpack.so exports exactly the functions the public headers declare
(BTP_API), each with the symbol version BTPACK_0 of lib/btpack.map, and
nothing else.

usage: check_symbols.py NM LIBBTPACK_SO INCLUDE_DIR
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import api  # noqa: E402
from pycheck import check, finish  # noqa: E402

VERSION_NODE = "BTPACK_0"


def main(argv):
    if len(argv) != 4:
        sys.stderr.write(__doc__)
        return 2
    nm, lib, include_dir = argv[1:]
    out = subprocess.run([nm, "-D", "--defined-only", lib], check=True,
                         capture_output=True, text=True).stdout
    exported = {}  # name -> version ('' when none)
    for line in out.splitlines():
        f = line.split()
        if len(f) != 3 or f[1] == "A":  # "A BTPACK_0": the version node itself
            continue
        name, _, version = f[2].partition("@")
        exported[name] = version.lstrip("@")
    declared = {d[2] for d in api.declarations(include_dir)}
    check(exported, "no exported symbols found in %s" % lib)
    for name in sorted(exported):
        check(name.startswith("btp_"), "exported without the btp_ prefix: %s" % name)
        check(name in declared, "exported but declared BTP_API in no public header: %s" % name)
        check(exported[name] == VERSION_NODE, "%s has symbol version '%s', not %s (lib/btpack.map)"
              % (name, exported[name], VERSION_NODE))
    for name in sorted(declared - set(exported)):
        check(False, "declared BTP_API but not exported (no definition, or hidden): %s" % name)
    finish()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
