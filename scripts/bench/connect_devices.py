"""Connects peripherals from the bench's central (hci0) and exits once each has its services resolved: what the floor
relay (bench/floor/relay.c) expects, since it only subscribes to an already connected device.

    python scripts/bench/connect_devices.py ADDRESS...
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.central import Central  # noqa: E402


def main(addresses: list[str]) -> int:
    central = Central()
    try:
        pending = [a for a in addresses if not central.devices().get(a.upper(), {}).get("ServicesResolved")]
        if pending:
            central.start_discovery()
            for address in pending:
                central.wait_device(address, 30)
            central.stop_discovery()
            for address in pending:
                central.connect(address, 30)
    finally:
        central.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
