#!/usr/bin/env bash
# Checks systemd/gattbridge.service: `systemd-analyze verify` must print nothing, and the overall exposure from
# `systemd-analyze security --offline=yes` must be at most 2.0 and equal to the figure printed in README.md.
# Needs systemd-analyze (Debian/Ubuntu package "systemd"); does not need a running systemd.
set -euo pipefail
cd "$(dirname "$0")/.."

UNIT=systemd/gattbridge.service
LIMIT=2.0
command -v systemd-analyze >/dev/null || { echo "check-unit: systemd-analyze not found (apt-get install systemd)" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# verify insists that ExecStart's binary exists; the installed path does not exist on a build machine, so point
# that one line at an executable that does. Everything else is checked as shipped.
sed "s|^ExecStart=/usr/local/bin/gattbridge |ExecStart=$(command -v true) |" "$UNIT" > "$work/gattbridge.service"
grep -q "^ExecStart=$(command -v true) " "$work/gattbridge.service" || { echo "check-unit: unexpected ExecStart in $UNIT" >&2; exit 1; }

if ! out=$(systemd-analyze verify "$work/gattbridge.service" 2>&1) || [ -n "$out" ]; then
    echo "check-unit: systemd-analyze verify $UNIT is not clean:" >&2
    echo "$out" >&2
    exit 1
fi

report=$(systemd-analyze security --offline=yes "$work/gattbridge.service")
exposure=$(sed -n 's/.*Overall exposure level for gattbridge.service: \([0-9.]*\).*/\1/p' <<<"$report")
[ -n "$exposure" ] || { echo "check-unit: no exposure figure in:" >&2; echo "$report" >&2; exit 1; }
if ! awk -v e="$exposure" -v l="$LIMIT" 'BEGIN { exit !(e <= l) }'; then
    echo "check-unit: exposure $exposure is above $LIMIT:" >&2
    grep '✗' <<<"$report" >&2
    exit 1
fi
documented=$(sed -n 's/.*Overall exposure level for gattbridge.service: \([0-9.]*\).*/\1/p' README.md | head -1)
if [ "$documented" != "$exposure" ]; then
    echo "check-unit: README.md says exposure ${documented:-(nothing)}, systemd-analyze says $exposure; update README.md" >&2
    exit 1
fi
echo "check-unit: verify clean; exposure $exposure (limit $LIMIT)"
