"""The bench's simulated broadcasters (bench/broadcasts.py) against the reference parsers: the values and units each
packet is said to carry, which the integration tests (Tests/integration/test_adverts.py, test_adverts_formats.py)
expect on MQTT and in the Home Assistant configs, are what bthome-ble, xiaomi-ble, govee-ble and ruuvitag-ble read
from its bytes. pvvx and the iBeacon and Eddystone beacons have no reference parser; `gattbridge adverts decode` reads
them in the integration tests.
"""
from __future__ import annotations

import pathlib
import sys

import pytest

import reference

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))

from bench.broadcasts import GOVEE_NAME, RUUVI_NAME, XIAOMI_NAME, Sensor  # noqa: E402

ADDRESS = "A4:C1:38:0B:70:01"
BINDKEY = "231d39c1d7cc1ab1aee224cd096db932"
TICKS = 130     # more than every period of the bench's value sequence (60 and 40 ticks) and the 8-bit packet id wrap


def request(sensor: Sensor, packet, name: str, bindkey: str | None) -> dict:
    return {"address": sensor.address, "name": name, "bindkey": bindkey,
            "service_data": {k: v.hex() for k, v in packet.service_data.items()},
            "manufacturer_data": {str(k): v.hex() for k, v in packet.manufacturer_data.items()}}


@pytest.mark.parametrize("family,bindkey,name", [("bthome", None, "BTHome Thermometer"),
                                                 ("bthome", BINDKEY, "BTHome Thermometer"),
                                                 ("govee", None, GOVEE_NAME),
                                                 ("xiaomi", None, XIAOMI_NAME),
                                                 ("xiaomi", BINDKEY, XIAOMI_NAME),
                                                 ("ruuvi", None, RUUVI_NAME)],
                         ids=["bthome", "bthome-encrypted", "govee", "xiaomi", "xiaomi-encrypted", "ruuvi"])
def test_each_packet_reads_as_the_broadcaster_says(family, bindkey, name):
    sensor = Sensor(family, ADDRESS, bytes.fromhex(bindkey) if bindkey else None)
    for tick in range(TICKS):
        button = ("press", "double_press", "long_press")[tick % 3] if family == "bthome" and tick % 7 == 3 else None
        packet = sensor.next(button=button)
        read = reference.decode(family, request(sensor, packet, name, bindkey))
        assert read["measurements"] == packet.measurements, (tick, packet.as_event())
        assert read["units"] == packet.units, (tick, packet.as_event())
        assert read["events"] == packet.events, (tick, packet.as_event())
        # xiaomi-ble and ruuvitag-ble do not report the frame counter and sequence number that gattbridge reads as
        # the packet id (docs/adverts.md): it is what bench/broadcasts.py put there.
        if family in ("xiaomi", "ruuvi"):
            assert read["packet_id"] is None
        else:
            assert read["packet_id"] == packet.packet_id, (tick, packet.as_event())


@pytest.mark.parametrize("family,name", [("bthome", "BTHome Thermometer"), ("xiaomi", XIAOMI_NAME)])
def test_a_wrong_bindkey_reads_nothing(family, name):
    sensor = Sensor(family, ADDRESS, bytes.fromhex(BINDKEY))
    packet = sensor.next()
    read = reference.decode(family, request(sensor, packet, name, "00" * 16))
    assert read == {"measurements": {}, "units": {}, "events": [], "packet_id": None}
