#!/usr/bin/env bash
# Build btpack with --werror and run the whole test suite (`meson test`).
#
#   bash scripts/test.sh              build/ : the normal build
#   bash scripts/test.sh --sanitize   build-asan/ : ASan + UBSan
#   (or BTPACK_SANITIZE=1)
#
# BTPACK_BUILD_DIR overrides the build directory, BTPACK_JOBS the build
# parallelism. Installs missing build tools with apt-get (see deps.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh

sanitize=${BTPACK_SANITIZE:-0}
for arg in "$@"; do
    case $arg in
    --sanitize) sanitize=1 ;;
    -h | --help) sed -n '2,9p' "$0"; exit 0 ;;
    *) echo "scripts/test.sh: unknown argument '$arg'" >&2; exit 2 ;;
    esac
done

# The whole suite includes the heap map rendered in a real browser: install
# Chromium too (BTPACK_DEPS_CHROMIUM=0 leaves it out; that test then skips).
BTPACK_DEPS_CHROMIUM=${BTPACK_DEPS_CHROMIUM:-1} btpack_ensure_deps

opts=(--werror)
if [ "$sanitize" = 1 ]; then
    build=${BTPACK_BUILD_DIR:-build-asan}
    opts+=(-Db_sanitize=address,undefined -Db_lundef=false)
    # Any sanitizer report fails the test that triggered it.
    export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}
    export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:abort_on_error=1:print_stacktrace=1}
else
    build=${BTPACK_BUILD_DIR:-build}
    # Explicit, so reconfiguring a directory once set up otherwise resets them.
    opts+=(-Db_sanitize=none -Db_lundef=true)
fi

btpack_setup "$build" "${opts[@]}"
ninja -C "$build" -j"${BTPACK_JOBS:-$(nproc)}"
echo "== meson test ($build) =="
meson test -C "$build" --print-errorlogs
