#!/usr/bin/env bash
# btpack heap record vs heaptrack 1.4 on the same workloads, in one run:
# wall time (untraced, btpack with the default capture, btpack with frame
# pointers, heaptrack), trace file size, peak RSS of the traced process,
# report time (btpack heap report vs heaptrack_print), allocations
# recorded, peak heap and leaked bytes by each tool. btpack_na is
# btpack heap record --no-addresses (synthetic addresses: na_bytes, its
# log, against heaptrack's in na/ht).
#
#   bash bench/heap/compare_heaptrack.sh BUILD_DIR [OUT_DIR]
#
# Needs: heaptrack (apt-get install heaptrack), sqlite3, python3, xz-utils,
# gcc. Use a quiet machine: both tools' overheads are timed. Each command
# runs REPS times (default 3, at least 3), interleaved, and the median is
# kept. python3 is /usr/bin/python3 itself: a wrapper script that execs it
# (pyenv's) would be what is traced (neither tool follows an exec).
# btpack_fp is btpack with BTPACK_STACKTRACE_METHOD=fp: the tracer's own
# cost around a cheap capture (Debian's libraries have no frame pointers,
# so its stacks are short; it is not a default). Last, log_anatomy (built
# in BUILD_DIR/bench with zlib) on each btpack log: see README.md here.
set -euo pipefail
build=$(cd "${1:?build dir}" && pwd)
out=${2:-$(mktemp -d /tmp/btpack-heapbench-XXXXXX)}
reps=${REPS:-3}
[ "$reps" -ge 3 ] || { echo "REPS must be at least 3 (a median of fewer is not one)" >&2; exit 2; }
mkdir -p "$out"
cd "$out"
btpack=$build/tools/btpack
export BTPACK_HEAP_PRELOAD=$build/preload/libbtpack-heap.so

# ---- workloads (inputs already in OUT_DIR are kept, so runs compare) ----
[ -s sqlite.sql ] && [ -s alloc.py ] && [ -s big.c ] && [ -s xz.in ] || {
python3 - <<'PY'
import random
random.seed(1)
with open("sqlite.sql", "w") as f:
    f.write("CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, v REAL);\nBEGIN;\n")
    for i in range(50000):
        f.write("INSERT INTO t(name, v) VALUES('name%d-%s', %f);\n" % (i, "x" * (i % 40), random.random()))
    f.write("COMMIT;\nCREATE INDEX ti ON t(name);\n")
    for i in range(200):
        f.write("SELECT count(*), avg(v) FROM t WHERE name LIKE 'name%d%%';\n" % i)
with open("alloc.py", "w") as f:
    f.write("""
d = {}
for r in range(6):
    objs = [dict(a=i, b=str(i) * 3, c=[i, i + 1]) for i in range(60000)]
    for i, o in enumerate(objs):
        d[(r, i % 5000)] = o['b']
    del objs
print(len(d))
""")
# a large C file: many functions
with open("big.c", "w") as f:
    for i in range(300):
        f.write("int f%d(int *a, int n) { int s = 0; for (int i = 0; i < n; i++) "
                "{ s += a[i] * %d; if (s > %d) s ^= a[(i * 7) %% n]; } return s; }\n" % (i, i, i * 13))
PY
head -c 6000000 /dev/urandom | base64 > xz.in   # ~8 MB, partly compressible
}
cc1=$(gcc -print-prog-name=cc1)
py=/usr/bin/python3
# A workload is ENV=VALUE words (set for every run of it), then the command.
declare -A CMD=(
  [sqlite3]="sqlite3 :memory: -init sqlite.sql .quit"
  [python3]="$py alloc.py"
  [python3-malloc]="PYTHONMALLOC=malloc $py alloc.py"
  [xz]="xz -9 -T1 -c -k xz.in"
  [cc1]="$cc1 -quiet -O2 big.c -o big.s"
)
order=(sqlite3 python3 python3-malloc xz cc1)

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# run LABEL CMD...: wall seconds and max RSS (KiB) of one run
timed() { /usr/bin/time -f "%e %M" -o time.txt "$@" >/dev/null 2>>stderr.txt </dev/null; cat time.txt; }

printf '%-14s %7s %8s %7s %7s %8s %7s %7s %7s %7s %10s %10s %10s %6s %6s %8s %8s %7s %7s\n' workload base_s btpack_s bt_fp_s bt_na_s htrack_s bt_ovh fp_ovh na_ovh ht_ovh bt_bytes na_bytes ht_bytes bt/ht na/ht bt_rssK ht_rssK bt_rep ht_prt
for w in "${order[@]}"; do
  read -r -a words <<<"${CMD[$w]}"
  envs=(); cmd=()
  for x in "${words[@]}"; do
    if [ ${#cmd[@]} -eq 0 ] && [[ $x == *=* ]]; then envs+=("$x"); else cmd+=("$x"); fi
  done
  base=(); bt=(); fp=(); na=(); ht=(); btrss=(); htrss=()
  for ((i = 0; i < reps; i++)); do
    read -r t m < <(timed env "${envs[@]}" "${cmd[@]}"); base+=("$t")
    rm -f "$w.btlog"
    read -r t m < <(timed env "${envs[@]}" "$btpack" heap record -o "$w.btlog" -- "${cmd[@]}"); bt+=("$t"); btrss+=("$m")
    read -r t m < <(timed env "${envs[@]}" BTPACK_STACKTRACE_METHOD=fp "$btpack" heap record -o "$w.fp.btlog" -- "${cmd[@]}"); fp+=("$t")
    rm -f "$w.na.btlog"
    read -r t m < <(timed env "${envs[@]}" "$btpack" heap record --no-addresses -o "$w.na.btlog" -- "${cmd[@]}"); na+=("$t")
    rm -f heaptrack."$w".*
    read -r t m < <(timed env "${envs[@]}" heaptrack -o "heaptrack.$w" "${cmd[@]}"); ht+=("$t"); htrss+=("$m")
  done
  b=$(printf '%s\n' "${base[@]}" | median); tb=$(printf '%s\n' "${bt[@]}" | median)
  tf=$(printf '%s\n' "${fp[@]}" | median); th=$(printf '%s\n' "${ht[@]}" | median)
  tn=$(printf '%s\n' "${na[@]}" | median); sn=$(stat -c %s "$w.na.btlog")
  rb=$(printf '%s\n' "${btrss[@]}" | median); rh=$(printf '%s\n' "${htrss[@]}" | median)
  htfile=$(ls heaptrack."$w".* | head -n 1)
  sb=$(stat -c %s "$w.btlog"); sh=$(stat -c %s "$htfile")
  read -r rep_t _ < <(/usr/bin/time -f "%e %M" -o time.txt "$btpack" heap report --json "$w.btlog" >"$w.report.json" 2>>stderr.txt; cat time.txt)
  "$btpack" heap report --json "$w.na.btlog" >"$w.na.report.json" 2>>stderr.txt
  read -r prt_t _ < <(/usr/bin/time -f "%e %M" -o time.txt heaptrack_print "$htfile" >"$w.heaptrack.txt" 2>>stderr.txt; cat time.txt)
  awk -v w="$w" -v b="$b" -v tb="$tb" -v tf="$tf" -v tn="$tn" -v th="$th" -v sb="$sb" -v sn="$sn" \
      -v sh="$sh" -v rb="$rb" -v rh="$rh" -v rt="$rep_t" -v pt="$prt_t" 'BEGIN {
        printf "%-14s %7.2f %8.2f %7.2f %7.2f %8.2f %6.0f%% %6.0f%% %6.0f%% %6.0f%% %10d %10d %10d %6.2f %6.2f %8d %8d %7.2f %7.2f\n",
               w, b, tb, tf, tn, th, 100 * (tb - b) / b, 100 * (tf - b) / b, 100 * (tn - b) / b,
               100 * (th - b) / b, sb, sn, sh, sb / sh, sn / sh, rb, rh, rt, pt }'
done
echo
echo "what each tool saw (btpack: heap report --json; heaptrack: heaptrack_print totals):"
for w in "${order[@]}"; do
  python3 - "$w" <<'PY'
import json, re, sys
w = sys.argv[1]
r = json.load(open(w + ".report.json"))
t = open(w + ".heaptrack.txt").read()
def grab(pat):
    m = re.search(pat, t)
    return m.group(1) if m else "?"
print("%-14s btpack: %d allocations, peak %d B, leaked %d B in %d allocations, %s" % (
    w, r["allocations"], r["peak"]["bytes"], r["leaked"]["bytes"], r["leaked"]["allocations"],
    r.get("tracer", "")))
n = json.load(open(w + ".na.report.json"))
print("%-14s btpack --no-addresses: %d allocations, peak %d B, leaked %d B in %d allocations" % (
    "", n["allocations"], n["peak"]["bytes"], n["leaked"]["bytes"], n["leaked"]["allocations"]))
print("%-14s heaptrack: %s calls to allocation functions, peak heap %s, leaked %s" % (
    "", grab(r"calls to allocation functions: (\d+)"), grab(r"peak heap memory consumption: (\S+)"),
    grab(r"total memory leaked: (\S+)")))
PY
done
if [ -x "$build/bench/log_anatomy" ]; then
  echo
  echo "where the bytes of btpack's logs go (bench/heap/log_anatomy):"
  for w in "${order[@]}"; do "$build/bench/log_anatomy" "$w.btlog"; done
fi
echo "outputs in $out"
