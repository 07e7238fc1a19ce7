"""A passive sensor: no GATT service, only an advertisement (type "broadcast") whose service or manufacturer data
carries its readings, as these devices send them (bytes from bench/broadcasts.py), `--format`:

- `bthome`: a BTHome v2 thermometer (`--bindkey-file` encrypts it);
- `pvvx`: a Xiaomi LYWSD03MMC on the pvvx custom firmware (service data 181A);
- `govee`: a Govee H5075 (manufacturer data 0xEC88);
- `xiaomi`: a LYWSD03MMC on its stock firmware, MiBeacon v5 (service data FE95: temperature, humidity, battery;
  `--bindkey-file` encrypts it with AES-CCM as xiaomi-ble decrypts it);
- `ruuvi`: a RuuviTag, data format 5 (manufacturer data 0x0499: temperature, humidity, pressure, battery voltage,
  movement counter, acceleration);
- `ibeacon`, `eddystone`: presence beacons (Apple manufacturer data 0x004C type 02 15; an Eddystone-UID frame in
  service data FEAA) whose bytes never change.

Only BlueZ's standard LEAdvertisingManager1 API is used, so it runs on a real bluetoothd too.

Every `--interval` seconds (default 1) the next packet replaces the advertisement's data through PropertiesChanged on
the LEAdvertisement1 object: the packet id (BTHome), measurement counter (pvvx), frame counter (MiBeacon), sequence
number (Ruuvi) and the values step on (see `broadcasts.reading`); a beacon sends its same bytes again. BlueZoo
copies the first advertisement of an adapter into each scanning central's Device1 at every scan tick, so one
broadcaster needs one adapter (the bench gives every peripheral its own).

Events: {"event":"broadcast","n":…,"service_data":{uuid: hex},"manufacturer_data":{id: hex},"measurements":{…},
"units":{…},"identity":{…},"events":[…],"packet_id":…,"encrypted":…} for every packet (`identity`: a beacon's UUID,
major, minor or namespace, instance), plus the usual ready/stopped/done.
Commands (stdin): {"cmd":"press","event":"press"} sends a packet with a BTHome button event at once and keeps it on
the air for `--event-hold` seconds (a real button repeats its event packet so a scanner cannot miss it);
{"cmd":"pause","on":true|false} stops/resumes the stepping (the last packet stays on the air);
{"cmd":"replay","n":N} puts packet N's bytes on the air again for `--event-hold` seconds, as an attacker replaying a
recorded packet would (reported as {"event":"replayed","n":N,…});
{"cmd":"raw","service_data":{uuid: hex},"manufacturer_data":{id: hex}} puts bytes a test made on the air for
`--event-hold` seconds, as a hostile radio would (reported as {"event":"raw",…}; the stepping resumes after);
{"cmd":"advertise","on":false} goes silent altogether.

On the real bluetoothd (Tests/realbluez) it runs with `--connectable`. The Linux kernel sends a non-connectable
advertisement from a fresh non-resolvable private address each time it is set up, which no saved device's address
matches, and bluetoothd refuses flags in one ("Broadcast cannot set flags"); a connectable one ("peripheral") goes
out from the controller's own address, as a real sensor's does (nobody connects: the daemon never connects to a
passive device). It needs no `--readvertise` there: btvirt's emulated controllers report an advertisement only when
advertising or scanning is switched on, but bluetoothd sets the advertisement up again on every PropertiesChanged,
so each new packet is reported (a packet repeated unchanged would be heard once).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Optional

from bench.broadcasts import (EDDYSTONE_NAME, GOVEE_NAME, IBEACON_NAME, RUUVI_NAME, XIAOMI_NAME, Packet,
                              Sensor)
from bench.peripherals.gatt import Advertisement, PeripheralRunner, emit

DEFAULT_NAMES = {"bthome": "BTHome Thermometer", "pvvx": "ATC_1A2B3C", "govee": GOVEE_NAME, "xiaomi": XIAOMI_NAME,
                 "ruuvi": RUUVI_NAME, "ibeacon": IBEACON_NAME, "eddystone": EDDYSTONE_NAME}


def read_bindkey(path: str) -> bytes:
    """32 hex digits, as a bindkey file holds them (never on the command line: it is a secret)."""
    text = Path(path).read_text().strip()
    key = bytes.fromhex(text)
    if len(key) != 16:
        raise ValueError(f"{path}: a bindkey is 32 hex digits")
    return key


class Broadcaster:
    def __init__(self, runner: PeripheralRunner, sensor: Sensor, interval: float, event_hold: float):
        self.runner = runner
        self.sensor = sensor
        self.interval = interval
        self.event_hold = event_hold
        self.paused = False
        self.hold_until = 0.0
        self.sent: dict[int, Packet] = {}
        runner.commands["press"] = self._press
        runner.commands["pause"] = self._pause
        runner.commands["replay"] = self._replay
        runner.commands["raw"] = self._raw
        runner.background.append(self._tick)

    def publish(self, packet: Packet, event: str = "broadcast", n: Optional[int] = None) -> None:
        adv = self.runner.advertisement
        adv.update(manufacturer_data=packet.manufacturer_data or None, service_data=packet.service_data or None)
        if n is None:
            n = self.sensor.tick - 1
            self.sent[n] = packet
        emit(event, n=n, **packet.as_event())

    async def _tick(self) -> None:
        loop = asyncio.get_running_loop()
        start = loop.time()
        i = 1
        while True:
            # Paced against the start, so a slow round does not shift the schedule.
            delay = start + i * self.interval - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            i += 1
            if self.paused or loop.time() < self.hold_until:
                continue
            self.publish(self.sensor.next())

    async def _press(self, cmd: dict) -> None:
        if self.sensor.format != "bthome":
            raise ValueError("only the bthome broadcaster has a button")
        self.publish(self.sensor.next(button=cmd.get("event", "press")))
        self.hold_until = asyncio.get_running_loop().time() + self.event_hold

    async def _replay(self, cmd: dict) -> None:
        n = int(cmd["n"])
        self.publish(self.sent[n], "replayed", n)
        self.hold_until = asyncio.get_running_loop().time() + self.event_hold

    async def _raw(self, cmd: dict) -> None:
        packet = Packet(service_data={k: bytes.fromhex(v) for k, v in cmd.get("service_data", {}).items()},
                        manufacturer_data={int(k): bytes.fromhex(v)
                                           for k, v in cmd.get("manufacturer_data", {}).items()})
        self.publish(packet, "raw", -1)
        self.hold_until = asyncio.get_running_loop().time() + self.event_hold

    async def _pause(self, cmd: dict) -> None:
        self.paused = bool(cmd.get("on", True))


def build(adapter: str, format: str = "bthome", address: Optional[str] = None, name: Optional[str] = None,
          bindkey_file: Optional[str] = None, interval: float = 1.0, event_hold: float = 2.5,
          first_tick: int = 0, connectable: bool = False, **_ignored) -> PeripheralRunner:
    if address is None:
        raise ValueError("a broadcaster needs its adapter's address (--address): BTHome and MiBeacon encryption and "
                         "the pvvx, MiBeacon and Ruuvi records contain it")
    bindkey = read_bindkey(bindkey_file) if bindkey_file else None
    sensor = Sensor(format, address, bindkey, first_tick)
    first = sensor.next()
    adv = Advertisement(name or DEFAULT_NAMES[format], [], first.manufacturer_data, first.service_data,
                        adv_type="peripheral" if connectable else "broadcast")
    runner = PeripheralRunner(adapter, [], adv)
    Broadcaster(runner, sensor, interval, event_hold).sent[0] = first
    emit("broadcast", n=sensor.tick - 1, **first.as_event())
    return runner
