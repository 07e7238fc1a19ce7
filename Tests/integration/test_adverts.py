"""Passive advertisements end to end (docs/adverts.md): simulated sensors broadcast on the bench, the daemon publishes
what they say.

The broadcasters (bench/peripherals/broadcaster.py, bytes from bench/broadcasts.py) are BTHome v2 (plain and
encrypted), pvvx (custom firmware of the Xiaomi LYWSD03MMC) and Govee H5075 thermometers; each has its own BlueZoo
adapter, steps its values and packet id every second, and reports every packet with the values a reference parser
reads from it (checked against bthome-ble and govee-ble in Tests/adverts/test_bench_broadcasters.py).

The first tests check the bench half alone: what the broadcasters put on the air arrives on a scanning central's
Device1 objects, byte for byte, and `gattbridge adverts decode` reads the values the broadcaster meant. The others run
the daemon with an `adverts:` section and passive devices and check its MQTT output; they are skipped while the
daemon refuses the `adverts` config key (the daemon side of passive advertisements is not in this build yet).
"""

from __future__ import annotations

import json
import math
import time

import pytest

from bench.broadcasts import GOVEE_COMPANY, GOVEE_NAME
from bench.dbus_util import DBusError, unvariant_dict

from adverts_helpers import (MEASUREMENTS, PREFIX, TIMEOUT, advert_configs, assert_never_connected,
                             assert_only_sent_values, assert_retained, check_replay_not_published, check_wrong_bindkey,
                             decode_cli, on_air, packet_on_air, passive, scan_with_duplicates, start_adverts_bridge,
                             wait_readings, wait_value, write_bindkey)
from bridge_helpers import BASE, channel, device, retained_messages

BTHOME, ENCRYPTED, PVVX, GOVEE, AUTO = (f"A4:C1:38:0B:70:0{i}" for i in range(1, 6))
HRM = "C0:FF:EE:00:00:01"
SECOND_CENTRAL = "00:00:00:00:00:02"


# --- the bench: broadcasters on the air ----------------------------------------------------------------------------

def test_broadcasters_reach_a_scanning_central_and_decode_as_sent(bench, central, gattbridge_bin, wait_until,
                                                                   tmp_path):
    key = write_bindkey(tmp_path)
    sensors = {BTHOME: bench.broadcaster("bthome", BTHOME), ENCRYPTED: bench.broadcaster("bthome", ENCRYPTED,
                                                                                         bindkey_file=key),
               PVVX: bench.broadcaster("pvvx", PVVX), GOVEE: bench.broadcaster("govee", GOVEE)}
    scan_with_duplicates(central)
    for address, sensor in sensors.items():
        first = wait_until(lambda: packet_on_air(central, sensor), 10, f"{address}'s broadcast never on the air")
        # The values move on: a later packet with other readings replaces it on the central's Device1.
        later = wait_until(lambda: (p := packet_on_air(central, sensor)) and p["n"] > first["n"] and p, 10,
                           f"{address}'s Device1 kept packet {first['n']}")
        assert later["measurements"] != first["measurements"]
        data = on_air(central, address)
        if sensor.options["format"] == "govee":
            assert set(data["manufacturer_data"]) == {str(GOVEE_COMPANY)} and data["service_data"] == {}
            assert data["name"] == GOVEE_NAME
        for packet in (first, later):
            decoded = decode_cli(gattbridge_bin, address, packet, key if address == ENCRYPTED else None,
                                 data["name"])
            assert decoded["format"] == sensor.options["format"]
            assert decoded["encrypted"] == (address == ENCRYPTED)
            assert decoded["packet_id"] == packet["packet_id"]
            assert set(decoded["measurements"]) == set(MEASUREMENTS[decoded["format"]])
            for name, value in packet["measurements"].items():
                assert math.isclose(decoded["measurements"][name], value, abs_tol=1e-9), (address, name, decoded)


def test_a_button_press_stays_on_the_air_for_a_scan(bench, central, wait_until):
    sensor = bench.broadcaster("bthome", BTHOME)
    scan_with_duplicates(central)
    wait_until(lambda: packet_on_air(central, sensor), 10, "the broadcast never reached the central")
    pressed = sensor.press()
    assert pressed["events"] == [{"name": "button", "event_type": "press"}]
    seen = wait_until(lambda: packet_on_air(central, sensor), 5, "no packet on the air")
    wait_until(lambda: (packet_on_air(central, sensor) or {}).get("n") == pressed["n"], 5,
               f"the press (packet {pressed['n']}) never reached the central; last seen {seen}")


def test_a_broadcaster_takes_no_connection(bench, central):
    """Its advertisement is non-connectable ("broadcast"): Connect fails as with a real controller (patch 1)."""
    bench.broadcaster("bthome", BTHOME)
    scan_with_duplicates(central)
    central.wait_device(BTHOME)
    with pytest.raises(DBusError, match="le-connection-abort-by-local"):
        central.connect(BTHOME, timeout=10)


def test_patch9_duplicate_data_signals_every_report(bench, central, wait_until):
    """bluetoothd with DuplicateData signals every report, repeats included; BlueZoo only changes (patch 9)."""
    sensor = bench.broadcaster("govee", GOVEE)
    scan_with_duplicates(central)
    wait_until(lambda: packet_on_air(central, sensor), 10, "the broadcast never reached the central")
    sensor.send({"cmd": "pause", "on": True})
    held = wait_until(lambda: packet_on_air(central, sensor), 5, "no packet on the air")
    reports: list[bytes] = []

    def on_signal(message):
        _, changed, _ = message.parse_to_tuple()
        if "ManufacturerData" in changed:
            reports.append(bytes(unvariant_dict(unvariant_dict(changed)["ManufacturerData"])[GOVEE_COMPANY]))

    slot = central.bus.subscribe(on_signal, "org.bluez", central.device_path(GOVEE),
                                 "org.freedesktop.DBus.Properties", "PropertiesChanged")
    try:
        wait_until(lambda: len(reports) >= 3, 10, lambda: f"repeats signalled: {len(reports)}")
    finally:
        central.bus.unsubscribe(slot)
    assert set(reports) == {bytes.fromhex(held["manufacturer_data"][str(GOVEE_COMPANY)])}


# --- the daemon ----------------------------------------------------------------------------------------------------

def test_passive_devices_publish_their_broadcast_values(bench, run_gattbridge, gattbridge_bin, mosquitto, mqtt,
                                                        tmp_path):
    key = write_bindkey(tmp_path)
    sensors = {"balcony": bench.broadcaster("bthome", BTHOME),
               "cellar": bench.broadcaster("bthome", ENCRYPTED, bindkey_file=key),
               "bedroom": bench.broadcaster("pvvx", PVVX),
               "kitchen": bench.broadcaster("govee", GOVEE)}
    bridge = start_adverts_bridge(run_gattbridge, gattbridge_bin, tmp_path, mosquitto, [
        passive("balcony", BTHOME, "bthome"), passive("cellar", ENCRYPTED, "bthome", key),
        passive("bedroom", PVVX, "pvvx"), passive("kitchen", GOVEE, "govee")], homeassistant=True)
    wait_readings(mqtt, bridge, sensors)
    assert_retained(mosquitto, bridge, sensors)

    # Home Assistant: one sensor per measurement, with its device class, unit and state class.
    by_state = advert_configs(mosquitto, "sensor", BTHOME)
    temperature = by_state[bridge.topic("balcony", "temperature")]
    assert (temperature["device_class"], temperature["unit_of_measurement"], temperature["state_class"]) == \
        ("temperature", "°C", "measurement")
    assert by_state[bridge.topic("balcony", "humidity")]["device_class"] == "humidity"
    assert [a["topic"] for a in temperature["availability"]][-1] == bridge.topic("balcony", "availability")

    for name, sensor in sensors.items():
        assert_only_sent_values(mqtt, bridge, name, sensor)
    assert_never_connected(mqtt, bridge, sensors)
    bridge.assert_running()


def test_availability_goes_offline_after_the_timeout(bench, run_gattbridge, gattbridge_bin, mosquitto, mqtt,
                                                     tmp_path):
    sensor = bench.broadcaster("bthome", BTHOME)
    bridge = start_adverts_bridge(run_gattbridge, gattbridge_bin, tmp_path, mosquitto,
                                  [passive("balcony", BTHOME, "bthome")])
    bridge.wait_online(mqtt, "balcony")
    wait_value(mqtt, bridge, "balcony", "temperature", sensor)
    mark = mqtt.mark()
    sensor.stop()                       # unregisters its advertisement: nothing more on the air
    silent_since = time.monotonic()
    offline = bridge.wait_availability(mqtt, "balcony", "offline", TIMEOUT + 15, since=mark)
    # The last report may have come up to one scan tick (1 s) before the stop.
    assert offline.time - silent_since >= TIMEOUT - 1.5, "offline before adverts.timeout passed"

    # Back on the air: online again.
    mark = mqtt.mark()
    sensor.start()
    bridge.wait_online(mqtt, "balcony", 20, since=mark)
    bridge.assert_running()


def test_a_button_press_is_one_event_not_retained(bench, run_gattbridge, gattbridge_bin, mosquitto, mqtt, tmp_path):
    sensor = bench.broadcaster("bthome", BTHOME, event_hold=3)
    bridge = start_adverts_bridge(run_gattbridge, gattbridge_bin, tmp_path, mosquitto,
                                  [passive("balcony", BTHOME, "bthome")], homeassistant=True)
    bridge.wait_online(mqtt, "balcony")
    wait_value(mqtt, bridge, "balcony", "temperature", sensor)
    mark = mqtt.mark()
    pressed = sensor.press()
    event = mqtt.wait_for(bridge.topic("balcony", "button"), None, 10, since=mark)
    assert event.json() == {"event_type": "press"} and not event.retain
    # The press packet stays on the air for several scans (repeats of one packet id); once a later packet's value is
    # out, every repeat has been heard.
    wait_value(mqtt, bridge, "balcony", "temperature", sensor, since=mark, after=pressed["n"])
    assert len(mqtt.received(bridge.topic("balcony", "button"), mark)) == 1
    retained = retained_messages(mosquitto, f"{BASE}/#", f"{BASE}/test-sentinel")
    assert bridge.topic("balcony", "button") not in retained

    # Home Assistant: an event entity and a device trigger for the press, as for a connected event channel.
    node = "gattbridge_" + BTHOME.replace(":", "") + "_advert"   # the adverts feature's own discovery node
    configs = {t: json.loads(p) for t, p in
               retained_messages(mosquitto, f"{PREFIX}/#", f"{PREFIX}/test-sentinel").items()}
    entities = [c for t, c in configs.items() if t.startswith(f"{PREFIX}/event/{node}/")
                and c.get("state_topic") == bridge.topic("balcony", "button")]
    assert len(entities) == 1 and "press" in entities[0]["event_types"], configs
    triggers = [c for t, c in configs.items() if t.startswith(f"{PREFIX}/device_automation/{node}/")
                and c.get("topic") == bridge.topic("balcony", "button") and c.get("subtype") == "press"]
    assert len(triggers) == 1, configs
    bridge.assert_running()


def test_an_unsaved_bthome_sensor_becomes_an_auto_device(bench, run_gattbridge, gattbridge_bin, mosquitto, mqtt,
                                                         tmp_path):
    sensor = bench.broadcaster("bthome", AUTO)
    bench.broadcaster("govee", GOVEE)        # heard too, but govee is not in adverts.auto: nothing is kept
    bridge = start_adverts_bridge(run_gattbridge, gattbridge_bin, tmp_path, mosquitto, [])
    name = "bthome-" + AUTO.replace(":", "").lower()

    def listed(message) -> bool:
        return any(d.get("name") == name and d.get("source") == "advert" and d.get("address") == AUTO
                   for d in message.json())
    mqtt.wait_for(bridge.topic("bridge", "devices"), listed, 20)
    wait_value(mqtt, bridge, name, "temperature", sensor)
    bridge.wait_online(mqtt, name)
    devices = mqtt.received(bridge.topic("bridge", "devices"))[-1].json()
    assert not any(d.get("address") == GOVEE for d in devices), devices
    assert mqtt.received(f"{BASE}/govee-{GOVEE.replace(':', '').lower()}/#") == []
    bridge.assert_running()


def test_a_wrong_bindkey_gives_one_error_and_no_value(bench, run_gattbridge, gattbridge_bin, mosquitto, mqtt,
                                                      tmp_path):
    check_wrong_bindkey(bench, run_gattbridge, gattbridge_bin, mosquitto, mqtt, tmp_path, "bthome", ENCRYPTED, BTHOME)


def test_a_replayed_encrypted_packet_is_not_published(bench, run_gattbridge, gattbridge_bin, mosquitto, mqtt,
                                                      tmp_path):
    check_replay_not_published(bench, run_gattbridge, gattbridge_bin, mosquitto, mqtt, tmp_path, "bthome", ENCRYPTED,
                               encrypted=True)


def test_a_connected_device_keeps_working_among_broadcasters(bench, run_gattbridge, gattbridge_bin, mosquitto, mqtt,
                                                            peripheral, tmp_path):
    hrm = peripheral("heart_rate", rate=2)
    sensors = {"balcony": bench.broadcaster("bthome", BTHOME), "kitchen": bench.broadcaster("govee", GOVEE)}
    bridge = start_adverts_bridge(run_gattbridge, gattbridge_bin, tmp_path, mosquitto, [
        device("strap", HRM, [channel("heart_rate", "2a37", "heart_rate_measurement")]),
        passive("balcony", BTHOME, "bthome"), passive("kitchen", GOVEE, "govee")])
    bridge.wait_online(mqtt, "strap", 30)
    mark = mqtt.mark()
    mqtt.wait_count(bridge.topic("strap", "heart_rate"), 3, 15, since=mark)
    for name, sensor in sensors.items():
        wait_value(mqtt, bridge, name, "temperature", sensor, since=mark)
    # Both go on together.
    mark = mqtt.mark()
    mqtt.wait_count(bridge.topic("strap", "heart_rate"), 3, 15, since=mark)
    wait_value(mqtt, bridge, "balcony", "temperature", sensors["balcony"], since=mark)
    # The strap loses its link and comes back: it reconnects while the scan for broadcasts goes on.
    mark = mqtt.mark()
    hrm.restart()
    bridge.wait_availability(mqtt, "strap", "offline", 20, since=mark)
    bridge.wait_online(mqtt, "strap", 30, since=mark)
    mark = mqtt.mark()
    mqtt.wait_count(bridge.topic("strap", "heart_rate"), 2, 15, since=mark)
    for name, sensor in sensors.items():
        wait_value(mqtt, bridge, name, "temperature", sensor, since=mark)
    for name, sensor in sensors.items():
        assert_only_sent_values(mqtt, bridge, name, sensor)
    bridge.assert_running()


def test_a_broadcast_heard_by_two_adapters_is_published_once(bench, bluez, run_gattbridge, gattbridge_bin, mosquitto,
                                                             mqtt, tmp_path):
    second = bluez.add_adapter(SECOND_CENTRAL)
    sensor = bench.broadcaster("bthome", BTHOME, event_hold=3)
    bridge = start_adverts_bridge(run_gattbridge, gattbridge_bin, tmp_path, mosquitto,
                                  [passive("balcony", BTHOME, "bthome")], adapters=("hci0", second))
    bridge.wait_online(mqtt, "balcony")
    first = wait_value(mqtt, bridge, "balcony", "temperature", sensor)
    mark = mqtt.mark()
    pressed = sensor.press()
    mqtt.wait_for(bridge.topic("balcony", "button"), None, 10, since=mark)
    later = wait_value(mqtt, bridge, "balcony", "temperature", sensor, since=mark, after=pressed["n"])
    wait_value(mqtt, bridge, "balcony", "temperature", sensor, since=mqtt.messages.index(later),
               other_than=later.text, after=pressed["n"])
    assert len(mqtt.received(bridge.topic("balcony", "button"), mark)) == 1
    # One message per value, though both adapters report every packet.
    assert_only_sent_values(mqtt, bridge, "balcony", sensor)
    assert first is not None
    bridge.assert_running()
