"""The bash completion (tools/completion/btpack.bash), run by bash as
bash-completion runs it: it completes the commands, each command's options,
the formats --from and --to take and file names; every option it offers is
one the command accepts, and every option the command's --help lists is
offered.

usage: completion_test.py BTPACK COMPLETION_FILE
"""
import atexit
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import helptext  # noqa: E402
from pycheck import check, finish  # noqa: E402

BASH_COMPLETION = "/usr/share/bash-completion/bash_completion"

# Sets up a completion the way bash does for `btpack WORDS...<TAB>` (the last
# word is the one being completed) and prints the candidates.
DRIVER = r"""
if [ -r "$BTPACK_BASH_COMPLETION" ]; then . "$BTPACK_BASH_COMPLETION"; fi
. "$BTPACK_COMPLETION"
COMP_WORDS=("$@")
COMP_CWORD=$(($# - 1))
COMP_LINE="$*"
COMP_POINT=${#COMP_LINE}
COMPREPLY=()
_btpack btpack "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
printf '%s\n' "${COMPREPLY[@]}"
"""

# An argument each option that takes one accepts, for trying the options.
ARG = {"--from": "hex", "--to": "json", "--word-bits": "32", "--max-frames": "10",
       "--alloc-size": "1", "--top": "3", "--maps": "/dev/null", "-o": "/dev/null",
       "--output": "/dev/null", "--elf": "/dev/null", "--addr2line": "addr2line",
       "--backend": "addr2line", "--debug-dir": "/nonexistent", "--method": "fp",
       "--zlib": "9", "--lzma": "6", "--compress": "zlib", "--preload": "/dev/null",
       "--flush-interval": "0.5",
       "--block-size": "65536",
       "--max-nodes": "1000", "--max-live": "1000", "--max-expansion": "0",
       "--thread": "all", "--max-warnings": "0"}

def main(argv):
    if len(argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    btpack, comp = os.path.abspath(argv[1]), os.path.abspath(argv[2])
    cwd = tempfile.mkdtemp(prefix="btpack-completion-")
    atexit.register(shutil.rmtree, cwd, True)
    for name in ("sample.cbf", "sample.json", "other.txt"):
        open(os.path.join(cwd, name), "w").close()
    env = dict(os.environ, BTPACK_COMPLETION=comp, BTPACK_BASH_COMPLETION=BASH_COMPLETION)
    if os.path.exists(BASH_COMPLETION):
        print("with bash-completion's %s" % BASH_COMPLETION)
    else:
        print("without bash-completion (not installed): the script's own fallback")

    def complete(*words):
        p = subprocess.run(["bash", "-c", DRIVER, "bash", btpack] + list(words), cwd=cwd,
                           env=env, capture_output=True, text=True)
        check(p.returncode == 0 and not p.stderr, "completing %r: exit %d, %s"
              % (words, p.returncode, p.stderr.strip()))
        return sorted(set(l for l in p.stdout.split("\n") if l))

    def expect(words, want):
        got = complete(*words)
        check(got == sorted(want), "btpack %s<TAB>: got %s, want %s"
              % (" ".join(words), got, sorted(want)))

    top = helptext.run(btpack, [])
    commands = helptext.section(top, "commands")
    expect([""], commands + ["--help", "--version"])
    expect(["con"], [c for c in commands if c.startswith("con")])

    # Every command, or every subcommand of a command that has them
    # (`btpack heap record`): its options are offered, and only those.
    targets = []
    for cmd in commands:
        subs = helptext.subcommands(helptext.run(btpack, [cmd]), cmd)
        if subs:
            expect([cmd, ""], subs + ["--help"])
        targets += [[cmd, sub] for sub in subs] or [[cmd]]
    for words in targets:
        name = " ".join(words)
        help_text = helptext.run(btpack, words)
        offered = complete(*(words + ["-"]))
        listed = helptext.options(help_text)
        for opt in listed:
            check(opt in offered, "btpack %s -<TAB> does not offer %s" % (name, opt))
        for opt in offered:
            # An option the command does not know is a usage error (exit 2);
            # one it knows, followed by --help, prints the help (exit 0).
            # (a value the usage line lists for it, else a usual one)
            choices = helptext.usage_choices(help_text, opt)
            value = choices[:1] or ([ARG[opt]] if opt in ARG else [])
            args = [opt] + value + ["--help"]
            p = subprocess.run([btpack] + words + args, stdin=subprocess.DEVNULL,
                               capture_output=True, text=True)
            check(p.returncode == 0, "btpack %s -<TAB> offers %s, which `btpack %s %s` "
                  "rejects: %s" % (name, opt, name, " ".join(args), p.stderr.strip()))

    formats = helptext.section(top, "formats")
    # What --from offers each command can read; --to what convert writes.
    for cmd, opt, fixed in (("convert", "--from", ["--to", "json"]),
                            ("convert", "--to", ["--from", "hex"]),
                            ("stats", "--from", []), ("dump", "--from", []),
                            ("symbolize", "--from", []), ("symbolize", "--to", [])):
        if cmd not in commands:
            continue
        offered = complete(cmd, opt, "")
        check(offered, "btpack %s %s <TAB> offers nothing" % (cmd, opt))
        for fmt in offered:
            check(fmt in formats or fmt in helptext.usage_choices(helptext.run(btpack, [cmd]), opt),
                  "btpack %s %s <TAB> offers %s, not a format" % (cmd, opt, fmt))
            p = subprocess.run([btpack, cmd, opt, fmt] + fixed, stdin=subprocess.DEVNULL,
                               capture_output=True)
            check(p.returncode != 2, "btpack %s %s <TAB> offers %s, a usage error: %s"
                  % (cmd, opt, fmt, p.stderr.decode(errors="replace").strip()))
    if "dump" in commands:
        expect(["dump", "--from", ""], ["hex", "b64", "cbf", "cif"])
    expect(["convert", "--from", "lws"], [f for f in formats if f.startswith("lws")])
    expect(["convert", "--word-bits", ""], ["16", "32", "64"])
    if os.path.exists(BASH_COMPLETION):  # its _init_completion -s splits --opt=value
        expect(["convert", "--to=lws"], [f for f in formats if f.startswith("lws")])
    expect(["convert", "-o", "sam"], ["sample.cbf", "sample.json"])
    expect(["convert", "--from", "cbf", "--to", "json", "sample.c"], ["sample.cbf"])

    finish()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
