#!/usr/bin/env bash
# chroot.sh COMMAND…: runs COMMAND as root in the sid root (SID_ROOT, default the cache's), in a mount namespace of
# its own, so the mounts it needs (/proc, /dev, /sys, the checkout, the cache, the host's Swift package mirror) vanish
# with it whatever happens. The checkout and the cache appear at the same paths as on the host, so paths in flags
# and build logs mean the same on both sides. git in the root reads github.com addresses as the host's git does
# (its url.*.insteadOf settings), so package resolution uses the same sources.
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
root="${SID_ROOT_OVERRIDE:-$SID_ROOT}"
[ "$(id -u)" -eq 0 ] || exec sudo --preserve-env=ARM64_CACHE,ARM64_MIRROR,SID_ROOT_OVERRIDE "$BASH" "$0" "$@"
[ -d "$root/usr" ] || fail "no sid root at $root (scripts/arm64/toolchain.sh)"

cp -L /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
{
    echo "[safe]"
    echo "    directory = *"
    git config --get-regexp '^url\..*\.insteadof$' 2>/dev/null | while read -r key value; do
        base="${key#url.}"; base="${base%.insteadof}"
        printf '[url "%s"]\n    insteadOf = %s\n' "$base" "$value"
    done
} > "$root/etc/gitconfig"

binds=("$REPO" "$ARM64_CACHE")
# The host's local package mirror, read-only, when git points github.com at a local folder.
for dir in $(git config --get-regexp '^url\..*\.insteadof$' 2>/dev/null | awk '{print $1}' \
        | sed -e 's/^url\.//' -e 's/\.insteadof$//' | grep '^/' | sort -u); do
    [ -d "$dir" ] && binds+=("$dir")
done

exec unshare --mount --propagation private -- "$BASH" -c '
    set -e
    root=$1; shift
    n=$1; shift
    mount -t proc proc "$root/proc"
    mount --rbind /dev "$root/dev"
    mount -t sysfs sys "$root/sys"
    for ((i = 0; i < n; i++)); do
        dir=$1; shift
        mkdir -p "$root$dir"
        mount --bind "$dir" "$root$dir"
    done
    exec chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin LANG=C.UTF-8 \
        TERM=dumb "$@"
' _ "$root" "${#binds[@]}" "${binds[@]}" "$@"
