#!/bin/sh
# Runs one libFuzzer target for a fixed number of executions from its seed corpus (copied:
# the fuzzer writes new inputs into its corpus directory), with fixed seeds so that a CI
# run is repeatable, after replaying every saved regression input.
#   run-fuzzer.sh FUZZER SEEDS_DIR REGRESSIONS_DIR RUNS WORKERS [FUZZER_OPTION...]
# WORKERS > 1 splits RUNS over that many processes, worker k with -seed=k and a corpus of
# its own: fuzz-wire spends a third of its time waiting for its output's vblanks, so on two
# cores two or three workers finish the same executions in about half the time
# (docs/reliability.md, "Fuzzing").
set -eu
fuzzer=$1 seeds=$2 regressions=$3 runs=$4 workers=$5
shift 5
# libFuzzer exits 77 on a crash by default, which meson counts as a skipped test: a finding
# must fail the test.
set -- -error_exitcode=1 "$@"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ -d "$regressions" ] && [ -n "$(ls -A "$regressions" 2>/dev/null)" ]; then
  "$fuzzer" "$@" "$regressions"/*
fi
each=$(( (runs + workers - 1) / workers ))
k=1
while [ "$k" -le "$workers" ]; do
  mkdir "$work/corpus$k" "$work/out$k"
  cp "$seeds"/* "$work/corpus$k/" 2>/dev/null || true
  "$fuzzer" "$@" -runs="$each" -seed="$k" -max_len=4096 -timeout=10 \
    -artifact_prefix="$work/out$k/" -print_final_stats=1 "$work/corpus$k" >"$work/log$k" 2>&1 &
  echo $! >"$work/pid$k"
  k=$((k + 1))
done
failed=0
k=1
while [ "$k" -le "$workers" ]; do
  status=0
  wait "$(cat "$work/pid$k")" || status=$?
  echo "== worker $k of $workers: -seed=$k, $each executions, exit status $status"
  if [ "$status" -ne 0 ]; then
    cat "$work/log$k"
    for a in "$work/out$k"/crash-* "$work/out$k"/leak-* "$work/out$k"/timeout-*; do
      [ -e "$a" ] && { echo "fuzzer input that failed (base64):"; base64 "$a"; }
    done
    failed=$status
  else
    grep -E '^(#[0-9]+[[:space:]]+(INITED|DONE)|stat::)' "$work/log$k" || tail -n 20 "$work/log$k"
  fi
  k=$((k + 1))
done
exit "$failed"
