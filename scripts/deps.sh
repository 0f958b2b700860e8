# Sourced by scripts/demo.sh, scripts/test.sh and scripts/library_kinds.sh:
# install what the build needs and is missing, with apt-get (Debian 12), and
# only then; and configure a build directory.
#
# BTPACK_NO_INSTALL=1 turns installing off (missing tools are then reported).
# BTPACK_DEPS_CHROMIUM=1 adds the optional group for the heap map's browser
# test (tests/heap/heap_chromium.py, skipped without it): Debian's chromium.

btpack_need_pkgs=()

# btpack_want CHECK PACKAGE: add PACKAGE when CHECK (a shell command) fails.
btpack_want() {
    if ! eval "$1" >/dev/null 2>&1; then
        btpack_need_pkgs+=("$2")
    fi
}

btpack_ensure_deps() {
    btpack_need_pkgs=()
    btpack_want 'command -v cc' gcc
    btpack_want 'command -v cc && printf "#include <stdio.h>\nint main(void){return 0;}\n" | cc -x c -o /dev/null -' libc6-dev
    btpack_want 'command -v meson' meson
    btpack_want 'command -v ninja' ninja-build
    btpack_want 'command -v pkg-config' pkg-config
    btpack_want 'command -v python3' python3
    btpack_want 'command -v xz' xz-utils
    btpack_want 'command -v nm' binutils
    btpack_want 'pkg-config --exists zlib' zlib1g-dev
    btpack_want 'pkg-config --exists liblzma' liblzma-dev
    btpack_want 'pkg-config --exists libunwind' libunwind-dev  # optional capture method
    btpack_want 'pkg-config --exists libdw' libdw-dev          # btpack symbolize in-process
    btpack_want 'command -v readelf && command -v strip' binutils  # symbolize tests
    # symbolize: libstdc++'s __cxa_demangle for C++ names, and the C++ test program
    btpack_want 'command -v c++' g++
    # Packaging tests: man pages, bash completion, the ABI check.
    btpack_want 'command -v groff' groff-base
    btpack_want 'pkg-config --exists bash-completion' bash-completion
    btpack_want 'command -v abidiff' abigail-tools
    if [ "${BTPACK_DEPS_CHROMIUM:-0}" = 1 ]; then
        btpack_want 'command -v chromium' chromium  # heap map rendered in a browser (~300 MB)
    fi
    btpack_install_wanted
}

# Install what btpack_want collected in btpack_need_pkgs (if anything).
btpack_install_wanted() {
    if [ ${#btpack_need_pkgs[@]} -eq 0 ]; then
        return 0
    fi
    # Deduplicate (gcc and libc6-dev may both be listed).
    local pkgs
    pkgs=$(printf '%s\n' "${btpack_need_pkgs[@]}" | sort -u | tr '\n' ' ')
    if [ "${BTPACK_NO_INSTALL:-0}" = 1 ] || ! command -v apt-get >/dev/null 2>&1; then
        echo "btpack: missing: $pkgs(install them, e.g. apt-get install $pkgs)" >&2
        return 1
    fi
    local sudo=()
    if [ "$(id -u)" -ne 0 ]; then
        if command -v sudo >/dev/null 2>&1; then
            sudo=(sudo)
        else
            echo "btpack: missing: $pkgs(run as root, or install them yourself)" >&2
            return 1
        fi
    fi
    echo "btpack: installing $pkgs" >&2
    export DEBIAN_FRONTEND=noninteractive
    "${sudo[@]}" apt-get update </dev/null
    # shellcheck disable=SC2086
    "${sudo[@]}" apt-get install -y --no-install-recommends $pkgs </dev/null
}

# btpack_setup BUILD_DIR OPTIONS...: configure BUILD_DIR with OPTIONS, or
# reconfigure it with them when it exists (so that options given on an
# earlier run do not linger).
btpack_setup() {
    local build=$1
    shift
    if [ -f "$build/build.ninja" ]; then
        meson setup --reconfigure "$build" "$@" >/dev/null
    else
        meson setup "$build" "$@" >/dev/null
    fi
}
