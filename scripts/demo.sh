#!/usr/bin/env bash
# The main job on bundled sample data: a real allocation-trace file (110,196
# backtraces of a 32-bit SQLite shell) turned into CBF, JSON and a trace
# log, their sizes printed with what each holds and is for, and a
# round-trip check that every backtrace comes back unchanged.
# Installs missing build tools with apt-get (see deps.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
btpack_ensure_deps

build=${BTPACK_BUILD_DIR:-build}
[ -f "$build/build.ninja" ] || meson setup "$build" >/dev/null
ninja -C "$build" -j"${BTPACK_JOBS:-$(nproc)}" >/dev/null
btpack=$build/tools/btpack
in=tests/data/corpus/sqlite3_i386.trace.xz
out=$build/demo
mkdir -p "$out"

echo "== input: $in"
"$btpack" stats --from trace "$in"

echo
echo "== the same records in each format"
maps=tests/data/corpus/sqlite3_i386.maps
"$btpack" convert --from trace --to cbf -o "$out/sqlite3_i386.cbf" "$in"
"$btpack" convert --from trace --to json -o "$out/sqlite3_i386.jsonl" "$in"
"$btpack" convert --from trace --to log --maps "$maps" -o "$out/sqlite3_i386.btlog" "$in"
xz -dc "$in" >"$out/sqlite3_i386.trace"
size() { wc -c <"$1" | tr -d ' '; }
row() { printf '%-28s %11s  %-24s %s\n' "$@"; }
row "format" "bytes" "holds" "pick it for"
row "trace records (text)" "$(size "$out/sqlite3_i386.trace")" "everything" \
    "reading by eye"
row "the same, xz (as shipped)" "$(size "$in")" "everything" \
    "archives: decompressed whole before use"
row "JSON Lines" "$(size "$out/sqlite3_i386.jsonl")" "stacks, sizes" \
    "other tools (jq, Python)"
row "CBF, one stream per stack" "$(size "$out/sqlite3_i386.cbf")" "stacks" \
    "one backtrace on its own (crash, Swift)"
row "btpack trace log (.btlog)" "$(size "$out/sqlite3_i386.btlog")" "everything, + maps" \
    "many backtraces: recording, profiling"
echo "CBF stores each backtrace alone (no sharing between them), so it is the"
echo "format for a single backtrace; the trace log shares the frames of all of them"
echo "in a call tree, keeps sizes, pointers, frees and the process maps, and can be"
echo "read while written and after a crash: for many backtraces, use the log."

echo
echo "== first backtrace, disassembled (btpack dump)"
# (`|| true`: head closes the pipe after one line, which stops convert early.)
{ "$btpack" convert --from cbf --to hex "$out/sqlite3_i386.cbf" || true; } | head -n 1 |
    "$btpack" dump

echo
echo "== round trip: CBF back to addresses, compared with the m records of the input"
awk '$1 == "m" { s = ""; for (i = 4; i <= NF; i++) s = s (i > 4 ? " " : "") $i; print s }' \
    "$out/sqlite3_i386.trace" >"$out/expected.addrs"
"$btpack" convert --from cbf --to addrs -o "$out/roundtrip.addrs" "$out/sqlite3_i386.cbf"
if cmp -s "$out/expected.addrs" "$out/roundtrip.addrs"; then
    echo "OK: $(wc -l <"$out/roundtrip.addrs" | tr -d ' ') backtraces identical after trace -> CBF -> addrs"
else
    echo "MISMATCH: see $out/expected.addrs and $out/roundtrip.addrs" >&2
    exit 1
fi
