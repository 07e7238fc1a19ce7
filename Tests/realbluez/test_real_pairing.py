"""Pairing against the real bluetoothd (docs/pairing.md): real SMP with a passkey between two btvirt controllers, hci0
(gattbridge) and hci5 (bench.peripherals.secure: a characteristic that needs an authenticated link, and an agent
that demands the passkey). Runs after test_real_bluez.py, once its daemon has stopped: the secure peripheral
becomes bluetoothd's default agent, which must not disturb the other scenarios.
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest

from bench.bench import Peripheral, wait_until
from bench.peripherals import secure
from conftest import LOG_DIR, READVERTISE_S, WORKDIR, record

PASSKEY = 246810
WRONG = 135791
BASE = "pairing"


@pytest.fixture(scope="module")
def lock(stack, env):
    p = Peripheral("secure", "hci5", stack.addresses["hci5"], env, LOG_DIR, readvertise=READVERTISE_S,
                   passkey=PASSKEY)
    p.start(wait_ready=False)
    p.wait_for("agent_ready", 60)
    yield p
    p.kill()


def passkey_requests(p: Peripheral, since: int = 0) -> int:
    with p._cond:
        return sum(1 for e in p.history[since:] if e.get("event") == "passkey_request")


def bond_dir(stack, address: str) -> Path:
    return Path("/var/lib/bluetooth") / stack.addresses["hci0"] / address


def bonded(stack, address: str) -> bool:
    """bluetoothd keeps a directory for every device it has stored anything about; a bond is its long-term key."""
    info = bond_dir(stack, address) / "info"
    return info.exists() and "LongTermKey]" in info.read_text()


def test_pair_with_a_wrong_passkey_fails_once_with_75(stack, lock, gattbridge):
    mark = lock.mark()
    t0 = time.monotonic()
    proc = gattbridge.run(["pair", lock.address, "--passkey", str(WRONG), "--adapter", "hci0", "--timeout", "30"])
    record("pair_wrong_passkey", time.monotonic() - t0)
    assert proc.returncode == 75, (proc.returncode, proc.stderr)
    assert "AuthenticationFailed" in proc.stderr, proc.stderr
    assert passkey_requests(lock, mark) == 1, "the peripheral was asked more than once"
    assert not bonded(stack, lock.address)


def test_pair_with_the_passkey_bonds_and_prints_the_identity_address(stack, lock, gattbridge):
    keyfile = WORKDIR / "lock.passkey"
    keyfile.write_text(f"{PASSKEY}\n")
    os.chmod(keyfile, 0o600)
    t0 = time.monotonic()
    # 60 s: the wrong passkey's attempt dropped the link, and the lock must advertise again before it can be
    # reached. Under TCG bluetoothd has been seen to time out the lock's RegisterAdvertisement calls for ~30 s
    # after that (its log: "readvertise_failed"), which a 30 s pairing did not outlast.
    proc = gattbridge.run(["pair", lock.address, "--passkey-file", str(keyfile), "--timeout", "60"], timeout=90)
    record("pair_passkey", time.monotonic() - t0)
    assert proc.returncode == 0, (proc.returncode, proc.stderr)
    assert f"identity address: {lock.address} (public)" in proc.stdout, proc.stdout
    assert str(PASSKEY) not in proc.stdout + proc.stderr
    device = stack.device("hci0", lock.address)
    assert (device["Paired"], device["Trusted"]) == (True, True)
    assert bonded(stack, lock.address)

    # inspect shows the bond and reads the protected characteristic over the encrypted link.
    proc = gattbridge.run(["inspect", lock.address, "--json", "--timeout", "30"])
    assert proc.returncode == 0, proc.stderr
    tree = json.loads(proc.stdout)
    assert (tree["paired"], tree["bonded"], tree["trusted"]) == (True, True, True)
    chars = {c["uuid"]: c for s in tree["services"] for c in s["characteristics"]}
    assert chars[secure.CHARACTERISTIC]["value_hex"] == "2a"


def test_unpair_removes_the_bond(stack, lock, gattbridge):
    proc = gattbridge.run(["unpair", lock.address])
    assert proc.returncode == 0, proc.stderr
    assert not bond_dir(stack, lock.address).exists()
    assert stack.device("hci0", lock.address) is None
    assert gattbridge.run(["unpair", lock.address]).returncode == 69


CONFIG = """\
mqtt:
  host: 127.0.0.1
  port: {port}
  client_id: gattbridge-realbluez-pairing
  base_topic: {base}
bluetooth:
  adapter: hci0
homeassistant:
  enabled: false
devices:
  - name: lock
    address: "{address}"
    pairing: passkey
    passkey_file: lock-run.passkey
    channels:
      - name: value
        characteristic: "{service}/{char}"
        codec: hex
        mode: read
        interval: 300
      - name: counter
        characteristic: "{service}/{char}"
        codec: uint8
        mode: notify
"""


def test_run_pairs_reads_subscribes_and_keeps_the_bond_across_a_bluetoothd_restart(stack, lock, broker, mqtt,
                                                                                    gattbridge):
    keyfile = WORKDIR / "lock-run.passkey"
    keyfile.write_text(f"{WRONG}\n")
    os.chmod(keyfile, 0o600)
    config = WORKDIR / "pairing.yaml"
    config.write_text(CONFIG.format(port=broker.port, base=BASE, address=lock.address, service=secure.SERVICE,
                                    char=secure.CHARACTERISTIC))
    mark, requests = mqtt.mark(), lock.mark()
    bridge = gattbridge.start(["run", "--config", str(config), "--log-level", "debug"], "run-pairing")
    try:
        # A wrong passkey: an error event, and the next attempt a minute away (no retry storm).
        events = f"{BASE}/bridge/event"
        mqtt.wait_for(events, lambda m: m.json().get("type") == "error" and "pairing failed" in m.json()["message"],
                      90, since=mark)
        mqtt.wait_for(events, lambda m: m.json().get("type") == "reconnect_attempt"
                      and m.json()["delay_ms"] >= 48_000, 10, since=mark)
        evs = [m.json() for m in mqtt.received(events, mark)]
        failure = next(i for i, e in enumerate(evs) if e["type"] == "error" and "pairing failed" in e["message"])
        retry = next(e for e in evs[failure:] if e["type"] == "reconnect_attempt")
        assert retry["delay_ms"] >= 48_000, evs
        assert passkey_requests(lock, requests) == 1

        # The right passkey and a reload: paired at once, then the protected value is read and subscribed.
        keyfile.write_text(f"{PASSKEY}\n")
        t0 = time.monotonic()
        bridge.signal(signal.SIGHUP)
        mqtt.wait_for(f"{BASE}/lock/availability", "online", 90, since=mark)
        record("pairing_reload_to_online", time.monotonic() - t0)
        mqtt.wait_for(f"{BASE}/lock/value", "2a", 30, since=mark)
        mqtt.wait_count(f"{BASE}/lock/counter", 3, 30, since=mark)
        assert bonded(stack, lock.address)
        assert stack.device("hci0", lock.address)["Trusted"] is True
        for m in mqtt.received("#", mark):
            assert str(PASSKEY) not in m.text and str(WRONG) not in m.text, m.topic

        # bluetoothd restarts (as `systemctl restart bluetooth` does it: SIGTERM; the SIGKILL crash is covered in
        # test_real_bluez.py, and killing it with an encrypted link up can oops this guest kernel in
        # hci_chan_del): the stored bond is used, no new pairing.
        asked = passkey_requests(lock)
        back, ready = mqtt.mark(), lock.mark()
        t1 = time.monotonic()
        stack.bluetoothd.stop()
        wait_until(lambda: not stack.bus.name_has_owner("org.bluez"), 10, "org.bluez still owned")
        stack.start_bluetoothd()
        lock.wait_for("agent_ready", 60, since=ready)
        mqtt.wait_for(f"{BASE}/lock/availability", "online", 120, since=back)
        mqtt.wait_count(f"{BASE}/lock/counter", 3, 30, since=back)
        record("pairing_bluetoothd_restart_to_online", time.monotonic() - t1)
        assert passkey_requests(lock) == asked, "the bond was not kept"
        assert bridge.stop(10) == 0
    finally:
        bridge.kill()

    proc = gattbridge.run(["unpair", lock.address])
    assert proc.returncode == 0, proc.stderr
    assert not bond_dir(stack, lock.address).exists()
