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


def publish_with_response_topic(mqtt, topic: str, payload: str, response_topic: str, correlation: bytes = b"c1"):
    from paho.mqtt.packettypes import PacketTypes
    from paho.mqtt.properties import Properties

    properties = Properties(PacketTypes.PUBLISH)
    properties.ResponseTopic = response_topic
    properties.CorrelationData = correlation
    mqtt.client.publish(topic, payload, qos=1, properties=properties).wait_for_publish(10)


def test_response_topics_never_point_into_the_bridges_own_topics(run_gattbridge, peripheral, mosquitto, mqtt,
                                                                  wait_until, tmp_path):
    """Issue 27: an MQTT 5 Response Topic is the requester's choice; the bridge answers there only outside its base
    topic and the discovery prefix, so a client allowed one `set` cannot borrow the bridge's write rights."""
    lamp = peripheral("led", LAMP)
    bridge = start_bridge(run_gattbridge, tmp_path, mosquitto, [lamp_device()])
    bridge.wait_online(mqtt, "lamp")
    set_topic = f"{BASE}/lamp/led/set"
    forbidden = [f"{BASE}/other/led/set", f"{BASE}/bridge/state", "homeassistant/switch/x/config"]
    mark = mqtt.mark()
    for target in forbidden:
        events = lamp.mark()
        publish_with_response_topic(mqtt, set_topic, "ON", target)
        lamp.wait_for(lambda e: e.get("event") == "write", 10, since=events)     # the command itself still runs
    # A permitted one is answered, with its correlation data; by then the forbidden ones would have been too.
    publish_with_response_topic(mqtt, set_topic, "OFF", "app/replies/lamp", b"c2")
    mqtt.wait_for("app/replies/lamp", '{"status":"ok"}', 10, since=mark)
    for target in forbidden:
        assert not mqtt.received(target, mark), target
    # The same for the bridge API: answered on B/bridge/response/<verb>, never on the bridge's state.
    mark = mqtt.mark()
    publish_with_response_topic(mqtt, f"{BASE}/bridge/request/health", '{"transaction":"rt"}', f"{BASE}/bridge/state")
    mqtt.wait_for(f"{BASE}/bridge/response/health", lambda m: m.json().get("transaction") == "rt", 10, since=mark)
    assert not mqtt.received(f"{BASE}/bridge/state", mark)
    bridge.assert_running()


def test_device_add_takes_secrets_only_from_the_secrets_directory(run_gattbridge, mosquitto, mqtt, tmp_path):
    """Issue 27: `passkey_file` of a device added over MQTT names a file under `secrets_dir` only, with one answer
    for every path outside it; a passkey file in use cannot be claimed by a new address; a newline in a name and an
    interval of 5e-324 s are refused."""
    from test_bridge_api import request, run_bridge, write_config

    secrets = tmp_path / "secrets"
    secrets.mkdir()
    (secrets / "lock.passkey").write_text("024680\n")
    (tmp_path / "elsewhere.passkey").write_text("135790\n")
    (secrets / "link").symlink_to(tmp_path / "elsewhere.passkey")
    path = write_config(tmp_path, mosquitto.port, [], ha=False, secrets_dir=str(secrets))
    bridge = run_bridge(run_gattbridge, path, mqtt)

    def lock(name: str, address: str, passkey_file: str, **extra) -> dict:
        return {**device(name, address, [channel("led", LED_CHAR, "hex", mode="read", interval=60)]),
                "pairing": "passkey", "passkey_file": passkey_file, **extra}

    answers = {}
    for label, target in [("missing", "/nonexistent/x"), ("directory", "/etc"), ("other file", "/etc/hostname"),
                          ("outside", str(tmp_path / "elsewhere.passkey")), ("dotdot", "../elsewhere.passkey"),
                          ("symlink", "link")]:
        answer = request(mqtt, bridge, "device/add", lock(f"probe-{len(answers)}", f"C0:FF:EE:00:27:{len(answers) + 16:02X}",
                                                          target))
        assert answer["status"] == "error", (label, answer)
        answers[label] = answer["error"].replace(f"probe-{len(answers)}", "X")
    # One answer for every path outside: nothing tells a missing file from a directory or a readable one.
    assert len(set(answers.values())) == 1, answers
    assert "secrets directory" in answers["missing"] and "/etc/hostname" not in answers["other file"], answers

    added = request(mqtt, bridge, "device/add", lock("api-lock", "C0:FF:EE:00:27:01", "lock.passkey"))
    assert added["status"] == "ok", added
    taken = request(mqtt, bridge, "device/add", lock("thief", "C0:FF:EE:00:27:02", str(secrets / "lock.passkey")))
    assert taken["status"] == "error" and "already used by device \"api-lock\"" in taken["error"], taken

    newline = request(mqtt, bridge, "device/add", device("bad\nFORGED line", "C0:FF:EE:00:27:03",
                                                         [channel("led", LED_CHAR, "hex", mode="read", interval=60)]))
    assert newline["status"] == "error" and "control characters" in newline["error"], newline
    tiny = request(mqtt, bridge, "device/add", device("busy", "C0:FF:EE:00:27:04",
                                                      [channel("led", LED_CHAR, "hex", mode="read", interval=5e-324)]))
    assert tiny["status"] == "error" and "at least 0.1 s" in tiny["error"], tiny
    assert not any(line.startswith("FORGED") for line in bridge.process.stderr.splitlines())
    assert "135790" not in bridge.process.stderr and "024680" not in bridge.process.stderr

    # bindkey_file follows the same rule (docs/security.md#secrets-directory); an inline bindkey is echoed redacted,
    # and a bad one never echoed.
    key = "231d39c1d7cc1ab1aee224cd096db932"
    (secrets / "thermo.bindkey").write_text(key + "\n")
    (tmp_path / "elsewhere.bindkey").write_text(key + "\n")

    def thermo(name: str, address: str, **extra) -> dict:
        return {**device(name, address, [channel("led", LED_CHAR, "hex", mode="read", interval=60)]),
                "advert": "bthome", **extra}

    outside = set()
    for index, target in enumerate(["/etc/hostname", str(tmp_path / "elsewhere.bindkey"), "../elsewhere.bindkey",
                                    "missing.bindkey", "/etc"]):
        answer = request(mqtt, bridge, "device/add", thermo("probe", f"C0:FF:EE:00:28:{index + 16:02X}",
                                                            bindkey_file=target))
        assert answer["status"] == "error", (target, answer)
        outside.add(answer["error"])
    assert len(outside) == 1 and "secrets directory" in outside.pop()
    saved = request(mqtt, bridge, "device/add", thermo("thermo", "C0:FF:EE:00:28:01", bindkey_file="thermo.bindkey"))
    assert saved["status"] == "ok" and saved["data"]["bindkey_file"] == "thermo.bindkey", saved
    inline = request(mqtt, bridge, "device/add", thermo("thermo-inline", "C0:FF:EE:00:28:02", bindkey=key))
    assert inline["status"] == "ok" and inline["data"]["bindkey"] == "<redacted>", inline
    short = request(mqtt, bridge, "device/add", thermo("thermo-short", "C0:FF:EE:00:28:03", bindkey=key[:-1]))
    assert short == {**short, "status": "error", "error": 'bindkey: bindkey in device "thermo-short" must be 32 hex digits'}
    assert key[:12] not in bridge.process.stderr
    # Only the requests themselves (the test's own publishes) carry it.
    assert not any(key[:12] in m.payload.decode(errors="replace") for m in mqtt.received()
                   if "/bridge/request/" not in m.topic), "a bindkey reached MQTT"
    bridge.assert_running()
