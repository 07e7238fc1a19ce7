"""The broadcast formats beyond test_adverts.py's BTHome, pvvx and Govee, end to end (docs/adverts.md,
docs/adverts-mqtt.md): a Xiaomi LYWSD03MMC on its stock firmware (MiBeacon v5, plain and encrypted with a bindkey), a
RuuviTag (data format 5), an iBeacon and an Eddystone-UID beacon, each simulated on its own BlueZoo adapter by
bench/peripherals/broadcaster.py.

Every value the daemon publishes must be one the broadcaster sent, and what the broadcaster says it sent is what the
reference parsers read from its bytes: Tests/adverts/test_bench_broadcasters.py runs xiaomi-ble and ruuvitag-ble on
the packets of bench/broadcasts.py (values and units), and the first test here checks that the bytes on the air are
those packets. The units the daemon announces to Home Assistant are the references' units too.
"""

from __future__ import annotations

import time

import pytest

from bench.broadcasts import Sensor

from adverts_helpers import (MEASUREMENTS, TIMEOUT, advert_configs, assert_never_connected, assert_only_sent_values,
                             assert_retained, check_replay_not_published, check_wrong_bindkey, decode_cli,
                             packet_on_air, passive, same_number, scan_with_duplicates, start_adverts_bridge,
                             wait_readings, wait_value, write_bindkey)
from bridge_helpers import BASE, retained_messages

XIAOMI, LOCKED, RUUVI, IBEACON, EDDYSTONE = (f"A4:C1:38:0B:73:0{i}" for i in range(1, 6))
BEACONS = {"keys": ("ibeacon", IBEACON), "bag": ("eddystone", EDDYSTONE)}


def regenerated(broadcaster, count: int, bindkey_file=None) -> list[dict]:
    """The first `count` packets bench/broadcasts.py makes for this broadcaster: the bytes the reference test read."""
    key = bytes.fromhex(bindkey_file.read_text().strip()) if bindkey_file else None
    sensor = Sensor(broadcaster.options["format"], broadcaster.address, key)
    return [sensor.next().as_event() for _ in range(count)]


# --- the bench -----------------------------------------------------------------------------------------------------

def test_the_new_formats_reach_a_scanning_central_and_decode_as_sent(bench, central, gattbridge_bin, wait_until,
                                                                      tmp_path):
    key = write_bindkey(tmp_path)
    sensors = {XIAOMI: bench.broadcaster("xiaomi", XIAOMI), LOCKED: bench.broadcaster("xiaomi", LOCKED,
                                                                                       bindkey_file=key),
               RUUVI: bench.broadcaster("ruuvi", RUUVI), IBEACON: bench.broadcaster("ibeacon", IBEACON),
               EDDYSTONE: bench.broadcaster("eddystone", EDDYSTONE)}
    scan_with_duplicates(central)
    for address, sensor in sensors.items():
        fmt = sensor.options["format"]
        first = wait_until(lambda: packet_on_air(central, sensor), 10, f"{address}'s broadcast never on the air")
        later = wait_until(lambda: (p := packet_on_air(central, sensor)) and p["n"] > first["n"] and p, 10,
                           f"{address}'s Device1 kept packet {first['n']}")
        if fmt in ("ibeacon", "eddystone"):
            # A beacon's bytes never change; a sensor's values and counter step on.
            assert (later["service_data"], later["manufacturer_data"]) == \
                (first["service_data"], first["manufacturer_data"])
        else:
            assert later["measurements"] != first["measurements"] and later["packet_id"] != first["packet_id"]
        for packet in (first, later):
            decoded = decode_cli(gattbridge_bin, address, packet, key if address == LOCKED else None)
            assert decoded["format"] == fmt
            assert decoded["encrypted"] == (address == LOCKED) == packet["encrypted"]
            assert decoded["packet_id"] == packet["packet_id"]
            expected = {**packet["identity"], **packet["measurements"]}
            assert set(decoded["measurements"]) == set(expected) and set(packet["measurements"]) == \
                set(MEASUREMENTS[fmt]), decoded
            for name, value in expected.items():
                if isinstance(value, str):
                    assert decoded["measurements"][name] == value, (address, name, decoded)
                else:
                    assert same_number(str(decoded["measurements"][name]), value), (address, name, decoded)
        # The bytes on the air are bench/broadcasts.py's, which the reference parsers read as the broadcaster says.
        sent = [{k: v for k, v in p.items() if k not in ("event", "n")} for p in sensor.broadcasts()]
        assert regenerated(sensor, len(sent), key if address == LOCKED else None) == sent


# --- the daemon ----------------------------------------------------------------------------------------------------

def test_xiaomi_and_ruuvi_sensors_publish_what_they_sent(bench, run_gattbridge, gattbridge_bin, mosquitto, mqtt,
                                                         tmp_path):
    key = write_bindkey(tmp_path)
    sensors = {"bedroom": bench.broadcaster("xiaomi", XIAOMI),
               "cellar": bench.broadcaster("xiaomi", LOCKED, bindkey_file=key),
               "garden": bench.broadcaster("ruuvi", RUUVI)}
    bridge = start_adverts_bridge(run_gattbridge, gattbridge_bin, tmp_path, mosquitto, [
        passive("bedroom", XIAOMI, "xiaomi"), passive("cellar", LOCKED, "xiaomi", key),
        passive("garden", RUUVI, "ruuvi")], homeassistant=True)
    wait_readings(mqtt, bridge, sensors)
    assert_retained(mosquitto, bridge, sensors)
    for name, sensor in sensors.items():
        fmt, address = sensor.options["format"], sensor.address
        assert [m.text for m in mqtt.received(bridge.topic(name, "availability"))] == ["online"]   # said once
        # Home Assistant: one sensor per reading, with the reference parser's unit (what the broadcaster's packets
        # say: Tests/adverts checks them against xiaomi-ble and ruuvitag-ble).
        units = sensor.broadcasts()[-1]["units"]
        sensors_ha = advert_configs(mosquitto, "sensor", address)
        for measurement in MEASUREMENTS[fmt]:
            config = sensors_ha[bridge.topic(name, measurement)]
            assert config.get("unit_of_measurement") == units.get(measurement), (name, measurement, config)
            assert config["state_class"] == "measurement"
        assert (sensors_ha[bridge.topic(name, "temperature")]["device_class"],
                sensors_ha[bridge.topic(name, "humidity")]["device_class"],
                sensors_ha[bridge.topic(name, "voltage")]["device_class"]) == ("temperature", "humidity", "voltage")
        if fmt == "ruuvi":
            assert sensors_ha[bridge.topic(name, "pressure")]["device_class"] == "pressure"
        else:
            assert sensors_ha[bridge.topic(name, "battery")]["device_class"] == "battery"
        assert_only_sent_values(mqtt, bridge, name, sensor)
    assert_never_connected(mqtt, bridge, sensors)
    bridge.assert_running()


def test_a_wrong_xiaomi_bindkey_gives_one_error_and_no_value(bench, run_gattbridge, gattbridge_bin, mosquitto, mqtt,
                                                             tmp_path):
    check_wrong_bindkey(bench, run_gattbridge, gattbridge_bin, mosquitto, mqtt, tmp_path, "xiaomi", LOCKED, XIAOMI)


@pytest.mark.parametrize("fmt,address,encrypted", [("xiaomi", XIAOMI, False), ("xiaomi", LOCKED, True),
                                                    ("ruuvi", RUUVI, False)],
                         ids=["xiaomi-frame-counter", "xiaomi-encrypted-replay", "ruuvi-sequence-number"])
def test_a_packet_again_is_not_published(bench, run_gattbridge, gattbridge_bin, mosquitto, mqtt, tmp_path, fmt,
                                         address, encrypted):
    """An earlier packet on the air again: a plaintext MiBeacon frame or Ruuvi record is told from a new reading only
    by its frame counter or sequence number (seen in the last minute); an encrypted frame's counter went back."""
    check_replay_not_published(bench, run_gattbridge, gattbridge_bin, mosquitto, mqtt, tmp_path, fmt, address,
                               encrypted)


def test_beacons_are_home_while_heard_and_not_home_after_the_timeout(bench, run_gattbridge, gattbridge_bin,
                                                                     mosquitto, mqtt, tmp_path):
    beacons = {name: bench.broadcaster(fmt, address) for name, (fmt, address) in BEACONS.items()}
    bridge = start_adverts_bridge(run_gattbridge, gattbridge_bin, tmp_path, mosquitto,
                                  [passive(name, address, fmt) for name, (fmt, address) in BEACONS.items()],
                                  homeassistant=True)
    heard_at_home = {}
    for name, beacon in beacons.items():
        mqtt.wait_for(bridge.topic(name, "presence"), "home", 20)
        heard_at_home[name] = beacon.broadcasts()[-1]["n"]
        bridge.wait_online(mqtt, name)
        rssi = mqtt.wait_for(bridge.topic(name, "rssi"), None, 10)
        assert -127 <= int(rssi.text) <= 20
        wait_value(mqtt, bridge, name, "tx_power", beacon)
        # Identity is not a reading: no topic for the UUID, major, minor, namespace or instance.
        for level in beacon.broadcasts()[-1]["identity"]:
            assert mqtt.received(bridge.topic(name, level)) == []
        # Home Assistant: a device tracker, home or not_home, unavailable only with the bridge.
        tracker = advert_configs(mosquitto, "device_tracker", beacon.address)[bridge.topic(name, "presence")]
        assert (tracker["payload_home"], tracker["payload_not_home"]) == ("home", "not_home")
        assert tracker["availability_topic"] == bridge.topic("bridge", "state") and "availability" not in tracker
        tx_power = advert_configs(mosquitto, "sensor", beacon.address)[bridge.topic(name, "tx_power")]
        assert (tx_power["device_class"], tx_power["unit_of_measurement"]) == ("signal_strength", "dBm")

    # Heard all along, the same bytes every second, for longer than adverts.timeout: home, once, and online.
    for name, beacon in beacons.items():
        beacon.wait_for(lambda e, n=heard_at_home[name] + TIMEOUT + 2: e.get("event") == "broadcast" and e["n"] >= n,
                        TIMEOUT + 10)
    for name in beacons:
        assert [m.text for m in mqtt.received(bridge.topic(name, "presence"))] == ["home"]
        assert [m.text for m in mqtt.received(bridge.topic(name, "availability"))] == ["online"]

    # Silent: not_home (and offline) once adverts.timeout has passed without a broadcast, not before.
    mark = mqtt.mark()
    for beacon in beacons.values():
        beacon.stop()
    silent_since = time.monotonic()
    for name in beacons:
        away = mqtt.wait_for(bridge.topic(name, "presence"), "not_home", TIMEOUT + 15, since=mark)
        # The last report may have come up to one scan tick (1 s) before the stop.
        assert away.time - silent_since >= TIMEOUT - 1.5, f"{name}: not_home before adverts.timeout passed"
        bridge.wait_availability(mqtt, name, "offline", 5, since=mark)
    # Retained: a subscriber arriving now learns the beacons are away.
    retained = retained_messages(mosquitto, f"{BASE}/#", f"{BASE}/test-sentinel")
    assert {retained[bridge.topic(name, "presence")] for name in beacons} == {b"not_home"}

    # Back: home again.
    mark = mqtt.mark()
    for beacon in beacons.values():
        beacon.start()
    for name in beacons:
        mqtt.wait_for(bridge.topic(name, "presence"), "home", 20, since=mark)
    retained = retained_messages(mosquitto, f"{BASE}/#", f"{BASE}/test-sentinel")
    assert {retained[bridge.topic(name, "presence")] for name in beacons} == {b"home"}
    bridge.assert_running()
