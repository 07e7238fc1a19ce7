"""`gattbridge run` under systemd (docs/operating.md), with a real notify socket: a Unix datagram socket read by the test, its
path in NOTIFY_SOCKET and WATCHDOG_USEC set for the daemon. READY/STATUS/WATCHDOG/STOPPING/RELOADING, the watchdog's
liveness (it stops when the bench's dbus-daemon is frozen, and not when a dependency is away), SIGTERM, SIGHUP reloads
with a config diff, and journald-style logging."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Callable, Optional

import pytest

from bench.bench import MqttClient, SdNotifyListener

HRM = "C0:FF:EE:00:00:01"
HM10 = "C0:FF:EE:00:00:02"
LED = "C0:FF:EE:00:00:03"
LED_CHAR = "c0ffee00-1ed0-4c7a-9b1e-000000000001/c0ffee00-1ed0-4c7a-9b1e-000000000002"
BASE = "gb"
WATCHDOG_USEC = 1_000_000          # the daemon pets every 0.5 s
INTERVAL = WATCHDOG_USEC / 2e6


# --- helpers ----------------------------------------------------------------------------------------------------

@pytest.fixture
def notify(bench):
    listener = SdNotifyListener(bench.workdir)
    yield listener
    listener.close()


def device_yaml(kind: str) -> str:
    if kind == "heart_rate":
        return f"""
  - name: strap
    address: "{HRM}"
    channels:
      - name: heart_rate
        characteristic: "2a37"
        codec: heart_rate_measurement
"""
    if kind == "led":
        return f"""
  - name: lamp
    address: "{LED}"
    channels:
      - name: led
        characteristic: "{LED_CHAR}"
        codec: hex
        values: {{ "ON": "01", "OFF": "00" }}
        mode: read
        interval: 30
        writable: true
        retain: true
"""
    if kind == "hm10":
        return f"""
  - name: serial
    address: "{HM10}"
    channels:
      - name: serial
        characteristic: "ffe0/ffe1"
        codec: text
        writable: true
"""
    raise ValueError(kind)


def write_config(path: Path, port: int, devices: list[str], client_id: str = "gb-test") -> Path:
    text = f"""mqtt:
  host: 127.0.0.1
  port: {port}
  client_id: {client_id}
  base_topic: {BASE}
  keepalive: 5
homeassistant:
  enabled: false
devices:{"".join(device_yaml(d) for d in devices) if devices else " []"}
"""
    path.write_text(text)
    return path


def start_daemon(run_gattbridge, config: Path, notify: TimedListener, watchdog_usec: Optional[int] = WATCHDOG_USEC,
                 extra: Optional[list[str]] = None, env: Optional[dict] = None):
    environment = dict(notify.env)
    if watchdog_usec is not None:
        environment["WATCHDOG_USEC"] = str(watchdog_usec)
    environment.update(env or {})
    proc = run_gattbridge(["run", "--config", config, *(extra or [])], env=environment)
    notify.wait_for("READY", "1", timeout=15)
    return proc


def wait_online(mqtt, device: str, timeout: float = 30):
    """Availability `online` and then the `connected` event: the bridge publishes them in that order, so a mark taken
    after availability alone could still see the event arrive after it."""
    mqtt.wait_for(f"{BASE}/{device}/availability", "online", timeout=timeout)
    mqtt.wait_for(f"{BASE}/bridge/event", lambda m: m.json().get("type") == "connected" and m.json().get("device") == device,
                  timeout=timeout)


def events(mqtt, device: str, since: int = 0) -> list[str]:
    """The `type`s of B/bridge/event messages about `device`."""
    out = []
    for m in mqtt.received(f"{BASE}/bridge/event", since):
        body = m.json()
        if body.get("device") == device:
            out.append(body.get("type"))
    return out


def retained(broker, topic: str) -> list:
    """The retained messages a new subscriber to `topic` gets. Mosquitto answers the filters of one SUBSCRIBE in
    order, so once the sentinel (a retained topic outside `topic`, published just before) arrives, every retained
    match has arrived. (A sentinel under `topic` could arrive first, in the middle of the matches.)"""
    sentinel = f"sentinel/{time.monotonic_ns()}"
    publisher = MqttClient(broker.host, broker.port, [])
    try:
        publisher.publish(sentinel, "x", retain=True)
        client = MqttClient(broker.host, broker.port, [topic, sentinel])
        try:
            client.wait_for(sentinel, lambda m: m.retain, timeout=10)
            return [m for m in client.received(topic) if m.retain]
        finally:
            client.close()
    finally:
        publisher.publish(sentinel, "", retain=True)
        publisher.close()


def connected(central, address: str) -> bool:
    try:
        return bool(central.device_property(address, "Connected"))
    except Exception:  # noqa: BLE001 - a device BlueZ does not know is not connected
        return False


def assert_pets_continue(notify: TimedListener, count: int = 4, what: str = "") -> None:
    mark = notify.mark()
    deadline = time.monotonic() + count * INTERVAL + 3
    while len(notify.since(mark, "WATCHDOG")) < count:
        assert time.monotonic() < deadline, f"watchdog pets stopped {what}: {notify.since(mark)[-5:]}"
        time.sleep(0.05)
    stamps = [m["_t"] for m in notify.since(mark, "WATCHDOG")]
    gaps = [b - a for a, b in zip(stamps, stamps[1:])]
    assert max(gaps) < 2 * INTERVAL, f"a watchdog gap of {max(gaps):.2f}s {what}"


# --- READY, watchdog, STATUS ------------------------------------------------------------------------------------

def test_ready_then_periodic_watchdog_pets(run_gattbridge, mosquitto, notify, tmp_path):
    config = write_config(tmp_path / "config.yaml", mosquitto.port, [])
    proc = start_daemon(run_gattbridge, config, notify)
    ready = notify.wait_for("READY", "1")
    # No pet before READY (systemd ignores them anyway; it shows the order of start-up).
    first_ready = next(i for i, m in enumerate(notify.messages) if m.get("READY") == "1")
    assert all("WATCHDOG" not in m for m in notify.messages[:first_ready])
    mark = notify.mark()
    deadline = time.monotonic() + 10
    while len(notify.since(mark, "WATCHDOG")) < 6:
        assert time.monotonic() < deadline, f"too few pets: {notify.since(mark)}"
        time.sleep(0.05)
    stamps = [m["_t"] for m in notify.since(mark, "WATCHDOG")]
    gaps = [b - a for a, b in zip(stamps, stamps[1:])]
    # Every WATCHDOG_USEC/2, not faster, and never near the timeout.
    assert all(0.6 * INTERVAL < g < 1.6 * INTERVAL for g in gaps), gaps
    assert all(m["WATCHDOG"] == "1" for m in notify.since(mark, "WATCHDOG"))
    assert ready["_t"] < stamps[0]
    assert proc.running


def test_no_watchdog_without_watchdog_usec(run_gattbridge, mosquitto, notify, tmp_path):
    config = write_config(tmp_path / "config.yaml", mosquitto.port, [])
    start_daemon(run_gattbridge, config, notify, watchdog_usec=None)
    mark = notify.mark()
    time.sleep(4 * INTERVAL)  # observing an absence: there is no event to wait for
    assert notify.since(mark, "WATCHDOG") == []


def test_status_follows_broker_and_device_state(run_gattbridge, mosquitto, peripheral, bluez, notify, tmp_path):
    hrm = peripheral("heart_rate")
    config = write_config(tmp_path / "config.yaml", mosquitto.port, ["heart_rate"])
    start_daemon(run_gattbridge, config, notify)
    notify.wait_status("mqtt connected; 1/1 devices online", timeout=30)

    mark = notify.mark()
    hrm.kill()
    notify.wait_status("mqtt connected; 0/1 devices online", since=mark, timeout=30)

    mark = notify.mark()
    hrm.start()
    notify.wait_status("mqtt connected; 1/1 devices online", since=mark, timeout=40)

    mark = notify.mark()
    mosquitto.stop()
    notify.wait_status("mqtt disconnected; 1/1 devices online", since=mark, timeout=20)
    mosquitto.start()
    notify.wait_status("mqtt connected; 1/1 devices online", since=mark, timeout=20)

    mark = notify.mark()
    bluez.kill()
    status = notify.wait_status("bluetoothd unavailable", since=mark, timeout=20)
    assert status["STATUS"].startswith("mqtt connected")


def test_outages_of_broker_bluetoothd_and_device_do_not_stop_the_watchdog(run_gattbridge, mosquitto, peripheral,
                                                                           bluez, mqtt, notify, tmp_path):
    hrm = peripheral("heart_rate")
    config = write_config(tmp_path / "config.yaml", mosquitto.port, ["heart_rate"])
    proc = start_daemon(run_gattbridge, config, notify)
    wait_online(mqtt, "strap")
    assert_pets_continue(notify, 3, "while everything is up")

    hrm.kill()
    assert_pets_continue(notify, 6, "with the device away")
    mosquitto.stop()
    assert_pets_continue(notify, 6, "with the broker down")
    bluez.kill()
    assert_pets_continue(notify, 6, "with bluetoothd gone (and the broker down)")
    mosquitto.start()
    bluez.start()
    assert_pets_continue(notify, 4, "after the outages")
    assert proc.running


def test_frozen_dbus_daemon_stops_the_watchdog_until_it_resumes(run_gattbridge, mosquitto, bench_dbus, notify,
                                                                tmp_path):
    config = write_config(tmp_path / "config.yaml", mosquitto.port, [])
    proc = start_daemon(run_gattbridge, config, notify)
    assert_pets_continue(notify, 3, "before the freeze")
    dbus_pid = bench_dbus.process.pid
    os.kill(dbus_pid, signal.SIGSTOP)
    try:
        # A probe whose Ping round trip completed just before the freeze may still pet; give it a moment.
        frozen_at = time.monotonic()
        time.sleep(0.3)
        mark = notify.mark()
        time.sleep(2 * INTERVAL + 0.2)  # observing an absence over two intervals
        assert notify.since(mark, "WATCHDOG") == [], "petted while the D-Bus daemon was frozen"
        # The daemon says why.
        proc.wait_for_line(lambda line: "watchdog" in line, stream="stderr", timeout=5)
    finally:
        os.kill(dbus_pid, signal.SIGCONT)
    resumed = notify.mark()
    notify.wait_for("WATCHDOG", "1", since=resumed, timeout=2 * INTERVAL + 2)
    assert_pets_continue(notify, 3, "after the D-Bus daemon resumed")
    assert proc.running
    assert time.monotonic() - frozen_at > 2 * INTERVAL


# --- SIGTERM ----------------------------------------------------------------------------------------------------

def test_sigterm_sends_stopping_then_offline_and_exits_0_within_5s(run_gattbridge, mosquitto, mqtt, peripheral,
                                                                    central, notify, tmp_path):
    peripheral("heart_rate")
    config = write_config(tmp_path / "config.yaml", mosquitto.port, ["heart_rate"])
    proc = start_daemon(run_gattbridge, config, notify)
    wait_online(mqtt, "strap")
    mqtt.wait_for(f"{BASE}/bridge/state", "online")

    mark, mqtt_mark = notify.mark(), mqtt.mark()
    sent = time.monotonic()
    proc.signal(signal.SIGTERM)
    stopping = notify.wait_for("STOPPING", "1", since=mark, timeout=5)
    offline = mqtt.wait_for(f"{BASE}/bridge/state", "offline", since=mqtt_mark, timeout=5)
    seen_offline = time.monotonic()
    assert offline.retain or offline.text == "offline"
    assert stopping["_t"] <= seen_offline
    assert proc.wait(5 - (time.monotonic() - sent)) == 0
    assert time.monotonic() - sent < 5
    # The device was disconnected, and a new subscriber gets the retained offline.
    assert not connected(central, HRM)
    late = MqttClient(mosquitto.host, mosquitto.port, [f"{BASE}/bridge/state"])
    try:
        assert late.wait_for(f"{BASE}/bridge/state").text == "offline"
    finally:
        late.close()


# --- SIGHUP -----------------------------------------------------------------------------------------------------

def test_sighup_reload_keeps_unchanged_devices_starts_new_and_clears_removed(run_gattbridge, mosquitto, mqtt,
                                                                              peripheral, central, notify, tmp_path):
    hrm = peripheral("heart_rate", rate=5)
    led = peripheral("led")
    peripheral("hm10")
    config = write_config(tmp_path / "config.yaml", mosquitto.port, ["heart_rate", "led"])
    proc = start_daemon(run_gattbridge, config, notify)
    wait_online(mqtt, "strap")
    wait_online(mqtt, "lamp")
    mqtt.wait_for(f"{BASE}/lamp/led", "OFF", timeout=10)
    hrm.wait_for({"event": "subscribed", "char": "2a37"})

    write_config(config, mosquitto.port, ["heart_rate", "hm10"])
    mark, mqtt_mark, hrm_mark = notify.mark(), mqtt.mark(), hrm.mark()
    proc.signal(signal.SIGHUP)
    reloading = notify.wait_for("RELOADING", "1", since=mark, timeout=5)
    assert int(reloading["MONOTONIC_USEC"]) > 0
    ready = notify.wait_for("READY", "1", since=mark, timeout=10)
    assert reloading["_t"] <= ready["_t"]
    assert abs(int(reloading["MONOTONIC_USEC"]) / 1e6 - time.clock_gettime(time.CLOCK_MONOTONIC)) < 30

    # New device started.
    mqtt.wait_for(f"{BASE}/serial/availability", "online", since=mqtt_mark, timeout=30)
    # Removed device: disconnected, its retained availability and state cleared.
    mqtt.wait_for(f"{BASE}/lamp/availability", lambda m: m.payload == b"", since=mqtt_mark, timeout=10)
    mqtt.wait_for(f"{BASE}/lamp/led", lambda m: m.payload == b"", since=mqtt_mark, timeout=10)
    assert retained(mosquitto, f"{BASE}/lamp/#") == []
    assert f"{BASE}/strap/availability" in [m.topic for m in retained(mosquitto, f"{BASE}/#")]
    deadline = time.monotonic() + 15
    while connected(central, LED):
        assert time.monotonic() < deadline, "the removed device is still connected"
        time.sleep(0.1)
    # Commands to the removed device are rejected now.
    mqtt.publish(f"{BASE}/lamp/led/set", "ON")
    mqtt.wait_for(f"{BASE}/bridge/log", lambda m: "lamp" in m.text, since=mqtt_mark, timeout=10)
    assert not led.events_matching({"event": "state", "led": "01"})

    # Unchanged device: not reconnected, not resubscribed, and its data kept flowing.
    data_mark = mqtt.mark()
    mqtt.wait_count(f"{BASE}/strap/heart_rate", 5, since=data_mark, timeout=10)
    assert hrm.events_matching(lambda e: e.get("event") in ("subscribed", "unsubscribed"), since=hrm_mark) == []
    assert events(mqtt, "strap", mqtt_mark) == []
    assert [m.text for m in mqtt.received(f"{BASE}/strap/availability", mqtt_mark)] == []
    notify.wait_status("mqtt connected; 2/2 devices online", since=mark, timeout=30)
    assert proc.running


def test_sighup_with_a_bad_config_keeps_the_running_one(run_gattbridge, mosquitto, mqtt, peripheral, notify,
                                                         tmp_path):
    hrm = peripheral("heart_rate", rate=5)
    config = write_config(tmp_path / "config.yaml", mosquitto.port, ["heart_rate"])
    proc = start_daemon(run_gattbridge, config, notify)
    wait_online(mqtt, "strap")

    config.write_text(config.read_text() + "  - name: strap\n    adress: nowhere\n")
    mark, mqtt_mark, hrm_mark, err_mark = notify.mark(), mqtt.mark(), hrm.mark(), len(proc.stderr_lines)
    proc.signal(signal.SIGHUP)
    notify.wait_for("RELOADING", "1", since=mark, timeout=5)
    status = notify.wait_status("reload failed", since=mark, timeout=5)
    assert "config.yaml:" in status["STATUS"] and "old config kept" in status["STATUS"]
    ready = notify.wait_for("READY", "1", since=mark, timeout=5)
    assert status["_t"] <= ready["_t"]
    proc.wait_for_line(lambda line: "config.yaml:" in line and "adress" in line, stream="stderr", since=err_mark)
    proc.wait_for_line("keeping the running config", stream="stderr", since=err_mark)

    # The old config stays in force: the device keeps running, untouched.
    mqtt.wait_count(f"{BASE}/strap/heart_rate", 5, since=mqtt_mark, timeout=10)
    assert hrm.events_matching(lambda e: e.get("event") in ("subscribed", "unsubscribed"), since=hrm_mark) == []
    assert events(mqtt, "strap", mqtt_mark) == []
    assert proc.running

    # A later good reload works again and clears the failure from STATUS.
    write_config(config, mosquitto.port, ["heart_rate"])
    mark = notify.mark()
    proc.signal(signal.SIGHUP)
    notify.wait_for("READY", "1", since=mark, timeout=10)
    notify.wait_status("mqtt connected; 1/1 devices online", since=mark, timeout=10)


def test_sighup_with_new_mqtt_settings_reconnects_the_client(run_gattbridge, bench, mosquitto, mqtt, peripheral,
                                                             notify, tmp_path):
    hrm = peripheral("heart_rate", rate=5)
    config = write_config(tmp_path / "config.yaml", mosquitto.port, ["heart_rate"])
    proc = start_daemon(run_gattbridge, config, notify)
    wait_online(mqtt, "strap")

    second = bench.mosquitto()
    watcher = bench.mqtt_client(second)
    write_config(config, second.port, ["heart_rate"], client_id="gb-test-2")
    hrm_mark, mark, old_mark = hrm.mark(), notify.mark(), mqtt.mark()
    proc.signal(signal.SIGHUP)
    notify.wait_for("READY", "1", since=mark, timeout=10)
    # The old broker is told the bridge left it.
    mqtt.wait_for(f"{BASE}/bridge/state", "offline", since=old_mark, timeout=10)
    # The new broker gets the bridge's state, the device's availability and its data.
    watcher.wait_for(f"{BASE}/bridge/state", "online", timeout=15)
    watcher.wait_for(f"{BASE}/strap/availability", "online", timeout=15)
    watcher.wait_count(f"{BASE}/strap/heart_rate", 3, timeout=10)
    # Commands are subscribed on the new connection.
    watcher.publish(f"{BASE}/nosuch/x/set", "1")
    watcher.wait_for(f"{BASE}/bridge/log", lambda m: "nosuch" in m.text, timeout=10)
    # The Bluetooth side did not notice.
    assert hrm.events_matching(lambda e: e.get("event") in ("subscribed", "unsubscribed"), since=hrm_mark) == []
    # The old broker no longer gets data.
    old_mark = mqtt.mark()
    watcher.wait_count(f"{BASE}/strap/heart_rate", 3, since=len(watcher.messages), timeout=10)
    assert mqtt.received(f"{BASE}/strap/heart_rate", old_mark) == []
    assert proc.running


# --- logging ----------------------------------------------------------------------------------------------------

def test_journald_priority_prefixes_and_log_level(bench, gattbridge_bin, mosquitto, notify, tmp_path):
    """Under journald (JOURNAL_STREAM naming stderr's device and inode), every line starts with <N>."""
    config = write_config(tmp_path / "config.yaml", mosquitto.port, [])
    for level, expect_debug in (("debug", True), ("info", False)):
        log = tmp_path / f"stderr-{level}.log"
        with open(log, "w") as err:
            st = os.fstat(err.fileno())
            env = {**bench.env, **notify.env, "JOURNAL_STREAM": f"{st.st_dev}:{st.st_ino}"}
            mark = notify.mark()
            proc = subprocess.Popen([str(gattbridge_bin), "run", "--config", str(config), "--log-level", level],
                                    env=env, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
            try:
                notify.wait_for("READY", "1", since=mark, timeout=15)
                proc.send_signal(signal.SIGTERM)
                assert proc.wait(5) == 0
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait(5)
        lines = log.read_text().splitlines()
        assert lines, "nothing logged"
        assert all(len(line) > 3 and line[0] == "<" and line[1] in "01234567" and line[2] == ">" for line in lines), \
            lines
        assert any(line.startswith("<5>") and "running" in line for line in lines), lines
        assert any(line.startswith("<7>") for line in lines) == expect_debug, lines


def test_console_lines_are_readable_and_log_level_filters(run_gattbridge, mosquitto, notify, tmp_path):
    config = write_config(tmp_path / "config.yaml", mosquitto.port, [])
    proc = start_daemon(run_gattbridge, config, notify, extra=["--log-level", "warning"], env={"JOURNAL_STREAM": ""})
    proc.signal(signal.SIGTERM)
    assert proc.wait(5) == 0
    # notice ("running", "stopping") is below warning: nothing of it is written.
    assert "running" not in proc.stderr and "stopping" not in proc.stderr

    proc = start_daemon(run_gattbridge, config, notify, env={"JOURNAL_STREAM": ""})
    line = proc.wait_for_line("running", stream="stderr")
    # 2026-11-22T10:00:00.123Z notice [gattbridge] gattbridge … running with 0 device(s) config=…
    stamp, level, label = line.split()[:3]
    assert stamp[4] == "-" and stamp.endswith("Z") and level == "notice" and label == "[gattbridge]", line
    assert not line.startswith("<")
    proc.signal(signal.SIGTERM)
    assert proc.wait(5) == 0
