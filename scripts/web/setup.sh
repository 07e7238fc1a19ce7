#!/usr/bin/env bash
# What the web page's browser tests (Tests/web, `make test-web`) need beyond scripts/setup.sh: Debian's `chromium`
# package (about 290 MB installed; sudo only when not root). Playwright for Python, the driver, is pinned in
# bench/requirements.txt and installed into .venv by scripts/setup.sh; its own browser download (`playwright
# install`) is never used: the tests launch /usr/bin/chromium. Idempotent: with chromium present it only checks.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
log() { printf 'setup-web: %s\n' "$*" >&2; }
sudo_if_needed() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

# One at a time: `make test` starts this in the background early, and its tier runs it again, waiting here.
mkdir -p "$REPO/.build"
exec 9> "$REPO/.build/setup-web.lock"
flock 9
if dpkg-query -W -f='${Status}' chromium 2>/dev/null | grep -q 'install ok installed' && [ -x /usr/bin/chromium ]; then
    log "ok (chromium $(dpkg-query -W -f='${Version}' chromium))"
    exit 0
fi
log "installing chromium"
export DEBIAN_FRONTEND=noninteractive
# Other preparations may hold apt's lock for a while: wait for it rather than fail.
sudo_if_needed apt-get -o DPkg::Lock::Timeout=600 update -qq
sudo_if_needed apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends chromium
log "ok"
