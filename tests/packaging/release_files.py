"""The files a packager looks for first: LICENSE holds the licence
meson.build declares, NEWS has an entry for the version being built.

usage: release_files.py SOURCE_ROOT VERSION LICENSE
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from pycheck import check, finish  # noqa: E402

# The first line of each licence's usual text, by SPDX name.
LICENCE_TITLES = {"MIT": "MIT License"}


def main(argv):
    if len(argv) != 4:
        sys.stderr.write(__doc__)
        return 2
    root, version, licence = argv[1:]
    def read(name):
        try:
            with open(os.path.join(root, name), encoding="utf-8") as f:
                return f.read()
        except OSError as e:
            check(False, "%s: %s" % (name, e.strerror))
            return None

    text = read("LICENSE")
    if text is not None:
        title = LICENCE_TITLES.get(licence)
        check(title is not None, "meson.build declares licence %r; LICENSE cannot be checked" % licence)
        check(title is not None and text.startswith(title + "\n"),
              "LICENSE does not start with %r" % title)
        check(re.search(r"^Copyright \(c\) \d{4}(-\d{4})? the btpack authors$", text, re.M),
              "LICENSE has no line `Copyright (c) YEAR the btpack authors`")
        check("THE SOFTWARE IS PROVIDED \"AS IS\"" in text, "LICENSE lacks the warranty disclaimer")
    news = read("NEWS")
    if news is not None:
        check(re.search(r"^Version %s \(" % re.escape(version), news, re.M),
              "NEWS has no entry `Version %s (date or unreleased)` for the version built" % version)
    finish()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
