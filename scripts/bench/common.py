"""What `make bench` and `make soak` share: the release binary, per-process /proc accounting, the stamp peripheral,
the bridge config, and the world (private bus + BlueZoo + mosquitto + peripherals + an MQTT subscriber)."""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Optional

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from bench.bench import Bench, MqttClient, Mosquitto, Peripheral, Process, wait_until  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from stamp_peripheral import CHARACTERISTIC, SERVICE, unstamp, unstamp_heart_rate  # noqa: E402,F401

RELEASE_BIN = REPO / ".build-release" / "release" / "gattbridge"
FLOOR_RELAY_BIN = REPO / ".build-release" / "floor-relay"      # bench/floor/relay.c, built by `make bench-build`
CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")

FD_ADDRESS = "C0:FF:EE:00:02:01"       # stamp peripheral offering AcquireNotify (the fd path)
SIG_ADDRESS = "C0:FF:EE:00:02:02"      # stamp peripheral without it (the StartNotify / signal path)
REF_ADDRESS = "C0:FF:EE:00:02:03"      # fd-path twin the bridge does not manage: the direct reader's (bench only)
FLOOR_FD_ADDRESS = "C0:FF:EE:00:02:04"     # the fd path's twin for the floor relay (bench only)
FLOOR_SIG_ADDRESS = "C0:FF:EE:00:02:05"    # the signal path's twin for the floor relay (bench only)
HR_ADDRESS = "C0:FF:EE:00:02:06"       # heart-rate stamps, signal path, decoded by the bridge (`World(decoded=True)`)
FLOOR_HR_ADDRESS = "C0:FF:EE:00:02:07"     # its twin for the floor relay (bench only)
HM10_ADDRESS = "C0:FF:EE:00:00:02"     # the bench's HM-10: a third connected device, idle unless written to
BASE = "bench"


def gattbridge_binary() -> Path:
    """$GATTBRIDGE_BIN, else the release build `make bench` makes (.build-release)."""
    path = Path(os.environ.get("GATTBRIDGE_BIN") or RELEASE_BIN)
    if not path.exists():
        raise SystemExit(f"{path} missing: run `make bench` (it builds it) or set GATTBRIDGE_BIN")
    return path


def floor_relay_binary() -> Path:
    """$FLOOR_RELAY_BIN, else where `make bench-build` puts bench/floor/relay.c."""
    path = Path(os.environ.get("FLOOR_RELAY_BIN") or FLOOR_RELAY_BIN)
    if not path.exists():
        raise SystemExit(f"{path} missing: run `make bench` (it builds it) or set FLOOR_RELAY_BIN")
    return path


# --- /proc accounting (one process at a time: BlueZoo and the peripherals use CPU too) --------------------------

@dataclass
class Sample:
    t: float              # monotonic seconds
    cpu: float            # utime + stime, seconds (all threads)
    rss_kb: int
    hwm_kb: int           # peak RSS since start
    pss_kb: int
    switches: int         # voluntary + involuntary context switches, all threads
    anon_kb: int = 0      # RssAnon: heap, stacks, dirtied data (what a leak grows)
    file_kb: int = 0      # RssFile: mapped code and read-only data (grows as new code paths run for the first time)
    wakeups: int = 0      # voluntary context switches, all threads: a thread went to sleep and was woken again


def sample(pid: int) -> Sample:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / CLK_TCK          # fields 14 and 15 of stat(5)
    status = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    rss = int(status["VmRSS"].split()[0])
    hwm = int(status["VmHWM"].split()[0])
    pss = 0
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        if line.startswith("Pss:"):
            pss = int(line.split()[1])
    switches = wakeups = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            for line in (task / "status").read_text().splitlines():
                if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                    switches += int(line.split()[1])
                if line.startswith("voluntary_ctxt_switches"):
                    wakeups += int(line.split()[1])
        except FileNotFoundError:
            pass
    anon = int(status.get("RssAnon", "0 kB").split()[0])
    file = int(status.get("RssFile", "0 kB").split()[0])
    return Sample(time.monotonic(), cpu, rss, hwm, pss, switches, anon, file, wakeups)


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


class CpuMeter:
    """CPU seconds used by each named process between `start()` and `stop()`."""

    def __init__(self, pids: dict[str, Optional[int]]):
        self.pids = {name: pid for name, pid in pids.items() if pid}
        self.begin: dict[str, float] = {}
        self.t0 = 0.0
        self.used: dict[str, float] = {}
        self.seconds = 0.0

    def start(self) -> "CpuMeter":
        self.t0 = time.monotonic()
        self.begin = {name: cpu_seconds(pid) for name, pid in self.pids.items()}
        return self

    def stop(self) -> "CpuMeter":
        self.seconds = time.monotonic() - self.t0
        self.used = {name: cpu_seconds(pid) - self.begin[name] for name, pid in self.pids.items()}
        return self

    def percent(self, name: str) -> float:
        return 100.0 * self.used[name] / self.seconds if self.seconds else 0.0


def percentile(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    k = (len(ordered) - 1) * p / 100.0
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


# --- the machine ------------------------------------------------------------------------------------------------

def machine() -> dict:
    model = "unknown"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith(("model name", "Model")):
            model = line.split(":", 1)[1].strip()
            break
    mem_kb = int(Path("/proc/meminfo").read_text().split()[1])
    load = os.getloadavg()
    swift = subprocess.run(["swift", "--version"], capture_output=True, text=True).stdout.splitlines()
    mosq = subprocess.run(["mosquitto", "-h"], capture_output=True, text=True).stdout.splitlines()
    return {"cpu": model, "cores": os.cpu_count(), "memory_mb": mem_kb // 1024, "kernel": platform.release(),
            "arch": platform.machine(), "swift": swift[0] if swift else "?", "mosquitto": mosq[0] if mosq else "?",
            "loadavg_at_start": [round(x, 2) for x in load]}


def save_results(result: dict, out_dir: str, prefix: str, latest: str) -> Path:
    """Writes `result` as `<prefix>-<timestamp>.json` and as `latest` in `out_dir`; returns the latter."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    text = json.dumps(result, indent=2)
    (out / f"{prefix}-{datetime.now().strftime('%Y%m%d-%H%M%S')}.json").write_text(text)
    (out / latest).write_text(text)
    return out / latest


# --- the stamp peripheral and the bridge's config ----------------------------------------------------------------

class StampPeripheral(Peripheral):
    """Runs scripts/bench/stamp_peripheral.py instead of a `bench.peripherals` kind."""

    def _args(self) -> list[str]:
        args = [sys.executable, str(HERE / "stamp_peripheral.py"), "--adapter", self.adapter,
                "--name", self.options.get("name", "Bench Stamp")]
        if self.options.get("no_acquire_notify"):
            args.append("--no-acquire-notify")
        if self.options.get("heart_rate"):
            args.append("--heart-rate")
        return args

    def burst(self, burst_id: int, rate: float, count: int) -> int:
        mark = self.mark()
        self.send({"cmd": "burst", "id": burst_id, "rate": rate, "count": count})
        return mark

    def wait_burst(self, burst_id: int, since: int, timeout: float) -> dict:
        return self.wait_for(lambda e: e.get("event") == "burst_done" and e.get("id") == burst_id, timeout, since)


def stamp_peripheral(bench: Bench, address: str, name: str, acquire_notify: bool,
                     heart_rate: bool = False) -> StampPeripheral:
    adapter = bench.bluez.add_adapter(address)
    p = StampPeripheral("stamp", adapter, address, bench.env, bench.log_dir, name=name,
                        no_acquire_notify=not acquire_notify, heart_rate=heart_rate)
    bench.peripherals.append(p)
    return p.start()


def heart_rate_device(qos: int) -> str:
    """The decoded-value subject: heart-rate stamps on the signal path, as a strap's user would configure them."""
    chan = f"{SERVICE}/{CHARACTERISTIC}"
    return f"""\
  - name: hr
    address: "{HR_ADDRESS}"
    channels:
      - {{ name: stamp, characteristic: "{chan}", codec: heart_rate_measurement, mode: notify, qos: {qos} }}
"""


def write_config(path: Path, port: int, extra_devices: str = "") -> Path:
    chan = f"{SERVICE}/{CHARACTERISTIC}"
    path.write_text(f"""\
mqtt:
  host: 127.0.0.1
  port: {port}
  client_id: gattbridge-bench
  base_topic: {BASE}
homeassistant:
  enabled: false
devices:
  - name: fd
    address: "{FD_ADDRESS}"
    channels:
      - {{ name: stamp, characteristic: "{chan}", codec: hex, mode: notify }}
  - name: sig
    address: "{SIG_ADDRESS}"
    channels:
      - {{ name: stamp, characteristic: "{chan}", codec: hex, mode: notify }}
  - name: hm10
    address: "{HM10_ADDRESS}"
    channels:
      - {{ name: serial, characteristic: "ffe0/ffe1", codec: text, writable: true, write_with_response: false }}
{extra_devices}""")
    return path


class StampSubscriber:
    """mosquitto_sub (C, so the subscriber is never the bottleneck) on `bench/+/stamp` at QoS 1, writing
    "<receive time, CLOCK_REALTIME s.ns> <topic> <payload>" lines to a file, which `poll()` parses as it grows."""

    def __init__(self, bench: Bench, port: int, topic: str = f"{BASE}/+/stamp"):
        self.path = bench.workdir / f"stamps-{time.monotonic_ns()}.txt"
        self.records: list[tuple[str, int, int, int, int]] = []   # topic, burst, seq, sent ns, received ns
        self._offset = 0
        self._partial = b""
        self.process = Process(["sh", "-c", f"exec mosquitto_sub -h 127.0.0.1 -p {port} -q 1 -t '{topic}' "
                                            f"-F '%U %t %p' > {self.path}"], "mosquitto_sub", log_dir=bench.log_dir)
        bench.processes.append(self.process)
        self.process.start()
        time.sleep(0.5)

    def poll(self) -> list[tuple[str, int, int, int, int]]:
        with open(self.path, "rb") as f:
            f.seek(self._offset)
            data = f.read()
        self._offset += len(data)
        data = self._partial + data
        lines = data.split(b"\n")
        self._partial = lines.pop()
        for line in lines:
            try:
                t, topic, payload = line.decode().split(" ", 2)
                sec, _, frac = t.partition(".")
                burst, seq, sent = (unstamp_heart_rate(payload) if payload.startswith("{")
                                    else unstamp(bytes.fromhex(payload)))
                self.records.append((topic, burst, seq, sent, int(sec) * 1_000_000_000 + int(frac.ljust(9, "0")[:9])))
            except ValueError:
                continue
        return self.records


# Mosquitto must never be the one dropping: unlimited queues and in-flight windows towards the subscriber.
MOSQUITTO_EXTRA = "max_queued_messages 0\nmax_inflight_messages 0\nmax_queued_bytes 0\n"


class World:
    """Private bus + patched BlueZoo + mosquitto + the three peripherals + a subscriber on `bench/#`; with
    `reference`, the direct reader's fd-path twin; with `floor`, the floor relay's twins of the fd and signal
    peripherals (the relay cannot share them: one AcquireNotify per characteristic); with `decoded`, the heart-rate
    stamp peripheral (and with `floor` its twin), its device in the config at `decoded_qos`."""

    def __init__(self, workdir: Optional[Path] = None, reference: bool = False, floor: bool = False,
                 decoded: bool = False, decoded_qos: int = 0):
        self.bench = Bench(workdir=workdir)
        try:
            self.broker: Mosquitto = self.bench.mosquitto(extra_config=MOSQUITTO_EXTRA)
            self.fd = stamp_peripheral(self.bench, FD_ADDRESS, "Stamp FD", acquire_notify=True)
            self.sig = stamp_peripheral(self.bench, SIG_ADDRESS, "Stamp SIG", acquire_notify=False)
            self.hm10 = self.bench.peripheral("hm10", HM10_ADDRESS)
            self.ref = stamp_peripheral(self.bench, REF_ADDRESS, "Stamp REF", acquire_notify=True) if reference else None
            self.floor_fd = stamp_peripheral(self.bench, FLOOR_FD_ADDRESS, "Floor FD", acquire_notify=True) if floor else None
            self.floor_sig = (stamp_peripheral(self.bench, FLOOR_SIG_ADDRESS, "Floor SIG", acquire_notify=False)
                              if floor else None)
            self.hr = (stamp_peripheral(self.bench, HR_ADDRESS, "Stamp HR", acquire_notify=False, heart_rate=True)
                       if decoded else None)
            self.floor_hr = (stamp_peripheral(self.bench, FLOOR_HR_ADDRESS, "Floor HR", acquire_notify=False,
                                              heart_rate=True) if decoded and floor else None)
            self.mqtt: MqttClient = self.bench.mqtt_client(self.broker, topics=[f"{BASE}/#"])
            self.decoded_qos: Optional[int] = None
            self.config = self.write_config(decoded_qos if decoded else None)
        except BaseException:
            self.bench.close()
            raise

    def write_config(self, decoded_qos: Optional[int] = None) -> Path:
        """The bridge's config; with `decoded_qos`, the heart-rate peripheral's device too, its channel at that QoS
        (the next gattbridge start reads it)."""
        self.decoded_qos = decoded_qos if self.hr else None
        return write_config(self.bench.workdir / "config.yaml", self.broker.port,
                            "" if self.decoded_qos is None else heart_rate_device(self.decoded_qos))

    def start_gattbridge(self, env: Optional[dict] = None, log_level: str = "warning") -> Process:
        return self.bench.run_gattbridge(["run", "--config", str(self.config), "--log-level", log_level],
                                         env=env, binary=gattbridge_binary())

    def wait_online(self, devices=("fd", "sig", "hm10"), timeout: float = 60.0, since: int = 0) -> None:
        if self.decoded_qos is not None and "hr" not in devices:
            devices = (*devices, "hr")
        for d in devices:
            self.mqtt.wait_for(f"{BASE}/{d}/availability", "online", timeout, since)

    def pids(self, gattbridge: Process, name: str = "gattbridge", fd: Optional[Peripheral] = None,
             sig: Optional[Peripheral] = None) -> dict[str, Optional[int]]:
        """The measured process (`gattbridge`, or another `name`) and, for context, the bench's own processes (the
        fd/signal peripherals: `fd`/`sig` when the measured process reads twins)."""
        return {name: gattbridge.pid, "bluezoo": self.bench.bluez.process.pid,
                "mosquitto": self.broker.process.pid, "peripheral_fd": (fd or self.fd).process.pid,
                "peripheral_sig": (sig or self.sig).process.pid}

    def close(self) -> None:
        self.bench.close()
