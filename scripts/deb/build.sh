#!/usr/bin/env bash
# Builds dist/gattbridge_<version>_<arch>.deb (`make deb`, after `make release`) with debhelper, from a copy of
# packaging/debian/ under .build-deb/pkg/ so the checkout stays clean. Prints the .deb's path on stdout.
#
#   scripts/deb/build.sh [BINARY]        BINARY: the release binary to package (default .build/release/gattbridge)
#
# The version has one source, Sources/gattbridge/GattBridgeVersion.swift (what `gattbridge --version` prints); the
# package's debian/changelog is generated from it here, dated by the commit that last changed that file, so a
# rebuild of the same tree gives the same package. The architecture is the build machine's (dpkg).
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BIN="$(readlink -f "${1:-$REPO/.build/release/gattbridge}")"
STAGE="$REPO/.build-deb/pkg"
DIST="$REPO/dist"

log() { printf 'deb: %s\n' "$*" >&2; }

# --- tools: debhelper (dh, dh_installsystemd, dh_installsysusers) and dpkg-dev (dpkg-shlibdeps, dpkg-gencontrol) ---
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }
missing=()
for p in debhelper dpkg-dev; do installed "$p" || missing+=("$p"); done
if [ "${#missing[@]}" -gt 0 ]; then
    log "installing: ${missing[*]}"
    sudo_=(); [ "$(id -u)" -eq 0 ] || sudo_=(sudo)
    export DEBIAN_FRONTEND=noninteractive
    "${sudo_[@]}" apt-get update -qq
    "${sudo_[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

[ -x "$BIN" ] || { log "no release binary at $BIN (make release)"; exit 1; }

VERSION="$(bash "$REPO/scripts/deb/version.sh")"
ARCH="$(dpkg --print-architecture)"

# The changelog's date, and every file's mtime in the package: when the version last changed (reproducible), else
# now (a tree without git history).
epoch="$(git -C "$REPO" log -1 --format=%at -- Sources/gattbridge/GattBridgeVersion.swift 2>/dev/null || true)"
[ -n "$epoch" ] || epoch="$(date +%s)"
export SOURCE_DATE_EPOCH="$epoch"
date_="$(date -R -u -d "@$epoch")"
maintainer="$(sed -n 's/^Maintainer: //p' "$REPO/packaging/debian/control")"

rm -rf "$STAGE"
mkdir -p "$STAGE" "$DIST"
cp -r "$REPO/packaging/debian" "$STAGE/debian"
cat > "$STAGE/debian/changelog" <<EOF
gattbridge ($VERSION) unstable; urgency=medium

  * Release $VERSION. The changes are in the project's git history and README.md.

 -- $maintainer  $date_
EOF

log "packaging $BIN as gattbridge $VERSION ($ARCH)"
rm -f "$DIST/gattbridge_${VERSION}_${ARCH}.deb"
# debian/rules is the interface (Debian policy 4.9); dpkg-buildpackage would only add a .changes and .buildinfo,
# written next to the source tree, which this package has no use for. What it would set from debian/control's
# Rules-Requires-Root: no, set here: the package builds as any user, its files owned by root in the .deb.
export DEB_RULES_REQUIRES_ROOT=no
if ! (cd "$STAGE" && GATTBRIDGE_REPO="$REPO" GATTBRIDGE_BIN="$BIN" DEB_OUT="$DIST" debian/rules binary) \
        > "$REPO/.build-deb/build.log" 2>&1; then
    tail -30 "$REPO/.build-deb/build.log" >&2
    log "FAILED: debian/rules binary (log: .build-deb/build.log)"
    exit 1
fi
deb="$DIST/gattbridge_${VERSION}_${ARCH}.deb"
[ -f "$deb" ] || { log "debian/rules did not produce $deb"; exit 1; }
log "built $deb"
dpkg-deb --field "$deb" Version Depends Recommends >&2
echo "$deb"
