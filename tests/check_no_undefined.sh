#!/bin/sh
# usage: check_no_undefined.sh NM ARCHIVE_OR_OBJECT PREFIX [ALLOWED...]
# Passes when the object file defines global functions starting with PREFIX
# (so an empty or wrong file cannot pass) and needs no symbol from anywhere
# else (an archive's members may use each other's): nothing from libc but
# the ALLOWED names (e.g. memcpy memset). Only the runtimes of instrumented
# builds (sanitizers, coverage) and the linker-made _GLOBAL_OFFSET_TABLE_
# are allowed besides, as the compiler puts those in, not the code.
set -u
nm=$1 obj=$2 prefix=$3
shift 3
defined=$("$nm" -g --defined-only "$obj" | awk -v p="$prefix" '$2 == "T" && index($3, p) == 1' | wc -l)
if [ "$defined" -eq 0 ]; then
    echo "FAIL: $obj defines no $prefix* functions"
    exit 1
fi
own=$("$nm" -g --defined-only "$obj" | awk 'NF == 3 { print $3 }' | sort -u)
undefined=$("$nm" -u "$obj" | awk 'NF == 2 && $1 == "U" { print $2 }' | sort -u |
    grep -v -E '^(__asan_|__ubsan_|__sanitizer_|__tsan_|__msan_|__gcov_|__llvm_|_GLOBAL_OFFSET_TABLE_$)')
missing=
for sym in $undefined; do
    case " $* " in *" $sym "*) continue ;; esac
    if ! printf '%s\n' "$own" | grep -qx -- "$sym"; then
        missing="$missing $sym"
    fi
done
if [ -n "$missing" ]; then
    echo "FAIL: $obj needs symbols from elsewhere:"
    printf '%s\n' $missing
    exit 1
fi
echo "ok: $defined $prefix* functions, nothing from elsewhere${1:+ but $*}"
