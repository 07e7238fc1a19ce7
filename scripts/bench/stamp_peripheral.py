"""A peripheral for measurements: one notify characteristic whose notifications carry their own identity and send
time, so a subscriber at the far end of the bridge can count losses, duplicates and reordering, and measure latency.

    python scripts/bench/stamp_peripheral.py --adapter hciN [--no-acquire-notify] [--name NAME] [--heart-rate]

Each notification is 16 bytes, little-endian: u32 burst id, u32 sequence number (from 0 in each burst), u64
CLOCK_REALTIME nanoseconds taken just before it is handed to BlueZ (`time.time_ns()`: the clock mosquitto_sub's
`%U` prints, the same in every process on the machine; a bench run is too short for NTP slews to matter).
With `--heart-rate` the same 16 bytes travel as a Heart Rate Measurement (0x2A37): flags 0x10 (uint8 heart rate,
RR intervals present), 60 bpm, then the stamp as eight RR intervals, so a bridge channel with
`codec: heart_rate_measurement` publishes it as JSON (`rr_ms` gives the stamp back: see `unstamp_heart_rate`). Nothing is sent until a stdin command asks for it (besides the bench's usual commands):

    {"cmd":"burst","id":7,"rate":1000,"count":5000}   → {"event":"burst_done","id":7,"count":5000,"seconds":5.01}
    {"cmd":"stream","id":8,"rate":20}                  endless, until {"cmd":"halt"} (the soak's steady flow)
    {"cmd":"halt"}                                     ends a burst or stream → its burst_done with the count sent

Sending is paced against the burst's start, so a late iteration is caught up at once rather than shifting the
sequence; a slot with no subscriber (link down) sends nothing and is not counted, so sequence numbers are contiguous
over what was really sent; `seconds` tells how long the burst really took (when it is well above count/rate, the bench itself — this
Python process and BlueZoo — was the limit). A new subscription does not restart anything: the bridge re-subscribes
after a reconnect and simply misses what was sent while it was away (the soak accounts for that).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import struct
import sys
import time
from pathlib import Path
from typing import Optional

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.peripherals.gatt import (Advertisement, Characteristic, PeripheralRunner, Service, emit,  # noqa: E402
                                    run)

SERVICE = "c0ffee00-be9c-4c7a-9b1e-000000000001"
CHARACTERISTIC = "c0ffee00-be9c-4c7a-9b1e-000000000002"
STAMP = struct.Struct("<IIQ")
HEART_RATE_HEADER = bytes([0x10, 60])     # flags: uint8 heart rate, RR intervals present; 60 bpm


def stamp(burst: int, seq: int, heart_rate: bool = False) -> bytes:
    data = STAMP.pack(burst, seq, time.time_ns())
    return HEART_RATE_HEADER + data if heart_rate else data


def unstamp(data: bytes) -> tuple[int, int, int]:
    """(burst id, sequence number, send time in CLOCK_REALTIME ns), from a stamp or a heart-rate stamp's bytes."""
    if len(data) >= STAMP.size + len(HEART_RATE_HEADER) and data.startswith(HEART_RATE_HEADER):
        data = data[len(HEART_RATE_HEADER):]
    return STAMP.unpack(data[:STAMP.size])


def unstamp_heart_rate(payload: str) -> tuple[int, int, int]:
    """`unstamp` of the bridge's JSON for a heart-rate stamp: each RR interval in ms is n × 1000 / 1024 for the
    stamp's uint16 n, a binary fraction the JSON spells exactly."""
    rr = json.loads(payload)["rr_ms"]
    return STAMP.unpack(b"".join(struct.pack("<H", round(ms * 1024 / 1000)) for ms in rr))


class StampRunner(PeripheralRunner):
    def __init__(self, adapter: str, name: str, acquire_notify: bool, heart_rate: bool = False):
        self.heart_rate = heart_rate
        self.char = Characteristic(CHARACTERISTIC, ["read", "notify"], stamp(0, 0, heart_rate),
                                   acquire_notify=acquire_notify)
        super().__init__(adapter, [Service(SERVICE, [self.char])], Advertisement(name, [SERVICE]))
        self.task: Optional[asyncio.Task] = None

    async def _command(self, line: bytes) -> None:
        cmd = json.loads(line)
        kind = cmd.get("cmd")
        if kind in ("burst", "stream"):
            self._halt()
            count = int(cmd.get("count", 0)) if kind == "burst" else 0
            self.task = asyncio.get_running_loop().create_task(
                self._send(int(cmd["id"]), float(cmd["rate"]), count))
            emit("done", cmd=kind, id=cmd.get("id"))
        elif kind == "halt":
            self._halt()
            emit("done", cmd=kind, id=cmd.get("id"))
        else:
            await super()._command(line)

    def _halt(self) -> None:
        if self.task is not None:
            self.task.cancel()
            self.task = None

    async def _send(self, burst: int, rate: float, count: int) -> None:
        loop = asyncio.get_running_loop()
        period = 1.0 / rate
        start = loop.time()
        seq = 0         # notifications actually handed to BlueZ for a subscriber
        tick = 0        # pacing slots, counted whether or not anyone was subscribed
        halted = False
        try:
            while count <= 0 or seq < count:
                delay = start + tick * period - loop.time()
                if delay > 0:
                    await asyncio.sleep(delay)
                elif tick % 64 == 0:
                    await asyncio.sleep(0)     # behind schedule: still let stdin and D-Bus in now and then
                tick += 1
                if not self.char.subscribed:
                    continue        # nobody to send to (link down): not produced, so not counted
                await self.char.notify(stamp(burst, seq, self.heart_rate))
                seq += 1
        except asyncio.CancelledError:
            halted = True
            raise
        finally:
            emit("burst_done", id=burst, count=seq, seconds=round(loop.time() - start, 4),
                 subscribed=self.char.subscribed, halted=halted)


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="stamp_peripheral.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--adapter", required=True)
    p.add_argument("--name", default="Bench Stamp")
    p.add_argument("--no-acquire-notify", action="store_true")
    p.add_argument("--heart-rate", action="store_true", help="stamps as Heart Rate Measurements (see above)")
    a = p.parse_args(argv)
    run(StampRunner(a.adapter, a.name, acquire_notify=not a.no_acquire_notify, heart_rate=a.heart_rate))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
