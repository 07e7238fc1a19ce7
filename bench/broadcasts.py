"""The bytes passive BLE sensors broadcast, encoded as the devices encode them, with the values a reference parser
reads from them.

Pure functions and small state (packet ids, encryption counters); no D-Bus, so the differential tests can import it
next to the reference parsers (Tests/adverts/test_bench_broadcasters.py checks every format here against bthome-ble and
govee-ble). The simulated broadcasters (bench/peripherals/broadcaster.py) put these bytes into an LEAdvertisement1.

A `Packet` carries where the bytes go (service data UUID or manufacturer company id), the bytes, and what a decoder
must read from them: measurements by the reference parsers' names and rounding, events, the packet id.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Optional

BTHOME_UUID = "fcd2"
PVVX_UUID = "181a"
GOVEE_COMPANY = 0xEC88
FORMATS = ("bthome", "pvvx", "govee")

# BTHome v2 device-information byte: version 2 in bits 5-7, bit 0 encryption, bit 2 trigger-based ("sleepy") device.
_BTHOME_V2 = 0x40
_BTHOME_ENCRYPTED = 0x01
_BTHOME_TRIGGER = 0x04
# BTHome v2 object ids (bthome.io/format), in the ascending order the format asks for.
_PACKET_ID, _BATTERY, _TEMPERATURE, _HUMIDITY, _BUTTON = 0x00, 0x01, 0x02, 0x03, 0x3A
BUTTON_EVENTS = {"press": 0x01, "double_press": 0x02, "triple_press": 0x03, "long_press": 0x04}


@dataclass
class Reading:
    """One set of sensor values on a 0.01 grid (BTHome and pvvx carry 0.01 °C and 0.01 %; Govee rounds to 0.1)."""
    temperature: float
    humidity: float
    battery: int
    voltage_mv: int = 2950


@dataclass
class Packet:
    service_data: dict[str, bytes] = field(default_factory=dict)        # 16-bit UUID → bytes
    manufacturer_data: dict[int, bytes] = field(default_factory=dict)   # company id → bytes
    measurements: dict[str, float] = field(default_factory=dict)
    events: list[dict] = field(default_factory=list)
    packet_id: Optional[int] = None
    encrypted: bool = False

    def as_event(self) -> dict:
        """The JSON form the broadcaster reports to the tests."""
        return {"service_data": {k: v.hex() for k, v in self.service_data.items()},
                "manufacturer_data": {str(k): v.hex() for k, v in self.manufacturer_data.items()},
                "measurements": self.measurements, "events": self.events, "packet_id": self.packet_id,
                "encrypted": self.encrypted}


def reading(tick: int) -> Reading:
    """The bench's weather: tick n → temperature 20 + 0.13·(n mod 60) °C, humidity 45 + 0.37·(n mod 40) %, battery
    falling 1 % every 10 ticks from 100, voltage 3000 − (n mod 50) mV. Every step changes the value in every format,
    Govee's 0.1 grid included."""
    return Reading(temperature=round(20 + 0.13 * (tick % 60), 2), humidity=round(45 + 0.37 * (tick % 40), 2),
                   battery=max(1, 100 - tick // 10), voltage_mv=3000 - tick % 50)


def address_bytes(address: str) -> bytes:
    """"A4:C1:38:1A:2B:3C" → the six bytes in the order the address is written."""
    return bytes.fromhex(address.replace(":", ""))


# --- BTHome v2 -------------------------------------------------------------------------------------------------

def bthome_objects(packet_id: int, value: Reading, button: Optional[str] = None) -> bytes:
    out = bytes([_PACKET_ID, packet_id & 0xFF, _BATTERY, value.battery])
    out += bytes([_TEMPERATURE]) + struct.pack("<h", round(value.temperature * 100))
    out += bytes([_HUMIDITY]) + struct.pack("<H", round(value.humidity * 100))
    if button is not None:
        out += bytes([_BUTTON, BUTTON_EVENTS[button]])
    return out


def bthome_encrypt(objects: bytes, address: str, bindkey: bytes, counter: int, info: int) -> bytes:
    """AES-CCM (4-byte tag) as BTHome v2 specifies: nonce = address, UUID fcd2 (LE), device-info byte, counter (LE);
    the service data is the info byte, the ciphertext, the counter and the tag."""
    from cryptography.hazmat.primitives.ciphers.aead import AESCCM

    counter_bytes = struct.pack("<I", counter)
    nonce = address_bytes(address) + b"\xd2\xfc" + bytes([info]) + counter_bytes
    sealed = AESCCM(bindkey, tag_length=4).encrypt(nonce, objects, None)
    return bytes([info]) + sealed[:-4] + counter_bytes + sealed[-4:]


def bthome(packet_id: int, value: Reading, address: str, button: Optional[str] = None,
           bindkey: Optional[bytes] = None, counter: int = 0) -> Packet:
    """One BTHome v2 packet: packet id, battery, temperature, humidity and optionally a button event; encrypted with
    `bindkey` (and the encryption `counter`, which must grow from packet to packet) when one is given."""
    info = _BTHOME_V2 | (_BTHOME_TRIGGER if button is not None else 0)
    objects = bthome_objects(packet_id, value, button)
    if bindkey is not None:
        info |= _BTHOME_ENCRYPTED
        data = bthome_encrypt(objects, address, bindkey, counter, info)
    else:
        data = bytes([info]) + objects
    events = [{"name": "button", "event_type": button}] if button is not None else []
    return Packet(service_data={BTHOME_UUID: data},
                  measurements={"battery": value.battery, "temperature": value.temperature,
                                "humidity": value.humidity},
                  events=events, packet_id=packet_id & 0xFF, encrypted=bindkey is not None)


# --- pvvx custom firmware (LYWSD03MMC and kin), service data 0x181A --------------------------------------------

def pvvx(counter: int, value: Reading, address: str) -> Packet:
    """15 bytes, little-endian: address (reversed), temperature 0.01 °C, humidity 0.01 %, battery mV, battery %,
    measurement counter, flags."""
    data = address_bytes(address)[::-1] + struct.pack("<hHHBBB", round(value.temperature * 100),
                                                      round(value.humidity * 100), value.voltage_mv,
                                                      value.battery, counter & 0xFF, 0x04)
    return Packet(service_data={PVVX_UUID: data},
                  measurements={"temperature": value.temperature, "humidity": value.humidity,
                                "battery": value.battery, "voltage": value.voltage_mv / 1000},
                  packet_id=counter & 0xFF)


# --- Govee H5072/H5075, manufacturer data 0xEC88 ---------------------------------------------------------------

GOVEE_NAME = "GVH5075_2B3C"


def govee(value: Reading) -> Packet:
    """6 bytes: 00, temperature and humidity packed in three big-endian bytes (|t|·10·1000 + h·10, bit 23 the sign),
    battery %, 00. Resolution 0.1 (govee-ble truncates, so the bench's values sit on the 0.1 grid)."""
    temperature = round(value.temperature, 1)
    humidity = round(value.humidity, 1)
    packed = round(abs(temperature) * 10) * 1000 + round(humidity * 10)
    if temperature < 0:
        packed |= 0x800000
    data = b"\x00" + packed.to_bytes(3, "big") + bytes([value.battery & 0x7F, 0x00])
    return Packet(manufacturer_data={GOVEE_COMPANY: data},
                  measurements={"temperature": temperature, "humidity": humidity, "battery": value.battery})


class Sensor:
    """One broadcasting sensor's state: its format, address, optional bindkey, and the tick/packet/counter numbers
    that grow with every packet it sends."""

    def __init__(self, format: str, address: str, bindkey: Optional[bytes] = None, first_tick: int = 0):
        if format not in FORMATS:
            raise ValueError(f"unknown broadcast format {format!r} (one of {', '.join(FORMATS)})")
        if bindkey is not None and format != "bthome":
            raise ValueError("only bthome broadcasts are encrypted here")
        self.format = format
        self.address = address.upper()
        self.bindkey = bindkey
        self.tick = first_tick
        self.counter = 0x100 + first_tick     # BTHome encryption counter: any start, then strictly increasing

    def next(self, button: Optional[str] = None) -> Packet:
        """The next packet (a button event only in BTHome)."""
        value = reading(self.tick)
        if self.format == "bthome":
            packet = bthome(self.tick, value, self.address, button, self.bindkey, self.counter)
        elif self.format == "pvvx":
            packet = pvvx(self.tick, value, self.address)
        else:
            packet = govee(value)
        self.tick += 1
        self.counter += 1
        return packet
