#!/usr/bin/env bash
# Build btpack with default_library=static and with default_library=shared
# (scripts/test.sh builds the default, both) with --werror, and run the tests
# that depend on which libraries there are: linking and installing them,
# exported symbols and ABI, capture (which unwinder a link resolves), the
# headers, the codecs, the CLI and a test that links the library's objects.
# The whole suite passes in these builds too; this keeps CI's share short.
#
#   bash scripts/library_kinds.sh [static|shared]...   (default: both kinds)
#
# Build directories: build-static/, build-shared/. Installs missing build
# tools with apt-get (see deps.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
btpack_ensure_deps

kinds=("$@")
[ ${#kinds[@]} -gt 0 ] || kinds=(static shared)
for kind in "${kinds[@]}"; do
    case $kind in
    static) names=(install link version-features cli hostile) ;;
    shared) names=(install link version-features cli hostile exported-symbols abi) ;;
    *) echo "scripts/library_kinds.sh: unknown kind '$kind' (static or shared)" >&2; exit 2 ;;
    esac
    build=build-$kind
    opts=(--werror -Ddefault_library="$kind" -Dfuzz=disabled -Dbench=disabled
          -Db_sanitize=none -Db_lundef=true)
    btpack_setup "$build" "${opts[@]}"
    ninja -C "$build" -j"${BTPACK_JOBS:-$(nproc)}"
    echo "== meson test ($build: suites capture, cbf, headers; ${names[*]}) =="
    meson test -C "$build" --no-rebuild --print-errorlogs --suite capture --suite cbf --suite headers
    meson test -C "$build" --no-rebuild --print-errorlogs "${names[@]}"
done
