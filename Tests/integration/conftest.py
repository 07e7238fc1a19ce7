"""pytest fixtures for the integration tests: the simulated BLE bench (bench/), mosquitto and gattbridge.

Run:  .venv/bin/python -m pytest Tests/integration -q      (scripts/setup.sh creates .venv)

Fixtures (all function-scoped unless noted; everything they start is killed in finalizers, even on failure):
  bench_dbus        (session) the private dbus-daemon; `.address`
  bench             a bench.Bench on that bus: patched BlueZoo with central adapter hci0 (fresh per test)
  bluez             bench.bluez: `.restart()`, `.kill()`, `.start()`, `.add_adapter(address)`
  central           a test-side BLE central on hci0 (bench.central.Central)
  peripheral        factory: peripheral(kind, address=None, wait_ready=True, **options) → bench.Peripheral
  mosquitto         a broker on 127.0.0.1:<free port>: `.host`, `.port`, `.restart()`, `.stop()`, `.start()`
  mqtt              a paho-mqtt client on that broker subscribed to "#": `.wait_for(topic, pred, timeout)`,
                    `.received(topic)`, `.publish(...)`, `.mark()`
  gattbridge_bin    (session) path of the binary ($GATTBRIDGE_BIN, else .build/debug/gattbridge); fails if absent
  run_gattbridge    factory: run_gattbridge(args, env=None, stdin=False) → bench.Process (stdout/stderr captured,
                    `.wait_for_line`, `.wait`, `.stop` (SIGTERM), `.kill`, `.signal`)
  wait_until        wait_until(cond, timeout, message) → cond's truthy result, else TimeoutError
When a test fails, the tail of every process log is printed (logs stay in the test's tmp_path/logs).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.bench import Bench, DBusDaemon, gattbridge_bin as _gattbridge_bin, wait_until as _wait_until  # noqa: E402


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"rep_{report.when}", report)


@pytest.fixture(scope="session")
def bench_dbus(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("dbus")
    daemon = DBusDaemon(workdir, workdir).start()
    yield daemon
    daemon.stop()


@pytest.fixture
def bench(request, bench_dbus, tmp_path):
    b = Bench(workdir=tmp_path, dbus=bench_dbus)
    yield b
    b.close()
    failed = any(getattr(request.node, f"rep_{w}", None) is not None and getattr(request.node, f"rep_{w}").failed
                 for w in ("setup", "call"))
    if failed:
        for log in sorted((tmp_path / "logs").glob("*.log")):
            lines = log.read_text(errors="replace").splitlines()
            sys.stderr.write(f"\n===== {log.name} (last 40 lines) =====\n" + "\n".join(lines[-40:]) + "\n")


@pytest.fixture
def bluez(bench):
    return bench.bluez


@pytest.fixture
def central(bench):
    return bench.central


@pytest.fixture
def peripheral(bench):
    return bench.peripheral


@pytest.fixture
def mosquitto(bench):
    return bench.mosquitto()


@pytest.fixture
def mqtt(bench, mosquitto):
    return bench.mqtt_client(mosquitto)


@pytest.fixture(scope="session")
def gattbridge_bin():
    path = _gattbridge_bin()
    if not path.exists():
        pytest.fail(f"gattbridge binary not found at {path}: run `swift build` (or set GATTBRIDGE_BIN)")
    return path


@pytest.fixture
def run_gattbridge(bench, gattbridge_bin):
    def run(args, env=None, stdin=False, name="gattbridge"):
        return bench.run_gattbridge([str(a) for a in args], env=env, stdin=stdin, binary=gattbridge_bin, name=name)
    return run


@pytest.fixture
def wait_until():
    return _wait_until
