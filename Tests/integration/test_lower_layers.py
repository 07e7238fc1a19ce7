"""Hardening of the lower layers, end to end (issue 12): empty notifications on the AcquireNotify socket, and
oversize MQTT packets (docs/security.md) against the daemon's memory."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.bench import MqttClient

from bridge_helpers import channel, device, start_bridge, wait_log

GADGET = "C0:FF:EE:00:0A:01"
LEVEL_UUID = "c0ffee00-1e7e-4c7a-9b1e-0000000000a1"
SERVICE_UUID = "c0ffee00-1e7e-4c7a-9b1e-0000000000a0"


def vm_hwm_kib(pid: int) -> int:
    """Peak resident set size of `pid` (VmHWM), in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError(f"no VmHWM for {pid}")


@pytest.mark.parametrize("acquire", [True, False], ids=["AcquireNotify", "StartNotify"])
def test_empty_notification_is_published_and_later_values_keep_flowing(run_gattbridge, peripheral, mosquitto, mqtt,
                                                                       wait_until, tmp_path, acquire):
    # Notifications cycle "", 01, 02: on the AcquireNotify socket the empty one reads as 0 bytes, like end-of-file.
    peripheral("generic", GADGET, config={"name": "Blinker", "services": [
        {"uuid": SERVICE_UUID, "characteristics": [
            {"uuid": LEVEL_UUID, "flags": ["read", "notify"], "value": "00", "acquire_notify": acquire,
             "notify": {"values": ["", "01", "02"], "rate": 10}}]}]})
    bridge = start_bridge(run_gattbridge, tmp_path, mosquitto, [
        device("gadget", GADGET, [channel("level", LEVEL_UUID, "hex")])])
    bridge.wait_online(mqtt, "gadget")
    topic = bridge.topic("gadget", "level")
    wait_until(lambda: sum(1 for m in mqtt.received(topic) if m.payload == b"") >= 3, 15, "three empty notifications")
    first_empty = next(i for i, m in enumerate(mqtt.received(topic)) if m.payload == b"")
    later = [m.text for m in mqtt.received(topic)[first_empty:]]
    assert "01" in later and "02" in later, f"values after the empty one: {later[:10]}"
    # The subscription never ended: no offline/online flap after coming online, no disconnect event.
    availability = [m.text for m in mqtt.received(bridge.topic("gadget", "availability"))]
    assert availability[availability.index("online"):] == ["online"], availability
    assert not [e for e in (m.json() for m in mqtt.received(bridge.event)) if e.get("type") == "disconnected"]
    bridge.assert_running()


@pytest.mark.parametrize("protocol", ["5", "3.1.1"])
def test_oversize_set_is_dropped_without_raising_peak_memory(run_gattbridge, peripheral, mosquitto, mqtt, bench,
                                                             wait_until, tmp_path, protocol):
    gadget = peripheral("generic", GADGET, config={"name": "Level", "services": [
        {"uuid": SERVICE_UUID, "characteristics": [{"uuid": LEVEL_UUID, "flags": ["read", "write"], "value": "05"}]}]})
    bridge = start_bridge(run_gattbridge, tmp_path, mosquitto, [
        device("gadget", GADGET, [channel("level", LEVEL_UUID, "uint8", mode="read", interval=60, writable=True)])],
        protocol=protocol)
    bridge.wait_online(mqtt, "gadget")
    set_topic = bridge.topic("gadget", "level", "set")
    warm = gadget.mark()
    mqtt.publish(set_topic, "7")                       # warm up the command path before measuring
    gadget.wait_for({"event": "write", "value": "07"}, 10, since=warm)
    events = gadget.mark()
    before = vm_hwm_kib(bridge.process.pid)

    # mosquitto's own limit is 256 MB: it accepts 50 MB and forwards it to every subscriber that can take it.
    sender = MqttClient(mosquitto.host, mosquitto.port, topics=[])
    try:
        sender.publish(set_topic, b"9" * (50 * 1024 * 1024), timeout=60)
        sender.publish(set_topic, "8")
    finally:
        sender.close()
    gadget.wait_for({"event": "write", "value": "08"}, 30, since=events)
    writes = [e["value"] for e in gadget.events_matching("write", since=events)]
    assert writes == ["08"], f"the oversize command must never be written: {writes}"
    grown = vm_hwm_kib(bridge.process.pid) - before
    print(f"peak RSS growth over the 50 MB publish, MQTT {protocol}: {grown} KiB")
    if protocol == "5":
        # Announced Maximum Packet Size: the broker never sends the 50 MB packet to the daemon.
        assert grown < 8 * 1024, f"peak RSS grew by {grown} KiB"
    else:
        # MQTT 3.1.1 cannot announce a limit: libmosquitto 2.0 allocates the packet and copies its payload out
        # (two transient 50 MiB buffers, measured ~100 MiB); the client drops the message without a third copy.
        assert grown < (2 * 50 + 12) * 1024, f"peak RSS grew by {grown} KiB"
        # The warning is logged by the network thread; the test reads stderr through a reader thread of its own.
        wait_until(lambda: "maximum packet size" in bridge.process.stderr, 10, "the oversize drop logged")
    bridge.assert_running()
