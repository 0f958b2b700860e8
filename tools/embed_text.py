#!/usr/bin/env python3
"""Embed a text file in C: embed_text.py IN OUT SYMBOL -> const char SYMBOL[]."""
import sys

src, dst, sym = sys.argv[1:4]
data = open(src, encoding="utf-8").read()
with open(dst, "w", encoding="utf-8") as f:
    f.write("/* Generated from %s by tools/embed_text.py; do not edit. */\n" % src.split("/")[-1])
    f.write("extern const char %s[];\nconst char %s[] =\n" % (sym, sym))
    for line in data.splitlines(True):
        esc = line.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
        f.write('    "%s"\n' % esc)
    f.write("    ;\n")
