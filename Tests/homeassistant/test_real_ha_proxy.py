"""The bridge as a Bluetooth proxy in a real Home Assistant core (2024.3; docs/home-assistant.md, "Bluetooth proxy"):
the ESPHome integration, added by host and port through its own config flow, lists the bridge as a Bluetooth scanner,
and a BTHome thermometer heard only through the bridge is discovered by Home Assistant's `bthome` integration and
becomes sensors whose states are the values the simulated broadcaster sent.

"Only through the bridge": the bridge's adverts feature is off (nothing of the thermometer on MQTT), and Home
Assistant runs with a system bus address where nothing listens, so its own Bluetooth integration finds no adapter
(the bench's BlueZoo, which the test process's DBUS_SYSTEM_BUS_ADDRESS points at, would otherwise hear the
broadcaster directly); the test checks that Home Assistant made no Bluetooth adapter entry nor flow of its own.

Home Assistant is driven through its REST and websocket APIs with an administrator's token seeded into .storage/auth
(conftest.py).

Run:  make test-homeassistant      (creates .venv-ha on first use, ~5 min)
"""

from __future__ import annotations

import math
from typing import Any

from adverts_helpers import sent_values

from bench.bench import CENTRAL_ADDRESS

THERMOMETER = "A4:C1:38:0B:71:01"
READINGS = {"temperature": "°C", "humidity": "%"}
LOG_LEVELS = {"homeassistant.components.esphome": "debug", "homeassistant.components.bluetooth": "debug",
              "homeassistant.components.bthome": "debug", "bleak_esphome": "debug", "habluetooth": "info",
              "aioesphomeapi": "info"}


def flows(ha, handler: str) -> list[dict[str, Any]]:
    """The config flows in progress for `handler` (2024.3 lists them on the websocket API only)."""
    return [f for f in ha.command({"type": "config_entries/flow/progress"}) if f["handler"] == handler]


def entries(ha, domain: str) -> list[dict[str, Any]]:
    return ha.get(f"/api/config/config_entries/entry?domain={domain}")


def number(state: str):
    try:
        return float(state)
    except ValueError:
        return None


def test_the_bridge_is_a_bluetooth_scanner_and_a_bthome_sensor_heard_through_it_is_discovered(
        bench, proxy_bridge, home_assistant, wait_until, tmp_path):
    sensor = bench.broadcaster("bthome", THERMOMETER)
    proxy = proxy_bridge(name="bench-proxy")
    ha = home_assistant(rest_api=True, system_bus=f"unix:path={tmp_path}/no-system-bus", log_levels=LOG_LEVELS)

    # The ESPHome integration added as a user does it: host and port, then the encryption key it asks for.
    flow = ha.post("/api/config/config_entries/flow", {"handler": "esphome", "show_advanced_options": False})
    assert (flow["type"], flow["step_id"]) == ("form", "user"), flow
    step = ha.post(f"/api/config/config_entries/flow/{flow['flow_id']}", {"host": "127.0.0.1", "port": proxy.port})
    assert (step["type"], step["step_id"], step["errors"]) == ("form", "encryption_key", {}), step
    assert step["description_placeholders"] == {"name": "bench-proxy"}, step
    done = ha.post(f"/api/config/config_entries/flow/{flow['flow_id']}", {"noise_psk": proxy.key})
    # The flow's probes before it asked for the key (plaintext, then the all-zero key that reveals the node's name)
    # are logged as connection warnings; from here on, Home Assistant must have nothing to complain of.
    added = len(ha.process.stderr_lines)
    assert done["type"] == "create_entry", done
    entry = done["result"]
    # Titled with the DeviceInfo's friendly name, which is the bridge's fleet id (the host name by default).
    assert entry["domain"] == "esphome" and entry["title"], entry

    loaded = wait_until(lambda: [e for e in entries(ha, "esphome") if e["state"] == "loaded"], 30,
                        lambda: f"the ESPHome entry never loaded: {entries(ha, 'esphome')}")[0]
    assert loaded["entry_id"] == entry["entry_id"]
    config = ha.get(f"/api/diagnostics/config_entry/{entry['entry_id']}")["data"]["config"]
    assert config["unique_id"] == CENTRAL_ADDRESS.lower(), config       # format_mac of the DeviceInfo's mac
    assert (config["data"]["host"], config["data"]["port"], config["data"]["noise_psk"]) == \
        ("127.0.0.1", proxy.port, "**REDACTED**"), config

    # Home Assistant's ESPHome integration lists the bridge as a Bluetooth scanner: its diagnostics show the scanner
    # registered with the Bluetooth manager under the bridge's address (async_scanner_by_source), and the devices
    # that scanner has heard.
    def scanner():
        data = ha.get(f"/api/diagnostics/config_entry/{entry['entry_id']}")["data"]
        return data.get("bluetooth")
    bluetooth = wait_until(scanner, 30, "the bridge never became a Bluetooth scanner in Home Assistant")
    assert bluetooth["available"] is True, bluetooth
    assert bluetooth["scanner"]["source"] == CENTRAL_ADDRESS, bluetooth
    assert bluetooth["scanner"]["name"] == f"bench-proxy ({CENTRAL_ADDRESS})", bluetooth
    assert bluetooth["scanner"]["connectable"] is True, bluetooth      # the proxy offers connections
    heard = wait_until(
        lambda: [d for d in (scanner() or {}).get("scanner", {}).get("discovered_devices_and_advertisement_data", [])
                 if d["address"] == THERMOMETER], 30, "the bridge's scanner never heard the thermometer")
    assert heard[0]["details"]["source"] == CENTRAL_ADDRESS, heard

    devices = ha.command({"type": "config/device_registry/list"})
    proxy_device = [d for d in devices if entry["entry_id"] in d["config_entries"]]
    assert len(proxy_device) == 1, devices
    assert ["mac", CENTRAL_ADDRESS.lower()] in proxy_device[0]["connections"], proxy_device
    assert (proxy_device[0]["name"], proxy_device[0]["manufacturer"]) == (entry["title"], "gattbridge"), proxy_device

    # Home Assistant's `bthome` integration discovers the thermometer from what the bridge forwarded; confirmed, it
    # becomes a device whose temperature and humidity are sensors.
    discovered = wait_until(lambda: flows(ha, "bthome"), 60,
                            lambda: f"bthome never discovered the thermometer: "
                                    f"{ha.command({'type': 'config_entries/flow/progress'})}")[0]
    assert discovered["context"]["source"] == "bluetooth", discovered
    assert discovered["context"]["unique_id"] == THERMOMETER, discovered
    # Home Assistant's Bluetooth manager says where it heard what it matched to bthome: the bridge's scanner.
    matched = [line for line in ha.process.stderr_lines if "[homeassistant.components.bluetooth.manager]" in line
               and f" {THERMOMETER} " in line and "match: {'bthome'}" in line]
    # ("[connectable]": the proxy offers connections.)
    assert matched and all(f"bench-proxy ({CENTRAL_ADDRESS}) [connectable]: {THERMOMETER} " in line
                           for line in matched), matched
    confirm = ha.post(f"/api/config/config_entries/flow/{discovered['flow_id']}", {})
    if confirm["type"] == "form":                           # bluetooth_confirm shown first: confirm it
        confirm = ha.post(f"/api/config/config_entries/flow/{discovered['flow_id']}", {})
    assert confirm["type"] == "create_entry", confirm
    bthome = confirm["result"]
    assert bthome["domain"] == "bthome", bthome

    def readings():
        found = {}
        for e in ha.command({"type": "config/entity_registry/list"}):
            if e["config_entry_id"] == bthome["entry_id"] and e["entity_id"].startswith("sensor.") \
                    and e["disabled_by"] is None:
                status, state = ha.request("GET", f"/api/states/{e['entity_id']}")
                if status == 200 and (device_class := state["attributes"].get("device_class")) in READINGS:
                    found[device_class] = state
        return found if set(found) == set(READINGS) else None
    sensors = wait_until(readings, 30, lambda: f"the thermometer's sensors never all appeared: {readings()}")

    # The states are the values sent: with the broadcaster paused (its last packet stays on the air), each sensor
    # ends on the held packet's value, and it never showed one the broadcaster did not send.
    sensor.send({"cmd": "pause", "on": True})
    held = sensor.broadcasts()[-1]
    for reading, unit in READINGS.items():
        entity_id = sensors[reading]["entity_id"]
        wanted = held["measurements"][reading]
        last = wait_until(lambda: (s := ha.get(f"/api/states/{entity_id}")) and number(s["state"]) is not None
                          and math.isclose(number(s["state"]), wanted, abs_tol=1e-9) and s, 30,
                          lambda: f"{entity_id} never showed {wanted}: {ha.get(f'/api/states/{entity_id}')}")
        assert last["attributes"]["unit_of_measurement"] == unit, last
        sent = sent_values(sensor, reading)
        recorded = [number(state) for state, _, _ in ha.states(entity_id) if number(state) is not None]
        stray = [v for v in recorded if not any(math.isclose(v, s, abs_tol=1e-9) for s in sent)]
        assert stray == [], f"{entity_id}: Home Assistant recorded {stray}, never sent ({sent})"

    # The bridge restarted: Home Assistant's ESPHome integration sees it go (the scanner unregistered), reconnects by
    # itself (no mDNS here: its reconnect logic's retries), and the thermometer's new readings reach the sensors.
    sensor.send({"cmd": "pause", "on": False})
    temperature = sensors["temperature"]["entity_id"]
    # While the bridge is away Home Assistant warns that it cannot connect, and (as the bridge closes its clients
    # without the DisconnectRequest ESPHome sends on shutdown) of an "EOF received": that window is not checked below.
    stopped = len(ha.process.stderr_lines)
    assert proxy.bridge.process.stop(10) == 0, proxy.bridge.process.stderr[-2000:]
    wait_until(lambda: scanner() is None, 30, "Home Assistant still lists the stopped bridge as a scanner")
    proxy.bridge.process.start()
    wait_until(scanner, 60, lambda: f"Home Assistant never reconnected to the bridge: {entries(ha, 'esphome')}")
    back = len(ha.process.stderr_lines)
    restarted = sensor.broadcasts()[-1]["n"]
    wait_until(lambda: (s := ha.get(f"/api/states/{temperature}")) and number(s["state"]) in
               [round(v, 2) for v in sent_values(sensor, "temperature", after=restarted)], 60,
               lambda: f"{temperature} never showed a reading sent after the restart: "
                       f"{ha.get(f'/api/states/{temperature}')}, sent {sent_values(sensor, 'temperature', restarted)}")

    # Heard only through the bridge: Home Assistant has no Bluetooth adapter of its own, found none to offer, and
    # nothing of the thermometer came over MQTT.
    assert entries(ha, "bluetooth") == [], entries(ha, "bluetooth")
    assert flows(ha, "bluetooth") == []
    assert [m.topic for m in proxy.mqtt.received() if THERMOMETER.replace(":", "") in m.topic.upper()] == []

    complaints = [line for line in ha.process.stderr_lines[added:stopped] + ha.process.stderr_lines[back:]
                  if any(f"[{name}" in line for name in ("homeassistant.components.esphome", "aioesphomeapi",
                                                          "bleak_esphome", "homeassistant.components.bthome"))
                  and (" WARNING " in line or " ERROR " in line)]
    assert complaints == []
    proxy.bridge.assert_running()
