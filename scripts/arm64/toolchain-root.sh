#!/usr/bin/env bash
# toolchain-root.sh (as root; toolchain.sh runs it, through sudo when needed): prepares (once) and checks (every
# time) the part of the arm64 cross toolchain that needs root, in ARM64_ROOT_CACHE (lib.sh):
#
#   tools/debootstrap  debootstrap (sid's), unpacked, not installed
#   sid-root/          a Debian sid amd64 root with Swift (swiftlang), debhelper and aarch64 binutils: the compiler and
#                      the package tools run in it by chroot (sid's swiftlang needs glibc 2.42)
#
# Root because debootstrap and dpkg inside the root make files owned by root and device nodes. This is all root does
# for the cross-build: it reads nothing of the checkout or of a user's cache, and the cache it works in must be
# root's own (require_root_owned) before anything in it is run or chrooted into.
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
[ "$(id -u)" -eq 0 ] || fail "toolchain-root.sh runs as root"
parent="$(dirname "$ARM64_ROOT_CACHE")"
require_root_owned "$parent" || fail "ARM64_ROOT_CACHE must be in a directory only root can write"
[ -d "$ARM64_ROOT_CACHE" ] || mkdir -m 0755 "$ARM64_ROOT_CACHE"
require_root_owned "$ARM64_ROOT_CACHE" || fail "ARM64_ROOT_CACHE $ARM64_ROOT_CACHE is not root's own"
export PAPT_DIR="$ARM64_ROOT_CACHE/apt"
umask 022
exec 9> "$ARM64_ROOT_CACHE/.lock"
flock 9

stamp_ok() { [ "$(cat "$1" 2>/dev/null)" = "$2" ]; }

# --- tools --------------------------------------------------------------------------------------------------------
tools_key="debootstrap-sid v2"
if ! stamp_ok "$ROOT_TOOLS/.stamp" "$tools_key"; then
    log "fetching debootstrap"
    rm -rf "$ROOT_TOOLS" && mkdir -p "$ROOT_TOOLS/debs"
    papt_update sid amd64
    (cd "$ROOT_TOOLS/debs" && papt sid amd64 apt-get download -qq debootstrap >/dev/null) \
        || fail "downloading debootstrap"
    dpkg-deb -x "$ROOT_TOOLS"/debs/debootstrap_*.deb "$ROOT_TOOLS/debootstrap"
    rm -rf "$ROOT_TOOLS/debs"
    echo "$tools_key" > "$ROOT_TOOLS/.stamp"
fi

# --- the sid root with the compiler -----------------------------------------------------------------------------
SID_PACKAGES="swiftlang=$SWIFT_DEBIAN_VERSION libc6-dev pkgconf git ca-certificates debhelper dpkg-dev
binutils-aarch64-linux-gnu"
sid_key="$(echo $SID_PACKAGES) v2"
if ! stamp_ok "$SID_ROOT/.gattbridge-stamp" "$sid_key"; then
    tmp="$SID_ROOT.tmp"
    # A base system already unpacked by an interrupted run is kept; anything later is redone.
    if ! [ -f "$tmp/.debootstrapped" ]; then
    rm -rf "$tmp"
    log "debootstrap sid (amd64) into $tmp"
    DEBOOTSTRAP_DIR="$ROOT_TOOLS/debootstrap/usr/share/debootstrap" "$ROOT_TOOLS/debootstrap/usr/sbin/debootstrap" \
        --variant=minbase --arch=amd64 --keyring=/usr/share/keyrings/debian-archive-keyring.gpg \
        sid "$tmp" "$(debian_mirror)" > "$ARM64_ROOT_CACHE/debootstrap.log" 2>&1 \
        || { tail -20 "$ARM64_ROOT_CACHE/debootstrap.log" >&2; fail "debootstrap sid"; }
    touch "$tmp/.debootstrapped"
    fi
    # Release files' validity checked, with lib.sh's allowance for this machine's mirror.
    printf 'Acquire::Min-ValidTime "%s";\nAPT::Install-Recommends "false";\n' \
        "$((ARM64_RELEASE_MIN_VALID_DAYS * 86400))" | replace_file "$tmp/etc/apt/apt.conf.d/90gattbridge"
    log "installing Swift $SWIFT_DEBIAN_VERSION and the package tools in the sid root"
    bash "$(dirname "$0")/chroot.sh" --admin sid-root.tmp sh -c \
        "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(echo $SID_PACKAGES) >/dev/null \
         && apt-get clean" || fail "installing swiftlang in the sid root"
    rm -rf "$SID_ROOT"
    mv "$tmp" "$SID_ROOT"
    echo "$sid_key" > "$SID_ROOT/.gattbridge-stamp"
fi

check_sid_root "$SID_ROOT" || fail "$SID_ROOT"
