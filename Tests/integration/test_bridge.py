"""The bridge daemon end to end (docs/configuration.md#codecs and docs/configuration.md and docs/mqtt.md): `gattbridge run` against the simulated bench and a real mosquitto.

Every test writes its own config with peripherals at addresses the demo config does not use, under a two-level
base topic (bridge_helpers.BASE). Waits are conditions with deadlines.
"""

from __future__ import annotations

import re
import time

import pytest

from bench.bench import persistent_broker_config
from bench.peripherals import heart_rate, hm10, led

from bridge_helpers import (BASE, assert_consecutive, channel, device, heart_rate_index, heart_rate_payload,
                            persistent_subscriber, start_bridge, wait_log, without_redeliveries)

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

    # Heart rate: notification i of the subscription, exactly as docs/configuration.md#codecs spells it, in order.
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
    # A device name that needs sanitising and a channel with a `topic` override (docs/mqtt.md).
    config = lamp_device("$desk/lamp #1", interval=1)
    config["channels"][0]["topic"] = "light+state"
    bridge = start_bridge(run_gattbridge, tmp_path, mosquitto, [config])
    bridge.wait_online(mqtt, "desk_lamp _1")
    state, set_, get = (bridge.topic("desk_lamp _1", "light_state", *v) for v in ((), ("set",), ("get",)))
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
    # other one the chunk size is MTU − 3 if BlueZoo reports one, else 20 (docs/configuration.md#codecs).
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
        (bridge.topic("strap", "heart_rate", "get"), ""),               # notify-only: the read is refused
        (bridge.topic("serial-mod", "serial", "set"), b"ok \xff\xfe"),  # invalid UTF-8
        (bridge.topic("lamp", "led", "set"), b"\xc3("),                 # invalid UTF-8 for a hex channel
    ]
    # Each is reported, except that docs/security.md allows 10 reports a second: the rest are summed up in one line.
    burst = mqtt.mark()
    reported = 0
    for topic, payload in bad:
        mark = mqtt.mark()
        mqtt.publish(topic, payload)
        msg = mqtt.wait_for(bridge.log, lambda m: m.json().get("topic") == topic or "suppressed" in m.json(), 5,
                            since=mark)
        if "suppressed" not in msg.json():
            assert wait_log(mqtt, bridge, topic, 5, since=mark)["topic"] == topic
            reported += 1
    if reported < len(bad):
        summary = mqtt.wait_for(bridge.log, lambda m: "suppressed" in m.json(), 5, since=burst).json()
        assert reported + summary["suppressed"] == len(bad), (reported, summary)
    # A write the peripheral refuses (LED: any byte but 00/01 → ATT error 0x80) is reported too.
    mark = mqtt.mark()
    mqtt.publish(bridge.topic("lamp", "led", "set"), "02")
    assert "0x80" in wait_log(mqtt, bridge, bridge.topic("lamp", "led", "set"), 10, since=mark)["message"]

    # Nothing bad reached the peripherals; good commands still work; notifications never stopped.
    lamp.wait_for({"event": "write", "value": "02"}, 5, since=lamp_events)
    assert [e["value"] for e in lamp.events_matching("write", since=lamp_events)] == ["02"]
    mark = mqtt.mark()
    mqtt.publish(bridge.topic("gadget", "level", "set"), "255")
    gadget.wait_for({"event": "write", "value": "ff"}, 5, since=gadget_events)
    assert [e["value"] for e in gadget.events_matching("write", since=gadget_events)] == ["ff"]
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


@pytest.mark.parametrize("acquire", [True, False], ids=["AcquireNotify", "StartNotify"])
def test_peripheral_killed_goes_offline_and_comes_back(run_gattbridge, peripheral, mosquitto, mqtt, wait_until,
                                                       tmp_path, acquire):
    strap = peripheral("heart_rate", STRAP, rate=10, no_acquire_notify=not acquire)
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
        if round_ == 0:
            bluez.restart()                  # a crash and an immediate restart
        else:
            bluez.kill()                     # away for a while: the bridge waits for org.bluez, then resyncs
            for name in ("strap", "serial-mod"):
                bridge.wait_availability(mqtt, name, "offline", 10, since=mark)
            strap.wait_for("bluez_lost", 10, since=strap_events)
            outage_ends = time.monotonic() + 3
            wait_until(lambda: time.monotonic() >= outage_ends, 5, "a 3 s outage")
            bridge.assert_running()
            bluez.start()
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


def test_link_taken_away_by_another_client_is_restored(run_gattbridge, peripheral, central, mosquitto, mqtt,
                                                       wait_until, tmp_path):
    """Someone else (bluetoothctl, another program) disconnects the device or removes it from BlueZ."""
    peripheral("heart_rate", STRAP, rate=10)
    bridge = start_bridge(run_gattbridge, tmp_path, mosquitto, [strap_device()])
    bridge.wait_online(mqtt, "strap")
    for action in ("disconnect", "remove", "disconnect"):
        mark = mqtt.mark()
        if action == "disconnect":
            central.disconnect(STRAP)
        else:
            central.bus.call("org.bluez", "/org/bluez/hci0", "org.bluez.Adapter1", "RemoveDevice", "o",
                             central.device_path(STRAP))
        bridge.wait_availability(mqtt, "strap", "offline", 10, since=mark)
        bridge.wait_online(mqtt, "strap", 20, since=mark)
        back = mqtt.mark()
        wait_until(lambda: len(heart_rate_messages(mqtt, bridge, since=back)) >= 5, 10, f"no values after {action}")
        indices = [heart_rate_index(p) for p in heart_rate_messages(mqtt, bridge, since=back)]
        assert_consecutive(indices, len(heart_rate.SEQUENCE))
    bridge.assert_running()


def test_peripheral_flapping_ends_online(run_gattbridge, peripheral, mosquitto, mqtt, wait_until, tmp_path):
    strap = peripheral("heart_rate", STRAP, rate=10)
    bridge = start_bridge(run_gattbridge, tmp_path, mosquitto, [strap_device()])
    bridge.wait_online(mqtt, "strap")
    for _ in range(5):
        strap.restart(wait_ready=False)      # killed and back at once, whatever the bridge is doing
    strap.wait_for("ready", 15)
    mark = mqtt.mark()
    wait_until(lambda: mqtt.received(bridge.topic("strap", "availability"))[-1].text == "online"
               and len(heart_rate_messages(mqtt, bridge, since=mark)) >= 10, 40, "not back online with values")
    indices = [heart_rate_index(p) for p in heart_rate_messages(mqtt, bridge, since=mark)]
    assert_consecutive(indices, len(heart_rate.SEQUENCE))
    bridge.assert_running()


def test_peripheral_with_a_missing_characteristic_recovers_when_fixed(run_gattbridge, peripheral, mosquitto, mqtt,
                                                                      wait_until, tmp_path):
    """A firmware without the configured characteristic: offline with an error; a fixed one is picked up."""
    def layout(chars):
        return {"name": "Sensor", "services": [{"uuid": "181a", "characteristics": chars}]}
    temperature = {"uuid": "2a6e", "flags": ["read", "notify"], "value": "0000",
                   "notify": {"values": ["e803", "e903"], "rate": 5}}
    humidity = {"uuid": "2a6f", "flags": ["read"], "value": "1027"}
    broken = peripheral("generic", GADGET, config=layout([humidity]))
    bridge = start_bridge(run_gattbridge, tmp_path, mosquitto, [device("sensor", GADGET, [
        channel("temperature", "181a/2a6e", "int16"), channel("humidity", "181a/2a6f", "uint16")])])
    error = mqtt.wait_for(bridge.event, lambda m: m.json().get("type") == "error", 20).json()
    assert error["device"] == "sensor" and "temperature" in error["message"], error
    assert {m.text for m in mqtt.received(bridge.topic("sensor", "availability"))} == {"offline"}
    broken.kill()
    peripheral("generic", GADGET, config=layout([temperature, humidity]))
    bridge.wait_online(mqtt, "sensor", 20)         # after the 5 s (±20 %) backoff: remove, rediscover, connect
    mqtt.wait_for(bridge.topic("sensor", "humidity"), "10000", 5)
    mqtt.wait_for(bridge.topic("sensor", "temperature"), "1001", 5)
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
    if not known:
        # When it finally shows up it is discovered and connected like the others (indications work as
        # notifications do).
        peripheral("generic", GHOST, config={"name": "Ghost", "services": [{"uuid": "181a", "characteristics": [
            {"uuid": "2a6e", "flags": ["read", "indicate"], "value": "0000",
             "notify": {"values": ["f401", "0cfe"], "rate": 5}}]}]})
        bridge.wait_online(mqtt, "ghost", 20)
        mqtt.wait_for(bridge.topic("ghost", "value"), "-500", 5)
        mqtt.wait_for(bridge.topic("ghost", "value"), "500", 5)
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
        """How many notifications the counter has sent (the last value is sent() - 1)."""
        return max((e["n"] for e in counter.events_matching("notify")), default=0)

    def received() -> list[int]:
        return [int(m.text) for m in sub.received(count_topic)]

    def caught_up() -> bool:
        target = sent() - 1
        return any(v >= target for v in received())

    outages = []
    for _ in range(2):
        wait_until(caught_up, 40, "the subscriber never caught up with the counter")
        broker.stop()
        assert broker.saved_database(), "the broker lost its sessions: the test would count its losses against us"
        down_at = sent()
        wait_until(lambda: sent() >= down_at + 60, 10, "the counter stopped notifying")   # ≥ 3 s of outage
        broker.start()
        outages.append((down_at, sent()))
    # Everything produced meanwhile arrives once the bridge is back (its reconnect backoff may take a few
    # seconds), then live values follow.
    wait_until(caught_up, 60, f"values produced after the restarts did not all arrive (outages {outages})")

    values = received()
    assert values[0] == 0
    first_copies = list(dict.fromkeys(values))
    assert first_copies == list(range(len(first_copies))), \
        f"lost or reordered: {sorted(set(range(max(values) + 1)) - set(values))[:20]} (outages {outages})"
    # QoS 1 is at least once: a message in flight when the broker died (delivered, PUBACK lost) is sent again.
    # Nothing else may be duplicated; in particular everything produced during an outage arrives exactly once.
    duplicated = sorted({v for v in values if values.count(v) > 1})
    in_flight = set().union(*(range(down - 25, down + 1) for down, _ in outages))
    assert set(duplicated) <= in_flight, f"duplicates {duplicated}, outages {outages}"
    for down, up in outages:
        assert all(values.count(v) == 1 for v in range(down + 1, up)), (down, up)
    assert all(m.qos == 1 for m in sub.received(count_topic))
    # The heart rate (QoS 1 too) runs on without a gap; a re-delivered in-flight message shows as a repeat.
    hr = [heart_rate_index(m.text) for m in sub.received(bridge.topic("strap", "heart_rate"))]
    assert hr[0] == 0 and len(hr) > 60
    hr, runs = without_redeliveries(hr, max_run=len(heart_rate.SEQUENCE) - 1)   # a longer run is the cycle itself
    assert runs <= 2, runs                                          # at most one re-delivered run per outage
    assert_consecutive(hr, len(heart_rate.SEQUENCE))
    bridge.assert_running()


def test_broker_down_at_start_up_gets_everything_once_it_appears(run_gattbridge, bench, peripheral, wait_until,
                                                                  tmp_path):
    broker = bench.mosquitto(extra_config=persistent_broker_config(tmp_path / "mosquitto-db"))
    sub = persistent_subscriber(bench, broker, [f"{BASE}/#"])
    broker.stop()
    counter = counter_peripheral(peripheral, rate=20)
    bridge = start_bridge(run_gattbridge, tmp_path, broker, [counter_device(qos=1)])
    # Bluetooth does not wait for the broker: the device connects and values are produced (and buffered).
    wait_until(lambda: len(counter.events_matching("notify")) >= 40, 15, "the bridge never subscribed")
    bridge.assert_running()
    broker.start()
    bridge.wait_online(sub, "counter", 40)
    count_topic = bridge.topic("counter", "count")
    wait_until(lambda: len(sub.received(count_topic)) >= 60, 20, "buffered values did not arrive")
    values = [int(m.text) for m in sub.received(count_topic)]
    assert values == list(range(len(values)))
    assert sub.wait_for(bridge.topic("bridge", "state"), "online", 5)
    bridge.assert_running()


def test_broker_restart_without_persistence_gets_retained_state_again(run_gattbridge, bench, peripheral, mosquitto,
                                                                      mqtt, wait_until, tmp_path):
    peripheral("heart_rate", STRAP, rate=5)
    lamp = peripheral("led", LAMP)
    bridge = start_bridge(run_gattbridge, tmp_path, mosquitto, [strap_device(), lamp_device(), device(
        "ghost", GHOST, [channel("value", "2a6e", "int16")])])
    bridge.wait_online(mqtt, "strap")
    bridge.wait_online(mqtt, "lamp")
    mosquitto.restart()                  # no persistence: every retained message is gone
    watcher = wait_until(lambda: bench.mqtt_client(mosquitto, topics=[f"{BASE}/#"]), 10, "broker back")
    watcher.wait_for(bridge.topic("bridge", "state"), "online", 40)      # the bridge is back (after its backoff)
    watcher.wait_count(bridge.topic("strap", "heart_rate"), 5, 10)
    # Values bypass the core and can come back before its republish of the retained state (on a loaded machine, by
    # over a second): wait for that republish, then check a newcomer gets it as retained.
    watcher.wait_for(bridge.topic("strap", "availability"), "online", 10)
    watcher.wait_for(bridge.topic("ghost", "availability"), "offline", 10)
    late = bench.mqtt_client(mosquitto, topics=[f"{BASE}/#"])
    for topic, value in ((bridge.topic("bridge", "state"), "online"), (bridge.topic("strap", "availability"), "online"),
                         (bridge.topic("ghost", "availability"), "offline")):
        m = late.wait_for(topic, None, 5)
        assert (m.text, m.retain) == (value, True), m
    # The command subscriptions are restored on the new broker.
    late.publish(bridge.topic("lamp", "led", "set"), "ON")
    lamp.wait_for({"event": "state", "led": "01"}, 5)
    bridge.assert_running()


def test_bridge_crash_leaves_its_will(run_gattbridge, peripheral, bench, mosquitto, mqtt, tmp_path):
    peripheral("led", LAMP)
    bridge = start_bridge(run_gattbridge, tmp_path, mosquitto, [lamp_device()])
    bridge.wait_online(mqtt, "lamp")
    mark = mqtt.mark()
    bridge.process.kill()
    mqtt.wait_for(bridge.topic("bridge", "state"), "offline", 15, since=mark)
    late = bench.mqtt_client(mosquitto, topics=[bridge.topic("bridge", "state")])
    m = late.wait_for(bridge.topic("bridge", "state"), None, 5)
    assert (m.text, m.retain) == ("offline", True)


# --- 6. commands while offline ------------------------------------------------------------------------------------

LAMP2 = "C0:FF:EE:00:02:05"


def test_set_while_offline_is_written_after_reconnection_or_dropped_after_ttl(run_gattbridge, peripheral, mosquitto,
                                                                              mqtt, wait_until, tmp_path):
    lamp = peripheral("led", LAMP)
    short = peripheral("led", LAMP2)
    short_device = lamp_device("short", command_ttl=2)
    short_device["address"] = LAMP2
    bridge = start_bridge(run_gattbridge, tmp_path, mosquitto, [lamp_device(command_ttl=30), short_device])
    bridge.wait_online(mqtt, "lamp")
    bridge.wait_online(mqtt, "short")

    # Within the ttl: queued while offline, written in arrival order once the device is back.
    mark = mqtt.mark()
    lamp.kill()
    short.kill()
    bridge.wait_availability(mqtt, "lamp", "offline", 10, since=mark)
    bridge.wait_availability(mqtt, "short", "offline", 10, since=mark)
    for command in ("ON", "OFF", "ON"):
        mqtt.publish(bridge.topic("lamp", "led", "set"), command)
    sent_at = time.monotonic()
    mqtt.publish(bridge.topic("short", "led", "set"), "ON")

    # Past its 2 s ttl the short-lived command is dropped with an error (not before).
    entry = wait_log(mqtt, bridge, bridge.topic("short", "led", "set"), 10, since=mark)
    elapsed = time.monotonic() - sent_at
    assert 1.5 <= elapsed <= 5, elapsed
    assert "command_ttl" in entry["message"] or "offline" in entry["message"], entry

    lamp.start()
    bridge.wait_online(mqtt, "lamp", 20, since=mark)
    wait_until(lambda: len(lamp.events_matching("write")) == 3, 10, "queued commands not written")
    assert [e["value"] for e in lamp.events_matching("write")] == ["01", "00", "01"]
    lamp.wait_for({"event": "state", "led": "01"}, 5)
    mqtt.wait_for(bridge.topic("lamp", "led"), "ON", 5, since=mark)
    assert [e["topic"] for e in (m.json() for m in mqtt.received(bridge.log, mark))] == \
        [bridge.topic("short", "led", "set")]

    # The dropped command is not written when its device comes back.
    short.start()
    bridge.wait_online(mqtt, "short", 20, since=mark)
    back = mqtt.mark()
    reads = short.mark()
    mqtt.publish(bridge.topic("short", "led", "get"), "")
    mqtt.wait_for(bridge.topic("short", "led"), "OFF", 5, since=back)
    short.wait_for("read", 5, since=reads)        # GATT operations run in order: a queued write would come first
    assert short.events_matching("write") == []
    bridge.assert_running()


# --- 7. bad config ---------------------------------------------------------------------------------------------------

def test_run_with_a_bad_config_exits_78_naming_file_line_and_column(run_gattbridge, mosquitto, mqtt, tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(
        "mqtt:\n"
        f"  port: {mosquitto.port}\n"
        "  base_topic: bench/gb\n"
        "  keepalive: soon\n"                          # line 4, col 14: wrong type
        "devices:\n"
        "  - name: strap\n"
        "    address: \"C0:FF:EE:00:02:01\"\n"
        "    colour: red\n"                            # line 8, col 5: unknown key
        "    channels:\n"
        "      - name: hr\n"
        "        characteristic: \"2a37\"\n"
        "        codec: heart_rate_measurement\n"
        "  - name: strap\n"                            # line 13, col 11: duplicate name
        "    address: \"C0:FF:EE:00:02:02\"\n"
        "    channels:\n"
        "      - name: x\n"
        "        characteristic: \"2a37\"\n"
        "        codec: nosuchcodec\n")                # line 18, col 16: unknown codec
    proc = run_gattbridge(["run", "--config", path])
    assert proc.wait(15) == 78
    errors = [line for line in proc.stderr_lines if re.match(rf"^{re.escape(str(path))}:\d+:\d+: ", line)]
    positions = {tuple(int(x) for x in re.match(rf"^{re.escape(str(path))}:(\d+):(\d+): ", e).groups()) for e in errors}
    assert positions == {(4, 14), (8, 5), (13, 11), (18, 16)}, proc.stderr
    # It never got as far as the broker.
    assert mqtt.received(f"{BASE}/#") == []

    missing = tmp_path / "missing.yaml"
    proc = run_gattbridge(["run", "--config", missing])
    assert proc.wait(15) == 78
    assert any(line.startswith(f"{missing}:") for line in proc.stderr_lines), proc.stderr
