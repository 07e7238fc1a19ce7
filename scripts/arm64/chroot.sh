#!/usr/bin/env bash
# chroot.sh COMMAND…: runs COMMAND in the sid root as the invoking user (lib.sh: the user who ran sudo, or whoever
# runs this), with the checkout and the user's cache at the same paths as on the host, so paths in flags and build
# logs mean the same on both sides. git in the root reads github.com addresses as the host's git does (its
# url.*.insteadOf settings, handed over in GIT_CONFIG_* variables, not written into the root), so package resolution
# uses the same sources; the user owns the checkout, so git needs no safe.directory exception.
#
# chroot.sh --admin TREE COMMAND…: runs COMMAND as root in TREE (sid-root or sid-root.tmp of ARM64_ROOT_CACHE), with
# nothing of the user's mounted: only toolchain-root.sh's apt-get, in a tree root made.
#
# Root is needed to mount and to chroot: run as a user, this runs itself again through sudo. Either way the tree must
# pass lib.sh's check_sid_root first (root-owned from / down, no user's file in it), so a tree a user planted, through
# ARM64_ROOT_CACHE or otherwise, is never entered. HOME is the user's ARM64_CACHE/home (toolchain.sh makes it). The mounts (/proc, /dev, /sys, the binds) are made in a mount
# namespace of this command's own and vanish with it whatever happens. As the user, the root is remounted nosuid and
# no_new_privs is set: nothing in it can become root again.
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

admin=() tree=sid-root
if [ "${1:-}" = --admin ]; then
    tree=${2:-}
    case "$tree" in sid-root|sid-root.tmp) ;; *) fail "--admin sid-root|sid-root.tmp, not '$tree'" ;; esac
    admin=(--admin "$tree"); shift 2
fi
[ "$(id -u)" -eq 0 ] \
    || exec sudo --preserve-env=ARM64_CACHE,ARM64_ROOT_CACHE,ARM64_MIRROR "$BASH" "$0" "${admin[@]}" "$@"
root="$ARM64_ROOT_CACHE/$tree"
[ -d "$root/usr" ] || fail "no sid root at $root (scripts/arm64/toolchain.sh)"
check_sid_root "$root" || fail "not entering $root"

if [ "${#admin[@]}" -gt 0 ]; then
    # apt-get in the root needs the host's name servers; the file is replaced, never written through.
    replace_file "$root/etc/resolv.conf" < /etc/resolv.conf || fail "writing $root/etc/resolv.conf"
    exec unshare --mount --propagation private -- "$BASH" -c '
        set -e
        root=$1; shift
        mount -t proc proc "$root/proc"
        mount --rbind /dev "$root/dev"
        mount -t sysfs sys "$root/sys"
        exec chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin \
            LANG=C.UTF-8 TERM=dumb "$@"
    ' _ "$root" "$@"
fi

binds=("$REPO" "$ARM64_CACHE")
git_env=() n=0
# The host's local package mirror, read-only, when git points github.com at a local folder.
while read -r key value; do
    [ -n "$key" ] || continue
    base="${key#url.}"; base="${base%.insteadof}"
    git_env+=("GIT_CONFIG_KEY_$n=url.$base.insteadOf" "GIT_CONFIG_VALUE_$n=$value"); n=$((n + 1))
    case "$base" in /*) [ -d "$base" ] && binds+=("$base") ;; esac
done < <(git config --get-regexp '^url\..*\.insteadof$' 2>/dev/null || true)
git_env+=("GIT_CONFIG_COUNT=$n")
# Each bind as its real path (no link, no ..), so its mount point is a new directory inside the root, nowhere else.
for i in "${!binds[@]}"; do
    binds[i]="$(realpath -e -- "${binds[i]}")" || fail "no ${binds[i]}"
    [ "${binds[i]}" != / ] || fail "cannot bind / into the root"
done

exec unshare --mount --propagation private -- "$BASH" -c '
    set -e
    root=$1 uid=$2 gid=$3 n=$4; shift 4
    mount --bind "$root" "$root"
    mount -o remount,bind,nosuid "$root"
    mount -t proc proc "$root/proc"
    mount --rbind /dev "$root/dev"
    mount -t sysfs sys "$root/sys"
    for ((i = 0; i < n; i++)); do
        dir=$1; shift
        mkdir -p "$root$dir"
        mount --bind "$dir" "$root$dir"
        # The checkout and the cache are written; the package mirror only read.
        if [ "$i" -lt 2 ]; then mount -o remount,bind,nosuid "$root$dir"
        else mount -o remount,bind,ro,nosuid "$root$dir"; fi
    done
    exec setpriv --no-new-privs unshare --root="$root" --setgid="$gid" --setuid="$uid" -- /usr/bin/env -i "$@"
' _ "$root" "$INVOKER_UID" "$INVOKER_GID" "${#binds[@]}" "${binds[@]}" \
    HOME="$ARM64_CACHE/home" PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin LANG=C.UTF-8 TERM=dumb \
    "${git_env[@]}" "$@"
