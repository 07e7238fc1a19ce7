"""Liveness under load (docs/operating.md, "The watchdog"): the daemon under the shipped unit's watchdog, scaled down
(WATCHDOG_USEC=2 s, so a pet every second, and an MQTT keepalive of 5 s), while something keeps its event loop busy:
a QoS 0 channel notifying at 20 Hz, a broadcaster heard several times a second, a broker that accepts TCP but never
answers CONNECT. Each runs for 30 s. Under systemd a late pet is a SIGABRT, so every gap between pets must stay well
inside the timeout; a real mosquitto must never drop the bridge for a missed keepalive; and a silent broker must be
left and tried again."""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

import pytest

from bench.bench import SdNotifyListener
from adverts_helpers import adverts_config, passive
from bridge_helpers import BASE as ADVERTS_BASE

WATCHDOG_USEC = 2_000_000          # a pet every second
PET_INTERVAL = WATCHDOG_USEC / 2e6
RUN_SECONDS = 30
BASE = "gb"
HRM = "C0:FF:EE:00:00:01"


@pytest.fixture
def notify(bench):
    listener = SdNotifyListener(bench.workdir)
    yield listener
    listener.close()


def start(run_gattbridge, config: Path, notify: SdNotifyListener):
    env = dict(notify.env)
    env["WATCHDOG_USEC"] = str(WATCHDOG_USEC)
    proc = run_gattbridge(["run", "--config", config], env=env)
    notify.wait_for("READY", "1", timeout=20)
    return proc


def watch_pets(notify: SdNotifyListener, proc, seconds: float) -> list[float]:
    """The gaps between pets over `seconds`; fails as systemd would, at the first gap past the timeout."""
    mark = notify.mark()
    end = time.monotonic() + seconds
    last = time.monotonic()
    seen = 0
    while time.monotonic() < end:
        pets = notify.since(mark, "WATCHDOG")
        if len(pets) > seen:
            seen = len(pets)
            last = time.monotonic()
        assert time.monotonic() - last < WATCHDOG_USEC / 1e6, \
            f"no pet for {time.monotonic() - last:.1f} s: systemd would have aborted the daemon"
        assert proc.running, proc.stderr[-2000:]
        time.sleep(0.05)
    stamps = [m["_t"] for m in notify.since(mark, "WATCHDOG")]
    assert all(m["WATCHDOG"] == "1" for m in notify.since(mark, "WATCHDOG"))
    return [b - a for a, b in zip(stamps, stamps[1:])]


def assert_pets_every_second(gaps: list[float], what: str) -> None:
    assert len(gaps) >= RUN_SECONDS / PET_INTERVAL - 3, f"too few pets {what}: {len(gaps) + 1}"
    # On a fixed grid of one second; a probe late by a scheduler hiccup may stretch one gap, never towards 2 s.
    assert max(gaps) < 1.5 * PET_INTERVAL, f"a gap of {max(gaps):.2f} s between pets {what}: {sorted(gaps)[-5:]}"


def assert_no_keepalive_drop(mosquitto) -> None:
    log = mosquitto.process.stderr
    assert "exceeded timeout" not in log, [line for line in log.splitlines() if "exceeded timeout" in line]


def test_a_qos0_channel_at_20_hz_keeps_the_watchdog_and_the_keepalive(run_gattbridge, peripheral, mosquitto, mqtt,
                                                                      notify, tmp_path):
    peripheral("heart_rate", rate=20)
    config = tmp_path / "config.yaml"
    config.write_text(f"""mqtt:
  host: 127.0.0.1
  port: {mosquitto.port}
  client_id: gb-liveness
  base_topic: {BASE}
  keepalive: 5
homeassistant:
  enabled: false
devices:
  - name: strap
    address: "{HRM}"
    channels:
      - name: heart_rate
        characteristic: "2a37"
        codec: heart_rate_measurement
        qos: 0
""")
    proc = start(run_gattbridge, config, notify)
    mqtt.wait_for(f"{BASE}/strap/heart_rate", timeout=30)
    mark = len(mqtt.received(f"{BASE}/strap/heart_rate"))
    gaps = watch_pets(notify, proc, RUN_SECONDS)
    assert_pets_every_second(gaps, "with a 20 Hz QoS 0 channel")
    values = len(mqtt.received(f"{BASE}/strap/heart_rate")) - mark
    assert values > 20 * RUN_SECONDS * 0.8, f"only {values} values in {RUN_SECONDS} s"
    assert_no_keepalive_drop(mosquitto)
    assert "not petting the watchdog" not in proc.stderr


def test_adverts_several_times_a_second_keep_the_watchdog_and_the_keepalive(run_gattbridge, bench, mosquitto, mqtt,
                                                                            notify, tmp_path):
    sensor = bench.broadcaster("bthome", "A4:C1:38:0B:70:01", interval=0.2)
    config = tmp_path / "adverts.yaml"
    text = adverts_config(mosquitto.port, [passive("porch", sensor.address, "bthome")])
    config.write_text(text.replace("keepalive: 10", "keepalive: 5"))
    proc = start(run_gattbridge, config, notify)
    mqtt.wait_for(f"{ADVERTS_BASE}/porch/availability", "online", timeout=30)
    gaps = watch_pets(notify, proc, RUN_SECONDS)
    assert_pets_every_second(gaps, "with a broadcaster at 5 Hz")
    assert_no_keepalive_drop(mosquitto)
    assert "not petting the watchdog" not in proc.stderr


class SilentBroker:
    """A TCP listener that accepts connections and reads what comes, but never answers: no CONNACK, ever."""

    def __init__(self):
        self.server = socket.socket()
        self.server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(16)
        self.port = self.server.getsockname()[1]
        self.accepted: list[float] = []
        self.closed = False
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while not self.closed:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            self.accepted.append(time.monotonic())
            threading.Thread(target=self._drain, args=(conn,), daemon=True).start()

    @staticmethod
    def _drain(conn):
        with conn:
            while conn.recv(4096):
                pass

    def close(self):
        self.closed = True
        self.server.close()


def test_a_broker_that_never_answers_connect_is_retried_and_the_watchdog_kept(run_gattbridge, notify, tmp_path):
    broker = SilentBroker()
    try:
        config = tmp_path / "config.yaml"
        config.write_text(f"""mqtt:
  host: 127.0.0.1
  port: {broker.port}
  client_id: gb-silent
  base_topic: {BASE}
  keepalive: 5
homeassistant:
  enabled: false
devices: []
""")
        proc = start(run_gattbridge, config, notify)
        gaps = watch_pets(notify, proc, RUN_SECONDS)
        assert_pets_every_second(gaps, "with a broker that never answers")
        # Each attempt is given up within 10 s (here the 5 s keepalive) and followed by another after a backoff.
        assert len(broker.accepted) >= 3, f"{len(broker.accepted)} CONNECT attempt(s) in {RUN_SECONDS} s"
        assert "did not answer CONNECT" in proc.stderr
    finally:
        broker.close()
