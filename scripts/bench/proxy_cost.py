"""What the Home Assistant Bluetooth proxy costs the daemon (docs/home-assistant.md, "Bluetooth proxy";
docs/performance.md#home-assistant-bluetooth-proxy), measured beside a peer: denvera/bt-proxy, a Python proxy on
bleak speaking the same ESPHome native API.

The bench's world without devices: private bus, BlueZoo (1 s scan tick), mosquitto, and the release gattbridge with
`esphome_proxy:` on a loopback port, encrypted (a key file: Home Assistant's real setup). The client is Home
Assistant's own, aioesphomeapi, in this process, subscribed to raw advertisements and counting every advertisement it
receives, so the CPU per advertisement is per advertisement delivered. The load is `--broadcasters` forged BTHome
broadcasters of legacy size (31 bytes) at 1 Hz, all in one process (bench/peripherals/crowd.py, one BlueZoo adapter
each).

Every figure comes from /proc/PID of the process measured alone: RssAnon and VmRSS (`status`, at the end of the
window), CPU as utime+stime (`stat`) over the window, in % of one core. In order:

1. gattbridge idle with `esphome_proxy: {enabled: false}`, then enabled with no client (the idle memory budget is
   their RssAnon difference); with `--before BINARY` first a build from before the proxy, its config less the key;
2. gattbridge with one client subscribed, no broadcaster;
3. the peer (when found) idle with no client, then with one client: plaintext, as the peer has no Noise;
4. the broadcasters start; gattbridge with one client (the CPU budget), then the same daemon once the client left;
5. the peer the same way.

The numbers are printed (and saved to .bench/proxy-latest.json, or --json), never asserted.

    .venv-proxy/bin/python scripts/bench/proxy_cost.py [--broadcasters 50] [--seconds 60] [--idle-seconds 30]
                                                       [--before BINARY] [--peer DIR | --no-peer] [--json out.json]
                                                       [--perf FILE]

`--perf FILE` adds, after gattbridge's windows with the broadcasters and the client, 30 s of `perf record -g` (into
FILE) and 30 s of `strace -c` in the same state; with the release build's symbols kept
(GATTBRIDGE_BIN=.build-profile/release/gattbridge, `make profile-build`), `perf report -i FILE` names the functions.

GATTBRIDGE_BIN chooses the binary (default: .build-release, what `make bench-build` makes). The peer comes from
--peer (a checkout of github.com/denvera/bt-proxy) or else the mirror `fetch github:denvera/bt-proxy` leaves in
/work/.mirror (its HEAD is extracted into .build/bt-proxy); nothing of it is in this repository. Its dependencies go
into a throwaway venv, .build/bt-proxy-venv, at the versions PEER_REQUIREMENTS pins (its pyproject asks bleak>=0.21,
zeroconf>=0.80; these are the versions Home Assistant's stack in .venv-proxy uses). Without it, the peer is skipped
and the reason printed.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import hashlib
import json
import os
import secrets
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import REPO, CpuMeter, gattbridge_binary, machine, save_results  # noqa: E402
from bench.bench import Bench, Process, free_port, wait_until  # noqa: E402

BASE = "bench"
PEER_MIRROR = Path("/work/.mirror/denvera+bt-proxy/repo")
PEER_TREE = REPO / ".build" / "bt-proxy"
PEER_VENV = REPO / ".build" / "bt-proxy-venv"
PEER_REQUIREMENTS = ["bleak==3.1.0", "zeroconf==0.154.0"]


def status_kib(pid: int, key: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return 0


def broadcaster_address(i: int) -> str:
    return f"A4:C1:38:BF:{i >> 8:02X}:{i & 0xFF:02X}"


def listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


# --- the client ----------------------------------------------------------------------------------------------------

class Client:
    """aioesphomeapi on a loop of its own thread, subscribed to raw advertisements: what Home Assistant does with a
    proxy. Counts the advertisements and messages received, and the addresses heard."""

    def __init__(self, port: int, key: Optional[str]):
        from aioesphomeapi import APIClient
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="esphome-client", daemon=True)
        self.thread.start()
        self.adverts = 0
        self.messages = 0
        self.addresses: set[int] = set()
        self._run(self._connect(lambda: APIClient("127.0.0.1", port, None, noise_psk=key)))

    def _run(self, coroutine, timeout: float = 30):
        return asyncio.run_coroutine_threadsafe(asyncio.wait_for(coroutine, timeout), self.loop).result(timeout + 5)

    async def _connect(self, make) -> None:
        self.api = make()           # aioesphomeapi wants its loop running when it is made
        await self.api.connect(login=False)
        await self.api.device_info()
        self.api.subscribe_bluetooth_le_raw_advertisements(self._heard)

    def _heard(self, response) -> None:
        self.messages += 1
        self.adverts += len(response.advertisements)
        for a in response.advertisements:
            self.addresses.add(a.address)

    def counts(self) -> tuple[int, int]:
        return self.adverts, self.messages

    def close(self) -> None:
        try:
            self._run(self.api.disconnect(), timeout=10)
        except Exception:
            pass
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


def measure(pid: int, seconds: float, client: Optional[Client] = None, bench: Optional[Bench] = None) -> dict:
    """One window: the process's CPU and memory, what the client received, and BlueZoo's CPU (the bench's own)."""
    before = client.counts() if client else (0, 0)
    meter = CpuMeter({"p": pid, "bluezoo": bench.bluez.process.pid if bench else None}).start()
    time.sleep(seconds)
    meter.stop()
    after = client.counts() if client else (0, 0)
    adverts, messages = after[0] - before[0], after[1] - before[1]
    used = meter.used["p"]
    return {"seconds": round(meter.seconds, 1), "rss_anon_kib": status_kib(pid, "RssAnon"),
            "vm_rss_kib": status_kib(pid, "VmRSS"), "threads": status_kib(pid, "Threads"),
            "cpu_percent": round(meter.percent("p"), 3), "cpu_seconds": round(used, 2),
            "adverts_per_s": round(adverts / meter.seconds, 1) if client else None,
            "messages_per_s": round(messages / meter.seconds, 1) if client else None,
            "cpu_us_per_advert": round(used * 1e6 / adverts, 1) if adverts else None,
            "bluezoo_cpu_percent": round(meter.percent("bluezoo"), 2) if bench else None,
            "loadavg": [round(x, 2) for x in os.getloadavg()]}


# --- gattbridge ------------------------------------------------------------------------------------------------------

class Bridge:
    """gattbridge on the bench with the proxy off, on, or absent from the config (`proxy=None`, for --before)."""

    def __init__(self, bench: Bench, broker_port: int, mqtt, proxy: Optional[bool], binary: Path):
        self.bench, self.mqtt = bench, mqtt
        self.port = free_port()
        self.key: Optional[str] = None
        work = bench.workdir
        text = (f"mqtt:\n  host: 127.0.0.1\n  port: {broker_port}\n  client_id: gattbridge-bench\n"
                f"  base_topic: {BASE}\nhomeassistant:\n  enabled: false\nbluetooth:\n  adapters: [hci0]\n"
                f"state_dir: \"{work / 'state'}\"\nadverts:\n  enabled: false\ndevices: []\n")
        if proxy is False:
            text += "esphome_proxy:\n  enabled: false\n"
        elif proxy:
            self.key = base64.b64encode(secrets.token_bytes(32)).decode()
            secret = work / "esphome-proxy.key"
            secret.write_text(self.key + "\n")
            secret.chmod(0o600)
            text += (f"esphome_proxy:\n  enabled: true\n  listen: \"127.0.0.1:{self.port}\"\n"
                     f"  encryption_key_file: \"{secret}\"\n")
        config = work / "gattbridge.yaml"
        config.write_text(text)
        mark = mqtt.mark()
        self.process = bench.run_gattbridge(["run", "--config", str(config), "--log-level", "warning"], binary=binary)
        mqtt.wait_for(f"{BASE}/bridge/info", None, 30, since=mark)
        if proxy:
            wait_until(lambda: listening(self.port) or not self.process.running, 30,
                       f"the proxy never listened on {self.port}", interval=0.1)
        self.check()

    @property
    def pid(self) -> int:
        return self.process.pid

    def check(self) -> None:
        if not self.process.running:
            raise RuntimeError(f"gattbridge exited ({self.process.returncode}): {self.process.stderr[-2000:]}")

    def client(self) -> Client:
        return Client(self.port, self.key)

    def stop(self) -> None:
        self.process.stop()


# --- the peer ------------------------------------------------------------------------------------------------------

def peer_source(path: Optional[str]) -> tuple[Optional[Path], str]:
    """(the directory holding `bt_proxy/`, its description), or (None, why not)."""
    if path:
        tree = Path(path)
        if (tree / "bt_proxy" / "__main__.py").exists():
            return tree, f"{tree}"
        return None, f"{tree} holds no bt_proxy/__main__.py"
    if not PEER_MIRROR.exists():
        return None, (f"no copy of denvera/bt-proxy at {PEER_MIRROR} (fetch github:denvera/bt-proxy, or pass --peer "
                      f"a checkout)")
    commit = subprocess.run(["git", "-C", str(PEER_MIRROR), "rev-parse", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    stamp = PEER_TREE / ".commit"
    if not stamp.exists() or stamp.read_text().strip() != commit:
        PEER_TREE.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", "-C", str(PEER_MIRROR), "archive", "HEAD"], capture_output=True)
        if archive.returncode != 0:
            return None, f"git archive of {PEER_MIRROR} failed: {archive.stderr.decode(errors='replace')}"
        subprocess.run(["tar", "-x", "-C", str(PEER_TREE)], input=archive.stdout, check=True)
        stamp.write_text(commit + "\n")
    return PEER_TREE, f"denvera/bt-proxy {commit[:12]}"


def peer_venv() -> tuple[Optional[Path], str]:
    """The peer's interpreter, its venv made (or refreshed) with PEER_REQUIREMENTS; or (None, why not)."""
    python = PEER_VENV / "bin" / "python"
    wanted = hashlib.sha256("\n".join(PEER_REQUIREMENTS).encode()).hexdigest()
    stamp = PEER_VENV / ".requirements.sha256"
    if python.exists() and stamp.exists() and stamp.read_text().strip() == wanted:
        return python, " ".join(PEER_REQUIREMENTS)
    base = "/usr/bin/python3" if Path("/usr/bin/python3").exists() else sys.executable
    steps = [[base, "-m", "venv", str(PEER_VENV)],
             [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", "--prefer-binary",
              *PEER_REQUIREMENTS]]
    for step in steps:
        done = subprocess.run(step, capture_output=True, text=True)
        if done.returncode != 0:
            return None, f"{' '.join(step)} failed: {done.stderr[-500:]}"
    stamp.write_text(wanted + "\n")
    return python, " ".join(PEER_REQUIREMENTS)


class Peer:
    """denvera/bt-proxy unchanged, on hci0 of the bench's bus (bleak reaches BlueZ through DBUS_SYSTEM_BUS_ADDRESS)."""

    def __init__(self, bench: Bench, python: Path, tree: Path):
        self.bench = bench
        self.port = free_port()
        self.process = Process([python, "-m", "bt_proxy", "--port", str(self.port), "--adapter", "hci0",
                                "--log-level", "WARNING"], "bt-proxy", env=dict(bench.env, PYTHONPATH=str(tree)),
                               cwd=bench.workdir, log_dir=bench.log_dir).start()
        bench.processes.append(self.process)
        wait_until(lambda: listening(self.port) or not self.process.running, 60,
                   f"bt-proxy never listened on {self.port}", interval=0.1)
        self.check()

    @property
    def pid(self) -> int:
        return self.process.pid

    def check(self) -> None:
        if not self.process.running:
            raise RuntimeError(f"bt-proxy exited ({self.process.returncode}): {self.process.stderr[-2000:]}")

    def client(self) -> Client:
        return Client(self.port, None)

    def stop(self) -> None:
        self.process.stop()


# --- the run -------------------------------------------------------------------------------------------------------

def profile(pid: int, client: Client, path: str, seconds: float = 30) -> dict:
    """`perf record -g` into `path`, then `strace -c`, `seconds` each, and the advertisements delivered in each: where
    the CPU goes (a binary with its symbols reads better: `make profile-build`). After the measured windows, never in
    them."""
    start = client.counts()[0]
    perf = subprocess.run(["perf", "record", "-F", "2000", "-g", "-o", path, "-p", str(pid), "--", "sleep",
                           str(seconds)], capture_output=True, text=True)
    middle = client.counts()[0]
    strace = subprocess.run(["timeout", "-s", "INT", str(seconds), "strace", "-c", "-f", "-p", str(pid)],
                            capture_output=True, text=True)
    end = client.counts()[0]
    summary = "\n".join(line for line in strace.stderr.splitlines() if not line.startswith("strace:"))
    print(f"perf record ({'ok' if perf.returncode == 0 else perf.stderr.strip()[-200:]}): {path}, "
          f"{middle - start} advertisements delivered\nstrace -c, {end - middle} advertisements delivered:\n{summary}")
    return {"perf_data": path, "perf_adverts": middle - start, "strace_adverts": end - middle, "strace": summary}


def with_client(subject, a, rows: dict, prefix: str, load: int, crowd: Optional[list[int]] = None) -> None:
    """One client subscribed: `--seconds` measured (after every broadcaster was heard, with `crowd`), then the client
    leaves and `--idle-seconds` more are measured."""
    client = subject.client()
    try:
        if crowd:
            wanted = set(crowd)
            wait_until(lambda: wanted <= client.addresses, 90,
                       lambda: f"{len(wanted - client.addresses)} broadcasters never heard", interval=0.2)
        time.sleep(a.settle)
        rows[f"{prefix} client {load}"] = measure(subject.pid, a.seconds, client, subject.bench)
        if crowd and a.perf and isinstance(subject, Bridge):
            rows[f"{prefix} profile {load}"] = profile(subject.pid, client, a.perf)
    finally:
        client.close()
    subject.check()
    if crowd:
        time.sleep(a.settle)
        rows[f"{prefix} alone {load}"] = measure(subject.pid, a.idle_seconds, bench=subject.bench)
        subject.check()


def idle(subject, a, rows: dict, key: str) -> None:
    time.sleep(a.settle)
    rows[key] = measure(subject.pid, a.idle_seconds, bench=subject.bench)
    subject.check()


def run(a) -> dict:
    binary = gattbridge_binary()
    result: dict = {"binary": str(binary), "machine": machine(), "broadcasters": a.broadcasters,
                    "seconds": a.seconds, "idle_seconds": a.idle_seconds, "rows": {}}
    rows = result["rows"]
    peer_python = tree = None
    if a.no_peer:
        result["peer"] = "left out (--no-peer)"
    else:
        tree, described = peer_source(a.peer)
        if tree:
            peer_python, venv = peer_venv()
            described = f"{described} on {venv}" if peer_python else venv
        result["peer"] = described
        if not (tree and peer_python):
            print(f"bt-proxy skipped: {described}", file=sys.stderr)
    bench = Bench()
    try:
        broker = bench.mosquitto()
        mqtt = bench.mqtt_client(broker, topics=[f"{BASE}/#"])
        if a.before:
            b = Bridge(bench, broker.port, mqtt, None, Path(a.before))
            try:
                idle(b, a, rows, "gattbridge before")
            finally:
                b.stop()
        b = Bridge(bench, broker.port, mqtt, False, binary)
        try:
            idle(b, a, rows, "gattbridge off")
        finally:
            b.stop()
        b = Bridge(bench, broker.port, mqtt, True, binary)
        try:
            idle(b, a, rows, "gattbridge on")
            with_client(b, a, rows, "gattbridge", 0)
        finally:
            b.stop()
        if peer_python:
            p = Peer(bench, peer_python, tree)
            try:
                idle(p, a, rows, "bt-proxy on")
                with_client(p, a, rows, "bt-proxy", 0)
            finally:
                p.stop()
        addresses = [broadcaster_address(i) for i in range(a.broadcasters)]
        crowd = bench.crowd(addresses, size=31, interval=1.0)
        crowd.wait_for(lambda e: e.get("event") == "crowd_ready", 120)
        wanted = [int(x.replace(":", ""), 16) for x in addresses]
        b = Bridge(bench, broker.port, mqtt, True, binary)
        try:
            with_client(b, a, rows, "gattbridge", a.broadcasters, wanted)
        finally:
            b.stop()
        if peer_python:
            p = Peer(bench, peer_python, tree)
            try:
                with_client(p, a, rows, "bt-proxy", a.broadcasters, wanted)
            finally:
                p.stop()
    finally:
        bench.close()
    return result


LABELS = [("gattbridge before", "gattbridge", "before the proxy, idle"),
          ("gattbridge off", "gattbridge", "proxy off, idle"),
          ("gattbridge on", "gattbridge", "proxy on, no client"),
          ("gattbridge client 0", "gattbridge", "1 client (noise), 0 bc"),
          ("gattbridge client N", "gattbridge", "1 client (noise), N bc"),
          ("gattbridge alone N", "gattbridge", "no client, N bc"),
          ("bt-proxy on", "bt-proxy", "no client, 0 bc"),
          ("bt-proxy client 0", "bt-proxy", "1 client (plain), 0 bc"),
          ("bt-proxy client N", "bt-proxy", "1 client (plain), N bc"),
          ("bt-proxy alone N", "bt-proxy", "no client, N bc")]


def report(result: dict) -> None:
    n = result["broadcasters"]
    rows = result["rows"]
    print(f"{'':12}{'':26}{'RssAnon KiB':>12}{'VmRSS KiB':>11}{'threads':>8}{'CPU %':>8}{'adverts/s':>10}"
          f"{'msgs/s':>8}{'µs/advert':>10}")
    for key, subject, label in LABELS:
        row = rows.get(key.replace(" N", f" {n}"))
        if not row:
            continue

        def cell(name: str, width: int) -> str:
            value = row.get(name)
            return f"{'-' if value is None else value:>{width}}"
        print(f"{subject:12}{label.replace(' N ', f' {n} '):26}{cell('rss_anon_kib', 12)}{cell('vm_rss_kib', 11)}"
              f"{cell('threads', 8)}{cell('cpu_percent', 8)}{cell('adverts_per_s', 10)}{cell('messages_per_s', 8)}"
              f"{cell('cpu_us_per_advert', 10)}")
    off, on = rows.get("gattbridge off"), rows.get("gattbridge on")
    if off and on:
        print(f"gattbridge idle RssAnon, proxy on (no client) - off: {on['rss_anon_kib'] - off['rss_anon_kib']:+} KiB "
              f"(budget +1024 KiB)")
    for subject in ("gattbridge", "bt-proxy"):
        loaded, quiet = rows.get(f"{subject} client {n}"), rows.get(f"{subject} client 0")
        if loaded and quiet and loaded["adverts_per_s"]:
            marginal = (loaded["cpu_percent"] - quiet["cpu_percent"]) / 100 * 1e6 / loaded["adverts_per_s"]
            print(f"{subject}: {n} broadcasters at 1 Hz, 1 client: {loaded['cpu_percent']} % of a core "
                  f"(budget 2 % for gattbridge), {loaded['cpu_us_per_advert']} µs per advertisement delivered "
                  f"({marginal:.1f} µs over its CPU with no broadcaster)")
    print(f"peer: {result['peer']}; machine: {result['machine']['cpu']}, {result['machine']['cores']} cores, "
          f"load at start {result['machine']['loadavg_at_start']}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--broadcasters", type=int, default=50)
    ap.add_argument("--seconds", type=float, default=60, help="the windows with a client")
    ap.add_argument("--idle-seconds", type=float, default=30, help="the windows without a client")
    ap.add_argument("--settle", type=float, default=10, help="before each window")
    ap.add_argument("--before", help="a binary from before the proxy, measured idle first")
    ap.add_argument("--peer", help="a checkout of denvera/bt-proxy (default: the mirror's HEAD)")
    ap.add_argument("--no-peer", action="store_true", help="gattbridge alone")
    ap.add_argument("--perf", metavar="FILE", help="then profile gattbridge with the client and the broadcasters: "
                                                   "perf record into FILE, and strace -c (30 s each)")
    ap.add_argument("--json", help="also write the numbers here")
    a = ap.parse_args()
    result = run(a)
    report(result)
    path = save_results(result, str(REPO / ".bench"), "proxy", "proxy-latest.json")
    if a.json:
        Path(a.json).write_text(json.dumps(result, indent=2))
    print(f"JSON in {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
