"""Reading `btpack [COMMAND] --help`: its sections, its options and its
examples, as the packaging tests need them."""
import re
import subprocess

OPTION = re.compile(r"^--?[A-Za-z][A-Za-z0-9-]*$")


def run(btpack, args):
    """The help text of `btpack ARGS --help` (it must succeed)."""
    p = subprocess.run([btpack] + list(args) + ["--help"], capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit("`btpack %s --help` exited %d: %s" % (" ".join(args), p.returncode, p.stderr))
    return p.stdout


def section(text, title):
    """First words of the lines of section `TITLE:` (to the next blank line)."""
    out, on = [], False
    for line in text.splitlines():
        if line == title + ":":
            on = True
        elif on and not line.strip():
            break
        elif on:
            out.append(line.split()[0])
    return out


def options(text):
    """Every option the help names: in its usage lines (`[--top N]`) and at
    the start of the lines of its option lists (`  -o, --output OUT`)."""
    out, usage = set(), False
    for line in text.splitlines():
        if line.startswith("usage:"):
            usage = True
        elif not line.strip():
            usage = False
        words = [w for w in re.split(r"[][ ,|]+", line) if w]
        if not usage:
            words = words[:3] if words and words[0].startswith("-") else []
        out.update(w for w in words if OPTION.match(w))
    return sorted(out)


def examples(text):
    """The example command lines: the indented lines after a line
    `example:`/`examples:` (or `example (...):`), up to a blank line, with a
    trailing `   (comment)` removed."""
    out, on = [], False
    for line in text.splitlines():
        if re.match(r"^examples?( \(.*\))?:$", line):
            on = True
        elif on and not line.strip():
            on = False
        elif on and line.startswith("  "):
            out.append(re.sub(r"\s{2,}\(.*\)$", "", line.strip()))
    return out
