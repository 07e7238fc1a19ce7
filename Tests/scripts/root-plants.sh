#!/usr/bin/env bash
# The audit's two plants (issue 41) against the arm64 cross-build's own checks (scripts/arm64/lib.sh and chroot.sh,
# run as they are, not re-implemented), on scratch trees; no network, a few seconds. Part of `make test`.
#
#   a. A root whose etc/resolv.conf and etc/gitconfig are symbolic links to files outside it: chroot.sh, as root and
#      as the user, writes neither link's target (resolv.conf is replaced by a file of the root's own, gitconfig is
#      never written: git's settings travel in GIT_CONFIG_* variables).
#   b. A planted root whose /usr/bin/env is a hostile script: refused before anything in it runs, whether the tree,
#      the cache above it, or one file in it is not root's; the script never runs, as root or at all.
#
# And the control that makes those meaningful: the same hostile script in a tree root owns does run, and when the
# build is for a user (SUDO_UID/SUDO_GID as sudo sets them) it runs with that user's ids, not root's.
#
# chroot.sh needs root: run as a user, only the checks (require_root_owned, check_sid_root) are exercised.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# shellcheck source=../../scripts/arm64/lib.sh
. "$REPO/scripts/arm64/lib.sh"
CHROOT="$REPO/scripts/arm64/chroot.sh"
USER_ID=65534   # nobody: the user a plant comes from

failures=0
ok() { printf 'root-plants: ok: %s\n' "$*"; }
bad() { printf 'root-plants: FAILED: %s\n' "$*" >&2; failures=$((failures + 1)); }

scratch="$(mktemp -d /tmp/gattbridge-plants.XXXXXX)"
trap 'rm -rf "$scratch"' EXIT
chmod 0755 "$scratch"
outside="$scratch/outside"
mkdir "$outside"
echo original > "$outside/resolv.conf"
echo original > "$outside/gitconfig"
usercache="$scratch/user-cache"
mkdir -p "$usercache/home"

# A root that can run a command: the host's env, sh, id, true and the libraries they load, merged-/usr.
minimal_tree() {
    local tree=$1 bin lib dest
    mkdir -p "$tree/etc" "$tree/usr/bin" "$tree/usr/lib" "$tree/usr/lib64" "$tree/proc" "$tree/dev" "$tree/sys" \
        "$tree/tmp"
    chmod 1777 "$tree/tmp"
    ln -s usr/bin "$tree/bin"; ln -s usr/lib "$tree/lib"; ln -s usr/lib64 "$tree/lib64"
    for bin in env sh id true; do
        bin="$(readlink -f "$(type -P "$bin")")"
        cp "$bin" "$tree/usr/bin/$(basename "$bin")"
        for lib in $(ldd "$bin" | grep -o '/[^ ]*'); do
            case "$lib" in /usr/*) dest=$lib ;; *) dest="/usr$lib" ;; esac
            mkdir -p "$tree$(dirname "$dest")"
            cp -L "$lib" "$tree$dest"
        done
    done
    [ -e "$tree/usr/bin/sh" ] || ln -s "$(basename "$(readlink -f "$(type -P sh)")")" "$tree/usr/bin/sh"
    # The hostile env: reports the uid it ran as into the user's cache (mounted at the same path as the user) and
    # into the tree's /tmp (as root).
    rm "$tree/usr/bin/env"
    printf '#!/bin/sh\nfor d in "%s" /tmp; do echo ran > "$d/ran-as-$(id -u)"; done 2>/dev/null\nexit 0\n' \
        "$usercache" > "$tree/usr/bin/env"
    chmod 0755 "$tree/usr/bin/env"
}
ran() { ls "$usercache" "$scratch"/*/sid-root/tmp 2>/dev/null | grep '^ran-as-' | sort -u | tr '\n' ' ' || true; }
clear_marks() { rm -f "$usercache"/ran-as-* "$scratch"/*/sid-root/tmp/ran-as-*; }

# --- b. planted roots ---------------------------------------------------------------------------------------------
# b1: the whole cache a user's (ARM64_ROOT_CACHE pointed at it).
minimal_tree "$scratch/planted/sid-root"
if [ "$(id -u)" -eq 0 ]; then chown -R "$USER_ID:$USER_ID" "$scratch/planted"; fi
if require_root_owned "$scratch/planted" 2>/dev/null; then bad "require_root_owned accepted a user's cache"
else ok "require_root_owned refuses a cache a user owns"; fi
if check_sid_root "$scratch/planted/sid-root" 2>/dev/null; then bad "check_sid_root accepted a user's tree"
else ok "check_sid_root refuses a tree a user owns"; fi

# b2: a root-owned cache holding a user's tree; b3: a root-owned tree with one user's file in it (its env).
mkdir -p "$scratch/mixed" "$scratch/onefile"
minimal_tree "$scratch/mixed/sid-root"
minimal_tree "$scratch/onefile/sid-root"
if [ "$(id -u)" -eq 0 ]; then
    chown -R "$USER_ID:$USER_ID" "$scratch/mixed/sid-root"
    chown "$USER_ID:$USER_ID" "$scratch/onefile/sid-root/usr/bin/env"
    for cache in planted mixed onefile; do
        for mode in user admin; do
            clear_marks
            args=(); [ "$mode" = user ] || args=(--admin sid-root)
            if ARM64_ROOT_CACHE="$scratch/$cache" ARM64_CACHE="$usercache" bash "$CHROOT" "${args[@]}" true \
                    >"$scratch/log" 2>&1; then
                bad "chroot.sh ($mode) entered the planted $cache tree: $(cat "$scratch/log")"
            elif [ -n "$(ran)" ]; then
                bad "the planted $cache tree's env ran: $(ran)"
            else
                ok "chroot.sh ($mode) refuses the planted $cache tree, its env never ran ($(tail -1 "$scratch/log"))"
            fi
        done
    done
else
    chmod -R go-w "$scratch/onefile"
    echo "root-plants: not root: chroot.sh itself not run (it would ask sudo)"
fi

# --- a. links out of a root-owned tree, and the control -----------------------------------------------------------
if [ "$(id -u)" -eq 0 ]; then
    tree="$scratch/rootcache/sid-root"
    minimal_tree "$tree"
    ln -s "$outside/resolv.conf" "$tree/etc/resolv.conf"
    ln -s "$outside/gitconfig" "$tree/etc/gitconfig"
    chmod 0755 "$scratch/rootcache"
    check_sid_root "$tree" || bad "check_sid_root refused a root-owned tree"

    clear_marks
    if ARM64_ROOT_CACHE="$scratch/rootcache" ARM64_CACHE="$usercache" bash "$CHROOT" --admin sid-root true \
            >"$scratch/log" 2>&1; then
        [ "$(ran)" = "ran-as-0 " ] && ok "control: chroot.sh --admin runs a root-owned tree as root" \
            || bad "control: --admin ran as '$(ran)'"
    else bad "chroot.sh --admin failed on a root-owned tree: $(cat "$scratch/log")"; fi
    [ "$(cat "$outside/resolv.conf")" = original ] && [ -f "$tree/etc/resolv.conf" ] && [ ! -L "$tree/etc/resolv.conf" ] \
        && ok "resolv.conf: the link replaced by a file, its target untouched" \
        || bad "resolv.conf written through the link ($(cat "$outside/resolv.conf"))"

    # As a user under sudo: the tree runs with the user's ids; the user's cache is theirs.
    chown -R "$USER_ID:$USER_ID" "$usercache"
    clear_marks
    if SUDO_UID=$USER_ID SUDO_GID=$USER_ID ARM64_ROOT_CACHE="$scratch/rootcache" ARM64_CACHE="$usercache" \
            bash "$CHROOT" true >"$scratch/log" 2>&1; then
        [ "$(ran)" = "ran-as-$USER_ID " ] && ok "control: chroot.sh runs the build as the invoking user ($USER_ID), not root" \
            || bad "control: ran as '$(ran)', not $USER_ID"
    else bad "chroot.sh failed on a root-owned tree for a user: $(cat "$scratch/log")"; fi
    [ "$(cat "$outside/gitconfig")" = original ] && [ -L "$tree/etc/gitconfig" ] \
        && ok "gitconfig: never written, its link's target untouched" \
        || bad "gitconfig written ($(cat "$outside/gitconfig"))"
fi

[ "$failures" -eq 0 ] || { echo "root-plants: $failures failed" >&2; exit 1; }
echo "root-plants: passed"
