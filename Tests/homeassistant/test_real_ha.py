"""gattbridge against a real Home Assistant core (2024.3, scripts/homeassistant/requirements.txt): what Home Assistant
itself makes of the discovery, read from its entity and device registries and its recorder database.

Run:  make test-homeassistant      (creates .venv-ha on first use, ~5 min)
"""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from bench.peripherals import button

from bridge_helpers import Bridge, channel, device, to_yaml

BASE = "gattbridge"
LED = device("desk-led", "C0:FF:EE:00:00:03", [
    channel("led", "c0ffee00-1ed0-4c7a-9b1e-000000000001/c0ffee00-1ed0-4c7a-9b1e-000000000002", "hex",
            values={"ON": "01", "OFF": "00"}, mode="read", interval=300, writable=True, homeassistant="switch")])
REMOTE = device("remote", "C0:FF:EE:00:00:05", [
    channel("button", button.CHARACTERISTIC, "hex", mode="notify", homeassistant="event",
            values={name: byte.hex() for name, byte in button.ACTIONS.items()})])
# Never served; keeps the device list non-empty.
SPARE = device("spare-sensor", "C0:FF:EE:00:00:0F", [channel("temperature", "181a/2a6e", "int16")])

# Home Assistant's entity ids: <platform>.<device name>_<entity name>, slugified.
LED_SWITCH = "switch.desk_led_led"
REMOTE_EVENT = "event.remote_button"


class Daemon:
    def __init__(self, run_gattbridge, mosquitto, tmp_path: Path, devices: list[dict]):
        self.mosquitto = mosquitto
        self.path = tmp_path / "gattbridge.yaml"
        self.write(devices)
        self.process = run_gattbridge(["run", "-c", self.path, "--log-level", "debug"])
        self.bridge = Bridge(self.process, self.path, BASE)

    def write(self, devices: list[dict]) -> None:
        doc = {"mqtt": {"host": "127.0.0.1", "port": self.mosquitto.port, "base_topic": BASE, "keepalive": 10},
               "homeassistant": {"enabled": True, "discovery_prefix": "homeassistant"},
               "devices": devices}
        self.path.write_text(to_yaml(doc) + "\n")

    def reload(self, devices: list[dict]) -> None:
        self.write(devices)
        self.process.signal(signal.SIGHUP)


def registered(ha, platform: str, unique_prefix: str) -> list[dict]:
    return [e for e in ha.entity_registry() if e.get("platform") == "mqtt" and e["entity_id"].startswith(platform + ".")
            and str(e.get("unique_id", "")).startswith(unique_prefix)]


def device_named(ha, name: str) -> list[dict]:
    return [d for d in ha.device_registry() if d.get("name") == name]


def test_a_device_announced_while_home_assistant_runs_shows_its_first_value_at_once(
        bench, run_gattbridge, mosquitto, mqtt, peripheral, home_assistant, wait_until, tmp_path):
    """docs/home-assistant.md: the first polled value of a new device reaches an already running Home Assistant within 3 s, not
    only at the next poll (every 300 s here)."""
    ha = home_assistant()
    peripheral("led")
    daemon = Daemon(run_gattbridge, mosquitto, tmp_path, [SPARE])
    mqtt.wait_for(f"{BASE}/bridge/state", "online", 15)

    mark = mqtt.mark()
    daemon.reload([SPARE, LED])              # a new device, announced to the running Home Assistant
    daemon.bridge.wait_online(mqtt, "desk-led", 25, since=mark)
    online_at = time.time()
    mqtt.wait_for(f"{BASE}/desk-led/led", "OFF", 5, since=mark)

    def shown():
        return [s for s in ha.states(LED_SWITCH) if s[0] == "off"]
    # The recorder commits every second: the state may reach the database up to a second after Home Assistant has it.
    first = wait_until(shown, 3 + 2, f"{LED_SWITCH} never showed 'off' (recorded: {ha.states(LED_SWITCH)}; "
                                     f"entities: {ha.recorded_entities()})")[0]
    assert first[1] - online_at <= 3.0, f"Home Assistant showed the first value {first[1] - online_at:.1f} s late"
    daemon.bridge.assert_running()


def test_button_presses_are_events_in_home_assistant(bench, run_gattbridge, mosquitto, mqtt, peripheral,
                                                     home_assistant, wait_until, tmp_path):
    ha = home_assistant()
    remote = peripheral("button", address="C0:FF:EE:00:00:05")
    daemon = Daemon(run_gattbridge, mosquitto, tmp_path, [REMOTE])
    daemon.bridge.wait_online(mqtt, "remote", 25)
    # Available (the bridge and the remote online) before the first press.
    wait_until(lambda: [s for s in ha.states(REMOTE_EVENT) if s[0] != "unavailable"], 10,
               f"{REMOTE_EVENT} never became available ({ha.states(REMOTE_EVENT)}; {ha.recorded_entities()})")

    for name in ("press", "double_press", "long_press"):
        before = len(ha.states(REMOTE_EVENT))
        remote.notify(button.CHARACTERISTIC, button.ACTIONS[name])
        fired = wait_until(lambda: [s for s in ha.states(REMOTE_EVENT)[before:] if s[2].get("event_type") == name], 5,
                           f"no {name} event recorded: {ha.states(REMOTE_EVENT)[before:]}")
        assert len(fired) == 1, fired
    daemon.bridge.assert_running()


def test_button_entities_and_triggers_are_registered_and_removal_clears_them(
        bench, run_gattbridge, mosquitto, mqtt, peripheral, home_assistant, wait_until, tmp_path):
    ha = home_assistant()
    peripheral("button", address="C0:FF:EE:00:00:05")
    daemon = Daemon(run_gattbridge, mosquitto, tmp_path, [SPARE, REMOTE])
    daemon.bridge.wait_online(mqtt, "remote", 25)
    node = "gattbridge_C0FFEE000005"
    # The registries are saved about 10 s after a change.
    events = wait_until(lambda: registered(ha, "event", node), 30, "the event entity never reached the registry")
    assert [e["entity_id"] for e in events] == [REMOTE_EVENT]
    remote_device = wait_until(lambda: device_named(ha, "remote"), 30, "the remote never reached the device registry")
    assert [["mqtt", node]] == remote_device[0]["identifiers"]
    assert events[0]["device_id"] == remote_device[0]["id"]
    # The event entity is live (its state is recorded) under the remote's device, with the RSSI sensor.
    wait_until(lambda: ha.states(REMOTE_EVENT), 10, f"{REMOTE_EVENT} never recorded ({ha.recorded_entities()})")
    assert {e["entity_id"].split(".")[0] for e in ha.entity_registry()
            if e.get("device_id") == remote_device[0]["id"]} == {"event", "sensor"}
    # Device triggers are kept in memory only; Home Assistant's MQTT discovery logs each one it sets up, and warns
    # about a config it cannot use.
    log = "\n".join(ha.process.stderr_lines)
    for name in button.ACTIONS:
        assert f"Found new component: device_automation {node} button_{name}" in log, name
    complaints = [line for line in ha.process.stderr_lines
                  if "[homeassistant.components.mqtt" in line and (" WARNING " in line or " ERROR " in line)]
    assert complaints == []

    daemon.reload([SPARE])
    # Home Assistant removes a device once nothing of it is left, triggers included: its removal shows that the
    # trigger configs were cleared as well as the entities.
    wait_until(lambda: not device_named(ha, "remote"), 30,
               f"the remote is still registered: {device_named(ha, 'remote')}")
    assert registered(ha, "event", node) == [] and registered(ha, "sensor", node) == []
    daemon.bridge.assert_running()


def test_the_bridge_itself_is_a_device_with_diagnostic_sensors(
        bench, run_gattbridge, mosquitto, mqtt, home_assistant, wait_until, tmp_path):
    """docs/adapters.md: Home Assistant shows one `gattbridge bridge <hostname>` device with diagnostic sensors (devices
    online, buffered and dropped messages, one state per adapter), whose states it reads from the bridge's retained
    topics."""
    ha = home_assistant()
    Daemon(run_gattbridge, mosquitto, tmp_path, [SPARE])
    mqtt.wait_for(f"{BASE}/bridge/state", "online", 15)

    def bridge_entities():
        found = {e["unique_id"]: e for e in ha.entity_registry()
                 if e.get("platform") == "mqtt" and str(e.get("unique_id", "")).startswith("gattbridge_bridge_")}
        wanted = ("_devices_online", "_buffered_messages", "_dropped_messages", "_adapter_hci0")
        return found if all(any(k.endswith(w) for k in found) for w in wanted) else None
    entities = wait_until(bridge_entities, 40, "the bridge's sensors never reached the entity registry")
    devices = [d for d in ha.device_registry() if str(d.get("name", "")).startswith("gattbridge bridge ")]
    assert len(devices) == 1, devices
    assert all(e["device_id"] == devices[0]["id"] and e.get("entity_category") == "diagnostic"
               for e in entities.values()), entities

    def state_of(suffix: str, value: str):
        entity_id = next(e["entity_id"] for k, e in entities.items() if k.endswith(suffix))
        return wait_until(lambda: [s for s in ha.states(entity_id) if s[0] == value], 20,
                          f"{entity_id} never showed {value!r} (recorded: {ha.states(entity_id)})")
    state_of("_adapter_hci0", "ok")
    state_of("_devices_online", "0")          # the spare sensor is never served
    state_of("_dropped_messages", "0")
