#!/bin/sh
# usage: check_no_undefined.sh NM ARCHIVE_OR_OBJECT PREFIX [ALLOWED]
# Passes when the object file defines global functions starting with PREFIX
# (so an empty or wrong file cannot pass) and has no undefined symbols at
# all: nothing from libc or anywhere else, except the space-separated
# symbols in ALLOWED (e.g. "memcpy memset" for freestanding code). Only the runtimes of
# instrumented builds (sanitizers, coverage) and the linker-made
# _GLOBAL_OFFSET_TABLE_ are allowed, as the compiler puts those in, not
# the code.
set -u
nm=$1 obj=$2 prefix=$3 allowed=${4:-}
defined=$("$nm" -g --defined-only "$obj" | awk -v p="$prefix" '$2 == "T" && index($3, p) == 1' | wc -l)
if [ "$defined" -eq 0 ]; then
    echo "FAIL: $obj defines no $prefix* functions"
    exit 1
fi
# An archive's members may use each other: what one defines is not missing.
defs=$("$nm" -g --defined-only "$obj" | awk 'NF == 3 { print $3 }' | sort -u)
undefined=$("$nm" -u "$obj" | awk 'NF == 2 && $1 == "U" { print $2 }' | sort -u |
    { if [ -n "$defs" ]; then grep -v -x -F "$defs"; else cat; fi } |
    grep -v -E '^(__asan_|__ubsan_|__sanitizer_|__tsan_|__msan_|__gcov_|__llvm_|_GLOBAL_OFFSET_TABLE_$)' |
    grep -v -x -F -e _GLOBAL_OFFSET_TABLE_ $(for s in $allowed; do printf -- '-e %s ' "$s"; done))
if [ -n "$undefined" ]; then
    echo "FAIL: $obj needs symbols from elsewhere:"
    echo "$undefined"
    exit 1
fi
echo "ok: $defined $prefix* functions, no undefined symbols"
