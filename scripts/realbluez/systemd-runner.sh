#!/usr/bin/env bash
# The systemd boot's scenario (realbluez-systemd.service, installed by systemd-guest.sh): runs
# Tests/realbluez/test_systemd_watchdog.py, copies the journal out and leaves pytest's exit code in $OUT/result for
# the host. The unit's SuccessAction=/FailureAction= power the guest off when this exits.
set -u
OUT=/realbluez-out
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# shellcheck disable=SC1091
set -a; [ -f "$OUT/guest.env" ] && . "$OUT/guest.env"; set +a

mkdir -p /var/lib/bluetooth "$OUT/logs"
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/bb
export HOME=/tmp LANG=C.UTF-8 PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
export REALBLUEZ_OUT="$OUT" GATTBRIDGE_BIN="${GATTBRIDGE_BIN:-$REPO/.build/debug/gattbridge}"

echo "systemd-runner: $(uname -r), $(nproc) CPUs, up $(cut -d' ' -f1 /proc/uptime) s; systemd $(systemctl --version | head -1)"
cd /tmp
timeout -s KILL "${REALBLUEZ_GUEST_TIMEOUT:-330}" \
    "$REPO/.venv/bin/python" -m pytest "$REPO/Tests/realbluez/test_systemd_watchdog.py" -v -p no:cacheprovider \
    --rootdir="$REPO/Tests/realbluez" 2>&1 | tee "$OUT/pytest.log"
rc=${PIPESTATUS[0]}
journalctl -b --no-pager -o short-monotonic > "$OUT/logs/journal.log" 2>&1
dmesg > "$OUT/logs/dmesg.log"
echo "$rc" > "$OUT/result"
sync
echo "systemd-runner: the scenario exited $rc after $(cut -d' ' -f1 /proc/uptime) s of uptime"
exit "$rc"
