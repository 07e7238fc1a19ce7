"""The bridge API (docs/bridge-api.md): devices managed at runtime over MQTT, saved as drop-ins under `state_dir`, MQTT 5
request/response for commands. Each test writes its own config (with `state_dir` in its tmp_path) and talks to the
daemon with paho; waits are conditions with deadlines.
"""
from __future__ import annotations

import json
import signal
import time
from pathlib import Path
from typing import Any, Optional

from bench.peripherals import led
from bridge_helpers import BASE, Bridge, channel, device, to_yaml

LAMP = "C0:FF:EE:00:02:13"
STRAP = "C0:FF:EE:00:02:11"
LED_CHAR = f"{led.SERVICE}/{led.CHARACTERISTIC}"
PREFIX = "homeassistant"


def lamp(name: str = "api-lamp", address: str = LAMP, **options: Any) -> dict:
    return device(name, address, [
        channel("led", LED_CHAR, "hex", values={"ON": "01", "OFF": "00"}, mode="read", interval=1, writable=True,
                homeassistant="switch", **options),
    ])


def write_config(tmp_path: Path, port: int, devices: list[dict], ha: bool = True, client_id: Optional[str] = None,
                 **extra: Any) -> Path:
    """`client_id` None: a new one each time, so a reload of this file replaces the MQTT client."""
    doc = {
        "mqtt": {"host": "127.0.0.1", "port": port, "client_id": client_id or f"gattbridge-api-{time.monotonic_ns()}",
                 "base_topic": BASE, "keepalive": 10},
        "homeassistant": {"enabled": ha},
        "state_dir": str(tmp_path / "state"),
        **extra,
        "devices": devices,
    }
    path = tmp_path / "gattbridge.yaml"
    path.write_text(to_yaml(doc) + "\n")
    return path


def run_bridge(run_gattbridge, path: Path, mqtt) -> Bridge:
    mark = mqtt.mark()
    process = run_gattbridge(["run", "--config", path, "--log-level", "debug"])
    bridge = Bridge(process, path, BASE)
    mqtt.wait_for(bridge.topic("bridge", "state"), "online", 15, since=mark)
    # The API subscribes to its request topics before it publishes B/bridge/info, on the same connection: once
    # info arrives the broker has the subscription (bridge/state is published at connect, before the features run).
    mqtt.wait_for(bridge.topic("bridge", "info"), None, 15, since=mark)
    return bridge


def request(mqtt, bridge: Bridge, verb: str, body: Any = None, raw: Optional[bytes] = None,
            timeout: float = 10.0) -> dict:
    """Publishes a request with a fresh transaction and returns the answer that echoes it."""
    transaction = f"t-{time.monotonic_ns()}"
    if raw is None:
        payload = dict(body or {})
        payload["transaction"] = transaction
        data: bytes = json.dumps(payload).encode()
    else:
        data = raw
    mark = mqtt.mark()
    mqtt.publish(bridge.topic("bridge", "request", verb), data)
    topic = bridge.topic("bridge", "response", verb)
    if raw is not None:
        return mqtt.wait_for(topic, None, timeout, since=mark).json()
    answer = mqtt.wait_for(topic, lambda m: m.json().get("transaction") == transaction, timeout, since=mark)
    assert not answer.retain
    return answer.json()


def test_add_restart_reload_remove_round_trip(bench, run_gattbridge, peripheral, mosquitto, mqtt, wait_until,
                                               tmp_path):
    light = peripheral("led", LAMP)
    light.wait_for({"event": "state", "led": "00"})
    path = write_config(tmp_path, mosquitto.port, [])
    bridge = run_bridge(run_gattbridge, path, mqtt)
    info = mqtt.wait_for(bridge.topic("bridge", "info"), None, 10).json()
    assert info["base_topic"] == BASE and info["state_dir"] == str(tmp_path / "state")

    added = request(mqtt, bridge, "device/add", lamp())
    assert added["status"] == "ok", added
    assert added["data"] == lamp()
    drop_in = tmp_path / "state" / "devices.d" / "api-lamp.yaml"
    assert drop_in.exists() and drop_in.stat().st_mode & 0o777 == 0o640
    bridge.wait_online(mqtt, "api-lamp")
    mqtt.wait_for(bridge.topic("api-lamp", "led"), "OFF", 10)
    node = "gattbridge_" + LAMP.replace(":", "")
    ha_topic = f"{PREFIX}/switch/{node}/led/config"
    config = mqtt.wait_for(ha_topic, lambda m: bool(m.payload), 10).json()
    assert config["command_topic"] == bridge.topic("api-lamp", "led", "set")
    listing = request(mqtt, bridge, "devices")["data"]
    assert listing == [{
        "name": "api-lamp", "address": LAMP, "source": "api", "adapter": listing[0]["adapter"], "state": "online",
        "channels": [{"name": "led", "characteristic": LED_CHAR, "codec": "hex", "mode": "read", "writable": True}],
    }]
    assert mqtt.received(bridge.topic("bridge", "devices"))[-1].json() == listing

    # Restart: the drop-in brings the device back.
    bridge.process.stop()
    bridge = run_bridge(run_gattbridge, path, mqtt)
    bridge.wait_online(mqtt, "api-lamp", since=mqtt.mark())

    # A reload with a changed main file leaves the drop-in and its device alone.
    strap_cfg = device("file-strap", STRAP, [channel("battery", "180f/2a19", "battery_level", mode="read")])
    path = write_config(tmp_path, mosquitto.port, [strap_cfg])
    mark = mqtt.mark()
    bridge.process.signal(signal.SIGHUP)
    mqtt.wait_for(bridge.topic("bridge", "devices"),
                  lambda m: [d["name"] for d in m.json()] == ["file-strap", "api-lamp"], 10, since=mark)
    assert drop_in.exists()
    assert not [m for m in mqtt.received(bridge.topic("api-lamp", "availability"), mark) if m.text != "online"]

    # A main-file device cannot be removed over the API; the answer names the file.
    refused = request(mqtt, bridge, "device/remove", {"name": "file-strap"})
    assert refused["status"] == "error" and str(path) in refused["error"], refused

    mark = mqtt.mark()
    removed = request(mqtt, bridge, "device/remove", {"name": "api-lamp"})
    assert removed == {"status": "ok", "data": {}, "transaction": removed["transaction"]}
    assert not drop_in.exists()
    mqtt.wait_for(bridge.topic("api-lamp", "availability"), "", 10, since=mark)
    mqtt.wait_for(ha_topic, "", 10, since=mark)
    late = bench.mqtt_client(mosquitto, topics=[f"{BASE}/api-lamp/#", f"{PREFIX}/+/{node}/#", f"{BASE}/bridge/state"])
    late.wait_for(f"{BASE}/bridge/state", "online", 5)
    assert [m for m in late.received("#") if m.topic != f"{BASE}/bridge/state"] == []
    assert [d["name"] for d in request(mqtt, bridge, "devices")["data"]] == ["file-strap"]
    bridge.assert_running()


def test_bad_requests_get_error_answers(bench, run_gattbridge, mosquitto, mqtt, tmp_path):
    path = write_config(tmp_path, mosquitto.port, [lamp("file-lamp")], ha=False)
    bridge = run_bridge(run_gattbridge, path, mqtt)

    bad_json = request(mqtt, bridge, "devices", raw=b'{"transaction": ')
    assert bad_json["status"] == "error" and "invalid JSON" in bad_json["error"], bad_json
    unknown = request(mqtt, bridge, "frobnicate")
    assert unknown["status"] == "error" and "unknown verb" in unknown["error"], unknown
    huge = request(mqtt, bridge, "devices", raw=b'{"x":"' + b"a" * 70000 + b'"}')
    assert huge["status"] == "error" and "limit" in huge["error"], huge

    invalid = lamp("typo", "C0:FF:EE:00:02:1D")
    invalid["channels"][0]["codec"] = "hexx"
    answer = request(mqtt, bridge, "device/add", invalid)
    assert answer["status"] == "error" and answer["error"].startswith('channels[0].codec: unknown codec "hexx"'), answer
    same_name = request(mqtt, bridge, "device/add", lamp("file-lamp", "C0:FF:EE:00:02:1E"))
    assert same_name["status"] == "error" and "duplicate device name" in same_name["error"], same_name
    same_address = request(mqtt, bridge, "device/add", lamp("other"))
    assert same_address["status"] == "error" and "duplicate address" in same_address["error"], same_address
    assert not (tmp_path / "state" / "devices.d").exists() or not list((tmp_path / "state" / "devices.d").iterdir())

    health = request(mqtt, bridge, "health")["data"]
    assert health["mqtt"] == "connected" and health["bluez"] == "available", health
    assert health["devices"]["total"] == 1 and set(health["buffer"]) == {"queued", "dropped"}
    assert [a["name"] for a in health["adapters"]] and health["uptime_s"] >= 0
    bridge.assert_running()


def test_scan_and_inspect(bench, run_gattbridge, peripheral, mosquitto, mqtt, tmp_path):
    light = peripheral("led", LAMP)
    light.wait_for({"event": "state", "led": "00"})
    path = write_config(tmp_path, mosquitto.port, [], ha=False)
    bridge = run_bridge(run_gattbridge, path, mqtt)
    scan = request(mqtt, bridge, "scan", {"duration": 3}, timeout=20)
    assert scan["status"] == "ok", scan
    assert LAMP in [d["address"] for d in scan["data"]], scan
    inspect = request(mqtt, bridge, "inspect", {"address": LAMP}, timeout=30)
    assert inspect["status"] == "ok", inspect
    assert inspect["data"]["address"] == LAMP
    uuids = [c["uuid"] for s in inspect["data"]["services"] for c in s["characteristics"]]
    assert any(led.CHARACTERISTIC.lower() in u.lower() for u in uuids), uuids
    bad = request(mqtt, bridge, "scan", {"duration": 600})
    assert bad["status"] == "error" and "duration" in bad["error"]


def test_bridge_api_off_does_not_answer(bench, run_gattbridge, mosquitto, mqtt, tmp_path):
    path = write_config(tmp_path, mosquitto.port, [], ha=False, bridge_api=False)
    bridge = run_bridge(run_gattbridge, path, mqtt)
    mqtt.wait_for(bridge.topic("bridge", "devices"), "[]", 10)
    mark = mqtt.mark()
    mqtt.publish(bridge.topic("bridge", "request", "devices"), "{}")
    mqtt.publish(bridge.topic("bridge", "request", "health"), "{}")
    # Barrier: a command to an unknown device, published after the requests, is rejected on bridge/log; by then the
    # requests would have been answered if the daemon listened to them.
    mqtt.publish(bridge.topic("nobody", "led", "set"), "ON")
    mqtt.wait_for(bridge.log, lambda m: m.json().get("topic") == bridge.topic("nobody", "led", "set"), 10, since=mark)
    assert mqtt.received(bridge.topic("bridge", "response", "#"), mark) == []
    bridge.assert_running()


def test_cli_devices_list_add_remove(bench, run_gattbridge, peripheral, mosquitto, mqtt, tmp_path):
    path = write_config(tmp_path, mosquitto.port, [], ha=False)

    def cli(*args: str) -> tuple[int, str, str]:
        process = run_gattbridge(["devices", *args, "--config", path, "--timeout", "5"], name="cli")
        code = process.wait(15)
        return code, process.stdout, process.stderr

    # No daemon yet: the broker answers, nobody else does.
    code, _, err = cli("list")
    assert code == 69 and "no answer" in err, (code, err)

    bridge = run_bridge(run_gattbridge, path, mqtt)
    device_file = tmp_path / "lamp.yaml"
    device_file.write_text(to_yaml(lamp("cli-lamp")) + "\n")
    code, out, err = cli("add", "--file", str(device_file))
    assert (code, out.strip()) == (0, "added cli-lamp"), err
    assert (tmp_path / "state" / "devices.d" / "cli-lamp.yaml").exists()

    code, out, err = cli("list", "--json")
    assert code == 0, err
    assert [d["name"] for d in json.loads(out)] == ["cli-lamp"]
    code, out, _ = cli("list")
    assert out.splitlines()[0].split() == ["NAME", "ADDRESS", "SOURCE", "STATE", "CHANNELS"]
    assert out.splitlines()[1].split()[:3] == ["cli-lamp", LAMP, "api"]

    bad = lamp("cli-bad", "C0:FF:EE:00:02:1C")
    bad["channels"][0]["codec"] = "hexx"
    code, _, err = cli("add", json.dumps(bad))
    assert code == 65 and 'channels[0].codec: unknown codec "hexx"' in err, (code, err)

    code, out, err = cli("remove", "cli-lamp")
    assert (code, out.strip()) == (0, "removed cli-lamp"), err
    code, _, err = cli("remove", "cli-lamp")
    assert code == 65 and 'no device named "cli-lamp"' in err, (code, err)
    assert not (tmp_path / "state" / "devices.d" / "cli-lamp.yaml").exists()
    bridge.assert_running()


def test_set_with_a_response_topic_is_confirmed_after_the_write(bench, run_gattbridge, peripheral, mosquitto, mqtt,
                                                                 tmp_path):
    """docs/bridge-api.md command results: `ok` on the MQTT 5 Response Topic once the LED really changed, `error` for a command
    that expired while its device was away; both with the request's Correlation Data. Also an API request answered
    on its Response Topic."""
    from paho.mqtt.packettypes import PacketTypes
    from paho.mqtt.properties import Properties

    light = peripheral("led", LAMP)
    light.wait_for({"event": "state", "led": "00"})
    path = write_config(tmp_path, mosquitto.port, [lamp("lamp", command_ttl=2)], ha=False)
    bridge = run_bridge(run_gattbridge, path, mqtt)
    bridge.wait_online(mqtt, "lamp")

    def request_with_reply(topic: str, payload: str, correlation: bytes) -> None:
        props = Properties(PacketTypes.PUBLISH)
        props.ResponseTopic = "client/replies"
        props.CorrelationData = correlation
        mqtt.client.publish(topic, payload, qos=1, properties=props).wait_for_publish(5)

    def reply(correlation: bytes, since: int, timeout: float = 10.0):
        return mqtt.wait_for("client/replies",
                             lambda m: getattr(m, "correlation", None) == correlation, timeout, since=since)

    # The bench client records properties only if asked: keep them per message.
    original = mqtt.client.on_message

    def on_message(client, userdata, msg):
        original(client, userdata, msg)
        data = getattr(msg.properties, "CorrelationData", None)
        with mqtt._cond:
            mqtt.messages[-1].correlation = bytes(data) if data is not None else None
    mqtt.client.on_message = on_message

    mark, led_mark = mqtt.mark(), light.mark()
    request_with_reply(bridge.topic("lamp", "led", "set"), "ON", b"set-1")
    answer = reply(b"set-1", mark)
    assert answer.json() == {"status": "ok"} and not answer.retain
    # The reply follows the completed GATT write: the LED has the new state.
    light.wait_for({"event": "state", "led": "01"}, 1, since=led_mark)

    mark = mqtt.mark()
    request_with_reply(bridge.topic("bridge", "request", "health"), "{}", b"api-1")
    assert reply(b"api-1", mark).json()["status"] == "ok"

    mark = mqtt.mark()
    light.kill()
    bridge.wait_availability(mqtt, "lamp", "offline", 10, since=mark)
    request_with_reply(bridge.topic("lamp", "led", "set"), "OFF", b"set-2")
    expired = reply(b"set-2", mark).json()
    assert expired["status"] == "error" and expired["error"], expired
    bridge.assert_running()


def test_a_bad_drop_in_is_named_and_does_not_stop_the_others(bench, run_gattbridge, peripheral, mosquitto, mqtt,
                                                            tmp_path):
    light = peripheral("led", LAMP)
    light.wait_for({"event": "state", "led": "00"})
    path = write_config(tmp_path, mosquitto.port, [], ha=False)
    drop_ins = tmp_path / "state" / "devices.d"
    drop_ins.mkdir(parents=True)
    (drop_ins / "good.yaml").write_text(json.dumps(lamp("good")))
    (drop_ins / "bad.yaml").write_text('{"name": "bad", "address": "nope", "channels": []}\n')

    check = run_gattbridge(["config", "check", "--config", path], name="check")
    assert check.wait(15) == 78
    assert f"{drop_ins / 'bad.yaml'}:1:28: address in device \"bad\" must be a Bluetooth address" in check.stderr, \
        check.stderr

    bridge = run_bridge(run_gattbridge, path, mqtt)
    bridge.wait_online(mqtt, "good")
    bridge.process.wait_for_line(lambda line: str(drop_ins / "bad.yaml") in line and "device skipped" in line, 5, stream="stderr")
    assert [d["name"] for d in request(mqtt, bridge, "devices")["data"]] == ["good"]


def test_every_request_is_answered_even_beyond_the_backlog(bench, run_gattbridge, mosquitto, mqtt, wait_until,
                                                            tmp_path):
    """500 `device/add` sent at once, without waiting for the broker: more than the 256 that may wait. Each gets
    exactly one answer with its transaction: the first is saved, the others are refused as duplicates, or, those
    beyond the backlog, answered `busy` (docs/bridge-api.md) instead of dropped in silence. At most 244 can be turned
    away, within the 256 busy answers a second; a flood beyond that is answered only in part, by design."""
    SENT = 500
    path = write_config(tmp_path, mosquitto.port, [], ha=False)
    bridge = run_bridge(run_gattbridge, path, mqtt)
    topic = bridge.topic("bridge", "request", "device/add")
    body = {"name": "burst", "address": "C0:FF:EE:0B:05:01",
            "channels": [{"name": "temp", "characteristic": "2a6e", "codec": "int16"}]}
    mark = mqtt.mark()
    sender = bench.mqtt_client(mosquitto, topics=[])
    # Frozen while the broker takes them, the bridge finds them all waiting on its socket at once.
    bridge.process.signal(signal.SIGSTOP)
    try:
        infos = [sender.client.publish(topic, json.dumps({**body, "transaction": i}), qos=1) for i in range(SENT)]
        for info in infos:
            info.wait_for_publish(30)
    finally:
        bridge.process.signal(signal.SIGCONT)
    response = bridge.topic("bridge", "response", "device/add")
    wait_until(lambda: len(mqtt.received(response, mark)) >= SENT, 90, "not every request was answered")
    answers = [m.json() for m in mqtt.received(response, mark)]
    by_transaction: dict[int, list[dict]] = {}
    for answer in answers:
        by_transaction.setdefault(answer.get("transaction"), []).append(answer)
    assert sorted(by_transaction) == list(range(SENT)), "an answer without its transaction, or one missing"
    assert all(len(a) == 1 for a in by_transaction.values()), "a request answered twice"
    saved = [t for t, (a,) in by_transaction.items() if a["status"] == "ok"]
    busy = [t for t, (a,) in by_transaction.items() if a["status"] == "error" and a["error"].startswith("busy:")]
    duplicate = [t for t, (a,) in by_transaction.items() if a["status"] == "error" and not a["error"].startswith("busy:")]
    assert len(saved) == 1 and saved[0] not in busy
    assert len(saved) + len(busy) + len(duplicate) == SENT
    print(f"{SENT} requests: 1 saved, {len(duplicate)} refused as duplicates, {len(busy)} answered busy")
