#!/bin/sh
# `meson install --destdir` puts the headers, the library (shared, static or
# both, as default_library says), btpack.pc, the btpack tool, its man pages,
# its bash completion, the licence and the release notes in place, and the
# installed tool runs.
# usage: check_install.sh MESON BUILD_DIR DEFAULT_LIBRARY
set -eu
meson=$1
build=$2
kind=$3
dest=$(mktemp -d)
trap 'rm -rf "$dest"' EXIT
"$meson" install -C "$build" --no-rebuild --destdir "$dest" >"$dest.log" 2>&1 || {
    cat "$dest.log"; rm -f "$dest.log"; echo "0 passed, 1 failed"; exit 1; }
rm -f "$dest.log"
pass=0
fail=0
want() {
    found=$(find "$dest" -path "*$1" | head -n 1)
    if [ -n "$found" ]; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1))
        echo "not installed: $1"
    fi
}
want /include/btpack/btpack.h
want /include/btpack/cbf.h
want /include/btpack/base64.h
[ "$kind" = static ] || want '/libbtpack.so.0'
[ "$kind" = shared ] || want '/libbtpack.a'
want /include/btpack/heap.h
# the heap tracer (not built under sanitizers)
if [ -f "$build/preload/libbtpack-heap.so" ]; then
    want /libbtpack-heap.so
fi
want /pkgconfig/btpack.pc
want /bin/btpack
want /share/man/man1/btpack.1
want /share/man/man3/btpack.3
want /share/bash-completion/completions/btpack
want /share/doc/btpack/LICENSE
want /share/doc/btpack/NEWS
tool=$(find "$dest" -path '*/bin/btpack' | head -n 1)
lib=$(dirname "$(find "$dest" -name 'libbtpack.*' | head -n 1)")
if [ -n "$tool" ] && LD_LIBRARY_PATH="$lib" "$tool" --version | grep -q '^btpack '; then
    pass=$((pass + 1))
else
    fail=$((fail + 1))
    echo "installed btpack does not run"
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
