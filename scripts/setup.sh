#!/usr/bin/env bash
# Prepares a Debian 12 / Raspberry Pi OS (bookworm) machine for building gattbridge and running its
# integration bench. Idempotent: when everything is present it only checks, in about a second.
#
#   1. apt packages (installed only when missing; sudo is used only when not root):
#      build: libdbus-1-dev libmosquitto-dev libmicrohttpd-dev libprotobuf-c-dev libsystemd-dev libyaml-dev libssl-dev
#             pkg-config
#      bench: dbus-daemon (or `dbus` on releases without the split package), mosquitto, mosquitto-clients,
#             python3-venv
#      mDNS test: avahi-daemon avahi-utils (Tests/AvahiTests runs its own avahi-daemon in a network namespace)
#   2. the bench's Python environment at $REPO/.venv from bench/requirements.txt (all versions pinned);
#      a stamp keyed by the requirements file's hash skips pip when nothing changed.
#
# Environment: PYTHON=/path/to/python3 (>= 3.11) to choose the interpreter for the venv.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$REPO/.venv"
REQUIREMENTS="$REPO/bench/requirements.txt"

log() { printf 'setup: %s\n' "$*" >&2; }

sudo_if_needed() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

installed() {
    dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'
}

# --- 1. apt packages ------------------------------------------------------------------------------------------
packages=(libdbus-1-dev libmosquitto-dev libmicrohttpd-dev libprotobuf-c-dev libsystemd-dev libyaml-dev libssl-dev pkg-config mosquitto mosquitto-clients
          python3-venv systemd)
packages+=(avahi-daemon avahi-utils)
missing=()
for p in "${packages[@]}"; do
    installed "$p" || missing+=("$p")
done
if ! installed dbus-daemon && ! installed dbus && ! command -v dbus-daemon >/dev/null 2>&1; then
    missing+=(dbus-daemon)
fi

if [ "${#missing[@]}" -gt 0 ]; then
    log "installing: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    sudo_if_needed apt-get update -qq
    if [[ " ${missing[*]} " == *" dbus-daemon "* ]] && ! apt-cache show dbus-daemon >/dev/null 2>&1; then
        # Before Debian 12 the daemon ships in the `dbus` package.
        missing=("${missing[@]/dbus-daemon/dbus}")
    fi
    sudo_if_needed apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# --- 2. the bench's Python environment ------------------------------------------------------------------------
. "$REPO/scripts/venv.sh"
if venv_current "$VENV" "$REQUIREMENTS"; then
    log "ok (apt packages present, $VENV up to date)"
    exit 0
fi
python="$(venv_python "${PYTHON:-}")"
if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
    log "$python is older than 3.11 (BlueZoo needs 3.11+); set PYTHON=/path/to/python3.11+"
    exit 1
fi
venv_create "$VENV" "$python"
log "installing bench requirements into $VENV"
"$VENV/bin/python" -m pip install --disable-pip-version-check -q -r "$REQUIREMENTS"
venv_stamp "$VENV" "$REQUIREMENTS"
log "ok"
