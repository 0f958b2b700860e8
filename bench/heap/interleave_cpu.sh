#!/usr/bin/env bash
# Two builds of btpack and heaptrack on three workloads, interleaved: for
# each round and workload, the untraced run, `btpack heap record` with
# BEFORE's build, with AFTER's, and heaptrack, one after the other. Prints
# one line a run: workload, variant, wall seconds, CPU milliseconds (perf
# stat's task-clock: every thread and child process, so heaptrack's
# heaptrack_interpret and btpack's writer thread count). CPU time is what a
# shared machine distorts least; wall time is what the goal is about.
#
#   R=5 bash bench/heap/interleave_cpu.sh BEFORE_BUILD AFTER_BUILD [OUT_DIR]
#
# Workloads as in compare_heaptrack.sh (sqlite3, python3-malloc, cc1); its
# inputs are made in OUT_DIR first if missing.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd) # before the cd below: $0 may be relative
old=$(cd "${1:?before build dir}" && pwd)
new=$(cd "${2:?after build dir}" && pwd)
out=${3:-$(mktemp -d /tmp/btpack-interleave-XXXXXX)}
rounds=${R:-5}
mkdir -p "$out"
cd "$out"
if [ ! -f alloc.py ] || [ ! -f sqlite.sql ] || [ ! -f big.c ]; then
  sed -n '/^python3 - <<.PY.$/,/^PY$/p' "$here/compare_heaptrack.sh" | sed '1d;$d' | python3 -
fi
cc1=$(gcc -print-prog-name=cc1)
run() {
  /usr/bin/time -f "%e" -o t.txt perf stat -x, -o ps.txt -e task-clock -- "$@" >/dev/null 2>>stderr.txt </dev/null
  echo "$(cat t.txt) $(awk -F, '/task-clock/ {print $1}' ps.txt)"
}
for ((r = 0; r < rounds; r++)); do
  for w in sqlite3 python3-malloc cc1; do
    case $w in
      sqlite3) envs=(); cmd=(sqlite3 :memory: -init sqlite.sql .quit) ;;
      python3-malloc) envs=(PYTHONMALLOC=malloc); cmd=(/usr/bin/python3 alloc.py) ;;
      cc1) envs=(); cmd=("$cc1" -quiet -O2 big.c -o big.s) ;;
    esac
    echo "$w base $(run env "${envs[@]}" "${cmd[@]}")"
    echo "$w before $(BTPACK_HEAP_PRELOAD=$old/preload/libbtpack-heap.so run env "${envs[@]}" "$old/tools/btpack" heap record -o "$w.before.btlog" -- "${cmd[@]}")"
    echo "$w after $(BTPACK_HEAP_PRELOAD=$new/preload/libbtpack-heap.so run env "${envs[@]}" "$new/tools/btpack" heap record -o "$w.after.btlog" -- "${cmd[@]}")"
    rm -f "ht.$w".*
    echo "$w heaptrack $(run env "${envs[@]}" heaptrack -o "ht.$w" "${cmd[@]}")"
  done
done
