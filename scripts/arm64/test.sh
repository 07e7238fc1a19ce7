#!/usr/bin/env bash
# `make test-arm64` (part of `make test`): checks the Raspberry Pi package that `make deb ARCH=arm64` built.
#
#   1. The package: Architecture arm64, lintian without errors, Depends: with libc6 (>= 2.36) and bluez.
#   2. Its dependencies resolve against Debian 12 arm64's archive: `apt-get install -s` of the .deb with a private
#      apt configuration and an empty dpkg status (a fresh arm64 system).
#   3. The binary it ships, unpacked, runs under qemu-aarch64-static with a Debian 12 arm64 root that holds only the
#      runtime libraries its Depends: name (and their own dependencies): `--version` equals the amd64 build's, then
#      integration scenarios against the simulated bench (ARM64_SCENARIOS below): scan, a device's notifications
#      reaching MQTT, set written to the peripheral, SIGHUP reload, SIGTERM publishing offline, systemd readiness,
#      and broadcasts decoded (encrypted BTHome: OpenSSL's AES-CCM on arm64).
#
# There is no binfmt_misc here, so the binary runs by a wrapper that execs qemu (signals sent to the wrapper's pid
# reach the guest program: qemu forwards them). ARM64_PYTEST_ARGS adds pytest arguments.
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
as_invoking_user "$@"

started=$(date +%s)
VERSION="$(bash "$REPO/scripts/deb/version.sh")"
DEB="$REPO/dist/gattbridge_${VERSION}_arm64.deb"
[ -f "$DEB" ] || fail "no $DEB (make deb ARCH=arm64)"
WORK="$REPO/.build-arm64/test"
rm -rf "$WORK" && mkdir -p "$WORK"

# --- 1. the package -------------------------------------------------------------------------------------------------
[ "$(dpkg-deb -f "$DEB" Architecture)" = arm64 ] || fail "Architecture is not arm64"
depends="$(dpkg-deb -f "$DEB" Depends)"
log "Depends: $depends"
grep -Eq '(^|, )libc6 \(>= 2\.36\)' <<<"$depends" || fail "Depends: lacks libc6 (>= 2.36)"
for lib in libdbus-1-3 libmosquitto1 libmicrohttpd12 libprotobuf-c1 libsystemd0 libyaml-0-2 bluez; do
    grep -Eq "(^|, )$lib( |,|$)" <<<"$depends" || fail "Depends: lacks $lib"
done
bash "$REPO/scripts/deb/lintian.sh" "$DEB" || fail "lintian"

# --- 2. Depends: against Debian 12 arm64's archive ------------------------------------------------------------------
papt_update "$TARGET_SUITE" arm64
if ! papt "$TARGET_SUITE" arm64 apt-get install -s --no-install-recommends "$DEB" > "$WORK/apt-simulate.log" 2>&1 \
        || ! grep -q '^Inst gattbridge ' "$WORK/apt-simulate.log"; then
    tail -20 "$WORK/apt-simulate.log" >&2
    fail "the package's dependencies do not resolve on $TARGET_SUITE arm64"
fi
log "apt on $TARGET_SUITE arm64 would install gattbridge with $(grep -c '^Inst ' "$WORK/apt-simulate.log") packages"

# --- 3. the binary under qemu-user ---------------------------------------------------------------------------------
bash "$REPO/scripts/arm64/toolchain.sh"
# The runtime root: the closure of the library packages Depends: names, nothing else (no -dev, no Swift).
libs="$(tr ',' '\n' <<<"$depends" | sed -e 's/^ *//' -e 's/ .*//' | grep '^lib' | tr '\n' ' ')"
root_key="$TARGET_SUITE: $libs"
if [ "$(cat "$RUNTIME_ROOT/.stamp" 2>/dev/null)" != "$root_key" ]; then
    log "runtime root for qemu: $TARGET_SUITE arm64 with $libs"
    rm -rf "$RUNTIME_ROOT" "$DOWNLOADS/runtime"
    # shellcheck disable=SC2086
    fetch_closure "$TARGET_SUITE" arm64 "$DOWNLOADS/runtime" $libs
    unpack_into "$RUNTIME_ROOT" "$DOWNLOADS"/runtime/*.deb
    relativize_links "$RUNTIME_ROOT"
    rm -rf "$DOWNLOADS/runtime"
    echo "$root_key" > "$RUNTIME_ROOT/.stamp"
fi

dpkg-deb -x "$DEB" "$WORK/pkg"
bin="$WORK/pkg/usr/bin/gattbridge"
wrapper="$WORK/gattbridge-arm64"
cat > "$wrapper" <<WRAP
#!/bin/sh
exec "$TOOLS/qemu-aarch64-static" -L "$RUNTIME_ROOT" "$bin" "\$@"
WRAP
chmod +x "$wrapper"

got="$("$wrapper" --version)" || fail "the arm64 binary does not start under qemu"
[ "$got" = "$VERSION" ] || fail "--version prints '$got', the package is $VERSION"
if [ -x "$REPO/.build/debug/gattbridge" ]; then
    amd64="$("$REPO/.build/debug/gattbridge" --version)"
    [ "$got" = "$amd64" ] || fail "--version differs: arm64 '$got', amd64 '$amd64'"
fi
log "the arm64 binary runs under qemu: --version $got"

ARM64_SCENARIOS=(
    "Tests/integration/test_cli.py::test_scan_json_lists_peripherals_with_address_name_and_services"
    "Tests/integration/test_cli.py::test_listen_prints_heart_rate_json_lines"
    "Tests/integration/test_cli.py::test_config_check_reports_every_error_with_its_position"
    "Tests/adverts/test_adverts_cli.py"
    "Tests/integration/test_bridge.py::test_values_flow_on_spec_topics"
    "Tests/integration/test_bridge.py::test_led_on_off_reaches_the_peripheral_and_reads_back"
    "Tests/integration/test_systemd.py::test_ready_then_periodic_watchdog_pets"
    "Tests/integration/test_systemd.py::test_sighup_reload_keeps_unchanged_devices_starts_new_and_clears_removed"
    "Tests/integration/test_systemd.py::test_sigterm_sends_stopping_then_offline_and_exits_0_within_5s"
)
log "integration scenarios with the arm64 binary under qemu-aarch64-static"
cd "$REPO"
# shellcheck disable=SC2086
GATTBRIDGE_BIN="$wrapper" .venv/bin/python -m pytest -q "${ARM64_SCENARIOS[@]}" ${ARM64_PYTEST_ARGS:-} \
    || fail "integration scenarios under qemu"
log "ok in $(($(date +%s) - started)) s"
