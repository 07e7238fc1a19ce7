"""python -m bench [--peripheral KIND[:ADDRESS]]… [--broadcaster FORMAT[:ADDRESS]]… [--env-file PATH] [--rate HZ]

Starts a whole bench by hand (private dbus-daemon, patched BlueZoo with hci0, the peripherals) and keeps it up
until SIGINT/SIGTERM, then ends everything. Prints `DBUS_SYSTEM_BUS_ADDRESS=…` on stdout (and writes it to
--env-file) once ready, so another shell (or a demo script) can point gattbridge at it:

    .venv/bin/python -m bench --env-file /tmp/bench.env &
    . /tmp/bench.env && export DBUS_SYSTEM_BUS_ADDRESS && .build/debug/gattbridge scan --duration 3
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path

from bench.bench import Bench


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--peripheral", action="append", metavar="KIND[:ADDRESS]",
                   help="heart_rate, hm10, led (repeatable; default: all three at C0:FF:EE:00:00:01..03); "
                        "KIND+signal offers no AcquireNotify, so a client takes BlueZ's StartNotify / signal path")
    p.add_argument("--broadcaster", action="append", default=[], metavar="FORMAT[:ADDRESS]",
                   help="a passive sensor broadcasting bthome, pvvx, govee, xiaomi or ruuvi readings, or an "
                        "ibeacon or eddystone beacon (repeatable)")
    p.add_argument("--rate", type=float, default=1.0, help="heart_rate notifications per second")
    p.add_argument("--env-file", type=Path, help="write DBUS_SYSTEM_BUS_ADDRESS=… here when ready")
    a = p.parse_args(argv)

    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    with Bench() as bench:
        for spec in a.peripheral or ["heart_rate", "hm10", "led"]:
            kind, _, address = spec.partition(":")
            kind, _, path = kind.partition("+")
            options = {"rate": a.rate} if kind == "heart_rate" else {}
            if path == "signal":
                options["no_acquire_notify"] = True
            periph = bench.peripheral(kind, address or None, **options)
            print(f"# {kind} at {periph.address} on {periph.adapter}", file=sys.stderr)
        for spec in a.broadcaster:
            fmt, _, address = spec.partition(":")
            sensor = bench.broadcaster(fmt, address or None)
            print(f"# {fmt} broadcaster at {sensor.address} on {sensor.adapter}", file=sys.stderr)
        line = f"DBUS_SYSTEM_BUS_ADDRESS={bench.bus_address}"
        if a.env_file:
            a.env_file.write_text(line + "\n")
        print(line, flush=True)
        print(f"# logs: {bench.log_dir}; Ctrl-C ends the bench", file=sys.stderr)
        while not stop.wait(0.5):
            if not bench.bluez.process.running:
                print("# BlueZoo exited", file=sys.stderr)
                return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
