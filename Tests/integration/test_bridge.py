"""The bridge daemon end to end (SPEC §2–§4): `gattbridge run` against the simulated bench and a real mosquitto.

Every test writes its own config with peripherals at addresses the demo config does not use, under a two-level
base topic (bridge_helpers.BASE). Waits are conditions with deadlines.
"""

from __future__ import annotations

import re
import time

import pytest

from bench.bench import MqttClient
from bench.peripherals import heart_rate, hm10, led

from bridge_helpers import (BASE, assert_consecutive, channel, device, heart_rate_index, heart_rate_payload,
                            persistent_broker_config, persistent_subscriber, start_bridge, wait_log)

STRAP = "C0:FF:EE:00:02:01"
SERIAL = "C0:FF:EE:00:02:02"
LAMP = "C0:FF:EE:00:02:03"
GADGET = "C0:FF:EE:00:02:04"
GHOST = "C0:FF:EE:00:02:0F"      # configured, never served

LED_CHAR = f"{led.SERVICE}/{led.CHARACTERISTIC}"


def strap_device(name: str = "strap", qos: int = 1, battery_interval: float = 1) -> dict:
    return device(name, STRAP, [
        channel("heart_rate", "180d/2a37", "heart_rate_measurement", qos=qos),
        channel("battery", "180f/2a19", "battery_level", mode="read", interval=battery_interval, retain=True),
    ])


def serial_device(name: str = "serial-mod", **options) -> dict:
    return device(name, SERIAL, [
        channel("serial", "ffe0/ffe1", "text", writable=True, write_with_response=False, flush_after=0.5, **options),
    ])


def lamp_device(name: str = "lamp", command_ttl: float = 30, interval: float = 1) -> dict:
    return device(name, LAMP, [
        channel("led", LED_CHAR, "hex", values={"ON": "01", "OFF": "00"}, mode="read", interval=interval,
                writable=True, command_ttl=command_ttl),
    ])


def heart_rate_messages(mqtt, bridge, device_name: str = "strap", since: int = 0) -> list[str]:
    return [m.text for m in mqtt.received(bridge.topic(device_name, "heart_rate"), since)]


# --- 1. values flow ---------------------------------------------------------------------------------------------

def test_values_flow_on_spec_topics(run_gattbridge, peripheral, mosquitto, mqtt, bench, wait_until, tmp_path):
    strap = peripheral("heart_rate", STRAP, rate=5, battery=87)
    serial = peripheral("hm10", SERIAL)
    bridge = start_bridge(run_gattbridge, tmp_path, mosquitto, [strap_device(), serial_device()])

    mqtt.wait_for(bridge.topic("bridge", "state"), "online", 15)
    bridge.wait_online(mqtt, "strap")
    bridge.wait_online(mqtt, "serial-mod")

    # Heart rate: notification i of the subscription, exactly as SPEC §2 spells it, in order.
    wait_until(lambda: len(heart_rate_messages(mqtt, bridge)) >= 10, 15, "fewer than 10 heart-rate messages")
    got = heart_rate_messages(mqtt, bridge)[:10]
    assert got == [heart_rate_payload(i) for i in range(10)]
    assert got[6] == '{"bpm":130,"contact":true,"energy_kj":500,"rr_ms":[500,1000,683.59375]}'
    assert all(m.qos == 1 and not m.retain for m in mqtt.received(bridge.topic("strap", "heart_rate")))

    # Bridge state and availability are retained: a late subscriber gets "online" at once. (Live deliveries
    # carry retain=False: brokers clear the flag for existing subscribers.)
    late = bench.mqtt_client(mosquitto, topics=[f"{BASE}/#"])
    for topic in (bridge.topic("bridge", "state"), bridge.topic("strap", "availability"),
                  bridge.topic("serial-mod", "availability")):
        m = late.wait_for(topic, None, 5)
        assert (m.text, m.retain) == ("online", True), m

    # Battery: read once after connect, then every `interval` (1 s); a changed level shows up in the next poll.
    battery = bridge.topic("strap", "battery")
    mqtt.wait_for(battery, "87", 10)
    assert late.wait_for(battery, "87", 5).retain          # retain: true in its config
    mark = mqtt.mark()
    strap.send({"cmd": "set", "char": "2a19", "value": "40"})
    mqtt.wait_for(battery, "64", 5, since=mark)
    polls = mqtt.wait_count(battery, 3, 6, since=mark)
    times = [m.time for m in polls]
    assert all(0.5 < b - a < 2.0 for a, b in zip(times, times[1:])), times

    # Serial: notified chunks are framed into lines ("\n", "\r\n"); a partial line is flushed after flush_after.
    topic = bridge.topic("serial-mod", "serial")
    mark = mqtt.mark()
    for chunk in (b"hello ", b"wor", b"ld\nsecond li", b"ne\r\n", b"tail"):
        serial.notify("ffe1", chunk)
    mqtt.wait_for(topic, "tail", 5, since=mark)
    assert [m.text for m in mqtt.received(topic, mark)] == ["hello world", "second line", "tail"]

    # The HM-10's own echo of a line (in 20-byte notifications) comes back as one line.
    mark = mqtt.mark()
    line = "the quick brown fox jumps over the lazy dog 0123456789"
    assert len(hm10.echo_chunks(line.encode() + b"\n")) == 3
    mqtt.publish(bridge.topic("serial-mod", "serial", "set"), line)
    serial.wait_for({"event": "line", "text": line}, 10)
    assert mqtt.wait_for(topic, None, 10, since=mark).text == line
    bridge.assert_running()


# --- 2. LED on/off ------------------------------------------------------------------------------------------------

def test_led_on_off_reaches_the_peripheral_and_reads_back(run_gattbridge, peripheral, mosquitto, mqtt, tmp_path):
    lamp = peripheral("led", LAMP)
    lamp.wait_for({"event": "state", "led": "00"})
    bridge = start_bridge(run_gattbridge, tmp_path, mosquitto, [lamp_device(interval=1)])
    bridge.wait_online(mqtt, "lamp")
    state, set_, get = (bridge.topic("lamp", "led", *v) for v in ((), ("set",), ("get",)))
    mqtt.wait_for(state, "OFF", 5)                              # read once after connect, through `values`

    for command, byte in (("ON", "01"), ("OFF", "00"), ("ON", "01")):
        mark, events = mqtt.mark(), lamp.mark()
        mqtt.publish(set_, command)
        write = lamp.wait_for({"event": "write"}, 5, since=events)
        assert (write["value"], write["type"]) == (byte, "request")    # write with response: the LED allows it
        lamp.wait_for({"event": "state", "led": byte}, 5, since=events)
        mqtt.wait_for(state, command, 3, since=mark)                    # the next poll (interval 1 s)
        mark = mqtt.mark()
        mqtt.publish(get, "")
        mqtt.wait_for(state, command, 3, since=mark)                    # `get` reads at once
    assert mqtt.received(bridge.log) == []

    # Raw hex is accepted besides the mapped names (payload leniency), and a read of 01 still publishes "ON".
    mark, events = mqtt.mark(), lamp.mark()
    mqtt.publish(set_, "0x00")
    lamp.wait_for({"event": "state", "led": "00"}, 5, since=events)
    mqtt.wait_for(state, "OFF", 3, since=mark)
    bridge.assert_running()


# --- 3. text writes: chunking, delimiter, write type --------------------------------------------------------------

TEXT_UUID = "c0ffee00-7e47-4c7a-9b1e-00000000000"


def text_gadget(mtu=None) -> dict:
    """A generic peripheral with two writable text characteristics: one reporting `mtu` (if given), one not."""
    chars = [{"uuid": TEXT_UUID + "1", "flags": ["read", "write", "write-without-response"], "value": ""},
             {"uuid": TEXT_UUID + "2", "flags": ["read", "write", "write-without-response"], "value": ""}]
    if mtu is not None:
        chars[0]["mtu"] = mtu
    return {"name": "Text Gadget", "services": [{"uuid": TEXT_UUID + "0", "characteristics": chars}]}


def written(periph, char: str, since: int) -> list[dict]:
    return periph.events_matching({"event": "write", "char": char}, since=since)


def test_text_set_is_written_in_mtu_sized_chunks_with_the_delimiter(run_gattbridge, peripheral, central, mosquitto,
                                                                    mqtt, wait_until, tmp_path):
    serial = peripheral("hm10", SERIAL)
    gadget = peripheral("generic", GADGET, config=text_gadget(mtu=40))
    bridge = start_bridge(run_gattbridge, tmp_path, mosquitto, [
        serial_device(),
        device("gadget", GADGET, [
            channel("small", f"{TEXT_UUID}0/{TEXT_UUID}1", "text", writable=True, write_with_response=True,
                    write_delimiter="\r\n"),
            channel("plain", f"{TEXT_UUID}2", "text", writable=True, write_delimiter=""),
        ]),
    ])
    bridge.wait_online(mqtt, "serial-mod")
    bridge.wait_online(mqtt, "gadget")

    # What BlueZ(oo) tells gattbridge: the HM-10 and the first gadget characteristic expose an MTU property; for the
    # other one the chunk size is MTU − 3 if BlueZoo reports one, else 20 (SPEC §2).
    def chunk_size(address, uuid):
        mtu = central.char_properties(address, uuid).get("MTU")
        return mtu - 3 if mtu else 20
    assert chunk_size(SERIAL, "ffe1") == 20
    assert chunk_size(GADGET, TEXT_UUID + "1") == 37
    plain_size = chunk_size(GADGET, TEXT_UUID + "2")

    def check(periph, char, topic, text, delimiter: bytes, size, wtype):
        events = periph.mark()
        payload = (text.encode() if isinstance(text, str) else text)
        want = payload + delimiter
        mqtt.publish(bridge.topic(*topic, "set"), payload)
        wait_until(lambda: b"".join(bytes.fromhex(e["value"]) for e in written(periph, char, events)) == want,
                   10, f"{topic}: the peripheral did not receive {want!r}: {written(periph, char, events)}")
        chunks = [bytes.fromhex(e["value"]) for e in written(periph, char, events)]
        assert all(e["type"] == wtype for e in written(periph, char, events))
        assert all(0 < len(c) <= size for c in chunks), [len(c) for c in chunks]
        assert all(len(c) == size for c in chunks[:-1]) or any(b >= 0x80 for b in want), [len(c) for c in chunks]
        assert len(chunks) == -(-len(want) // size) or any(b >= 0x80 for b in want)
        return chunks

    # HM-10: MTU 23 → 20-byte chunks, write without response as configured, "\n" appended; its echo comes back.
    line = "".join(f"{i:02d}-" for i in range(30))               # 90 bytes + "\n" → 5 chunks
    check(serial, "ffe1", ("serial-mod", "serial"), line, b"\n", 20, "command")
    serial.wait_for({"event": "line", "text": line}, 5)
    mqtt.wait_for(bridge.topic("serial-mod", "serial"), line, 10)
    # Two commands in a row are written in order, each a whole line.
    events = serial.mark()
    for text in ("first", "second", "third"):
        mqtt.publish(bridge.topic("serial-mod", "serial", "set"), text)
    wait_until(lambda: len(serial.events_matching("line", since=events)) == 3, 10, "three lines")
    assert [e["text"] for e in serial.events_matching("line", since=events)] == ["first", "second", "third"]

    # MTU 40 → 37-byte chunks, write with response, "\r\n" delimiter; multi-byte characters are not split.
    check(gadget, TEXT_UUID + "1", ("gadget", "small"), "x" * 70 + "\r", b"\r\n", 37, "request")
    chunks = check(gadget, TEXT_UUID + "1", ("gadget", "small"), "é" * 40, b"\r\n", 37, "request")
    for c in chunks:
        c.decode("utf-8")                                      # every chunk ends between characters
    # No MTU property: BlueZoo's default (or 20); the characteristic allows both, so with response; no delimiter.
    check(gadget, TEXT_UUID + "2", ("gadget", "plain"), "y" * (plain_size * 2 + 5), b"", plain_size, "request")
    bridge.assert_running()


# --- 4. malformed commands ----------------------------------------------------------------------------------------

LEVEL_UUID = "c0ffee00-1e7e-4c7a-9b1e-000000000001"


def test_malformed_commands_are_logged_while_notifications_keep_flowing(run_gattbridge, peripheral, mosquitto, mqtt,
                                                                        wait_until, tmp_path):
    peripheral("heart_rate", STRAP, rate=10)
    lamp = peripheral("led", LAMP)
    peripheral("hm10", SERIAL)
    gadget = peripheral("generic", GADGET, config={"name": "Level", "services": [{"uuid": "c0ffee00-1e7e-4c7a-9b1e-000000000000", "characteristics": [
        {"uuid": LEVEL_UUID, "flags": ["read", "write"], "value": "05"}]}]})
    bridge = start_bridge(run_gattbridge, tmp_path, mosquitto, [
        strap_device(), lamp_device(), serial_device(),
        device("gadget", GADGET, [channel("level", LEVEL_UUID, "uint8", mode="read", interval=60, writable=True)]),
    ])
    for name in ("strap", "lamp", "serial-mod", "gadget"):
        bridge.wait_online(mqtt, name)
    wait_until(lambda: len(heart_rate_messages(mqtt, bridge)) >= 5, 10, "heart rate flowing")
    lamp_events, gadget_events = lamp.mark(), gadget.mark()

    bad = [
        (bridge.topic("lamp", "led", "set"), "zz"),                     # not hex, not a `values` key
        (bridge.topic("lamp", "led", "set"), "0"),                      # odd number of hex digits
        (bridge.topic("strap", "heart_rate", "set"), "1"),              # channel not writable
        (bridge.topic("strap", "battery", "set"), "50"),                # channel not writable
        (bridge.topic("strap", "nosuch", "set"), "1"),                  # unknown channel
        (bridge.topic("nosuch", "led", "set"), "ON"),                   # unknown device
        (bridge.topic("nosuch", "led", "get"), ""),                     # unknown device (get)
        (bridge.topic("gadget", "level", "set"), "256"),                # out of range for uint8
        (bridge.topic("gadget", "level", "set"), "-1"),                 # out of range for uint8
        (bridge.topic("gadget", "level", "set"), "12abc"),              # not a number
        (bridge.topic("serial-mod", "serial", "set"), b"ok \xff\xfe"),  # invalid UTF-8
        (bridge.topic("lamp", "led", "set"), b"\xc3("),                 # invalid UTF-8 for a hex channel
    ]
    for topic, payload in bad:
        mark = mqtt.mark()
        mqtt.publish(topic, payload)
        entry = wait_log(mqtt, bridge, topic, 5, since=mark)
        assert entry["topic"] == topic
    # A write the peripheral refuses (LED: any byte but 00/01 → ATT error 0x80) is reported too.
    mark = mqtt.mark()
    mqtt.publish(bridge.topic("lamp", "led", "set"), "02")
    assert "0x80" in wait_log(mqtt, bridge, bridge.topic("lamp", "led", "set"), 10, since=mark)["message"]

    # Nothing bad reached the peripherals; good commands still work; notifications never stopped.
    assert [e["value"] for e in lamp.events_matching("write", since=lamp_events)] == ["02"]
    assert gadget.events_matching("write", since=gadget_events) == []
    mark = mqtt.mark()
    mqtt.publish(bridge.topic("gadget", "level", "set"), "255")
    gadget.wait_for({"event": "write", "value": "ff"}, 5, since=gadget_events)
    mqtt.publish(bridge.topic("gadget", "level", "get"), "")
    mqtt.wait_for(bridge.topic("gadget", "level"), "255", 5, since=mark)
    assert mqtt.received(bridge.log, mark) == []
    n = len(heart_rate_messages(mqtt, bridge))
    wait_until(lambda: len(heart_rate_messages(mqtt, bridge)) >= n + 10, 10, "heart rate stopped")
    indices = [heart_rate_index(p) for p in heart_rate_messages(mqtt, bridge)]
    assert indices[0] == 0
    assert_consecutive(indices, len(heart_rate.SEQUENCE))
    for name in ("strap", "lamp", "serial-mod", "gadget"):
        assert mqtt.received(bridge.topic(name, "availability"))[-1].text == "online"
    bridge.assert_running()


# --- 5. faults and recovery ---------------------------------------------------------------------------------------

def events_of(mqtt, bridge, device_name: str, since: int = 0) -> list[dict]:
    return [e for e in (m.json() for m in mqtt.received(bridge.event, since)) if e.get("device") == device_name]


def test_peripheral_killed_goes_offline_and_comes_back(run_gattbridge, peripheral, mosquitto, mqtt, wait_until,
                                                       tmp_path):
    strap = peripheral("heart_rate", STRAP, rate=10)
    lamp = peripheral("led", LAMP)
    bridge = start_bridge(run_gattbridge, tmp_path, mosquitto, [strap_device(), lamp_device()])
    bridge.wait_online(mqtt, "strap")
    bridge.wait_online(mqtt, "lamp")
    connected = mqtt.wait_for(bridge.event, lambda m: m.json() == {"type": "connected", "device": "strap"}, 5)
    assert connected.json() == {"type": "connected", "device": "strap"}
    wait_until(lambda: len(heart_rate_messages(mqtt, bridge)) >= 5, 10, "heart rate flowing")

    for round_ in range(2):
        mark = mqtt.mark()
        strap.kill()
        bridge.wait_availability(mqtt, "strap", "offline", 10, since=mark)
        gone = mqtt.wait_for(bridge.event, lambda m: m.json().get("type") == "disconnected"
                             and m.json().get("device") == "strap", 5, since=mark).json()
        assert list(gone)[0] == "type" and gone["device"] == "strap" and isinstance(gone.get("reason"), str), gone
        # The other device is not disturbed.
        assert [m.text for m in mqtt.received(bridge.topic("lamp", "availability"), mark)] == []

        mark = mqtt.mark()
        strap.start()
        bridge.wait_online(mqtt, "strap", 20, since=mark)
        mqtt.wait_for(bridge.event, lambda m: m.json() == {"type": "connected", "device": "strap"}, 5, since=mark)
        # A new subscription: the sequence starts again at 0 and runs on without gaps.
        wait_until(lambda: len(heart_rate_messages(mqtt, bridge, since=mark)) >= 10, 10, "heart rate resumed")
        indices = [heart_rate_index(p) for p in heart_rate_messages(mqtt, bridge, since=mark)]
        assert indices[0] == 0, indices
        assert_consecutive(indices, len(heart_rate.SEQUENCE))
        mqtt.wait_for(bridge.topic("strap", "battery"), "87", 5, since=mark)   # read again after the reconnect

    # The LED still answers.
    mark = mqtt.mark()
    mqtt.publish(bridge.topic("lamp", "led", "set"), "ON")
    lamp.wait_for({"event": "state", "led": "01"}, 5)
    mqtt.wait_for(bridge.topic("lamp", "led"), "ON", 5, since=mark)
    bridge.assert_running()


def test_bluez_restart_is_resynced_automatically(run_gattbridge, peripheral, bluez, mosquitto, mqtt, wait_until,
                                                 tmp_path):
    strap = peripheral("heart_rate", STRAP, rate=10)
    serial = peripheral("hm10", SERIAL)
    bridge = start_bridge(run_gattbridge, tmp_path, mosquitto, [strap_device(), serial_device()])
    bridge.wait_online(mqtt, "strap")
    bridge.wait_online(mqtt, "serial-mod")
    wait_until(lambda: len(heart_rate_messages(mqtt, bridge)) >= 5, 10, "heart rate flowing")

    for round_ in range(2):
        mark, strap_events, serial_events = mqtt.mark(), strap.mark(), serial.mark()
        bluez.restart()
        for name in ("strap", "serial-mod"):
            bridge.wait_availability(mqtt, name, "offline", 10, since=mark)
        # The peripherals register again by themselves once org.bluez is back.
        strap.wait_for("ready", 15, since=strap_events)
        serial.wait_for("ready", 15, since=serial_events)
        back = mqtt.mark()
        for name in ("strap", "serial-mod"):
            bridge.wait_online(mqtt, name, 30, since=mark)
        wait_until(lambda: len(heart_rate_messages(mqtt, bridge, since=back)) >= 10, 10, "heart rate resumed")
        indices = [heart_rate_index(p) for p in heart_rate_messages(mqtt, bridge, since=back)]
        assert_consecutive(indices, len(heart_rate.SEQUENCE))
        # Writes work on the new objects too.
        mqtt.publish(bridge.topic("serial-mod", "serial", "set"), f"after restart {round_}")
        mqtt.wait_for(bridge.topic("serial-mod", "serial"), f"after restart {round_}", 10, since=back)
    bridge.assert_running()


@pytest.mark.parametrize("known", [False, True], ids=["unknown-to-bluez", "known-but-silent"])
def test_a_device_that_never_appears_holds_up_nobody(run_gattbridge, peripheral, central, mosquitto, mqtt,
                                                     wait_until, tmp_path, known):
    if known:
        # BlueZ has a device object for it (seen once), so the bridge keeps trying to connect and each attempt
        # fails only after a while (le-connection-abort-by-local): those attempts must not starve the others.
        ghost_peripheral = peripheral("generic", GHOST, config={"name": "Ghost", "services": [
            {"uuid": "181a", "characteristics": [{"uuid": "2a6e", "flags": ["read"], "value": "0000"}]}]})
        central.start_discovery()
        central.wait_device(GHOST, 10)
        central.stop_discovery()
        ghost_peripheral.kill()
    peripheral("heart_rate", STRAP, rate=10)
    peripheral("led", LAMP)
    ghost = device("ghost", GHOST, [channel("value", "2a6e", "int16")])
    started = time.monotonic()
    # The ghost comes first in the config, so it would be the first to take the adapter's connect slot.
    bridge = start_bridge(run_gattbridge, tmp_path, mosquitto, [ghost, strap_device(), lamp_device()])
    bridge.wait_online(mqtt, "strap", 10)
    bridge.wait_online(mqtt, "lamp", 10)
    assert time.monotonic() - started < 8
    wait_until(lambda: len(heart_rate_messages(mqtt, bridge)) >= 5, 5, "heart rate flowing")
    assert {m.text for m in mqtt.received(bridge.topic("ghost", "availability"))} == {"offline"}
    mark = mqtt.mark()
    mqtt.publish(bridge.topic("lamp", "led", "set"), "ON")
    mqtt.wait_for(bridge.topic("lamp", "led"), "ON", 5, since=mark)
    bridge.assert_running()


COUNTER_SERVICE = "c0ffee00-c0c0-4c7a-9b1e-000000000000"
COUNTER_UUID = "c0ffee00-c0c0-4c7a-9b1e-000000000001"
COUNTER_CYCLE = 2000


def counter_peripheral(peripheral, rate: float):
    """A generic peripheral notifying 0, 1, 2, … (uint16 LE) at `rate` Hz from each subscription on."""
    values = [i.to_bytes(2, "little").hex() for i in range(COUNTER_CYCLE)]
    return peripheral("generic", GADGET, log_notify=True, config={"name": "Counter", "services": [
        {"uuid": COUNTER_SERVICE, "characteristics": [
            {"uuid": COUNTER_UUID, "flags": ["notify"], "value": "0000",
             "notify": {"values": values, "rate": rate}}]}]})


def counter_device(qos: int = 1) -> dict:
    return device("counter", GADGET, [channel("count", COUNTER_UUID, "uint16", qos=qos)])


def test_broker_restart_loses_no_qos1_message(run_gattbridge, bench, peripheral, wait_until, tmp_path):
    broker = bench.mosquitto(extra_config=persistent_broker_config(tmp_path / "mosquitto-db"))
    sub = persistent_subscriber(bench, broker, [f"{BASE}/#"])
    counter = counter_peripheral(peripheral, rate=20)
    peripheral("heart_rate", STRAP, rate=10)
    bridge = start_bridge(run_gattbridge, tmp_path, broker, [counter_device(qos=1), strap_device(qos=1)])
    bridge.wait_online(sub, "counter")
    bridge.wait_online(sub, "strap")
    count_topic = bridge.topic("counter", "count")
    sub.wait_count(count_topic, 20, 10)

    def sent() -> int:
        return max((e["n"] for e in counter.events_matching("notify")), default=0)

    stops = []
    for outage in range(2):
        stops.append(round(time.monotonic() - sub.received(count_topic)[0].time, 3))
        broker.stop()
        down_at = sent()
        wait_until(lambda: sent() >= down_at + 60, 10, "the counter stopped notifying")   # ≥ 3 s of outage
        broker.start()
        up_at = sent()
        # Everything produced meanwhile arrives once the bridge is back, then live values follow.
        wait_until(lambda: any(int(m.text) >= up_at + 20 for m in sub.received(count_topic)), 40,
                   f"values produced after the restart did not arrive (restart at {up_at})")

    values = [int(m.text) for m in sub.received(count_topic)]
    assert values[0] == 0
    dups = [v for k, v in enumerate(values) if v in values[:k]]
    missing = sorted(set(range(max(values) + 1)) - set(values))
    disorder = [(values[k - 1], values[k]) for k in range(1, len(values)) if values[k] < values[k - 1]]
    msgs = sub.received(count_topic)
    detail = [(k, m.text, round(m.time - msgs[0].time, 3)) for k, m in enumerate(msgs) if int(m.text) in dups]
    assert (dups, missing, disorder) == ([], [], []), f"duplicates, missing, out of order (of {len(values)}) {detail} {stops}"
    assert all(m.qos == 1 for m in sub.received(count_topic))
    hr = [heart_rate_index(m.text) for m in sub.received(bridge.topic("strap", "heart_rate"))]
    assert hr[0] == 0 and len(hr) > 60
    assert_consecutive(hr, len(heart_rate.SEQUENCE))
    bridge.assert_running()


def test_broker_restart_without_persistence_gets_retained_state_again(run_gattbridge, bench, peripheral, mosquitto,
                                                                      mqtt, wait_until, tmp_path):
    peripheral("heart_rate", STRAP, rate=5)
    bridge = start_bridge(run_gattbridge, tmp_path, mosquitto, [strap_device(), device("ghost", GHOST, [
        channel("value", "2a6e", "int16")])])
    bridge.wait_online(mqtt, "strap")
    mosquitto.restart()                  # no persistence: every retained message is gone
    late = wait_until(lambda: bench.mqtt_client(mosquitto, topics=[f"{BASE}/#"]), 10, "broker back")
    for topic, value in ((bridge.topic("bridge", "state"), "online"), (bridge.topic("strap", "availability"), "online"),
                         (bridge.topic("ghost", "availability"), "offline"), (bridge.topic("strap", "battery"), "87")):
        m = late.wait_for(topic, None, 20)
        assert (m.text, m.retain) == (value, True), m
    mark = late.mark()
    late.wait_count(bridge.topic("strap", "heart_rate"), 5, 10, since=mark)
    bridge.assert_running()
