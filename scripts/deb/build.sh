#!/usr/bin/env bash
# Builds dist/gattbridge_<version>_<arch>.deb (`make deb`, after `make release`) with debhelper, from a copy of
# packaging/debian/ under .build-deb/pkg/ so the checkout stays clean. Prints the .deb's path on stdout.
#
#   scripts/deb/build.sh [BINARY]        BINARY: the release binary to package (default .build/release/gattbridge)
#
# DEB_ARCH=arm64 on an amd64 machine packages the cross-built binary (`make deb ARCH=arm64`): debian/rules then runs
# in the cross toolchain's sid root (scripts/arm64/), as the invoking user (scripts/arm64/chroot.sh), whose
# debhelper and aarch64 binutils are used, and
# dpkg-shlibdeps computes Depends: from the arm64 sysroot's own dpkg database (bookworm's symbols files), as it would
# on an arm64 machine. Nothing is installed on the host for that.
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

HOST_ARCH="$(dpkg --print-architecture)"
ARCH="${DEB_ARCH:-$HOST_ARCH}"
CROSS=""
if [ "$ARCH" != "$HOST_ARCH" ]; then
    [ "$ARCH" = arm64 ] && [ "$HOST_ARCH" = amd64 ] || { log "cannot build for $ARCH on $HOST_ARCH"; exit 1; }
    CROSS=1
fi

# --- tools: debhelper (dh, dh_installsystemd, dh_installsysusers) and dpkg-dev (dpkg-shlibdeps, dpkg-gencontrol) ---
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }
missing=()
for p in debhelper dpkg-dev; do installed "$p" || missing+=("$p"); done
if [ -z "$CROSS" ] && [ "${#missing[@]}" -gt 0 ]; then
    log "installing: ${missing[*]}"
    sudo_=(); [ "$(id -u)" -eq 0 ] || sudo_=(sudo)
    export DEBIAN_FRONTEND=noninteractive
    "${sudo_[@]}" apt-get update -qq
    "${sudo_[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

[ -x "$BIN" ] || { log "no release binary at $BIN (make release)"; exit 1; }

VERSION="$(bash "$REPO/scripts/deb/version.sh")"

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
if [ -n "$CROSS" ]; then
    # shellcheck source=../arm64/lib.sh
    . "$REPO/scripts/arm64/lib.sh"
    shlibdeps_args="--admindir=$SYSROOT/var/lib/dpkg -l$SYSROOT/usr/lib/$GNU_TRIPLET"
    run_rules() {
        bash "$REPO/scripts/arm64/chroot.sh" sh -c "cd '$STAGE' && \
            SOURCE_DATE_EPOCH='$epoch' DEB_RULES_REQUIRES_ROOT=no GATTBRIDGE_REPO='$REPO' GATTBRIDGE_BIN='$BIN' \
            DEB_OUT='$DIST' GATTBRIDGE_SHLIBDEPS_ARGS='$shlibdeps_args' dpkg-architecture -a$ARCH -c debian/rules binary"
    }
else
    run_rules() {
        (cd "$STAGE" && GATTBRIDGE_REPO="$REPO" GATTBRIDGE_BIN="$BIN" DEB_OUT="$DIST" debian/rules binary)
    }
fi
if ! run_rules > "$REPO/.build-deb/build.log" 2>&1; then
    tail -30 "$REPO/.build-deb/build.log" >&2
    log "FAILED: debian/rules binary (log: .build-deb/build.log)"
    exit 1
fi
deb="$DIST/gattbridge_${VERSION}_${ARCH}.deb"
[ -f "$deb" ] || { log "debian/rules did not produce $deb"; exit 1; }
log "built $deb"
dpkg-deb --field "$deb" Version Depends Recommends >&2
echo "$deb"
