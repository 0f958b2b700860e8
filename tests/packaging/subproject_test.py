"""btpack as a Meson subproject of another project: `dependency('btpack',
fallback: 'btpack')` finds it (meson.override_dependency), the parent gets
the library and headers only (no tool, tests, fuzz targets or benchmark)
and installs nothing of btpack's, unless it asks with -Dbtpack:OPTION.

usage: subproject_test.py MESON SOURCE_ROOT CONSUMER.c
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from pycheck import check, finish  # noqa: E402

CONSUMER_MESON = """project('consumer', 'c', default_options: ['warning_level=2', 'werror=true'])
btpack_dep = dependency('btpack', fallback: 'btpack')
exe = executable('consumer', 'consumer.c', dependencies: btpack_dep, install: true)
test('consumer', exe)
"""

def run(cmd, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if p.returncode != 0:
        print("$ %s\n%s%s" % (" ".join(cmd), p.stdout[-3000:], p.stderr[-3000:]))
    return p


def introspect(meson, build, what):
    return json.loads(run([meson, "introspect", "--" + what, build]).stdout)


def main(argv):
    if len(argv) != 4:
        sys.stderr.write(__doc__)
        return 2
    meson, src, consumer_c = argv[1], os.path.abspath(argv[2]), argv[3]
    tmp = tempfile.mkdtemp(prefix="btpack-subproject-")
    try:
        proj = os.path.join(tmp, "consumer")
        os.makedirs(os.path.join(proj, "subprojects"))
        with open(os.path.join(proj, "meson.build"), "w") as f:
            f.write(CONSUMER_MESON)
        shutil.copy(consumer_c, os.path.join(proj, "consumer.c"))
        os.symlink(src, os.path.join(proj, "subprojects", "btpack"))
        env = dict(os.environ)
        env.pop("PKG_CONFIG_PATH", None)

        # As a parent project would use it: the library linked statically.
        build = os.path.join(tmp, "b")
        p = run([meson, "setup", build, proj, "--force-fallback-for=btpack",
                 "-Dbtpack:default_library=static"], env=env)
        check(p.returncode == 0, "meson setup of a project with btpack as subproject")
        if p.returncode != 0:
            finish()
        targets = {t["name"] for t in introspect(meson, build, "targets")
                   if t["subproject"] == "btpack" and t["build_by_default"]}
        check(targets == {"btpack"}, "the subproject builds the library only, not %s"
              % sorted(targets - {"btpack"}))
        tests = [t["name"] for t in introspect(meson, build, "tests")]
        check(tests == ["consumer"], "the subproject adds no tests, got %s" % tests)
        installed = introspect(meson, build, "installed")
        check(list(installed.values()) != [] and all(
            os.path.basename(d) == "consumer" for d in installed.values()),
            "the subproject installs nothing, got %s" % sorted(installed.values()))
        p = run(["ninja", "-C", build, "-j2"])
        check(p.returncode == 0, "the parent project builds (with --werror)")
        built = sorted(f for _, _, files in os.walk(os.path.join(build, "subprojects"))
                       for f in files if f.endswith(".a") or f == "btpack")
        check(built == ["libbtpack.a"], "the subproject built %s, not libbtpack.a alone" % built)
        p = run([meson, "test", "-C", build, "--no-rebuild", "--print-errorlogs"])
        check(p.returncode == 0, "the parent's program runs against the subproject's library")

        # Asked for, the tool and the installation come back (the same build
        # directory reconfigured: its compiler checks are cached).
        p = run([meson, "setup", "--reconfigure", build, proj,
                 "-Dbtpack:cli=enabled", "-Dbtpack:install=enabled"], env=env)
        check(p.returncode == 0, "meson setup with -Dbtpack:cli=enabled -Dbtpack:install=enabled")
        if p.returncode == 0:
            dests = introspect(meson, build, "installed").values()
            for want in ("/bin/btpack", "/include/btpack", "/pkgconfig/btpack.pc",
                         "/man1/btpack.1", "/libbtpack.a"):
                check(any(d.endswith(want) for d in dests),
                      "-Dbtpack:cli=enabled -Dbtpack:install=enabled installs %s" % want)
    finally:
        shutil.rmtree(tmp)
    finish()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
