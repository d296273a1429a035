#!/bin/sh
# The whole test suite, as README's test command and CI run it:
#  1. release-style build with warnings as errors, every suite (unit, gl, integration, kms,
#     wlcs, then vm: qemu + vkms, two 1-CPU guests side by side);
#  2. ASan+UBSan build (clang), unit, kms (display thread) and integration suites;
#  3. the libFuzzer targets (the same clang ASan+UBSan build), 10^5 executions each plus
#     their regressions.
# Each stage's start is printed with the time (README: the time of a full run). The stages
# run one after the other: compiling the sanitizer builds beside the guest suite, even at
# SCHED_IDLE, slowed the guests by 20-40% on a 2-core machine (tried 2026-11-27), enough for
# a guest test's bound to expire.
set -eu
cd "$(dirname "$0")/.."
.ci/install-deps
[ -n "${XDG_RUNTIME_DIR:-}" ] || { XDG_RUNTIME_DIR=$(mktemp -d /tmp/ferry-xdg.XXXXXX); export XDG_RUNTIME_DIR; }
stage() { echo "== $(date -u +%H:%M:%S) $*"; }

# Debug information: line tables only (-g1 / -gline-tables-only), which is what backtraces
# and sanitizer reports print (function, file:line). Full -g made the compiles about a
# fifth longer on this 2-core machine (ferryd's 224 steps: 251 s with -g, 209 s with -g1,
# 2026-12-02).
# Unity builds: each target's sources compiled as one file (meson's unity, the whole target
# in one), so the headers every file includes (the C++ library, wayland, gtest) are parsed
# once per target instead of once per file. The release build took 460 s of this 2-core
# machine without, 321 s with (2026-12-02). Only here: a developer's build keeps one object
# per file, so an edit recompiles one file, and it is what finds a missing #include that a
# unity file's earlier sources hide. So files of one target must not define the same name
# in their anonymous namespaces, nor the same macro (docs/reliability.md, "CI time").
unity_args="-Dunity=on -Dunity_size=1000"
stage "release build"
ci_args="-Dwerror=true -Dcpp_args=-g1 -Dc_args=-g1 $unity_args"
# shellcheck disable=SC2086
if [ ! -d build-ci ]; then meson setup build-ci $ci_args; else meson setup --reconfigure build-ci $ci_args >/dev/null; fi
# The guest's set-up (on a fresh machine 50 s to 5 min, most of it apt downloading packages
# and the kernel source) runs beside the compile and the host suites, at low priority; the
# guest suite's vm-setup test then takes its lock and finds the work done, or repeats it and
# reports what failed.
nice -n 10 bash tests/vm/setup.sh build-ci/tests/vm/cache >build-ci/vm-setup-early.log 2>&1 &
early_setup=$!
meson compile -C build-ci
stage "release build: host suites"
meson test -C build-ci --print-errorlogs --num-processes 2 --no-suite vm
stage "release build: guest suite"
wait "$early_setup" || echo "guest set-up beside the compile failed (vm-setup repeats it):" \
  "$(tail -n 3 build-ci/vm-setup-early.log)"
meson test -C build-ci --print-errorlogs --num-processes 2 --suite vm

stage "ASan+UBSan build"
# clang: it compiles this build about 1.7 times as fast as GCC (-O0 with ASan), and its
# -fsanitize=undefined has float-cast-overflow, which GCC's leaves out. The same build
# carries libFuzzer's coverage hooks in the daemon's libraries (-Dfuzz=true) and makes the
# fuzz targets: one clang ASan+UBSan compile of the daemon instead of two (a separate
# build-fuzz until 2026-11-28). A build-asan made by GCC (before 2026-11-28) is made again;
# an older one is reconfigured with these options.
if [ -d build-asan ] && ! grep -q "clang++" build-asan/build.ninja 2>/dev/null; then
  rm -rf build-asan
fi
asan_args="-Dwerror=true -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debug
  -Dfuzz=true -Dman-pages=disabled -Dcpp_args=-gline-tables-only -Dc_args=-gline-tables-only
  $unity_args"
# shellcheck disable=SC2086
if [ ! -d build-asan ]; then
  CC=clang CXX=clang++ meson setup build-asan $asan_args
else
  meson configure build-asan $asan_args
fi
# Only what its suites need (no guest tests, no benchmarks).
tests/build-for-suites build-asan unit kms integration fuzz
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
# Leak checking where it can attribute leaks: the unit suite. ferryd and the GL tests load
# Mesa's llvmpipe driver, which leaks at exit from a module it has already unloaded, so
# LeakSanitizer cannot match those reports to Mesa (see tests/lsan.supp); there ASan still
# checks every memory error, and UBSan every undefined behaviour.
stage "ASan+UBSan: unit and kms suites"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 LSAN_OPTIONS=suppressions=$PWD/tests/lsan.supp \
  meson test -C build-asan --print-errorlogs --num-processes 2 --suite unit --suite kms
stage "ASan+UBSan: integration suite"
ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 \
  meson test -C build-asan --print-errorlogs --num-processes 2 --suite integration

stage "fuzzers"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
  meson test -C build-asan --no-rebuild --print-errorlogs --suite fuzz
stage "done"
