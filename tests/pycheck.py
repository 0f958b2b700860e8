"""The CHECK helper of the Python tests (what tests/check.h is to the C
tests): count, print what failed, finish with "N passed, N failed" and an
exit status."""
import sys

passed = failed = 0


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("FAIL:", what, file=sys.stderr)


def finish():
    print("%d passed, %d failed" % (passed, failed))
    sys.exit(1 if failed else 0)
