#!/usr/bin/env bash
# sysroot-dpkg-db.sh SYSROOT DEB…: writes SYSROOT/var/lib/dpkg, a dpkg database describing the packages unpacked
# into SYSROOT, with every path given as the host sees it (SYSROOT/usr/lib/…). dpkg-shlibdeps --admindir=… then finds,
# for each library the binary needs, the package that ships it and that package's symbols or shlibs file: the arm64
# Depends: are computed from bookworm's own dependency information, as they would be on an arm64 machine.
set -euo pipefail
sysroot="$(cd "$1" && pwd)"; shift
db="$sysroot/var/lib/dpkg"
rm -rf "$db" && mkdir -p "$db/info" "$db/updates"
: > "$db/status"
# The multiarch layout (info/PACKAGE:ARCH.list for Multi-Arch: same packages).
echo 1 > "$db/info/format"
printf 'amd64\narm64\n' > "$db/arch"
ctl="$(mktemp -d)"
trap 'rm -rf "$ctl"' EXIT
for deb in "$@"; do
    pkg="$(dpkg-deb -f "$deb" Package)"
    arch="$(dpkg-deb -f "$deb" Architecture)"
    name="$pkg"
    [ "$arch" = all ] || [ "$(dpkg-deb -f "$deb" Multi-Arch)" != same ] || name="$pkg:$arch"
    { dpkg-deb -f "$deb" | awk 'NR == 1 { print; print "Status: install ok installed"; next } { print }'; echo; } \
        >> "$db/status"
    dpkg-deb --fsys-tarfile "$deb" | tar -t | sed -e 's|^\./|/|' -e 's|/$||' | grep -v '^$' \
        | sed -e "s|^/lib/|/usr/lib/|" -e "s|^/bin/|/usr/bin/|" -e "s|^/sbin/|/usr/sbin/|" \
        | awk -v root="$sysroot" '$0 == "/" || $0 == "/." { print root; next } { print root $0 }' > "$db/info/$name.list"
    rm -rf "$ctl"/*
    dpkg-deb -e "$deb" "$ctl"
    for f in symbols shlibs; do
        [ -f "$ctl/$f" ] && cp "$ctl/$f" "$db/info/$name.$f"
    done
done
