"""`gattbridge config schema` against the validator (`gattbridge config check`): the committed schema file is what the
binary prints, every example config in the repository validates against it, the validator's invalid cases that a
schema can express fail both, and both know the same keys at every place of the config (docs/configuration.md)."""
import json
import pathlib
import re
import subprocess

import jsonschema
import pytest

from yaml12 import load

REPO = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = sorted((REPO / "config").glob("*.yaml"))


@pytest.fixture(scope="module")
def schema(gattbridge_bin):
    out = subprocess.run([gattbridge_bin, "config", "schema"], check=True, capture_output=True, text=True).stdout
    document = json.loads(out)
    jsonschema.Draft202012Validator.check_schema(document)
    return document


@pytest.fixture(scope="module")
def validator(schema):
    return jsonschema.Draft202012Validator(schema)


def config_check(gattbridge_bin, path: pathlib.Path) -> subprocess.CompletedProcess:
    return subprocess.run([gattbridge_bin, "config", "check", "--config", str(path)], capture_output=True, text=True,
                          timeout=30)


def test_committed_schema_is_what_the_binary_prints(gattbridge_bin, schema):
    committed = (REPO / "config" / "gattbridge.schema.json").read_text()
    printed = subprocess.run([gattbridge_bin, "config", "schema"], check=True, capture_output=True, text=True).stdout
    assert committed == printed, "config/gattbridge.schema.json is stale: gattbridge config schema > config/gattbridge.schema.json"


def test_schema_is_draft_2020_12(schema):
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_every_example_config_validates(gattbridge_bin, validator, path):
    errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(load(path.read_text()))]
    assert errors == []
    result = config_check(gattbridge_bin, path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "ok\n"


def test_the_shipped_example_names_the_schema():
    first = (REPO / "config" / "gattbridge.example.yaml").read_text().splitlines()[0]
    assert first == "# yaml-language-server: $schema=gattbridge.schema.json"


def doc_configs():
    """The ```yaml blocks of the guide that are whole configs (a mapping of top-level keys), not fragments."""
    top = {"mqtt", "bluetooth", "homeassistant", "devices", "adverts", "state_dir", "bridge_api", "bridge", "esphome_proxy"}
    for page in sorted((REPO / "docs").rglob("*.md")) + [REPO / "README.md"]:
        for index, block in enumerate(re.findall(r"^```yaml\n(.*?)^```", page.read_text(), re.S | re.M)):
            if "[...]" in block or "…" in block:
                continue
            data = load(block)
            if isinstance(data, dict) and data and set(data) <= top:
                yield pytest.param(data, id=f"{page.relative_to(REPO)}#{index}")


@pytest.mark.parametrize("data", list(doc_configs()))
def test_configs_in_the_guide_validate(validator, data):
    errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(data)]
    assert errors == []


# Each a config the validator refuses and a schema can say why. A minimal valid device, so only the named fault counts.
DEVICE = {"name": "strap", "address": "C0:FF:EE:00:00:01", "channels": [{"name": "hr", "characteristic": "2a37", "codec": "hex"}]}


def with_device(**changes):
    device = json.loads(json.dumps(DEVICE))
    device.update(changes)
    return {"devices": [device]}


def with_channel(**changes):
    device = json.loads(json.dumps(DEVICE))
    device["channels"][0].update(changes)
    return {"devices": [device]}


INVALID = {
    "unknown top-level key": {"mqttt": {}},
    "unknown mqtt key": {"mqtt": {"hots": "x"}},
    "port as a quoted string": {"mqtt": {"port": "many"}},
    "port out of range": {"mqtt": {"port": 70000}},
    "keepalive below 5": {"mqtt": {"keepalive": 2}},
    "unknown protocol": {"mqtt": {"protocol": "4"}},
    "tls as a string": {"mqtt": {"tls": "yes"}},
    "unknown tls key": {"mqtt": {"tls": {"ca": "x"}}},
    "cert_file without key_file": {"mqtt": {"tls": {"cert_file": "c.pem"}}},
    "base_topic with a wildcard": {"mqtt": {"base_topic": "a/+/b"}},
    "base_topic with \\$": {"mqtt": {"base_topic": "$SYS"}},
    "base_topic with an empty level": {"mqtt": {"base_topic": "a//b"}},
    "empty adapters": {"bluetooth": {"adapters": []}},
    "not an adapter name": {"bluetooth": {"adapters": ["wlan0"]}},
    "adapter and adapters": {"bluetooth": {"adapter": "hci0", "adapters": ["hci1"]}},
    "max_connections 0": {"bluetooth": {"adapters": [{"name": "hci0", "max_connections": 0}]}},
    "adapter mapping without name": {"bluetooth": {"adapters": [{"max_connections": 2}]}},
    "default_agent quoted": {"bluetooth": {"default_agent": "true"}},
    "enabled quoted": {"homeassistant": {"enabled": "true"}},
    "discovery_prefix with #": {"homeassistant": {"discovery_prefix": "ha/#"}},
    "bridge_api not a boolean": {"bridge_api": 1},
    "bridge id reserved": {"bridge": {"id": "state"}},
    "bridge id with a slash": {"bridge": {"id": "a/b"}},
    "handover_after 0": {"bridge": {"handover_after": 0}},
    "unreachable_after too long": {"bridge": {"unreachable_after": 2000000000}},
    "devices not a list": {"devices": {"name": "x"}},
    "device without address": {"devices": [{"name": "x", "channels": []}]},
    "device without channels": {"devices": [{"name": "x", "address": "C0:FF:EE:00:00:01"}]},
    "bad address": with_device(address="C0:FF:EE:00:00"),
    "device named bridge": with_device(name="bridge"),
    "unknown device key": with_device(colour="red"),
    "device adapter not hciN": with_device(adapter="usb0"),
    "unknown pairing": with_device(pairing="maybe"),
    "passkey and passkey_file": with_device(pairing="passkey", passkey="123456", passkey_file="k"),
    "passkey of five digits": with_device(pairing="passkey", passkey="12345"),
    "channel without codec": {"devices": [dict(DEVICE, channels=[{"name": "hr", "characteristic": "2a37"}])]},
    "unknown codec": with_channel(codec="hexx"),
    "bad characteristic": with_channel(characteristic="2a3"),
    "unknown mode": with_channel(mode="sometimes"),
    "qos 3": with_channel(qos=3),
    "interval 0": with_channel(mode="read", interval=0),
    "interval negative": with_channel(mode="read", interval=-1),
    "retain quoted": with_channel(retain="false"),
    "topic availability": with_channel(topic="availability"),
    "topic rssi": with_channel(topic="rssi"),
    "unknown homeassistant": with_channel(homeassistant="gauge"),
    "max_line 0": with_channel(codec="text", max_line=0),
    "flush_after 0": with_channel(codec="text", flush_after=0),
    "command_ttl not a number": with_channel(writable=True, command_ttl="soon"),
    "values not a mapping": with_channel(values=["01"]),
    "unknown channel key": with_channel(colour="red"),
    "adverts not a mapping": {"adverts": True},
    "adverts enabled quoted": {"adverts": {"enabled": "true"}},
    "adverts auto not a list": {"adverts": {"auto": "bthome"}},
    "adverts auto unknown format": {"adverts": {"auto": ["bthome", "btlove"]}},
    "adverts auto twice the same": {"adverts": {"auto": ["govee", "govee"]}},
    "adverts auto_limit negative": {"adverts": {"auto_limit": -1}},
    "adverts auto_limit too large": {"adverts": {"auto_limit": 10001}},
    "adverts timeout 0": {"adverts": {"timeout": 0}},
    "unknown adverts key": {"adverts": {"limit": 5}},
    "esphome_proxy enabled quoted": {"esphome_proxy": {"enabled": "true"}},
    "esphome_proxy listen empty": {"esphome_proxy": {"listen": ""}},
    "esphome_proxy name with capitals": {"esphome_proxy": {"name": "Garden"}},
    "esphome_proxy name of 32 characters": {"esphome_proxy": {"name": "a" * 32}},
    "esphome_proxy plaintext on every address": {"esphome_proxy": {"enabled": True, "encryption": False}},
    "esphome_proxy plaintext on a LAN address": {"esphome_proxy": {"enabled": True, "encryption": False, "listen": "192.168.1.2:6053"}},
    "esphome_proxy connection_slots 0": {"esphome_proxy": {"connection_slots": 0}},
    "esphome_proxy connection_slots 9": {"esphome_proxy": {"connection_slots": 9}},
    "esphome_proxy passkeys keyed by name": {"esphome_proxy": {"passkeys": {"lock": "lock.passkey"}}},
    "unknown esphome_proxy key": {"esphome_proxy": {"port": 6053}},
    "unknown advert format": with_device(advert="thermometer"),
    "advert auto in a list": with_device(advert=["auto"]),
    "bindkey without advert": with_device(bindkey="0123456789abcdef0123456789abcdef"),
    "bindkey_file without advert": with_device(bindkey_file="k"),
    "bindkey and bindkey_file": with_device(advert="bthome", bindkey="0123456789abcdef0123456789abcdef", bindkey_file="k"),
    "bindkey of 31 digits": with_device(advert="bthome", bindkey="0123456789abcdef0123456789abcde"),
    "bindkey not hex": with_device(advert="bthome", bindkey="0123456789abcdef0123456789abcdeg"),
    "bindkey with a plaintext format": with_device(advert="pvvx", bindkey="0123456789abcdef0123456789abcdef"),
    "bindkey_file with a beacon": with_device(advert="ibeacon", bindkey_file="k"),
}


@pytest.mark.parametrize("name", sorted(INVALID))
def test_validator_and_schema_refuse_the_same_configs(gattbridge_bin, validator, tmp_path, name):
    config = INVALID[name]
    path = tmp_path / "config.yaml"
    path.write_text(json.dumps(config))    # JSON is YAML: no guessing about how a value is typed
    result = config_check(gattbridge_bin, path)
    assert result.returncode == 78, f"the validator accepted it: {result.stdout}{result.stderr}"
    assert not validator.is_valid(config), f"the schema accepted what the validator refused: {result.stderr}"


# Configs the validator accepts although they look unusual: the schema must not flag them either.
ACCEPTED = {
    "empty file": None,
    "sections with nothing after them": {"mqtt": None, "bluetooth": None, "homeassistant": None, "devices": None},
    "bridge: alone": {"bridge": None},
    "protocol 5 unquoted": {"mqtt": {"protocol": 5}},
    "protocol 3.1.1": {"mqtt": {"protocol": "3.1.1"}},
    "tls: true": {"mqtt": {"tls": True}},
    "tls: false": {"mqtt": {"tls": False}},
    "adapters mixed": {"bluetooth": {"adapters": ["hci0", {"name": "hci1", "max_connections": 2}]}},
    "older adapter": {"bluetooth": {"adapter": "hci0"}},
    "decimal seconds": with_channel(mode="read", interval=0.5),
    "inline passkey as a number": with_device(pairing="passkey", passkey=123456),
    "values and a switch": with_channel(writable=True, values={"ON": "01", "OFF": "00"}, homeassistant="switch"),
    "a button": with_channel(homeassistant="event", values={"press": "01"}),
    "text framing": with_channel(codec="text", delimiter="\r\n", write_delimiter="", max_line=256, flush_after=0.5),
    "characteristic forms": {"devices": [dict(DEVICE, channels=[
        {"name": f"c{i}", "characteristic": form, "codec": "hex"} for i, form in enumerate(
            ["2a37", "0x2A37", "0000180d", "0x180F/00002a19-0000-1000-8000-00805f9b34fb",
             "c0ffee001ed04c7a9b1e000000000001/c0ffee00-1ed0-4c7a-9b1e-000000000002"])])]},
    "fleet": {"bridge": {"id": "kitchen", "handover_after": 30, "unreachable_after": 60}},
    "adverts: alone": {"adverts": None},
    "adverts, every key": {"adverts": {"enabled": True, "auto": ["bthome", "xiaomi", "pvvx", "atc", "govee", "ruuvi",
                                                                  "ibeacon", "eddystone"], "auto_limit": 0, "timeout": 0.5}},
    "adverts auto empty": {"adverts": {"auto": None}},
    "a passive device": {"adverts": {"enabled": True},
                         "devices": [{"name": "thermo", "address": "A4:C1:38:00:00:01", "advert": "auto"}]},
    "a passive device with an inline bindkey": {"adverts": {"enabled": True}, "devices": [
        {"name": "thermo", "address": "A4:C1:38:00:00:01", "advert": "bthome", "bindkey": "0123456789abcdef0123456789ABCDEF"}]},
    "channels and advert": with_device(advert="xiaomi"),
    "esphome_proxy: alone": {"esphome_proxy": None},
    "esphome_proxy enabled alone": {"esphome_proxy": {"enabled": True}},
    "esphome_proxy plaintext on loopback": {"esphome_proxy": {"enabled": True, "encryption": False, "listen": "127.0.0.1:6053"}},
    "esphome_proxy plaintext while off": {"esphome_proxy": {"encryption": False}},
    "esphome_proxy every plain key": {"esphome_proxy": {"enabled": True, "listen": "[::]:6053", "name": "pi-proxy-2",
                                                        "encryption": True, "connection_slots": 8, "passkeys": None}},
    "inline bindkey with advert auto": with_device(advert="auto", bindkey="0123456789abcdef0123456789abcdef"),
}


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_validator_and_schema_accept_the_same_configs(gattbridge_bin, validator, tmp_path, name):
    config = ACCEPTED[name]
    path = tmp_path / "config.yaml"
    path.write_text(json.dumps(config) if config is not None else "")
    result = config_check(gattbridge_bin, path)
    assert result.returncode == 0, result.stderr
    errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(config)]
    assert errors == []


# Where each mapping of the config is, as a function placing a mapping there inside an otherwise valid config.
def at_top(mapping): return mapping
def at_mqtt(mapping): return {"mqtt": mapping}
def at_tls(mapping): return {"mqtt": {"tls": mapping}}
def at_bluetooth(mapping): return {"bluetooth": mapping}
def at_adapter(mapping): return {"bluetooth": {"adapters": [dict({"name": "hci0"}, **mapping)]}}
def at_homeassistant(mapping): return {"homeassistant": mapping}
def at_bridge(mapping): return {"bridge": mapping}
def at_adverts(mapping): return {"adverts": mapping}
def at_esphome_proxy(mapping): return {"esphome_proxy": mapping}
def at_device(mapping): return {"devices": [dict(DEVICE, **mapping)]}
def at_channel(mapping): return {"devices": [dict(DEVICE, channels=[dict(DEVICE["channels"][0], **mapping)])]}


def schema_keys(schema):
    """(place, doc path prefix, keys) for every mapping of the config, from the schema."""
    props = schema["properties"]
    defs = schema["$defs"]
    tls = next(alt for alt in props["mqtt"]["properties"]["tls"]["oneOf"] if "properties" in alt)
    adapter = next(alt for alt in props["bluetooth"]["properties"]["adapters"]["items"]["oneOf"] if "properties" in alt)
    return [
        (at_top, "", set(props)),
        (at_mqtt, "mqtt.", set(props["mqtt"]["properties"])),
        (at_tls, "mqtt.tls.", set(tls["properties"])),
        (at_bluetooth, "bluetooth.", set(props["bluetooth"]["properties"])),
        (at_adapter, "bluetooth.adapters[].", set(adapter["properties"])),
        (at_homeassistant, "homeassistant.", set(props["homeassistant"]["properties"])),
        (at_bridge, "bridge.", set(props["bridge"]["properties"])),
        (at_adverts, "adverts.", set(props["adverts"]["properties"])),
        (at_esphome_proxy, "esphome_proxy.", set(props["esphome_proxy"]["properties"])),
        (at_device, "devices[].", set(defs["device"]["properties"])),
        (at_channel, "channels[].", set(defs["channel"]["properties"])),
    ]


def unknown_keys(gattbridge_bin, tmp_path, config) -> set[str]:
    path = tmp_path / "probe.yaml"
    path.write_text(json.dumps(config))
    result = config_check(gattbridge_bin, path)
    return set(re.findall(r'unknown key "([^"]+)"', result.stderr))


def test_validator_and_schema_know_the_same_keys_everywhere(gattbridge_bin, schema, tmp_path):
    places = schema_keys(schema)
    everything = set().union(*(keys for _, _, keys in places)) | {"zzz_not_a_key"}
    problems = []
    for place, prefix, keys in places:
        # Every candidate at once: the validator names each key it does not know there (values may be wrong: only
        # "unknown key" counts). A key the schema has must be known; any other candidate must be unknown.
        probe = place({key: None for key in sorted(everything)})
        unknown = unknown_keys(gattbridge_bin, tmp_path, probe)
        for key in sorted(keys & unknown):
            problems.append(f"{prefix}{key}: in the schema, unknown to the validator")
        for key in sorted((everything - keys) - unknown):
            problems.append(f"{prefix}{key}: accepted by the validator, not in the schema there")
    assert problems == []


def test_every_key_is_in_the_configuration_reference(schema):
    reference = (REPO / "docs" / "configuration.md").read_text()
    missing = [f"{prefix}{key}" for _, prefix, keys in schema_keys(schema) for key in sorted(keys)
               if f"`{prefix}{key}`" not in reference]
    assert missing == [], "keys missing from docs/configuration.md"
