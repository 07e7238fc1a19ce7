# Sourced by the scripts of scripts/arm64/: the caches' layout, who runs what, logging, and apt with a private
# configuration.
#
# Root is needed for two things only: debootstrap of the sid root and apt-get inside it (dpkg must own files as root).
# Everything that reads the checkout or what the toolchain built from it (the compile, dpkg-shlibdeps, packaging)
# runs as the invoking user, chrooted into the sid root by root but with the user's ids (chroot.sh). So there are
# two caches, and root never writes to or chroots into a tree a user could have planted:
#
#   ARM64_ROOT_CACHE (default /var/cache/gattbridge-arm64): debootstrap and the sid root. Made and used by root only;
#       before every use it and every directory above it must be owned by root and writable by nobody else
#       (require_root_owned), and the sid root is checked for files of other owners (check_sid_root).
#   ARM64_CACHE (default the invoking user's ~/.cache/gattbridge-arm64): the SDK (sysroot, arm64 Swift runtime),
#       qemu-user-static, downloads, apt lists, the runtime root for qemu: made and read by the invoking user only.
#
# Nothing is installed on the host and the host's apt state (its lists, its dpkg status, its archive cache) is never
# touched: each suite and architecture gets its own apt directories under the cache that uses it.
# shellcheck shell=bash

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# The invoking user: under sudo the one who ran sudo, else whoever runs this (root in CI).
if [ "$(id -u)" -eq 0 ] && [ -n "${SUDO_UID:-}" ]; then
    INVOKER_UID=$SUDO_UID INVOKER_GID=${SUDO_GID:-$SUDO_UID}
else
    INVOKER_UID=$(id -u) INVOKER_GID=$(id -g)
fi
INVOKER_HOME="$(getent passwd "$INVOKER_UID" | cut -d: -f6)"
ARM64_CACHE="${ARM64_CACHE:-${XDG_CACHE_HOME:-${INVOKER_HOME:-$HOME}/.cache}/gattbridge-arm64}"
ARM64_ROOT_CACHE="${ARM64_ROOT_CACHE:-/var/cache/gattbridge-arm64}"
export ARM64_CACHE ARM64_ROOT_CACHE
# A Release file with a Valid-Until is accepted until this many days after its Date (apt's Min-ValidTime), however
# early its Valid-Until: this machine's mirror serves sid's Release weeks after it expired. Older ones, or replayed
# ones, are refused; validity is never switched off.
ARM64_RELEASE_MIN_VALID_DAYS="${ARM64_RELEASE_MIN_VALID_DAYS:-90}"

# The cross compiler and the arm64 standard library must be one Swift version: Debian sid's, for both architectures.
SWIFT_DEBIAN_VERSION="6.2.3-1+b1"
# The target system: bookworm's libraries (glibc 2.36), so the binary runs on Debian 12 and 13 and Raspberry Pi OS
# bookworm and trixie.
TARGET_SUITE=bookworm
TRIPLE=aarch64-unknown-linux-gnu
GNU_TRIPLET=aarch64-linux-gnu

SID_ROOT="$ARM64_ROOT_CACHE/sid-root"
ROOT_TOOLS="$ARM64_ROOT_CACHE/tools"
SDK_DIR="$ARM64_CACHE/sdk"
SDK_NAME=gattbridge-aarch64
SYSROOT="$SDK_DIR/$SDK_NAME.artifactbundle/$SDK_NAME/$TRIPLE/sysroot"
RUNTIME_ROOT="$ARM64_CACHE/runtime-root"
TOOLS="$ARM64_CACHE/tools"
DOWNLOADS="$ARM64_CACHE/downloads"

log() { printf 'arm64: %s\n' "$*" >&2; }
fail() { log "FAILED: $*"; exit 1; }

# The scripts that work on the user's files call this first: run as root through sudo (`sudo make deb ARCH=arm64`),
# they run again as the user who ran sudo, so root never writes into that user's checkout or cache.
as_invoking_user() {
    if [ "$(id -u)" -eq 0 ] && [ "$INVOKER_UID" != 0 ]; then
        exec setpriv --reuid="$INVOKER_UID" --regid="$INVOKER_GID" --init-groups \
            env HOME="$INVOKER_HOME" "$BASH" "$0" "$@"
    fi
}

# require_root_owned PATH: PATH exists, is written without symbolic links, and it and every directory above it are
# owned by root and writable by no one else (a group-writable one only by group root; a sticky directory such as /tmp
# is allowed above it, where others cannot rename or remove what root owns). Only then can no other user have put
# anything in it or swapped it for something else.
require_root_owned() {
    local path=$1 p uid gid mode
    [ -e "$path" ] || { log "refused: $path does not exist"; return 1; }
    p="$(realpath -e -- "$path")" || return 1
    [ "$p" = "$path" ] || [ "$p" = "${path%/}" ] \
        || { log "refused: $path is reached through a symbolic link ($p)"; return 1; }
    while :; do
        read -r uid gid mode < <(stat -c '%u %g %a' -- "$p")
        [ "$uid" = 0 ] || { log "refused: $p is owned by uid $uid, not root"; return 1; }
        mode=$((8#$mode))
        if (( mode & 8#0002 )) || { (( mode & 8#0020 )) && [ "$gid" != 0 ]; }; then
            if [ "$p" = "$path" ] || ! (( mode & 8#1000 )) || [ ! -d "$p" ]; then
                log "refused: $p is writable by users other than root"; return 1
            fi
        fi
        [ "$p" = / ] && break
        p="$(dirname -- "$p")"
    done
}

# check_sid_root TREE: a root that root may chroot into: root-owned down from /, its etc a directory of its own, and no
# file in it owned by a user (uid 1000 and up, nobody included) or writable by all (a sticky directory aside).
check_sid_root() {
    local tree=$1 odd
    require_root_owned "$tree" || return 1
    local d; for d in etc usr usr/bin; do
        [ -d "$tree/$d" ] && [ ! -L "$tree/$d" ] || { log "refused: $tree/$d is not a directory"; return 1; }
    done
    odd="$(find "$tree" -xdev \( -path "$tree/proc" -o -path "$tree/sys" -o -path "$tree/dev" \) -prune \
        -o \( -uid +999 -o \( -perm -0002 ! -type l ! \( -type d -perm -1000 \) \) \) -print -quit)"
    [ -z "$odd" ] || { log "refused: $odd in $tree is owned by a user or writable by all"; return 1; }
}

# replace_file PATH < CONTENT: PATH becomes a regular file with CONTENT; a symbolic link there is replaced, never
# followed (the new file is renamed over it), and a PATH whose directory is a link is refused.
replace_file() {
    local path=$1 dir tmp
    dir="$(dirname -- "$path")"
    [ -d "$dir" ] && [ ! -L "$dir" ] || { log "refused: $dir is not a directory"; return 1; }
    tmp="$(mktemp -- "$dir/.gattbridge.XXXXXX")" || return 1
    cat > "$tmp" && chmod 0644 "$tmp" && mv -fT -- "$tmp" "$path" || { rm -f -- "$tmp"; return 1; }
}

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
# dpkg status (so `install --download-only` fetches a package's whole closure), under PAPT_DIR (default the user's
# cache; root's cache for root's downloads). Its locks are its own directories' (no NoLocking needed).
papt() {
    local suite=$1 arch=$2 tool=$3; shift 3
    local d="${PAPT_DIR:-$ARM64_CACHE/apt}/$suite-$arch"
    mkdir -p "$d/etc/sources.list.d" "$d/etc/preferences.d" "$d/state/lists/partial" "$d/cache/archives/partial"
    [ -f "$d/state/status" ] || : > "$d/state/status"
    echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $(debian_mirror) $suite main" \
        > "$d/etc/sources.list"
    "$tool" -o Dir::Etc::SourceList="$d/etc/sources.list" -o Dir::Etc::SourceParts="$d/etc/sources.list.d" \
        -o Dir::Etc::Preferences="$d/etc/preferences" -o Dir::Etc::PreferencesParts="$d/etc/preferences.d" \
        -o Dir::State="$d/state" -o Dir::State::status="$d/state/status" -o Dir::Cache="$d/cache" \
        -o APT::Architecture="$arch" -o APT::Architectures::="$arch" -o Acquire::Min-ValidTime=$((ARM64_RELEASE_MIN_VALID_DAYS * 86400)) \
        -o Acquire::Languages=none -o APT::Sandbox::User="$(id -un)" "$@"
}

# Lists for SUITE/ARCH, fetched once a day at most.
papt_update() {
    local stamp="${PAPT_DIR:-$ARM64_CACHE/apt}/$1-$2/updated"
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

