# Sourced by the scripts of scripts/arm64/: the cache's layout, logging, and apt with a private configuration.
#
# Everything the cross-build needs lives under ARM64_CACHE (default ~/.cache/gattbridge-arm64); nothing is installed
# on the host and the host's apt state (its lists, its dpkg status, its archive cache) is never touched: each suite
# and architecture gets its own apt directories under $ARM64_CACHE/apt/.
# shellcheck shell=bash

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# Under sudo, the invoking user's cache, not root's.
if [ -n "${SUDO_USER:-}" ] && [ -z "${ARM64_CACHE:-}" ]; then
    ARM64_CACHE="$(getent passwd "$SUDO_USER" | cut -d: -f6)/.cache/gattbridge-arm64"
fi
ARM64_CACHE="${ARM64_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gattbridge-arm64}"
export ARM64_CACHE

# The cross compiler and the arm64 standard library must be one Swift version: Debian sid's, for both architectures.
SWIFT_DEBIAN_VERSION="6.2.3-1+b1"
# The target system: bookworm's libraries (glibc 2.36), so the binary runs on Debian 12 and 13 and Raspberry Pi OS
# bookworm and trixie.
TARGET_SUITE=bookworm
TRIPLE=aarch64-unknown-linux-gnu
GNU_TRIPLET=aarch64-linux-gnu

SID_ROOT="$ARM64_CACHE/sid-root"
SDK_DIR="$ARM64_CACHE/sdk"
SDK_NAME=gattbridge-aarch64
SYSROOT="$SDK_DIR/$SDK_NAME.artifactbundle/$SDK_NAME/$TRIPLE/sysroot"
RUNTIME_ROOT="$ARM64_CACHE/runtime-root"
TOOLS="$ARM64_CACHE/tools"
DOWNLOADS="$ARM64_CACHE/downloads"

log() { printf 'arm64: %s\n' "$*" >&2; }
fail() { log "FAILED: $*"; exit 1; }

# The host's Debian mirror (the first bookworm source in its apt sources), or ARM64_MIRROR.
debian_mirror() {
    if [ -n "${ARM64_MIRROR:-}" ]; then echo "$ARM64_MIRROR"; return; fi
    local f m=""
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
        [ -f "$f" ] || continue
        case "$f" in
            *.list) m="$(awk '$1 == "deb" { i = 2; if ($2 ~ /^\[/) { while ($i !~ /\]$/) i++; i++ }
                                           if ($(i + 1) == "bookworm") { print $i; exit } }' "$f")" ;;
            *.sources) m="$(awk 'BEGIN { RS = ""; FS = "\n" }
                    /(^|\n)Suites:[^\n]*(^| )bookworm( |\n|$)/ {
                        for (i = 1; i <= NF; i++) if ($i ~ /^URIs:/) { sub(/^URIs:[ \t]*/, "", $i); split($i, u, " "); print u[1]; exit } }' "$f")" ;;
        esac
        [ -n "$m" ] && { echo "$m"; return; }
    done
    echo "http://deb.debian.org/debian"
}

# papt SUITE ARCH apt-get|apt-cache ARGS…: apt for one suite and architecture with its own lists, cache and an empty
# dpkg status (so `install --download-only` fetches a package's whole closure). Check-Valid-Until is off because this
# machine's clock may be ahead of the archive's Release files.
papt() {
    local suite=$1 arch=$2 tool=$3; shift 3
    local d="$ARM64_CACHE/apt/$suite-$arch"
    mkdir -p "$d/etc/sources.list.d" "$d/etc/preferences.d" "$d/state/lists/partial" "$d/cache/archives/partial"
    [ -f "$d/state/status" ] || : > "$d/state/status"
    echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $(debian_mirror) $suite main" \
        > "$d/etc/sources.list"
    "$tool" -o Dir::Etc::SourceList="$d/etc/sources.list" -o Dir::Etc::SourceParts="$d/etc/sources.list.d" \
        -o Dir::Etc::Preferences="$d/etc/preferences" -o Dir::Etc::PreferencesParts="$d/etc/preferences.d" \
        -o Dir::State="$d/state" -o Dir::State::status="$d/state/status" -o Dir::Cache="$d/cache" \
        -o APT::Architecture="$arch" -o APT::Architectures::="$arch" -o Acquire::Check-Valid-Until=false \
        -o Acquire::Languages=none -o Debug::NoLocking=1 -o APT::Sandbox::User="$(id -un)" "$@"
}

# Lists for SUITE/ARCH, fetched once a day at most.
papt_update() {
    local stamp="$ARM64_CACHE/apt/$1-$2/updated"
    if [ -z "$(find "$stamp" -mmin -1440 2>/dev/null)" ]; then
        papt "$1" "$2" apt-get update -qq >/dev/null || fail "apt-get update for $1/$2"
        touch "$stamp"
    fi
}

# fetch_closure SUITE ARCH DIR PACKAGE…: the .debs of the packages and of everything they depend on, into DIR.
fetch_closure() {
    local suite=$1 arch=$2 dir=$3; shift 3
    papt_update "$suite" "$arch"
    mkdir -p "$dir"
    papt "$suite" "$arch" apt-get install -y -qq --download-only --no-install-recommends \
        -o Dir::Cache::archives="$dir" "$@" >/dev/null || fail "downloading $* ($suite/$arch)"
}

# unpack_into ROOT DEB…: extract packages into a merged-/usr tree (lib, bin, sbin are links into usr/, as on Debian 12+).
unpack_into() {
    local root=$1; shift
    mkdir -p "$root/usr/lib" "$root/usr/bin" "$root/usr/sbin"
    local d; for d in lib bin sbin; do [ -L "$root/$d" ] || ln -sfn "usr/$d" "$root/$d"; done
    local deb; for deb in "$@"; do
        dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$root" --keep-directory-symlink \
            || fail "unpacking $deb"
    done
}

# Absolute symbolic links inside ROOT point at the host; make them relative to ROOT.
relativize_links() {
    local root=$1 link target
    while IFS= read -r -d '' link; do
        target="$(readlink "$link")"
        case "$target" in
            /*) ln -sfn "$(realpath -m --relative-to="$(dirname "$link")" "$root$target")" "$link" ;;
        esac
    done < <(find "$root" -type l -print0)
}

