#!/usr/bin/env bash
# gattbridge against the real BlueZ: boots a QEMU guest (TCG, Debian's 6.1 kernel) whose four emulated LE
# controllers (btvirt -L -l4, one shared emulated air) are driven by the real bluetoothd, and runs the scenarios
# in Tests/realbluez there: gattbridge on hci0, the bench's peripherals on hci1..hci3, mosquitto.
# See docs/dev/REAL-BLUEZ.md. Usage (from `make test-realbluez`, which builds the binary and the venv first):
#
#   scripts/realbluez/run.sh
#
# Environment:
#   GATTBRIDGE_BIN       the binary to test (default .build/debug/gattbridge); its non-system libraries (the Swift
#                        runtime) are shared into the guest at the same paths
#   REALBLUEZ_CACHE      kernel + initramfs cache (default .build-realbluez)
#   REALBLUEZ_OUT_DIR    where the guest's logs land (default $REALBLUEZ_CACHE/out; emptied first)
#   REALBLUEZ_BTMON=1    also record an HCI trace (btmon -w) to $REALBLUEZ_OUT_DIR/btmon.snoop
#   REALBLUEZ_DBUS_MONITOR=1  also record every D-Bus message (dbus-monitor) to logs/dbus-monitor.log
#   REALBLUEZ_NO_SHIM=1  run btvirt without the connection-handle fix (btvirt-handles.c), to see its bug
#   REALBLUEZ_TIMEOUT    host-side limit for each boot, in seconds (default 420)
#   REALBLUEZ_SYSTEMD=1  also a second boot, where the real systemd runs the shipped unit under load
#                        (Tests/realbluez/test_systemd_watchdog.py; its logs in $REALBLUEZ_OUT_DIR-systemd). Off by
#                        default: it adds about 4–5 minutes (a 2-minute window) to the tier
#   REALBLUEZ_SYSTEMD_ONLY=1  only that boot (`make test-realbluez-systemd`)
#   REALBLUEZ_WATCHDOG_WINDOW_S  that scenario's observation window (default 120 s)
#   PYTEST_ARGS          extra pytest arguments inside the guest (e.g. -k scan)
#
# The exit code is the scenarios' own (pytest's, written by the guest to $REALBLUEZ_OUT_DIR/result), never
# QEMU's, which is 0 however the guest ended; no result file is a failure.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
HERE="$REPO/scripts/realbluez"
CACHE="${REALBLUEZ_CACHE:-$REPO/.build-realbluez}"
OUT="${REALBLUEZ_OUT_DIR:-$CACHE/out}"
OUT_SYSTEMD="$OUT-systemd"
BIN="$(readlink -f "${GATTBRIDGE_BIN:-$REPO/.build/debug/gattbridge}")"
TIMEOUT="${REALBLUEZ_TIMEOUT:-420}"

log() { printf 'realbluez: %s\n' "$*" >&2; }
started=$(date +%s)

# --- host packages --------------------------------------------------------------------------------------------
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }
missing=()
for p in qemu-system-x86 busybox-static bluez bluez-test-tools dbus kmod mosquitto; do
    installed "$p" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
    log "installing: ${missing[*]}"
    sudo_=(); [ "$(id -u)" -eq 0 ] || sudo_=(sudo)
    export DEBIAN_FRONTEND=noninteractive
    "${sudo_[@]}" apt-get update -qq
    "${sudo_[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

[ -x "$BIN" ] || { log "no gattbridge binary at $BIN (swift build, or set GATTBRIDGE_BIN)"; exit 1; }
[ -x "$REPO/.venv/bin/python" ] || { log "no .venv (bash scripts/setup.sh)"; exit 1; }
case "$REPO$BIN" in *[\ ,:]*) log "paths with spaces, commas or colons cannot be shared over 9p: $REPO"; exit 1 ;; esac

# --- the guest's kernel and initramfs (cached) ----------------------------------------------------------------
bash "$HERE/prepare-guest.sh" "$CACHE"

# --- shares: host directories the guest mounts at the same paths ----------------------------------------------
# The first four are fixed: attempt() changes the /etc share's guest path and the output directory per boot.
shares=("usr:/usr:ro" "etc:/etc:ro" "repo:$REPO:ro" "out:/realbluez-out:rw")
host_paths=("/usr" "/etc" "$REPO" "$OUT")
case "$BIN" in
    "$REPO"/*) ;;
    *) shares+=("bin:$(dirname "$BIN"):ro"); host_paths+=("$(dirname "$BIN")") ;;
esac
# A .venv that is a symlink to one outside the tree (a worktree sharing another checkout's venv): that one too.
venv="$(readlink -f "$REPO/.venv")"
case "$venv" in
    "$REPO"/*) ;;
    *) shares+=("venv:$venv:ro"); host_paths+=("$venv") ;;
esac
# Libraries outside /usr (the Swift runtime of a debug build: /opt/swift/…/lib/swift/linux).
i=0
for dir in $(ldd "$BIN" | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | xargs -r -n1 dirname | sort -u); do
    case "$dir" in /usr/*|/lib/*|/lib64/*|/lib|/lib64) continue ;; esac
    shares+=("lib$i:$dir:ro"); host_paths+=("$dir"); i=$((i + 1))
done

# One boot of the guest; its exit code is the scenarios'. MODE scenarios: busybox runs guest.sh (every scenario
# of Tests/realbluez); MODE systemd: busybox execs systemd-guest.sh, which makes /etc writable (a copy of the host's,
# shared at /.host-etc) and execs systemd as PID 1 into realbluez-systemd.target (test_systemd_watchdog.py).
attempt() {
    local kind="$1"
    OUT="$2"
    host_paths[3]="$OUT"
    rm -rf "$OUT"
    mkdir -p "$OUT"
    # btvirt's connection handles go wrong as soon as hci0 holds two connections: a small LD_PRELOAD shim fixes
    # them (see btvirt-handles.c). REALBLUEZ_NO_SHIM=1 runs btvirt as shipped.
    if [ "${REALBLUEZ_NO_SHIM:-0}" != 1 ]; then
        cc="${CC:-$(command -v cc || command -v gcc || command -v clang || true)}"
        [ -n "$cc" ] || { log "no C compiler (cc, gcc or clang) for btvirt-handles.c"; return 1; }
        "$cc" -shared -fPIC -O2 -Wall -o "$OUT/btvirt-handles.so" "$HERE/btvirt-handles.c" -ldl
    fi
    {
        echo "REALBLUEZ_BTMON=${REALBLUEZ_BTMON:-0}"
        echo "REALBLUEZ_DBUS_MONITOR=${REALBLUEZ_DBUS_MONITOR:-0}"
        echo "REALBLUEZ_PRIVACY=${REALBLUEZ_PRIVACY:-1}"
        printf 'PYTEST_ARGS=%q\n' "${PYTEST_ARGS:-}"
        printf 'GATTBRIDGE_BIN=%q\n' "$BIN"
    } > "$OUT/guest.env"

    # Compile the Python the guest imports from the (read-only) tree now: the guest's CPU is emulated.
    "$REPO/.venv/bin/python" -m compileall -q "$REPO/bench" "$REPO/Tests/realbluez" >/dev/null

    append="console=ttyS0 quiet loglevel=4 panic=-1 cryptomgr.notests=1"
    if [ "$kind" = systemd ]; then
        shares[1]="etc:/.host-etc:ro"
        append+=" rb.exec=$HERE/systemd-guest.sh systemd.unit=realbluez-systemd.target"
        [ -z "${REALBLUEZ_WATCHDOG_WINDOW_S:-}" ] ||
            printf 'REALBLUEZ_WATCHDOG_WINDOW_S=%q\n' "$REALBLUEZ_WATCHDOG_WINDOW_S" >> "$OUT/guest.env"
    else
        shares[1]="etc:/etc:ro"
        append+=" rb.run=$HERE/guest.sh"
    fi
    fsdevs=()
    for n in "${!shares[@]}"; do
        IFS=: read -r tag path mode <<< "${shares[$n]}"
        append+=" rb.mount=$tag:$path:$mode"
        ro=""; [ "$mode" = ro ] && ro=",readonly=on"
        fsdevs+=(-fsdev "local,id=$tag,path=${host_paths[$n]},security_model=none$ro"
                 -device "virtio-9p-pci,fsdev=$tag,mount_tag=$tag")
    done

    log "booting the guest for the $kind (QEMU TCG, $(nproc) CPUs); console in $OUT/console.log"
    boot=$(date +%s)
    set +e
    timeout -k 10 "$TIMEOUT" qemu-system-x86_64 \
        -accel tcg,thread=multi -cpu max -smp "$(nproc)" -m 1024 \
        -display none -monitor none -serial stdio -no-reboot -nic none \
        -kernel "$CACHE/vmlinuz" -initrd "$CACHE/initramfs.cpio.gz" -append "$append" \
        "${fsdevs[@]}" < /dev/null 2>&1 | tee "$OUT/console.log"
    qemu_rc=${PIPESTATUS[0]}
    set -e
    now=$(date +%s)

    if [ ! -s "$OUT/result" ]; then
        log "FAILED: the guest reported no result (QEMU exit $qemu_rc after $((now - boot)) s; 124 is the host timeout)"
        return 1
    fi
    rc="$(cat "$OUT/result")"
    [ -f "$OUT/logs/timings.json" ] && log "timings (s): $(tr -d '\n ' < "$OUT/logs/timings.json")"
    log "guest boot + scenarios: $((now - boot)) s, total $((now - started)) s; logs in $OUT/logs"
    if [ "$rc" != 0 ]; then
        log "FAILED: the scenarios exited $rc (see $OUT/pytest.log and $OUT/logs)"
    fi
    return "$rc"
}

# The guest's own stack fails now and then in ways that are not gattbridge's (docs/dev/REAL-BLUEZ.md):
# - Debian 12's guest kernel (6.1) sometimes corrupts a list in hci_chan_del when a bonded device reconnects right
#   after a bluetoothd restart, an oops that takes bluetoothd with it;
# - bluetoothd 5.66, which plays both the central and the peripherals here, sometimes leaves an ATT request between
#   its two roles unanswered (an Exchange MTU or Read on a private-address device's extra EATT channel after its
#   identity is resolved) and logs "Operation timed out" 30 s later; its Pair answer and the next connections stall
#   behind it (seen once in CI: `pair RPA` → NoReply, then the privacy scenarios failed).
# Only when the first attempt failed and one of these shows in its logs is the whole tier run once more; that
# attempt's logs stay in $OUT.first. A failure without such a sign, or a second failure, fails the tier.
guest_stack_failed() {
    grep -qsE "list_del corruption|Oops|BUG: |general protection fault|Kernel panic" \
        "$OUT/console.log" "$OUT/logs/dmesg.log" && { echo "the guest kernel oopsed (dmesg.log)"; return 0; }
    grep -qs "att.c:timeout_cb() .*Operation timed out" "$OUT/logs/bluetoothd.log" &&
        { echo "the guest's bluetoothd left an ATT request between its own roles unanswered (bluetoothd.log)"; return 0; }
    return 1
}
# attempt MODE DIR, and once more as above.
boot() {
    local rc=0
    attempt "$1" "$2" || rc=$?
    if [ "$rc" != 0 ] && why=$(guest_stack_failed); then
        log "$why: not a gattbridge failure; booting once more (first attempt's logs in $2.first)"
        rm -rf "$2.first"
        mv "$2" "$2.first"
        rc=0
        attempt "$1" "$2" || rc=$?
    fi
    return "$rc"
}
rc=0
if [ "${REALBLUEZ_SYSTEMD_ONLY:-0}" != 1 ]; then
    boot scenarios "$OUT" || rc=$?
fi
if [ "${REALBLUEZ_SYSTEMD:-0}" = 1 ] || [ "${REALBLUEZ_SYSTEMD_ONLY:-0}" = 1 ]; then
    src=0
    boot systemd "$OUT_SYSTEMD" || src=$?
    [ "$src" = 0 ] || { log "FAILED: the systemd boot (logs in $OUT_SYSTEMD)"; rc=$src; }
fi
exit "$rc"
