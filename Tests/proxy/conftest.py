"""pytest fixtures for the Home Assistant Bluetooth proxy (docs/home-assistant.md, "Bluetooth proxy"): the real bridge
on the simulated bench with `esphome_proxy:` on a free loopback port, and Home Assistant's own ESPHome client,
aioesphomeapi, as the client.

Run:  make test-proxy      (or: GATTBRIDGE_BIN=… .venv-proxy/bin/python -m pytest Tests/proxy -q)

The venv is .venv-proxy (scripts/proxy/setup.sh): the bench's requirements and aioesphomeapi, bleak-esphome and
habluetooth, pinned. The bench fixtures are the integration tier's (Tests/integration/conftest.py), loaded from there;
on top of them:
  proxy_bridge  factory: proxy_bridge(encryption=True, devices=[], adverts=False, key_file=True, name=None,
                default_agent=False, max_connections=None, env=None) → ProxyBridge:
                mosquitto and `gattbridge run` with `esphome_proxy: {enabled, listen, encryption,
                encryption_key_file}` on hci0; `.port`, `.key` (base64, None in plaintext), `.bridge`, `.mqtt`,
                `.client(**kw)` (an aioesphomeapi APIClient for it)
Every wait is a condition with a deadline.
"""
from __future__ import annotations

import base64
import importlib.util
import os
import secrets
import socket
import sys
import time
from pathlib import Path
from typing import Any, Optional

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
INTEGRATION = REPO / "Tests" / "integration"
for path in (str(REPO), str(INTEGRATION)):
    if path not in sys.path:
        sys.path.insert(0, path)

_spec = importlib.util.spec_from_file_location("integration_conftest", INTEGRATION / "conftest.py")
_integration = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_integration)
pytest_runtest_makereport = _integration.pytest_runtest_makereport
bench_dbus = _integration.bench_dbus
bench = _integration.bench
bluez = _integration.bluez
central = _integration.central
peripheral = _integration.peripheral
mosquitto = _integration.mosquitto
mqtt = _integration.mqtt
gattbridge_bin = _integration.gattbridge_bin
run_gattbridge = _integration.run_gattbridge
wait_until = _integration.wait_until

from bench.bench import CENTRAL_ADDRESS, Process, free_port, wait_until as _wait_until  # noqa: E402
from bridge_helpers import BASE, Bridge, to_yaml  # noqa: E402


class ProxyBridge:
    def __init__(self, bridge: Bridge, port: int, key: Optional[str], mqtt, state_dir: Path, config: Path):
        self.bridge, self.port, self.key, self.mqtt = bridge, port, key, mqtt
        self.state_dir, self.config = state_dir, config

    def client(self, **options: Any):
        from aioesphomeapi import APIClient
        options.setdefault("noise_psk", self.key)
        return APIClient("127.0.0.1", self.port, None, **options)


def _listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


@pytest.fixture
def proxy_bridge(bench, mosquitto, mqtt, run_gattbridge, gattbridge_bin, tmp_path):
    def start(encryption: bool = True, devices: Optional[list[dict]] = None, adverts: bool = False,
              key_file: bool = True, name: Optional[str] = None, default_agent: bool = False,
              max_connections: Optional[int] = None, env: Optional[dict] = None) -> ProxyBridge:
        port = free_port()
        proxy: dict[str, Any] = {"enabled": True, "listen": f"127.0.0.1:{port}", "encryption": encryption}
        key = None
        state_dir = tmp_path / "state"
        if encryption and key_file:
            key = base64.b64encode(secrets.token_bytes(32)).decode()
            secret = tmp_path / "esphome-proxy.key"
            secret.write_text(key + "\n")
            secret.chmod(0o600)
            proxy["encryption_key_file"] = str(secret)
        if name is not None:
            proxy["name"] = name
        doc = {
            "mqtt": {"host": "127.0.0.1", "port": mosquitto.port,
                     "client_id": f"gattbridge-proxy-{time.monotonic_ns()}", "base_topic": BASE, "keepalive": 10},
            "homeassistant": {"enabled": False},
            "bluetooth": {"adapters": [{"name": "hci0", "max_connections": max_connections}
                                       if max_connections is not None else "hci0"],
                          "default_agent": default_agent},
            "state_dir": str(state_dir),
            "adverts": {"enabled": adverts},
            "esphome_proxy": proxy,
            "devices": list(devices or []),
        }
        path = tmp_path / "gattbridge.yaml"
        path.write_text(to_yaml(doc) + "\n")
        check = bench.run_gattbridge(["config", "check", "--config", str(path)], binary=gattbridge_bin,
                                     name="config-check")
        check.wait(30)
        assert check.returncode == 0, check.stderr
        mark = mqtt.mark()
        process = run_gattbridge(["run", "--config", path, "--log-level",
                                  os.environ.get("GATTBRIDGE_TEST_LOG_LEVEL", "debug")], env=env)
        bridge = Bridge(process, path, BASE)
        mqtt.wait_for(bridge.topic("bridge", "info"), None, 20, since=mark)
        _wait_until(lambda: _listening(port) or (bridge.assert_running() and False), 20,
                    f"the proxy never listened on {port}", interval=0.1)
        if encryption and not key_file:
            key = (state_dir / "esphome-proxy.key").read_text().strip()
        return ProxyBridge(bridge, port, key, mqtt, state_dir, path)
    return start




class Avahi:
    """avahi-daemon on the bench's bus, in a network namespace of its own whose loopback carries multicast (so the
    machine's own mDNS is neither needed nor disturbed): the bridge reaches it over D-Bus, as on a Pi."""

    def __init__(self, bench, workdir: Path):
        import shutil
        for tool in ("avahi-daemon", "avahi-browse", "unshare"):
            if shutil.which(tool, path="/usr/sbin:/usr/bin:/sbin:/bin") is None:
                pytest.skip(f"{tool} is not installed (apt-get install avahi-daemon avahi-utils)")
        if os.geteuid() != 0:
            pytest.skip("the avahi bench needs root for its network namespace (unshare -m -n)")
        self.env = dict(bench.env, PATH="/usr/sbin:/usr/bin:/sbin:/bin")
        conf = REPO / "bench" / "avahi-daemon.conf"
        script = ("ip link set lo up && ip link set lo multicast on && mkdir -p /run/avahi-daemon && "
                  "mount -t tmpfs tmpfs /run/avahi-daemon && exec avahi-daemon --no-drop-root --no-chroot "
                  f"--no-rlimits --no-proc-title -f {conf}")
        self.process = Process(["unshare", "-m", "-n", "sh", "-c", script], "avahi-daemon", env=self.env,
                               log_dir=bench.log_dir).start()

    def browse(self, service_type: str) -> list[dict]:
        """The resolved services of `service_type` as `avahi-browse -rpt` lists them."""
        import subprocess
        out = subprocess.run(["avahi-browse", "-rpt", service_type], env=self.env, capture_output=True, text=True,
                             timeout=20).stdout
        services = []
        for line in out.splitlines():
            fields = line.split(";")
            if fields[0] != "=" or len(fields) < 10:
                continue
            txt = [item.strip('"') for item in fields[9].split('" "')] if fields[9] else []
            services.append({"name": fields[3], "port": int(fields[8]), "txt": dict(t.split("=", 1) for t in txt)})
        return services

    def stop(self) -> None:
        self.process.stop()


@pytest.fixture
def avahi(bench, tmp_path):
    daemon = Avahi(bench, tmp_path)
    yield daemon
    daemon.stop()
