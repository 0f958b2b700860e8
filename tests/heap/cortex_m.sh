#!/bin/sh
# The freestanding metadata API cross-compiled for a Cortex-M4 (gcc-arm-none-eabi):
# it must build with -ffreestanding, need nothing from outside but
# memcpy/memset and libgcc's helpers (__aeabi_*), and keep every function's
# stack frame within the bound spec/heap.md documents. Prints the frames.
# usage: cortex_m.sh SOURCE_ROOT BUILD_LIB_DIR
# Exit 77 (skipped) without arm-none-eabi-gcc.
set -eu
src=$1 cfg=$2
cc=$(command -v arm-none-eabi-gcc || true)
if [ -z "$cc" ]; then
    echo "SKIP: no arm-none-eabi-gcc (apt-get install gcc-arm-none-eabi)"
    exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
objs=
for f in heap/heap_meta codec/cbf_encode codec/cbf_decode codec/lws_encode codec/lws_decode \
         codec/lws_text codec/base64; do
    o=$tmp/$(basename "$f").o
    "$cc" -mcpu=cortex-m4 -mthumb -Os -ffreestanding -fstack-usage -Wall -Wextra -Werror \
        -I"$src/include" -I"$src/lib" -I"$cfg" -c "$src/lib/$f.c" -o "$o"
    objs="$objs $o"
done
arm-none-eabi-ld -r -o "$tmp/all.o" $objs
undef=$(arm-none-eabi-nm -u "$tmp/all.o" | awk '{print $2}' | grep -v -x -e memcpy -e memset | grep -v '^__aeabi_' || true)
pass=0 fail=0
if [ -n "$undef" ]; then
    echo "FAIL: needs from elsewhere: $undef"; fail=$((fail + 1))
else
    pass=$((pass + 1))
fi
echo "stack frames (bytes), Cortex-M4, gcc -Os:"
cat "$tmp"/*.su | awk -F'\t' '{n = split($1, p, ":"); printf "  %-28s %5d %s\n", p[n], $2, $3}' | sort -k2 -n
# No single frame above 1 KiB (the lws dump's, ~900 bytes, is the largest).
big=$(cat "$tmp"/*.su | awk -F'\t' '$2 > 1024 || $3 ~ /dynamic$/ {print $1, $2, $3}')
if [ -n "$big" ]; then
    echo "FAIL: frames over 1 KiB or unbounded: $big"; fail=$((fail + 1))
else
    pass=$((pass + 1))
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
