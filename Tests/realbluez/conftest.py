"""Fixtures for the real-BlueZ scenarios. These run only inside the QEMU guest that `make test-realbluez`
(scripts/realbluez/run.sh) boots; anywhere else the whole directory is skipped.

Session-wide, in this order: the real stack (dbus-daemon, btvirt -L -l4, bluetoothd; Tests/realbluez/stack.py),
mosquitto on 127.0.0.1:1883, an MQTT client subscribed to "#", and the three bench peripherals, each on its
own emulated controller (heart_rate on hci1, hm10 on hci2, led on hci3) re-advertising every 2 s while
unconnected. gattbridge runs on hci0. Logs go to $REALBLUEZ_OUT/logs and come back to the host.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

OUT = os.environ.get("REALBLUEZ_OUT")   # set by scripts/realbluez/guest.sh

from bench.bench import Mosquitto, MqttClient, Peripheral, Process, gattbridge_bin  # noqa: E402

from stack import RealBlueZ  # noqa: E402

OUT_DIR = Path(OUT or "/nonexistent")
LOG_DIR = OUT_DIR / "logs"
WORKDIR = Path("/run/realbluez")
READVERTISE_S = 2
HRM_RATE_HZ = 2


TIMINGS: dict[str, float] = {}


def record(name: str, seconds: float) -> None:
    """A measured duration, kept in logs/timings.json (the host prints it after the run)."""
    TIMINGS[name] = round(seconds, 2)
    with open(LOG_DIR / "timings.json", "w") as f:
        json.dump(TIMINGS, f, indent=1)


def uptime() -> float:
    with open("/proc/uptime") as f:
        return float(f.read().split()[0])


def pytest_collection_modifyitems(config, items):
    if not OUT:
        skip = pytest.mark.skip(reason="real-BlueZ scenarios run inside the QEMU guest: make test-realbluez")
        for item in items:
            item.add_marker(skip)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if OUT and (report.when == "call" or report.failed):
        # A timeline in one place: which scenario ran when (the logs carry monotonic times too).
        with open(LOG_DIR / "timeline.log", "a") as f:
            f.write(f"{time.monotonic():10.3f} {item.name} {report.when} {report.outcome} "
                    f"{report.duration:.2f}s\n")


@pytest.fixture(scope="session")
def stack():
    LOG_DIR.mkdir(parents=True, exist_ok=True)
    WORKDIR.mkdir(parents=True, exist_ok=True)
    btmon = OUT_DIR / "btmon.snoop" if os.environ.get("REALBLUEZ_BTMON") == "1" else None
    s = RealBlueZ(WORKDIR, LOG_DIR, btmon=btmon)
    record("guest_uptime_at_first_fixture", uptime())
    try:
        t0 = time.monotonic()
        s.start()
        record("stack_start", time.monotonic() - t0)
        yield s
    finally:
        s.close()


@pytest.fixture(scope="session")
def env(stack):
    return dict(stack.env, PYTHONPATH=str(REPO))


@pytest.fixture(scope="session")
def peripherals(stack, env):
    """name → bench.Peripheral. Started together (Python start-up is slow on an emulated CPU)."""
    specs = {
        "heart_rate": ("hci1", dict(rate=HRM_RATE_HZ, battery=87)),
        "hm10": ("hci2", {}),
        "led": ("hci3", {}),
    }
    started = {}
    try:
        for kind, (adapter, opts) in specs.items():
            p = Peripheral(kind, adapter, stack.addresses[adapter], env, LOG_DIR, readvertise=READVERTISE_S, **opts)
            started[kind] = p.start(wait_ready=False)
        t0 = time.monotonic()
        for p in started.values():
            p.wait_for("ready", 60)
        record("peripherals_ready", time.monotonic() - t0)
        yield started
    finally:
        for p in started.values():
            p.kill()


@pytest.fixture(scope="session")
def broker():
    b = Mosquitto(WORKDIR, LOG_DIR, port=1883).start()
    yield b
    b.kill()


@pytest.fixture(scope="session")
def mqtt(broker):
    client = MqttClient(broker.host, broker.port, ["#"])
    yield client
    client.close()


class Runner:
    """Starts gattbridge processes with the guest's bus; every one is killed at the end of the session."""

    def __init__(self, env: dict[str, str]):
        self.env = env
        self.binary = gattbridge_bin()
        self.processes: list[Process] = []
        self.count = 0

    def start(self, args: list[str], name: str = "gattbridge") -> Process:
        self.count += 1
        p = Process([self.binary, *args], f"{self.count:02d}-{name}", env=self.env, cwd=WORKDIR,
                    log_dir=LOG_DIR).start()
        self.processes.append(p)
        return p

    def run(self, args: list[str], timeout: float = 60.0) -> Process:
        """Runs a command to completion (its exit code in `.returncode`)."""
        p = self.start(args, args[0])
        p.wait(timeout)
        return p

    def close(self) -> None:
        for p in self.processes:
            p.kill()


@pytest.fixture(scope="session")
def gattbridge(env):
    r = Runner(env)
    if not r.binary.exists():
        pytest.fail(f"gattbridge binary not found at {r.binary}")
    yield r
    r.close()
