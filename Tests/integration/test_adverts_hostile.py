"""Hostile radios (issue 40, docs/adverts.md): advertisements are the one input anyone in range can send without a
password. A simulated broadcaster puts bytes the test made on the air (`raw`), as an attacker's phone or nRF dongle
would, and the daemon's MQTT output shows what it believed.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Optional

from bench.broadcasts import BTHOME_UUID, bthome_encrypt

from adverts_helpers import (BINDKEY, PREFIX, TIMEOUT, error_about, passive, start_adverts_bridge, wait_value,
                             write_bindkey)
from bench.peripherals import led
from bridge_helpers import BASE, channel, device, retained_messages

BUTTON = "A4:C1:38:0B:71:01"
KEY = bytes.fromhex(BINDKEY)


def press(counter: int) -> dict:
    """An encrypted BTHome button press (packet id, button 'press') with encryption counter `counter`, as the raw
    command's service data: a capture of the real button's packet with that counter."""
    objects = bytes([0x00, counter & 0xFF, 0x3A, 0x01])
    return {"cmd": "raw", "service_data": {BTHOME_UUID: bthome_encrypt(objects, BUTTON, KEY, counter, 0x45).hex()}}


def went_back(counter: Optional[int] = None):
    """A matcher of the door's report of a counter that went back (`counter`, or any)."""
    about = error_about("door", BUTTON)

    def matches(message) -> bool:
        text = message.json().get("message", "")
        return about(message) and "not believed" in text and (counter is None or f"counter {counter} " in text)
    return matches


def test_replayed_presses_are_never_believed_across_restarts_until_rearmed(bench, run_gattbridge, gattbridge_bin,
                                                                           mosquitto, mqtt, tmp_path):
    """The audit's button: counters below 100 were always believed and made every older capture fresh again, and a
    restart forgot every counter. Now a capture is never believed again, not after a restart either; a device that
    counts from zero again is reported and believed once re-armed."""
    key = write_bindkey(tmp_path)
    button = bench.broadcaster("bthome", BUTTON, bindkey_file=key, event_hold=3)
    button.send({"cmd": "pause", "on": True})
    state = tmp_path / "state"
    bridge = start_adverts_bridge(run_gattbridge, gattbridge_bin, tmp_path, mosquitto,
                                  [passive("door", BUTTON, "bthome", key)], state_dir=state)
    bridge.wait_online(mqtt, "door")
    topic = bridge.topic("door", "button")

    def pressed(counter: int, count: int, at_most: int = 0) -> None:
        mark = mqtt.mark()
        button.send(press(counter))
        mqtt.wait_for(topic, None, 20, since=mark)
        assert count <= len(mqtt.received(topic)) <= max(count, at_most)

    def refused(counter: int) -> None:
        mark = mqtt.mark()
        button.send(press(counter))
        report = mqtt.wait_for(bridge.log, went_back(counter), 20, since=mark)
        assert report.json()["level"] == "warning"

    pressed(2000, 1)
    refused(10)              # below 100: believed before, and it reset the counter
    pressed(2001, 2)
    button.send(press(2000))  # a capture again: not reported twice within the hour, and not believed
    pressed(2002, 3)

    # A restart: the counters come back from state_dir; the captures stay worthless.
    # BlueZ may hand the restarted daemon an older packet of the button first: whichever capture it reports first,
    # one report comes, and no press.
    assert (state / "replay-counters").exists()
    bridge.process.stop()
    mark = mqtt.mark()
    bridge = start_adverts_bridge(run_gattbridge, gattbridge_bin, tmp_path, mosquitto,
                                  [passive("door", BUTTON, "bthome", key)], state_dir=state)
    button.send(press(2001))
    mqtt.wait_for(bridge.log, went_back(), 20, since=mark)
    pressed(2003, 4)

    # A new battery: the device counts from zero, is not believed (the report of the hour is out already), and is
    # believed once re-armed (the CLI's verb).
    button.send(press(1))
    done = subprocess.run([str(gattbridge_bin), "devices", "rearm", "door", "--config", str(bridge.config_path)],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    # The press of counter 1 may still be on the air when the re-arm lands, and be believed then: one press more.
    pressed(2, 5, at_most=6)
    refused(1)               # the new mark holds; re-arming also restarted the reports' hourly limit
    unknown = subprocess.run([str(gattbridge_bin), "devices", "rearm", "nobody", "--config",
                              str(bridge.config_path)], capture_output=True, text=True, timeout=30)
    assert unknown.returncode == 65, unknown.stderr

    # The key is a secret: not in any message, log line or the saved counters.
    assert BINDKEY not in (state / "replay-counters").read_text().lower()
    assert not [m.topic for m in mqtt.messages if BINDKEY.encode() in m.payload.lower()]
    assert BINDKEY not in (bridge.process.stdout + bridge.process.stderr).lower()
    bridge.assert_running()


AUTO = "A4:C1:38:0B:71:02"


def test_an_auto_device_can_be_removed_and_leaves_with_its_topics_when_silent(bench, run_gattbridge, gattbridge_bin,
                                                                                mosquitto, mqtt, tmp_path, wait_until):
    """Auto devices kept their slots and their retained topics for good (issue 40: 100 ghost devices in Home
    Assistant after a flood), and `device/remove` refused them. Now `device/remove` takes one out, and one silent
    for `adverts.timeout` leaves by itself: out of `B/bridge/devices`, its readings, availability, RSSI and Home
    Assistant configs cleared."""
    sensor = bench.broadcaster("bthome", AUTO)
    bridge = start_adverts_bridge(run_gattbridge, gattbridge_bin, tmp_path, mosquitto, [], homeassistant=True,
                                  state_dir=tmp_path / "state")
    name = "bthome-" + AUTO.replace(":", "").lower()
    node = "gattbridge_" + AUTO.replace(":", "") + "_advert"

    def listed(present: bool):
        return lambda m: any(d.get("name") == name for d in m.json()) == present

    def leftovers() -> list[str]:
        ours = retained_messages(mosquitto, f"{BASE}/#", f"{BASE}/test-sentinel")
        configs = retained_messages(mosquitto, f"{PREFIX}/#", f"{PREFIX}/test-sentinel")
        return [t for t, p in ours.items() if t.startswith(f"{BASE}/{name}/") and p] \
            + [t for t, p in configs.items() if f"/{node}/" in t and p]

    devices = bridge.topic("bridge", "devices")
    mqtt.wait_for(devices, listed(True), 20)
    wait_value(mqtt, bridge, name, "temperature", sensor)
    wait_until(lambda: len(leftovers()) >= 4, 10)      # readings, availability, RSSI and their configs

    mark = mqtt.mark()
    mqtt.publish(bridge.topic("bridge", "request", "device/remove"), json.dumps({"name": name, "transaction": 1}))
    answer = mqtt.wait_for(bridge.topic("bridge", "response", "device/remove"), None, 10, since=mark)
    assert answer.json()["status"] == "ok", answer.text
    mqtt.wait_for(devices, listed(False), 10, since=mark)
    # Still broadcasting, and `bthome` still in adverts.auto: it comes back.
    mqtt.wait_for(devices, listed(True), 20, since=mark)
    wait_value(mqtt, bridge, name, "temperature", sensor, since=mark)

    mark = mqtt.mark()
    sensor.stop()
    mqtt.wait_for(devices, listed(False), TIMEOUT + 20, since=mark)
    wait_until(lambda: leftovers() == [], 10)
    bridge.assert_running()


PLAIN = "A4:C1:38:0B:71:03"


def test_numbered_repeats_stop_at_four_and_text_readings_lose_their_controls(bench, run_gattbridge, gattbridge_bin,
                                                                          mosquitto, mqtt, tmp_path):
    """One forged advertisement made hundreds of entities (`temperature_1` … `temperature_464`) and text readings
    reached MQTT with ESC, NUL and newlines in them (issue 40). Now four of one object are kept and the rest reported
    once; a text reading is published with its controls escaped."""
    sensor = bench.broadcaster("bthome", PLAIN, event_hold=3)
    sensor.send({"cmd": "pause", "on": True})
    bridge = start_adverts_bridge(run_gattbridge, gattbridge_bin, tmp_path, mosquitto,
                                  [passive("porch", PLAIN, "bthome")], homeassistant=True)
    bridge.wait_online(mqtt, "porch")

    mark = mqtt.mark()
    repeats = bytes([0x40]) + b"".join(bytes([0x02, i, 0x09]) for i in range(9))
    sensor.send({"cmd": "raw", "service_data": {BTHOME_UUID: repeats.hex()}})
    report = mqtt.wait_for(bridge.log, error_about("porch", PLAIN), 20, since=mark)
    assert "dropped" in report.json()["message"], report.text
    mqtt.wait_for(bridge.topic("porch", "temperature_4"), None, 10, since=mark)
    published = {m.topic.rsplit("/", 1)[1] for m in mqtt.received(bridge.topic("porch", "+"), mark)
                 if m.topic.rsplit("/", 1)[1].startswith("temperature_")}
    assert published == {f"temperature_{i}" for i in range(1, 5)}, published

    mark = mqtt.mark()
    text = b"a\x1b[2J\x00\nz"
    sensor.send({"cmd": "raw", "service_data": {BTHOME_UUID: (bytes([0x40, 0x53, len(text)]) + text).hex()}})
    reading = mqtt.wait_for(bridge.topic("porch", "text"), None, 20, since=mark)
    assert reading.payload == b"a\\x1b[2J\\x00\\nz", reading.payload
    reports = [m for m in mqtt.received(bridge.log) if error_about("porch", PLAIN)(m)]
    assert len(reports) == 1, [m.text for m in reports]
    bridge.assert_running()


CROWD = ("A4:C1:38:0B:71:11", "A4:C1:38:0B:71:12", "A4:C1:38:0B:71:13")


def test_a_full_auto_table_is_reported_and_a_slot_comes_back(bench, run_gattbridge, gattbridge_bin, mosquitto, mqtt,
                                                             tmp_path):
    """Every auto slot taken, a real new sensor was ignored without a log line, for good (issue 40). Now the full
    table is reported, naming the limit, and a slot given back by a silent device takes the sensor that waited."""
    sensors = [bench.broadcaster("bthome", address) for address in CROWD]
    bridge = start_adverts_bridge(run_gattbridge, gattbridge_bin, tmp_path, mosquitto, [], auto_limit=2,
                                  state_dir=tmp_path / "state")
    names = ["bthome-" + a.replace(":", "").lower() for a in CROWD]
    devices = bridge.topic("bridge", "devices")

    def tracked(message) -> set[str]:
        return {d["name"] for d in message.json() if d.get("source") == "advert"}

    full = mqtt.wait_for(bridge.log, lambda m: "auto_limit (2)" in m.json().get("message", ""), 30)
    assert full.json()["level"] == "warning"
    first = mqtt.wait_for(devices, lambda m: len(tracked(m)) == 2, 20)
    silent = next(i for i, n in enumerate(names) if n in tracked(first))
    waiting = next(n for n in names if n not in tracked(first))
    mark = mqtt.mark()
    sensors[silent].stop()
    mqtt.wait_for(devices, lambda m: names[silent] not in tracked(m) and waiting in tracked(m), TIMEOUT + 30,
                  since=mark)
    reports = [m for m in mqtt.received(bridge.log) if "auto_limit" in m.json().get("message", "")]
    assert len(reports) == 1, [m.text for m in reports]   # once, then at most hourly
    bridge.assert_running()


LAMP = "C0:FF:EE:00:29:01"
HRM = "C0:FF:EE:00:29:02"
FORGED = tuple(f"A4:C1:38:0B:72:{i:02X}" for i in range(1, 7))


def test_forged_broadcasters_stay_within_the_bounds(bench, run_gattbridge, gattbridge_bin, mosquitto, mqtt,
                                                    peripheral, tmp_path, wait_until):
    """The audit's flood in small: forged addresses in an `auto` format, each packet full of numbered repeats of a
    new kind of object. Every device stays within 32 readings (4 of one kind), their Home Assistant configs within
    their bound, the daemon's peak RSS under 64 MB; meanwhile the bridge API answers, a connected lamp's `set` is
    carried out and its heart-rate neighbour's values keep coming, each within a few seconds."""
    light = peripheral("led", LAMP)
    peripheral("heart_rate", HRM, rate=2)
    radios = [bench.broadcaster("bthome", address, event_hold=1) for address in FORGED]
    for radio in radios:
        radio.send({"cmd": "pause", "on": True})
    bridge = start_adverts_bridge(run_gattbridge, gattbridge_bin, tmp_path, mosquitto, [
        device("lamp", LAMP, [channel("led", f"{led.SERVICE}/{led.CHARACTERISTIC}", "hex",
                                      values={"ON": "01", "OFF": "00"}, mode="read", interval=3600, writable=True,
                                      homeassistant="switch")]),
        device("strap", HRM, [channel("heart_rate", "2a37", "heart_rate_measurement")])],
        homeassistant=True, state_dir=tmp_path / "state", auto_limit=100)
    bridge.wait_online(mqtt, "lamp", 30)
    bridge.wait_online(mqtt, "strap", 30)
    # 5–8 repeats of one object per packet (within a legacy advertisement's 31 bytes), a new object each round:
    # 20 rounds would make over 100 entities a device.
    sizes = {0x05: 3, 0x02: 2, 0x03: 2, 0x09: 1, 0x0C: 2, 0x0D: 2, 0x0E: 2, 0x12: 2, 0x13: 2, 0x14: 2, 0x2E: 1,
             0x2F: 1, 0x06: 2, 0x08: 2, 0x3D: 2, 0x40: 2, 0x41: 2, 0x43: 2, 0x44: 2, 0x45: 2}
    for round_, (object_id, size) in enumerate(sizes.items()):
        # The battery says which round it is: once the bridge published it, the round's packets were heard.
        packet = bytes([0x40, 0x01, round_ + 1]) + b"".join(bytes([object_id]) + bytes([round_ + i] * size)
                                                            for i in range({1: 8, 2: 6, 3: 5}[size]))
        marks = [radio.mark() for radio in radios]
        mark_mqtt = mqtt.mark()
        for radio in radios:
            radio.send({"cmd": "raw", "service_data": {BTHOME_UUID: packet.hex()}}, wait=False)
        started = time.monotonic()
        answer = request_health(mqtt, bridge)
        assert answer["status"] == "ok" and time.monotonic() - started < 5
        events = light.mark()
        mqtt.publish(bridge.topic("lamp", "led", "set"), "ON" if round_ % 2 else "OFF")
        light.wait_for(lambda e: e.get("event") == "write" and e.get("value") == ("01" if round_ % 2 else "00"), 5,
                       since=events)
        mqtt.wait_for(bridge.topic("strap", "heart_rate"), None, 5, since=mark_mqtt)
        for radio, mark in zip(radios, marks):
            radio.wait_for(lambda e: e.get("event") == "done" and e.get("cmd") == "raw", 10, since=mark)
        wait_until(lambda: len({m.topic for m in mqtt.received(f"{BASE}/+/battery", mark_mqtt)
                                if m.text == str(round_ + 1)}) >= 3, 15)
    names = ["bthome-" + a.replace(":", "").lower() for a in FORGED]
    ours = retained_messages(mosquitto, f"{BASE}/#", f"{BASE}/test-sentinel")
    configs = retained_messages(mosquitto, f"{PREFIX}/#", f"{PREFIX}/test-sentinel")
    most = 0
    for name, address in zip(names, FORGED):
        readings = [t for t, p in ours.items() if t.startswith(f"{BASE}/{name}/") and p
                    and t.rsplit("/", 1)[1] not in ("availability", "rssi")]
        assert len(readings) <= 32, (name, len(readings))
        most = max(most, len(readings))
        for base in {t.rsplit("/", 1)[1].rsplit("_", 1)[0] for t in readings}:
            assert len([t for t in readings if t.rsplit("/", 1)[1].startswith(base + "_")]) <= 4, base
        node = "gattbridge_" + address.replace(":", "") + "_advert"
        assert len([t for t, p in configs.items() if f"/{node}/" in t and p]) <= 100
    print(f"flood: at most {most} readings a device; peak RSS {status_kb(bridge.process.pid, 'VmHWM') / 1024:.1f} MB")
    assert most >= 16, "the flood was not heard: the bounds were not put to the test"
    assert status_kb(bridge.process.pid, "VmHWM") < 64 * 1024
    bridge.assert_running()


def request_health(mqtt, bridge) -> dict:
    transaction = f"t-{time.monotonic_ns()}"
    mark = mqtt.mark()
    mqtt.publish(bridge.topic("bridge", "request", "health"), json.dumps({"transaction": transaction}))
    return mqtt.wait_for(bridge.topic("bridge", "response", "health"),
                         lambda m: m.json().get("transaction") == transaction, 10, since=mark).json()


def status_kb(pid: int, key: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    raise KeyError(key)
