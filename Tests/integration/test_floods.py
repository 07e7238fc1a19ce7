"""Floods from an ordinary broker client (issue 27): 20,000 messages of each kind the bridge listens to must leave
its memory bounded (VmHWM, the peak resident set, below 64 MB) and the daemon answering. Each birth message used to
republish every config, each `device/add` every config of every device, and what waited for the broker or for the
bridge was bounded by message count or not at all.

The flood is published at QoS 0 by a client of its own, as fast as paho writes; waits are conditions with deadlines.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from bench.peripherals import led

from bridge_helpers import BASE, Bridge, channel, device, to_yaml

FLOOD = 20_000
LIMIT_KB = 64 * 1024
LAMP = "C0:FF:EE:00:27:01"
LED_CHAR = f"{led.SERVICE}/{led.CHARACTERISTIC}"


def status_kb(pid: int, key: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    raise KeyError(key)


def lamp() -> dict:
    return device("lamp", LAMP, [
        channel("led", LED_CHAR, "hex", values={"ON": "01", "OFF": "00"}, mode="read", interval=3600, writable=True,
                homeassistant="switch"),
    ])


def absent(i: int) -> dict:
    """A device that is never in range: its Home Assistant configs are published all the same."""
    return device(f"absent{i:02d}", f"C0:FF:EE:00:28:{i:02X}", [
        channel("temp", "2a6e", "int16", mode="notify", homeassistant="sensor"),
        channel("level", "2a19", "uint8", mode="read", interval=600, homeassistant="sensor"),
    ])


def start(run_gattbridge, tmp_path: Path, port: int, mqtt) -> Bridge:
    doc = {
        "mqtt": {"host": "127.0.0.1", "port": port, "client_id": f"gattbridge-flood-{time.monotonic_ns()}",
                 "base_topic": BASE, "keepalive": 10},
        "homeassistant": {"enabled": True},
        "state_dir": str(tmp_path / "state"),
        "devices": [lamp()] + [absent(i) for i in range(40)],
    }
    path = tmp_path / "gattbridge.yaml"
    path.write_text(to_yaml(doc) + "\n")
    mark = mqtt.mark()
    process = run_gattbridge(["run", "--config", path, "--log-level", "info"], name="flooded")
    bridge = Bridge(process, path, BASE)
    mqtt.wait_for(bridge.topic("bridge", "info"), None, 15, since=mark)
    bridge.wait_online(mqtt, "lamp", since=mark)
    return bridge


def flood(bench, mosquitto, messages) -> None:
    """Publishes (topic, payload) pairs at QoS 0 from a client of its own, and waits until paho wrote them all."""
    client = bench.mqtt_client(mosquitto, topics=[])
    try:
        last = None
        for topic, payload in messages:
            last = client.client.publish(topic, payload, qos=0)
        last.wait_for_publish(60)
    finally:
        client.close()


def ask(client, bridge: Bridge, verb: str, body: dict, timeout: float) -> dict:
    """A bridge request with an MQTT 5 Response Topic of the asker's own (the shared response topic carries the
    answers to the whole flood), sent again every few seconds: the broker drops what queues for a client past its
    limit, and while the bridge works through a flood its queue is full."""
    from paho.mqtt.packettypes import PacketTypes
    from paho.mqtt.properties import Properties

    transaction = f"t-{time.monotonic_ns()}"
    reply = f"flood-test/{transaction}"
    properties = Properties(PacketTypes.PUBLISH)
    properties.ResponseTopic = reply
    payload = json.dumps({**body, "transaction": transaction})
    deadline = time.monotonic() + timeout
    while True:
        client.client.publish(bridge.topic("bridge", "request", verb), payload, qos=1, properties=properties)
        try:
            return client.wait_for(reply, None, min(5.0, max(deadline - time.monotonic(), 0.1))).json()
        except TimeoutError:
            if time.monotonic() >= deadline:
                raise


def flood_messages(kind: str, bridge: Bridge):
    request = bridge.topic("bridge", "request")
    if kind == "birth":
        return (("homeassistant/status", "online") for _ in range(FLOOD))
    if kind == "device_add":
        # 300 distinct devices, each asked for again and again: the repeats are refused as duplicates.
        def add(i: int) -> str:
            n = i % 300
            return json.dumps({"name": f"added{n:03d}", "address": f"C0:FF:EE:01:{n // 256:02X}:{n % 256:02X}",
                               "channels": [{"name": "temp", "characteristic": "2a6e", "codec": "int16",
                                             "homeassistant": "sensor"}]})
        return ((f"{request}/device/add", add(i)) for i in range(FLOOD))
    if kind == "get":
        return ((bridge.topic("lamp", "led", "get"), "") for _ in range(FLOOD))
    if kind == "health":
        return ((f"{request}/health", "{}") for _ in range(FLOOD))
    # Plain publishes on topics the bridge subscribes to (discovery configs of other software, 300 bytes each: 6 MB,
    # six times the bridge's inbox bound).
    body = json.dumps({"name": "x" * 300})
    return ((f"homeassistant/sensor/other{i}/x/config", body) for i in range(FLOOD))


@pytest.mark.parametrize("kind", ["birth", "device_add", "get", "health", "plain"])
def test_a_flood_keeps_memory_bounded_and_the_bridge_answering(bench, run_gattbridge, peripheral, mosquitto, mqtt,
                                                              wait_until, tmp_path, kind):
    light = peripheral("led", LAMP)
    bridge = start(run_gattbridge, tmp_path, mosquitto.port, mqtt)
    pid = bridge.process.pid
    config_topic = "homeassistant/sensor/gattbridge_C0FFEE002800/temp/config"
    mqtt.wait_for(config_topic, None, 10)
    peak = [status_kb(pid, "VmRSS")]
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(0.02):
            try:
                peak[0] = max(peak[0], status_kb(pid, "VmRSS"))
            except (OSError, KeyError):
                return

    # The answers are read by a client of their own: the broker drops what queues for a slow subscriber to `#`,
    # and the flood itself would be most of that.
    watch = bench.mqtt_client(mosquitto, topics=["flood-test/#", config_topic])
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    mark = watch.mark()
    started = time.monotonic()
    try:
        flood(bench, mosquitto, flood_messages(kind, bridge))
        # Still answering, behind whatever of the flood it has not worked through yet.
        health = ask(watch, bridge, "health", {}, 90)
        assert health["status"] == "ok", health
        # And still carrying out commands. The answer above can come while the bridge still works through the
        # flood's tail, which drops what arrives meanwhile, a command as well: so it is sent again, as the request.
        events = light.mark()
        deadline = time.monotonic() + 60
        while True:
            watch.publish(bridge.topic("lamp", "led", "set"), "ON")
            try:
                light.wait_for(lambda e: e.get("event") == "write" and e.get("value") == "01",
                               min(5.0, max(deadline - time.monotonic(), 0.1)), since=events)
                break
            except TimeoutError:
                if time.monotonic() >= deadline:
                    raise
    finally:
        stop.set()
        sampler.join(2)
        watch.close()
    hwm = status_kb(pid, "VmHWM")
    elapsed = time.monotonic() - started
    print(f"{kind}: {FLOOD} messages, answered after {elapsed:.1f} s; peak RSS {max(peak[0], hwm) / 1024:.1f} MB, "
          f"now {status_kb(pid, 'VmRSS') / 1024:.1f} MB")
    bridge.assert_running()
    assert hwm < LIMIT_KB, f"peak RSS {hwm / 1024:.1f} MB after a {kind} flood"
    if kind == "birth":
        # A pending republish absorbs the births behind it: a handful of republishes, not 20,000.
        republished = len(watch.received(config_topic, mark))
        assert 1 <= republished <= 40, republished
        lost_lines = [line for line in bridge.process.stderr.splitlines() if "MQTT message(s) lost" in line]
        assert len(lost_lines) <= 20, len(lost_lines)
    if kind == "device_add":
        # A device added publishes its own configs, not everyone's: each config went out a few times at most.
        republished = len(watch.received(config_topic, mark))
        assert republished <= 5, republished
        # The devices that were added are running and listed (the retained B/bridge/devices).
        reader = bench.mqtt_client(mosquitto, topics=[bridge.topic("bridge", "devices")])
        try:
            wait_until(lambda: any(d["name"].startswith("added") for m in reader.received(bridge.topic("bridge", "devices"))
                                   for d in m.json()), 30, "no added device listed")
        finally:
            reader.close()
