#!/usr/bin/env bash
# The bare-metal builds and their tests (cross/README.md): the freestanding
# library and the Cortex-M port for Cortex-M0+, M3, M4F and M33, and the
# codec for RISC-V rv32imac; on each the code-size budgets, on M0+ (QEMU
# microbit), M3 (mps2-an385), M4F (mps2-an386) and M33 (mps2-an505) the
# fault firmware, on M3, M4F, M33 and rv32imac (qemu-system-riscv32) the
# codec unit tests.
#
#   bash scripts/embedded.sh           build-<core>/ for each core
#   bash scripts/embedded.sh --bench   also the instructions-per-frame benchmark
#
# The firmware tests decode with a native btpack: build/tools/btpack (built
# or brought up to date here; BTPACK_HOST_BUILD names another build directory).
# Installs the cross toolchains and QEMU with apt-get when missing.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh

bench=0
for arg in "$@"; do
    case $arg in
    --bench) bench=1 ;;
    -h | --help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "scripts/embedded.sh: unknown argument '$arg'" >&2; exit 2 ;;
    esac
done

btpack_ensure_deps
btpack_need_pkgs=()
btpack_want 'command -v arm-none-eabi-gcc' gcc-arm-none-eabi
btpack_want 'test -f /usr/lib/arm-none-eabi/newlib/thumb/v7-m/nofp/libc_nano.a' libnewlib-arm-none-eabi
btpack_want 'command -v qemu-system-arm' qemu-system-arm
btpack_want 'command -v riscv64-unknown-elf-gcc' gcc-riscv64-unknown-elf
btpack_want 'test -f /usr/lib/picolibc/riscv64-unknown-elf/picolibc.specs' picolibc-riscv64-unknown-elf
btpack_want 'command -v qemu-system-riscv32' qemu-system-misc
btpack_install_wanted

host=${BTPACK_HOST_BUILD:-build}
# Always through ninja: a btpack left from an older tree would judge the
# firmware by old rules.
[ -f "$host/build.ninja" ] || meson setup "$host" >/dev/null
ninja -C "$host" -j"${BTPACK_JOBS:-$(nproc)}" tools/btpack >/dev/null
host_btpack=$(cd "$host/tools" && pwd)/btpack

for core in cortex-m0plus cortex-m3 cortex-m4f cortex-m33 riscv32-imac; do
    case $core in
    riscv32-*) cross=(--cross-file cross/$core.ini) ;;
    *) cross=(--cross-file cross/arm-none-eabi.ini --cross-file cross/$core.ini) ;;
    esac
    dir=build-$core
    echo "== $core ($dir) =="
    opts=(--werror -Dhost_btpack="$host_btpack")
    if [ -f "$dir/build.ninja" ]; then
        meson setup --reconfigure "$dir" "${cross[@]}" "${opts[@]}" >/dev/null
    else
        meson setup "$dir" "${cross[@]}" "${opts[@]}" >/dev/null
    fi
    ninja -C "$dir" -j"${BTPACK_JOBS:-$(nproc)}"
    meson test -C "$dir" --print-errorlogs
    if [ "$bench" = 1 ] && [ "$core" != cortex-m0plus ] && [ "${core%%-*}" = cortex ]; then
        meson test -C "$dir" --benchmark --verbose qemu-encode
    fi
done
