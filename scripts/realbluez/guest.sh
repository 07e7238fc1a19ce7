#!/usr/bin/env bash
# Runs inside the QEMU guest (started by the initramfs's /init, from the project tree shared over 9p).
# Sets up the guest's runtime directories and loopback, then runs the real-BlueZ scenarios (Tests/realbluez)
# with the project's venv, and leaves their exit code in $OUT/result for the host: QEMU's own exit code is
# always 0, so the host trusts only this file.
set -u
OUT=/realbluez-out
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# shellcheck disable=SC1091
set -a; [ -f "$OUT/guest.env" ] && . "$OUT/guest.env"; set +a

mkdir -p /var/lib/bluetooth /run/dbus "$OUT/logs"
ln -s /run /var/run
ip link set lo up
hostname realbluez

export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/bb
export HOME=/tmp LANG=C.UTF-8 PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
export REALBLUEZ_OUT="$OUT" GATTBRIDGE_BIN="${GATTBRIDGE_BIN:-$REPO/.build/debug/gattbridge}"

echo "guest: $(uname -r), $(nproc) CPUs, up $(cut -d' ' -f1 /proc/uptime) s; running the scenarios"
cd /tmp
# shellcheck disable=SC2086
timeout -s KILL "${REALBLUEZ_GUEST_TIMEOUT:-330}" \
    "$REPO/.venv/bin/python" -m pytest "$REPO/Tests/realbluez" -v -p no:cacheprovider --rootdir="$REPO/Tests/realbluez" \
    ${PYTEST_ARGS:-} 2>&1 | tee "$OUT/pytest.log"
rc=${PIPESTATUS[0]}
dmesg > "$OUT/logs/dmesg.log"
echo "$rc" > "$OUT/result"
sync
echo "guest: scenarios exited $rc after $(cut -d' ' -f1 /proc/uptime) s of uptime"
