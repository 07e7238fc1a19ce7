#!/usr/bin/env bash
# `make test-deb`: checks dist/gattbridge_<version>_<arch>.deb (from `make deb`).
#
#   1. lintian: no errors (the warnings it may print are listed below, with why they stay).
#   2. An install on a fresh Debian 12: a `debootstrap --variant=minbase bookworm` root of the test's own
#      (DEB_TEST_CACHE/root; the clean root is cached as DEB_TEST_CACHE/bookworm-minbase-<arch>.tar and the
#      downloaded .debs in DEB_TEST_CACHE/apt-archives, so a rerun needs the network only to revalidate the package
#      lists), in which
#      `apt-get install --no-install-recommends ./the.deb` must pull every dependency from the archive. Then:
#      `gattbridge --version` is the package's version, nothing in `ldd` is missing, `config check` of the shipped
#      config passes, `systemd-analyze verify` of the installed unit prints nothing, the user exists (in group
#      bluetooth), the service is enabled, the mqtt-password placeholder and the D-Bus policy are there; a
#      reinstall (the upgrade path of the maintainer scripts) keeps an edited config and a written password;
#      `apt-get remove` keeps /etc/gattbridge, `apt-get purge` removes it.
#
# It needs root (debootstrap, chroot, mounts): run as a user, it runs itself again through sudo. Root works only in
# DEB_TEST_CACHE (default /var/cache/gattbridge-deb-test), which it and every directory above must be root's own
# (scripts/arm64/lib.sh: require_root_owned): the root chrooted into and every log root writes are there, never in the
# checkout, where a link planted by a user could send a write elsewhere. Of the checkout root only reads the .deb;
# lintian runs as the invoking user. The mounts are made in a mount namespace of the test's own (unshare -m), so they
# vanish with it whatever happens. The install runs the package's maintainer scripts as root in the chroot: the test
# is for packages you built.
#
# Environment: DEB_TEST_MIRROR overrides the Debian mirror, which is otherwise the first bookworm source in this
# machine's /etc/apt/sources.list*.
#
# lintian warnings that stay (neither is an error; lintian 2.116, bookworm):
#   - no-manual-page: gattbridge has no man page; `gattbridge --help` (every subcommand has one) and the guide in docs/ are
#     its documentation.
#   - wrong-name-for-changelog-of-native-package: docs/install.md names /usr/share/doc/gattbridge/changelog.Debian.gz. The
#     package is native (its version is exactly what `gattbridge --version` prints, no Debian revision), for which
#     policy 12.7 would name it changelog.gz.
# With -I --pedantic it adds only informational tags: hardening-no-bindnow (the release link flags are chosen for the
# idle daemon's memory and start, docs/dev/MEMORY.md), hardening-no-fortify-functions (_FORTIFY_SOURCE is for C, and
# gattbridge has no C sources), binary-has-unneeded-section .comment, spelling-error-in-binary (strings in the
# Swift runtime, not ours) and package-supports-alternative-init-but-no-init.d-script (the daemon is a Type=notify
# service: systemd only).
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

[ "$(id -u)" -eq 0 ] || exec sudo --preserve-env=DEB_TEST_MIRROR,DEB_TEST_CACHE "$BASH" "$0" "$@"
# A mount namespace of its own: the mounts under the root cannot outlive the test or leak into the host's.
[ "${1:-}" = --in-namespace ] && shift || exec unshare --mount --propagation private "$BASH" "$0" --in-namespace "$@"

# shellcheck source=../arm64/lib.sh
. "$REPO/scripts/arm64/lib.sh"
log() { printf 'test-deb: %s\n' "$*" >&2; }
fail() { log "FAILED: $*"; exit 1; }
started=$(date +%s)

WORK="${DEB_TEST_CACHE:-/var/cache/gattbridge-deb-test}"
require_root_owned "$(dirname "$WORK")" || fail "DEB_TEST_CACHE must be in a directory only root can write"
[ -d "$WORK" ] || mkdir -m 0755 "$WORK"
require_root_owned "$WORK" || fail "DEB_TEST_CACHE $WORK is not root's own"
ROOT="$WORK/root"
ARCHIVES="$WORK/apt-archives"
umask 022

VERSION="$(bash "$REPO/scripts/deb/version.sh")"
ARCH="$(dpkg --print-architecture)"
DEB="$REPO/dist/gattbridge_${VERSION}_${ARCH}.deb"
[ -f "$DEB" ] || fail "no $DEB (make deb)"

# --- tools ------------------------------------------------------------------------------------------------------
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }
missing=()
for p in lintian debootstrap debian-archive-keyring; do installed "$p" || missing+=("$p"); done
if [ "${#missing[@]}" -gt 0 ]; then
    log "installing: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# --- 1. lintian -------------------------------------------------------------------------------------------------
# As the invoking user: lintian unpacks and reads the package, which needs no root.
as_user=(); [ "$INVOKER_UID" = 0 ] || as_user=(setpriv --reuid="$INVOKER_UID" --regid="$INVOKER_GID" --init-groups)
"${as_user[@]}" bash "$REPO/scripts/deb/lintian.sh" "$DEB" || fail "lintian"
t_lintian=$(($(date +%s) - started))

# --- 2. a fresh Debian 12 root ------------------------------------------------------------------------------------
# The mirror this machine itself uses for bookworm: one-line ("deb URI bookworm …") or deb822 (URIs:/Suites:) sources.
find_mirror() {
    local f
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
        [ -f "$f" ] || continue
        case "$f" in
            *.list)
                awk '$1 == "deb" { i = 2; if ($2 ~ /^\[/) { while ($i !~ /\]$/) i++; i++ }
                                   if ($(i + 1) == "bookworm") { print $i; exit } }' "$f" ;;
            *.sources)
                # One stanza at a time: print its first URI when it is a deb source whose suites include bookworm.
                awk 'function flush() { if (deb && suite && uri != "") { print uri; found = 1 }
                                        deb = suite = 0; uri = "" }
                     /^[ \t]*$/ { flush(); if (found) exit; next }
                     tolower($1) == "types:" { for (i = 2; i <= NF; i++) if ($i == "deb") deb = 1 }
                     tolower($1) == "uris:" { uri = $2 }
                     tolower($1) == "suites:" { for (i = 2; i <= NF; i++) if ($i == "bookworm") suite = 1 }
                     tolower($1) == "enabled:" && tolower($2) == "no" { deb = 0 }
                     END { if (!found) flush() }' "$f" ;;
        esac
    done | head -1
}
MIRROR="${DEB_TEST_MIRROR:-$(find_mirror)}"
[ -n "$MIRROR" ] || fail "no bookworm source in /etc/apt/sources.list*; set DEB_TEST_MIRROR=http://…/debian"
CACHE="$WORK/bookworm-minbase-$ARCH.tar"

umount_all() {
    local m
    for m in "$ROOT/var/cache/apt/archives" "$ROOT/dev/pts" "$ROOT/sys" "$ROOT/proc"; do
        if mountpoint -q "$m" 2>/dev/null; then umount "$m" || umount -l "$m"; fi
    done
}
# rm -rf of the root must never reach into a mount (the bound /sys, the shared apt archives).
remove_root() {
    umount_all
    if grep -q " $ROOT/" /proc/self/mounts; then fail "still mounted under $ROOT: not removing it"; fi
    rm -rf "$ROOT"
}
trap umount_all EXIT

if [ ! -f "$CACHE" ]; then
    log "debootstrap --variant=minbase bookworm from $MIRROR (cached as $CACHE)"
    umount_all
    rm -rf "$WORK/bootstrap"
    mkdir -p "$WORK"
    debootstrap --variant=minbase --arch="$ARCH" bookworm "$WORK/bootstrap" "$MIRROR" >"$WORK/debootstrap.log" 2>&1 \
        || { tail -20 "$WORK/debootstrap.log" >&2; fail "debootstrap (log: $WORK/debootstrap.log)"; }
    # The package lists too, so a rerun's `apt-get update` only revalidates them.
    replace_file "$WORK/bootstrap/etc/resolv.conf" < /etc/resolv.conf || fail "resolv.conf"
    chroot "$WORK/bootstrap" apt-get update -qq
    chroot "$WORK/bootstrap" apt-get clean
    tar -C "$WORK/bootstrap" -cf "$CACHE.tmp" .
    mv "$CACHE.tmp" "$CACHE"
    rm -rf "$WORK/bootstrap"
fi

log "fresh root from $CACHE"
remove_root
mkdir -p "$ROOT" "$ARCHIVES/partial"
tar -C "$ROOT" -xf "$CACHE"
replace_file "$ROOT/etc/resolv.conf" < /etc/resolv.conf || fail "resolv.conf"
mount -t proc proc "$ROOT/proc"
mount --bind /sys "$ROOT/sys"
mount -o remount,bind,ro "$ROOT/sys"
mount -t devpts -o newinstance,ptmxmode=0666 devpts "$ROOT/dev/pts"
# The .debs the install downloads, kept between runs.
mount --bind "$ARCHIVES" "$ROOT/var/cache/apt/archives"
# No service may start in the root (invoke-rc.d and deb-systemd-invoke ask policy-rc.d).
printf '#!/bin/sh\nexit 101\n' | replace_file "$ROOT/usr/sbin/policy-rc.d"
chmod 0755 "$ROOT/usr/sbin/policy-rc.d"
replace_file "$ROOT/tmp/$(basename "$DEB")" < "$DEB"

in_root() {
    chroot "$ROOT" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8 "$@"
}

t0=$(date +%s)
in_root apt-get update -qq || fail "apt-get update in the root"
log "apt-get install --no-install-recommends ./$(basename "$DEB")"
in_root apt-get install -y -q --no-install-recommends "/tmp/$(basename "$DEB")" >"$WORK/install.log" 2>&1 \
    || { tail -30 "$WORK/install.log" >&2; fail "apt-get install (log: $WORK/install.log)"; }
t_install=$(($(date +%s) - t0))

# --- 3. the installed package -------------------------------------------------------------------------------------
check() { log "ok: $*"; }

got="$(in_root gattbridge --version)"
[ "$got" = "$VERSION" ] || fail "gattbridge --version printed '$got', the package is $VERSION"
check "gattbridge --version = $VERSION"

notfound="$(in_root ldd /usr/bin/gattbridge | grep 'not found' || true)"
[ -z "$notfound" ] || fail "libraries missing from Depends:"$'\n'"$notfound"
check "every library of /usr/bin/gattbridge installed"

out="$(in_root gattbridge config check --config /etc/gattbridge/config.yaml 2>&1)" \
    || fail "config check of the shipped config: $out"
grep -q '^ok' <<<"$out" || fail "config check printed: $out"
check "config check: $(head -1 <<<"$out")"

unit=/lib/systemd/system/gattbridge.service
grep -qx 'ExecStart=/usr/bin/gattbridge run --config /etc/gattbridge/config.yaml' "$ROOT$unit" \
    || fail "$unit: unexpected ExecStart"
out="$(in_root systemd-analyze verify "$unit" 2>&1)" || fail "systemd-analyze verify $unit: $out"
[ -z "$out" ] || fail "systemd-analyze verify $unit is not clean:"$'\n'"$out"
check "systemd-analyze verify $unit: clean"

in_root getent passwd gattbridge >/dev/null || fail "no user gattbridge"
in_root id -nG gattbridge | tr ' ' '\n' | grep -qx bluetooth || fail "gattbridge is not in group bluetooth"
check "user gattbridge ($(in_root id gattbridge))"

link="$ROOT/etc/systemd/system/multi-user.target.wants/gattbridge.service"
[ "$(readlink "$link")" = "$unit" ] || fail "not enabled: $link -> $(readlink "$link" || echo nothing)"
check "enabled: multi-user.target.wants/gattbridge.service -> $unit"

in_root dpkg-query -W -f='${Conffiles}\n' gattbridge | grep -q '^ /etc/gattbridge/config.yaml ' \
    || fail "/etc/gattbridge/config.yaml is not a conffile"
pw="$ROOT/etc/gattbridge/mqtt-password"
[ -f "$pw" ] && [ ! -s "$pw" ] && [ "$(stat -c %a:%U "$pw")" = 600:root ] \
    || fail "no empty root-owned 0600 $pw for LoadCredential= ($(stat -c %a:%U "$pw" 2>&1))"
check "conffile /etc/gattbridge/config.yaml; placeholder mqtt-password (0600, empty)"
cmp -s "$REPO/systemd/gattbridge-dbus.conf" "$ROOT/usr/share/dbus-1/system.d/gattbridge.conf" \
    || fail "the D-Bus policy is not installed as /usr/share/dbus-1/system.d/gattbridge.conf"
check "D-Bus policy /usr/share/dbus-1/system.d/gattbridge.conf"

# An administrator's edits survive a reinstall (postinst configure with the old version: the upgrade path).
printf 'secret\n' > "$pw"
sed -i 's/^  client_id: gattbridge-pi /  client_id: gattbridge-test /' "$ROOT/etc/gattbridge/config.yaml"
in_root dpkg -i "/tmp/$(basename "$DEB")" >>"$WORK/install.log" 2>&1 || fail "reinstall (log: $WORK/install.log)"
grep -q '^  client_id: gattbridge-test ' "$ROOT/etc/gattbridge/config.yaml" \
    || fail "reinstall replaced the edited config"
[ "$(cat "$pw")" = secret ] || fail "reinstall replaced the mqtt-password"
check "reinstall keeps the edited config.yaml and mqtt-password"

in_root apt-get remove -y -q gattbridge >>"$WORK/install.log" 2>&1 || fail "apt-get remove (log: $WORK/install.log)"
[ ! -e "$ROOT/usr/bin/gattbridge" ] || fail "apt-get remove left /usr/bin/gattbridge"
[ -f "$ROOT/etc/gattbridge/config.yaml" ] && [ -f "$pw" ] || fail "apt-get remove did not keep /etc/gattbridge"
check "apt-get remove keeps /etc/gattbridge ($(ls "$ROOT/etc/gattbridge" | tr '\n' ' '))"

in_root apt-get purge -y -q gattbridge >>"$WORK/install.log" 2>&1 || fail "apt-get purge (log: $WORK/install.log)"
[ ! -e "$ROOT/etc/gattbridge" ] || fail "apt-get purge left /etc/gattbridge ($(ls -A "$ROOT/etc/gattbridge"))"
[ ! -e "$link" ] || fail "apt-get purge left $link"
check "apt-get purge removes /etc/gattbridge and the enablement"

remove_root
log "passed in $(($(date +%s) - started)) s (lintian ${t_lintian} s, install ${t_install} s)"
