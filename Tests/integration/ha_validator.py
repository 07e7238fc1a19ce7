"""Home Assistant's own MQTT discovery checks, applied to retained discovery configs without running Home Assistant.

Use it the way Home Assistant receives discovery: collect every retained message under `<prefix>/+/+/+/config` (and
`<prefix>/+/+/config`), plus the last message seen on every other topic, then

    report = validate_discovery(configs, last_payloads, discovery_prefix="homeassistant")
    report.raise_if_invalid()

`configs` maps topic → payload (str/bytes JSON, "" for a cleared config, or an already parsed dict);
`state_payloads` maps topic → the last payload seen there (or is a callable returning it, None when nothing was seen).

What is checked, following homeassistant/components/mqtt (discovery.py, abbreviations.py, schemas.py, config.py,
util.py and the sensor, binary_sensor, switch, light/schema_basic, text and event platforms, and device_trigger.py
for device_automation, 2024–2025):
  - the discovery topic matches Home Assistant's TOPIC_MATCHER (`<component>/[<node_id>/]<object_id>/config`, ids
    `[a-zA-Z0-9_-]+`) and names a platform this validator knows (sensor, binary_sensor, switch, light, text, event,
    device_automation);
  - the payload is a JSON object; abbreviations and `~` are expanded as Home Assistant does;
  - the platform's discovery schema: required keys (`state_topic` for read-only platforms, `command_topic` for
    switch/light/text), value types and allowed values (qos, device/state classes, entity categories, availability
    modes, light schema, text min/max ≤ 255, sensor `options` rules, `last_reset_value_template` only with `total`);
    the `device`, `origin` and `availability` blocks, which Home Assistant validates strictly (an unknown key there
    rejects the whole config); topic syntax (subscribe vs publish rules, no control characters) and template syntax;
  - unknown keys at the top level: Home Assistant silently drops them (REMOVE_EXTRA), so they are reported here as
    errors too, since a dropped key is a config that does not do what it says;
  - what the sensor entity enforces when it is added and updated: units valid for the device class, state classes
    valid for the device class, no `config` entity category on sensors, numeric states for numeric sensors;
  - device triggers (device_automation, TRIGGER_DISCOVERY_SCHEMA): `automation_type: trigger`, `type`, `subtype`,
    `topic` and `device` required; they are not entities, so name, unique_id and availability are unknown keys there;
  - beyond the schema: every entity config has a `unique_id`, unique across all configs; no topic uses wildcards;
    every topic Home Assistant subscribes to (state, attributes, availability) has a message, except the state topic
    of an event entity and the topic of a trigger (actions, which may not have happened yet); templates render with
    Jinja2 (sandboxed, undefined variables are errors) against that real payload, with `value` and `value_json` as
    Home Assistant provides them, and give a state the entity accepts (a number for numeric sensors, payload_on or
    payload_off for binary sensors, switches and lights, an availability payload for availability topics, a JSON
    object for attributes, a JSON object whose `event_type` is one of `event_types` for event entities).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment

__all__ = ["DiscoveryEntity", "ValidationReport", "validate_discovery", "SUPPORTED_COMPONENTS"]

SUPPORTED_COMPONENTS = ("sensor", "binary_sensor", "switch", "light", "text", "event", "device_automation")

# homeassistant/components/mqtt/discovery.py
TOPIC_MATCHER = re.compile(r"(?P<component>\w+)/(?:(?P<node_id>[a-zA-Z0-9_-]+)/)?(?P<object_id>[a-zA-Z0-9_-]+)/config")

MAX_LENGTH_STATE_STATE = 255  # homeassistant.const: longer states are refused
PAYLOAD_NONE = "None"  # an entity state of unknown

# The abbreviations Home Assistant expands for the keys of the platforms above (abbreviations.py).
ABBREVIATIONS = {
    "avty": "availability", "avty_mode": "availability_mode", "avty_t": "availability_topic",
    "avty_tpl": "availability_template", "cmd_t": "command_topic", "cmd_tpl": "command_template",
    "def_ent_id": "default_entity_id", "dev": "device", "dev_cla": "device_class", "e": "encoding",
    "en": "enabled_by_default", "ent_cat": "entity_category", "ent_pic": "entity_picture", "exp_aft": "expire_after",
    "frc_upd": "force_update", "ic": "icon", "json_attr_t": "json_attributes_topic",
    "json_attr_tpl": "json_attributes_template", "lrst_val_tpl": "last_reset_value_template", "o": "origin",
    "obj_id": "object_id", "off_dly": "off_delay", "on_cmd_type": "on_command_type", "ops": "options",
    "opt": "optimistic", "pl_avail": "payload_available", "pl_not_avail": "payload_not_available",
    "pl_off": "payload_off", "pl_on": "payload_on", "ptrn": "pattern", "ret": "retain", "stat_cla": "state_class",
    "stat_off": "state_off", "stat_on": "state_on", "stat_t": "state_topic", "stat_val_tpl": "state_value_template",
    "sug_dsp_prc": "suggested_display_precision", "t": "topic", "uniq_id": "unique_id",
    "unit_of_meas": "unit_of_measurement", "val_tpl": "value_template", "bri_cmd_t": "brightness_command_topic",
    "bri_cmd_tpl": "brightness_command_template", "bri_scl": "brightness_scale", "bri_stat_t": "brightness_state_topic",
    "bri_val_tpl": "brightness_value_template", "fx_cmd_t": "effect_command_topic", "fx_list": "effect_list",
    "fx_stat_t": "effect_state_topic", "fx_val_tpl": "effect_value_template", "whit_cmd_t": "white_command_topic",
    "whit_scl": "white_scale", "atype": "automation_type", "evt_typ": "event_types", "pl": "payload",
    "stype": "subtype",
}
DEVICE_ABBREVIATIONS = {
    "cns": "connections", "ids": "identifiers", "mf": "manufacturer", "mdl": "model", "mdl_id": "model_id",
    "hw": "hw_version", "sw": "sw_version", "sa": "suggested_area", "sn": "serial_number", "cu": "configuration_url",
}
ORIGIN_ABBREVIATIONS = {"sw": "sw_version", "url": "support_url"}

SENSOR_DEVICE_CLASSES = {
    "date", "enum", "timestamp", "absolute_humidity", "apparent_power", "aqi", "area", "atmospheric_pressure",
    "battery", "blood_glucose_concentration", "carbon_monoxide", "carbon_dioxide", "conductivity", "current",
    "data_rate", "data_size", "distance", "duration", "energy", "energy_distance", "energy_storage", "frequency",
    "gas", "humidity", "illuminance", "irradiance", "moisture", "monetary", "nitrogen_dioxide", "nitrogen_monoxide",
    "nitrous_oxide", "ozone", "ph", "pm1", "pm10", "pm25", "pm4", "power_factor", "power", "precipitation",
    "precipitation_intensity", "pressure", "reactive_energy", "reactive_power", "signal_strength", "sound_pressure",
    "speed", "sulphur_dioxide", "temperature", "volatile_organic_compounds", "volatile_organic_compounds_parts",
    "voltage", "volume", "volume_storage", "volume_flow_rate", "water", "weight", "wind_direction", "wind_speed",
}
NON_NUMERIC_SENSOR_DEVICE_CLASSES = {"date", "enum", "timestamp"}
SENSOR_STATE_CLASSES = {"measurement", "measurement_angle", "total", "total_increasing"}
_ALL_STATE_CLASSES = frozenset(SENSOR_STATE_CLASSES)
_MEASUREMENT = frozenset({"measurement"})
_TOTALS = frozenset({"total", "total_increasing"})
# sensor/const.py DEVICE_CLASS_STATE_CLASSES (classes not listed allow none).
DEVICE_CLASS_STATE_CLASSES: dict[str, frozenset[str]] = {
    **{dc: _MEASUREMENT for dc in (
        "apparent_power", "aqi", "atmospheric_pressure", "battery", "blood_glucose_concentration", "carbon_monoxide",
        "carbon_dioxide", "conductivity", "current", "data_rate", "energy_distance", "energy_storage", "frequency",
        "humidity", "illuminance", "irradiance", "moisture", "nitrogen_dioxide", "nitrogen_monoxide", "nitrous_oxide",
        "ozone", "ph", "pm1", "pm10", "pm25", "power_factor", "power", "precipitation_intensity", "pressure",
        "reactive_power", "signal_strength", "sound_pressure", "speed", "sulphur_dioxide", "temperature",
        "volatile_organic_compounds", "volatile_organic_compounds_parts", "voltage", "volume_storage",
        "volume_flow_rate", "wind_speed")},
    **{dc: _ALL_STATE_CLASSES for dc in ("area", "data_size", "distance", "duration", "precipitation")},
    **{dc: _TOTALS for dc in ("energy", "gas", "volume", "water")},
    "monetary": frozenset({"total"}),
    "weight": frozenset({"measurement", "total", "total_increasing"}),
    "wind_direction": frozenset({"measurement_angle"}),
    "date": frozenset(), "enum": frozenset(), "timestamp": frozenset(),
}
# sensor/const.py DEVICE_CLASS_UNITS, for the device classes with short, fixed unit sets (others are not checked).
DEVICE_CLASS_UNITS: dict[str, frozenset[str | None]] = {
    "battery": frozenset({"%"}), "humidity": frozenset({"%"}), "moisture": frozenset({"%"}),
    "illuminance": frozenset({"lx"}), "signal_strength": frozenset({"dB", "dBm"}),
    "carbon_monoxide": frozenset({"ppm"}), "carbon_dioxide": frozenset({"ppm"}),
    "temperature": frozenset({"°C", "°F", "K"}), "current": frozenset({"A", "mA"}),
    "voltage": frozenset({"V", "mV", "µV", "kV", "MV"}),
    "power": frozenset({"mW", "W", "kW", "MW", "GW", "TW"}),
    "frequency": frozenset({"Hz", "kHz", "MHz", "GHz"}),
    "aqi": frozenset({None}), "ph": frozenset({None}), "power_factor": frozenset({"%", None}),
    "wind_direction": frozenset({"°"}),
    **{dc: frozenset({"µg/m³"}) for dc in ("nitrogen_dioxide", "nitrogen_monoxide", "nitrous_oxide", "ozone", "pm1",
                                           "pm10", "pm25", "pm4", "sulphur_dioxide", "volatile_organic_compounds")},
    "date": frozenset({None}), "enum": frozenset({None}), "timestamp": frozenset({None}),
}
BINARY_SENSOR_DEVICE_CLASSES = {
    "battery", "battery_charging", "carbon_monoxide", "cold", "connectivity", "door", "garage_door", "gas", "heat",
    "light", "lock", "moisture", "motion", "moving", "occupancy", "opening", "plug", "power", "presence", "problem",
    "running", "safety", "smoke", "sound", "tamper", "update", "vibration", "window",
}
SWITCH_DEVICE_CLASSES = {"outlet", "switch"}
EVENT_DEVICE_CLASSES = {"button", "doorbell", "motion"}
ENTITY_CATEGORIES = {"config", "diagnostic"}
AVAILABILITY_MODES = {"all", "any", "latest"}


class Invalid(Exception):
    """One schema violation; the message names the key."""


# ---------------------------------------------------------------- value validators (homeassistant.helpers.config_validation)

def _string(value: Any) -> str:
    if value is None or isinstance(value, (list, dict)):
        raise Invalid(f"expected a string, got {value!r}")
    return value if isinstance(value, str) else str(value)


def _optional_string(value: Any) -> str | None:
    return None if value is None else _string(value)


def _boolean(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        lowered = value.lower().strip()
        if lowered in ("1", "true", "yes", "on", "enable"):
            return True
        if lowered in ("0", "false", "no", "off", "disable"):
            return False
    elif isinstance(value, (int, float)):
        return bool(value)
    raise Invalid(f"expected a boolean, got {value!r}")


def _positive_int(value: Any) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise Invalid(f"expected an integer, got {value!r}") from None
    if isinstance(value, bool) or number < 0:
        raise Invalid(f"expected a positive integer, got {value!r}")
    return number


def _int_at_least_1(value: Any) -> int:
    number = _positive_int(value)
    if number < 1:
        raise Invalid(f"expected an integer >= 1, got {value!r}")
    return number


def _qos(value: Any) -> int:
    number = _positive_int(value)
    if number not in (0, 1, 2):
        raise Invalid(f"qos must be 0, 1 or 2, got {value!r}")
    return number


def _one_of(choices: set[str], lower: bool = False) -> Callable[[Any], str]:
    def check(value: Any) -> str:
        text = _string(value)
        if lower:
            text = text.lower()
        if text not in choices:
            raise Invalid(f"{value!r} is not one of {sorted(choices)}")
        return text
    return check


def _or_none(check: Callable[[Any], Any]) -> Callable[[Any], Any]:
    return lambda value: None if value is None else check(value)


def _icon(value: Any) -> str:
    text = _string(value)
    if ":" not in text:
        raise Invalid('icons are written "prefix:name"')
    return text


def _url(value: Any) -> str:
    text = _string(value)
    parsed = urlparse(text)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise Invalid(f"invalid URL {text!r} (http or https required)")
    return text


def _configuration_url(value: Any) -> str:
    text = _string(value)
    if text.startswith("homeassistant://"):
        return text
    return _url(text)


def _regex(value: Any) -> str:
    text = _string(value)
    try:
        re.compile(text)
    except re.error as err:
        raise Invalid(f"invalid regular expression {text!r}: {err}") from None
    return text


def _string_list(value: Any) -> list[str]:
    items = value if isinstance(value, list) else [value]
    return [_string(item) for item in items]


def _valid_topic(value: Any) -> str:
    topic = _string(value)
    raw = topic.encode("utf-8", errors="strict")
    if not raw:
        raise Invalid("MQTT topic name/filter must not be empty")
    if len(raw) > 65535:
        raise Invalid("MQTT topic name/filter must not be longer than 65535 encoded bytes")
    if any(char <= "\u001f" or "\u007f" <= char <= "\u009f" for char in topic):
        raise Invalid("MQTT topic name/filter must not contain control characters")
    if any("\ufdd0" <= char <= "\ufdef" or (ord(char) & 0xFFFF) in (0xFFFE, 0xFFFF) for char in topic):
        raise Invalid("MQTT topic name/filter must not contain non-characters")
    return topic


def _subscribe_topic(value: Any) -> str:
    topic = _valid_topic(value)
    for index, char in enumerate(topic):
        if char == "+" and ((index > 0 and topic[index - 1] != "/")
                            or (index < len(topic) - 1 and topic[index + 1] != "/")):
            raise Invalid("single-level wildcard must occupy an entire level of the filter")
    hash_index = topic.find("#")
    if hash_index != -1:
        if hash_index != len(topic) - 1:
            raise Invalid("multi-level wildcard must be the last character in the topic filter")
        if len(topic) > 1 and topic[hash_index - 1] != "/":
            raise Invalid("multi-level wildcard must be after a topic level separator")
    return topic


def _publish_topic(value: Any) -> str:
    topic = _valid_topic(value)
    if "+" in topic or "#" in topic:
        raise Invalid("wildcards cannot be used in topic names")
    return topic


_ENV = ImmutableSandboxedEnvironment(undefined=jinja2.StrictUndefined)


_NO_DEFAULT = object()


def _ha_float(value: Any, default: Any = _NO_DEFAULT) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        if default is _NO_DEFAULT:
            raise
        return default


def _ha_int(value: Any, default: Any = _NO_DEFAULT, base: int = 10) -> int:
    try:
        return int(value, base) if isinstance(value, str) and base != 10 else int(float(value))
    except (TypeError, ValueError):
        if default is _NO_DEFAULT:
            raise
        return default


def _ha_is_number(value: Any) -> bool:
    try:
        return math.isfinite(float(value))
    except (TypeError, ValueError):
        return False


# The Home Assistant filters a value template commonly uses, so such templates compile here too.
_ENV.filters.update({
    "to_json": lambda value, **kwargs: json.dumps(value, **kwargs), "from_json": json.loads,
    "float": _ha_float, "int": _ha_int, "is_number": _ha_is_number,
    "iif": lambda value, if_true=True, if_false=False, if_none=False: (if_none if value is None else
                                                                        if_true if value else if_false),
})
_ENV.globals.update({"float": _ha_float, "int": _ha_int, "is_number": _ha_is_number})


def _template(value: Any) -> str:
    if isinstance(value, (list, dict)):
        raise Invalid("template value should be a string")
    text = str(value)
    try:
        _ENV.from_string(text)
    except jinja2.TemplateError as err:
        raise Invalid(f"invalid template {text!r}: {err}") from None
    return text


# ---------------------------------------------------------------- schemas (schemas.py, config.py, platforms)

Schema = dict[str, Callable[[Any], Any]]

DEVICE_SCHEMA: Schema = {
    "identifiers": _string_list, "connections": lambda value: [_connection(item) for item in
                                                               (value if isinstance(value, list) else [value])],
    "manufacturer": _string, "model": _string, "model_id": _string, "name": _string, "hw_version": _string,
    "serial_number": _string, "sw_version": _string, "via_device": _string, "suggested_area": _string,
    "configuration_url": _configuration_url,
}
ORIGIN_SCHEMA: Schema = {"name": _string, "sw_version": _string, "support_url": _configuration_url}
AVAILABILITY_ITEM_SCHEMA: Schema = {
    "topic": _subscribe_topic, "payload_available": _string, "payload_not_available": _string,
    "value_template": _template,
}


def _connection(value: Any) -> list[str]:
    if not isinstance(value, list) or len(value) != 2:
        raise Invalid(f"a connection is a [type, value] pair, got {value!r}")
    return [_string(item) for item in value]


def _strict(schema: Schema, what: str, required: tuple[str, ...] = ()) -> Callable[[Any], dict[str, Any]]:
    """A vol.Schema with the default PREVENT_EXTRA: unknown keys invalidate the whole config."""
    def check(value: Any) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise Invalid(f"{what} must be an object, got {value!r}")
        unknown = sorted(set(value) - set(schema))
        if unknown:
            raise Invalid(f"{what} has keys Home Assistant rejects: {unknown}")
        missing = [key for key in required if key not in value]
        if missing:
            raise Invalid(f"{what} lacks required {missing}")
        return {key: _at(f"{what}.{key}", schema[key], item) for key, item in value.items()}
    return check


def _at(path: str, check: Callable[[Any], Any], value: Any) -> Any:
    try:
        return check(value)
    except Invalid as err:
        message = str(err)
        raise Invalid(message if message.startswith(path) else f"{path}: {message}") from None


def _device(value: Any) -> dict[str, Any]:
    device = _strict(DEVICE_SCHEMA, "device")(value)
    if not device.get("identifiers") and not device.get("connections"):
        raise Invalid("device must have at least one identifying value in 'identifiers' and/or 'connections'")
    return device


def _availability_list(value: Any) -> list[dict[str, Any]]:
    items = value if isinstance(value, list) else [value]
    return [_strict(AVAILABILITY_ITEM_SCHEMA, f"availability[{index}]", required=("topic",))(item)
            for index, item in enumerate(items)]


COMMON_SCHEMA: Schema = {
    # config.py SCHEMA_BASE
    "qos": _qos, "encoding": _string,
    # schemas.py availability
    "availability_topic": _subscribe_topic, "availability_template": _template, "payload_available": _string,
    "payload_not_available": _string, "availability_mode": _one_of(AVAILABILITY_MODES),
    "availability": _availability_list,
    # schemas.py MQTT_ENTITY_COMMON_SCHEMA
    "device": _device, "origin": _strict(ORIGIN_SCHEMA, "origin", required=("name",)),
    "enabled_by_default": _boolean, "entity_category": _one_of(ENTITY_CATEGORIES), "icon": _icon,
    "json_attributes_topic": _subscribe_topic, "json_attributes_template": _template, "object_id": _string,
    "default_entity_id": _string, "entity_picture": _url, "unique_id": _string,
}
RO_SCHEMA: Schema = {"state_topic": _subscribe_topic, "value_template": _template}
RW_SCHEMA: Schema = {"command_topic": _publish_topic, "optimistic": _boolean, "retain": _boolean,
                     "state_topic": _subscribe_topic}

PLATFORM_SCHEMAS: dict[str, tuple[Schema, tuple[str, ...]]] = {
    "sensor": ({**COMMON_SCHEMA, **RO_SCHEMA,
                "device_class": _or_none(_one_of(SENSOR_DEVICE_CLASSES, lower=True)), "expire_after": _positive_int,
                "force_update": _boolean, "last_reset_value_template": _template, "name": _optional_string,
                "options": _string_list, "suggested_display_precision": _positive_int,
                "state_class": _or_none(_one_of(SENSOR_STATE_CLASSES, lower=True)),
                "unit_of_measurement": _optional_string}, ("state_topic",)),
    "binary_sensor": ({**COMMON_SCHEMA, **RO_SCHEMA,
                       "device_class": _or_none(_one_of(BINARY_SENSOR_DEVICE_CLASSES, lower=True)),
                       "expire_after": _positive_int, "force_update": _boolean, "name": _optional_string,
                       "off_delay": _positive_int, "payload_off": _string, "payload_on": _string},
                      ("state_topic",)),
    "switch": ({**COMMON_SCHEMA, **RW_SCHEMA,
                "command_template": _template, "name": _optional_string, "payload_off": _string,
                "payload_on": _string, "state_off": _string, "state_on": _string, "value_template": _template,
                "device_class": _or_none(_one_of(SWITCH_DEVICE_CLASSES, lower=True))}, ("command_topic",)),
    "light": ({**COMMON_SCHEMA, **RW_SCHEMA,
               "schema": _one_of({"basic", "json", "template"}, lower=True),
               "brightness_command_template": _template, "brightness_command_topic": _publish_topic,
               "brightness_scale": _int_at_least_1, "brightness_state_topic": _subscribe_topic,
               "brightness_value_template": _template, "effect_command_topic": _publish_topic,
               "effect_list": _string_list, "effect_state_topic": _subscribe_topic,
               "effect_value_template": _template, "name": _optional_string,
               "on_command_type": _one_of({"first", "last", "brightness"}), "payload_off": _string,
               "payload_on": _string, "state_value_template": _template, "white_command_topic": _publish_topic,
               "white_scale": _int_at_least_1}, ("command_topic",)),
    "text": ({**COMMON_SCHEMA, **RW_SCHEMA,
              "command_template": _template, "name": _optional_string, "max": _positive_int, "min": _positive_int,
              "mode": _one_of({"text", "password"}), "pattern": _regex, "value_template": _template},
             ("command_topic",)),
    # event.py
    "event": ({**COMMON_SCHEMA, **RO_SCHEMA,
               "device_class": _or_none(_one_of(EVENT_DEVICE_CLASSES, lower=True)), "name": _optional_string,
               "event_types": _string_list}, ("state_topic", "event_types")),
    # device_automation.py + device_trigger.py TRIGGER_DISCOVERY_SCHEMA (MQTT_BASE_SCHEMA: qos, encoding). The topic
    # is a plain string there but goes through the MQTT trigger's valid_subscribe_topic when an automation attaches.
    # `origin` is checked (and logged) by discovery.py for every component before the platform sees the payload.
    "device_automation": ({"qos": _qos, "encoding": _string, "origin": COMMON_SCHEMA["origin"],
                           "automation_type": _one_of({"trigger"}), "device": _device,
                           "payload": _optional_string, "subtype": _string, "topic": _subscribe_topic,
                           "type": _string, "value_template": _or_none(_template)},
                          ("automation_type", "device", "subtype", "topic", "type")),
}
# Not entities: Home Assistant keeps no unique_id and no availability for them.
NON_ENTITY_COMPONENTS = {"device_automation"}

# Topics Home Assistant subscribes to, by platform (beyond json_attributes_topic and availability).
SUBSCRIBED_TOPIC_KEYS = ("state_topic", "json_attributes_topic", "availability_topic",
                         "brightness_state_topic", "effect_state_topic", "topic")
PUBLISHED_TOPIC_KEYS = ("command_topic", "brightness_command_topic", "effect_command_topic", "white_command_topic")


# ---------------------------------------------------------------- results

@dataclass
class DiscoveryEntity:
    topic: str
    component: str
    node_id: str | None
    object_id: str
    config: dict[str, Any]

    @property
    def discovery_id(self) -> str:
        return f"{self.node_id} {self.object_id}" if self.node_id else self.object_id


@dataclass
class ValidationReport:
    entities: dict[str, DiscoveryEntity] = field(default_factory=dict)   # topic → entity
    removed: list[str] = field(default_factory=list)                      # topics whose payload is "" (cleared)
    errors: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors

    def raise_if_invalid(self) -> None:
        if self.errors:
            raise AssertionError("invalid Home Assistant discovery:\n  " + "\n  ".join(self.errors))

    def by_component(self, component: str) -> list[DiscoveryEntity]:
        return [entity for entity in self.entities.values() if entity.component == component]


# ---------------------------------------------------------------- validation

PayloadSource = Mapping[str, "str | bytes"] | Callable[[str], "str | bytes | None"]


def validate_discovery(configs: Mapping[str, str | bytes | dict[str, Any]], state_payloads: PayloadSource,
                       discovery_prefix: str = "homeassistant") -> ValidationReport:
    """Checks every config as Home Assistant would on receiving it, then the states it would receive."""
    report = ValidationReport()
    lookup = state_payloads if callable(state_payloads) else state_payloads.get
    unique_ids: dict[str, str] = {}
    for topic in sorted(configs):
        entity = _check_config(topic, configs[topic], discovery_prefix, report)
        if entity is None:
            continue
        report.entities[topic] = entity
        unique_id = entity.config.get("unique_id")
        if entity.component in NON_ENTITY_COMPONENTS:
            pass
        elif unique_id is None:
            report.errors.append(f"{topic}: no unique_id (the entity cannot be managed or tied to its device)")
        elif unique_id in unique_ids:
            report.errors.append(f"{topic}: unique_id {unique_id!r} is also used by {unique_ids[unique_id]}")
        else:
            unique_ids[unique_id] = topic
        for error in _check_states(entity, lookup):
            report.errors.append(f"{topic}: {error}")
    return report


def _check_config(topic: str, payload: str | bytes | dict[str, Any], prefix: str,
                  report: ValidationReport) -> DiscoveryEntity | None:
    if not topic.startswith(prefix + "/"):
        report.errors.append(f"{topic}: not under the discovery prefix {prefix!r}")
        return None
    match = TOPIC_MATCHER.fullmatch(topic[len(prefix) + 1:])
    if match is None:
        report.errors.append(f"{topic}: illegal discovery topic (ids must be [a-zA-Z0-9_-]+)")
        return None
    component, node_id, object_id = match.group("component", "node_id", "object_id")
    if isinstance(payload, bytes):
        payload = payload.decode("utf-8")
    if payload == "":
        report.removed.append(topic)
        return None
    if isinstance(payload, str):
        try:
            payload = json.loads(payload)
        except ValueError as err:
            report.errors.append(f"{topic}: unable to parse JSON: {err}")
            return None
    if not isinstance(payload, dict):
        report.errors.append(f"{topic}: the payload must be a JSON object")
        return None
    if component not in PLATFORM_SCHEMAS:
        report.errors.append(f"{topic}: component {component!r} is not one this validator knows "
                             f"({', '.join(SUPPORTED_COMPONENTS)})")
        return None
    try:
        config = _validate_platform(component, _expand(payload))
    except Invalid as err:
        report.errors.append(f"{topic}: {err}")
        return None
    return DiscoveryEntity(topic, component, node_id, object_id, config)


def _expand(payload: dict[str, Any]) -> dict[str, Any]:
    """Abbreviations and the `~` topic base, as discovery.py expands them before validation."""
    config = {ABBREVIATIONS.get(key, key): value for key, value in payload.items()}
    for key, abbreviations in (("device", DEVICE_ABBREVIATIONS), ("origin", ORIGIN_ABBREVIATIONS)):
        if isinstance(config.get(key), dict):
            config[key] = {abbreviations.get(k, k): v for k, v in config[key].items()}
    if isinstance(config.get("availability"), list):
        config["availability"] = [{ABBREVIATIONS.get(k, k): v for k, v in item.items()} if isinstance(item, dict)
                                  else item for item in config["availability"]]
    if "~" in config:
        base = config.pop("~")
        for key, value in list(config.items()):
            if key.endswith("topic") and isinstance(value, str) and value:
                if value.startswith("~"):
                    value = base + value[1:]
                if value.endswith("~"):
                    value = value[:-1] + base
                config[key] = value
        for item in config.get("availability") or []:
            if isinstance(item, dict) and isinstance(item.get("topic"), str) and item["topic"]:
                item["topic"] = (base + item["topic"][1:]) if item["topic"].startswith("~") else item["topic"]
                item["topic"] = (item["topic"][:-1] + base) if item["topic"].endswith("~") else item["topic"]
    return config


def _validate_platform(component: str, config: dict[str, Any]) -> dict[str, Any]:
    schema, required = PLATFORM_SCHEMAS[component]
    if component == "light" and str(config.get("schema", "basic")).lower() != "basic":
        raise Invalid(f"light schema {config['schema']!r}: only the basic schema is checked here")
    unknown = sorted(set(config) - set(schema))
    if unknown:
        raise Invalid(f"keys {unknown} are not options of the MQTT {component} platform "
                      "(Home Assistant drops them silently)")
    missing = [key for key in required if key not in config]
    if missing:
        raise Invalid(f"required key(s) {missing} missing for the MQTT {component} platform")
    if "availability" in config and "availability_topic" in config:
        raise Invalid("availability and availability_topic are mutually exclusive")
    result = {key: _at(key, schema[key], value) for key, value in config.items()}
    for key in SUBSCRIBED_TOPIC_KEYS:
        if key in result and ("+" in result[key] or "#" in result[key]):
            raise Invalid(f"{key}: {result[key]!r} uses wildcards; gattbridge announces concrete topics")
    for index, item in enumerate(result.get("availability", [])):
        if "+" in item["topic"] or "#" in item["topic"]:
            raise Invalid(f"availability[{index}].topic: {item['topic']!r} uses wildcards")
    {"sensor": _sensor_rules, "text": _text_rules, "event": _event_rules}.get(component, lambda _: None)(result)
    return result


def _sensor_rules(config: dict[str, Any]) -> None:
    """sensor.py validate_sensor_state_and_device_class_config, plus what SensorEntity enforces when added."""
    state_class, device_class = config.get("state_class"), config.get("device_class")
    unit = config.get("unit_of_measurement")
    if "last_reset_value_template" in config and state_class != "total":
        raise Invalid(f"last_reset_value_template cannot be used together with state class {state_class!r}")
    if (options := config.get("options")) is not None:
        if not options:
            raise Invalid("an empty options list is not allowed")
        if state_class or unit:
            raise Invalid("options is not allowed together with state_class or unit_of_measurement")
        if device_class != "enum":
            raise Invalid(f"options must be used together with device class enum, got {device_class!r}")
    if config.get("entity_category") == "config":
        raise Invalid("a sensor cannot have the entity category config")
    if device_class in DEVICE_CLASS_UNITS and unit not in DEVICE_CLASS_UNITS[device_class]:
        allowed = sorted(str(u) for u in DEVICE_CLASS_UNITS[device_class])
        raise Invalid(f"unit {unit!r} is not valid for device class {device_class!r} (valid: {allowed})")
    if state_class and device_class in DEVICE_CLASS_STATE_CLASSES \
            and state_class not in DEVICE_CLASS_STATE_CLASSES[device_class]:
        raise Invalid(f"state class {state_class!r} is not valid for device class {device_class!r} "
                      f"(valid: {sorted(DEVICE_CLASS_STATE_CLASSES[device_class])})")
    if state_class == "measurement_angle" and unit != "°":
        raise Invalid("state class measurement_angle needs the unit °")


def _text_rules(config: dict[str, Any]) -> None:
    """text.py valid_text_size_configuration."""
    minimum, maximum = config.get("min", 0), config.get("max", MAX_LENGTH_STATE_STATE)
    if minimum > maximum:
        raise Invalid("text length min must be <= max")
    if maximum > MAX_LENGTH_STATE_STATE:
        raise Invalid(f"max text length must be <= {MAX_LENGTH_STATE_STATE}")


def _event_rules(config: dict[str, Any]) -> None:
    """EventEntity: an event whose type is not in event_types is refused, so an empty list refuses every event."""
    if not config["event_types"]:
        raise Invalid("event_types is empty: Home Assistant would refuse every event")


# ---------------------------------------------------------------- states: topics that exist, templates that render

def _numeric_state_expected(config: dict[str, Any]) -> bool:
    """SensorEntity._numeric_state_expected."""
    device_class = config.get("device_class")
    if device_class in NON_NUMERIC_SENSOR_DEVICE_CLASSES:
        return False
    if config.get("state_class") or config.get("unit_of_measurement") is not None \
            or config.get("suggested_display_precision") is not None:
        return True
    return device_class is not None


def render_value_template(template: str, payload: str) -> str:
    """MqttValueTemplate.async_render_with_possible_json_value: `value` is the payload, `value_json` its JSON when it
    parses; the result is stripped. Raises jinja2.TemplateError (undefined variables included) or whatever the
    template raises (a division by zero)."""
    variables: dict[str, Any] = {"value": payload}
    try:
        variables["value_json"] = json.loads(payload)
    except ValueError:
        pass
    return _ENV.from_string(template).render(**variables).strip()


def _check_states(entity: DiscoveryEntity, lookup: Callable[[str], str | bytes | None]) -> list[str]:
    config, errors = entity.config, []

    def message_on(topic: str, role: str) -> str | None:
        raw = lookup(topic)
        if raw is None:
            errors.append(f"{role} {topic!r} has no message: nothing ever published there")
            return None
        return raw.decode(config.get("encoding") or "utf-8", errors="replace") if isinstance(raw, bytes) else raw

    def render(template: str | None, payload: str, role: str) -> str | None:
        if template is None:
            return payload
        try:
            return render_value_template(template, payload)
        except Exception as err:  # noqa: BLE001 - jinja2.TemplateError, or what the template itself raised
            errors.append(f"{role} {template!r} fails on payload {payload!r}: {err}")
            return None

    # Availability: every topic must carry one of its two payloads.
    if "availability_topic" in config:
        items = [{"topic": config["availability_topic"], "value_template": config.get("availability_template"),
                  "payload_available": config.get("payload_available", "online"),
                  "payload_not_available": config.get("payload_not_available", "offline")}]
    else:
        items = config.get("availability", [])
    for item in items:
        payload = message_on(item["topic"], "availability topic")
        if payload is None:
            continue
        value = render(item.get("value_template"), payload, "availability template")
        expected = (item.get("payload_available", "online"), item.get("payload_not_available", "offline"))
        if value is not None and value not in expected:
            errors.append(f"availability topic {item['topic']!r} carries {value!r}, neither of {list(expected)}")

    if "json_attributes_topic" in config:
        payload = message_on(config["json_attributes_topic"], "json_attributes_topic")
        if payload is not None:
            value = render(config.get("json_attributes_template"), payload, "json_attributes_template")
            if value is not None:
                try:
                    attributes = json.loads(value)
                except ValueError:
                    attributes = None
                if not isinstance(attributes, dict):
                    errors.append(f"attributes {value!r} are not a JSON object")

    if entity.component == "device_automation":
        # mqtt/trigger.py: the rendered value is compared with `payload`; no message yet is fine (nothing pressed).
        raw = lookup(config["topic"])
        if raw is not None:
            payload = raw.decode(config.get("encoding") or "utf-8", errors="replace") if isinstance(raw, bytes) else raw
            render(config.get("value_template"), payload, "value_template")
        return errors
    if "state_topic" not in config:
        return errors
    if entity.component == "event" and lookup(config["state_topic"]) is None:
        return errors
    payload = message_on(config["state_topic"], "state_topic")
    if payload is None:
        return errors
    template_key = "state_value_template" if entity.component == "light" else "value_template"
    state = render(config.get(template_key), payload, template_key)
    if state is None:
        return errors
    errors.extend(_check_state(entity.component, config, state))
    return errors


def _check_state(component: str, config: dict[str, Any], state: str) -> list[str]:
    """Whether the entity takes `state` as a real value. Home Assistant also accepts "None" (unknown); a real
    payload rendering to it is reported, since it means the template does not find the value."""
    if state == PAYLOAD_NONE:
        return [f"state renders to {PAYLOAD_NONE!r} (unknown) from a real payload"]
    if component == "event":
        # MqttEvent._event_received: a JSON object with event_type, one of event_types.
        try:
            event = json.loads(state)
        except ValueError:
            return [f"event payload {state!r} is not JSON: Home Assistant ignores it"]
        if not isinstance(event, dict) or "event_type" not in event:
            return [f"event payload {state!r} has no event_type: Home Assistant ignores it"]
        if str(event["event_type"]) not in config["event_types"]:
            return [f"event type {event['event_type']!r} is not one of {config['event_types']}: Home Assistant "
                    "ignores it"]
        return []
    if component == "sensor":
        if _numeric_state_expected(config):
            try:
                number = float(state)
            except ValueError:
                return [f"numeric sensor state {state!r} is not a number"]
            return [] if math.isfinite(number) else [f"numeric sensor state {state!r} is not finite"]
        if len(state) > MAX_LENGTH_STATE_STATE:
            return [f"state is {len(state)} characters, more than {MAX_LENGTH_STATE_STATE}"]
        if (options := config.get("options")) and state not in options:
            return [f"state {state!r} is not one of the options {options}"]
        return []
    if component == "binary_sensor":
        expected = (config.get("payload_on", "ON"), config.get("payload_off", "OFF"))
    elif component == "switch":
        expected = (config.get("state_on") or config.get("payload_on", "ON"),
                    config.get("state_off") or config.get("payload_off", "OFF"))
    elif component == "light":
        expected = (config.get("payload_on", "ON"), config.get("payload_off", "OFF"))
    else:  # text
        minimum, maximum = config.get("min", 0), config.get("max", MAX_LENGTH_STATE_STATE)
        if not minimum <= len(state) <= maximum:
            return [f"text state of {len(state)} characters is outside min {minimum} / max {maximum}"]
        return []
    if state not in expected:
        return [f"state {state!r} matches none of {list(expected)}: Home Assistant ignores it"]
    return []
