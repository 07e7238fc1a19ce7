"""Fixtures for the tests against a real Home Assistant core (make test-homeassistant).

Home Assistant runs from its own venv (.venv-ha, scripts/homeassistant/setup.sh), as `hass -c DIR --skip-pip`, against
the bench's broker; the bench, broker and daemon fixtures are the integration tests' own (Tests/integration/conftest.py).

  home_assistant   factory: home_assistant() starts Home Assistant on the test's mosquitto and waits for its birth
                   message → HomeAssistant (`.entity_registry()`, `.device_registry()`, `.states(entity_id)`, `.stop()`)
"""

from __future__ import annotations

import importlib.util
import json
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any, Optional

import pytest

REPO = Path(__file__).resolve().parents[2]
INTEGRATION = REPO / "Tests" / "integration"
for path in (REPO, INTEGRATION):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

# The integration tests' fixtures, under a module name that does not clash with this conftest.
_spec = importlib.util.spec_from_file_location("integration_conftest", INTEGRATION / "conftest.py")
_integration = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_integration)
pytest_runtest_makereport = _integration.pytest_runtest_makereport
bench_dbus, bench, bluez, central, peripheral, mosquitto, mqtt, gattbridge_bin, run_gattbridge, wait_until = (
    _integration.bench_dbus, _integration.bench, _integration.bluez, _integration.central, _integration.peripheral,
    _integration.mosquitto, _integration.mqtt, _integration.gattbridge_bin, _integration.run_gattbridge,
    _integration.wait_until)

from bench.bench import Process, free_port  # noqa: E402

HASS = REPO / ".venv-ha" / "bin" / "hass"
DISCOVERY_PREFIX = "homeassistant"

CONFIGURATION = """\
homeassistant:
  name: gattbridge test
  latitude: 0
  longitude: 0
  elevation: 0
  unit_system: metric
  time_zone: UTC
# MQTT depends on http.
http:
  server_host: 127.0.0.1
  server_port: {http_port}
recorder:
  db_url: sqlite:///{db}
  commit_interval: 1
logger:
  default: warning
  logs:
    homeassistant.components.mqtt: debug
"""

# Without the home-assistant-frontend package Home Assistant starts in recovery mode and never sets up MQTT.
FRONTEND_MANIFEST = {"domain": "frontend", "name": "Frontend stand-in", "version": "1.0.0", "documentation": "",
                     "dependencies": [], "codeowners": [], "requirements": [], "iot_class": "local_push"}
FRONTEND_INIT = '"""Stands in for the frontend, which the test does not need."""\n\n\n' \
                'async def async_setup(hass, config):\n    return True\n'


def _mqtt_entry(port: int) -> dict[str, Any]:
    """Home Assistant 2024.3 sets MQTT up from a config entry only, never from YAML."""
    status = f"{DISCOVERY_PREFIX}/status"
    return {
        "entry_id": "gattbridgetestmqtt0000000000000", "version": 1, "minor_version": 1, "domain": "mqtt",
        "title": "bench broker", "source": "user", "unique_id": None, "disabled_by": None,
        "pref_disable_new_entities": False, "pref_disable_polling": False, "options": {},
        "data": {"broker": "127.0.0.1", "port": port, "discovery": True, "discovery_prefix": DISCOVERY_PREFIX,
                 "birth_message": {"topic": status, "payload": "online", "qos": 0, "retain": False},
                 "will_message": {"topic": status, "payload": "offline", "qos": 0, "retain": False}},
    }


class HomeAssistant:
    """One Home Assistant core in `directory`, and what it made of the discovery: its registries (saved about 10 s
    after a change) and the recorder's states (committed every second)."""

    def __init__(self, directory: Path, broker_port: int, log_dir: Optional[Path]):
        self.directory = directory
        self.db = directory / "home-assistant_v2.db"
        storage = directory / ".storage"
        frontend = directory / "custom_components" / "frontend"
        storage.mkdir(parents=True)
        frontend.mkdir(parents=True)
        (directory / "configuration.yaml").write_text(CONFIGURATION.format(http_port=free_port(), db=self.db))
        (frontend / "manifest.json").write_text(json.dumps(FRONTEND_MANIFEST))
        (frontend / "__init__.py").write_text(FRONTEND_INIT)
        (storage / "core.config_entries").write_text(json.dumps({
            "version": 1, "minor_version": 1, "key": "core.config_entries",
            "data": {"entries": [_mqtt_entry(broker_port)]}}))
        self.process = Process([HASS, "-c", directory, "--skip-pip"], "home-assistant", cwd=directory,
                               log_dir=log_dir)

    def start(self) -> "HomeAssistant":
        self.process.start()
        return self

    def stop(self) -> None:
        self.process.stop(timeout=30)

    def _storage(self, key: str) -> dict[str, Any]:
        path = self.directory / ".storage" / key
        return json.loads(path.read_text()) if path.exists() else {"data": {}}

    def entity_registry(self) -> list[dict[str, Any]]:
        return self._storage("core.entity_registry")["data"].get("entities", [])

    def device_registry(self) -> list[dict[str, Any]]:
        return self._storage("core.device_registry")["data"].get("devices", [])

    def states(self, entity_id: str) -> list[tuple[str, float, dict[str, Any]]]:
        """(state, last_updated as a Unix time, attributes) of every recorded state of `entity_id`, oldest first."""
        if not self.db.exists():
            return []
        with sqlite3.connect(f"file:{self.db}?mode=ro", uri=True, timeout=5) as db:
            try:
                rows = db.execute(
                    "SELECT s.state, s.last_updated_ts, a.shared_attrs FROM states s "
                    "JOIN states_meta m ON m.metadata_id = s.metadata_id "
                    "LEFT JOIN state_attributes a ON a.attributes_id = s.attributes_id "
                    "WHERE m.entity_id = ? ORDER BY s.state_id", (entity_id,)).fetchall()
            except sqlite3.OperationalError:     # the recorder has not created its tables yet
                return []
        return [(state, updated, json.loads(attrs) if attrs else {}) for state, updated, attrs in rows]

    def recorded_entities(self) -> list[str]:
        if not self.db.exists():
            return []
        with sqlite3.connect(f"file:{self.db}?mode=ro", uri=True, timeout=5) as db:
            try:
                return [row[0] for row in db.execute("SELECT entity_id FROM states_meta")]
            except sqlite3.OperationalError:
                return []


@pytest.fixture
def home_assistant(bench, mosquitto, mqtt, tmp_path):
    if not HASS.exists():
        pytest.fail(f"{HASS} is missing: run `make test-homeassistant` (or bash scripts/homeassistant/setup.sh)")
    started: list[HomeAssistant] = []

    def start(timeout: float = 90.0) -> HomeAssistant:
        mark = mqtt.mark()
        instance = HomeAssistant(tmp_path / "home-assistant", mosquitto.port, tmp_path / "logs").start()
        started.append(instance)
        begin = time.monotonic()
        mqtt.wait_for(f"{DISCOVERY_PREFIX}/status", "online", timeout, since=mark)
        sys.stderr.write(f"home assistant: birth message after {time.monotonic() - begin:.1f} s\n")
        return instance

    yield start
    for instance in started:
        instance.stop()
