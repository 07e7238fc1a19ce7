#!/usr/bin/env bash
# Creates the venv of the Home Assistant Bluetooth proxy's tests (Tests/proxy) at $REPO/.venv-proxy: the bench's
# requirements (bench/requirements.txt) and Home Assistant's own ESPHome client stack (aioesphomeapi, bleak-esphome,
# habluetooth, bluetooth-data-tools), pinned in requirements.txt: ~30 s and ~120 MB the first time, wheels preferred.
# Idempotent: a stamp keyed by both requirements files' hash skips pip when nothing changed.
#
# Environment: PYTHON=/path/to/python3 (>= 3.11, as aioesphomeapi needs).
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VENV="$REPO/.venv-proxy"
REQUIREMENTS="$REPO/scripts/proxy/requirements.txt"

log() { printf 'setup-proxy: %s\n' "$*" >&2; }

. "$REPO/scripts/venv.sh"
# One at a time: `make test` starts this in the background early, and its tier runs it again, waiting here.
exec 9> "$VENV.lock"
flock 9
# The stamp covers the bench's requirements too (this file includes them).
STAMPED="$(mktemp)"
trap 'rm -f "$STAMPED"' EXIT
cat "$REQUIREMENTS" "$REPO/bench/requirements.txt" > "$STAMPED"
if venv_current "$VENV" "$STAMPED"; then
    log "ok ($VENV up to date)"
    exit 0
fi
python="$(venv_python "${PYTHON:-}")"
if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
    log "$python is older than 3.11 (aioesphomeapi needs 3.11+); set PYTHON=/path/to/python3.11+"
    exit 1
fi
venv_create "$VENV" "$python"
log "installing the bench and Home Assistant's ESPHome client into $VENV"
"$VENV/bin/python" -m pip install --disable-pip-version-check -q --prefer-binary -r "$REQUIREMENTS"
venv_stamp "$VENV" "$STAMPED"
log "ok"
