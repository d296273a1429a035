#!/usr/bin/env python3
"""Runs the wlcs conformance suite on ferry's integration module and checks the result
against the checked-in list of expected failures.

  run-wlcs.py WLCS_RUNNER MODULE.so EXPECTED_FAILURES [--shards N] [-- GTEST ARGS...]

Fails on: a failure not in the list, a listed test that now passes or no longer exists (the
list only shrinks), a crash or hang of the runner. Prints pass/fail/skip counts.
The list: one test per line, `Suite.test  reason`; '#' starts a comment.
"""
import json
import os
import subprocess
import sys
import tempfile
import time


def read_expected(path):
    expected = {}
    for n, line in enumerate(open(path, encoding="utf-8"), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split(None, 1)
        if len(parts) < 2:
            sys.exit(f"{path}:{n}: '{parts[0]}' has no reason")
        if parts[0] in expected:
            sys.exit(f"{path}:{n}: '{parts[0]}' listed twice")
        expected[parts[0]] = parts[1]
    return expected


def run_shard(runner, module, index, count, workdir, extra):
    out = os.path.join(workdir, f"shard{index}.json")
    log = open(os.path.join(workdir, f"shard{index}.log"), "w+", encoding="utf-8")
    env = dict(os.environ, GTEST_TOTAL_SHARDS=str(count), GTEST_SHARD_INDEX=str(index))
    proc = subprocess.Popen([runner, module, f"--gtest_output=json:{out}"] + extra,
                            stdout=log, stderr=subprocess.STDOUT, env=env)
    return proc, out, log


def last_started(log):
    log.seek(0)
    name = None
    for line in log:
        if line.startswith("[ RUN      ] "):
            name = line[len("[ RUN      ] "):].strip()
    return name


def main():
    args = sys.argv[1:]
    extra = []
    if "--" in args:
        i = args.index("--")
        args, extra = args[:i], args[i + 1:]
    shards = 1
    if "--shards" in args:
        i = args.index("--shards")
        shards = int(args[i + 1])
        del args[i:i + 2]
    runner, module, expected_path = args
    expected = read_expected(expected_path)

    with tempfile.TemporaryDirectory(prefix="ferry-wlcs-") as workdir:
        # Each Server also listens on a wayland-N socket; keep those out of the user's dir.
        os.environ["XDG_RUNTIME_DIR"] = workdir
        os.chmod(workdir, 0o700)
        start = time.monotonic()
        procs = [run_shard(runner, module, i, shards, workdir, extra) for i in range(shards)]
        results = {}
        problems = []
        for proc, out, log in procs:
            rc = proc.wait()
            if rc < 0 or not os.path.exists(out):
                problems.append(f"wlcs runner died (exit {rc}) during "
                                f"{last_started(log) or 'start-up'}; its output:")
                log.seek(0)
                problems.append("".join(log.readlines()[-60:]))
                continue
            for suite in json.load(open(out, encoding="utf-8"))["testsuites"]:
                for case in suite["testsuite"]:
                    name = f"{suite['name']}.{case['name']}"
                    # wlcs marks a test it skips (extension not offered) with this property
                    # and reports the exception it threw as a failure.
                    if ("wlcs-skip-test" in case or case.get("result") == "SKIPPED"
                            or case.get("status") == "NOTRUN"):
                        results[name] = ("skip", "")
                    elif case.get("failures"):
                        msg = case["failures"][0].get("failure", "").strip().splitlines()
                        results[name] = ("fail", " | ".join(m for m in msg[:4] if m.strip()))
                    else:
                        results[name] = ("pass", "")
        elapsed = time.monotonic() - start

    counts = {k: sum(1 for r in results.values() if r[0] == k) for k in ("pass", "fail", "skip")}
    unexpected = sorted(n for n, r in results.items() if r[0] == "fail" and n not in expected)
    fixed = sorted(n for n, r in results.items() if r[0] == "pass" and n in expected)
    filtered = bool(extra)
    gone = [] if filtered else sorted(n for n in expected if n not in results)

    print(f"wlcs: {len(results)} tests, {counts['pass']} passed, {counts['fail']} failed "
          f"({counts['fail'] - len(unexpected)} expected), {counts['skip']} skipped; "
          f"{elapsed:.0f} s in {shards} shard(s)")
    for n in unexpected:
        print(f"UNEXPECTED FAILURE: {n}: {results[n][1]}")
    for n in fixed:
        print(f"NOW PASSES (remove it from {os.path.basename(expected_path)}): {n}")
    for n in gone:
        print(f"LISTED BUT NOT RUN (remove it): {n}")
    for p in problems:
        print(p)
    return 1 if unexpected or fixed or gone or problems else 0


if __name__ == "__main__":
    sys.exit(main())
