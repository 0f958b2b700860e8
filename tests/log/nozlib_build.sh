#!/bin/sh
# Configure a second build of the project with -Dzlib=disabled, build it and
# run its 'log' test suite there: uncompressed logs must round-trip and the
# stored compressed log must be refused with BTP_E_NO_ZLIB.
# usage: nozlib_build.sh SOURCE_DIR BUILD_DIR
set -eu
if [ "${BTP_NESTED_NOZLIB:-}" = 1 ]; then
    echo "skip: this is the nested no-zlib build itself"
    exit 77
fi
if ! command -v meson >/dev/null 2>&1 || ! command -v ninja >/dev/null 2>&1; then
    echo "skip: meson or ninja not found, cannot configure a second build"
    exit 77
fi
src=$1
dir=$2/nozlib-build
if [ ! -f "$dir/build.ninja" ]; then
    # Only what the log suite needs: no fuzz targets, no benchmarks.
    meson setup "$dir" "$src" -Dzlib=disabled -Dfuzz=disabled -Dbench=disabled --werror \
        >"$2/nozlib-setup.log" 2>&1 ||
        { cat "$2/nozlib-setup.log"; exit 1; }
fi
# A build configured before the sources' meson.build files changed must
# regenerate first: the targets below are read from its introspection data.
# (liblzma stays: the tool reads the .xz corpora with it, and the log suite
# checks LZMA2 logs still read in a build without zlib.)
meson configure "$dir" -Dlzma=auto >/dev/null
ninja -C "$dir" build.ninja >/dev/null
grep -q '^#define BTP_HAVE_ZLIB 0' "$dir/lib/btp_config.h" || { echo "zlib not disabled"; exit 1; }
# Build only what the log suite runs: the tool and the programs of tests/log.
targets=$(meson introspect "$dir" --targets | python3 -c '
import json, os, sys
for t in json.load(sys.stdin):
    d = t["defined_in"].replace("\\", "/")
    if t["type"] == "executable" and (d.endswith("tests/log/meson.build") or t["name"] == "btpack"):
        for f in t["filename"]:
            print(os.path.relpath(f, sys.argv[1]))' "$dir")
# shellcheck disable=SC2086
ninja -C "$dir" -j2 $targets >/dev/null
BTP_NESTED_NOZLIB=1 meson test -C "$dir" --suite log --no-rebuild --print-errorlogs
