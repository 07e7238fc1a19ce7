"""A passive BTHome thermometer (docs/adverts.md) in a real Home Assistant core (2024.3): the daemon decodes the
simulated broadcaster's advertisements (bench/peripherals/broadcaster.py) and announces them; Home Assistant's own
MQTT integration must make a device of it with a sensor per reading, whose states are the values the broadcaster
sent, which goes unavailable when the broadcasts stop, and whose button presses are events with device triggers.

Run:  make test-homeassistant      (creates .venv-ha on first use, ~5 min)
"""

from __future__ import annotations

import math

from adverts_helpers import TIMEOUT, passive, same_number, sent_values, start_adverts_bridge, wait_value

THERMOMETER = "A4:C1:38:0B:71:01"
NAME = "balcony"
NODE = "gattbridge_" + THERMOMETER.replace(":", "")
ADVERT_NODE = NODE + "_advert"            # the adverts feature's own discovery node, under the same HA device
# Home Assistant's entity ids: <platform>.<device name>_<entity name>, slugified.
READINGS = {"temperature": ("°C", "temperature"), "humidity": ("%", "humidity"), "battery": ("%", "battery")}
BUTTON = "event.balcony_button"


def numbers(states: list) -> list[float]:
    """The numeric states among (state, time, attributes) rows; 'unknown' and 'unavailable' left out."""
    out = []
    for state, _, _ in states:
        try:
            out.append(float(state))
        except ValueError:
            pass
    return out


def test_a_passive_bthome_thermometer_is_a_device_with_its_readings_and_button(
        bench, run_gattbridge, gattbridge_bin, mosquitto, mqtt, home_assistant, wait_until, tmp_path):
    ha = home_assistant()
    sensor = bench.broadcaster("bthome", THERMOMETER, event_hold=3)
    bridge = start_adverts_bridge(run_gattbridge, gattbridge_bin, tmp_path, mosquitto,
                                  [passive(NAME, THERMOMETER, "bthome")], homeassistant=True)
    bridge.wait_online(mqtt, NAME)

    # One Home Assistant device for the broadcaster, its readings' entities under it (the registries are saved
    # about 10 s after a change).
    device = wait_until(lambda: [d for d in ha.device_registry() if d.get("name") == NAME], 40,
                        "the thermometer never reached the device registry")[0]
    assert device["identifiers"] == [["mqtt", NODE]]
    assert ["bluetooth", THERMOMETER] in device["connections"], device

    def entities():
        found = {e["entity_id"]: e for e in ha.entity_registry()
                 if e.get("platform") == "mqtt" and e.get("device_id") == device["id"]}
        return found if all(f"sensor.{NAME}_{r}" in found for r in READINGS) else None
    registered = wait_until(entities, 40, lambda: f"readings not all registered: {ha.entity_registry()}")
    for reading, (unit, device_class) in READINGS.items():
        entry = registered[f"sensor.{NAME}_{reading}"]
        assert entry["unique_id"] == f"{ADVERT_NODE}_{reading}", entry
        assert entry["original_device_class"] == device_class, entry
        assert entry["unit_of_measurement"] == unit, entry
        assert entry["capabilities"] == {"state_class": "measurement"}, entry
    assert registered[f"sensor.{NAME}_rssi"]["entity_category"] == "diagnostic"

    # The states are the values sent: every number Home Assistant recorded is one the broadcaster sent, and with the
    # broadcaster paused (its last packet stays on the air) Home Assistant ends on the held packet's values.
    sensor.send({"cmd": "pause", "on": True})
    held = sensor.broadcasts()[-1]
    for reading, (unit, device_class) in READINGS.items():
        entity_id = f"sensor.{NAME}_{reading}"
        wanted = held["measurements"][reading]
        last = wait_until(lambda: (s := ha.states(entity_id)) and numbers(s[-1:]) == [wanted] and s[-1], 15,
                          lambda: f"{entity_id} never showed {wanted} (recorded: {ha.states(entity_id)[-5:]})")
        assert last[2].get("unit_of_measurement") == unit and last[2].get("device_class") == device_class, last
        assert last[2].get("state_class") == "measurement", last
        sent = sent_values(sensor, reading)
        stray = [v for v in numbers(ha.states(entity_id)) if not any(math.isclose(v, s, abs_tol=1e-9) for s in sent)]
        assert stray == [], f"{entity_id}: Home Assistant recorded {stray}, never sent"
        retained = mqtt.received(bridge.topic(NAME, reading))[-1].text
        assert same_number(retained, wanted), (reading, retained, wanted)

    # A button press: the event entity (announced with the first press) and a device trigger per button event.
    sensor.send({"cmd": "pause", "on": False})
    for event_type in ("press", "double_press"):
        before = len(ha.states(BUTTON))
        mark = mqtt.mark()
        pressed = sensor.press(event_type)
        wait_until(lambda: [s for s in ha.states(BUTTON)[before:] if s[2].get("event_type") == event_type], 10,
                   lambda: f"no {event_type} event recorded: {ha.states(BUTTON)[before:]} "
                           f"({ha.recorded_entities()})")
        # The press packet stays on the air for several scans: once a later packet's reading is out, every repeat
        # has been heard, and one press is one event.
        wait_value(mqtt, bridge, NAME, "temperature", sensor, since=mark, after=pressed["n"])
        assert len(mqtt.received(bridge.topic(NAME, "button"), mark)) == 1
        fired = [s for s in ha.states(BUTTON)[before:] if s[2].get("event_type") == event_type]
        assert len(fired) == 1, fired
    button = wait_until(lambda: [e for e in ha.entity_registry() if e["entity_id"] == BUTTON], 30,
                        "the button's event entity never reached the registry")[0]
    assert button["device_id"] == device["id"] and button["unique_id"] == f"{ADVERT_NODE}_button", button
    log = "\n".join(ha.process.stderr_lines)
    for event_type in ("press", "double_press", "long_press"):
        assert f"Found new component: device_automation {ADVERT_NODE} button_{event_type}" in log, event_type

    # Availability follows B/D/availability: silent for adverts.timeout, every entity of the device is unavailable
    # (the diagnostic RSSI included); back on the air, the readings return.
    sensor.stop()
    bridge.wait_availability(mqtt, NAME, "offline", TIMEOUT + 15)
    for reading in READINGS:
        entity_id = f"sensor.{NAME}_{reading}"
        wait_until(lambda: ha.states(entity_id)[-1][0] == "unavailable", 10,
                   lambda: f"{entity_id} still available: {ha.states(entity_id)[-3:]}")
    mark = mqtt.mark()
    sensor.start()
    bridge.wait_online(mqtt, NAME, 20, since=mark)
    for reading in READINGS:
        entity_id = f"sensor.{NAME}_{reading}"
        wait_until(lambda: numbers(ha.states(entity_id)[-1:]), 15,
                   lambda: f"{entity_id} never back: {ha.states(entity_id)[-3:]}")

    complaints = [line for line in ha.process.stderr_lines
                  if "[homeassistant.components.mqtt" in line and (" WARNING " in line or " ERROR " in line)]
    assert complaints == []
    bridge.assert_running()
