#!/bin/sh
# Checks the generated user unit with systemd-analyze: exit 0 and no warnings (verify
# prints warnings such as unknown keys or bad values but still exits 0 for many of them).
# $1: the unit, generated with ExecStart pointing at the freshly built ferryd.
set -u
unit="$1"
command -v systemd-analyze >/dev/null || { echo "systemd-analyze not installed"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
# A user manager needs a runtime dir; the man pages are not installed at test time.
out=$(XDG_RUNTIME_DIR="$tmp" systemd-analyze verify --user --man=no "$unit" 2>&1)
rc=$?
echo "$out"
[ "$rc" -eq 0 ] || { echo "FAIL: systemd-analyze exit $rc"; exit 1; }
[ -z "$out" ] || { echo "FAIL: systemd-analyze printed warnings"; exit 1; }
for line in 'Type=notify' 'NotifyAccess=main' 'WatchdogSec=10' 'Restart=on-failure' \
            'ExecReload=/bin/kill -HUP $MAINPID'; do
  grep -qxF "$line" "$unit" || { echo "FAIL: '$line' missing from $unit"; exit 1; }
done
grep -q '^ExecStart=/.*/ferryd$' "$unit" || { echo "FAIL: ExecStart is not an absolute ferryd path"; exit 1; }
echo "PASS: $unit"
