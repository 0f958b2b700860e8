#!/bin/sh
# A program built against the installed libbtpack the way btpack.pc says
# runs: dynamically linked (`pkg-config --cflags --libs btpack`), and fully
# static (`cc -static ... $(pkg-config --static --cflags --libs btpack)`),
# each capturing with every method built in and round-tripping a trace log
# (tests/packaging/consumer.c).
# In a sanitizer build (b_sanitize) the program is built with the same
# sanitizers, and only dynamically (the sanitizer runtimes do not link
# statically).
# usage: static_link.sh MESON BUILD_DIR B_SANITIZE CONSUMER.c CC [CC ARGS...]
set -eu
meson=$1 build=$2 sanitize=$3 prog=$4
shift 4
if [ "$sanitize" != none ]; then
    set -- "$@" -fsanitize="$sanitize"
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAILED: $*"; }
finish() { echo "$pass passed, $fail failed"; [ "$fail" -eq 0 ]; exit; }

"$meson" install -C "$build" --no-rebuild --destdir "$tmp/dest" >"$tmp/install.log" 2>&1 ||
    { cat "$tmp/install.log"; bad "meson install"; finish; }
pc=$(find "$tmp/dest" -name btpack.pc | head -n 1)
[ -n "$pc" ] || { bad "no btpack.pc installed"; finish; }
prefix=$(sed -n 's/^prefix=//p' "$pc")
pkgconf() {
    PKG_CONFIG_PATH=$(dirname "$pc")${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH} \
        pkg-config --define-variable=prefix="$tmp/dest$prefix" "$@" btpack
}
libdir=$(pkgconf --variable=libdir)

static_libs=$(pkgconf --static --libs)
echo "pkg-config --static --libs btpack: $static_libs"
case " $static_libs " in
*" -lgcc_s "*) bad "pkg-config --static names -lgcc_s, which has no static archive" ;;
*) ok ;;
esac

if [ -e "$libdir/libbtpack.so" ]; then
    # shellcheck disable=SC2046
    if "$@" -o "$tmp/dynamic" "$prog" $(pkgconf --cflags --libs) >"$tmp/cc.log" 2>&1; then
        ok
        if LD_LIBRARY_PATH=$libdir "$tmp/dynamic" >"$tmp/run.log" 2>&1; then ok; else
            cat "$tmp/run.log"; bad "the dynamically linked program"; fi
    else
        cat "$tmp/cc.log"; bad "dynamic link with pkg-config --libs"
    fi
else
    echo "no libbtpack.so in this build (default_library=static): dynamic link not tried"
fi

if [ "$sanitize" != none ]; then
    echo "sanitizer build (b_sanitize=$sanitize): static link not tried"
elif [ -e "$libdir/libbtpack.a" ]; then
    # shellcheck disable=SC2046
    if "$@" -static -o "$tmp/static" "$prog" $(pkgconf --static --cflags --libs) \
        >"$tmp/cc.log" 2>&1; then
        ok
        if "$tmp/static" >"$tmp/run.log" 2>&1; then ok; else
            cat "$tmp/run.log"; bad "the statically linked program"; fi
        if readelf -l "$tmp/static" | grep -q INTERP; then
            bad "cc -static made a dynamically linked program"; fi
    else
        cat "$tmp/cc.log"; bad "cc -static with pkg-config --static --libs"
    fi
else
    echo "no libbtpack.a in this build (default_library=shared): static link not tried"
fi
finish
