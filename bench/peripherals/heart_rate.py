"""Heart-rate strap: Heart Rate 0x180D (Measurement 0x2A37, notify), Battery 0x180F (Level 0x2A19, read +
notify) and Device Information 0x180A (Manufacturer Name 0x2A29, Model Number 0x2A24, read-only).

The measurements cycle through SEQUENCE, which exercises every flag of the Heart Rate Measurement format:
bit 0 value format (uint8 / uint16), bits 1-2 sensor contact (bit 2 "supported", bit 1 "detected"),
bit 3 energy expended present (uint16 kJ), bit 4 RR intervals present (uint16 each, 1/1024 s, 0..n of them).
Notification i carries SEQUENCE[i % len(SEQUENCE)], counting from 0 at each new subscription, so a test
predicts the decoded JSON with `expected_json(i)`.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Optional

from bench.peripherals.gatt import (Advertisement, Characteristic, PeriodicNotifier, PeripheralRunner,
                                    Service)

HEART_RATE_SERVICE = "180d"
HEART_RATE_MEASUREMENT = "2a37"
BATTERY_SERVICE = "180f"
BATTERY_LEVEL = "2a19"
DEVICE_INFORMATION = "180a"
MANUFACTURER_NAME = "2a29"
MODEL_NUMBER = "2a24"

MANUFACTURER = "Bench Instruments"
MODEL = "HRM-1"
DEFAULT_NAME = "Bench HRM"


@dataclass(frozen=True)
class Measurement:
    bpm: int
    wide: bool = False                 # flag bit 0: bpm as uint16
    contact_bits: int = 0              # flag bits 1-2 as a 2-bit number: 0b10 supported, 0b01 detected
    energy_kj: Optional[int] = None    # flag bit 3
    rr: tuple[int, ...] = field(default_factory=tuple)  # flag bit 4, units of 1/1024 s

    @property
    def flags(self) -> int:
        return (int(self.wide) | (self.contact_bits << 1) | (0x08 if self.energy_kj is not None else 0)
                | (0x10 if self.rr else 0))

    def encode(self) -> bytes:
        out = bytes([self.flags])
        out += struct.pack("<H", self.bpm) if self.wide else bytes([self.bpm])
        if self.energy_kj is not None:
            out += struct.pack("<H", self.energy_kj)
        for r in self.rr:
            out += struct.pack("<H", r)
        return out

    @property
    def contact(self) -> Optional[bool]:
        """docs/configuration.md#codecs: null when contact is not supported (bit 2 clear), else whether it is detected (bit 1)."""
        if not self.contact_bits & 0b10:
            return None
        return bool(self.contact_bits & 0b01)

    def expected(self) -> dict:
        """The decoded value gattbridge's heart_rate_measurement codec must publish (as a dict)."""
        return {"bpm": self.bpm, "contact": self.contact, "energy_kj": self.energy_kj,
                "rr_ms": [r * 1000 / 1024 for r in self.rr]}


SEQUENCE: tuple[Measurement, ...] = (
    Measurement(72),                                                   # 00 48: uint8, no contact support
    Measurement(75, contact_bits=0b11),                                # 06 4b: contact supported + detected
    Measurement(80, contact_bits=0b10),                                # 04 50: supported, not detected
    Measurement(300, wide=True),                                       # 01 2c01: uint16 bpm
    Measurement(90, contact_bits=0b11, energy_kj=1234),                # 0e 5a d204: energy expended
    Measurement(88, contact_bits=0b11, rr=(832,)),                     # 16 58 4003: one RR (812.5 ms)
    Measurement(130, wide=True, contact_bits=0b11, energy_kj=500, rr=(512, 1024, 700)),  # 1f …: everything
    Measurement(60, contact_bits=0b01),                                # 02 3c: "detected" without support
)


def measurement(i: int) -> Measurement:
    return SEQUENCE[i % len(SEQUENCE)]


def encoded(i: int) -> bytes:
    """Bytes of notification i (0-based, counted from the subscription)."""
    return measurement(i).encode()


def expected_json(i: int) -> dict:
    """Decoded JSON of notification i, as a dict (compare parsed payloads; rr_ms are floats)."""
    return measurement(i).expected()


def build(adapter: str, name: Optional[str] = None, rate: float = 1.0, count: int = 0,
          acquire_notify: bool = True, log_notify: bool = False, battery: int = 87,
          battery_interval: float = 0.0, manufacturer_data: Optional[dict[int, bytes]] = None,
          service_data: Optional[dict[str, bytes]] = None, mtu: Optional[int] = None) -> PeripheralRunner:
    hrm = Characteristic(HEART_RATE_MEASUREMENT, ["notify"], encoded(0), acquire_notify=acquire_notify,
                         log_notify=log_notify, mtu=mtu)
    PeriodicNotifier(hrm, encoded, rate, count)
    level = Characteristic(BATTERY_LEVEL, ["read", "notify"], bytes([battery]), acquire_notify=acquire_notify,
                           log_notify=log_notify, mtu=mtu)
    # Battery i: the level drops by one per notification (wrapping to 100 below 0).
    PeriodicNotifier(level, lambda i: bytes([(battery - 1 - i) % 101]),
                     1.0 / battery_interval if battery_interval > 0 else 0)
    services = [
        Service(HEART_RATE_SERVICE, [hrm]),
        Service(BATTERY_SERVICE, [level]),
        Service(DEVICE_INFORMATION, [
            Characteristic(MANUFACTURER_NAME, ["read"], MANUFACTURER.encode()),
            Characteristic(MODEL_NUMBER, ["read"], MODEL.encode()),
        ]),
    ]
    adv = Advertisement(name or DEFAULT_NAME, [HEART_RATE_SERVICE, BATTERY_SERVICE], manufacturer_data,
                        service_data)
    return PeripheralRunner(adapter, services, adv)
