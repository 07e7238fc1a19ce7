"""The latency baseline: a D-Bus client that subscribes to a stamp characteristic directly (no bridge, no broker) and
timestamps each notification as it arrives, in a process of its own.

    python scripts/bench/direct_reader.py ADDRESS fd|signal OUT

Prints {"event":"ready"} once subscribed; on SIGTERM writes "burst seq send_ns recv_ns" lines to OUT and exits.
The fd path reads the AcquireNotify socket with blocking recv() on the main thread (what the bridge's event loop does
with poll + read); the signal path timestamps PropertiesChanged(Value) in sdbus's callback. BlueZ (and the bench)
allow one AcquireNotify per characteristic, so on the fd path this reads a reference peripheral of its own (connected
here if needed) sending the same burst at the same time; on the signal path it shares the characteristic of the
bridge (or of the floor relay) it is measured against.
"""

from __future__ import annotations

import json
import signal
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench.central import CHAR_IFACE, BLUEZ, Central  # noqa: E402
from bench.dbus_util import PROPS_IFACE, unvariant_dict  # noqa: E402
from stamp_peripheral import CHARACTERISTIC, unstamp  # noqa: E402

records: list[tuple[int, int, int, int]] = []
done = threading.Event()


def main(address: str, path_kind: str, out: str) -> int:
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    central = Central()
    if not central.devices().get(address.upper(), {}).get("ServicesResolved"):
        # A device the bridge does not manage (the fd path's reference peripheral): connect it ourselves.
        central.start_discovery()
        central.wait_device(address, 30)
        central.stop_discovery()
        central.connect(address, 30)
    char = central.char_path(address, CHARACTERISTIC)
    if path_kind == "fd":
        sock, _mtu = central.acquire_notify(address, CHARACTERISTIC)
        sock.settimeout(0.2)
        print(json.dumps({"event": "ready"}), flush=True)
        while not done.is_set():
            try:
                data = sock.recv(64)
            except TimeoutError:
                continue
            except OSError:
                break
            now = time.time_ns()
            if not data:
                break
            burst, seq, sent = unstamp(data)
            records.append((burst, seq, sent, now))
    else:
        def on_signal(message):
            now = time.time_ns()
            try:
                iface, changed, _ = message.parse_to_tuple()
                if iface == CHAR_IFACE and "Value" in changed:
                    burst, seq, sent = unstamp(bytes(unvariant_dict(changed)["Value"]))
                    records.append((burst, seq, sent, now))
            except Exception as exc:  # noqa: BLE001 - sdbus would swallow it
                print(f"direct reader: {exc!r}", file=sys.stderr, flush=True)
        slot = central.bus.subscribe(on_signal, BLUEZ, char, PROPS_IFACE, "PropertiesChanged")  # noqa: F841 (kept: the match lives as long as its slot)
        central.bus.call(BLUEZ, char, CHAR_IFACE, "StartNotify")
        print(json.dumps({"event": "ready"}), flush=True)
        done.wait()
    Path(out).write_text("".join(f"{b} {s} {t} {r}\n" for b, s, t, r in records))
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
