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
STAMP="$VENV/.requirements.sha256"

log() { printf 'setup-adverts: %s\n' "$*" >&2; }

want="$(sha256sum "$REQUIREMENTS" | cut -d' ' -f1)"
if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c '' 2>/dev/null && [ "$(cat "$STAMP" 2>/dev/null)" = "$want" ]; then
    log "ok ($VENV up to date)"
    exit 0
fi

python="${PYTHON:-}"
if [ -z "$python" ]; then
    if [ -x /usr/bin/python3 ]; then python=/usr/bin/python3; else python="$(command -v python3)"; fi
fi
if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
    log "$python is older than 3.11 (the reference parsers need 3.11+); set PYTHON=/path/to/python3.11+"
    exit 1
fi
if ! [ -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c '' 2>/dev/null; then
    log "creating $VENV with $python"
    rm -rf "$VENV"
    "$python" -m venv "$VENV"
fi
log "installing the reference parsers into $VENV"
"$VENV/bin/python" -m pip install --disable-pip-version-check -q --prefer-binary -r "$REQUIREMENTS"
echo "$want" > "$STAMP"
log "ok"
