"""`make bench-fleet` (also run by `make bench`): the fleet at scale (docs/fleet.md, issue 16). Three `gattbridge run`
instances, each with its own central adapter on one BlueZoo, share one mosquitto and 30 simulated LED peripherals,
each heard by each bridge at a random RSSI (the bench's per-adapter RSSI control). Checks and measures:

  1. every device ends up owned by exactly one bridge (its log and the retained `B/D/owner` agree) and online;
  2. the bridge that owns the most devices is SIGKILLed (only its will speaks): for each of its devices, the time
     from the kill to `B/D/availability` `online` again through another bridge (median, max); every device is
     again owned exactly once.

Prints a table; JSON in .bench/fleet-latest.json (and a timestamped copy). Exit status 1 when a check fails.

    .venv/bin/python scripts/bench/fleet_scale.py [--devices 30] [--bridges 3] [--seed 16]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "Tests" / "integration"))

from common import REPO, gattbridge_binary, machine, save_results  # noqa: E402
from bench.bench import CENTRAL_ADDRESS, Bench, wait_until  # noqa: E402
from bench.peripherals import led  # noqa: E402
from bridge_helpers import to_yaml  # noqa: E402

BASE = "fleet"


def log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def owners_from_logs(bridges: dict, name: str) -> list[str]:
    out = []
    for id, process in bridges.items():
        if not process.running:
            continue
        text = process.stderr
        if text.rfind(f"owning device {name}") > text.rfind(f"giving up device {name}"):
            out.append(id)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--devices", type=int, default=30)
    parser.add_argument("--bridges", type=int, default=3)
    parser.add_argument("--seed", type=int, default=16)
    parser.add_argument("--out", default=str(REPO / ".bench"))
    args = parser.parse_args()
    rng = random.Random(args.seed)
    binary = gattbridge_binary()
    failures: list[str] = []

    with Bench() as bench:
        broker = bench.mosquitto()
        mqtt = bench.mqtt_client(broker, topics=[f"{BASE}/#"])
        ids = [chr(ord("a") + i) for i in range(args.bridges)]
        centrals = {"a": ("hci0", CENTRAL_ADDRESS)}
        for i, id in enumerate(ids[1:], start=1):
            address = f"00:00:00:00:0B:{i + 1:02X}"
            centrals[id] = (bench.bluez.add_adapter(address), address)
        names = [f"led{k:02d}" for k in range(args.devices)]
        addresses = {name: f"C0:FF:EE:00:07:{k + 1:02X}" for k, name in enumerate(names)}
        log(f"starting {args.devices} peripherals")
        for name in names:
            bench.peripheral("led", addresses[name])
        rssi = {(id, name): rng.randint(-90, -40) for id in ids for name in names}
        for (id, name), value in rssi.items():
            bench.bluez.set_rssi(centrals[id][1], addresses[name], value)

        devices = [{"name": name, "address": addresses[name],
                    "channels": [{"name": "led", "characteristic": f"{led.SERVICE}/{led.CHARACTERISTIC}",
                                  "codec": "hex", "mode": "read", "interval": 300}]} for name in names]
        bridges = {}
        started = time.monotonic()
        for id in ids:
            doc = {"mqtt": {"host": "127.0.0.1", "port": broker.port, "client_id": f"fleet-{id}", "base_topic": BASE,
                            "keepalive": 10},
                   # Every bridge may end up owning every device (the takeover): room for all of them on its one
                   # radio (BlueZoo has no limit; the default of 5 would leave most devices with nowhere to go).
                   "bluetooth": {"adapters": [{"name": centrals[id][0], "max_connections": args.devices}]},
                   "homeassistant": {"enabled": False},
                   "bridge": {"id": id}, "devices": devices}
            path = bench.workdir / f"fleet-{id}.yaml"
            path.write_text(to_yaml(doc) + "\n")
            bridges[id] = bench.run_gattbridge(["run", "--config", str(path), "--log-level", os.environ.get("FLEET_LOG_LEVEL", "notice")],
                                               binary=binary, name=f"gattbridge-{id}")

        def record(name: str):
            msgs = [m for m in mqtt.received(f"{BASE}/{name}/owner") if m.payload]
            return json.loads(msgs[-1].text)["bridge"] if msgs else None

        def online(name: str) -> bool:
            msgs = mqtt.received(f"{BASE}/{name}/availability")
            return bool(msgs) and msgs[-1].text == "online"

        def settled() -> bool:
            return all(len(owners_from_logs(bridges, n)) == 1 and record(n) == owners_from_logs(bridges, n)[0]
                       and online(n) for n in names)

        try:
            wait_until(settled, 180, "the fleet never settled")
        except TimeoutError as error:
            failures.append(str(error))
        settle_s = time.monotonic() - started
        owner = {n: record(n) for n in names}
        counts = {id: sum(1 for n in names if owner[n] == id) for id in ids}
        strongest = sum(1 for n in names if owner[n] == max(ids, key=lambda i: rssi[(i, n)]))
        log(f"settled in {settle_s:.1f} s: {counts}; {strongest}/{len(names)} with the strongest bridge")

        victim = max(ids, key=lambda i: counts[i])
        moved = [n for n in names if owner[n] == victim]
        mark = mqtt.mark()
        killed = time.monotonic()
        bridges[victim].signal(signal.SIGKILL)
        back: dict[str, float] = {}

        def all_back() -> bool:
            for n in moved:
                if n not in back:
                    for m in mqtt.received(f"{BASE}/{n}/availability", mark):
                        if m.text == "online":
                            back[n] = m.time - killed
                            break
            return len(back) == len(moved)

        try:
            wait_until(all_back, 120, "devices of the killed bridge did not come back")
        except TimeoutError as error:
            failures.append(f"{error}: {sorted(set(moved) - set(back))}")
        try:
            wait_until(settled, 60, "not every device owned once after the kill")
        except TimeoutError as error:
            failures.append(str(error))
        after = {n: record(n) for n in names}
        if any(after[n] == victim for n in names):
            failures.append("a device is still recorded with the killed bridge")

        times = sorted(back.values())
        late = sorted(n for n, t in back.items() if t > 30)
        if late:
            failures.append(f"online again more than 30 s after the will (docs/fleet.md): {late}")
        result = {
            "machine": machine(),
            "bridges": len(ids), "devices": len(names), "seed": args.seed,
            "settle_s": round(settle_s, 2), "owned": counts, "with_strongest": strongest,
            "killed": victim, "moved": len(moved),
            "takeover_s": {"median": round(statistics.median(times), 2) if times else None,
                           "max": round(times[-1], 2) if times else None, "all": [round(t, 2) for t in times]},
            "failures": failures,
        }
        path = save_results(result, args.out, "fleet", "fleet-latest.json")
        print(f"fleet: {len(ids)} bridges x {len(names)} devices (seed {args.seed})")
        print(f"  all owned once and online after start : {settle_s:7.1f} s   owned {counts}, "
              f"{strongest}/{len(names)} by the strongest bridge")
        if times:
            print(f"  SIGKILL of {victim} ({len(moved)} devices) → online elsewhere: median {statistics.median(times):.1f} s, "
                  f"max {times[-1]:.1f} s")
        for failure in failures:
            print(f"  FAILED: {failure}")
        print(f"  JSON: {path}")
        return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
