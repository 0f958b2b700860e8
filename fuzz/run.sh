#!/bin/bash
# Build the fuzz targets with clang + libFuzzer (ASan+UBSan) and run each
# one for SECONDS seconds, one after the other, on its seed corpus and
# regression inputs. Fails if any target crashes, leaks, times out or trips
# a sanitizer. Prints per target the executions and coverage (cov/ft from
# libFuzzer's final status line).
#
#   fuzz/run.sh SECONDS [TARGET...]
#
# Environment: FUZZ_BUILD_DIR (default build-fuzz), FUZZ_WORK_DIR (default
# fuzz/corpus-work: the corpus each fuzzer grows, git-ignored), FUZZ_NICE
# (default 10). Crash inputs are left in $FUZZ_BUILD_DIR/artifacts/TARGET/;
# add them to fuzz/regressions/TARGET/ with the fix.
set -euo pipefail

if [ $# -lt 1 ] || ! [[ $1 =~ ^[0-9]+$ ]] || [ "$1" -lt 1 ]; then
    echo "usage: $0 SECONDS [TARGET...]" >&2
    exit 2
fi
secs=$1
shift
root=$(cd "$(dirname "$0")/.." && pwd)
build=${FUZZ_BUILD_DIR:-$root/build-fuzz}
work=${FUZZ_WORK_DIR:-$root/fuzz/corpus-work}
nice_level=${FUZZ_NICE:-10}

have_libfuzzer() {
    command -v clang >/dev/null 2>&1 || return 1
    local tmp
    tmp=$(mktemp -d)
    printf 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n)\n{ (void)d; (void)n; return 0; }\n' >"$tmp/t.c"
    clang -fsanitize=fuzzer,address,undefined "$tmp/t.c" -o "$tmp/t" >/dev/null 2>&1
    local rc=$?
    rm -rf "$tmp"
    return $rc
}

if ! have_libfuzzer || ! command -v meson >/dev/null || ! command -v ninja >/dev/null; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        echo "== installing clang, libFuzzer runtime, meson, ninja"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
            clang libclang-rt-14-dev meson ninja-build pkg-config >/dev/null
    fi
    if ! have_libfuzzer; then
        echo "error: clang with libFuzzer (-fsanitize=fuzzer) is needed;" \
             "on Debian 12: apt-get install clang libclang-rt-14-dev" >&2
        exit 1
    fi
fi

if [ ! -f "$build/build.ninja" ]; then
    CC=clang meson setup "$build" "$root" -Dfuzzing_engine=libfuzzer \
        -Ddefault_library=static -Db_lundef=false -Dtests=disabled \
        --buildtype=debugoptimized >/dev/null
fi
nice -n "$nice_level" ninja -C "$build" -j2 >/dev/null

targets=()
corpora=()
while read -r name corpus; do
    [ -n "$name" ] || continue
    if [ $# -gt 0 ]; then
        want=0
        for t in "$@"; do [ "$t" = "$name" ] && want=1; done
        [ $want = 1 ] || continue
    fi
    targets+=("$name")
    corpora+=("$corpus")
done <"$build/fuzz/targets.txt"
if [ ${#targets[@]} -eq 0 ]; then
    echo "error: no such target: $*" >&2
    exit 2
fi

mkdir -p "$build/logs"
failed=0
summary=()
for i in "${!targets[@]}"; do
    name=${targets[$i]}
    dirs=("$work/$name")
    mkdir -p "$work/$name" "$build/artifacts/$name"
    [ -d "$root/fuzz/corpus/${corpora[$i]}" ] && dirs+=("$root/fuzz/corpus/${corpora[$i]}")
    [ -d "$root/fuzz/regressions/$name" ] && dirs+=("$root/fuzz/regressions/$name")
    log=$build/logs/$name.log
    echo "== $name: ${secs}s"
    rc=0
    nice -n "$nice_level" "$build/fuzz/fuzz_$name" \
        -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$build/artifacts/$name/" "${dirs[@]}" >"$log" 2>&1 || rc=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    last=$(grep -E '^#[0-9]+.*cov: ' "$log" | tail -n 1 || true)
    cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
    ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
    corp=$(sed -n 's/.* corp: \([0-9]*\).*/\1/p' <<<"$last")
    result=ok
    if [ $rc -ne 0 ] || grep -qE 'ERROR: (Address|Leak|Undefined)Sanitizer|runtime error:|==ERROR:|deadly signal|Test unit written' "$log"; then
        result="FAILED (exit $rc, see $log)"
        failed=1
        grep -E 'ERROR|runtime error|check failed|SUMMARY|Test unit written' "$log" | head -n 20 || true
    fi
    summary+=("$(printf '%-22s %6ss  execs %-10s cov %-6s ft %-6s corpus %-6s %s' \
        "$name" "$secs" "${execs:-?}" "${cov:-?}" "${ft:-?}" "${corp:-?}" "$result")")
done

echo "== summary"
printf '%s\n' "${summary[@]}"
exit $failed
