#!/bin/sh
# Every default_library value configures, tests included: the two this
# build is not (.ci/run also builds and tests them: scripts/library_kinds.sh).
# usage: default_library.sh MESON SOURCE_ROOT THIS_BUILDS_DEFAULT_LIBRARY
set -eu
meson=$1
src=$2
this=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
kinds=
for kind in static shared both; do
    [ "$kind" != "$this" ] || continue
    kinds="$kinds $kind"
    # Both at once: configuring is mostly waiting for the compiler checks.
    { "$meson" setup "$tmp/$kind" "$src" -Ddefault_library="$kind" -Dtests=enabled \
        >"$tmp/$kind.log" 2>&1; echo $? >"$tmp/$kind.status"; } &
done
wait
pass=0 fail=0
for kind in $kinds; do
    if [ "$(cat "$tmp/$kind.status")" = 0 ]; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1))
        echo "meson setup -Ddefault_library=$kind fails:"
        tail -n 5 "$tmp/$kind.log"
    fi
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
