"""Fleet ownership when the owner cannot connect (docs/fleet.md with docs/adapters.md): an owner whose radio is powered off, wedged or
full keeps the device offline unless it gives it up. It reports that it cannot reach the device after
`bridge.unreachable_after`, and a bridge that hears the device then asks for it (the usual hysteresis) and gets it.
A bridge whose adapters have no room for a device does not claim it.
"""

from __future__ import annotations

import json

from test_adapters import set_powered
from test_fleet import SERIAL, STRAP, Fleet, serial_device, strap_device, wait_single_owner

UNREACHABLE_AFTER = 3       # seconds; default 60 (docs/configuration.md: test-only lowering, like handover_after)


def strap_owned_by_a(bench, run_gattbridge, peripheral, mosquitto, mqtt, wait_until, tmp_path, devices,
                     rssi: tuple[int, int], **settings) -> Fleet:
    """Two bridges, the strap heard by a and b at `rssi`, and online through a."""
    peripheral("heart_rate", STRAP, rate=5)
    fleet = Fleet(bench, run_gattbridge, mosquitto, tmp_path, devices, 2)
    for key, value in settings.items():
        setattr(fleet, key, value)
    fleet.rssi("a", STRAP, rssi[0])
    fleet.rssi("b", STRAP, rssi[1])
    fleet.start_all()
    assert wait_single_owner(mqtt, fleet, wait_until, "strap", expected="a") == "a"
    mqtt.wait_for(fleet.topic("strap", "availability"), "online", 20)
    return fleet


def test_an_owner_that_cannot_reach_its_device_hands_it_over(bench, run_gattbridge, peripheral, mosquitto, mqtt,
                                                            wait_until, tmp_path):
    fleet = strap_owned_by_a(bench, run_gattbridge, peripheral, mosquitto, mqtt, wait_until, tmp_path,
                             [strap_device()], (-50, -70), bridge_settings={"unreachable_after": UNREACHABLE_AFTER})

    # a's only radio goes off: a stays live (its state online), so no will helps; b still hears the strap 20 dB
    # weaker than a reported.
    mark = mqtt.mark()
    set_powered(bench, fleet.adapters["a"], False)
    mqtt.wait_for(fleet.topic("strap", "availability"), "offline", 15, since=mark)
    record = mqtt.wait_for(fleet.topic("strap", "owner"), lambda m: m.payload and m.json()["rssi"] == -127,
                           UNREACHABLE_AFTER + 10, since=mark)
    assert record.json()["bridge"] == "a"
    assert wait_single_owner(mqtt, fleet, wait_until, "strap", timeout=30, expected="b") == "b"
    mqtt.wait_for(fleet.topic("strap", "availability"), "online", 20, since=mark)
    assert fleet.bridges["a"].process.running and fleet.bridges["b"].process.running
    assert mqtt.received(fleet.topic("bridge", "a", "state"))[-1].text == "online"


def test_a_bridge_without_room_does_not_claim(bench, run_gattbridge, peripheral, mosquitto, mqtt, wait_until,
                                              tmp_path):
    fleet = strap_owned_by_a(bench, run_gattbridge, peripheral, mosquitto, mqtt, wait_until, tmp_path,
                             [strap_device(), serial_device()], (-40, -80), max_connections={"a": 1})

    # The serial module appears where a hears it far better; but a's one slot is taken: b, which can connect, must
    # take it, and a must not even claim it.
    mark = mqtt.mark()
    fleet.rssi("a", SERIAL, -40)
    fleet.rssi("b", SERIAL, -80)
    peripheral("hm10", SERIAL)
    assert wait_single_owner(mqtt, fleet, wait_until, "serial", expected="b") == "b"
    mqtt.wait_for(fleet.topic("serial", "availability"), "online", 20, since=mark)
    records = [json.loads(m.text)["bridge"] for m in mqtt.received(fleet.topic("serial", "owner"), mark) if m.payload]
    assert "a" not in records, records
    assert fleet.owners("strap") == ["a"]
