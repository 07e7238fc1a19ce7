"""`make bench-adverts` (and part of `make bench`): what passive broadcasters cost the daemon (docs/adverts.md,
docs/performance.md#passive-broadcasts).

The release gattbridge on the bench's world (private bus, BlueZoo with its 1 s scan tick, mosquitto, the fd/signal
stamp peripherals and the HM-10: the three connected devices `make bench` measures idle) with
`adverts: {enabled: true, auto: [bthome]}`. First the daemon with its three devices online and no broadcaster;
then BTHome thermometers broadcasting once a second each, added in steps (`--steps 50,100,…`), each on its own
BlueZoo adapter (BlueZoo reports only the first advertisement of an adapter; its adapter ids are one byte, so the
bench holds at most ~250 broadcasters). The first `--saved` broadcasters are saved passive devices in the config
(`advert: bthome`), the others are heard as `auto` devices and adopted. After each step, once every broadcaster's
availability is online, `--seconds` of measurement: the daemon's CPU (utime+stime from /proc, % of one core),
its RSS and its change since before the broadcasters (and of that the anonymous part, RssAnon: heap and stacks,
what the daemon is judged by; the rest is file-backed code and read-only data, clean pages the kernel reclaims by
itself when memory is short, docs/dev/MEMORY.md), the broadcasts it published per second (its
`B/<device>/temperature` messages: the bench's temperature changes with every packet, so one message is one
broadcast decoded and published), and the CPU of BlueZoo and of the broadcasters' process
(scripts/bench/broadcaster_swarm.py), the bench's own costs. The three connected devices must stay online
throughout (and a notification on each stamp device still arrives at the end).

Each step has two rows. The first is measured as soon as the step's broadcasters are online (plus `--settle`), so it
holds what the step's one-time work (50 adapters and devices appearing, their first `online` and Home Assistant
configs) did. The second row ("settled") comes `--quiet` seconds later and measures the same way: the steady
state's own cost, the heap the one-time work left behind included. Both rows also give the daemon's minor page
faults per second.

Numbers are printed, never asserted; exit status 1 only when the bench itself fails (the daemon died, a device
did not come or stay online). JSON in .bench/adverts-latest.json.

    .venv/bin/python scripts/bench/adverts_bench.py [--steps 50,100,150,200,250] [--saved 50] [--seconds 20]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (BASE, HERE, CpuMeter, World, gattbridge_binary, machine,  # noqa: E402
                    sample, save_results, write_config)
from bench.bench import Process  # noqa: E402

CONNECTED = ("fd", "sig", "hm10")


def broadcaster_address(i: int) -> str:
    return f"A4:C1:38:BE:{i >> 8:02X}:{i & 0xFF:02X}"


def saved_name(i: int) -> str:
    return f"thermo{i:03d}"


def auto_name(i: int) -> str:
    return "bthome-" + broadcaster_address(i).replace(":", "").lower()


def name_of(i: int, saved: int) -> str:
    return saved_name(i) if i < saved else auto_name(i)


def adverts_config(world: World, saved: int, auto_limit: int) -> None:
    devices = "".join(f"  - {{ name: {saved_name(i)}, address: \"{broadcaster_address(i)}\", advert: bthome }}\n"
                      for i in range(saved))
    devices += ("bluetooth:\n  adapters: [hci0]\n"
                f"adverts:\n  enabled: true\n  auto: [bthome]\n  auto_limit: {auto_limit}\n")
    write_config(world.config, world.broker.port, devices)


def log_time(line: str) -> float:
    """The wall-clock time of a daemon log line (`2026-11-27T12:46:33.835Z debug [gattbridge] …`)."""
    return datetime.strptime(line.split()[0], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc).timestamp()


def minor_faults(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[7])       # field 10 of stat(5)


def measure(world: World, gb: Process, swarms: list[Process], seconds: float, count: int, saved: int,
            ref: Optional[dict], phase: str = "online") -> dict:
    """One step's row; `ref` None: this is the row before the broadcasters, the reference of the memory deltas."""
    faults_before = minor_faults(gb.pid)
    pids = {"gattbridge": gb.pid, "bluezoo": world.bench.bluez.process.pid, "mosquitto": world.broker.process.pid}
    pids.update({f"swarm{i}": s.pid for i, s in enumerate(swarms)})
    since = world.mqtt.mark()
    meter = CpuMeter(pids).start()
    time.sleep(seconds)
    meter.stop()
    s = sample(gb.pid)
    faults = minor_faults(gb.pid) - faults_before
    rss0_kb, anon0_kb = (s.rss_kb, s.anon_kb) if ref is None else (ref["rss_kb"], ref["anon_kb"])
    published = world.mqtt.received(f"{BASE}/+/temperature", since)
    heard = {m.topic.split("/")[1] for m in published}
    row = {"broadcasters": count, "phase": phase, "saved": min(count, saved), "auto": max(0, count - saved),
           "seconds": round(meter.seconds, 1),
           "broadcasts_per_s": round(len(published) / meter.seconds, 1),
           "devices_heard": len(heard),
           "gattbridge_cpu_pct": round(meter.percent("gattbridge"), 2),
           "rss_mb": round(s.rss_kb / 1024, 2), "rss_delta_mb": round((s.rss_kb - rss0_kb) / 1024, 2),
           "rss_kb": s.rss_kb, "anon_kb": s.anon_kb, "anon_mb": round(s.anon_kb / 1024, 2),
           "anon_delta_mb": round((s.anon_kb - anon0_kb) / 1024, 2), "file_mb": round(s.file_kb / 1024, 2),
           "bluezoo_cpu_pct": round(meter.percent("bluezoo"), 1),
           "mosquitto_cpu_pct": round(meter.percent("mosquitto"), 1),
           "broadcasters_cpu_pct": round(sum(meter.percent(f"swarm{i}") for i in range(len(swarms))), 1),
           "minor_faults_per_s": round(faults / meter.seconds, 1),
           "loadavg": [round(x, 2) for x in os.getloadavg()]}
    return row


def connected_online(world: World) -> bool:
    for d in CONNECTED:
        last = world.mqtt.received(f"{BASE}/{d}/availability")
        if not last or last[-1].text != "online":
            return False
    return True


def print_row(r: dict) -> None:
    label = f"{r['broadcasters']}" + (" settled" if r["phase"] == "settled" else "")
    note = ""
    print(f"{label:>12} {r['saved']:>5} {r['auto']:>5} {r['broadcasts_per_s']:>12} "
          f"{r['gattbridge_cpu_pct']:>10.2f} {r['rss_mb']:>8.2f} {r['rss_delta_mb']:>+9.2f} {r['anon_mb']:>8.2f} "
          f"{r['anon_delta_mb']:>+8.2f} "
          f"{r['bluezoo_cpu_pct']:>10.1f} {r['broadcasters_cpu_pct']:>12.1f} {r['mosquitto_cpu_pct']:>9.1f} "
          f"{r['minor_faults_per_s']:>8.1f} {r['loadavg'][0]:>6.2f}{note}", flush=True)


def print_targets(rows: list[dict]) -> None:
    """The cost the passive half is held to (docs/performance.md#passive-broadcasts): 50 broadcasters at 1 Hz, settled,
    at most 1 % of a core and 2 MB of anonymous memory over the idle row."""
    row = next((r for r in rows if r["broadcasters"] == 50 and r["phase"] == "settled"), None)
    if row is None:
        return
    cpu, rss = row["gattbridge_cpu_pct"], row["anon_delta_mb"]
    verdict = "met" if cpu <= 1.0 and rss <= 2.0 else "NOT met"
    print(f"50 broadcasters at 1 Hz, settled: {cpu:.2f} % of a core (target <= 1 %), RSS {rss:+.2f} MB over idle "
          f"(anonymous; target <= 2 MB): {verdict}", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", default="50,100,150,200,250", help="broadcaster counts, ascending")
    ap.add_argument("--saved", type=int, default=50, help="the first N broadcasters are saved devices, the rest auto")
    ap.add_argument("--seconds", type=float, default=20, help="measurement window per step")
    ap.add_argument("--settle", type=float, default=5, help="seconds after a step's devices are online")
    ap.add_argument("--quiet", type=float, default=70,
                    help="seconds after a step's first row before its settled row")
    ap.add_argument("--out", default=str(HERE.parents[1] / ".bench"))
    a = ap.parse_args()
    steps = [int(s) for s in a.steps.split(",")]
    binary = gattbridge_binary()
    result: dict = {"binary": str(binary), "machine": machine(), "steps": []}
    print(f"machine: {result['machine']['cpu']}, {result['machine']['cores']} cores, load average "
          f"{result['machine']['loadavg_at_start']} at start", flush=True)
    world = World()
    swarms: list[Process] = []
    failed = ""
    try:
        adverts_config(world, a.saved, auto_limit=max(steps[-1], 100))
        gb = world.start_gattbridge(log_level="debug")     # "tracking broadcaster" is a debug line
        world.wait_online(timeout=60)
        time.sleep(a.settle)
        print(f"\n{'broadcasters':>12} {'saved':>5} {'auto':>5} {'broadcasts/s':>12} {'daemon CPU':>10} "
              f"{'RSS MB':>8} {'ΔRSS MB':>9} {'anon MB':>8} {'Δanon':>8} {'BlueZoo %':>10} {'senders %':>12} {'mosq. %':>9} "
              f"{'faults/s':>8} {'load':>6}")
        base = measure(world, gb, swarms, a.seconds, 0, a.saved, None)
        result["steps"].append(base)
        print_row(base)
        count = 0
        for target in steps:
            mark = len(gb.stderr_lines)     # this step's log lines come after this one
            started, heard_since = time.time(), world.mqtt.mark()
            adapters = []
            for i in range(count, target):
                adapters.append(f"{world.bench.bluez.add_adapter(broadcaster_address(i))}={broadcaster_address(i)}")
            swarm = Process([sys.executable, str(HERE / "broadcaster_swarm.py"), "--interval", "1", *adapters],
                            f"swarm-{count}-{target}", env=world.bench.env, cwd=world.bench.workdir,
                            log_dir=world.bench.log_dir).start()
            world.bench.processes.append(swarm)
            swarms.append(swarm)
            swarm.wait_for_line('"ready"', timeout=120)
            ready = time.time()
            for i in range(count, target):
                # Only this step's messages: scanning all of them (hundreds of thousands by the last step) took the
                # bench up to 50 s, long past the daemon's changes.
                world.mqtt.wait_for(f"{BASE}/{name_of(i, a.saved)}/availability", "online", 60, since=heard_since)
            timeline = {"adapters_added": round(started - ready, 1), "swarm_ready": 0.0,
                        "all_online_seen": round(time.time() - ready, 1)}
            count = target
            time.sleep(a.settle)
            if not gb.running:
                failed = f"gattbridge exited ({gb.returncode})"
                break
            row = measure(world, gb, swarms, a.seconds, count, a.saved, base)
            result["steps"].append(row)
            print_row(row)
            time.sleep(a.quiet)
            row = measure(world, gb, swarms, a.seconds, count, a.saved, base, phase="settled")
            # Seconds relative to the swarm's "ready": when the step's adapters were added, when the bench saw every
            # broadcaster online, and when the daemon adopted the step's last broadcaster.
            adopted = [log_time(x) - ready for x in gb.stderr_lines[mark:] if "tracking broadcaster" in x]
            timeline["last_adopted"] = round(max(adopted), 1) if adopted else None
            row["timeline"] = timeline
            result["steps"].append(row)
            print_row(row)
            if not connected_online(world):
                failed = "a connected device went offline under the broadcasts"
                break
        if not failed:
            # The connected devices still carry data: one notification down each stamp path.
            for n, (path, p) in enumerate((("fd", world.fd), ("sig", world.sig)), start=1):
                since = world.mqtt.mark()
                p.wait_burst(n, p.burst(n, 10.0, 5), timeout=30)
                world.mqtt.wait_count(f"{BASE}/{path}/stamp", 5, timeout=30, since=since)
            print(f"\nthe three connected devices stayed online; 5 notifications on each stamp device arrived after "
                  f"{count} broadcasters", flush=True)
            print_targets(result["steps"])
        if not gb.running:
            failed = f"gattbridge exited ({gb.returncode}): {gb.stderr_lines[-10:]}"
    except TimeoutError as exc:
        failed = f"the bench failed: {exc}"
    finally:
        world.close()
    result["failed"] = failed
    path = save_results(result, a.out, "adverts", "adverts-latest.json")
    print(f"JSON in {path}; load average at the end {[round(x, 2) for x in os.getloadavg()]}")
    if failed:
        print(failed, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
