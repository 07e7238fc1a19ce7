"""`make bench`: what the release gattbridge costs and how fast data gets through, on the simulated bench with a real
mosquitto. Prints a table and writes the same as JSON to .bench/ (latest.json and a timestamped copy).

Everything is measured per process from /proc/PID (stat: utime+stime; status: VmRSS/VmHWM and context switches of
every thread; smaps_rollup: PSS): the gattbridge figures are gattbridge's alone, BlueZoo's, the peripherals' and
mosquitto's are listed beside them. Latency is from the peripheral's send timestamp (CLOCK_REALTIME, inside each
notification) to the receipt by a QoS 1 mosquitto_sub (C, timestamps with `%U`); the part the bridge adds is measured against a direct D-Bus client
(scripts/bench/direct_reader.py) receiving the very same notifications, notification by notification.

    .venv/bin/python scripts/bench/run_bench.py [--quick] [--idle-seconds 60] [--step-seconds 5] [--rates 1000,2000]
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (BASE, REPO, CpuMeter, StampSubscriber, World, gattbridge_binary, machine, percentile,  # noqa: E402
                    sample, save_results)
from bench.bench import Process  # noqa: E402

# Peers measured on this kind of bench (issue text): ble2mqtt (Python + bleak) 30.6 MB RSS and 5.9 % of a core at
# 1,000 notifications/s; Theengs Gateway 40 MB.
BLE2MQTT_US_PER_NOTIFICATION = 5.9 / 100 / 1000 * 1e6      # 59 µs of CPU per notification
TARGETS = {
    "cpu_us_per_notification_max": BLE2MQTT_US_PER_NOTIFICATION / 10,
    "idle_rss_mib_max": 10.0,
    "added_p99_ms_at_1khz_max": 2.0,
    "idle_cpu_percent_max": 0.1,
    "zero_loss_rate_min": 5000,
}


def log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


class PeakSampler:
    """Samples RSS/PSS of one process every 0.25 s in the background; keeps the peaks."""

    def __init__(self, pid: int):
        self.pid = pid
        self.rss_kb = 0
        self.pss_kb = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> "PeakSampler":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(2)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                s = sample(self.pid)
            except (FileNotFoundError, ProcessLookupError):
                return
            self.rss_kb, self.pss_kb = max(self.rss_kb, s.rss_kb), max(self.pss_kb, s.pss_kb)
            self._stop.wait(0.25)


class Runner:
    def __init__(self, world: World, gattbridge: Process):
        self.world = world
        self.stamps = StampSubscriber(world.bench, world.broker.port)
        self.gb = gattbridge
        self.burst_id = 0

    def peripheral(self, path: str):
        return self.world.fd if path == "fd" else self.world.sig

    def run_burst(self, path: str, rate: float, count: int, twin=None) -> dict:
        """One burst of `count` notifications at `rate`, through the bridge to the subscriber (and, with `twin`, the
        same burst id from that peripheral at the same time)."""
        self.burst_id += 1
        bid = self.burst_id
        p = self.peripheral(path)
        topic = f"{BASE}/{path}/stamp"
        start_index = len(self.stamps.poll())

        def arrived() -> list[tuple[int, int, int]]:
            return [(seq, sent, recv) for t, b, seq, sent, recv in self.stamps.poll()[start_index:]
                    if t == topic and b == bid]
        meter = CpuMeter(self.world.pids(self.gb)).start()
        with PeakSampler(self.gb.pid) as peak:
            if twin is not None:
                twin.burst(bid, rate, count)
            since = p.burst(bid, rate, count)
            done = p.wait_burst(bid, since, timeout=count / rate * 4 + 30)
            # Drain: until everything arrived, or nothing new for 3 s.
            last, last_change = -1, time.monotonic()
            while True:
                n = len(arrived())
                if n >= count:
                    break
                if n != last:
                    last, last_change = n, time.monotonic()
                elif time.monotonic() - last_change > 3:
                    break
                time.sleep(0.05)
        meter.stop()
        received = arrived()
        seqs = [r[0] for r in received]
        unique = set(seqs)
        reordered = sum(1 for a, b in zip(seqs, seqs[1:]) if b < a)
        sent_times = [r[1] for r in received]
        recv_times = [r[2] for r in received]
        span = (max(recv_times) - min(sent_times)) / 1e9 if received else float("nan")
        gb_cpu = meter.used.get("gattbridge", 0.0)
        return {
            "path": path, "rate_requested": rate, "count": count, "burst_id": bid,
            "send_seconds": done.get("seconds"), "send_rate": round(count / done["seconds"], 1) if done.get("seconds") else None,
            "received": len(received), "lost": count - len(unique), "duplicates": len(seqs) - len(unique),
            "reordered": reordered,
            "delivered_rate": round(len(unique) / span, 1) if received and span > 0 else None,
            "latency_ms": {"p50": round(percentile([(r - s) / 1e6 for _, s, r in received], 50), 3),
                           "p99": round(percentile([(r - s) / 1e6 for _, s, r in received], 99), 3),
                           "max": round(max(((r - s) / 1e6 for _, s, r in received), default=float("nan")), 3)},
            "cpu_seconds": {k: round(v, 3) for k, v in meter.used.items()},
            "cpu_percent": {k: round(meter.percent(k), 2) for k in meter.used},
            "gattbridge_cpu_ms_per_1000": round(gb_cpu / max(1, len(unique)) * 1e6, 2),
            "gattbridge_cpu_us_per_notification": round(gb_cpu / max(1, len(unique)) * 1e6, 2),
            "gattbridge_peak_rss_kb": peak.rss_kb, "gattbridge_peak_pss_kb": peak.pss_kb,
            "_received": received,
        }

    def latency(self, path: str, rate: float, seconds: float) -> dict:
        """A burst with a direct D-Bus client reading the same notifications: the bridge's share of the latency."""
        out = self.world.bench.workdir / f"direct-{path}-{int(rate)}.txt"
        twin = self.world.ref if path == "fd" else None
        address = (twin or self.peripheral(path)).address
        reader = Process([sys.executable, str(Path(__file__).resolve().parent / "direct_reader.py"),
                          address, path, str(out)], f"direct-{path}",
                         env=self.world.bench.env, cwd=REPO, log_dir=self.world.bench.log_dir).start()
        self.world.bench.processes.append(reader)
        try:
            reader.wait_for_line('"ready"', 60)
        except TimeoutError:
            raise RuntimeError(f"direct reader did not start: {reader.stderr[-3000:]}") from None
        time.sleep(0.5)
        result = self.run_burst(path, rate, int(rate * seconds), twin)
        reader.signal(signal.SIGTERM)
        reader.wait(10)
        direct = {}
        for line in out.read_text().splitlines():
            b, seq, sent, recv = map(int, line.split())
            if b == result["burst_id"]:
                direct[seq] = (sent, recv)
        if twin is None:
            # Same notifications: the bridge's share, notification by notification.
            added = [(r - direct[seq][1]) / 1e6 for seq, _, r in result["_received"] if seq in direct]
            baseline = [(direct[seq][1] - s) / 1e6 for seq, s, _ in result["_received"] if seq in direct]
            result["added_latency_ms"] = {"p50": round(percentile(added, 50), 3),
                                          "p99": round(percentile(added, 99), 3), "matched": len(added),
                                          "method": "paired per notification"}
        else:
            # A twin peripheral read directly, concurrently: difference of the two distributions' percentiles.
            baseline = [(recv - sent) / 1e6 for sent, recv in direct.values()]
            e2e = [(r - s) / 1e6 for _, s, r in result["_received"]]
            result["added_latency_ms"] = {"p50": round(percentile(e2e, 50) - percentile(baseline, 50), 3),
                                          "p99": round(percentile(e2e, 99) - percentile(baseline, 99), 3),
                                          "matched": len(baseline),
                                          "method": "percentile difference vs a twin peripheral read directly"}
        result["direct_latency_ms"] = {"p50": round(percentile(baseline, 50), 3),
                                       "p99": round(percentile(baseline, 99), 3), "count": len(baseline)}
        return result


def fmt(v, unit="") -> str:
    if v is None:
        return "—"
    if isinstance(v, float):
        return f"{v:,.3g}{unit}" if abs(v) < 100 else f"{v:,.0f}{unit}"
    return f"{v:,}{unit}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="short runs (a smoke test of the benchmark itself)")
    ap.add_argument("--idle-seconds", type=float, default=float(os.environ.get("BENCH_IDLE_SECONDS", 60)))
    ap.add_argument("--step-seconds", type=float, default=float(os.environ.get("BENCH_STEP_SECONDS", 5)))
    ap.add_argument("--latency-seconds", type=float, default=10)
    ap.add_argument("--rates", default=os.environ.get("BENCH_RATES", "1000,2000,3000,4000,5000,6000,7000,8000"))
    ap.add_argument("--out-dir", default=str(REPO / ".bench"))
    a = ap.parse_args()
    if a.quick:
        a.idle_seconds, a.step_seconds, a.latency_seconds, a.rates = 10, 2, 3, "1000,3000"
    rates = [float(r) for r in a.rates.split(",") if r]

    binary = gattbridge_binary()
    results: dict = {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "machine": machine(),
                     "binary": str(binary), "binary_bytes": binary.stat().st_size, "targets": TARGETS,
                     "settings": {"idle_seconds": a.idle_seconds, "step_seconds": a.step_seconds,
                                  "latency_seconds": a.latency_seconds, "rates": rates}}
    world = World(reference=True)
    try:
        listener = world.bench.sd_notify_listener()
        log("starting gattbridge (release)…")
        t0 = time.monotonic()
        gb = world.start_gattbridge(env=listener.env)
        listener.wait_for("READY", "1", timeout=30)
        results["start_to_ready_ms"] = round((time.monotonic() - t0) * 1000, 1)
        world.wait_online(timeout=60)
        results["start_to_3_devices_online_ms"] = round((time.monotonic() - t0) * 1000, 1)
        runner = Runner(world, gb)

        log(f"idle, three devices connected: settling 5 s, then {a.idle_seconds:.0f} s…")
        time.sleep(5)
        others = CpuMeter(world.pids(gb)).start()
        s0 = sample(gb.pid)
        time.sleep(a.idle_seconds)
        s1 = sample(gb.pid)
        others.stop()
        dt = s1.t - s0.t
        results["idle"] = {"seconds": round(dt, 1), "cpu_percent": round(100 * (s1.cpu - s0.cpu) / dt, 3),
                           "cpu_seconds": round(s1.cpu - s0.cpu, 3),
                           "wakeups_per_second": round((s1.switches - s0.switches) / dt, 2),
                           "rss_kb": s1.rss_kb, "pss_kb": s1.pss_kb,
                           "others_cpu_percent": {k: round(others.percent(k), 2) for k in others.used}}

        results["latency"] = []
        for path in ("fd", "sig"):
            for rate in (100.0, 1000.0):
                log(f"latency: {path} path at {rate:.0f} Hz for {a.latency_seconds:.0f} s…")
                r = runner.latency(path, rate, a.latency_seconds)
                r.pop("_received")
                results["latency"].append(r)

        results["throughput"] = {}
        for path in ("fd", "sig"):
            steps = []
            for rate in rates:
                log(f"throughput: {path} path, {rate:.0f}/s for {a.step_seconds:.0f} s…")
                r = runner.run_burst(path, rate, int(rate * a.step_seconds))
                r.pop("_received")
                steps.append(r)
                if r["lost"] or r["duplicates"] or (r["send_rate"] or 0) < 0.9 * rate:
                    break       # loss, or the bench itself (peripheral + BlueZoo) can no longer keep the pace
            clean = [s for s in steps if not s["lost"] and not s["duplicates"]]
            results["throughput"][path] = {
                "steps": steps,
                "max_zero_loss_delivered_rate": max((s["delivered_rate"] or 0 for s in clean), default=0),
                "limited_by": ("loss" if steps[-1]["lost"] or steps[-1]["duplicates"] else
                               "bench (peripheral/BlueZoo could not send faster)"
                               if (steps[-1]["send_rate"] or 0) < 0.9 * steps[-1]["rate_requested"] else "rates tried"),
            }
        end = sample(gb.pid)
        results["rss_peak_kb"] = end.hwm_kb
        results["machine"]["loadavg_at_end"] = [round(x, 2) for x in os.getloadavg()]
        results["gattbridge_alive"] = gb.running
        gb.stop()
        results["gattbridge_exit_code"] = gb.returncode
    finally:
        world.close()

    summarize(results)
    print(f"\nJSON: {save_results(results, a.out_dir, 'bench', 'latest.json')} (and a timestamped copy)")
    return 0 if results.get("gattbridge_alive") else 1


def summarize(r: dict) -> None:
    lat = {(x["path"], x["rate_requested"]): x for x in r["latency"]}
    k1 = [lat[(p, 1000.0)] for p in ("fd", "sig")]
    cpu_us = {p: lat[(p, 1000.0)]["gattbridge_cpu_us_per_notification"] for p in ("fd", "sig")}
    idle = r["idle"]
    t = r["targets"]
    tp = r["throughput"]
    rows = [
        ("sustained rate, zero loss — fd path (AcquireNotify)", f"{fmt(tp['fd']['max_zero_loss_delivered_rate'])}/s",
         f"≥ {t['zero_loss_rate_min']:,}/s (bench ceiling)", tp["fd"]["limited_by"]),
        ("sustained rate, zero loss — signal path (StartNotify)", f"{fmt(tp['sig']['max_zero_loss_delivered_rate'])}/s",
         f"≥ {t['zero_loss_rate_min']:,}/s (bench ceiling)", tp["sig"]["limited_by"]),
    ]
    for x in r["latency"]:
        rows.append((f"latency peripheral→subscriber {x['path']} @ {x['rate_requested']:.0f} Hz, p50 / p99",
                     f"{x['latency_ms']['p50']:.2f} / {x['latency_ms']['p99']:.2f} ms", "", ""))
        rows.append((f"  added by bridge+broker vs direct D-Bus client, p50 / p99",
                     f"{x['added_latency_ms']['p50']:.2f} / {x['added_latency_ms']['p99']:.2f} ms",
                     f"p99 ≤ {t['added_p99_ms_at_1khz_max']} ms @ 1 kHz" if x["rate_requested"] == 1000 else "",
                     "ok" if x["rate_requested"] != 1000 or x["added_latency_ms"]["p99"] <= 2 else "MISSED"))
    for p in ("fd", "sig"):
        x = lat[(p, 1000.0)]
        rows.append((f"CPU per 1,000 notifications ({p} path, 1 kHz)", f"{x['gattbridge_cpu_ms_per_1000']:.1f} ms "
                     f"({x['cpu_percent']['gattbridge']:.2f} % of a core)",
                     f"≤ {t['cpu_us_per_notification_max']:.1f} ms (ble2mqtt/10)",
                     "ok" if cpu_us[p] <= t["cpu_us_per_notification_max"] else "MISSED"))
    rows += [
        ("RSS / PSS idle, 3 devices connected", f"{idle['rss_kb'] / 1024:.1f} / {idle['pss_kb'] / 1024:.1f} MiB",
         f"RSS ≤ {t['idle_rss_mib_max']:.0f} MiB", "ok" if idle["rss_kb"] / 1024 <= t["idle_rss_mib_max"] else "MISSED"),
        ("RSS / PSS under load (peak, 1 kHz and max rate)",
         f"{max(x['gattbridge_peak_rss_kb'] for x in k1 + tp['fd']['steps'] + tp['sig']['steps']) / 1024:.1f} / "
         f"{max(x['gattbridge_peak_pss_kb'] for x in k1 + tp['fd']['steps'] + tp['sig']['steps']) / 1024:.1f} MiB", "", ""),
        (f"CPU idle over {idle['seconds']:.0f} s", f"{idle['cpu_percent']:.3f} % ({idle['wakeups_per_second']:.1f} wake-ups/s)",
         f"< {t['idle_cpu_percent_max']} %", "ok" if idle["cpu_percent"] < t["idle_cpu_percent_max"] else "MISSED"),
        ("start → READY=1", f"{r['start_to_ready_ms']:.0f} ms", "", ""),
        ("start → 3 devices online", f"{r['start_to_3_devices_online_ms']:.0f} ms", "", "BlueZoo scans in 1 s ticks"),
        ("release binary (static stdlib, stripped)", f"{r['binary_bytes'] / 1e6:.1f} MB", "", ""),
    ]
    m = r["machine"]
    print(f"\ngattbridge bench — {r['date']} — {m['cpu']}, {m['cores']} cores, {m['memory_mb']} MB, "
          f"Linux {m['kernel']}, {m['swift']}; load at start {m['loadavg_at_start']}")
    w = max(len(x[0]) for x in rows)
    v = max(len(x[1]) for x in rows)
    tw = max(len(x[2]) for x in rows)
    print(f"{'metric':<{w}}  {'measured':<{v}}  {'target':<{tw}}  note")
    for name, value, target, note in rows:
        print(f"{name:<{w}}  {value:<{v}}  {target:<{tw}}  {note}")
    print("\nper-step throughput (gattbridge CPU is its own; others listed for context):")
    for p in ("fd", "sig"):
        for s in tp[p]["steps"]:
            print(f"  {p:<3} asked {s['rate_requested']:>6.0f}/s  sent {fmt(s['send_rate']):>7}/s  delivered "
                  f"{fmt(s['delivered_rate']):>7}/s  lost {s['lost']}  dup {s['duplicates']}  reordered {s['reordered']}"
                  f"  p99 {s['latency_ms']['p99']:.1f} ms  gattbridge {s['cpu_percent'].get('gattbridge', 0):.1f} %"
                  f" ({s['gattbridge_cpu_us_per_notification']:.1f} µs/notif)  bluezoo "
                  f"{s['cpu_percent'].get('bluezoo', 0):.0f} %  peripheral "
                  f"{s['cpu_percent'].get('peripheral_' + p, 0):.0f} %  mosquitto {s['cpu_percent'].get('mosquitto', 0):.0f} %")


if __name__ == "__main__":
    sys.exit(main())
