"""gattbridge under the real systemd (252, PID 1 of the guest's second boot: scripts/realbluez/systemd-guest.sh),
run by the unit the Debian package installs, with its shipped WatchdogSec=30, Restart=on-failure and hardening.

Under load, as in the field: a heart-rate strap notifying at 5 Hz on a `qos: 0` channel (on hci1) and adverts on
with a BTHome broadcaster (on hci6). For two minutes systemd must never restart the service: `NRestarts=0`, the same
main process, active throughout, its last watchdog pet never older than WatchdogSec, and no line about the watchdog
in its journal (neither the daemon's "not petting the watchdog" nor systemd's "Watchdog timeout"). Before the loop
was made fair, a QoS 0 channel faster than 1 Hz or a broadcaster heard a few times a second starved the MQTT link's
turn, the daemon stopped petting and systemd killed it every 30 s.

Runs only in that boot (the scenarios' boot has no systemd and skips it).
"""

from __future__ import annotations

import os
import pwd
import subprocess
import time
from pathlib import Path

import pytest

from bench.bench import Peripheral
from conftest import LOG_DIR, READVERTISE_S, record

UNDER_SYSTEMD = Path("/proc/1/comm").exists() and Path("/proc/1/comm").read_text().strip() == "systemd"
pytestmark = pytest.mark.skipif(not UNDER_SYSTEMD, reason="runs in the real-BlueZ guest's systemd boot only")

UNIT = "gattbridge"
BASE = "watchdog"
RATE_HZ = 5
WINDOW_S = float(os.environ.get("REALBLUEZ_WATCHDOG_WINDOW_S", "120"))
CONFIG_PATH = Path("/etc/gattbridge/config.yaml")   # what the shipped unit's ExecStart reads
WATCHDOG_WORDS = ("watchdog", "not petting")

CONFIG = """\
mqtt:
  host: 127.0.0.1
  port: {port}
  client_id: gattbridge-realbluez-systemd
  base_topic: {base}
  keepalive: 30
bluetooth:
  adapters: [hci0]
homeassistant:
  enabled: false
adverts:
  enabled: true
  auto: []
devices:
  - name: chest-strap
    address: "{strap}"
    channels:
      - name: heart_rate
        characteristic: "2a37"
        codec: heart_rate_measurement
        mode: notify
        qos: 0
  - name: balcony
    address: "{balcony}"
    advert: bthome
"""


def systemctl(*args: str) -> str:
    return subprocess.run(["systemctl", *args], capture_output=True, text=True, check=True, timeout=60).stdout


def show(*props: str) -> dict[str, str]:
    out = systemctl("show", UNIT, "-p", ",".join(props))
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def journal() -> list[str]:
    """The unit's journal: the daemon's own lines and systemd's about the unit (a watchdog kill is one of those)."""
    return subprocess.run(["journalctl", "-u", UNIT, "--no-pager", "-o", "short-monotonic"], capture_output=True,
                          text=True, timeout=60).stdout.splitlines()


def since_last_pet_s(props: dict[str, str]) -> float:
    """Seconds since systemd last received WATCHDOG=1 (its timestamp and time.monotonic() are both CLOCK_MONOTONIC)."""
    return time.monotonic() - int(props["WatchdogTimestampMonotonic"]) / 1e6


@pytest.fixture(scope="module")
def devices(stack, env):
    started = {
        "strap": Peripheral("heart_rate", "hci1", stack.addresses["hci1"], env, LOG_DIR, readvertise=READVERTISE_S,
                            rate=RATE_HZ),
        "balcony": Peripheral("broadcaster", "hci6", stack.addresses["hci6"], env, LOG_DIR, format="bthome",
                              connectable=True),
    }
    try:
        for p in started.values():
            p.start(wait_ready=False)
        for p in started.values():
            p.wait_for("ready", 60)
        yield started
    finally:
        for p in started.values():
            p.kill()


def test_shipped_unit_is_not_restarted_under_load(devices, broker, mqtt):
    CONFIG_PATH.write_text(CONFIG.format(port=broker.port, base=BASE, strap=devices["strap"].address,
                                         balcony=devices["balcony"].address))
    CONFIG_PATH.chmod(0o644)
    mark = mqtt.mark()
    t0 = time.monotonic()
    systemctl("start", UNIT)   # Type=notify: returns once the daemon said READY=1
    try:
        # The shipped settings, as systemd runs them (WatchdogUSec is only set from the unit at start).
        unit = show("WatchdogUSec", "Restart", "User", "FragmentPath", "DropInPaths")
        assert unit["WatchdogUSec"] == "30s" and unit["Restart"] == "on-failure" and unit["User"] == "gattbridge", unit
        assert unit["FragmentPath"] == "/etc/systemd/system/gattbridge.service", unit
        assert unit["DropInPaths"] == "/etc/systemd/system/gattbridge.service.d/realbluez.conf", unit
        mqtt.wait_for(f"{BASE}/bridge/state", "online", 60, since=mark)
        mqtt.wait_for(f"{BASE}/chest-strap/availability", "online", 90, since=mark)
        mqtt.wait_for(f"{BASE}/chest-strap/heart_rate", None, 60, since=mark)
        mqtt.wait_for(f"{BASE}/balcony/temperature", None, 60, since=mark)
        record("systemd_start_to_values", time.monotonic() - t0)

        first = show("MainPID", "NRestarts", "ActiveState")
        pid = int(first["MainPID"])
        assert pid > 0 and first["NRestarts"] == "0" and first["ActiveState"] == "active", first
        assert os.stat(f"/proc/{pid}").st_uid == pwd.getpwnam("gattbridge").pw_uid

        # The observation window itself: systemd is asked every few seconds, so a restart fails the test at once.
        window = mqtt.mark()
        start = time.monotonic()
        oldest_pet = 0.0
        while time.monotonic() - start < WINDOW_S:
            now = show("MainPID", "NRestarts", "ActiveState", "WatchdogTimestampMonotonic")
            assert now["NRestarts"] == "0" and now["ActiveState"] == "active" and int(now["MainPID"]) == pid, now
            oldest_pet = max(oldest_pet, since_last_pet_s(now))
            time.sleep(5)
        elapsed = time.monotonic() - start
        last = show("MainPID", "NRestarts", "ActiveState", "SubState", "WatchdogTimestampMonotonic")
        oldest_pet = max(oldest_pet, since_last_pet_s(last))
        record("systemd_window_s", elapsed)
        record("systemd_oldest_watchdog_pet_s", oldest_pet)

        assert last["NRestarts"] == "0", last
        assert last["ActiveState"] == "active" and last["SubState"] == "running", last
        assert int(last["MainPID"]) == pid, last
        assert oldest_pet < 30, f"a watchdog pet was {oldest_pet:.1f} s old"
        # The load was there: the strap's values (QoS 0) and the broadcaster's kept flowing.
        beats = mqtt.received(f"{BASE}/chest-strap/heart_rate", window)
        temperatures = mqtt.received(f"{BASE}/balcony/temperature", window)
        record("systemd_heart_rate_hz", len(beats) / elapsed)
        record("systemd_temperatures", len(temperatures))
        assert len(beats) >= 0.8 * RATE_HZ * elapsed, f"{len(beats)} heart-rate values in {elapsed:.0f} s"
        assert len(temperatures) >= 3, f"{len(temperatures)} temperatures in {elapsed:.0f} s"
        assert {m.qos for m in beats} == {0}, "the strap's channel is published at QoS 0"
    finally:
        lines = journal()
        (LOG_DIR / "gattbridge-journal.log").write_text("\n".join(lines) + "\n")
        subprocess.run(["systemctl", "stop", UNIT], timeout=60)

    about_watchdog = [line for line in lines if any(w in line.lower() for w in WATCHDOG_WORDS)]
    assert about_watchdog == [], "\n".join(about_watchdog)
