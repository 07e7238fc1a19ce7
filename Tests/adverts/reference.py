"""Runs Home Assistant's reference parsers on one broadcast and normalises what they say, the same shape as the
answers of `gattbridge adverts decode --batch`: {"measurements": {name: value}, "units": {name: unit},
"events": [{"name", "event_type", …}], "packet_id": N | None}.

Normalisation, each the documented naming of docs/adverts.md: binary sensors whose name is also a sensor's get
`_binary`; `packet_id` moves out of the measurements; None values (fields a device marks "not available") and
govee-ble's "error" placeholders and non-finite floats (random bytes read as a float) are left out (gattbridge publishes nothing for them); timestamps become ISO 8601
text. The RSSI sensor that every parser adds (`signal_strength`) is not a broadcast value and is dropped.
"""
from __future__ import annotations

import datetime
import math
from typing import Any

from habluetooth import BluetoothServiceInfoBleak

from bthome_ble import BTHomeBluetoothDeviceData
from govee_ble import GoveeBluetoothDeviceData
from ruuvitag_ble import RuuvitagBluetoothDeviceData
from xiaomi_ble import XiaomiBluetoothDeviceData

SHARED_WITH_SENSORS = {"battery", "moisture", "power", "gas", "carbon_monoxide"}


def service_info(request: dict[str, Any]) -> BluetoothServiceInfoBleak:
    return BluetoothServiceInfoBleak(
        name=request.get("name") or request.get("address") or "00:00:00:00:00:00",
        address=request.get("address") or "00:00:00:00:00:00",
        rssi=-60,
        manufacturer_data={int(k): bytes.fromhex(v) for k, v in request.get("manufacturer_data", {}).items()},
        service_data={full_uuid(k): bytes.fromhex(v) for k, v in request.get("service_data", {}).items()},
        service_uuids=[],
        source="",
        device=None,
        advertisement=None,
        connectable=False,
        time=1709331995.5,
        tx_power=None,
    )


def full_uuid(text: str) -> str:
    text = text.lower()
    return f"0000{text}-0000-1000-8000-00805f9b34fb" if len(text) == 4 else text


def parser(family: str, bindkey: str | None):
    key = bytes.fromhex(bindkey) if bindkey else None
    if family == "bthome":
        return BTHomeBluetoothDeviceData(bindkey=key)
    if family == "xiaomi":
        return XiaomiBluetoothDeviceData(bindkey=key)
    if family == "govee":
        return GoveeBluetoothDeviceData()
    if family == "ruuvi":
        return RuuvitagBluetoothDeviceData()
    raise ValueError(family)


def decode(family: str, request: dict[str, Any]) -> dict[str, Any]:
    """The reference's reading of one broadcast by a fresh parser (no history: no dedup, no replay state)."""
    update = parser(family, request.get("bindkey")).update(service_info(request))
    measurements: dict[str, Any] = {}
    units: dict[str, str] = {}
    packet_id = None
    for key, value in update.entity_values.items():
        if key.device_id is not None or key.key == "signal_strength":
            continue
        native = value.native_value
        if key.key == "packet_id" or key.key.startswith("packet_id_"):
            packet_id = native  # several packet ids (packet_id_1, _2): the last counts, as in gattbridge
            continue
        if native is None or native == "error" or (isinstance(native, float) and not math.isfinite(native)):
            continue
        if isinstance(native, datetime.datetime):
            native = native.isoformat()
        measurements[key.key] = native
        unit = update.entity_descriptions[key].native_unit_of_measurement
        if unit is not None:
            units[key.key] = str(unit)
    for key, value in update.binary_entity_values.items():
        if key.device_id is not None or value.native_value is None:
            continue
        name = key.key
        base, _, postfix = name.rpartition("_")
        if base and postfix.isdigit() and base in SHARED_WITH_SENSORS:
            name = f"{base}_binary_{postfix}"
        elif name in SHARED_WITH_SENSORS:
            name = f"{name}_binary"
        measurements[name] = bool(value.native_value)
    events = []
    for key, event in update.events.items():
        if key.device_id is not None:
            continue
        entry = {"name": key.key, "event_type": event.event_type}
        for prop, prop_value in (event.event_properties or {}).items():
            entry[prop] = prop_value
        events.append(entry)
    return {"measurements": measurements, "units": units, "events": events, "packet_id": packet_id}
