"""The gattbridge tools (docs/cli.md): scan, inspect, read, write, listen and config check, run as the real binary
against the simulated bench (private dbus-daemon, BlueZoo, simulated peripherals)."""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import subprocess
import time

import pytest

from bench.bench import DBusDaemon
from bench.peripherals import heart_rate, led

HRM = "C0:FF:EE:00:00:01"
HM10 = "C0:FF:EE:00:00:02"
LED = "C0:FF:EE:00:00:03"
BASE = "-0000-1000-8000-00805f9b34fb"


def full(short: str) -> str:
    return f"0000{short}{BASE}"


def run(run_gattbridge, args, timeout=30.0, env=None):
    """Runs a one-shot command to completion; returns the process (exit code in .returncode)."""
    proc = run_gattbridge(args, env=env)
    proc.wait(timeout)
    return proc


def connected(central, address: str) -> bool:
    try:
        return bool(central.device_property(address, "Connected"))
    except Exception:  # noqa: BLE001 - a device BlueZ does not know is not connected
        return False


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process, from /proc/PID/stat (fields 14 and 15, in clock ticks)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# --- scan -------------------------------------------------------------------------------------------------

def test_scan_json_lists_peripherals_with_address_name_and_services(run_gattbridge, peripheral):
    peripheral("heart_rate")
    peripheral("led")
    started = time.monotonic()
    proc = run(run_gattbridge, ["scan", "--duration", "3", "--json"])
    elapsed = time.monotonic() - started
    assert proc.returncode == 0, proc.stderr
    assert 2.5 < elapsed < 10
    devices = {d["address"]: d for d in json.loads(proc.stdout)}
    assert set(devices) == {HRM, LED}
    assert devices[HRM] == {"address": HRM, "address_type": "public", "name": "Bench HRM", "rssi": 0,
                            "services": [full("180d"), full("180f")], "paired": False, "bonded": False,
                            "measurements": None}
    assert devices[LED]["name"] == "Bench LED"
    assert devices[LED]["services"] == [led.SERVICE]
    for d in devices.values():
        assert list(d) == ["address", "address_type", "name", "rssi", "services", "paired", "bonded", "measurements"]


# A BTHome v2 broadcast (service data 0xFCD2): 25.06 °C and 50.55 % (bthome-ble's own test vector).
BTHOME = {"fcd2": "4002ca0903bf13"}


def test_scan_shows_what_broadcasts_say(run_gattbridge, peripheral):
    """The decoded measurements of each device (docs/cli.md): an object in --json (null when nothing decodes), one
    column of the table."""
    peripheral("heart_rate")
    thermometer = peripheral("led", service_data=BTHOME).address
    proc = run(run_gattbridge, ["scan", "--duration", "3", "--json"])
    assert proc.returncode == 0, proc.stderr
    devices = {d["address"]: d for d in json.loads(proc.stdout)}
    assert devices[thermometer]["measurements"] == {"temperature": 25.06, "humidity": 50.55}
    assert devices[HRM]["measurements"] is None

    proc = run(run_gattbridge, ["scan", "--duration", "3"])
    assert proc.returncode == 0, proc.stderr
    header, *rows = proc.stdout_lines
    start, end = header.index("MEASUREMENTS"), header.index("SERVICES")
    cells = {row.split()[0]: row[start:end].strip() for row in rows}
    assert cells[thermometer] == "temperature=25.06 humidity=50.55", proc.stdout
    assert cells[HRM] == "-", proc.stdout


def test_scan_service_filter_and_table_when_not_a_terminal(run_gattbridge, peripheral, central):
    peripheral("heart_rate")
    peripheral("led")
    proc = run(run_gattbridge, ["scan", "--duration", "2", "--service", "180d"])
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout_lines
    assert lines[0].split() == ["ADDRESS", "NAME", "RSSI", "MEASUREMENTS", "SERVICES"]
    assert len(lines) == 2, lines
    assert lines[1].startswith(HRM) and "Bench HRM" in lines[1]
    assert "Heart Rate (180d)" in lines[1] and "Battery Service (180f)" in lines[1]
    # Discovery is stopped at the end.
    assert central.bus.get_property("org.bluez", "/org/bluez/hci0", "org.bluez.Adapter1", "Discovering") is False


def test_scan_stops_early_on_sigint_and_still_prints(run_gattbridge, peripheral, wait_until):
    peripheral("heart_rate")
    proc = run_gattbridge(["scan", "--duration", "60", "--json"])
    time.sleep(2.5)  # let one scan tick of BlueZoo pass; the scan itself would run for a minute
    proc.signal(signal.SIGINT)
    assert proc.wait(10) == 0, proc.stderr
    assert [d["address"] for d in json.loads(proc.stdout)] == [HRM]


def test_scan_on_a_terminal_redraws_the_table_as_devices_appear(bench, gattbridge_bin, peripheral):
    peripheral("heart_rate")
    master, slave = pty.openpty()
    proc = subprocess.Popen([gattbridge_bin, "scan", "--duration", "6"], env=bench.env, stdout=slave,
                            stderr=subprocess.PIPE, start_new_session=True)
    os.close(slave)
    output = b""

    def read_until(predicate, timeout):
        nonlocal output
        deadline = time.monotonic() + timeout
        while not predicate(output):
            left = deadline - time.monotonic()
            assert left > 0, f"terminal output so far: {output!r}"
            if select.select([master], [], [], left)[0]:
                try:
                    chunk = os.read(master, 4096)
                except OSError:
                    chunk = b""
                if not chunk:
                    break
                output += chunk
        return output

    try:
        read_until(lambda o: HRM.encode() in o, 10)
        peripheral("led")
        read_until(lambda o: LED.encode() in o, 10)
        assert proc.wait(15) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
    # The second table replaced the first in place: cursor up over it, clear to the end of the screen.
    assert b"\x1b[2A\r\x1b[J" in output, output
    final = output.rsplit(b"\x1b[J", 1)[1].decode().replace("\r", "").splitlines()
    assert final[0].split() == ["ADDRESS", "NAME", "RSSI", "MEASUREMENTS", "SERVICES"]
    assert sorted(line.split()[0] for line in final[1:]) == [HRM, LED]


# --- inspect ----------------------------------------------------------------------------------------------

def test_inspect_prints_the_tree_with_properties_and_decoded_values(run_gattbridge, peripheral, central):
    peripheral("heart_rate", battery=64)
    proc = run(run_gattbridge, ["inspect", HRM])
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert proc.stdout_lines[0] == f'{HRM} "Bench HRM"'
    assert proc.stdout_lines[1] == "  paired: no, bonded: no, trusted: no"
    assert "service Heart Rate (180d)" in out
    assert "characteristic Heart Rate Measurement (2a37)  [notify]" in out
    assert "characteristic Battery Level (2a19)  [read, notify]  = 64" in out
    assert 'characteristic Manufacturer Name String (2a29)  [read]  = "Bench Instruments"' in out
    assert 'characteristic Model Number String (2a24)  [read]  = "HRM-1"' in out
    assert not connected(central, HRM), "inspect left the device connected"


def test_inspect_json(run_gattbridge, peripheral):
    peripheral("heart_rate")
    peripheral("led", initial="01")
    proc = run(run_gattbridge, ["inspect", HRM, "--json"])
    assert proc.returncode == 0, proc.stderr
    tree = json.loads(proc.stdout)
    assert tree["address"] == HRM and tree["name"] == "Bench HRM"
    assert (tree["paired"], tree["bonded"], tree["trusted"]) == (False, False, False)
    services = {s["uuid"]: s for s in tree["services"]}
    assert services[full("180d")]["name"] == "Heart Rate"
    chars = {c["uuid"]: c for s in tree["services"] for c in s["characteristics"]}
    assert chars[full("2a19")] == {"uuid": full("2a19"), "name": "Battery Level", "properties": ["read", "notify"],
                                   "value": 87, "value_hex": "57", "descriptors": []}
    assert chars[full("2a37")]["value"] is None and chars[full("2a37")]["properties"] == ["notify"]
    assert chars[full("2a29")]["value"] == "Bench Instruments"

    proc = run(run_gattbridge, ["inspect", LED, "--json"])
    assert proc.returncode == 0, proc.stderr
    (service,) = json.loads(proc.stdout)["services"]
    assert service["uuid"] == led.SERVICE and service["name"] is None
    assert service["characteristics"][0]["value"] == "01"
    assert service["characteristics"][0]["properties"] == ["read", "write"]


# --- read / write -----------------------------------------------------------------------------------------

def test_read_battery_level_and_hex(run_gattbridge, peripheral, central):
    hrm = peripheral("heart_rate", battery=64)
    proc = run(run_gattbridge, ["read", HRM, "2a19", "--codec", "battery_level"])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "64"
    assert proc.stderr == ""
    hrm.wait_for({"event": "read", "char": "2a19"})
    assert not connected(central, HRM), "read left the device connected"

    proc = run(run_gattbridge, ["read", HRM.lower(), "180f/2a19"])
    assert (proc.returncode, proc.stdout) == (0, "40")
    proc = run(run_gattbridge, ["read", HRM, full("2a29"), "--codec", "text"])
    assert (proc.returncode, proc.stdout) == (0, "Bench Instruments")


def test_write_led_with_request_and_both_write_types(run_gattbridge, peripheral):
    lamp = peripheral("led")
    mark = lamp.mark()
    proc = run(run_gattbridge, ["write", LED, led.CHARACTERISTIC, "01"])
    assert proc.returncode == 0, proc.stderr
    assert lamp.wait_for({"event": "write"}, since=mark) == {"event": "write", "char": led.CHARACTERISTIC,
                                                             "value": "01", "type": "request"}
    lamp.wait_for({"event": "state", "led": "01"}, since=mark)
    proc = run(run_gattbridge, ["read", LED, f"{led.SERVICE}/{led.CHARACTERISTIC}"])
    assert (proc.returncode, proc.stdout) == (0, "01")

    # The LED has no write-without-response: the peripheral refuses the command.
    proc = run(run_gattbridge, ["write", LED, led.CHARACTERISTIC, "00", "--without-response"])
    assert proc.returncode == 75
    assert "org.bluez.Error.NotPermitted" in proc.stderr and len(proc.stderr_lines) == 1

    # A characteristic with both write types sees a command.
    desc = {"name": "Both", "services": [{"uuid": "aaa0", "characteristics": [
        {"uuid": "aaa1", "flags": ["read", "write", "write-without-response"], "value": "00"}]}]}
    both = peripheral("generic", config=desc)
    mark = both.mark()
    proc = run(run_gattbridge, ["write", both.address, "aaa1", "de ad:be", "--without-response"])
    assert proc.returncode == 0, proc.stderr
    assert both.wait_for({"event": "write"}, since=mark) == {"event": "write", "char": "aaa1", "value": "deadbe",
                                                             "type": "command"}
    proc = run(run_gattbridge, ["write", both.address, "aaa1", "513", "--codec", "uint16"])
    assert proc.returncode == 0, proc.stderr
    assert both.wait_for({"event": "write", "value": "0102"}, since=mark)["type"] == "request"


# --- listen -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("acquire", [True, False], ids=["fd", "signal"])
def test_listen_prints_heart_rate_json_lines(run_gattbridge, peripheral, central, wait_until, acquire):
    hrm = peripheral("heart_rate", rate=10, no_acquire_notify=not acquire)
    proc = run_gattbridge(["listen", HRM, "2a37", "--codec", "heart_rate_measurement"])
    n = len(heart_rate.SEQUENCE) + 2
    wait_until(lambda: len(proc.stdout_lines) >= n, 20, "not enough notifications printed")
    for i, line in enumerate(proc.stdout_lines[:n]):
        assert json.loads(line) == heart_rate.expected_json(i), f"line {i}: {line}"
    path = "AcquireNotify (fd)" if acquire else "StartNotify (signal)"
    assert proc.stderr_lines == [f"listening via {path}"]
    hrm.wait_for({"event": "subscribed", "via": "AcquireNotify" if acquire else "StartNotify"})
    mark = hrm.mark()
    proc.signal(signal.SIGINT)
    assert proc.wait(10) == 0, proc.stderr
    hrm.wait_for({"event": "unsubscribed"}, since=mark)
    wait_until(lambda: not connected(central, HRM), 5, "listen left the device connected")


def test_listen_text_frames_lines_and_flushes_a_partial_line(run_gattbridge, peripheral, wait_until):
    peripheral("hm10")
    proc = run_gattbridge(["listen", HM10, "ffe1", "--codec", "text"])
    proc.wait_for_line("listening via", stream="stderr", timeout=20)
    line = "a line longer than one twenty-byte notification"
    w = run(run_gattbridge, ["write", HM10, "ffe0/ffe1", line, "--codec", "text", "--without-response"])
    assert w.returncode == 0, w.stderr
    proc.wait_for_line(lambda l: l == line, timeout=10)
    # No delimiter: the HM-10 echoes nothing until a line is complete, so send the line in two writes; the
    # first half alone must not be printed before the rest arrives.
    w = run(run_gattbridge, ["write", HM10, "ffe1", "first half, ", "--codec", "text", "--delimiter", "",
                             "--without-response"])
    assert w.returncode == 0, w.stderr
    w = run(run_gattbridge, ["write", HM10, "ffe1", "second half", "--codec", "text", "--without-response"])
    assert w.returncode == 0, w.stderr
    proc.wait_for_line(lambda l: l == "first half, second half", timeout=10)
    assert proc.stdout_lines == [line, "first half, second half"]
    proc.signal(signal.SIGTERM)
    assert proc.wait(10) == 0


def test_listen_text_flushes_a_partial_line_after_one_second(run_gattbridge, peripheral):
    desc = {"name": "Echo", "services": [{"uuid": "ffe0", "characteristics": [
        {"uuid": "ffe1", "flags": ["read", "notify"]}]}]}
    echo = peripheral("generic", config=desc)
    proc = run_gattbridge(["listen", echo.address, "ffe1", "--codec", "text"])
    proc.wait_for_line("listening via", stream="stderr", timeout=20)
    echo.notify("ffe1", b"no newline")
    sent = time.monotonic()
    proc.wait_for_line(lambda l: l == "no newline", timeout=5)
    assert time.monotonic() - sent >= 0.9
    proc.stop()


def test_listen_exits_75_when_the_device_disconnects(run_gattbridge, peripheral):
    hrm = peripheral("heart_rate", rate=5)
    proc = run_gattbridge(["listen", HRM, "2a37"])
    proc.wait_for_line(lambda l: l == "0048", timeout=20)
    hrm.kill()
    assert proc.wait(15) == 75
    assert "disconnected" in proc.stderr_lines[-1] and proc.stderr_lines[-1].startswith("gattbridge: listen ")


def test_listen_idles_without_cpu(run_gattbridge, peripheral):
    # Two notifications, then silence: a listener that polls anything burns CPU here.
    peripheral("heart_rate", rate=10, count=2)
    proc = run_gattbridge(["listen", HRM, "2a37"])
    proc.wait_for_line(lambda l: l == "064b", timeout=20)
    time.sleep(0.5)
    before = cpu_seconds(proc.pid)
    time.sleep(3)
    used = cpu_seconds(proc.pid) - before
    assert used <= 0.03, f"listen used {used:.3f} s of CPU in 3 s of silence"
    assert len(proc.stdout_lines) == 2
    proc.stop()


# --- exit codes -------------------------------------------------------------------------------------------

def test_usage_errors_exit_64(run_gattbridge):
    for args in (["read", "C0:FF:EE:00:00", "2a19"], ["read", HRM, "not-a-uuid"], ["read", HRM, "2a19", "--codec", "x"],
                 ["write", HRM, "2a19", "01", "--codec", "battery_level"], ["scan", "--duration", "0"], ["frobnicate"]):
        proc = run(run_gattbridge, args)
        assert proc.returncode == 64, (args, proc.stderr)
        assert len(proc.stderr_lines) == 1 and proc.stderr.startswith("gattbridge: "), (args, proc.stderr)
        assert proc.stdout == ""


def test_bad_value_exits_65_before_connecting(run_gattbridge, peripheral, central):
    lamp = peripheral("led")
    mark = lamp.mark()
    proc = run(run_gattbridge, ["write", LED, led.CHARACTERISTIC, "zz"])
    assert proc.returncode == 65
    assert proc.stderr_lines == [f'gattbridge: write {LED} {led.CHARACTERISTIC}: codec hex rejects "zz": '
                                 + proc.stderr_lines[0].split("rejects \"zz\": ", 1)[1]]
    proc = run(run_gattbridge, ["write", LED, led.CHARACTERISTIC, "300", "--codec", "uint8"])
    assert proc.returncode == 65
    assert not connected(central, LED)
    assert not any(e.get("event") == "write" for e in lamp.history[mark:])


def test_unknown_device_and_adapter_exit_69(run_gattbridge, peripheral):
    proc = run(run_gattbridge, ["read", "C0:FF:EE:00:00:99", "2a19", "--timeout", "2"])
    assert proc.returncode == 69
    assert proc.stderr_lines == ["gattbridge: device C0:FF:EE:00:00:99 not found on hci0 (scanned 2 s)"]
    proc = run(run_gattbridge, ["read", HRM, "2a19", "--adapter", "hci9"])
    assert proc.returncode == 69 and "hci9" in proc.stderr
    peripheral("heart_rate")
    proc = run(run_gattbridge, ["read", HRM, "2a99"])
    assert proc.returncode == 69
    assert proc.stderr_lines == [f"gattbridge: characteristic 2a99 not found on {HRM}"]


def test_no_bluez_on_the_bus_exits_69(run_gattbridge, tmp_path):
    bus = DBusDaemon(tmp_path, tmp_path).start()
    try:
        for args in (["scan", "--duration", "1"], ["read", HRM, "2a19"], ["inspect", HRM]):
            proc = run(run_gattbridge, args, env={"DBUS_SYSTEM_BUS_ADDRESS": bus.address})
            assert proc.returncode == 69, (args, proc.stderr)
            assert "org.bluez" in proc.stderr and len(proc.stderr_lines) == 1
    finally:
        bus.stop()
    proc = run(run_gattbridge, ["read", HRM, "2a19"],
               env={"DBUS_SYSTEM_BUS_ADDRESS": f"unix:path={tmp_path}/no-such-bus"})
    assert proc.returncode == 69 and "system bus" in proc.stderr


def test_gatt_failures_exit_75(run_gattbridge, peripheral, central):
    peripheral("heart_rate")
    peripheral("led")
    proc = run(run_gattbridge, ["write", HRM, "2a19", "05"])
    assert proc.returncode == 75
    assert proc.stderr_lines == [f"gattbridge: write {HRM} 2a19: org.bluez.Error.NotPermitted: not permitted"]
    proc = run(run_gattbridge, ["read", HRM, "2a37"])
    assert proc.returncode == 75 and "NotPermitted" in proc.stderr
    proc = run(run_gattbridge, ["write", LED, led.CHARACTERISTIC, "05"])   # the LED answers ATT error 0x80
    assert proc.returncode == 75
    assert proc.stderr_lines == [f"gattbridge: write {LED} {led.CHARACTERISTIC}: org.bluez.Error.Failed: failed: 0x80"]
    assert not connected(central, HRM) and not connected(central, LED)


def test_command_on_an_already_connected_device_leaves_it_connected(run_gattbridge, peripheral, central):
    peripheral("heart_rate")
    central.start_discovery()
    central.wait_device(HRM)
    central.connect(HRM)
    proc = run(run_gattbridge, ["read", HRM, "2a19", "--codec", "battery_level"])
    assert (proc.returncode, proc.stdout) == (0, "87")
    assert connected(central, HRM)


# --- config check -----------------------------------------------------------------------------------------

GOOD_CONFIG = """\
mqtt:
  host: localhost
devices:
  - name: chest-strap
    address: "C0:FF:EE:00:00:01"
    channels:
      - name: heart_rate
        characteristic: "2a37"
        codec: heart_rate_measurement
  - name: desk-led
    address: "C0:FF:EE:00:00:03"
    channels:
      - name: led
        characteristic: "c0ffee00-1ed0-4c7a-9b1e-000000000002"
        codec: hex
        values: { "ON": "01", "OFF": "00" }
        mode: read
        writable: true
"""

BAD_CONFIG = """\
mqtt:
  host: localhost
  port: "many"
devices:
  - name: chest-strap
    address: "C0:FF:EE:00:00:01"
    colour: red
    channels:
      - name: heart_rate
        characteristic: "2a37"
        codec: heart_rate_measurement
"""


def test_config_check_ok(run_gattbridge, tmp_path):
    path = tmp_path / "good.yaml"
    path.write_text(GOOD_CONFIG)
    proc = run(run_gattbridge, ["config", "check", "--config", path])
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "ok", "")


def test_config_check_reports_every_error_with_its_position(run_gattbridge, tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(BAD_CONFIG)
    proc = run(run_gattbridge, ["config", "check", "--config", path])
    assert proc.returncode == 78
    assert proc.stdout == ""
    assert len(proc.stderr_lines) == 2, proc.stderr
    assert proc.stderr_lines[0].startswith(f"{path}:3:9: ")
    assert proc.stderr_lines[1].startswith(f"{path}:7:5: ") and "colour" in proc.stderr_lines[1]

    proc = run(run_gattbridge, ["config", "check", "--config", tmp_path / "missing.yaml"])
    assert proc.returncode == 78 and str(tmp_path / "missing.yaml") in proc.stderr


# --- hardening: numbers and config files --------------------------------------------------------------------

@pytest.mark.parametrize("args", [
    ["scan", "--duration", "1e300"], ["scan", "--duration", "nan"], ["scan", "--duration", "inf"],
    ["scan", "--duration=-1"], ["scan", "--duration", "0"], ["scan", "--duration", "1e10"],
    ["inspect", HRM, "--timeout", "9.3e18"], ["read", HRM, "2a19", "--timeout", "1e300"],
    ["write", HRM, "2a19", "01", "--timeout=-inf"], ["listen", HRM, "2a37", "--timeout", "0"],
])
def test_out_of_range_seconds_are_usage_errors_not_crashes(run_gattbridge, args):
    """`--duration 1e300` and `--timeout 9.3e18` overflowed the conversion to milliseconds: SIGILL."""
    proc = run(run_gattbridge, args)
    assert proc.returncode == 64, (args, proc.returncode, proc.stderr)
    option = "--duration" if args[0] == "scan" else "--timeout"
    assert proc.stderr_lines == [proc.stderr_lines[0]] and proc.stderr.startswith("gattbridge: "), proc.stderr
    assert f"{option} must be a number of seconds greater than 0 and at most 1000000000" in proc.stderr, proc.stderr
    assert proc.stdout == ""


def test_config_check_refuses_special_large_and_deep_files(run_gattbridge, tmp_path):
    """Each used to abort (2 GB allocation for /dev/zero), hang (a FIFO) or take seconds (deep nesting)."""
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    big = tmp_path / "big.yaml"
    big.write_text("# padding\n" * 110_000)
    deep = tmp_path / "deep.yaml"
    deep.write_text("[" * 40_000)
    secret = tmp_path / "secret.yaml"
    secret.write_text("mqtt:\n  username: bridge\n  password_file: /dev/zero\n")
    expected = {
        "/dev/zero": "/dev/zero: cannot read the config: not a regular file (a character device)",
        str(fifo): f"{fifo}: cannot read the config: not a regular file (a FIFO)",
        str(tmp_path): f"{tmp_path}: cannot read the config: not a regular file (a directory)",
        str(big): f"{big}: cannot read the config: larger than 1 MiB, the most accepted",
        str(deep): f"{deep}:1:65: the document is nested more than 64 levels deep",
        str(secret): f"{secret}:3:18: cannot read password_file \"/dev/zero\": not a regular file (a character device)",
    }
    for path, message in expected.items():
        proc = run(run_gattbridge, ["config", "check", "--config", path], timeout=10)
        assert (proc.returncode, proc.stdout, proc.stderr_lines) == (78, "", [message]), (path, proc.stderr)


def test_config_check_warns_but_says_ok(run_gattbridge, tmp_path):
    """tls.insecure, credentials in clear text to a remote broker, a password file others can read: still ok, exit 0,
    each a warning on stderr that never shows the secret."""
    secret = "Sup3r-S3cret-Pw"
    password = tmp_path / "mqtt-password"
    password.write_text(secret + "\n")
    password.chmod(0o644)
    path = tmp_path / "warn.yaml"
    path.write_text(f"mqtt:\n  host: broker.example\n  username: bridge\n  password_file: {password}\n")
    proc = run(run_gattbridge, ["config", "check", "--config", path])
    assert (proc.returncode, proc.stdout) == (0, "ok"), proc.stderr
    assert proc.stderr_lines == [
        f"{path}: warning: the MQTT username and password go to broker.example:1883 unencrypted (no mqtt.tls): "
        "anyone on the network path can read them",
        f"{path}: warning: password_file \"{password}\" is accessible to group or others (mode 0644); make it "
        "readable by its owner only (chmod 600)",
    ], proc.stderr
    assert secret not in proc.stderr

    path.write_text("mqtt:\n  tls:\n    insecure: true\n")
    proc = run(run_gattbridge, ["config", "check", "--config", path])
    assert (proc.returncode, proc.stdout) == (0, "ok"), proc.stderr
    assert len(proc.stderr_lines) == 1 and "mqtt.tls.insecure is set" in proc.stderr and "host name" in proc.stderr


BINDKEY = "231d39c1d7cc1ab1aee224cd096db932"


def test_config_check_passive_devices_and_bindkeys(run_gattbridge, tmp_path):
    """`adverts:` and the advert, bindkey_file and bindkey device keys (docs/configuration.md#adverts): a passive
    device needs no channels; each bad key is an error naming file, line and key, never the key's digits; an inline
    bindkey and advert devices while adverts are off are warnings."""
    key_file = tmp_path / "balcony.bindkey"
    key_file.write_text(BINDKEY + "\n")
    key_file.chmod(0o600)
    path = tmp_path / "adverts.yaml"
    path.write_text(f"""\
adverts: {{enabled: true, auto: [bthome, xiaomi], auto_limit: 50, timeout: 600}}
devices:
  - name: balcony
    address: "A4:C1:38:00:00:01"
    advert: bthome
    bindkey_file: {key_file.name}
  - name: plant
    address: "C4:7C:8D:00:00:01"
    advert: auto
  - name: strap
    address: "C0:FF:EE:00:00:01"
    advert: xiaomi
    bindkey: "{BINDKEY}"
    channels:
      - {{name: hr, characteristic: "2a37", codec: heart_rate_measurement}}
""")
    proc = run(run_gattbridge, ["config", "check", "--config", path])
    assert (proc.returncode, proc.stdout) == (0, "ok"), proc.stderr
    assert proc.stderr_lines == [f'{path}: warning: device "strap" has its bindkey in the config file; put it in a '
                                 "bindkey_file readable by its owner only"]
    assert BINDKEY not in proc.stderr

    path.write_text(path.read_text().replace("enabled: true", "enabled: false"))
    proc = run(run_gattbridge, ["config", "check", "--config", path])
    assert (proc.returncode, proc.stdout) == (0, "ok"), proc.stderr
    assert f'{path}: warning: devices "balcony", "plant", "strap" have advert: but adverts.enabled is false, so their ' \
           "broadcasts are never listened to; set adverts: {enabled: true}" in proc.stderr_lines, proc.stderr

    short = BINDKEY[:-1]
    key_file.write_text(short + "\n")
    bad = tmp_path / "bad-adverts.yaml"
    bad.write_text(f"""\
adverts:
  auto: [bthome, xiaomy]
  auto_limit: 100000
devices:
  - name: balcony
    address: "A4:C1:38:00:00:01"
    advert: bthome
    bindkey_file: {key_file}
  - name: plant
    address: "C4:7C:8D:00:00:01"
    bindkey: "{short}"
  - name: door
    address: "C4:7C:8D:00:00:02"
    advert: xiaomi
    bindkey: "{short}"
""")
    proc = run(run_gattbridge, ["config", "check", "--config", bad])
    assert (proc.returncode, proc.stdout) == (78, ""), proc.stderr
    assert proc.stderr_lines == [
        f'{bad}:2:18: auto in adverts must be one of bthome, xiaomi, pvvx, atc, govee, ruuvi, ibeacon, eddystone, got '
        '"xiaomy" (did you mean "xiaomi"?)',
        f"{bad}:3:15: auto_limit in adverts must be an integer from 0 to 10000, got 100000",
        f'{bad}:8:19: bindkey_file "{key_file}" must hold 32 hex digits',
        f'{bad}:9:5: device "plant" is missing required key "channels"',
        f'{bad}:11:5: bindkey in device "plant" needs advert: (the format of its broadcasts, or auto)',
        f'{bad}:15:14: bindkey in device "door" must be 32 hex digits',
    ], proc.stderr
    assert short not in proc.stderr
