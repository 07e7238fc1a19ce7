#!/usr/bin/env bash
# Creates the venv of the reference broadcast parsers (bthome-ble, xiaomi-ble, govee-ble, ruuvitag-ble, from PyPI,
# pinned in requirements.txt) for Tests/adverts at $REPO/.venv-adverts: ~1 min and ~150 MB the first time, wheels
# preferred. Idempotent: a stamp keyed by requirements.txt's hash skips pip when nothing changed.
#
# Environment: PYTHON=/path/to/python3 (>= 3.11, as the parsers need).
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VENV="$REPO/.venv-adverts"
REQUIREMENTS="$REPO/scripts/adverts/requirements.txt"

log() { printf 'setup-adverts: %s\n' "$*" >&2; }

. "$REPO/scripts/venv.sh"
# One at a time: `make test` starts this in the background early, and its tier runs it again, waiting here.
exec 9> "$VENV.lock"
flock 9
if venv_current "$VENV" "$REQUIREMENTS"; then
    log "ok ($VENV up to date)"
    exit 0
fi
python="$(venv_python "${PYTHON:-}")"
if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
    log "$python is older than 3.11 (the reference parsers need 3.11+); set PYTHON=/path/to/python3.11+"
    exit 1
fi
venv_create "$VENV" "$python"
log "installing the reference parsers into $VENV"
"$VENV/bin/python" -m pip install --disable-pip-version-check -q --prefer-binary -r "$REQUIREMENTS"
venv_stamp "$VENV" "$REQUIREMENTS"
log "ok"
