"""Many simulated BTHome thermometers in one process, for `make bench-adverts` (scripts/bench/adverts_bench.py).

Each sensor is what bench/peripherals/broadcaster.py is (the same `bench.broadcasts.Sensor` bytes, the same
`LEAdvertisement1` of type "broadcast", updated through PropertiesChanged every `--interval` seconds), but a
few hundred Python processes would cost the machine more than the daemon under test: here one bus connection
exports one advertisement per sensor and registers each on its own adapter (BlueZoo copies only the first
advertisement of an adapter into a scanning central's Device1). The sensors' ticks are spread evenly over the
interval, as independent devices' would be.

    python scripts/bench/broadcaster_swarm.py --interval 1 hci4=A4:C1:38:00:00:01 hci5=A4:C1:38:00:00:02 …

Prints {"event":"ready","sensors":N} once every advertisement is registered, then {"event":"sent","count":…}
every ten seconds (packets sent so far); SIGTERM stops it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.broadcasts import Sensor  # noqa: E402
from bench.dbus_util import call, open_system_bus  # noqa: E402
from bench.peripherals.gatt import Advertisement  # noqa: E402

BLUEZ = "org.bluez"


def emit(event: str, **fields) -> None:
    print(json.dumps({"event": event, **fields}), flush=True)


async def run(pairs: list[tuple[str, str]], interval: float) -> None:
    bus = open_system_bus()
    sensors = []
    exports = []      # kept: the exported objects live as long as their references
    for i, (adapter, address) in enumerate(pairs):
        sensor = Sensor("bthome", address, first_tick=i)
        first = sensor.next()
        adv = Advertisement("BTHome Thermometer", [], None, first.service_data, adv_type="broadcast")
        path = f"/org/bench/swarm/adv{i}"
        exports.append(adv.export(bus, path))
        sensors.append((sensor, adv))
        await call(bus, BLUEZ, f"/org/bluez/{adapter}", "org.bluez.LEAdvertisingManager1", "RegisterAdvertisement",
                   "oa{sv}", path, {}, timeout=10)
    emit("ready", sensors=len(sensors))

    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    sent = 0
    step = interval / max(1, len(sensors))
    start = loop.time()
    next_report = start + 10
    tick = 0
    while not stop.is_set():
        # Sensor k sends at start + k·step + n·interval: paced against the start, so a slow round shifts nothing.
        k = tick % len(sensors)
        due = start + tick * step
        delay = due - loop.time()
        if delay > 0:
            try:
                await asyncio.wait_for(stop.wait(), delay)
                break
            except TimeoutError:
                pass
        sensor, adv = sensors[k]
        adv.update(service_data=sensor.next().service_data)
        sent += 1
        tick += 1
        if loop.time() >= next_report:
            emit("sent", count=sent)
            next_report += 10
    emit("stopped", count=sent)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--interval", type=float, default=1.0, help="seconds between one sensor's packets")
    ap.add_argument("sensors", nargs="+", metavar="hciN=ADDRESS")
    a = ap.parse_args()
    pairs = [tuple(s.split("=", 1)) for s in a.sensors]
    asyncio.run(run(pairs, a.interval))
    return 0


if __name__ == "__main__":
    sys.exit(main())
