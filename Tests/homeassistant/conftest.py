"""Fixtures for the tests against a real Home Assistant core (make test-homeassistant).

Home Assistant runs from its own venv (.venv-ha, scripts/homeassistant/setup.sh), as `hass -c DIR --skip-pip`, against
the bench's broker; the bench, broker and daemon fixtures are the integration tests' own (Tests/integration/conftest.py).

  home_assistant   factory: home_assistant() starts Home Assistant on the test's mosquitto and waits for its birth
                   message → HomeAssistant (`.entity_registry()`, `.device_registry()`, `.states(entity_id)`, `.stop()`)
                   options: rest_api=True also loads `api`, `config` and `diagnostics`, with an administrator's
                   token pre-seeded in .storage/auth (`.get(path)`, `.post(path, body)`, `.command({"type": …})` on
                   the websocket API); system_bus=ADDRESS replaces the bench's DBUS_SYSTEM_BUS_ADDRESS (an address
                   where nothing listens: Home Assistant's own Bluetooth integration finds no adapter);
                   log_levels={logger: level} (Tests/homeassistant/test_real_ha_proxy.py)
  proxy_bridge     the bridge with `esphome_proxy:` enabled, Tests/proxy/conftest.py's fixture
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import importlib.util
import json
import os
import secrets
import socket
import sqlite3
import struct
import sys
import time
import urllib.error
import urllib.request
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

# The proxy tier's bridge with `esphome_proxy:` (Tests/proxy/conftest.py), for test_real_ha_proxy.py.
_proxy_spec = importlib.util.spec_from_file_location("proxy_conftest", REPO / "Tests" / "proxy" / "conftest.py")
_proxy = importlib.util.module_from_spec(_proxy_spec)
_proxy_spec.loader.exec_module(_proxy)
proxy_bridge = _proxy.proxy_bridge

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


# What the REST API tests load on top: the REST API itself, the config entries' flows (`config`) and diagnostics.
REST_CONFIGURATION = """\
api:
config:
diagnostics:
"""


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _auth_storage() -> tuple[dict[str, Any], str]:
    """An `auth` store (Home Assistant 2024.3's .storage/auth, version 1) with one active owner in the administrators'
    group and a long-lived refresh token, and an access token for it: a JWT (HS256) whose issuer is the refresh token's
    id, signed with its jwt_key, which is what Home Assistant checks (auth/__init__.py,
    async_validate_access_token). Seeding it spares the onboarding, whose dependencies (person, image_upload: Pillow)
    the test venv lacks."""
    user_id, token_id, jwt_key = secrets.token_hex(16), secrets.token_hex(16), secrets.token_hex(64)
    now = int(time.time())
    refresh_token = {
        "id": token_id, "user_id": user_id, "client_id": None, "client_name": "gattbridge tests", "client_icon": None,
        "token_type": "long_lived_access_token", "created_at": "2024-01-01T00:00:00+00:00",
        "access_token_expiration": 86400.0 * 365, "token": secrets.token_hex(64), "jwt_key": jwt_key,
        "last_used_at": None, "last_used_ip": None, "expire_at": None, "credential_id": None, "version": "2024.3.3"}
    store = {"version": 1, "minor_version": 1, "key": "auth", "data": {
        "users": [{"id": user_id, "group_ids": ["system-admin"], "is_owner": True, "is_active": True,
                   "name": "gattbridge tests", "system_generated": False, "local_only": False}],
        "groups": [{"id": "system-admin", "name": "Administrators"}, {"id": "system-users", "name": "Users"},
                   {"id": "system-read-only", "name": "Read Only"}],
        "credentials": [], "refresh_tokens": [refresh_token]}}
    header = _b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    claims = _b64url(json.dumps({"iss": token_id, "iat": now, "exp": now + 86400 * 365}).encode())
    signature = hmac.new(jwt_key.encode(), f"{header}.{claims}".encode(), hashlib.sha256).digest()
    return store, f"{header}.{claims}.{_b64url(signature)}"


class _WebSocket:
    """The least of RFC 6455 a JSON exchange with Home Assistant's websocket API needs (text messages, masked from
    the client, unfragmented or fragmented from the server; pings answered), with the standard library only: the
    test venv has no websocket client."""

    def __init__(self, host: str, port: int, path: str, timeout: float):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        key = base64.b64encode(secrets.token_bytes(16)).decode()
        self.sock.sendall((f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\n"
                           f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n")
                          .encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(1)
            if not chunk:
                raise ConnectionError(f"websocket upgrade refused: {head!r}")
            head += chunk
        assert head.startswith(b"HTTP/1.1 101"), head

    def __enter__(self) -> "_WebSocket":
        return self

    def __exit__(self, *_: Any) -> None:
        self.sock.close()

    def _exactly(self, size: int) -> bytes:
        data = b""
        while len(data) < size:
            chunk = self.sock.recv(size - len(data))
            if not chunk:
                raise ConnectionError("websocket closed")
            data += chunk
        return data

    def _frame(self, opcode: int, payload: bytes) -> None:
        mask = secrets.token_bytes(4)
        size = len(payload)
        head = bytes([0x80 | opcode])
        if size < 126:
            head += bytes([0x80 | size])
        elif size < 65536:
            head += bytes([0x80 | 126]) + struct.pack("!H", size)
        else:
            head += bytes([0x80 | 127]) + struct.pack("!Q", size)
        self.sock.sendall(head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))

    def send(self, message: dict[str, Any]) -> None:
        self._frame(0x1, json.dumps(message).encode())

    def receive(self) -> dict[str, Any]:
        message = b""
        while True:
            first, second = self._exactly(2)
            size = second & 0x7F
            if size == 126:
                size = struct.unpack("!H", self._exactly(2))[0]
            elif size == 127:
                size = struct.unpack("!Q", self._exactly(8))[0]
            payload = self._exactly(size)
            opcode = first & 0x0F
            if opcode == 0x8:
                raise ConnectionError(f"websocket closed by Home Assistant: {payload!r}")
            if opcode == 0x9:
                self._frame(0xA, payload)
                continue
            if opcode in (0x0, 0x1):
                message += payload
                if first & 0x80:
                    return json.loads(message)


class HomeAssistant:
    """One Home Assistant core in `directory`, and what it made of the discovery: its registries (saved about 10 s
    after a change) and the recorder's states (committed every second).

    With `rest_api`, also its REST API (`get`, `post`) as an administrator. `system_bus`, when given, is the
    DBUS_SYSTEM_BUS_ADDRESS Home Assistant gets instead of the one it inherits (the bench's, where BlueZoo's adapters
    are). `log_levels` adds loggers to the logger's `logs`."""

    def __init__(self, directory: Path, broker_port: int, log_dir: Optional[Path], rest_api: bool = False,
                 system_bus: Optional[str] = None, log_levels: Optional[dict[str, str]] = None):
        self.directory = directory
        self.db = directory / "home-assistant_v2.db"
        self.http_port = free_port()
        self.token: Optional[str] = None
        storage = directory / ".storage"
        frontend = directory / "custom_components" / "frontend"
        storage.mkdir(parents=True)
        frontend.mkdir(parents=True)
        configuration = CONFIGURATION.format(http_port=self.http_port, db=self.db)
        configuration += "".join(f"    {name}: {level}\n" for name, level in (log_levels or {}).items())
        if rest_api:
            configuration += REST_CONFIGURATION
            auth, self.token = _auth_storage()
            (storage / "auth").write_text(json.dumps(auth))
        (directory / "configuration.yaml").write_text(configuration)
        (frontend / "manifest.json").write_text(json.dumps(FRONTEND_MANIFEST))
        (frontend / "__init__.py").write_text(FRONTEND_INIT)
        (storage / "core.config_entries").write_text(json.dumps({
            "version": 1, "minor_version": 1, "key": "core.config_entries",
            "data": {"entries": [_mqtt_entry(broker_port)]}}))
        env = None if system_bus is None else dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=system_bus)
        self.process = Process([HASS, "-c", directory, "--skip-pip"], "home-assistant", cwd=directory,
                               log_dir=log_dir, env=env)

    def request(self, method: str, path: str, body: Optional[dict[str, Any]] = None,
                timeout: float = 30) -> tuple[int, Any]:
        """(HTTP status, JSON answer or text) of one REST API call as the seeded administrator."""
        assert self.token is not None, "start Home Assistant with rest_api=True"
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.http_port}{path}", method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                status, text = response.status, response.read().decode()
        except urllib.error.HTTPError as error:
            status, text = error.code, error.read().decode(errors="replace")
        try:
            return status, json.loads(text)
        except ValueError:
            return status, text

    def command(self, message: dict[str, Any], timeout: float = 30) -> Any:
        """The result of one websocket API command (`{"type": …}`), as the seeded administrator: some of what the
        REST API of 2024.3 does not offer (flows in progress, the registries) is only there."""
        assert self.token is not None, "start Home Assistant with rest_api=True"
        with _WebSocket("127.0.0.1", self.http_port, "/api/websocket", timeout) as ws:
            assert ws.receive()["type"] == "auth_required"
            ws.send({"type": "auth", "access_token": self.token})
            answer = ws.receive()
            assert answer["type"] == "auth_ok", answer
            ws.send({"id": 1, **message})
            while True:
                answer = ws.receive()
                if answer.get("id") == 1 and answer.get("type") == "result":
                    break
        assert answer["success"], (message, answer)
        return answer["result"]

    def get(self, path: str) -> Any:
        status, answer = self.request("GET", path)
        assert status == 200, (path, status, answer)
        return answer

    def post(self, path: str, body: dict[str, Any]) -> Any:
        status, answer = self.request("POST", path, body)
        assert status == 200, (path, body, status, answer)
        return answer

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

    def start(timeout: float = 90.0, **options: Any) -> HomeAssistant:
        mark = mqtt.mark()
        instance = HomeAssistant(tmp_path / "home-assistant", mosquitto.port, tmp_path / "logs", **options).start()
        started.append(instance)
        begin = time.monotonic()
        mqtt.wait_for(f"{DISCOVERY_PREFIX}/status", "online", timeout, since=mark)
        sys.stderr.write(f"home assistant: birth message after {time.monotonic() - begin:.1f} s\n")
        return instance

    yield start
    for instance in started:
        instance.stop()
