#!/bin/sh
# Runs one libFuzzer target for a fixed number of executions from its seed corpus (copied:
# the fuzzer writes new inputs into its corpus directory), with a fixed seed so that a CI
# run is repeatable, then replays every saved regression input.
#   run-fuzzer.sh FUZZER SEEDS_DIR REGRESSIONS_DIR RUNS [FUZZER_OPTION...]
set -eu
fuzzer=$1 seeds=$2 regressions=$3 runs=$4
shift 4
# libFuzzer exits 77 on a crash by default, which meson counts as a skipped test: a finding
# must fail the test.
set -- -error_exitcode=1 "$@"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/corpus"
cp "$seeds"/* "$work/corpus/" 2>/dev/null || true
if [ -d "$regressions" ] && [ -n "$(ls -A "$regressions" 2>/dev/null)" ]; then
  "$fuzzer" "$@" "$regressions"/*
fi
"$fuzzer" "$@" -runs="$runs" -seed=1 -max_len=4096 -timeout=10 -artifact_prefix="$work/" \
  -print_final_stats=1 "$work/corpus" || {
  status=$?
  for a in "$work"/crash-* "$work"/leak-* "$work"/timeout-*; do
    [ -e "$a" ] && { echo "fuzzer input that failed (base64):"; base64 "$a"; }
  done
  exit $status
}
