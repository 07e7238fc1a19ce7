#!/bb/sh
# PID 1 of the real-BlueZ guest's systemd boot, exec'd by the initramfs's /init (rb.exec=) after its mounts; it
# ends by exec'ing the host's systemd (252, over the /usr share) as PID 1. The kernel command line names the target
# (systemd.unit=realbluez-systemd.target), so none of the host's enabled units start.
#
# What a package installation would leave on a real machine, done here before systemd starts, because the host's
# /etc and /usr come read-only over 9p:
#   - /etc is a writable copy (tmpfs) of the host's, which run.sh shares at /.host-etc;
#   - the system user from systemd/gattbridge.sysusers, created with systemd-sysusers as the package's postinst does;
#   - the unit as the Debian package installs it (from the unpacked package when the binary under test is one,
#     else systemd/gattbridge.service with packaging/debian/rules' ExecStart rewrite), in /etc/systemd/system since
#     /usr is read-only, and a drop-in with only what the guest needs (see below);
#   - the D-Bus policy (in /etc/dbus-1/system.d, as installed; the scenario's bus is the bench's, see the drop-in);
#   - an empty /etc/gattbridge/mqtt-password (0600), the package's placeholder for LoadCredential=.
# Busybox's sh, not bash: until /etc is copied there is no /etc/ld.so.cache for the host's dynamic binaries.
# The scenario itself (realbluez-systemd.service → systemd-runner.sh) starts the stack and the unit, and powers
# the guest off when done.
set -u
export PATH=/bb:/usr/sbin:/usr/bin
OUT=/realbluez-out
REPO="$(cd "$(dirname "$0")/../.." && pwd)"
HERE="$REPO/scripts/realbluez"
fail() {   # no systemd: leave a result the host reads as a failure, and stop the guest
    echo "systemd-guest: $*"
    echo 70 > "$OUT/result"
    sync
    poweroff -f
}
# shellcheck disable=SC1091
set -a; [ -f "$OUT/guest.env" ] && . "$OUT/guest.env"; set +a
BIN="${GATTBRIDGE_BIN:-$REPO/.build/debug/gattbridge}"

mount -t tmpfs -o mode=0755 tmpfs /etc || fail "cannot mount a tmpfs on /etc"
cp -a /.host-etc/. /etc/ || fail "cannot copy the host's /etc"
umount /.host-etc

# The host's own enabled units (its timers, getty, services) have nothing to do in the guest.
rm -rf /etc/systemd/system/*.wants

# The shipped unit, as the package installs it.
unit_dir=/etc/systemd/system
packaged="$(dirname "$BIN")/../../lib/systemd/system/gattbridge.service"
if [ -f "$packaged" ]; then
    echo "systemd-guest: the unit from the package, $packaged"
    cp "$packaged" "$unit_dir/gattbridge.service"
else
    echo "systemd-guest: the unit rendered from systemd/gattbridge.service"
    sed -e 's|/usr/local/bin/gattbridge|/usr/bin/gattbridge|' "$REPO/systemd/gattbridge.service" \
        > "$unit_dir/gattbridge.service"
fi
mkdir -p "$unit_dir/gattbridge.service.d"
# Only what the guest needs: the binary under test (the package's is /usr/bin/gattbridge, and /usr is the host's),
# and the bench's bus, where the scenario's bluetoothd and peripherals are (the unit's own settings, WatchdogSec,
# Restart and the hardening, stay as shipped).
# The unit's PrivateTmp= and ProtectHome= hide /tmp, /home and /root from the service, where a checkout (and so the
# binary under test) may well be: the service runs a copy in the guest's own root.
mkdir -p /opt/gattbridge-under-test
cp "$BIN" /opt/gattbridge-under-test/gattbridge || fail "cannot copy $BIN"
cat > "$unit_dir/gattbridge.service.d/realbluez.conf" <<EOF
[Service]
ExecStart=
ExecStart=/opt/gattbridge-under-test/gattbridge run --config /etc/gattbridge/config.yaml
Environment=DBUS_SYSTEM_BUS_ADDRESS=unix:path=/run/realbluez/bus
EOF
mkdir -p /etc/sysusers.d /etc/dbus-1/system.d /etc/gattbridge
cp "$REPO/systemd/gattbridge.sysusers" /etc/sysusers.d/gattbridge.conf
cp "$REPO/systemd/gattbridge-dbus.conf" /etc/dbus-1/system.d/gattbridge.conf
install -m 0600 /dev/null /etc/gattbridge/mqtt-password
systemd-sysusers || fail "systemd-sysusers failed"

# The scenario's target and its runner; the runner powers the guest off however it ends.
cat > "$unit_dir/realbluez-systemd.target" <<EOF
[Unit]
Description=real-BlueZ guest: gattbridge under systemd
Requires=realbluez-systemd.service
After=realbluez-systemd.service
EOF
cat > "$unit_dir/realbluez-systemd.service" <<EOF
[Unit]
Description=real-BlueZ guest: the systemd watchdog scenario
SuccessAction=poweroff
FailureAction=poweroff
[Service]
Type=simple
ExecStart=$HERE/systemd-runner.sh
StandardOutput=journal+console
StandardError=journal+console
EOF
# bluetooth.service is wanted by gattbridge.service: the scenario runs its own bluetoothd on the bench's bus. The
# rest would only slow the emulated CPU down (udev has no rules to apply to btvirt's controllers that matter here).
for u in bluetooth.service systemd-timesyncd.service systemd-udevd.service systemd-udev-trigger.service \
         systemd-udevd-control.socket systemd-udevd-kernel.socket systemd-pstore.service systemd-firstboot.service \
         systemd-repart.service systemd-binfmt.service proc-sys-fs-binfmt_misc.automount; do
    ln -sf /dev/null "$unit_dir/$u"
done

exec /usr/lib/systemd/systemd
