#!/usr/bin/env bash
# Creates the venv of a real Home Assistant core for Tests/homeassistant at $REPO/.venv-ha (~5 min and ~400 MB the
# first time). Idempotent: a stamp keyed by requirements.txt's hash skips pip when nothing changed.
#
# Environment: PYTHON_HA=/path/to/python3.11 (Home Assistant 2024.3 needs exactly 3.11 or 3.12).
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VENV="$REPO/.venv-ha"
REQUIREMENTS="$REPO/scripts/homeassistant/requirements.txt"

log() { printf 'setup-homeassistant: %s\n' "$*" >&2; }

. "$REPO/scripts/venv.sh"
# One at a time: `make test` starts this in the background early, and its tier runs it again, waiting here.
exec 9> "$VENV.lock"
flock 9
if [ -x "$VENV/bin/hass" ] && venv_current "$VENV" "$REQUIREMENTS"; then
    log "ok ($VENV up to date)"
    exit 0
fi

python="${PYTHON_HA:-}"
if [ -z "$python" ]; then
    for candidate in python3.11 python3.12 python3; do
        if command -v "$candidate" >/dev/null 2>&1; then python="$(command -v "$candidate")"; break; fi
    done
fi
if ! "$python" -c 'import sys; sys.exit(sys.version_info[:2] not in ((3, 11), (3, 12)))'; then
    log "$python is not Python 3.11 or 3.12, which Home Assistant 2024.3 needs; set PYTHON_HA=/path/to/python3.11"
    exit 1
fi
venv_create "$VENV" "$python"
log "installing Home Assistant into $VENV (a few minutes)"
# Home Assistant's own pins for its indirect dependencies (package_constraints.txt, shipped inside the package): without
# them pip's resolver takes the newest habluetooth and then walks back through dozens of bluetooth-data-tools sdists.
home_assistant="$(grep -m1 '^homeassistant==' "$REQUIREMENTS")"
"$VENV/bin/python" -m pip install --disable-pip-version-check -q --no-deps "$home_assistant"
constraints="$("$VENV/bin/python" -c 'import pathlib, sysconfig; print(pathlib.Path(sysconfig.get_paths()["purelib"]) / "homeassistant" / "package_constraints.txt")')"
"$VENV/bin/python" -m pip install --disable-pip-version-check -q -r "$REQUIREMENTS" -c "$constraints"
venv_stamp "$VENV" "$REQUIREMENTS"
log "ok"
