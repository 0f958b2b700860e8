#!/usr/bin/env bash
# The ABI of libbtpack.so against the stored baseline abi/libbtpack.abi
# (libabigail's abidw/abidiff; Debian package abigail-tools).
#
#   bash scripts/abi.sh check  [LIBBTPACK_SO]   compare (the `abi` test runs this)
#   bash scripts/abi.sh update [LIBBTPACK_SO]   store LIBBTPACK_SO's ABI as the baseline
#   bash scripts/abi.sh dump LIB HEADERS_DIR OUT           the step of update
#   bash scripts/abi.sh classify BASELINE LIB HEADERS_DIR  the step of check
#
# LIBBTPACK_SO defaults to build/lib/libbtpack.so; it needs debug information
# (the default buildtype, debugoptimized, has it). Only the types the public
# headers (include/btpack/) declare are compared.
#
# check passes when nothing changed or when the library only grew (added
# functions or variables): that is compatible, and the report lists what to
# add to the baseline at the next release. It fails on anything else:
# a removed or changed function or variable, a changed type (a field added
# to, removed from or moved in a struct callers allocate, a changed
# enumerator value), which is what breaks programs built against the old
# library. After an intended change (before a release, or with a new soname)
# run `update` and commit abi/libbtpack.abi; abi/README.md says when.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
baseline=$root/abi/libbtpack.abi
headers=$root/include/btpack

need_tools() {
    if ! command -v abidw >/dev/null 2>&1 || ! command -v abidiff >/dev/null 2>&1; then
        echo "skip: abidw/abidiff not found (Debian: apt-get install abigail-tools)"
        exit 77
    fi
}

need_debug_info() {
    if ! readelf -S "$1" | grep -q '\.debug_info'; then
        echo "skip: $1 has no debug information (build with -g, e.g. buildtype=debugoptimized)"
        exit 77
    fi
}

# classify BASELINE LIB HEADERS: run abidiff and decide (BASELINE is abidw's
# XML, made with the headers already; libabigail 2.2 aborts when given
# --headers-dir1 for an XML file). Exit 0 when
# compatible (identical or additions only), 1 when the ABI broke, 2 when
# abidiff itself failed.
classify() {
    local old=$1 new=$2 hdrs=$3 report status=0 full
    local diff=(abidiff --headers-dir2 "$hdrs" --drop-private-types)
    report=$("${diff[@]}" "$old" "$new" 2>&1) || status=$?
    # abidiff's exit status is a bit set: 1 error, 2 usage error, 4 ABI
    # change, 8 incompatible ABI change (a removed symbol, ...).
    if ((status & 3)); then
        printf '%s\n' "$report"
        echo "abidiff failed (exit $status)"
        return 2
    fi
    # libabigail files a data member added at the end of a struct under
    # "harmless" and leaves it out. For a struct the caller allocates (every
    # options struct here) that is a break: an old program allocates the
    # old size and the library reads or writes past it. So look again with
    # the harmless changes shown (an added enumerator stays harmless).
    full=$("${diff[@]}" --harmless "$old" "$new" 2>&1) || true
    if printf '%s\n' "$full" | grep -qE 'type size changed|data member (insertion|deletion)|offset changed'; then
        printf '%s\n' "$full"
        echo "ABI BREAK: a type's layout changed (see above)"
        return 1
    fi
    if ((status == 0)); then
        echo "ABI unchanged"
        return 0
    fi
    printf '%s\n' "$report"
    if ((status & 8)); then
        echo "ABI BREAK: incompatible change (abidiff exit $status)"
        return 1
    fi
    # Exit 4 alone: a change abidiff leaves to us. Additions are fine; any
    # removed or changed function, variable or symbol in its summary lines is
    # a break (a changed type shows as a changed function using it).
    if printf '%s\n' "$report" | grep -E 'changes summary:' | grep -qE '[1-9][0-9]* (Removed|Changed)'; then
        echo "ABI BREAK: removed or changed interfaces (see above)"
        return 1
    fi
    echo "ABI grew compatibly (additions only); store it at the next release: bash scripts/abi.sh update"
    return 0
}

# dump LIB HEADERS OUT: LIB's ABI as abidw's XML, only the types HEADERS
# declare, without the paths of this machine (locations stay: libabigail
# needs them to tell public types from private ones).
dump() {
    abidw --no-corpus-path --no-comp-dir-path --type-id-style hash \
        --headers-dir "$2" --drop-private-types --drop-undefined-syms --out-file "$3" "$1"
}

cmd=${1:-}
case $cmd in
check | update)
    lib=${2:-$root/build/lib/libbtpack.so}
    need_tools
    [ -e "$lib" ] || { echo "$lib: not found (build first: ninja -C build)" >&2; exit 2; }
    need_debug_info "$lib"
    if [ "$cmd" = update ]; then
        dump "$lib" "$headers" "$baseline"
        echo "stored the ABI of $lib in ${baseline#"$root"/}"
        exit 0
    fi
    [ -e "$baseline" ] || { echo "no baseline ${baseline#"$root"/}: bash scripts/abi.sh update"; exit 1; }
    if classify "$baseline" "$lib" "$headers"; then
        echo "1 passed, 0 failed"
    else
        echo "0 passed, 1 failed"
        exit 1
    fi
    ;;
dump | classify)
    [ $# -eq 4 ] || { sed -n '2,22p' "$0"; exit 2; }
    need_tools
    "$cmd" "$2" "$3" "$4"
    ;;
*)
    sed -n '2,22p' "$0"
    exit 2
    ;;
esac
