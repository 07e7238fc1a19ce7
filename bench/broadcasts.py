"""The bytes passive BLE sensors broadcast, encoded as the devices encode them, with the values a reference parser
reads from them.

Pure functions and small state (packet ids, encryption counters); no D-Bus, so the differential tests can import it
next to the reference parsers (Tests/adverts/test_bench_broadcasters.py checks the formats here against bthome-ble,
xiaomi-ble, govee-ble and ruuvitag-ble; pvvx and the beacons have none). The simulated broadcasters
(bench/peripherals/broadcaster.py) put these bytes into an LEAdvertisement1.

A `Packet` carries where the bytes go (service data UUID or manufacturer company id), the bytes, and what a decoder
must read from them: measurements by the reference parsers' names, rounding and units, events, the packet id, and a
beacon's identity (which is no reading: the daemon publishes presence for it).
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass, field
from typing import Optional

BTHOME_UUID = "fcd2"
PVVX_UUID = "181a"
GOVEE_COMPANY = 0xEC88
MIBEACON_UUID = "fe95"
RUUVI_COMPANY = 0x0499
APPLE_COMPANY = 0x004C
EDDYSTONE_UUID = "feaa"
FORMATS = ("bthome", "pvvx", "govee", "xiaomi", "ruuvi", "ibeacon", "eddystone")
ENCRYPTED_FORMATS = ("bthome", "xiaomi")

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
    units: dict[str, str] = field(default_factory=dict)                 # measurement → unit, where it has one
    identity: dict[str, str] = field(default_factory=dict)              # a beacon's UUID, major, minor, …

    def as_event(self) -> dict:
        """The JSON form the broadcaster reports to the tests."""
        return {"service_data": {k: v.hex() for k, v in self.service_data.items()},
                "manufacturer_data": {str(k): v.hex() for k, v in self.manufacturer_data.items()},
                "measurements": self.measurements, "events": self.events, "packet_id": self.packet_id,
                "encrypted": self.encrypted, "units": self.units, "identity": self.identity}


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
                  units={"battery": "%", "temperature": "°C", "humidity": "%"},
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
                  units={"temperature": "°C", "humidity": "%", "battery": "%", "voltage": "V"},
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
                  measurements={"temperature": temperature, "humidity": humidity, "battery": value.battery},
                  units={"temperature": "°C", "humidity": "%", "battery": "%"})


# --- Xiaomi MiBeacon v5 (LYWSD03MMC stock firmware), service data 0xFE95 -----------------------------------------

XIAOMI_NAME = "LYWSD03MMC"
LYWSD03MMC = 0x055B          # its product id, the one xiaomi-ble calls LYWSD03MMC
# Frame control (little-endian): version 5 (bits 12-15), objects included (bit 6), address included (bit 4),
# encrypted (bit 3).
_MIBEACON_V5, _MIBEACON_OBJECTS, _MIBEACON_ADDRESS, _MIBEACON_ENCRYPTED = 0x5000, 0x0040, 0x0010, 0x0008
_MI_TEMPERATURE, _MI_HUMIDITY, _MI_BATTERY = 0x1004, 0x1006, 0x100A


def mibeacon_objects(value: Reading) -> bytes:
    """Temperature (0.1 °C, signed), humidity (0.1 %) and battery (%), each as id (LE), length, value (LE). A real
    LYWSD03MMC sends one object per frame; all three in one frame make every packet carry every reading."""
    out = struct.pack("<HBh", _MI_TEMPERATURE, 2, round(value.temperature * 10))
    out += struct.pack("<HBH", _MI_HUMIDITY, 2, round(value.humidity * 10))
    out += struct.pack("<HBB", _MI_BATTERY, 1, value.battery)
    return out


def mibeacon_encrypt(objects: bytes, header: bytes, address: str, bindkey: bytes, extension: bytes) -> bytes:
    """MiBeacon v4/v5 AES-CCM (4-byte tag) as xiaomi-ble decrypts it: nonce = address (reversed), product id, frame
    counter, the 3-byte counter extension; associated data 0x11. The frame ends with the ciphertext, the extension and
    the tag."""
    from cryptography.hazmat.primitives.ciphers.aead import AESCCM

    nonce = address_bytes(address)[::-1] + header[2:5] + extension
    sealed = AESCCM(bindkey, tag_length=4).encrypt(nonce, objects, b"\x11")
    return sealed[:-4] + extension + sealed[-4:]


def xiaomi(counter: int, value: Reading, address: str, bindkey: Optional[bytes] = None) -> Packet:
    """One MiBeacon v5 frame of a LYWSD03MMC: frame control, product id, frame counter (the low byte of `counter`),
    the address (reversed), then the objects, encrypted with `bindkey` (the counter's upper bytes are the extension,
    so the full counter grows from frame to frame) when one is given."""
    control = _MIBEACON_V5 | _MIBEACON_OBJECTS | _MIBEACON_ADDRESS | (_MIBEACON_ENCRYPTED if bindkey else 0)
    header = struct.pack("<HHB", control, LYWSD03MMC, counter & 0xFF)
    objects = mibeacon_objects(value)
    body = address_bytes(address)[::-1]
    if bindkey is not None:
        body += mibeacon_encrypt(objects, header, address, bindkey, ((counter >> 8) & 0xFFFFFF).to_bytes(3, "little"))
    else:
        body += objects
    temperature = round(value.temperature * 10) / 10
    # xiaomi-ble truncates the LYWSD03MMC's humidity to whole percent; the voltage is its estimate from the level.
    humidity = int(round(value.humidity * 10) / 10)
    return Packet(service_data={MIBEACON_UUID: header + body},
                  measurements={"temperature": temperature, "humidity": humidity, "battery": value.battery,
                                "voltage": 2.2 + (3.1 - 2.2) * (value.battery / 100)},
                  units={"temperature": "°C", "humidity": "%", "battery": "%", "voltage": "V"},
                  packet_id=counter & 0xFF, encrypted=bindkey is not None)


# --- RuuviTag data format 5 ("RAWv2"), manufacturer data 0x0499 ---------------------------------------------------

RUUVI_NAME = "Ruuvi 2B3C"
_RUUVI_TX_POWER = 4          # dBm, sent as (dBm + 40) / 2 in the power field's low 5 bits


def ruuvi_motion(tick: int) -> tuple[int, tuple[int, int, int]]:
    """The tag's movement counter (one movement every 3 ticks) and acceleration in mg (x, y, z: flat, wobbling)."""
    return (tick // 3) % 256, (-20 + 7 * (tick % 9), 15 - 4 * (tick % 5), 1000 + 3 * (tick % 11))


def ruuvi_pressure(tick: int) -> float:
    """hPa on the format's 0.01 grid, a new value every tick."""
    return round(1002 + 0.29 * (tick % 70), 2)


def ruuvi(tick: int, value: Reading, address: str) -> Packet:
    """24 bytes, big-endian: format 5, temperature 0.005 °C, humidity 0.0025 %, pressure Pa − 50 000, acceleration
    x, y, z in mg, battery mV − 1600 (11 bits) and TX power (5 bits), movement counter, measurement sequence number,
    address. Read as ruuvitag-ble reads it: acceleration in m/s² rounded to 0.01, the total from the rounded axes."""
    movements, (x, y, z) = ruuvi_motion(tick)
    pressure = ruuvi_pressure(tick)
    power = (value.voltage_mv - 1600) << 5 | (_RUUVI_TX_POWER + 40) // 2
    data = struct.pack(">BhHHhhhHBH", 5, round(value.temperature * 200), round(value.humidity * 400),
                       round(pressure * 100) - 50000, x, y, z, power, movements, tick & 0xFFFF)
    data += address_bytes(address)
    axes = [round(mg * 0.00980665, 2) for mg in (x, y, z)]
    return Packet(manufacturer_data={RUUVI_COMPANY: data},
                  measurements={"temperature": value.temperature, "humidity": value.humidity, "pressure": pressure,
                                "voltage": value.voltage_mv, "movement_counter": movements,
                                "acceleration_x": axes[0], "acceleration_y": axes[1], "acceleration_z": axes[2],
                                "acceleration_total": round(math.hypot(*axes), 2)},
                  units={"temperature": "°C", "humidity": "%", "pressure": "hPa", "voltage": "mV",
                         "acceleration_x": "m/s²", "acceleration_y": "m/s²", "acceleration_z": "m/s²",
                         "acceleration_total": "m/s²"},
                  packet_id=tick & 0xFFFF)


# --- Presence beacons: iBeacon (Apple manufacturer data) and Eddystone-UID (service data 0xFEAA) --------------------

IBEACON_NAME = "iBeacon"
EDDYSTONE_NAME = "Eddystone"
IBEACON_UUID = "e2c56db5-dffb-48d2-b060-d0f5a71096e0"
EDDYSTONE_NAMESPACE = "edd1ebeac04e5defa017"
_BEACON_TX_POWER = -59       # iBeacon: calibrated RSSI at 1 m
_EDDYSTONE_TX_POWER = -20    # Eddystone: calibrated TX power at 0 m


def ibeacon(address: str) -> Packet:
    """02 15, the proximity UUID, major and minor (big-endian; the minor is the address's last two bytes, so two
    bench beacons differ), the calibrated TX power. The same bytes all its life: a beacon says only that it is here."""
    major, minor = 1, int.from_bytes(address_bytes(address)[-2:], "big")
    data = b"\x02\x15" + bytes.fromhex(IBEACON_UUID.replace("-", "")) + struct.pack(">HHb", major, minor,
                                                                                    _BEACON_TX_POWER)
    return Packet(manufacturer_data={APPLE_COMPANY: data}, measurements={"tx_power": _BEACON_TX_POWER},
                  units={"tx_power": "dBm"},
                  identity={"uuid": IBEACON_UUID, "major": str(major), "minor": str(minor)})


def eddystone(address: str) -> Packet:
    """An Eddystone-UID frame: 00, TX power at 0 m, a 10-byte namespace, a 6-byte instance (the address), 2 reserved
    bytes. Constant, like the iBeacon's."""
    instance = address_bytes(address)
    data = struct.pack(">Bb", 0x00, _EDDYSTONE_TX_POWER) + bytes.fromhex(EDDYSTONE_NAMESPACE) + instance + b"\x00\x00"
    return Packet(service_data={EDDYSTONE_UUID: data}, measurements={"tx_power": _EDDYSTONE_TX_POWER},
                  units={"tx_power": "dBm"}, identity={"namespace": EDDYSTONE_NAMESPACE, "instance": instance.hex()})


class Sensor:
    """One broadcasting sensor's state: its format, address, optional bindkey, and the tick/packet/counter numbers
    that grow with every packet it sends."""

    def __init__(self, format: str, address: str, bindkey: Optional[bytes] = None, first_tick: int = 0):
        if format not in FORMATS:
            raise ValueError(f"unknown broadcast format {format!r} (one of {', '.join(FORMATS)})")
        if bindkey is not None and format not in ENCRYPTED_FORMATS:
            raise ValueError(f"only {' and '.join(ENCRYPTED_FORMATS)} broadcasts are encrypted here")
        self.format = format
        self.address = address.upper()
        self.bindkey = bindkey
        self.tick = first_tick
        # BTHome's encryption counter and MiBeacon's frame counter (low byte) with its extension: any start, then
        # strictly increasing.
        self.counter = 0x100 + first_tick

    def next(self, button: Optional[str] = None) -> Packet:
        """The next packet (a button event only in BTHome)."""
        value = reading(self.tick)
        if self.format == "bthome":
            packet = bthome(self.tick, value, self.address, button, self.bindkey, self.counter)
        elif self.format == "pvvx":
            packet = pvvx(self.tick, value, self.address)
        elif self.format == "govee":
            packet = govee(value)
        elif self.format == "xiaomi":
            packet = xiaomi(self.counter, value, self.address, self.bindkey)
        elif self.format == "ruuvi":
            packet = ruuvi(self.tick, value, self.address)
        elif self.format == "ibeacon":
            packet = ibeacon(self.address)
        else:
            packet = eddystone(self.address)
        self.tick += 1
        self.counter += 1
        return packet
