"""The manual pages: each renders without a groff warning; btpack(1)
describes every command, option and format that `btpack ... --help` lists;
btpack(3) names every public header, and every function it names exists.

usage: man_check.py GROFF BTPACK BTPACK_1 BTPACK_3 INCLUDE_DIR
"""
import glob
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import api  # noqa: E402
import helptext  # noqa: E402
from pycheck import check, finish  # noqa: E402


def render(groff, page):
    """(plain text, warnings) of a page, rendered as man(1) would, without
    hyphenation and on long lines so that words come out whole."""
    p = subprocess.run([groff, "-man", "-Tascii", "-ww", "-rHY=0", "-rLL=200n",
                        "-P-c", "-P-b", "-P-u", "-P-o", page], capture_output=True, text=True)
    return p.stdout, (p.stderr.strip() or ("" if p.returncode == 0 else "exit %d" % p.returncode))


def main(argv):
    if len(argv) != 6:
        sys.stderr.write(__doc__)
        return 2
    groff, btpack, page1, page3, include_dir = argv[1:]
    texts = {}
    for page, section in ((page1, 1), (page3, 3)):
        text, warnings = render(groff, page)
        check(not warnings, "%s: groff says: %s" % (page, warnings))
        with open(page, encoding="utf-8") as f:
            source = f.read()
        check(re.search(r'^\.TH BTPACK %d "[^"]*" "btpack \d+\.\d+\.\d+"' % section, source, re.M),
              "%s: no .TH line with the section and the version" % page)
        check(re.search(r"^NAME\n +\S.* - \S", text, re.M), "%s: no NAME line `name - what`" % page)
        texts[section] = text

    # btpack(1) against the tool's own help.
    man1 = texts[1]
    top = helptext.run(btpack, [])
    commands = helptext.section(top, "commands")
    check(commands, "`btpack --help` lists no commands")
    for cmd in commands:
        check(re.search(r"^ +%s(  |$)" % re.escape(cmd), man1, re.M),
              "btpack(1) has no entry for the command %s" % cmd)
        subs = helptext.subcommands(helptext.run(btpack, [cmd]), cmd)
        for sub in subs:
            check(re.search(r"^ +%s %s(  |$)" % (re.escape(cmd), sub), man1, re.M),
                  "btpack(1) has no entry for the command %s %s" % (cmd, sub))
        for words in [[cmd, sub] for sub in subs] or [[cmd]]:
            for opt in helptext.options(helptext.run(btpack, words)):
                check(re.search(r"(^|[\s,(\[])%s\b" % re.escape(opt), man1, re.M),
                      "btpack(1) does not describe `btpack %s %s`" % (" ".join(words), opt))
    for fmt in helptext.section(top, "formats"):
        check(re.search(r"^ +%s(  |$)" % re.escape(fmt), man1, re.M),
              "btpack(1) FORMATS has no entry for %s" % fmt)

    # btpack(3) against the headers.
    man3 = texts[3]
    for path in sorted(glob.glob(os.path.join(include_dir, "btpack", "*.h"))):
        name = "<btpack/%s>" % os.path.basename(path)
        check(name in man3, "btpack(3) does not name the header %s" % name)
    declared = {d[2] for d in api.declarations(include_dir)}
    for fn in sorted(set(re.findall(r"\b(btp_[a-z0-9_]+)\(\)", man3))):
        check(fn in declared, "btpack(3) names %s(), which no public header declares" % fn)

    finish()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
