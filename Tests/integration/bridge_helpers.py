"""Helpers for the bridge daemon tests (test_bridge.py): a config writer, a daemon handle and predicted payloads.

    bridge = start_bridge(run_gattbridge, tmp_path, mosquitto, [device("strap", HRM, [channel(...)])])
    bridge.wait_online(mqtt, "strap")
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any, Iterable, Optional

from bench.peripherals import heart_rate

BASE = "bench/gb"          # a two-level base topic: the daemon must not assume one level


# --- config ---------------------------------------------------------------------------------------------------

def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    return json.dumps(str(value))      # a JSON string is a valid YAML double-quoted scalar


def to_yaml(value: Any, indent: int = 0) -> str:
    """Block YAML for nested dicts/lists of scalars (all strings double-quoted, numbers and booleans plain)."""
    pad = " " * indent
    lines: list[str] = []
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, dict) and item and all(not isinstance(v, (dict, list)) for v in item.values()) \
                    and key == "values":
                flow = ", ".join(f"{json.dumps(str(k))}: {_scalar(v)}" for k, v in item.items())
                lines.append(f"{pad}{key}: {{ {flow} }}")
            elif isinstance(item, (dict, list)):
                lines.append(f"{pad}{key}:")
                lines.append(to_yaml(item, indent + 2))
            else:
                lines.append(f"{pad}{key}: {_scalar(item)}")
    elif isinstance(value, list):
        for item in value:
            body = to_yaml(item, indent + 2)
            lines.append(pad + "- " + body.lstrip(" "))
    else:
        lines.append(pad + _scalar(value))
    return "\n".join(lines)


def channel(name: str, characteristic: str, codec: str, **options: Any) -> dict:
    return {"name": name, "characteristic": characteristic, "codec": codec, **options}


def device(name: str, address: str, channels: Iterable[dict]) -> dict:
    return {"name": name, "address": address, "channels": list(channels)}


def config_text(port: int, devices: Iterable[dict], base: str = BASE, client_id: Optional[str] = None,
                keepalive: int = 10, protocol: Optional[str] = None) -> str:
    doc = {
        "mqtt": {"host": "127.0.0.1", "port": port, "client_id": client_id or f"gattbridge-test-{time.monotonic_ns()}",
                 "base_topic": base, "keepalive": keepalive, **({"protocol": protocol} if protocol else {})},
        "homeassistant": {"enabled": False},
        "devices": list(devices),
    }
    return to_yaml(doc) + "\n"


# --- the daemon -----------------------------------------------------------------------------------------------

class Bridge:
    """A running `gattbridge run` and the topics of its config."""

    def __init__(self, process, config_path: Path, base: str):
        self.process = process
        self.config_path = config_path
        self.base = base

    def topic(self, *levels: str) -> str:
        return "/".join((self.base, *levels))

    @property
    def log(self) -> str:
        return self.topic("bridge", "log")

    @property
    def event(self) -> str:
        return self.topic("bridge", "event")

    def wait_availability(self, mqtt, device: str, value: str, timeout: float = 20.0, since: int = 0):
        self.assert_running()
        return mqtt.wait_for(self.topic(device, "availability"), value, timeout, since)

    def wait_online(self, mqtt, device: str, timeout: float = 20.0, since: int = 0):
        return self.wait_availability(mqtt, device, "online", timeout, since)

    def assert_running(self) -> None:
        assert self.process.running, f"gattbridge exited ({self.process.returncode}): {self.process.stderr[-3000:]}"


def start_bridge(run_gattbridge, tmp_path: Path, mosquitto, devices: Iterable[dict], base: str = BASE,
                 name: str = "gattbridge", **config: Any) -> Bridge:
    path = tmp_path / f"{name}.yaml"
    path.write_text(config_text(mosquitto.port, devices, base, **config))
    level = os.environ.get("GATTBRIDGE_TEST_LOG_LEVEL", "debug")
    process = run_gattbridge(["run", "--config", path, "--log-level", level], name=name)
    return Bridge(process, path, base)


# --- predicted payloads ---------------------------------------------------------------------------------------

def _number(x: float) -> str:
    """How the daemon spells a JSON number: the shortest round-trip form, no trailing `.0`."""
    if float(x).is_integer():
        return str(int(x))
    return repr(float(x))


def heart_rate_payload(i: int) -> str:
    """The exact payload docs/configuration.md#codecs prescribes for heart-rate notification i: key order bpm, contact, energy_kj, rr_ms."""
    e = heart_rate.expected_json(i)
    contact = "null" if e["contact"] is None else ("true" if e["contact"] else "false")
    energy = "null" if e["energy_kj"] is None else str(e["energy_kj"])
    rr = ",".join(_number(r) for r in e["rr_ms"])
    return f'{{"bpm":{e["bpm"]},"contact":{contact},"energy_kj":{energy},"rr_ms":[{rr}]}}'


def heart_rate_index(payload: str) -> int:
    """Index in heart_rate.SEQUENCE of a published payload (every entry decodes differently)."""
    for i in range(len(heart_rate.SEQUENCE)):
        if heart_rate_payload(i) == payload:
            return i
    raise AssertionError(f"not a payload of the heart-rate sequence: {payload!r}")


def assert_consecutive(indices: list[int], modulo: int) -> None:
    """Each index follows the previous one (mod `modulo`): nothing lost, duplicated or reordered."""
    for k in range(1, len(indices)):
        assert indices[k] == (indices[k - 1] + 1) % modulo, \
            f"sequence broken at position {k}: {indices[max(0, k - 5):k + 5]}"


def without_redeliveries(sequence: list, max_run: int = 25) -> tuple[list, int]:
    """Removes QoS 1 re-deliveries: after a broker restart the client resends what was in flight unacknowledged, so
    a run the subscriber already got shows up again right after itself ([.. 5 6 7 0 | 5 6 7 0 | 1 ..]). Returns the
    sequence without them and how many runs were removed."""
    out: list = []
    runs = 0
    k = 0
    while k < len(sequence):
        for r in range(1, min(max_run, len(out)) + 1):
            if sequence[k:k + r] == out[len(out) - r:] and len(sequence[k:k + r]) == r:
                k += r
                runs += 1
                break
        else:
            out.append(sequence[k])
            k += 1
    return out, runs


def wait_log(mqtt, bridge: Bridge, topic: str, timeout: float = 10.0, since: int = 0) -> dict:
    """The B/bridge/log error about `topic`, checked for docs/mqtt.md's exact shape."""
    msg = mqtt.wait_for(bridge.log, lambda m: m.json().get("topic") == topic, timeout, since)
    entry = msg.json()
    assert list(entry) == ["level", "message", "topic"], entry
    assert entry["level"] == "error" and isinstance(entry["message"], str) and entry["message"], entry
    return entry


def retained_messages(broker, filter_: str, sentinel: str, qos: int = 2) -> dict[str, bytes]:
    """Every retained message under `filter_`, as a subscriber arriving now receives them. A fresh client subscribes,
    then publishes a sentinel on a topic its subscription covers (`sentinel`, under `filter_` but nobody's topic): the
    broker sends the retained messages while handling the SUBSCRIBE, so once the sentinel is back every one of them
    has arrived. Over a thousand of them, subscribe with `qos` 0: mosquitto queues at most 1000 QoS 1 and 2 messages
    for a client (`max_queued_messages`) and drops the rest, the sentinel with them."""
    from bench.bench import MqttClient

    client = MqttClient(broker.host, broker.port, topics=[filter_], qos=qos)
    try:
        token = f"sentinel-{time.monotonic_ns()}"
        client.publish(sentinel, token, qos=1)
        client.wait_for(sentinel, token, 10)
        return {m.topic: m.payload for m in client.received(filter_) if m.retain and m.payload}
    finally:
        client.close()


# --- a subscriber that survives broker restarts -----------------------------------------------------------------

def persistent_subscriber(bench, broker, topics: Iterable[str]):
    """A bench MqttClient whose MQTT 5 session (subscriptions + queued QoS ≥ 1 messages) outlives disconnects."""
    from paho.mqtt.packettypes import PacketTypes
    from paho.mqtt.properties import Properties

    from bench.bench import MqttClient

    class PersistentClient(MqttClient):
        def __init__(self):
            import paho.mqtt.client as mqtt
            import threading
            self._mqtt = mqtt
            self.client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=f"persistent-{time.monotonic_ns()}",
                                      protocol=mqtt.MQTTv5)
            self.topics = list(topics)
            self.messages = []
            self._cond = threading.Condition()
            self._subscribed = threading.Event()
            self.client.on_connect = self._on_connect
            self.client.on_subscribe = lambda *a, **k: self._subscribed.set()
            self.client.on_message = self._on_message
            self.client.reconnect_delay_set(1, 2)
            props = Properties(PacketTypes.CONNECT)
            props.SessionExpiryInterval = 3600
            self.client.connect(broker.host, broker.port, clean_start=False, properties=props)
            self.client.loop_start()
            if not self._subscribed.wait(10):
                self.close()
                raise TimeoutError("persistent MQTT client not subscribed")

        def _on_connect(self, client, userdata, flags, reason_code, properties=None):
            # A resumed session keeps its subscriptions: subscribing again would only replay retained messages.
            if not flags.session_present:
                client.subscribe([(t, 1) for t in self.topics])

    client = PersistentClient()
    bench.mqtt_clients.append(client)
    return client
