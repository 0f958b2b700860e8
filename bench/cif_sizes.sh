#!/bin/bash
# Image map sizes of real processes: Swift's CIF (as Swift's runtime
# captures and encodes the map of another process: ImageMap.capture(using:
# forProcess:), build IDs included), btpack's minimal CIF of the same map,
# the /proc/PID/maps text, and that text under `xz -9e`.
#
#   bench/cif_sizes.sh BUILD_DIR    (needs swiftc: BUILD_DIR/tests/swift/probe)
#
# Processes: this machine's python3 and gdb (each started idle for the
# measurement) and a Swift program (the probe itself, waiting on stdin).
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR}
probe=$build/tests/swift/probe
tool=$build/tests/swift/cif_tool
[ -x "$probe" ] || { echo "no $probe (built when swiftc is found)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$tmp"' EXIT

python3 -c 'import time; time.sleep(60)' & py=$!
sleep 60 | gdb -q -nx >/dev/null 2>&1 & gdb_pid=$(pgrep -n -x gdb || true)
sleep 60 | "$probe" decode-json >/dev/null & swift=$!
sleep 2
gdb_pid=$(pgrep -n -x gdb)

printf '%-8s %6s %10s %10s %11s %10s %12s %9s\n' process images "CIF Swift" "CIF btpack" \
    "(no IDs)" "maps text" "maps xz -9e" "CIF/xz"
for entry in "python3:$py" "gdb:$gdb_pid" "swift:$swift"; do
    name=${entry%%:*} pid=${entry#*:}
    cp "/proc/$pid/maps" "$tmp/maps"
    "$probe" imagemap "$pid" >"$tmp/swift.txt"
    images=$(grep -c '^image ' "$tmp/swift.txt")
    hex=$(sed -n 's/^cif //p' "$tmp/swift.txt")
    mine=$(echo "$hex" | "$tool" reencode 0)
    noid=$(echo "$hex" | "$tool" reencode 0 no-build-ids)
    swift_bytes=$(( ${#hex} / 2 ))
    btpack_bytes=$(( ${#mine} / 2 ))
    text=$(wc -c <"$tmp/maps")
    xz=$(xz -9e -c "$tmp/maps" | wc -c)
    printf '%-8s %6d %10d %10d %11d %10d %12d %9.2f\n' "$name" "$images" "$swift_bytes" \
        "$btpack_bytes" "$(( ${#noid} / 2 ))" "$text" "$xz" "$(echo "$btpack_bytes / $xz" | bc -l)"
done
