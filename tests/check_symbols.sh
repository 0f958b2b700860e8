#!/bin/sh
# Every dynamic symbol libbtpack.so exports starts with btp_.
# usage: check_symbols.sh LIBBTPACK_SO
set -eu
lib=$1
syms=$(nm -D --defined-only "$lib" | awk 'NF == 3 && $2 ~ /^[TDBRVWiu]$/ { print $3 }')
count=$(printf '%s\n' "$syms" | grep -c . || true)
bad=$(printf '%s\n' "$syms" | grep -v '^btp_' | grep . || true)
if [ "$count" -eq 0 ]; then
    echo "no exported symbols found in $lib"
    echo "0 passed, 1 failed"
    exit 1
fi
if [ -n "$bad" ]; then
    echo "exported symbols without the btp_ prefix:"
    printf '%s\n' "$bad"
    echo "$(( count - $(printf '%s\n' "$bad" | wc -l) )) passed, $(printf '%s\n' "$bad" | wc -l) failed"
    exit 1
fi
echo "$count passed, 0 failed"
