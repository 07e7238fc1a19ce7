"""A crowd of forged broadcasters in one process (issue 40's hostile radios): one advertisement on each of many
adapters (`--member hciN=ADDRESS`, one adapter per address, as BlueZoo reports only an adapter's first
advertisement), every one flooding BTHome v2 service data full of numbered repeats of object ids that change every
round. `--size` is the advertising data's length: the flags (3 bytes), the service data's AD header and UUID (4) and
the BTHome bytes; `--size 250` is an extended advertisement (only those carry more than 31 bytes, up to 251 in one
HCI command), `--size 31` a legacy one (24 bytes of BTHome).

Only BlueZ's standard LEAdvertisingManager1 API is used: one LEAdvertisement1 object per adapter, registered with
that adapter's RegisterAdvertisement; an advertisement over 31 bytes sets `SecondaryChannel` to `1M`, which asks
bluetoothd for an extended advertisement (a controller with LE extended advertising is needed). BlueZoo does not limit the data's length (it
reports `MaxAdvLen` 31 all the same) and copies each adapter's advertisement into a scanning central's Device1 once
per scan tick, so the crowd puts one packet per member and second on the air, whatever `--interval` asks.

Every `--interval` seconds (1) each member's data is replaced (PropertiesChanged) by its next packet. Events:
{"event":"ready"} once the first member is registered, {"event":"crowd_ready","members":N} once the others are, {"event":"round","n":R,"bytes":B} after each
round; {"cmd":"pause","on":true|false} stops/resumes the rounds (the last packets stay on the air).
"""

from __future__ import annotations

import asyncio
from typing import Optional

from bench.dbus_util import DBusError, call
from bench.peripherals.gatt import Advertisement, PeripheralRunner, emit

BTHOME_UUID = "fcd2"
# BTHome v2 sensor objects (id → bytes of data), bthome.io/format: each name a packet repeats becomes `name_1`, …
OBJECTS = {0x02: 2, 0x03: 2, 0x05: 3, 0x06: 2, 0x08: 2, 0x09: 1, 0x0C: 2, 0x0D: 2, 0x0E: 2, 0x12: 2, 0x13: 2,
           0x14: 2, 0x2E: 1, 0x2F: 1, 0x3D: 2, 0x40: 2, 0x41: 2, 0x43: 2, 0x44: 2, 0x45: 2}


def flood_packet(round_: int, member: int, size: int) -> bytes:
    """BTHome v2, unencrypted, for an advertisement of `size` bytes: the round's object ids (four a round, a new set each round) each
    repeated as often as fits, with values that change every round (so every packet is a new broadcast)."""
    ids = list(OBJECTS)
    chosen = [ids[(round_ * 4 + k) % len(ids)] for k in range(4)]
    room = size - 7
    out = bytearray([0x40])
    k = 0
    while True:
        object_id = chosen[k % len(chosen)] if size > 31 else chosen[0]
        item = bytes([object_id]) + bytes([(round_ + member + k) & 0xFF] * OBJECTS[object_id])
        if len(out) + len(item) > room:
            break
        out += item
        k += 1
    # BTHome asks for ascending object ids: sorted, as a device would send them.
    items, i = [], 1
    while i < len(out):
        n = 1 + OBJECTS[out[i]]
        items.append(bytes(out[i:i + n]))
        i += n
    return bytes([0x40]) + b"".join(sorted(items, key=lambda item: item[0]))


class Crowd:
    def __init__(self, runner: PeripheralRunner, members: list[tuple[str, str]], size: int, interval: float):
        self.runner = runner
        self.members = members
        self.size = size
        self.interval = interval
        self.paused = False
        self.adverts: list[Advertisement] = [runner.advertisement]
        runner.commands["pause"] = self._pause
        runner.background.append(self._run)

    async def _run(self) -> None:
        bus = self.runner.bus
        for i, (adapter, _address) in enumerate(self.members[1:], start=1):
            adv = advertisement(flood_packet(0, i, self.size), self.size)
            path = f"/org/bench/crowd{i}"
            self.runner._exports.append(adv.export(bus, path))
            self.adverts.append(adv)
            while True:
                try:
                    await call(bus, "org.bluez", f"/org/bluez/{adapter}", "org.bluez.LEAdvertisingManager1",
                               "RegisterAdvertisement", "oa{sv}", path, {}, timeout=10)
                    break
                except DBusError as exc:
                    if exc.name not in ("org.freedesktop.DBus.Error.UnknownMethod",
                                        "org.freedesktop.DBus.Error.UnknownObject"):
                        raise
                    await asyncio.sleep(0.1)
        emit("crowd_ready", members=len(self.adverts))
        loop = asyncio.get_running_loop()
        start, round_ = loop.time(), 1
        while True:
            delay = start + round_ * self.interval - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            if self.paused:
                round_ += 1
                continue
            sent = 0
            for i, adv in enumerate(self.adverts):
                packet = flood_packet(round_, i, self.size)
                adv.update(service_data={BTHOME_UUID: packet})
                sent += len(packet)
            emit("round", n=round_, bytes=sent)
            round_ += 1

    async def _pause(self, cmd: dict) -> None:
        self.paused = bool(cmd.get("on", True))


def advertisement(data: bytes, size: int) -> Advertisement:
    adv = Advertisement("", [], None, {BTHOME_UUID: data}, adv_type="broadcast")
    adv.secondary_channel = "1M" if size > 31 else None
    return adv


def build(adapter: str, member: Optional[list[str]] = None, size: int = 250, interval: float = 1.0,
          **_ignored) -> PeripheralRunner:
    members = [tuple(m.split("=", 1)) for m in (member or [])]
    if not members or members[0][0] != adapter:
        raise ValueError("a crowd needs its members (--member hciN=ADDRESS), the first on --adapter")
    runner = PeripheralRunner(adapter, [], advertisement(flood_packet(0, 0, size), size))
    Crowd(runner, members, size, interval)
    return runner
