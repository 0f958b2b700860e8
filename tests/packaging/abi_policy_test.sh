#!/usr/bin/env bash
# The ABI check tells additions from breaks: a tiny library (its header
# shaped like btpack's: an options struct the caller allocates, a status
# enum, functions) is stored as a baseline by scripts/abi.sh dump, as its
# update does, then each variant is compared by scripts/abi.sh classify, as
# its check does.
# Additions (a function, an enumerator) must pass; removing a function,
# growing the struct, renumbering an enumerator or changing a parameter
# type must fail.
# usage: abi_policy_test.sh ABI_SH CC [CC ARGS...]
set -uo pipefail
abi=$1
shift
if ! command -v abidw >/dev/null 2>&1 || ! command -v abidiff >/dev/null 2>&1; then
    echo "skip: abidw/abidiff not found (Debian: apt-get install abigail-tools)"
    exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0

# make NAME [-DVARIANT...]: build lib NAME.so with its header in NAME/inc.
make() {
    local name=$1
    shift
    mkdir -p "$tmp/$name/inc"
    cat >"$tmp/$name/inc/pol.h" <<'H'
typedef enum pol_status {
    POL_OK = 0,
#ifdef RENUMBER
    POL_E_BAD = 3,
#else
    POL_E_BAD = 2,
#endif
#ifdef ADD_ENUMERATOR
    POL_E_NEW = 4,
#endif
} pol_status;
typedef struct pol_options {
    unsigned flags;
    int level;
#ifdef GROW_STRUCT
    int extra;
#endif
} pol_options;
void pol_options_init(pol_options *opt);
#ifdef CHANGE_PARAM
pol_status pol_run(const pol_options *opt, long n);
#else
pol_status pol_run(const pol_options *opt, int n);
#endif
#ifndef REMOVE_FUNCTION
pol_status pol_check(const pol_options *opt);
#endif
#ifdef ADD_FUNCTION
int pol_new(void);
#endif
H
    cat >"$tmp/$name/pol.c" <<'C'
#include "pol.h"
void pol_options_init(pol_options *opt) { opt->flags = 0; opt->level = 1; }
#ifdef CHANGE_PARAM
pol_status pol_run(const pol_options *opt, long n) { return n > opt->level ? POL_E_BAD : POL_OK; }
#else
pol_status pol_run(const pol_options *opt, int n) { return n > opt->level ? POL_E_BAD : POL_OK; }
#endif
#ifndef REMOVE_FUNCTION
pol_status pol_check(const pol_options *opt) { return opt->flags ? POL_E_BAD : POL_OK; }
#endif
#ifdef ADD_FUNCTION
int pol_new(void) { return 7; }
#endif
C
    "$@" 2>/dev/null
    "${cc[@]}" -g -O2 -shared -fPIC "${defs[@]}" -I"$tmp/$name/inc" -o "$tmp/$name/libpol.so" \
        "$tmp/$name/pol.c"
}

cc=("$@")
defs=()
make base || { echo "cannot build the test library with ${cc[*]}"; echo "0 passed, 1 failed"; exit 1; }
bash "$abi" dump "$tmp/base/libpol.so" "$tmp/base/inc" "$tmp/base.abi"

# variant NAME WANT(0 compatible, 1 break) [-DMACRO...]
variant() {
    local name=$1 want=$2
    shift 2
    defs=("$@")
    make "$name"
    local got=0
    bash "$abi" classify "$tmp/base.abi" "$tmp/$name/libpol.so" "$tmp/$name/inc" \
        >"$tmp/$name.log" 2>&1 || got=$?
    if [ "$got" = "$want" ]; then
        pass=$((pass + 1))
        echo "ok: $name: $(tail -n 1 "$tmp/$name.log")"
    else
        fail=$((fail + 1))
        echo "FAILED: $name: classify exit $got, wanted $want:"
        sed 's/^/    /' "$tmp/$name.log"
    fi
}

variant unchanged 0
variant add-function 0 -DADD_FUNCTION
variant add-enumerator 0 -DADD_ENUMERATOR
variant remove-function 1 -DREMOVE_FUNCTION
variant grow-struct 1 -DGROW_STRUCT
variant renumber-enumerator 1 -DRENUMBER
variant change-parameter 1 -DCHANGE_PARAM
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
