#!/usr/bin/env bash
# Builds what the real-BlueZ guest boots: Debian's own 6.1 kernel (downloaded with `apt-get download`, never
# installed) and a small busybox initramfs carrying only the modules the guest needs. Everything else the guest
# runs (bluetoothd, btvirt, dbus-daemon, mosquitto, Python, the project) comes from the host over 9p.
#
#   scripts/realbluez/prepare-guest.sh CACHE_DIR      → CACHE_DIR/vmlinuz, CACHE_DIR/initramfs.cpio.gz
#
# Rebuilt only when the kernel package, the module list, /init or this script change (a stamp holds their hash).
# KERNEL_PACKAGE=linux-image-6.1.0-NN-amd64 picks another kernel; default: what linux-image-amd64 depends on.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CACHE="${1:?usage: prepare-guest.sh CACHE_DIR}"
mkdir -p "$CACHE"
# One at a time: `make test` starts this in the background early, and run.sh's own call waits here.
exec 9> "$CACHE/.prepare.lock"
flock 9

log() { printf 'realbluez: %s\n' "$*" >&2; }

# Loaded in this order by /init. Crypto first: bluetooth's ECDH self-test needs drbg, and anything the kernel
# would otherwise autoload during the first power-on (over 9p, through a modprobe that does not match this
# kernel) stalls HCI until its commands time out (`Opcode 0x0c03 failed: -110`). aes is built in. LE Secure
# Connections pairing generates ECDH keys with drbg's hmac(sha512): without sha512_generic SMP fails with
# "Unspecified reason" right after the Pairing Response (dmesg: "DRBG: could not allocate digest TFM handle").
MODULES=(virtio_pci 9pnet_virtio 9p
         sha512_generic drbg ecb cmac af_alg algif_hash algif_skcipher ecdh_generic
         bluetooth hci_vhci)

kernel_of_metapackage() {
    apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ {print $2; exit}'
}
kernel_package="${KERNEL_PACKAGE:-$(kernel_of_metapackage)}"
if [ -z "$kernel_package" ]; then   # no package lists yet (a fresh machine)
    if [ "$(id -u)" -eq 0 ]; then apt-get update -qq; else sudo apt-get update -qq; fi
    kernel_package="$(kernel_of_metapackage)"
fi
if [ -z "$kernel_package" ]; then
    log "cannot tell which kernel package linux-image-amd64 depends on"
    exit 1
fi

want="$(printf '%s\n%s\n' "$kernel_package" "${MODULES[*]}" | cat - "$HERE/init" "$0" | sha256sum | cut -d' ' -f1)"
if [ -f "$CACHE/vmlinuz" ] && [ -f "$CACHE/initramfs.cpio.gz" ] && [ "$(cat "$CACHE/stamp" 2>/dev/null)" = "$want" ]; then
    exit 0
fi

log "preparing the guest: $kernel_package + busybox initramfs in $CACHE"
work="$CACHE/work"
rm -rf "$work"
mkdir -p "$work/deb" "$work/root/bb" "$work/root/modules"
(cd "$work/deb" && apt-get download -qq "$kernel_package" 2>&1 | grep -v '^W: Download is performed unsandboxed' >&2 || true)
deb="$(ls "$work/deb"/*.deb 2>/dev/null | head -1)"
[ -n "$deb" ] || { log "apt-get download $kernel_package failed"; exit 1; }
dpkg-deb -x "$deb" "$work/x"
version="$(ls "$work/x/lib/modules")"
depmod -b "$work/x" "$version"

# Each module with its dependencies, in load order, without duplicates.
: > "$work/root/modules/order"
for m in "${MODULES[@]}"; do
    modprobe -d "$work/x" -S "$version" --show-depends "$m" | awk '$1 == "insmod" {print $2}'
done | awk '!seen[$0]++' | while read -r path; do
    name="$(basename "$path")"
    case "$name" in
        *.ko) cp "$path" "$work/root/modules/$name" ;;
        *.ko.xz) xz -dc "$path" > "$work/root/modules/${name%.xz}"; name="${name%.xz}" ;;
        *.ko.zst) zstd -qdc "$path" > "$work/root/modules/${name%.zst}"; name="${name%.zst}" ;;
        *) log "unexpected module file $path"; exit 1 ;;
    esac
    echo "$name" >> "$work/root/modules/order"
done

cp /bin/busybox "$work/root/bb/busybox"    # from busybox-static: the initramfs has no libc
for applet in $("$work/root/bb/busybox" --list | grep -vx busybox); do
    ln -sf busybox "$work/root/bb/$applet"
done
cp "$HERE/init" "$work/root/init"
chmod 755 "$work/root/init"
mkdir -p "$work/root"/{proc,sys,dev,run,tmp,var,usr,etc,mnt}

(cd "$work/root" && find . | /bin/busybox cpio -o -H newc 2>/dev/null | gzip -1) > "$CACHE/initramfs.cpio.gz.new"
mv "$CACHE/initramfs.cpio.gz.new" "$CACHE/initramfs.cpio.gz"
cp "$work/x/boot/vmlinuz-$version" "$CACHE/vmlinuz"
echo "$version" > "$CACHE/kernel-version"
rm -rf "$work"
echo "$want" > "$CACHE/stamp"
log "guest ready (kernel $version, $(wc -c < "$CACHE/initramfs.cpio.gz") bytes of initramfs)"
