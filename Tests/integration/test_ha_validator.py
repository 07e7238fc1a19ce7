"""Unit tests of ha_validator itself: the bench demo's discovery passes, and each kind of fault Home Assistant would
reject (or silently mishandle) is reported. No bench, broker or daemon needed."""

from __future__ import annotations

import copy
import json

import pytest

from ha_validator import render_value_template, validate_discovery

PREFIX = "homeassistant"


def _shared(device: str, address: str) -> dict:
    """The blocks every gattbridge entity of a device carries."""
    node = "gattbridge_" + address.replace(":", "")
    return {
        "qos": 1,
        "availability": [
            {"topic": "gattbridge/bridge/state", "payload_available": "online", "payload_not_available": "offline"},
            {"topic": f"gattbridge/{device}/availability", "payload_available": "online",
             "payload_not_available": "offline"},
        ],
        "availability_mode": "all",
        "device": {"identifiers": [node], "name": device, "connections": [["bluetooth", address]]},
        "origin": {"name": "gattbridge", "sw_version": "0.1.0"},
    }


def _rssi(device: str, address: str) -> dict:
    node = "gattbridge_" + address.replace(":", "")
    return {"name": "RSSI", "unique_id": f"{node}_rssi", "state_topic": f"gattbridge/{device}/rssi",
            "device_class": "signal_strength", "unit_of_measurement": "dBm", "state_class": "measurement",
            "entity_category": "diagnostic", **_shared(device, address)}


STRAP, HM10, LED = ("heart-rate-strap", "C0:FF:EE:00:00:01"), ("hm10", "C0:FF:EE:00:00:02"), \
    ("desk-led", "C0:FF:EE:00:00:03")

HR_TOPIC = "homeassistant/sensor/gattbridge_C0FFEE000001/heart_rate/config"
BATTERY_TOPIC = "homeassistant/sensor/gattbridge_C0FFEE000001/battery/config"
SERIAL_TOPIC = "homeassistant/sensor/gattbridge_C0FFEE000002/serial/config"
TEXT_TOPIC = "homeassistant/text/gattbridge_C0FFEE000002/serial/config"
SWITCH_TOPIC = "homeassistant/switch/gattbridge_C0FFEE000003/led/config"


def demo_configs() -> dict[str, dict]:
    """What HomeAssistantDiscovery publishes for config/demo.yaml (version 0.1.0)."""
    return {
        HR_TOPIC: {
            "name": "heart_rate", "unique_id": "gattbridge_C0FFEE000001_heart_rate",
            "state_topic": "gattbridge/heart-rate-strap/heart_rate", "value_template": "{{ value_json.bpm }}",
            "json_attributes_topic": "gattbridge/heart-rate-strap/heart_rate",
            "json_attributes_template": '{{ {"contact": value_json.contact, "energy_kj": value_json.energy_kj, '
                                        '"rr_ms": value_json.rr_ms} | tojson }}',
            "unit_of_measurement": "bpm", "state_class": "measurement", "icon": "mdi:heart-pulse", **_shared(*STRAP)},
        BATTERY_TOPIC: {
            "name": "battery", "unique_id": "gattbridge_C0FFEE000001_battery",
            "state_topic": "gattbridge/heart-rate-strap/battery", "device_class": "battery",
            "unit_of_measurement": "%", "state_class": "measurement", **_shared(*STRAP)},
        "homeassistant/sensor/gattbridge_C0FFEE000001/rssi/config": _rssi(*STRAP),
        SERIAL_TOPIC: {
            "name": "serial", "unique_id": "gattbridge_C0FFEE000002_serial", "state_topic": "gattbridge/hm10/serial",
            **_shared(*HM10)},
        TEXT_TOPIC: {
            "name": "serial", "unique_id": "gattbridge_C0FFEE000002_serial_text",
            "state_topic": "gattbridge/hm10/serial", "command_topic": "gattbridge/hm10/serial/set", "max": 255,
            **_shared(*HM10)},
        "homeassistant/sensor/gattbridge_C0FFEE000002/rssi/config": _rssi(*HM10),
        SWITCH_TOPIC: {
            "name": "led", "unique_id": "gattbridge_C0FFEE000003_led", "state_topic": "gattbridge/desk-led/led",
            "command_topic": "gattbridge/desk-led/led/set", "payload_on": "ON", "payload_off": "OFF",
            "state_on": "ON", "state_off": "OFF", **_shared(*LED)},
        "homeassistant/sensor/gattbridge_C0FFEE000003/rssi/config": _rssi(*LED),
    }


def demo_states() -> dict[str, str]:
    """Real payloads the bridge publishes for the bench's peripherals."""
    return {
        "gattbridge/bridge/state": "online",
        "gattbridge/heart-rate-strap/availability": "online",
        "gattbridge/hm10/availability": "online",
        "gattbridge/desk-led/availability": "offline",
        "gattbridge/heart-rate-strap/heart_rate": '{"bpm":72,"contact":true,"energy_kj":null,"rr_ms":[812.5,830]}',
        "gattbridge/heart-rate-strap/battery": "87",
        "gattbridge/heart-rate-strap/rssi": "-61",
        "gattbridge/hm10/serial": "hello from the HM-10",
        "gattbridge/hm10/rssi": "-70",
        "gattbridge/desk-led/led": "OFF",
        "gattbridge/desk-led/rssi": "-55",
    }


def serialized(configs: dict[str, dict]) -> dict[str, str]:
    return {topic: json.dumps(config) for topic, config in configs.items()}


def errors_for(configs: dict[str, dict | str], states: dict[str, str] | None = None) -> list[str]:
    report = validate_discovery(configs, demo_states() if states is None else states, discovery_prefix=PREFIX)
    return report.errors


def single_error(configs, states=None) -> str:
    errors = errors_for(configs, states)
    assert len(errors) == 1, errors
    return errors[0]


def mutated(topic: str, change) -> dict[str, dict]:
    configs = demo_configs()
    change(configs[topic])
    return configs


# ---------------------------------------------------------------- good configs


def test_demo_discovery_passes():
    report = validate_discovery(serialized(demo_configs()), demo_states(), discovery_prefix=PREFIX)
    assert report.errors == []
    assert report.ok
    report.raise_if_invalid()
    assert len(report.entities) == 8
    assert {e.component for e in report.entities.values()} == {"sensor", "text", "switch"}
    assert len(report.by_component("sensor")) == 6
    assert report.entities[HR_TOPIC].node_id == "gattbridge_C0FFEE000001"
    assert report.entities[HR_TOPIC].object_id == "heart_rate"


def test_payloads_may_be_bytes_and_states_a_callable():
    configs = {topic: payload.encode() for topic, payload in serialized(demo_configs()).items()}
    states = {topic: payload.encode() for topic, payload in demo_states().items()}
    report = validate_discovery(configs, states.get, discovery_prefix=PREFIX)
    assert report.errors == []


def test_abbreviations_and_topic_base_are_expanded():
    abbreviated = {
        "~": "gattbridge/heart-rate-strap", "name": "battery", "uniq_id": "x_battery", "stat_t": "~/battery",
        "dev_cla": "battery", "unit_of_meas": "%", "stat_cla": "measurement",
        "avty": [{"t": "gattbridge/bridge/state"}, {"t": "~/availability"}], "avty_mode": "all",
        "dev": {"ids": ["x"], "name": "strap", "cns": [["bluetooth", "C0:FF:EE:00:00:01"]], "mf": "Acme"},
        "o": {"name": "gattbridge", "sw": "0.1.0"},
    }
    report = validate_discovery({BATTERY_TOPIC: json.dumps(abbreviated)}, demo_states(), discovery_prefix=PREFIX)
    assert report.errors == []
    config = report.entities[BATTERY_TOPIC].config
    assert config["state_topic"] == "gattbridge/heart-rate-strap/battery"
    assert config["availability"][1]["topic"] == "gattbridge/heart-rate-strap/availability"
    assert config["device"]["manufacturer"] == "Acme"


def test_cleared_configs_are_listed_not_errors():
    configs = serialized(demo_configs())
    configs["homeassistant/sensor/gattbridge_C0FFEE000009/gone/config"] = ""
    report = validate_discovery(configs, demo_states(), discovery_prefix=PREFIX)
    assert report.errors == []
    assert report.removed == ["homeassistant/sensor/gattbridge_C0FFEE000009/gone/config"]


def test_light_basic_schema_passes():
    light = {k: v for k, v in demo_configs()[SWITCH_TOPIC].items() if k not in ("state_on", "state_off")}
    light["schema"] = "basic"
    topic = "homeassistant/light/gattbridge_C0FFEE000003/led/config"
    assert errors_for({topic: light}) == []


def test_heart_rate_templates_render_against_the_payload():
    payload = demo_states()["gattbridge/heart-rate-strap/heart_rate"]
    assert render_value_template("{{ value_json.bpm }}", payload) == "72"
    attributes = json.loads(render_value_template(demo_configs()[HR_TOPIC]["json_attributes_template"], payload))
    assert attributes == {"contact": True, "energy_kj": None, "rr_ms": [812.5, 830]}


# ---------------------------------------------------------------- schema faults


@pytest.mark.parametrize("topic, key, message", [
    (BATTERY_TOPIC, "state_topic", "required key(s) ['state_topic'] missing for the MQTT sensor platform"),
    (TEXT_TOPIC, "command_topic", "required key(s) ['command_topic'] missing for the MQTT text platform"),
    (SWITCH_TOPIC, "command_topic", "required key(s) ['command_topic'] missing for the MQTT switch platform"),
])
def test_missing_required_key(topic, key, message):
    assert message in single_error(mutated(topic, lambda c: c.pop(key)))


def test_missing_and_duplicate_unique_id():
    configs = demo_configs()
    del configs[BATTERY_TOPIC]["unique_id"]
    configs[SERIAL_TOPIC]["unique_id"] = configs[HR_TOPIC]["unique_id"]
    errors = errors_for(configs)
    assert len(errors) == 2, errors
    assert any(BATTERY_TOPIC in e and "no unique_id" in e for e in errors)
    assert any("is also used by" in e for e in errors)


@pytest.mark.parametrize("change, message", [
    (lambda c: c.update(unit_of_measurement="V"), "unit 'V' is not valid for device class 'battery'"),
    (lambda c: c.pop("unit_of_measurement"), "unit None is not valid for device class 'battery'"),
    (lambda c: c.update(state_class="total"), "state class 'total' is not valid for device class 'battery'"),
    (lambda c: c.update(state_class="average"), "state_class: 'average' is not one of"),
    (lambda c: c.update(device_class="batery"), "device_class: 'batery' is not one of"),
    (lambda c: c.update(entity_category="config"), "a sensor cannot have the entity category config"),
    (lambda c: c.update(entity_category="system"), "entity_category: 'system' is not one of"),
    (lambda c: c.update(qos=3), "qos must be 0, 1 or 2"),
    (lambda c: c.update(icon="heart"), 'icons are written "prefix:name"'),
    (lambda c: c.update(availability_mode="some"), "availability_mode: 'some' is not one of"),
    (lambda c: c.update(last_reset_value_template="{{ now() }}"), "cannot be used together with state class"),
    (lambda c: c.update(options=["a"]), "options is not allowed together with state_class"),
    (lambda c: c.update(payload_on="1"), "keys ['payload_on'] are not options of the MQTT sensor platform"),
])
def test_sensor_schema_faults(change, message):
    assert message in single_error(mutated(BATTERY_TOPIC, change))


@pytest.mark.parametrize("change, message", [
    (lambda c: c["device"].update(model_name="x"), "device has keys Home Assistant rejects: ['model_name']"),
    (lambda c: c.update(device={"name": "strap"}), "at least one identifying value"),
    (lambda c: c["device"].update(connections=[["bluetooth"]]), "a connection is a [type, value] pair"),
    (lambda c: c["device"].update(configuration_url="ftp://x"), "invalid URL"),
    (lambda c: c.update(origin={"sw_version": "1"}), "origin lacks required ['name']"),
    (lambda c: c["origin"].update(support_url="not a url"), "invalid URL"),
    (lambda c: c["availability"][0].pop("topic"), "availability[0] lacks required ['topic']"),
    (lambda c: c["availability"][0].update(qos=1), "availability[0] has keys Home Assistant rejects"),
    (lambda c: c.update(availability_topic="gattbridge/bridge/state"), "mutually exclusive"),
])
def test_device_origin_and_availability_faults(change, message):
    assert message in single_error(mutated(HR_TOPIC, change))


@pytest.mark.parametrize("topic, change, message", [
    (TEXT_TOPIC, lambda c: c.update(max=300), "max text length must be <= 255"),
    (TEXT_TOPIC, lambda c: c.update(min=10, max=5), "text length min must be <= max"),
    (TEXT_TOPIC, lambda c: c.update(mode="hidden"), "mode: 'hidden' is not one of"),
    (TEXT_TOPIC, lambda c: c.update(pattern="(["), "invalid regular expression"),
    (SWITCH_TOPIC, lambda c: c.update(device_class="door"), "device_class: 'door' is not one of"),
    (SWITCH_TOPIC, lambda c: c.update(optimistic="maybe"), "optimistic: expected a boolean"),
    (SWITCH_TOPIC, lambda c: c.update(command_topic="gattbridge/desk-led/#"), "wildcards cannot be used"),
])
def test_text_and_switch_faults(topic, change, message):
    assert message in single_error(mutated(topic, change))


def test_light_faults():
    topic = "homeassistant/light/gattbridge_C0FFEE000003/led/config"
    light = demo_configs()[SWITCH_TOPIC]   # keeps state_on/state_off, which the basic light schema does not have
    assert "keys ['state_off', 'state_on'] are not options of the MQTT light platform" in single_error({topic: light})
    assert "only the basic schema is checked" in single_error({topic: {**light, "schema": "json"}})


@pytest.mark.parametrize("state_topic, message", [
    ("gattbridge/+/battery", "uses wildcards"),
    ("gattbridge/#", "uses wildcards"),
    ("gattbridge/a+/battery", "single-level wildcard must occupy an entire level"),
    ("gattbridge/\u0007/battery", "must not contain control characters"),
    ("", "must not be empty"),
])
def test_malformed_topics(state_topic, message):
    assert message in single_error(mutated(BATTERY_TOPIC, lambda c: c.update(state_topic=state_topic)))


@pytest.mark.parametrize("topic, payload, message", [
    ("homeassistant/sensor/gattbridge_C0FFEE000001/heart rate/config", {}, "illegal discovery topic"),
    ("homeassistant/sensor/config", {}, "illegal discovery topic"),
    ("other/sensor/gattbridge_C0FFEE000001/x/config", {}, "not under the discovery prefix"),
    ("homeassistant/sensor/gattbridge_C0FFEE000001/x/config", "{not json", "unable to parse JSON"),
    ("homeassistant/sensor/gattbridge_C0FFEE000001/x/config", "[1, 2]", "must be a JSON object"),
    ("homeassistant/cover/gattbridge_C0FFEE000001/x/config", {"command_topic": "a"}, "is not one this validator"),
])
def test_bad_topics_and_payloads(topic, payload, message):
    assert message in single_error({topic: payload})


def test_template_syntax_error_is_a_schema_fault():
    configs = mutated(HR_TOPIC, lambda c: c.update(value_template="{{ value_json.bpm "))
    assert "value_template: invalid template" in single_error(configs)


# ---------------------------------------------------------------- faults against real payloads


def test_state_topic_without_a_message():
    states = demo_states()
    del states["gattbridge/hm10/rssi"]
    assert "state_topic 'gattbridge/hm10/rssi' has no message" in single_error(demo_configs(), states)


def test_availability_topic_without_a_message_or_with_a_foreign_payload():
    states = demo_states()
    del states["gattbridge/bridge/state"]
    errors = errors_for(demo_configs(), states)
    assert len(errors) == 8 and all("availability topic 'gattbridge/bridge/state' has no message" in e for e in errors)
    states = {**demo_states(), "gattbridge/hm10/availability": "connected"}
    errors = errors_for(demo_configs(), states)
    assert len(errors) == 3 and all("carries 'connected', neither of ['online', 'offline']" in e for e in errors)


@pytest.mark.parametrize("template, message", [
    ("{{ value_json.beats }}", "fails on payload"),                 # undefined: HA would log and show nothing
    ("{{ value_json.bpm / 0 }}", "fails on payload"),
    ("{{ value }}", "numeric sensor state"),                          # the whole JSON is no number
    ("{{ value_json.energy_kj }}", "renders to 'None'"),
])
def test_value_templates_against_the_heart_rate_payload(template, message):
    assert message in single_error(mutated(HR_TOPIC, lambda c: c.update(value_template=template)))


def test_attributes_must_render_to_an_object():
    configs = mutated(HR_TOPIC, lambda c: c.update(json_attributes_template="{{ value_json.rr_ms | tojson }}"))
    assert "are not a JSON object" in single_error(configs)
    configs = mutated(HR_TOPIC, lambda c: c.pop("json_attributes_template"))
    assert errors_for(configs) == []        # the payload itself is an object
    states = {**demo_states(), "gattbridge/heart-rate-strap/heart_rate": "72"}
    configs = mutated(HR_TOPIC, lambda c: (c.pop("json_attributes_template"), c.pop("value_template")))
    assert "attributes '72' are not a JSON object" in single_error(configs, states)


def test_numeric_sensor_states_must_be_numbers():
    states = {**demo_states(), "gattbridge/heart-rate-strap/battery": "full"}
    assert "numeric sensor state 'full' is not a number" in single_error(demo_configs(), states)
    states = {**demo_states(), "gattbridge/hm10/serial": "x" * 300}
    errors = errors_for(demo_configs(), states)
    assert len(errors) == 2, errors          # the sensor and the text entity both refuse it
    assert any("300 characters, more than 255" in e for e in errors)
    assert any("outside min 0 / max 255" in e for e in errors)


def test_switch_and_binary_sensor_states_must_match_their_payloads():
    states = {**demo_states(), "gattbridge/desk-led/led": "01"}
    assert "state '01' matches none of ['ON', 'OFF']" in single_error(demo_configs(), states)
    door = {"name": "door", "unique_id": "door", "state_topic": "gattbridge/desk-led/led",
            "payload_on": "true", "payload_off": "false", **_shared(*LED)}
    topic = "homeassistant/binary_sensor/gattbridge_C0FFEE000003/door/config"
    assert "state 'OFF' matches none of ['true', 'false']" in single_error({topic: door})
    assert errors_for({topic: {**door, "payload_on": "ON", "payload_off": "OFF"}}) == []


def test_report_raises_with_every_error():
    configs = copy.deepcopy(demo_configs())
    configs[BATTERY_TOPIC]["unit_of_measurement"] = "V"
    configs[SWITCH_TOPIC].pop("command_topic")
    report = validate_discovery(configs, demo_states(), discovery_prefix=PREFIX)
    assert not report.ok
    with pytest.raises(AssertionError) as raised:
        report.raise_if_invalid()
    assert "unit 'V'" in str(raised.value) and "command_topic" in str(raised.value)


# ---------------------------------------------------------------- event entities and device triggers (docs/home-assistant.md)

BUTTON = ("remote", "C0:FF:EE:00:00:05")
EVENT_TOPIC = "homeassistant/event/gattbridge_C0FFEE000005/button/config"
PRESS_TOPIC = "homeassistant/device_automation/gattbridge_C0FFEE000005/button_press/config"
DOUBLE_TOPIC = "homeassistant/device_automation/gattbridge_C0FFEE000005/button_double_press/config"


def button_configs() -> dict[str, dict]:
    """What HomeAssistantDiscovery publishes for a `homeassistant: event` channel with values press/double_press."""
    def trigger(subtype: str) -> dict:
        shared = _shared(*BUTTON)
        return {"automation_type": "trigger", "type": "action", "subtype": subtype,
                "topic": "gattbridge/remote/button", "value_template": "{{ value_json.event_type }}",
                "payload": subtype, "qos": 1, "device": shared["device"], "origin": shared["origin"]}

    return {
        EVENT_TOPIC: {"name": "button", "unique_id": "gattbridge_C0FFEE000005_button",
                      "state_topic": "gattbridge/remote/button", "event_types": ["press", "double_press"],
                      **_shared(*BUTTON)},
        PRESS_TOPIC: trigger("press"),
        DOUBLE_TOPIC: trigger("double_press"),
    }


def button_states(**extra: str) -> dict[str, str]:
    return {"gattbridge/bridge/state": "online", "gattbridge/remote/availability": "online", **extra}


def test_event_entity_and_device_triggers_pass_before_and_after_a_press():
    report = validate_discovery(serialized(button_configs()), button_states(), discovery_prefix=PREFIX)
    assert report.errors == []          # nothing pressed yet: no message on the state topic is fine for events
    assert {e.component for e in report.entities.values()} == {"event", "device_automation"}
    assert report.entities[PRESS_TOPIC].object_id == "button_press"
    pressed = button_states(**{"gattbridge/remote/button": '{"event_type":"double_press"}'})
    assert errors_for(button_configs(), pressed) == []


def test_trigger_templates_pick_their_event_type():
    payload = '{"event_type":"press"}'
    for topic, config in button_configs().items():
        if "device_automation" in topic:
            rendered = render_value_template(config["value_template"], payload)
            assert (rendered == config["payload"]) == (config["subtype"] == "press"), topic


def test_abbreviated_trigger_and_event_keys_are_expanded():
    configs = button_configs()
    event = configs[EVENT_TOPIC]
    event["evt_typ"] = event.pop("event_types")
    trigger = configs[PRESS_TOPIC]
    for long, short in (("automation_type", "atype"), ("subtype", "stype"), ("payload", "pl"), ("topic", "t"),
                        ("value_template", "val_tpl"), ("device", "dev")):
        trigger[short] = trigger.pop(long)
    assert errors_for(configs, button_states()) == []


def button_error(topic: str, change, states: dict[str, str] | None = None) -> str:
    configs = button_configs()
    change(configs[topic])
    errors = validate_discovery(configs, button_states() if states is None else states,
                                discovery_prefix=PREFIX).errors
    assert len(errors) == 1, errors
    return errors[0]


@pytest.mark.parametrize("change, message", [
    (lambda c: c.pop("event_types"), "required key(s) ['event_types'] missing for the MQTT event platform"),
    (lambda c: c.update(event_types=[]), "event_types is empty"),
    (lambda c: c.update(device_class="remote"), "device_class: 'remote' is not one of"),
    (lambda c: c.pop("unique_id"), "no unique_id"),
    (lambda c: c.update(payload_on="x"), "keys ['payload_on'] are not options of the MQTT event platform"),
])
def test_event_schema_faults(change, message):
    assert message in button_error(EVENT_TOPIC, change)


@pytest.mark.parametrize("payload, message", [
    ("press", "is not JSON"),
    ('{"type":"press"}', "has no event_type"),
    ('{"event_type":"triple_press"}', "event type 'triple_press' is not one of ['press', 'double_press']"),
])
def test_event_payloads_home_assistant_ignores(payload, message):
    states = button_states(**{"gattbridge/remote/button": payload})
    configs = {EVENT_TOPIC: button_configs()[EVENT_TOPIC]}
    assert message in single_error(configs, states)


@pytest.mark.parametrize("change, message", [
    (lambda c: c.pop("subtype"), "required key(s) ['subtype'] missing for the MQTT device_automation platform"),
    (lambda c: c.pop("device"), "required key(s) ['device'] missing"),
    (lambda c: c.update(automation_type="action"), "automation_type: 'action' is not one of ['trigger']"),
    (lambda c: c.update(topic="gattbridge/+/button"), "topic: 'gattbridge/+/button' uses wildcards"),
    (lambda c: c.update(topic="gattbridge/re#mote"), "topic: multi-level wildcard"),
    # Home Assistant's trigger schema drops entity keys: announcing them would be a config that does not do what
    # it says.
    (lambda c: c.update(unique_id="x"), "keys ['unique_id'] are not options of the MQTT device_automation platform"),
    (lambda c: c.update(availability_mode="all"), "['availability_mode'] are not options"),
    (lambda c: c.update(value_template="{{ value_json.event_type"), "value_template: invalid template"),
    (lambda c: c["device"].pop("identifiers") and c["device"].pop("connections"),
     "device must have at least one identifying value"),
])
def test_device_trigger_schema_faults(change, message):
    assert message in button_error(PRESS_TOPIC, change)


def test_device_trigger_template_must_render_against_a_real_payload():
    states = button_states(**{"gattbridge/remote/button": "not json"})
    configs = {PRESS_TOPIC: button_configs()[PRESS_TOPIC]}
    assert "value_template '{{ value_json.event_type }}' fails on payload 'not json'" in single_error(configs, states)
