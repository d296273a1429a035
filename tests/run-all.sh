#!/bin/sh
# The whole test suite, as README's test command and CI run it:
#  1. release-style build with warnings as errors; the host suites (unit, gl, integration,
#     kms, wlcs, ...), then the guest suite (vm: qemu + vkms, one guest at a time);
#  2. ASan+UBSan build, unit, kms (display thread) and integration suites;
#  3. the libFuzzer targets (clang, ASan+UBSan), 10^5 executions each plus their regressions.
# The guest suite runs qemu under TCG with nothing beside it and leaves about a third of a
# 2-core machine idle (boots, waits for frames), so the builds of stages 2 and 3 are
# compiled meanwhile at SCHED_IDLE: they take only the CPU the guests leave, and the guests
# run about as fast as alone (README: the time of a full run).
set -eu
cd "$(dirname "$0")/.."
.ci/install-deps
[ -n "${XDG_RUNTIME_DIR:-}" ] || { XDG_RUNTIME_DIR=$(mktemp -d /tmp/ferry-xdg.XXXXXX); export XDG_RUNTIME_DIR; }
stage() { echo "== $(date -u +%H:%M:%S) $*"; }

stage "release build"
if [ ! -d build-ci ]; then meson setup build-ci -Dwerror=true; else meson setup --reconfigure build-ci -Dwerror=true >/dev/null; fi
meson compile -C build-ci
stage "host suites"
meson test -C build-ci --print-errorlogs --num-processes 2 --no-suite vm

if [ ! -d build-asan ]; then
  # GCC's -fsanitize=undefined leaves out float-cast-overflow; clang's (the fuzzers') has it.
  meson setup build-asan -Dwerror=true -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debug \
    -Dc_args=-fsanitize=float-cast-overflow -Dcpp_args=-fsanitize=float-cast-overflow >build-asan.setup.log
fi
# The fuzzers need clang; only their targets are built (not the whole tree a second time).
if [ ! -d build-fuzz ]; then
  CC=clang CXX=clang++ meson setup build-fuzz -Dfuzz=true -Db_sanitize=address,undefined \
    -Db_lundef=false -Dbuildtype=debug -Dman-pages=disabled >build-fuzz.setup.log
fi
stage "sanitizer and fuzzer builds start at SCHED_IDLE, beside the guest suite"
{ chrt --idle 0 meson compile -C build-asan &&
  chrt --idle 0 meson compile -C build-fuzz tests/fuzz/fuzz-config tests/fuzz/fuzz-dmabuf tests/fuzz/fuzz-wire
} >build-sanitizers.log 2>&1 &
builds=$!
trap 'kill "$builds" 2>/dev/null || true' EXIT
stage "guest suite"
vm_rc=0
meson test -C build-ci --print-errorlogs --num-processes 2 --suite vm || vm_rc=$?
stage "waiting for the sanitizer and fuzzer builds"
builds_rc=0
wait "$builds" || builds_rc=$?
trap - EXIT
[ "$vm_rc" -eq 0 ] || { echo "guest suite failed (exit status $vm_rc)"; exit "$vm_rc"; }
if [ "$builds_rc" -ne 0 ]; then
  tail -n 100 build-sanitizers.log
  echo "sanitizer or fuzzer build failed (exit status $builds_rc)"
  exit "$builds_rc"
fi

export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
# Leak checking where it can attribute leaks: the unit suite. ferryd and the GL tests load
# Mesa's llvmpipe driver, which leaks at exit from a module it has already unloaded, so
# LeakSanitizer cannot match those reports to Mesa (see tests/lsan.supp); there ASan still
# checks every memory error, and UBSan every undefined behaviour.
stage "ASan+UBSan: unit and kms suites"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 LSAN_OPTIONS=suppressions=$PWD/tests/lsan.supp \
  meson test -C build-asan --no-rebuild --print-errorlogs --num-processes 2 --suite unit --suite kms
stage "ASan+UBSan: integration suite"
ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 \
  meson test -C build-asan --no-rebuild --print-errorlogs --num-processes 2 --suite integration
stage "fuzzers"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
  meson test -C build-fuzz --no-rebuild --print-errorlogs --suite fuzz
stage "done"
