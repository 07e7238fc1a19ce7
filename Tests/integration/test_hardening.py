"""Hardening of the command side and of discovery cleanup (issue 12, docs/security.md): each test reproduces an attack or a
careless operator's mistake that the daemon used to mishandle.

Waits are conditions with deadlines.
"""

from __future__ import annotations

import json

import pytest

from bench.peripherals import led

from bridge_helpers import BASE, channel, device, start_bridge, wait_log

SERIAL = "C0:FF:EE:00:03:02"
LAMP = "C0:FF:EE:00:03:03"
LED_CHAR = f"{led.SERVICE}/{led.CHARACTERISTIC}"


def lamp_device(name: str = "lamp", interval: float = 3600) -> dict:
    return device(name, LAMP, [
        channel("led", LED_CHAR, "hex", values={"ON": "01", "OFF": "00"}, mode="read", interval=interval,
                writable=True),
    ])


def serial_device(name: str = "serial-mod") -> dict:
    return device(name, SERIAL, [
        channel("serial", "ffe0/ffe1", "text", writable=True, write_with_response=False, flush_after=30),
    ])


def led_writes(lamp, since: int = 0) -> list[dict]:
    return [e for e in lamp.events_matching(lambda e: e.get("event") == "write", since=since)]


@pytest.mark.parametrize("protocol", ["5", "3.1.1"])
def test_retained_set_is_never_executed(run_gattbridge, peripheral, mosquitto, mqtt, wait_until, tmp_path, protocol):
    lamp = peripheral("led", LAMP)
    set_topic = f"{BASE}/lamp/led/set"
    # Left on the broker by a careless `mosquitto_pub -r`: it would switch the LED on at every start.
    mqtt.publish(set_topic, "ON", retain=True)
    mark = mqtt.mark()
    bridge = start_bridge(run_gattbridge, tmp_path, mosquitto, [lamp_device()], protocol=protocol)
    bridge.wait_online(mqtt, "lamp")
    if protocol == "3.1.1":
        # 3.1.1 has no retain handling: the broker sends it, the daemon ignores it and says so.
        assert "retained" in wait_log(mqtt, bridge, set_topic, 10, since=mark)["message"]
    # A live command still works. It is a barrier too: the broker sends retained messages before live ones.
    events = lamp.mark()
    mqtt.publish(set_topic, "OFF")
    lamp.wait_for(lambda e: e.get("event") == "write", 10, since=events)
    assert [w["value"] for w in led_writes(lamp)] == ["00"], led_writes(lamp)
    # Clearing the retained message (empty, retained) is not a zero-length write either, nor is an empty set.
    mark = mqtt.mark()
    mqtt.publish(set_topic, "", retain=True)
    mqtt.publish(set_topic, "")
    assert "empty" in wait_log(mqtt, bridge, set_topic, 10, since=mark)["message"]
    # A restart with the retained command back on the broker: still not executed.
    bridge.process.stop()
    mqtt.publish(set_topic, "ON", retain=True)
    mark = mqtt.mark()
    bridge = start_bridge(run_gattbridge, tmp_path, mosquitto, [lamp_device()], name="again", protocol=protocol)
    bridge.wait_online(mqtt, "lamp", since=mark)
    mqtt.wait_for(f"{BASE}/lamp/led", None, 10, since=mark)      # the first poll: subscribed and serving
    events = lamp.mark()
    mqtt.publish(set_topic, "OFF")
    lamp.wait_for(lambda e: e.get("event") == "write", 10, since=events)
    assert [w["value"] for w in led_writes(lamp)] == ["00", "00"], led_writes(lamp)
    mqtt.publish(set_topic, "", retain=True)


def test_rejected_commands_are_cut_escaped_and_rate_limited(run_gattbridge, peripheral, mosquitto, mqtt, wait_until,
                                                           tmp_path):
    peripheral("led", LAMP)
    bridge = start_bridge(run_gattbridge, tmp_path, mosquitto, [lamp_device()])
    bridge.wait_online(mqtt, "lamp")
    set_topic = f"{BASE}/lamp/led/set"

    mark = mqtt.mark()
    mqtt.publish(set_topic, "zz\nFORGED critical line")
    entry = wait_log(mqtt, bridge, set_topic, 10, since=mark)
    assert "\n" not in entry["message"] and "zz\\nFORGED" in entry["message"], entry
    # Nothing in the daemon's log starts a line with the forged text.
    wait_until(lambda: "zz\\nFORGED" in bridge.process.stderr, 5, "the rejection in the log")
    assert not any(line.startswith("FORGED") for line in bridge.process.stderr.splitlines())

    mark = mqtt.mark()
    mqtt.publish(set_topic, "z" * 16000)
    entry = wait_log(mqtt, bridge, set_topic, 10, since=mark)
    assert len(entry["message"]) < 400, len(entry["message"])

    # A burst of 100 bad commands: at most 10 reports a second, the rest summed up in one line.
    mark = mqtt.mark()
    for i in range(100):
        mqtt.publish(set_topic, f"bad{i}")
    summary = mqtt.wait_for(bridge.log, lambda m: "suppressed" in m.json(), 10, since=mark).json()
    reports = [m.json() for m in mqtt.received(bridge.log, mark) if m.json().get("topic") == set_topic]
    assert len(reports) <= 12, len(reports)
    assert len(reports) + summary["suppressed"] >= 100 - 10, (len(reports), summary)


def test_get_flood_is_coalesced_and_a_set_behind_it_is_prompt(run_gattbridge, peripheral, mosquitto, mqtt,
                                                              wait_until, tmp_path):
    lamp = peripheral("led", LAMP)
    bridge = start_bridge(run_gattbridge, tmp_path, mosquitto, [lamp_device()])
    bridge.wait_online(mqtt, "lamp")
    reads = lamp.mark()
    get_topic, set_topic = f"{BASE}/lamp/led/get", f"{BASE}/lamp/led/set"
    for _ in range(2000):
        mqtt.publish(get_topic, "", qos=0)
    mqtt.publish(set_topic, "ON")
    lamp.wait_for(lambda e: e.get("event") == "write" and e.get("value") == "01", 10, since=reads)
    n_reads = len(lamp.events_matching(lambda e: e.get("event") == "read", since=reads))
    # One get pending per channel: the flood collapses into a handful of reads, not 2,000.
    assert n_reads < 200, n_reads


def test_get_on_a_notify_text_channel_does_not_splice_into_the_partial_line(run_gattbridge, peripheral, mosquitto,
                                                                           mqtt, wait_until, tmp_path):
    serial = peripheral("hm10", SERIAL)
    bridge = start_bridge(run_gattbridge, tmp_path, mosquitto, [serial_device()])
    bridge.wait_online(mqtt, "serial-mod")
    topic = f"{BASE}/serial-mod/serial"
    mark = mqtt.mark()
    serial.notify("ffe1", b"hello wo")                 # a partial line, held by the framer
    serial.send({"cmd": "set", "char": "ffe1", "value": b"READ\n".hex()})
    mqtt.publish(f"{topic}/get", "")
    mqtt.wait_for(topic, "READ", 10, since=mark)
    serial.notify("ffe1", b"rld\n")
    mqtt.wait_for(topic, "hello world", 10, since=mark)
    assert [m.text for m in mqtt.received(topic, mark)] == ["READ", "hello world"]


OTHER_CONFIG = "homeassistant/sensor/gattbridge_c0ffee0003ff/temp/config"
OWN_STALE = "homeassistant/sensor/gattbridge_c0ffee0003fe/gone/config"


def ha_config(base: str, address: str) -> str:
    return json.dumps({"name": "x", "state_topic": f"{base}/x/y", "unique_id": f"gattbridge_{address}_y",
                       "availability": [{"topic": f"{base}/bridge/state"}, {"topic": f"{base}/x/availability"}],
                       "availability_mode": "all", "device": {"identifiers": [f"gattbridge_{address}"]}})


def test_stale_cleanup_clears_only_this_bridges_own_configs(run_gattbridge, peripheral, mosquitto, mqtt, bench,
                                                           wait_until, tmp_path):
    peripheral("led", LAMP)
    # Another bridge (other base topic) on the same broker, and a leftover of our own from an earlier config.
    mqtt.publish(OTHER_CONFIG, ha_config("other/bridge", "c0ffee0003ff"), retain=True)
    mqtt.publish(OWN_STALE, ha_config(BASE, "c0ffee0003fe"), retain=True)
    path = tmp_path / "ha.yaml"
    from bridge_helpers import config_text
    text = config_text(mosquitto.port, [lamp_device()]).replace("enabled: false", "enabled: true")
    path.write_text(text)
    process = run_gattbridge(["run", "--config", path, "--log-level", "debug"], name="ha")
    mqtt.wait_for(f"{BASE}/lamp/availability", "online", 20)
    wait_until(lambda: any(m.text == "" for m in mqtt.received(OWN_STALE)), 10, "own stale config cleared")
    # Live configs another bridge publishes while we run are not touched either.
    mqtt.publish(OTHER_CONFIG, ha_config("other/bridge", "c0ffee0003ff"), retain=True)
    late = bench.mqtt_client(mosquitto, topics=[OTHER_CONFIG])
    assert late.wait_for(OTHER_CONFIG, None, 5).text != ""
    assert all(m.text != "" for m in mqtt.received(OTHER_CONFIG))
    assert process.running
    for topic in (OTHER_CONFIG, OWN_STALE):
        mqtt.publish(topic, "", retain=True)


def test_reload_with_new_mqtt_settings_hands_the_offline_buffer_over(run_gattbridge, bench, peripheral, wait_until,
                                                                    tmp_path):
    """Values buffered while the broker is down survive a reload that replaces the MQTT client (docs/mqtt.md: buffered
    in order and delivered after reconnection)."""
    from bench.bench import persistent_broker_config
    from bridge_helpers import persistent_subscriber
    from test_bridge import counter_device, counter_peripheral

    broker = bench.mosquitto(extra_config=persistent_broker_config(tmp_path / "mosquitto-db"))
    sub = persistent_subscriber(bench, broker, [f"{BASE}/#"])
    counter = counter_peripheral(peripheral, rate=20)
    bridge = start_bridge(run_gattbridge, tmp_path, broker, [counter_device(qos=1)], keepalive=10)
    bridge.wait_online(sub, "counter")
    topic = f"{BASE}/counter/count"
    sub.wait_count(topic, 20, 10)

    def sent() -> int:
        return max((e["n"] for e in counter.events_matching("notify")), default=0)

    broker.stop()
    assert broker.saved_database()
    down_at = sent()
    wait_until(lambda: sent() >= down_at + 40, 10, "the counter stopped notifying")   # values buffered meanwhile
    # A changed `mqtt:` section: the daemon swaps in a new client while the broker is still down.
    bridge.config_path.write_text(bridge.config_path.read_text().replace("keepalive: 10", "keepalive: 11"))
    bridge.process.signal(__import__("signal").SIGHUP)
    wait_until(lambda: "handing" in bridge.process.stderr and "buffered message" in bridge.process.stderr, 10,
               "the buffer was not handed to the new client")
    broker.start()
    target = sent()
    wait_until(lambda: any(int(m.text) >= target for m in sub.received(topic)), 60, "values after the reload")
    values = list(dict.fromkeys(int(m.text) for m in sub.received(topic)))
    missing = sorted(set(range(down_at, target)) - set(values))
    assert not missing, f"lost across the reload: {missing[:20]}"
