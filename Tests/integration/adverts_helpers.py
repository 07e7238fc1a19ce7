"""Helpers of the passive-broadcast tests (test_adverts.py, test_adverts_formats.py, test_adverts_fleet.py and the
Home Assistant tier): what a central's Device1 holds of a broadcaster, the daemon on a config with `adverts:`, and
waits and checks that compare the daemon's MQTT output with what the simulated broadcasters
(bench/peripherals/broadcaster.py) sent.

The broadcasters report every packet with the values a reference parser reads from its bytes (checked against
bthome-ble, xiaomi-ble, govee-ble and ruuvitag-ble in Tests/adverts/test_bench_broadcasters.py): a value the daemon
publishes is right when it is one the broadcaster sent.
"""

from __future__ import annotations

import json
import math
import subprocess
import time
from pathlib import Path
from typing import Optional

import pytest

from bench.dbus_util import unvariant_dict

from bridge_helpers import BASE, Bridge, retained_messages, to_yaml

BINDKEY = "231d39c1d7cc1ab1aee224cd096db932"
WRONG_KEY = "00112233445566778899aabbccddeeff"
TIMEOUT = 5               # adverts.timeout of the daemon tests, seconds
PREFIX = "homeassistant"

# format → the readings its packets carry (a beacon's only reading is its calibrated TX power; its identity is no
# reading, and its presence is published on its own topic)
MEASUREMENTS = {"bthome": ("battery", "temperature", "humidity"),
                "pvvx": ("temperature", "humidity", "battery", "voltage"),
                "govee": ("temperature", "humidity", "battery"),
                "xiaomi": ("temperature", "humidity", "battery", "voltage"),
                "ruuvi": ("temperature", "humidity", "pressure", "voltage", "movement_counter", "acceleration_x",
                          "acceleration_y", "acceleration_z", "acceleration_total"),
                "ibeacon": ("tx_power",),
                "eddystone": ("tx_power",)}


# --- the bench -----------------------------------------------------------------------------------------------------

def write_bindkey(tmp_path: Path, key: str = BINDKEY, name: str = "bindkey") -> Path:
    path = tmp_path / name
    path.write_text(key + "\n")
    path.chmod(0o600)
    return path


def scan_with_duplicates(central) -> None:
    """Discovery on the central as the daemon runs it for broadcasts: LE, every report (DuplicateData)."""
    central.bus.call("org.bluez", central.adapter_path, "org.bluez.Adapter1", "SetDiscoveryFilter", "a{sv}",
                     {"Transport": ("s", "le"), "DuplicateData": ("b", True)})
    central.start_discovery()


def on_air(central, address: str) -> Optional[dict]:
    """What the central's Device1 holds of `address`'s advertising data, in the broadcaster's event form."""
    props = central.devices().get(address)
    if props is None:
        return None
    service = {uuid[4:8] if uuid.endswith("-0000-1000-8000-00805f9b34fb") else uuid: bytes(value).hex()
               for uuid, value in unvariant_dict(props.get("ServiceData", {})).items()}
    maker = {str(company): bytes(value).hex()
             for company, value in unvariant_dict(props.get("ManufacturerData", {})).items()}
    return {"service_data": service, "manufacturer_data": maker, "name": props.get("Name")}


def packet_on_air(central, broadcaster, since: int = 0) -> Optional[dict]:
    """The broadcaster's packet (one of those sent since `since`) that the central's Device1 shows now, if any."""
    data = on_air(central, broadcaster.address)
    if data is None:
        return None
    for packet in reversed(broadcaster.broadcasts(since)):
        if packet["service_data"] == data["service_data"] and packet["manufacturer_data"] == data["manufacturer_data"]:
            return packet
    return None


def decode_cli(gattbridge_bin, address: str, packet: dict, bindkey_file: Optional[Path] = None,
               name: Optional[str] = None) -> dict:
    args = [str(gattbridge_bin), "adverts", "decode", "--address", address]
    for uuid, data in packet["service_data"].items():
        args += ["--service-data", f"{uuid}={data}"]
    for company, data in packet["manufacturer_data"].items():
        args += ["--manufacturer-data", f"{company}={data}"]
    if bindkey_file is not None:
        args += ["--bindkey-file", str(bindkey_file)]
    if name is not None:
        args += ["--name", name]
    result = subprocess.run(args, capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def same_number(text: str, value: float) -> bool:
    try:
        return math.isclose(float(text), value, rel_tol=0, abs_tol=1e-9)
    except ValueError:
        return False


def sent_values(broadcaster, measurement: str, after: int = -1) -> list[float]:
    """The values of `measurement` the broadcaster sent (in packets numbered above `after`)."""
    return [p["measurements"][measurement] for p in broadcaster.broadcasts()
            if measurement in p["measurements"] and p["n"] > after]


# --- the daemon ----------------------------------------------------------------------------------------------------

def adverts_config(port: int, devices: list[dict], adapters: tuple[str, ...] = ("hci0",),
                   auto: tuple[str, ...] = ("bthome",), homeassistant: bool = False,
                   state_dir: Optional[Path] = None, auto_limit: Optional[int] = None) -> str:
    doc = {
        "mqtt": {"host": "127.0.0.1", "port": port, "client_id": f"gattbridge-adverts-{time.monotonic_ns()}",
                 "base_topic": BASE, "keepalive": 10},
        "homeassistant": {"enabled": homeassistant},
        "bluetooth": {"adapters": list(adapters)},
        "adverts": {"enabled": True, "auto": list(auto), "timeout": TIMEOUT},
        "devices": devices,
    }
    if state_dir is not None:
        doc["state_dir"] = str(state_dir)
    if auto_limit is not None:
        doc["adverts"]["auto_limit"] = auto_limit
    return to_yaml(doc) + "\n"


def passive(name: str, address: str, fmt: str, bindkey_file: Optional[Path] = None) -> dict:
    entry = {"name": name, "address": address, "advert": fmt}
    if bindkey_file is not None:
        entry["bindkey_file"] = str(bindkey_file)
    return entry


def start_adverts_bridge(run_gattbridge, gattbridge_bin, tmp_path: Path, mosquitto, devices: list[dict],
                         **options) -> Bridge:
    """The daemon on a config with `adverts:`; skips the test while the daemon does not know that key."""
    path = tmp_path / "adverts.yaml"
    path.write_text(adverts_config(mosquitto.port, devices, **options))
    check = subprocess.run([str(gattbridge_bin), "config", "check", "--config", str(path)], capture_output=True,
                           text=True, timeout=30)
    if 'unknown key "adverts"' in check.stderr:
        pytest.skip("this gattbridge does not know the `adverts` config key yet (the daemon side of passive "
                    "advertisements is not in this build)")
    assert check.returncode == 0, check.stderr
    return Bridge(run_gattbridge(["run", "--config", path, "--log-level", "debug"]), path, BASE)


def wait_value(mqtt, bridge: Bridge, name: str, measurement: str, broadcaster, timeout: float = 20.0,
               since: int = 0, other_than: Optional[str] = None, after: int = -1):
    """The first message on B/name/measurement (from `since`) whose number is one the broadcaster sent (in a packet
    numbered above `after`: the bench's values do not repeat within 40 packets)."""
    def sent(message) -> bool:
        return message.text != other_than and any(same_number(message.text, v)
                                                  for v in sent_values(broadcaster, measurement, after))
    bridge.assert_running()
    return mqtt.wait_for(bridge.topic(name, measurement), sent, timeout, since)


def wait_readings(mqtt, bridge: Bridge, sensors: dict) -> None:
    """Each device (name → its broadcaster) online with every reading it sends, one that the broadcaster sent, then
    a later temperature (they step every packet: the readings follow the broadcasts) and its RSSI."""
    for name, sensor in sensors.items():
        bridge.wait_online(mqtt, name)
        for measurement in MEASUREMENTS[sensor.options["format"]]:
            wait_value(mqtt, bridge, name, measurement, sensor)
        first = wait_value(mqtt, bridge, name, "temperature", sensor)
        wait_value(mqtt, bridge, name, "temperature", sensor, since=mqtt.messages.index(first), other_than=first.text)
        mqtt.wait_for(bridge.topic(name, "rssi"), None, 10)


def assert_retained(mosquitto, bridge: Bridge, sensors: dict) -> None:
    """Retained, as a state channel's: a subscriber arriving now gets each reading (a value the broadcaster sent), the
    RSSI and the availability."""
    retained = retained_messages(mosquitto, f"{BASE}/#", f"{BASE}/test-sentinel")
    for name, sensor in sensors.items():
        for measurement in MEASUREMENTS[sensor.options["format"]]:
            topic = bridge.topic(name, measurement)
            assert topic in retained, f"{topic} is not retained"
            assert any(same_number(retained[topic].decode(), v) for v in sent_values(sensor, measurement))
        assert retained[bridge.topic(name, "availability")] == b"online"
        assert bridge.topic(name, "rssi") in retained


def assert_only_sent_values(mqtt, bridge: Bridge, name: str, broadcaster) -> None:
    """Every value published for the device is one the broadcaster sent (nothing invented, nothing mis-scaled), and
    a value is published when it changed, not again for a repeat."""
    for measurement in MEASUREMENTS[broadcaster.options["format"]]:
        published = [m.text for m in mqtt.received(bridge.topic(name, measurement))]
        values = sent_values(broadcaster, measurement)
        stray = [p for p in published if not any(same_number(p, v) for v in values)]
        assert stray == [], f"{name}/{measurement}: published {stray}, never sent (sent {values[-10:]})"
        repeats = [a for a, b in zip(published, published[1:]) if a == b]
        assert repeats == [], f"{name}/{measurement}: the same value published twice in a row: {repeats}"


def assert_never_connected(mqtt, bridge: Bridge, sensors: dict) -> None:
    """Passive devices are never connected: no connection event names one."""
    connects = [m.text for m in mqtt.received(bridge.event) if m.json().get("device") in sensors]
    assert connects == [], connects


def advert_configs(mosquitto, component: str, address: str) -> dict[str, dict]:
    """The retained Home Assistant configs of one component under the adverts feature's discovery node of `address`,
    by their state topic."""
    node = "gattbridge_" + address.replace(":", "") + "_advert"
    configs = retained_messages(mosquitto, f"{PREFIX}/#", f"{PREFIX}/test-sentinel")
    return {json.loads(p).get("state_topic"): json.loads(p) for t, p in configs.items()
            if t.startswith(f"{PREFIX}/{component}/{node}/") and p}


def error_about(name: str, address: str):
    """A matcher of B/bridge/log entries about one device (by its name or address)."""
    def matches(message) -> bool:
        text = message.json().get("message", "")
        return name in text or address in text.upper()
    return matches


def check_wrong_bindkey(bench, run_gattbridge, gattbridge_bin, mosquitto, mqtt, tmp_path, fmt: str,
                        locked_address: str, plain_address: str) -> None:
    """A device saved with the wrong bindkey: one error on B/bridge/log, then nothing of it while a plain sensor of
    the same format publishes on; no bindkey in any message or log line."""
    right = write_bindkey(tmp_path)
    wrong = write_bindkey(tmp_path, WRONG_KEY, "wrong-bindkey")
    locked = bench.broadcaster(fmt, locked_address, bindkey_file=right)
    plain = bench.broadcaster(fmt, plain_address)
    bridge = start_adverts_bridge(run_gattbridge, gattbridge_bin, tmp_path, mosquitto, [
        passive("cellar", locked_address, fmt, wrong), passive("balcony", plain_address, fmt)])
    about_cellar = error_about("cellar", locked_address)
    error = mqtt.wait_for(bridge.log, about_cellar, 20)
    assert error.json()["level"] == "error"
    # Several more broadcasts of both sensors go by: the plain one publishes, the locked one never does.
    first = wait_value(mqtt, bridge, "balcony", "temperature", plain)
    second = wait_value(mqtt, bridge, "balcony", "temperature", plain, since=mqtt.messages.index(first),
                        other_than=first.text)
    wait_value(mqtt, bridge, "balcony", "temperature", plain, since=mqtt.messages.index(second),
               other_than=second.text)
    assert len(locked.broadcasts()) >= 3
    for measurement in MEASUREMENTS[fmt]:
        assert mqtt.received(bridge.topic("cellar", measurement)) == []
    assert mqtt.received(bridge.topic("cellar", "availability")) == []
    errors = [m for m in mqtt.received(bridge.log) if about_cellar(m)]
    assert len(errors) == 1, [m.text for m in errors]
    # The keys are secrets: in no message and no log line.
    for secret in (BINDKEY, WRONG_KEY):
        assert not [m.topic for m in mqtt.messages if secret.encode() in m.payload.lower()]
        assert secret not in (bridge.process.stdout + bridge.process.stderr).lower()
    bridge.assert_running()


def check_replay_not_published(bench, run_gattbridge, gattbridge_bin, mosquitto, mqtt, tmp_path, fmt: str,
                               address: str, encrypted: bool) -> None:
    """An earlier packet put on the air again (the broadcaster's `replay`) publishes nothing: its packet number (or
    encryption counter) was seen already, and its values, older than those published since, would show if it did."""
    key = write_bindkey(tmp_path) if encrypted else None
    sensor = bench.broadcaster(fmt, address, bindkey_file=key, event_hold=3)
    bridge = start_adverts_bridge(run_gattbridge, gattbridge_bin, tmp_path, mosquitto,
                                  [passive("cellar", address, fmt, key)])
    first = wait_value(mqtt, bridge, "cellar", "temperature", sensor)
    wait_value(mqtt, bridge, "cellar", "temperature", sensor, since=mqtt.messages.index(first), other_than=first.text)
    old = next(p for p in sensor.broadcasts() if same_number(first.text, p["measurements"]["temperature"]))
    mark, sensor_mark = mqtt.mark(), sensor.mark()
    sensor.send({"cmd": "replay", "n": old["n"]})
    replayed = sensor.wait_for("replayed", 5, since=sensor_mark)
    assert replayed["packet_id"] == old["packet_id"]
    # Once a packet sent after the replay is published, the replay has been on the air for several scans.
    last = max(p["n"] for p in sensor.broadcasts())
    wait_value(mqtt, bridge, "cellar", "temperature", sensor, since=mark, after=last)
    stale = [m.text for m in mqtt.received(bridge.topic("cellar", "temperature"), mark)
             if same_number(m.text, replayed["measurements"]["temperature"])]
    assert stale == [], f"the replayed packet {old['n']} was published again"
    bridge.assert_running()
