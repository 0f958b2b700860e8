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
    """Every option the help names: in its usage lines (`[--top N]`) and in
    the lines of its option lists, before the description (`  -o, --output
    OUT  write to OUT`, `  --word-bits N, --strict: as for convert`)."""
    out, usage = set(), False
    for line in text.splitlines():
        if line.startswith("usage:"):
            usage = True
        elif not line.strip():
            usage = False
        if not usage:
            if not line.lstrip().startswith("-"):
                continue
            line = re.split(r"(?<=\S)\s{2,}", line.strip())[0]
        out.update(w for w in re.split(r"[][ ,|:]+", line) if OPTION.match(w))
    return sorted(out)


def subcommands(text, cmd):
    """The subcommands a command's usage lines name (`btpack heap record ...`,
    `btpack heap report ...`): the word after the command when it is a plain
    lower-case word, not an option or operand."""
    out, usage = [], False
    for line in text.splitlines():
        if line.startswith("usage:"):
            usage = True
        elif not line.strip():
            usage = False
        if usage:
            m = re.search(r"\bbtpack %s ([a-z]+)\b(?!-)" % re.escape(cmd), line)
            if m and m.group(1) not in out:
                out.append(m.group(1))
    return out


def usage_choices(text, opt):
    """The values a usage line lists for opt: `[--to text|json|markup]`."""
    m = re.search(r"%s ([a-z0-9-]+(?:\|[a-z0-9-]+)+)" % re.escape(opt), text)
    return m.group(1).split("|") if m else []


def examples(text):
    """The example command lines: the indented lines after a line
    `example:`/`examples:` (or `example (...):`), up to a blank line, with a
    trailing `   (comment)` removed."""
    out, on, cont = [], False, ""
    for line in text.splitlines():
        if re.match(r"^examples?( \(.*\))?:$", line):
            on = True
        elif on and not line.strip():
            on = False
        elif on and line.startswith("  "):
            cont = join_continued(out, cont, re.sub(r"\s{2,}\(.*\)$", "", line.strip()))
    return out


def join_continued(out, cont, line):
    """Append a command line to out, joining lines that end in a backslash
    with the next; returns the part still waiting for its continuation."""
    if line.endswith("\\"):
        return cont + line[:-1]
    out.append((cont + line).strip())
    return ""
