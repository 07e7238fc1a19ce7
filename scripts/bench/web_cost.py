"""What the web page costs the daemon (docs/web.md#what-it-costs, docs/performance.md): the release gattbridge on the
bench's world (private bus, BlueZoo, mosquitto, the stamp peripherals), its devices online, measured three ways:

1. the page off (`web: {enabled: false}`): idle anonymous memory (RssAnon) and CPU;
2. the page on (loopback, no browser): the same;
3. one headless Chromium open on Devices while three devices publish at 1 Hz: the daemon's CPU over the window,
   and how late the page's values are behind the MQTT publish.

The numbers are printed (and with --json written), never asserted: docs/performance.md records them.

    .venv/bin/python scripts/bench/web_cost.py [--idle-seconds 20] [--seconds 30] [--json out.json]
                                               [--before BINARY]

With `--before`, a binary without the page (a build from before it, which links no HTTP server) is measured idle
first, with the same config less the `web:` key: what the page's library costs even when the page is off.

GATTBRIDGE_BIN chooses the binary (default: .build-release, what `make bench-build` makes). Needs Debian's chromium
and Playwright for Python (what `make test-web` installs).
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import BASE, CpuMeter, World, gattbridge_binary  # noqa: E402


def status_kib(pid: int, key: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return 0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(world: World, web: str, idle: float, seconds: float, browser: bool, binary: str | None = None) -> dict:
    base = world.write_config(1)
    world.config.write_text(base.read_text() + web)
    if binary:
        gb = world.bench.run_gattbridge(["run", "--config", str(world.config), "--log-level", "warning"],
                                        binary=Path(binary))
    else:
        gb = world.start_gattbridge(log_level="warning")
    try:
        world.wait_online(timeout=60)
        time.sleep(idle)
        meter = CpuMeter({"gattbridge": gb.pid}).start()
        time.sleep(seconds)
        meter.stop()
        out = {"rss_anon_kib": status_kib(gb.pid, "RssAnon"), "vm_rss_kib": status_kib(gb.pid, "VmRSS"),
               "threads": status_kib(gb.pid, "Threads"), "idle_cpu_percent": round(meter.percent("gattbridge"), 3)}
        if browser:
            out |= with_browser(world, gb.pid, web, seconds)
        if not gb.running:
            raise RuntimeError(f"gattbridge exited ({gb.returncode})")
        return out
    finally:
        gb.stop()


def with_browser(world: World, pid: int, web: str, seconds: float) -> dict:
    from playwright.sync_api import sync_playwright

    port = int(web.split(":")[-1].strip().strip('"').split('"')[0])
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True)
        page = browser.new_page()
        page.goto(f"http://127.0.0.1:{port}/#/devices")
        page.get_by_text("hr", exact=True).first.wait_for(timeout=30_000)
        count = int(seconds) + 10
        marks = [p_.burst(900 + i, 1.0, count) for i, p_ in enumerate((world.fd, world.sig, world.hr))]
        time.sleep(3)
        meter = CpuMeter({"gattbridge": pid}).start()
        lags = []
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            since = world.mqtt.mark()
            message = world.mqtt.wait_for(f"{BASE}/sig/stamp", None, timeout=5, since=since)
            published, payload = message.time, message.text
            try:
                page.wait_for_function("t => document.body.innerText.includes(t)", arg=payload, timeout=5000)
                lags.append(time.monotonic() - published)
            except Exception:
                lags.append(float("inf"))
        meter.stop()
        for i, p_ in enumerate((world.fd, world.sig, world.hr)):
            p_.wait_burst(900 + i, marks[i], timeout=count + 30)
        browser.close()
    finite = sorted(x for x in lags if x != float("inf"))
    return {"browser_cpu_percent": round(meter.percent("gattbridge"), 3),
            "page_lag_median_s": round(finite[len(finite) // 2], 3) if finite else None,
            "page_lag_max_s": round(finite[-1], 3) if finite else None,
            "values_missed": sum(1 for x in lags if x == float("inf")), "values_checked": len(lags)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--idle-seconds", type=float, default=20)
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--json", help="also write the numbers here")
    ap.add_argument("--before", help="a binary from before the page, measured idle first")
    a = ap.parse_args()
    result: dict = {"binary": str(gattbridge_binary())}
    world = World(decoded=True, decoded_qos=1)
    try:
        if a.before:
            result["before"] = run(world, "", a.idle_seconds, a.seconds, browser=False, binary=a.before)
        result["off"] = run(world, "web:\n  enabled: false\n", a.idle_seconds, a.seconds, browser=False)
        port = free_port()
        result["on"] = run(world, f'web:\n  listen: "127.0.0.1:{port}"\n', a.idle_seconds, a.seconds, browser=True)
    finally:
        world.close()
    columns = [("before the page", result.get("before")), ("page off", result["off"]), ("page on", result["on"])]
    columns = [(name, figures) for name, figures in columns if figures]
    print(f"{'':28}" + "".join(f"{name:>17}" for name, _ in columns))
    for key, label in (("rss_anon_kib", "idle RssAnon (KiB)"), ("vm_rss_kib", "idle VmRSS (KiB)"),
                       ("threads", "threads"), ("idle_cpu_percent", "idle CPU (% of a core)")):
        print(f"{label:28}" + "".join(f"{figures[key]:>17}" for _, figures in columns))
    on = result["on"]
    print(f"one browser on Devices, 3 devices at 1 Hz: {on['browser_cpu_percent']} % of a core; the page's value "
          f"{on['page_lag_median_s']} s (median) / {on['page_lag_max_s']} s (max) behind the publish, "
          f"{on['values_missed']} of {on['values_checked']} not seen within 5 s")
    if a.json:
        Path(a.json).write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
