"""pytest fixtures for the web page's browser tests (docs/web.md): the real bridge on the simulated bench, with its
`web:` section on a free loopback port, driven from Debian's chromium through Playwright (never `playwright install`;
scripts/web/setup.sh installs both).

Run:  make test-web      (or: GATTBRIDGE_BIN=… .venv/bin/python -m pytest Tests/web -q)

The bench fixtures are the integration tier's (Tests/integration/conftest.py: `bench`, `peripheral`, `mosquitto`,
`mqtt`, `run_gattbridge`, `wait_until`, …), loaded from there; on top of them:
  browser       (session) one headless chromium for the whole run ($GATTBRIDGE_CHROMIUM, default /usr/bin/chromium)
  web_bridge    factory: web_bridge(devices, password=None, adverts=…) → WebBridge: the bench's three peripherals
                (unless told otherwise), mosquitto, and `gattbridge run` with `web: {enabled, listen[, password_file]}`;
                `.url`, `.bridge` (bridge_helpers.Bridge), `.mqtt`, `.peripherals`, `.state_dir`, `.api(…)` (urllib)
  page          a fresh browser context and page (1280×800) that records dialogs, requests, console errors and page
                errors (`page.seen`); closed after the test
Every wait is a condition with a deadline. What the tests import lives in web_helpers.py (a module name of its own,
so Tests/web runs beside other tiers in one pytest). GATTBRIDGE_WEB_SCREENSHOTS=1 makes
test_every_page_renders_under_the_csp write docs/web/*.png.
"""
from __future__ import annotations

import importlib.util
import json
import os
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Optional

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
INTEGRATION = REPO / "Tests" / "integration"
for path in (str(REPO), str(INTEGRATION)):
    if path not in sys.path:
        sys.path.insert(0, path)

# The integration tier's fixtures and its failure report (process logs printed on failure), loaded under another name.
_spec = importlib.util.spec_from_file_location("integration_conftest", INTEGRATION / "conftest.py")
_integration = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_integration)
pytest_runtest_makereport = _integration.pytest_runtest_makereport
bench_dbus = _integration.bench_dbus
bench = _integration.bench
bluez = _integration.bluez
peripheral = _integration.peripheral
mosquitto = _integration.mosquitto
mqtt = _integration.mqtt
gattbridge_bin = _integration.gattbridge_bin
run_gattbridge = _integration.run_gattbridge
wait_until = _integration.wait_until

from bench.bench import free_port, wait_until as _wait_until  # noqa: E402
from bridge_helpers import BASE, Bridge, channel, device, to_yaml  # noqa: E402

from web_helpers import CHROMIUM, LAMP, LED_CHAR, SERIAL, STRAP, new_page  # noqa: E402


def bench_devices() -> list[dict]:
    """The three bench peripherals as the demo config names them (config/demo.yaml)."""
    return [
        device("heart-rate-strap", STRAP, [
            channel("heart_rate", "2a37", "heart_rate_measurement", mode="notify"),
            channel("battery", "180f/2a19", "battery_level", mode="read", interval=60, retain=True),
        ]),
        device("hm10", SERIAL, [channel("serial", "ffe0/ffe1", "text", writable=True, write_with_response=False)]),
        device("desk-led", LAMP, [channel("led", LED_CHAR, "hex", values={"ON": "01", "OFF": "00"}, mode="read",
                                          interval=1, writable=True, homeassistant="switch")]),
    ]


class WebBridge:
    def __init__(self, bridge: Bridge, url: str, port: int, mqtt, peripherals: dict, state_dir: Path):
        self.bridge, self.url, self.port, self.mqtt = bridge, url, port, mqtt
        self.peripherals, self.state_dir = peripherals, state_dir

    def api(self, method: str, path: str, body: Any = None, headers: Optional[dict] = None,
            raw: Optional[bytes] = None) -> tuple[int, Any]:
        """A request as a script (or another site) sends it: no cookie unless given in `headers`."""
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        req = urllib.request.Request(self.url + path, data=data, method=method, headers=headers or {})
        if data is not None and "Content-Type" not in (headers or {}):
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                status, text = r.status, r.read()
        except urllib.error.HTTPError as error:
            status, text = error.code, error.read()
        try:
            return status, json.loads(text)
        except ValueError:
            return status, text


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/api/session", timeout=2) as r:
            return r.status == 200
    except (urllib.error.URLError, OSError):
        return False


@pytest.fixture
def web_bridge(bench, peripheral, mosquitto, mqtt, run_gattbridge, gattbridge_bin, tmp_path):
    def start(devices: Optional[list[dict]] = None, password: Optional[str] = None, bench_peripherals: bool = True,
              adverts: Optional[dict] = None) -> WebBridge:
        peripherals = {}
        if bench_peripherals:
            peripherals = {"heart-rate-strap": peripheral("heart_rate", STRAP), "hm10": peripheral("hm10", SERIAL),
                           "desk-led": peripheral("led", LAMP)}
            peripherals["desk-led"].wait_for({"event": "state", "led": "00"})
        port = free_port()
        web: dict[str, Any] = {"enabled": True, "listen": f"127.0.0.1:{port}"}
        if password is not None:
            secret = tmp_path / "web-password"
            secret.write_text(password + "\n")
            secret.chmod(0o600)
            web["password_file"] = str(secret)
        state_dir = tmp_path / "state"
        doc = {
            "mqtt": {"host": "127.0.0.1", "port": mosquitto.port, "client_id": f"gattbridge-web-{time.monotonic_ns()}",
                     "base_topic": BASE, "keepalive": 10},
            "homeassistant": {"enabled": False},
            "state_dir": str(state_dir),
            "adverts": adverts if adverts is not None else {"enabled": True},
            "web": web,
            "devices": (bench_devices() if bench_peripherals else []) + list(devices or []),
        }
        path = tmp_path / "gattbridge.yaml"
        path.write_text(to_yaml(doc) + "\n")
        check = bench.run_gattbridge(["config", "check", "--config", str(path)], binary=gattbridge_bin,
                                     name="config-check")
        check.wait(30)
        assert check.returncode == 0, check.stderr
        mark = mqtt.mark()
        process = run_gattbridge(["run", "--config", path, "--log-level", os.environ.get("GATTBRIDGE_TEST_LOG_LEVEL",
                                                                                      "debug")])
        bridge = Bridge(process, path, BASE)
        mqtt.wait_for(bridge.topic("bridge", "info"), None, 20, since=mark)
        url = f"http://127.0.0.1:{port}"
        _wait_until(lambda: _answers(url) or (bridge.assert_running() and False), 20,
                    f"the page never answered on {url}", interval=0.2)
        for name in peripherals:
            bridge.wait_online(mqtt, name)
        return WebBridge(bridge, url, port, mqtt, peripherals, state_dir)
    return start


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"no browser at {CHROMIUM}: run scripts/web/setup.sh (apt-get install chromium)")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True)
        yield b
        b.close()


@pytest.fixture
def page(browser):
    context, p = new_page(browser)
    yield p
    context.close()


@pytest.fixture
def phone(browser):
    context, p = new_page(browser, 390, 844)
    yield p
    context.close()

