"""Home Assistant MQTT discovery end to end (docs/mqtt.md), plus the bridge's event and log topics.

The real daemon runs the bench demo config (config/demo.yaml, with the test broker's port) against the three demo
peripherals at their default addresses and a real mosquitto. Home Assistant is played by a client that subscribes to
`homeassistant/#` and takes the retained configs it is handed, exactly as Home Assistant's discovery does; each config
is then put through ha_validator, which applies Home Assistant's own discovery checks, against the last real payload
seen on every topic the config names.
"""

from __future__ import annotations

import json
import re
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

import pytest

from bench.bench import REPO
from bench.peripherals import button, heart_rate

from bridge_helpers import Bridge, channel, device, retained_messages, to_yaml, wait_log
from ha_validator import ValidationReport, render_value_template, validate_discovery

DEMO_CONFIG = REPO / "config" / "demo.yaml"
PREFIX = "homeassistant"
# The node of the bridge's own device (docs/adapters.md): `gattbridge_bridge_<hostname>`; its configs are checked on their own.
BRIDGE_NODE = "gattbridge_bridge_"
BASE = "gattbridge"
SENTINEL = f"{PREFIX}/test_sentinel"     # two levels: matches neither Home Assistant's nor the bridge's config filter

# Appended to the demo config for the clean-up tests: one more channel on the strap, one more device (never served).
EXTRA_CHANNEL = """      - name: battery_raw
        characteristic: "180f/2a19"
        codec: uint8
        mode: read
        interval: 60
"""
EXTRA_DEVICE = """
  - name: spare-sensor
    address: "C0:FF:EE:00:00:0F"
    channels:
      - name: temperature
        characteristic: "181a/2a6e"
        codec: int16
"""


# --- the config, and the entities it should produce ----------------------------------------------------------------

def demo_config_text(port: int, enabled: bool = True, extra: bool = False, keepalive: Optional[int] = None) -> str:
    """config/demo.yaml as scripts/demo.sh runs it (its broker's port), optionally with discovery off, the extras or
    another MQTT keepalive (which makes a reload replace the MQTT client)."""
    text = re.sub(r"(?m)^  port: .*$", f"  port: {port}", connected_only(DEMO_CONFIG.read_text()))
    if keepalive is not None:
        text, n = re.subn(r"(?m)^  keepalive: .*$", f"  keepalive: {keepalive}", text)
        assert n == 1, "demo.yaml no longer sets mqtt.keepalive"
    if not enabled:
        text, n = re.subn(r"(?m)^(homeassistant:\n  enabled:) true$", r"\1 false", text)
        assert n == 1, "demo.yaml no longer has `homeassistant: enabled: true`"
    if extra:
        text, n = re.subn(r"(?m)^(        retain: true\n)", lambda m: m.group(1) + EXTRA_CHANNEL, text, count=1)
        assert n == 1, "demo.yaml no longer has the strap's retained battery channel"
        text = text.rstrip("\n") + "\n" + EXTRA_DEVICE
    return text


def connected_only(text: str) -> str:
    """The demo config without its passive part (the `adverts:` section and the devices with `advert:`): these tests
    cover the connected devices, and their bench runs no broadcaster; Tests/integration/test_adverts.py covers
    broadcasts."""
    text = re.sub(r"(?m)^(# Passive sensors:.*\n(#.*\n)*)?adverts:\n(  .*\n|\n)*", "", text)
    entries = re.split(r"(?m)^(?=  - name: )", text)
    return "".join(e for e in entries if not re.search(r"(?m)^    advert: ", e))


@dataclass
class Channel:
    name: str
    keys: dict[str, str] = field(default_factory=dict)


@dataclass
class Device:
    name: str
    address: str = ""
    channels: list[Channel] = field(default_factory=list)

    @property
    def node(self) -> str:
        return "gattbridge_" + self.address.replace(":", "").upper()


def parse_devices(text: str) -> list[Device]:
    """The `devices:` list of a config in the demo's block layout (enough YAML to count entities from the config)."""
    devices: list[Device] = []
    in_devices = False
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if not line.startswith(" "):
            in_devices = line.startswith("devices:")
            continue
        if not in_devices:
            continue
        if m := re.fullmatch(r"  - name: (.+)", line):
            devices.append(Device(unquote(m.group(1))))
        elif m := re.fullmatch(r"    address: (.+)", line):
            devices[-1].address = unquote(m.group(1))
        elif m := re.fullmatch(r"      - name: (.+)", line):
            devices[-1].channels.append(Channel(unquote(m.group(1))))
        elif m := re.fullmatch(r"        (\w+): (.+)", line):
            devices[-1].channels[-1].keys[m.group(1)] = unquote(m.group(2))
    return devices


def unquote(value: str) -> str:
    value = value.strip()
    return value[1:-1] if len(value) >= 2 and value[0] == value[-1] == '"' else value


def components(channel: Channel) -> list[str]:
    """The Home Assistant platforms a channel is announced as (docs/dev/ARCHITECTURE.md, Home Assistant discovery API)."""
    announced = channel.keys.get("homeassistant", "sensor")
    writable = channel.keys.get("writable") == "true"
    codec = channel.keys["codec"]
    if announced in ("switch", "light") and writable:
        return [announced]
    if announced != "sensor":
        return ["binary_sensor"]
    if codec == "text":
        return ["sensor", "text"] if writable else ["sensor"]
    if codec == "bool" and "values" not in channel.keys:
        return ["binary_sensor"]
    return ["sensor"]


def expected_configs(devices: list[Device]) -> dict[str, tuple[Device, Optional[Channel], str]]:
    """Discovery topic → (device, channel or None for the RSSI sensor, component): one per channel entity, plus one
    RSSI diagnostic sensor per device."""
    out: dict[str, tuple[Device, Optional[Channel], str]] = {}
    for device in devices:
        for channel in device.channels:
            for component in components(channel):
                out[f"{PREFIX}/{component}/{device.node}/{channel.name}/config"] = (device, channel, component)
        out[f"{PREFIX}/sensor/{device.node}/rssi/config"] = (device, None, "sensor")
    return out


# --- the daemon, and Home Assistant's view of the broker -----------------------------------------------------------

class Demo:
    """The daemon running a demo config, the test's all-topics subscriber (`mqtt`) and the devices of its config."""

    def __init__(self, bench, run_gattbridge, mosquitto, mqtt, tmp_path: Path, **config):
        self.bench, self.mosquitto, self.mqtt = bench, mosquitto, mqtt
        self.path = tmp_path / "demo.yaml"
        self.write(**config)
        self.process = run_gattbridge(["run", "-c", self.path, "--log-level", "debug"])
        self.bridge = Bridge(self.process, self.path, BASE)

    def write(self, **config) -> None:
        text = demo_config_text(self.mosquitto.port, **config)
        self.path.write_text(text)
        self.devices = parse_devices(text)
        self.expected = expected_configs(self.devices)

    def reload(self, **config) -> None:
        self.write(**config)
        self.process.signal(signal.SIGHUP)

    def device(self, name: str) -> Device:
        return next(d for d in self.devices if d.name == name)

    def topic(self, *levels: str) -> str:
        return "/".join((BASE, *levels))

    def wait_all_online(self, since: int = 0, timeout: float = 25.0) -> None:
        for device in self.devices:
            if device.address in SERVED:
                self.bridge.wait_online(self.mqtt, device.name, timeout, since)

    def last_payload(self, topic: str) -> Optional[bytes]:
        seen = self.mqtt.received(topic)
        return seen[-1].payload if seen else None

    def retained_configs(self) -> dict[str, bytes]:
        """What Home Assistant is handed when it subscribes now: the retained messages under the discovery prefix."""
        return {topic: payload for topic, payload in retained(self.bench, self.mosquitto, f"{PREFIX}/#").items()
                if topic != SENTINEL}

    def validate(self, configs: dict[str, bytes]) -> ValidationReport:
        own = {topic: payload for topic, payload in configs.items()
               if re.fullmatch(rf"{PREFIX}/[a-z_]+/gattbridge_[0-9A-F]{{12}}/[A-Za-z0-9_-]+/config", topic)}
        return validate_discovery(own, self.last_payload, discovery_prefix=PREFIX)

    def wait_config(self, topic: str, predicate: Callable[[dict], bool], timeout: float = 10.0, since: int = 0) -> dict:
        def ok(message) -> bool:
            return bool(message.payload) and predicate(message.json())
        return self.mqtt.wait_for(topic, ok, timeout, since).json()


SERVED = {"C0:FF:EE:00:00:01", "C0:FF:EE:00:00:02", "C0:FF:EE:00:00:03"}   # the bench's demo peripherals


def retained(bench, broker, filter_: str) -> dict[str, bytes]:
    """Every retained message under `filter_`, as a subscriber arriving now receives them."""
    return retained_messages(broker, filter_, SENTINEL)


@pytest.fixture
def demo_peripherals(peripheral):
    return {"heart_rate": peripheral("heart_rate"), "hm10": peripheral("hm10"), "led": peripheral("led")}


def start_demo(bench, run_gattbridge, mosquitto, mqtt, tmp_path, **config) -> Demo:
    demo = Demo(bench, run_gattbridge, mosquitto, mqtt, tmp_path, **config)
    mqtt.wait_for(demo.topic("bridge", "state"), "online", 15)
    return demo


def settle_with_states(demo: Demo, peripherals) -> None:
    """Every device online, a real payload on every state topic (the serial line through the announced text entity's
    command topic), and the strap's configs updated with what its Device Information says."""
    demo.wait_all_online()
    strap = demo.device("heart-rate-strap")
    demo.wait_config(f"{PREFIX}/sensor/{strap.node}/heart_rate/config",
                     lambda c: c["device"].get("model") == heart_rate.MODEL, 15)
    serial = demo.wait_config(f"{PREFIX}/text/{demo.device('hm10').node}/serial/config", lambda c: True)
    demo.mqtt.publish(serial["command_topic"], "hello from HA")
    peripherals["hm10"].wait_for({"event": "line", "text": "hello from HA"}, 10)
    demo.mqtt.wait_for(serial["state_topic"], "hello from HA", 10)
    for topic in ("heart-rate-strap/heart_rate", "heart-rate-strap/battery", "desk-led/led"):
        demo.mqtt.wait_for(demo.topic(*topic.split("/")), None, 15)
    for device in demo.devices:
        demo.mqtt.wait_for(demo.topic(device.name, "rssi"), None, 10)


def wait_retained_configs(demo: Demo, expected: set[str], timeout: float = 15.0) -> dict[str, bytes]:
    """Polls Home Assistant's view until it holds exactly `expected` among gattbridge's configs."""
    deadline = time.monotonic() + timeout
    while True:
        configs = demo.retained_configs()
        own = {t for t in configs if "/gattbridge_" in t and f"/{BRIDGE_NODE}" not in t}
        if own == expected:
            return configs
        if time.monotonic() > deadline:
            raise AssertionError(f"retained gattbridge configs differ: missing {sorted(expected - own)}, "
                                 f"unexpected {sorted(own - expected)}")
        time.sleep(0.2)


# --- 1. one valid config per channel entity and device --------------------------------------------------------------

def test_every_channel_and_device_has_one_valid_config(bench, run_gattbridge, gattbridge_bin, mosquitto, mqtt,
                                                       demo_peripherals, tmp_path):
    demo = start_demo(bench, run_gattbridge, mosquitto, mqtt, tmp_path)
    settle_with_states(demo, demo_peripherals)
    assert [d.name for d in demo.devices] == ["heart-rate-strap", "hm10", "desk-led"]
    assert len(demo.expected) == 8     # strap: 2 channels + RSSI; hm10: serial sensor + text + RSSI; led: switch + RSSI

    configs = wait_retained_configs(demo, set(demo.expected))
    report = demo.validate(configs)
    report.raise_if_invalid()
    assert set(report.entities) == set(demo.expected)
    assert report.removed == []

    version = bench.run_gattbridge(["--version"], binary=gattbridge_bin, name="version")
    assert version.wait(10) == 0
    sw_version = version.stdout.strip()

    for topic, entity in report.entities.items():
        device, channel, component = demo.expected[topic]
        config = entity.config
        assert entity.component == component, topic
        assert config["unique_id"].startswith(device.node + "_"), config["unique_id"]
        # The device block ties every entity of one peripheral together, by its Bluetooth address.
        block = config["device"]
        assert block["identifiers"] == [device.node], block
        assert block["name"] == device.name, block
        assert block["connections"] == [["bluetooth", device.address]], block
        assert config["origin"]["name"] == "gattbridge" and config["origin"]["sw_version"] == sw_version, config
        # Unavailable unless both the bridge and this device are online.
        assert [a["topic"] for a in config["availability"]] == [demo.topic("bridge", "state"),
                                                                demo.topic(device.name, "availability")], config
        assert all(a.get("payload_available", "online") == "online"
                   and a.get("payload_not_available", "offline") == "offline" for a in config["availability"])
        assert config["availability_mode"] == "all", config
        # docs/mqtt.md topics.
        if channel is None:
            assert config["state_topic"] == demo.topic(device.name, "rssi")
            assert config["entity_category"] == "diagnostic" and config["device_class"] == "signal_strength"
            assert config["unit_of_measurement"] == "dBm"
        else:
            assert config["name"] == channel.name
            assert config["state_topic"] == demo.topic(device.name, channel.name)
            if component in ("switch", "text"):
                assert config["command_topic"] == demo.topic(device.name, channel.name, "set")
        # The strap serves Device Information (0x180A): model and manufacturer reach Home Assistant's device page.
        if device.name == "heart-rate-strap":
            assert block.get("model") == heart_rate.MODEL and block.get("manufacturer") == heart_rate.MANUFACTURER, \
                block
        else:
            assert "model" not in block and "manufacturer" not in block, block

    # Heart rate: the bpm is the state, the rest of the JSON its attributes.
    hr = report.entities[f"{PREFIX}/sensor/{demo.device('heart-rate-strap').node}/heart_rate/config"].config
    assert hr["value_template"] == "{{ value_json.bpm }}" and hr["unit_of_measurement"] == "bpm"
    battery = report.entities[f"{PREFIX}/sensor/{demo.device('heart-rate-strap').node}/battery/config"].config
    assert battery["device_class"] == "battery" and battery["unit_of_measurement"] == "%"
    assert demo.last_payload(battery["state_topic"]) == b"87"
    cleared = [m.topic for m in mqtt.received(f"{PREFIX}/+/+/+/config") if not m.payload]
    assert cleared == [], f"configs cleared during a plain start-up: {cleared}"
    demo.bridge.assert_running()


# --- 2. the LED through the announced switch -------------------------------------------------------------------------

def test_switching_the_led_through_the_announced_command_topic(bench, run_gattbridge, mosquitto, mqtt,
                                                              demo_peripherals, tmp_path):
    demo = start_demo(bench, run_gattbridge, mosquitto, mqtt, tmp_path)
    demo.wait_all_online()
    led = demo_peripherals["led"]
    topic = f"{PREFIX}/switch/{demo.device('desk-led').node}/led/config"
    switch = json.loads(wait_retained_configs(demo, set(demo.expected))[topic])
    assert (switch["payload_on"], switch["payload_off"], switch["state_on"], switch["state_off"]) == \
        ("ON", "OFF", "ON", "OFF")
    mqtt.wait_for(switch["state_topic"], switch["state_off"], 15)     # the LED starts off
    led.wait_for({"event": "state", "led": "00"}, 5)

    for command, state, byte in ((switch["payload_on"], switch["state_on"], "01"),
                                 (switch["payload_off"], switch["state_off"], "00"),
                                 (switch["payload_on"], switch["state_on"], "01")):
        mark, led_mark = mqtt.mark(), led.mark()
        mqtt.publish(switch["command_topic"], command)
        led.wait_for({"event": "state", "led": byte}, 5, since=led_mark)
        # Read back at once (the channel is polled only every 5 s): Home Assistant's switch follows within a second.
        shown = mqtt.wait_for(switch["state_topic"], None, 3, since=mark)
        assert shown.text == state, f"after {command!r} the switch state shows {shown.text!r}"
        # And Home Assistant takes that state: the whole discovery still validates against it.
        demo.validate({topic: json.dumps(switch)}).raise_if_invalid()
    demo.bridge.assert_running()


# --- 3. Home Assistant's birth message -------------------------------------------------------------------------------

def test_birth_message_republishes_every_config_and_the_current_states(bench, run_gattbridge, mosquitto, mqtt,
                                                                       demo_peripherals, tmp_path):
    demo = start_demo(bench, run_gattbridge, mosquitto, mqtt, tmp_path)
    settle_with_states(demo, demo_peripherals)
    before = wait_retained_configs(demo, set(demo.expected))

    # Published on connect only: without a birth message nothing comes again.
    mark = mqtt.mark()
    mqtt.publish(f"{PREFIX}/status", "online")
    for topic, payload in before.items():
        if topic in demo.expected:
            again = mqtt.wait_for(topic, lambda m: bool(m.payload), 5, since=mark)
            assert again.json() == json.loads(payload), topic
    # Current states, including those only published on change (availability, RSSI) or on a line (serial), and the
    # battery, which is polled every 60 s.
    for device in demo.devices:
        mqtt.wait_for(demo.topic(device.name, "availability"), "online", 5, since=mark)
        mqtt.wait_for(demo.topic(device.name, "rssi"), demo.last_payload(demo.topic(device.name, "rssi")).decode(),
                      5, since=mark)
    mqtt.wait_for(demo.topic("hm10", "serial"), "hello from HA", 5, since=mark)
    mqtt.wait_for(demo.topic("heart-rate-strap", "battery"), "87", 5, since=mark)
    mqtt.wait_for(demo.topic("desk-led", "led"), "OFF", 5, since=mark)
    assert not [m for m in mqtt.received(f"{PREFIX}/+/+/+/config", mark) if not m.payload], "a birth cleared configs"
    # States follow the configs, once Home Assistant has had a moment to create the entities and subscribe.
    after = mqtt.messages[mark:]
    last_config = max(i for i, m in enumerate(after) if m.topic in demo.expected)
    first_state = min(i for i, m in enumerate(after) if m.topic == demo.topic("hm10", "serial"))
    assert first_state > last_config

    # Home Assistant's will (`offline`) asks for nothing; a later birth republishes again.
    mqtt.publish(f"{PREFIX}/status", "offline")
    mark = mqtt.mark()
    mqtt.publish(f"{PREFIX}/status", "online")
    strap = demo.device("heart-rate-strap")
    again = demo.wait_config(f"{PREFIX}/sensor/{strap.node}/heart_rate/config", lambda c: True, 5, since=mark)
    assert again["device"]["model"] == heart_rate.MODEL      # the identity read earlier is kept
    demo.validate(demo.retained_configs()).raise_if_invalid()
    demo.bridge.assert_running()


def test_birth_is_still_answered_after_a_reload_replaced_the_mqtt_client(bench, run_gattbridge, mosquitto, mqtt,
                                                                          demo_peripherals, tmp_path):
    demo = start_demo(bench, run_gattbridge, mosquitto, mqtt, tmp_path)
    demo.wait_all_online()
    wait_retained_configs(demo, set(demo.expected))
    mqtt.publish(demo.topic("hm10", "serial", "set"), "before reload")
    mqtt.wait_for(demo.topic("hm10", "serial"), "before reload", 10)

    mark = mqtt.mark()
    demo.reload(keepalive=20)          # new MQTT settings: the service connects a new client, without subscriptions
    mqtt.wait_for(demo.topic("bridge", "state"), "online", 15, since=mark)
    for topic in demo.expected:        # published again on the new client's connect
        mqtt.wait_for(topic, lambda m: bool(m.payload), 10, since=mark)

    mark = mqtt.mark()
    mqtt.publish(f"{PREFIX}/status", "online")
    for topic in demo.expected:
        mqtt.wait_for(topic, lambda m: bool(m.payload), 5, since=mark)
    # The last serial line comes again only in answer to a birth (a broker reconnect republishes retained state only).
    mqtt.wait_for(demo.topic("hm10", "serial"), "before reload", 5, since=mark)
    demo.bridge.assert_running()


# --- 4. clearing configs that left the config ------------------------------------------------------------------------

def test_reload_clears_the_configs_of_a_removed_channel_and_device(bench, run_gattbridge, mosquitto, mqtt,
                                                                  demo_peripherals, tmp_path):
    demo = start_demo(bench, run_gattbridge, mosquitto, mqtt, tmp_path, extra=True)
    assert len(demo.expected) == 11    # the demo's 8 + battery_raw + the spare sensor's temperature and RSSI
    with_extras = set(demo.expected)
    demo.wait_all_online()
    wait_retained_configs(demo, with_extras)

    mark = mqtt.mark()
    demo.reload()
    removed = sorted(with_extras - set(demo.expected))
    strap, spare = demo.device("heart-rate-strap").node, "gattbridge_C0FFEE00000F"
    assert removed == sorted([f"{PREFIX}/sensor/{strap}/battery_raw/config",
                              f"{PREFIX}/sensor/{spare}/temperature/config",
                              f"{PREFIX}/sensor/{spare}/rssi/config"])
    for topic in removed:
        mqtt.wait_for(topic, lambda m: m.payload == b"", 10, since=mark)
    # Home Assistant arriving now finds only the current configs, all valid once the strap is back.
    wait_retained_configs(demo, set(demo.expected))
    # The strap's config changed, so its session restarted; the other two kept theirs.
    demo.bridge.wait_online(mqtt, "heart-rate-strap", 25, since=mark)
    demo.wait_config(f"{PREFIX}/sensor/{strap}/heart_rate/config",
                     lambda c: c["device"].get("model") == heart_rate.MODEL, 15, since=mark)
    mqtt.publish(demo.topic("hm10", "serial", "set"), "after reload")
    mqtt.wait_for(demo.topic("hm10", "serial"), "after reload", 10)
    for topic in ("heart_rate", "battery", "rssi"):
        mqtt.wait_for(demo.topic("heart-rate-strap", topic), lambda m: bool(m.payload), 15, since=mark)
    configs = wait_retained_configs(demo, set(demo.expected))
    demo.validate(configs).raise_if_invalid()
    # Nothing that stayed was cleared.
    cleared = {m.topic for m in mqtt.received(f"{PREFIX}/+/+/+/config", mark) if not m.payload}
    assert cleared == set(removed)
    demo.bridge.assert_running()


def test_start_up_clears_own_leftovers_and_leaves_other_integrations_alone(bench, run_gattbridge, mosquitto, mqtt,
                                                                          demo_peripherals, tmp_path):
    leftover_device = f"{PREFIX}/sensor/gattbridge_C0FFEE0000FF/old/config"           # a device no longer configured
    leftover_channel = f"{PREFIX}/binary_sensor/gattbridge_C0FFEE000001/old_channel/config"  # a configured device
    foreign = f"{PREFIX}/sensor/zigbee_abc/x/config"
    foreign_payload = json.dumps({"name": "x", "state_topic": "zigbee2mqtt/abc", "unique_id": "zigbee_abc_x"})
    # Leftovers of this bridge carry its availability topic (every config it publishes does); that is how it tells
    # its own from another bridge's.
    for topic in (leftover_device, leftover_channel):
        mqtt.publish(topic, json.dumps({"name": "old", "state_topic": "gattbridge/old/old", "unique_id": "old",
                                        "availability": [{"topic": "gattbridge/bridge/state"}]}), retain=True)
    mqtt.publish(foreign, foreign_payload, retain=True)
    assert set(retained(bench, mosquitto, f"{PREFIX}/#")) == {leftover_device, leftover_channel, foreign}

    mark = mqtt.mark()
    demo = start_demo(bench, run_gattbridge, mosquitto, mqtt, tmp_path)
    for topic in (leftover_device, leftover_channel):
        mqtt.wait_for(topic, lambda m: m.payload == b"", 10, since=mark)
    configs = wait_retained_configs(demo, set(demo.expected))
    assert configs.get(foreign) == foreign_payload.encode(), "another integration's config was touched"
    assert [m.payload for m in mqtt.received(foreign, mark)] == [], "the bridge published to a foreign config"
    assert {t for t in configs if f"/{BRIDGE_NODE}" not in t} == set(demo.expected) | {foreign}
    cleared = {m.topic for m in mqtt.received(f"{PREFIX}/+/+/+/config", mark) if not m.payload}
    assert cleared == {leftover_device, leftover_channel}
    demo.bridge.assert_running()


# --- 5. discovery off --------------------------------------------------------------------------------------------------

def test_nothing_is_published_for_home_assistant_when_disabled(bench, run_gattbridge, mosquitto, mqtt,
                                                              demo_peripherals, tmp_path):
    # A leftover config would be cleared when enabled; disabled, the bridge must not touch it either.
    leftover = f"{PREFIX}/sensor/gattbridge_C0FFEE0000FF/old/config"
    mqtt.publish(leftover, json.dumps({"name": "old", "state_topic": "x/y", "unique_id": "old"}), retain=True)
    mark = mqtt.mark()
    demo = start_demo(bench, run_gattbridge, mosquitto, mqtt, tmp_path, enabled=False)
    demo.wait_all_online()
    mqtt.wait_for(demo.topic("desk-led", "led"), None, 10)
    mqtt.wait_for(demo.topic("heart-rate-strap", "battery"), None, 10)
    mqtt.publish(f"{PREFIX}/status", "online")          # a birth message gets no answer either
    # Absence needs a margin: the strap's Device Information is read (and would be announced) right after connecting.
    time.sleep(2.0)
    ours = [(m.topic, m.text) for m in mqtt.received(f"{PREFIX}/#", mark)]
    assert ours == [(f"{PREFIX}/status", "online")], f"published under {PREFIX}/ although disabled: {ours}"
    assert set(retained(bench, mosquitto, f"{PREFIX}/#")) == {leftover}
    demo.bridge.assert_running()


# --- 6. bridge events and the command log ---------------------------------------------------------------------------

def events_of(mqtt, device: str, since: int = 0) -> list[dict]:
    return [e for e in (m.json() for m in mqtt.received(f"{BASE}/bridge/event", since)) if e.get("device") == device]


def test_bridge_events_and_rejected_commands(bench, run_gattbridge, mosquitto, mqtt, demo_peripherals, wait_until,
                                            tmp_path):
    demo = start_demo(bench, run_gattbridge, mosquitto, mqtt, tmp_path)
    demo.wait_all_online()
    event_topic = demo.topic("bridge", "event")
    for device in demo.devices:
        mqtt.wait_for(event_topic, lambda m, d=device.name: m.json() == {"type": "connected", "device": d}, 5)

    led = demo_peripherals["led"]
    mark = mqtt.mark()
    led.kill()
    demo.bridge.wait_availability(mqtt, "desk-led", "offline", 10, since=mark)
    gone = mqtt.wait_for(event_topic, lambda m: m.json().get("type") == "disconnected"
                         and m.json().get("device") == "desk-led", 5, since=mark).json()
    assert list(gone) == ["type", "reason", "device"] and isinstance(gone["reason"], str) and gone["reason"], gone
    attempt = mqtt.wait_for(event_topic, lambda m: m.json().get("type") == "reconnect_attempt"
                            and m.json().get("device") == "desk-led", 10, since=mark).json()
    assert list(attempt) == ["type", "attempt", "delay_ms", "device"], attempt
    assert isinstance(attempt["attempt"], int) and attempt["attempt"] >= 1, attempt
    assert isinstance(attempt["delay_ms"], int) and attempt["delay_ms"] >= 0, attempt
    # Reconnecting to a peripheral that is away fails: each failure is an error event, with what went wrong.
    error = mqtt.wait_for(event_topic, lambda m: m.json().get("type") == "error"
                          and m.json().get("device") == "desk-led", 20, since=mark).json()
    assert list(error) == ["type", "message", "device"] and isinstance(error["message"], str) and error["message"]
    # The other devices are not disturbed.
    others = [e for e in (m.json() for m in mqtt.received(event_topic, mark)) if e.get("device") != "desk-led"]
    assert others == [], others

    back = mqtt.mark()
    led.start()
    demo.bridge.wait_online(mqtt, "desk-led", 30, since=back)
    mqtt.wait_for(event_topic, lambda m: m.json() == {"type": "connected", "device": "desk-led"}, 5, since=back)
    sequence = [e["type"] for e in events_of(mqtt, "desk-led", mark)]
    assert sequence[0] == "disconnected" and sequence[-1] == "connected", sequence
    assert set(sequence) <= {"disconnected", "reconnect_attempt", "error", "connected"}, sequence

    # Rejected commands (docs/mqtt.md): each reported on B/bridge/log with the command's topic.
    for topic, payload in ((demo.topic("desk-led", "led", "set"), "BLINK"),                   # bad payload
                           (demo.topic("desk-led", "nope", "set"), "ON"),                     # unknown channel
                           (demo.topic("heart-rate-strap", "battery", "set"), "50")):         # not writable
        mark = mqtt.mark()
        mqtt.publish(topic, payload)
        entry = wait_log(mqtt, demo.bridge, topic, 10, since=mark)
        assert entry["topic"] == topic
    # And the LED still works after all that.
    mark, led_mark = mqtt.mark(), led.mark()
    mqtt.publish(demo.topic("desk-led", "led", "set"), "ON")
    led.wait_for({"event": "state", "led": "01"}, 5, since=led_mark)
    mqtt.wait_for(demo.topic("desk-led", "led"), "ON", 5, since=mark)
    demo.bridge.assert_running()


# --- 7. buttons: an event entity and device triggers (docs/home-assistant.md) -------------------------------------------------------

BUTTON_ADDRESS = "C0:FF:EE:00:00:05"
BUTTON_NODE = "gattbridge_C0FFEE000005"
# Never served: keeps the config's device list non-empty once the remote is removed.
SPARE = device("spare-sensor", "C0:FF:EE:00:00:0F", [channel("temperature", "181a/2a6e", "int16")])


def button_config_text(port: int, spelling: str, with_remote: bool = True) -> str:
    remote = device("remote", BUTTON_ADDRESS, [
        channel("button", button.CHARACTERISTIC, "hex", mode="notify", homeassistant=spelling,
                values={name: byte.hex() for name, byte in button.ACTIONS.items()})])
    doc = {"mqtt": {"host": "127.0.0.1", "port": port, "client_id": f"gattbridge-ha-{time.monotonic_ns()}",
                    "base_topic": BASE, "keepalive": 10},
           "homeassistant": {"enabled": True, "discovery_prefix": PREFIX},
           "devices": ([remote] if with_remote else []) + [SPARE]}
    return to_yaml(doc) + "\n"


BUTTON_EVENT = f"{PREFIX}/event/{BUTTON_NODE}/button/config"
BUTTON_TRIGGERS = {name: f"{PREFIX}/device_automation/{BUTTON_NODE}/button_{name}/config" for name in button.ACTIONS}
BUTTON_CONFIGS = {BUTTON_EVENT, *BUTTON_TRIGGERS.values(), f"{PREFIX}/sensor/{BUTTON_NODE}/rssi/config"}
SPARE_CONFIGS = {f"{PREFIX}/sensor/gattbridge_C0FFEE00000F/temperature/config",
                 f"{PREFIX}/sensor/gattbridge_C0FFEE00000F/rssi/config"}


class ButtonBridge:
    """The daemon with the remote (the bench's button) and a spare device, and Home Assistant's view of it."""

    def __init__(self, bench, run_gattbridge, mosquitto, mqtt, tmp_path: Path, spelling: str):
        self.bench, self.mosquitto, self.mqtt, self.spelling = bench, mosquitto, mqtt, spelling
        self.path = tmp_path / "buttons.yaml"
        self.path.write_text(button_config_text(mosquitto.port, spelling))
        self.process = run_gattbridge(["run", "-c", self.path, "--log-level", "debug"])
        self.bridge = Bridge(self.process, self.path, BASE)
        mqtt.wait_for(f"{BASE}/bridge/state", "online", 15)

    def reload_without_remote(self) -> None:
        self.path.write_text(button_config_text(self.mosquitto.port, self.spelling, with_remote=False))
        self.process.signal(signal.SIGHUP)

    def last_payload(self, topic: str) -> Optional[bytes]:
        seen = self.mqtt.received(topic)
        return seen[-1].payload if seen else None

    def retained_configs(self, expected: set[str], timeout: float = 15.0) -> dict[str, bytes]:
        deadline = time.monotonic() + timeout
        while True:
            configs = {t: p for t, p in retained(self.bench, self.mosquitto, f"{PREFIX}/#").items()
                       if t != SENTINEL and f"/{BRIDGE_NODE}" not in t}
            if set(configs) == expected:
                return configs
            if time.monotonic() > deadline:
                raise AssertionError(f"retained configs differ: missing {sorted(expected - set(configs))}, "
                                     f"unexpected {sorted(set(configs) - expected)}")
            time.sleep(0.2)

    def validate_remote(self, configs: dict[str, bytes]) -> ValidationReport:
        own = {t: p for t, p in configs.items() if f"/{BUTTON_NODE}/" in t}
        return validate_discovery(own, self.last_payload, discovery_prefix=PREFIX)


def test_button_is_announced_as_event_and_device_triggers_and_removal_clears_them(bench, run_gattbridge, mosquitto,
                                                                                  mqtt, peripheral, tmp_path):
    peripheral("button", address=BUTTON_ADDRESS)
    # `device_trigger` is the second spelling of `event`: both announce the entity and the triggers.
    bridge = ButtonBridge(bench, run_gattbridge, mosquitto, mqtt, tmp_path, "device_trigger")
    bridge.bridge.wait_online(mqtt, "remote", 25)
    mqtt.wait_for(f"{BASE}/remote/rssi", None, 10)
    configs = bridge.retained_configs(BUTTON_CONFIGS | SPARE_CONFIGS)
    report = bridge.validate_remote(configs)
    report.raise_if_invalid()
    assert {e.component for e in report.entities.values()} == {"event", "device_automation", "sensor"}

    event = report.entities[BUTTON_EVENT].config
    assert event["event_types"] == list(button.ACTIONS)
    assert event["state_topic"] == f"{BASE}/remote/button"
    assert [a["topic"] for a in event["availability"]] == [f"{BASE}/bridge/state", f"{BASE}/remote/availability"]
    for name, topic in BUTTON_TRIGGERS.items():
        trigger = report.entities[topic].config
        assert (trigger["automation_type"], trigger["type"], trigger["subtype"]) == ("trigger", "action", name)
        assert trigger["topic"] == event["state_topic"]
        # The trigger fires for its own event type only.
        for other in button.ACTIONS:
            rendered = render_value_template(trigger["value_template"], json.dumps({"event_type": other}))
            assert (rendered == trigger["payload"]) == (other == name), (topic, other)
        # Under the same device as the event entity, which is how the automation editor finds it.
        assert trigger["device"] == event["device"]

    mark = mqtt.mark()
    bridge.reload_without_remote()
    for topic in BUTTON_CONFIGS:
        mqtt.wait_for(topic, lambda m: m.payload == b"", 10, since=mark)
    bridge.retained_configs(SPARE_CONFIGS)
    cleared = {m.topic for m in mqtt.received(f"{PREFIX}/+/+/+/config", mark) if not m.payload}
    assert cleared == BUTTON_CONFIGS
    bridge.bridge.assert_running()


def test_button_presses_are_published_as_events(bench, run_gattbridge, mosquitto, mqtt, peripheral, tmp_path):
    remote = peripheral("button", address=BUTTON_ADDRESS)
    bridge = ButtonBridge(bench, run_gattbridge, mosquitto, mqtt, tmp_path, "event")
    bridge.bridge.wait_online(mqtt, "remote", 25)      # online: the button's notifications are subscribed
    configs = bridge.retained_configs(BUTTON_CONFIGS | SPARE_CONFIGS)
    state = f"{BASE}/remote/button"
    for name in ("press", "double_press", "press", "long_press"):
        mark = mqtt.mark()
        remote.notify(button.CHARACTERISTIC, button.ACTIONS[name])
        message = mqtt.wait_for(state, None, 5, since=mark)
        assert message.text == json.dumps({"event_type": name}, separators=(",", ":"))
        # Home Assistant's event entity takes it, and exactly one trigger fires.
        bridge.validate_remote(configs).raise_if_invalid()
    # A value outside `values` is its own event type (docs/home-assistant.md).
    mark = mqtt.mark()
    remote.notify(button.CHARACTERISTIC, b"\x7f")
    assert mqtt.wait_for(state, None, 5, since=mark).json() == {"event_type": "7f"}
    # Never retained: Home Assistant would fire the last event again whenever it subscribes.
    assert state not in retained(bench, mosquitto, "#")
    bridge.bridge.assert_running()


# --- the bridge's own device (docs/adapters.md) ------------------------------------------------------------------------------

def test_the_bridge_itself_is_a_device_with_diagnostic_sensors(bench, run_gattbridge, mosquitto, mqtt,
                                                               demo_peripherals, tmp_path):
    demo = start_demo(bench, run_gattbridge, mosquitto, mqtt, tmp_path)
    demo.wait_all_online()
    mqtt.wait_for(demo.topic("bridge", "diagnostics"), lambda m: m.json()["devices_online"] == 3, 15)
    mqtt.wait_for(demo.topic("bridge", "adapters"), None, 10)

    def bridge_configs():
        return {t: p for t, p in demo.retained_configs().items() if f"/{BRIDGE_NODE}" in t}
    deadline = time.monotonic() + 15
    while not any(t.endswith("/adapter_hci0/config") for t in bridge_configs()):
        assert time.monotonic() < deadline, f"no adapter sensor among {sorted(bridge_configs())}"
        time.sleep(0.2)
    configs = bridge_configs()
    # Home Assistant's checks, with the templates rendered against the bridge's real retained states.
    report = validate_discovery(configs, demo.last_payload, discovery_prefix=PREFIX)
    report.raise_if_invalid()
    objects = {t.split("/")[3] for t in configs}
    assert {"devices_online", "buffered_messages", "dropped_messages", "adapter_hci0"} <= objects, objects
    for entity in report.entities.values():
        config = entity.config
        assert config["entity_category"] == "diagnostic", config
        assert config["device"]["name"].startswith("gattbridge bridge "), config
        assert [a["topic"] for a in config["availability"]] == [demo.topic("bridge", "state")], config
    online = next(e for t, e in report.entities.items() if t.endswith("/devices_online/config"))
    assert render_value_template(online.config["value_template"],
                                 demo.last_payload(demo.topic("bridge", "diagnostics")).decode()) == "3"
    adapter = next(e for t, e in report.entities.items() if t.endswith("/adapter_hci0/config"))
    assert render_value_template(adapter.config["value_template"],
                                 demo.last_payload(demo.topic("bridge", "adapters")).decode()) == "ok"
