#!/usr/bin/env bash
# lintian.sh DEB: lintian on a built package, failing on any error tag (make test-deb and make test-arm64). The
# warnings that stay, and why, are listed in scripts/deb/test.sh. Installs lintian with apt when it is missing (a
# test tool of the build machine, not something the package build needs).
set -euo pipefail
deb=$1
log() { printf 'lintian: %s\n' "$*" >&2; }
if ! command -v lintian >/dev/null; then
    log "installing lintian"
    sudo_=(); [ "$(id -u)" -eq 0 ] || sudo_=(sudo)
    export DEBIAN_FRONTEND=noninteractive
    "${sudo_[@]}" apt-get install -y -qq --no-install-recommends lintian >/dev/null 2>&1 \
        || { "${sudo_[@]}" apt-get update -qq && "${sudo_[@]}" apt-get install -y -qq --no-install-recommends lintian >/dev/null; }
fi
log "$deb"
# Exit status 1: an error tag; anything else non-zero: lintian itself failed. Both fail the check.
set +e
out="$(lintian --fail-on error "$deb" 2>&1)"
rc=$?
set -e
grep -v '^running with root privileges is not recommended!$' <<<"$out" >&2 || true
[ "$rc" -eq 0 ] || { log "FAILED: lintian exited $rc"; exit 1; }
