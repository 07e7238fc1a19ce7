"""The core's one loop (docs/dev/ARCHITECTURE.md): a SIGHUP reload and a bridge API change are applied one after the
other, never interleaved, so neither is lost whatever order they meet in. Each round rewrites the main file (its
device goes in or out, so the reload stops a session) and, without waiting, adds or removes an API device; the round
ends when the listing shows both. At the end the devices, their sessions and the retained topics must agree with the
files.
"""
from __future__ import annotations

import signal

from pathlib import Path

from bridge_helpers import BASE, channel, device
from test_bridge_api import LAMP, STRAP, lamp, request, run_bridge
from test_bridge_api import write_config as api_config

ROUNDS = 50


def strap() -> dict:
    return device("file-strap", STRAP, [channel("battery", "180f/2a19", "battery_level", mode="read", interval=1,
                                                retain=True)])


def write_config(tmp_path: Path, port: int, devices: list[dict]) -> Path:
    """The same MQTT settings every time: a reload that changed them would reconnect (and drop requests meanwhile)."""
    return api_config(tmp_path, port, devices, client_id="gattbridge-core-loop")


def names(message) -> list[str]:
    return sorted(d["name"] for d in message.json())


def test_reloads_and_api_changes_interleaved_lose_nothing(bench, run_gattbridge, peripheral, mosquitto, mqtt,
                                                           tmp_path):
    light = peripheral("led", LAMP)
    light.wait_for({"event": "state", "led": "00"})
    peripheral("heart_rate", STRAP, rate=1, battery=87)
    path = write_config(tmp_path, mosquitto.port, [strap()])
    bridge = run_bridge(run_gattbridge, path, mqtt)
    drop_in = tmp_path / "state" / "devices.d" / "api-lamp.yaml"
    devices_topic = bridge.topic("bridge", "devices")

    for n in range(ROUNDS):
        strap_in = n % 2 == 1          # the file had it at start; round 0 takes it out
        lamp_in = n % 2 == 0
        mark = mqtt.mark()
        write_config(tmp_path, mosquitto.port, [strap()] if strap_in else [])
        bridge.process.signal(signal.SIGHUP)
        if lamp_in:
            answer = request(mqtt, bridge, "device/add", lamp())
        else:
            answer = request(mqtt, bridge, "device/remove", {"name": "api-lamp"})
        assert answer["status"] == "ok", (n, answer)
        assert drop_in.exists() == lamp_in, n
        expected = sorted((["file-strap"] if strap_in else []) + (["api-lamp"] if lamp_in else []))
        mqtt.wait_for(devices_topic, lambda m: names(m) == expected, 15, since=mark)
        bridge.assert_running()

    # Nothing pending undoes the last round: a fresh listing agrees, and so does one more reload of the files (it
    # adds a device that is never seen, so its listing tells when it is in).
    assert [d["name"] for d in request(mqtt, bridge, "devices")["data"]] == ["file-strap"]
    mark = mqtt.mark()
    ghost = device("file-ghost", "C0:FF:EE:00:0F:01", [channel("battery", "180f/2a19", "battery_level", mode="read")])
    write_config(tmp_path, mosquitto.port, [strap(), ghost])
    bridge.process.signal(signal.SIGHUP)
    expected = ["file-ghost", "file-strap"]
    mqtt.wait_for(devices_topic, lambda m: names(m) == expected, 10, since=mark)
    assert sorted(d["name"] for d in request(mqtt, bridge, "devices")["data"]) == expected

    # Sessions: the strap's runs (online, its battery read); the lamp's is gone, and so are its retained topics.
    bridge.wait_online(mqtt, "file-strap", since=mark)
    mqtt.wait_for(bridge.topic("file-strap", "battery"), "87", 15, since=mark)
    late = bench.mqtt_client(mosquitto, topics=[f"{BASE}/#"])
    late.wait_for(bridge.topic("file-strap", "availability"), "online", 5)
    late.wait_for(bridge.topic("file-strap", "battery"), "87", 5)
    late.wait_for(bridge.topic("bridge", "state"), "online", 5)
    assert late.received(f"{BASE}/api-lamp/#") == [], "the lamp's retained topics stayed"
    assert not drop_in.exists()
    bridge.assert_running()
