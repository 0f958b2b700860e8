#!/bin/sh
# usage: check_no_undefined.sh NM ARCHIVE_OR_OBJECT PREFIX
# Passes when the object file defines global functions starting with PREFIX
# (so an empty or wrong file cannot pass) and has no undefined symbols at
# all: nothing from libc or anywhere else. Only the runtimes of
# instrumented builds (sanitizers, coverage) and the linker-made
# _GLOBAL_OFFSET_TABLE_ are allowed, as the compiler puts those in, not
# the code.
set -u
nm=$1 obj=$2 prefix=$3
defined=$("$nm" -g --defined-only "$obj" | awk -v p="$prefix" '$2 == "T" && index($3, p) == 1' | wc -l)
if [ "$defined" -eq 0 ]; then
    echo "FAIL: $obj defines no $prefix* functions"
    exit 1
fi
undefined=$("$nm" -u "$obj" | awk 'NF == 2 && $1 == "U" { print $2 }' |
    grep -v -E '^(__asan_|__ubsan_|__sanitizer_|__tsan_|__msan_|__gcov_|__llvm_|_GLOBAL_OFFSET_TABLE_$)')
if [ -n "$undefined" ]; then
    echo "FAIL: $obj needs symbols from elsewhere:"
    echo "$undefined"
    exit 1
fi
echo "ok: $defined $prefix* functions, no undefined symbols"
