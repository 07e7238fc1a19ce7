"""A peripheral with a resolvable private address, and the "set pairing" hint, against the real bluetoothd
(docs/pairing.md). The `secure` peripheral runs on hci5 once test_real_pairing.py (file order) is done with it, now with
privacy on (`btmgmt privacy on IRK` while powered off): the kernel advertises with a resolvable private address
(RPA) and, once bonded, hands the central its IRK and its identity address (hci5's public address).

1. The hint: a config that saves the RPA `scan` saw with `pairing: none` gets an `error` event that says to set
   `pairing`, for its read channel and its notify channel, and `gattbridge read` says to pair.
2. `pair RPA` bonds and prints the identity address; `run` with the identity address and `pairing: passkey`
   reads and subscribes although the peripheral keeps advertising with RPAs; and again after bluetoothd restarts
   (the device object is then named after the identity address, no longer after the RPA).
"""

from __future__ import annotations

import json
import os
import subprocess
import time

import pytest

from bench.bench import Peripheral, wait_until
from bench.peripherals import secure
from conftest import LOG_DIR, READVERTISE_S, WORKDIR, record

# Off in `make test` (REALBLUEZ_PRIVACY=0), on in `make test-realbluez`: in two of the last three CI runs the guest's
# bluetoothd 5.66, which plays both roles here, stalled around the private-address bond (an ATT request between its
# own roles left to its 30 s timeout, a kernel oops, then a scan that sees only the identity object), and a rerun of
# the tier met it again. docs/dev/REAL-BLUEZ.md has the observations.
pytestmark = pytest.mark.skipif(os.environ.get("REALBLUEZ_PRIVACY", "1") != "1",
                                reason="REALBLUEZ_PRIVACY=0: the private-address scenarios are not part of this run")

ADAPTER = "hci5"
INDEX = 5
# Fixed, so the IRK the central stores while bonding still resolves the RPAs after privacy is switched on again.
IRK = "5ec7e7c0ffee00112233445566778899"
PASSKEY = 424242
NAME = "Bench Vault"
BASE = "privacy"


def btmgmt(stack, *args: str) -> str:
    proc = subprocess.run(["btmgmt", "--index", str(INDEX), *args], env=stack.env, capture_output=True, text=True,
                          timeout=30)
    with open(LOG_DIR / "btmgmt.log", "a") as f:
        f.write(f"--- {time.monotonic():.3f} btmgmt {' '.join(args)} -> {proc.returncode}\n{proc.stdout}{proc.stderr}")
    assert proc.returncode == 0, (args, proc.stdout, proc.stderr)
    return proc.stdout


def privacy_on(stack) -> None:
    """Privacy can only be switched while the controller is off; bluetoothd itself switches it off at start-up
    (main.conf `Privacy = off`), so this runs again after every bluetoothd start. (btmgmt prints nothing without
    a terminal, so the `rpa` fixture's scan is what shows it worked.)"""
    btmgmt(stack, "power", "off")
    btmgmt(stack, "privacy", "on", IRK)
    btmgmt(stack, "power", "on")


def is_rpa(address: str) -> bool:
    return (int(address.split(":")[0], 16) >> 6) == 0b01


def forget_central(stack) -> None:
    """The peripheral forgets its side of any bond with hci0 (test_real_pairing.py's `unpair` removed only the
    central's): a peripheral that still holds a key asks for security at once on connect, another failure."""
    central = f"/org/bluez/{ADAPTER}/dev_{stack.addresses['hci0'].replace(':', '_')}"
    try:
        stack.bus.call("org.bluez", f"/org/bluez/{ADAPTER}", "org.bluez.Adapter1", "RemoveDevice", "o", central,
                       timeout=10)
    except Exception:  # noqa: BLE001 - no such device
        pass


@pytest.fixture(scope="module")
def vault(stack, env):
    forget_central(stack)
    privacy_on(stack)
    p = Peripheral("secure", ADAPTER, stack.addresses[ADAPTER], env, LOG_DIR, readvertise=READVERTISE_S,
                   passkey=PASSKEY, name=NAME)
    p.start(wait_ready=False)
    p.wait_for("agent_ready", 60)
    yield p
    p.kill()


def scan_for_rpa(vault, gattbridge) -> str:
    """The address `scan` sees: an RPA, not the controller's public address."""
    proc = gattbridge.run(["scan", "--duration", "6", "--json"])
    assert proc.returncode == 0, proc.stderr
    seen = [d for d in json.loads(proc.stdout) if d.get("name") == NAME]
    assert seen, proc.stdout
    address = seen[-1]["address"]
    assert seen[-1]["address_type"] == "random", seen
    assert is_rpa(address) and address != vault.address, seen
    return address


@pytest.fixture(scope="module")
def rpa(vault, gattbridge):
    return scan_for_rpa(vault, gattbridge)


CONFIG = """\
mqtt:
  host: 127.0.0.1
  port: {port}
  client_id: gattbridge-realbluez-privacy
  base_topic: {base}
bluetooth:
  adapter: hci0
homeassistant:
  enabled: false
devices:
  - name: vault
    address: "{address}"
{pairing}
    channels:
      - name: value
        characteristic: "{service}/{char}"
        codec: hex
{channel}"""


def write_config(name: str, broker, address: str, pairing: str, mode: str) -> str:
    config = WORKDIR / name
    read = "        mode: read\n        interval: 300\n"
    notify = "        mode: notify\n"
    channel = notify if mode == "notify" else read
    config.write_text(CONFIG.format(port=broker.port, base=BASE, address=address, pairing=pairing, channel=channel,
                                    service=secure.SERVICE, char=secure.CHARACTERISTIC))
    if mode == "both":   # also a notify channel
        config.write_text(config.read_text() + f"""\
      - name: counter
        characteristic: "{secure.SERVICE}/{secure.CHARACTERISTIC}"
        codec: uint8
        mode: notify
""")
    return str(config)


def hint(m) -> bool:
    e = m.json()
    return e.get("type") == "error" and "set pairing" in e.get("message", "")


def test_pair_rpa_prints_the_identity_address(stack, vault, rpa, gattbridge):
    keyfile = WORKDIR / "vault.passkey"
    keyfile.write_text(f"{PASSKEY}\n")
    os.chmod(keyfile, 0o600)
    t0 = time.monotonic()
    proc = gattbridge.run(["pair", rpa, "--passkey-file", str(keyfile), "--timeout", "30"], timeout=90)
    record("pair_rpa", time.monotonic() - t0)
    assert proc.returncode == 0, (proc.returncode, proc.stderr)
    assert f"paired {rpa}" in proc.stdout, proc.stdout
    assert f"identity address: {vault.address} (public)" in proc.stdout, proc.stdout


def test_run_reaches_the_identity_address_across_a_bluetoothd_restart(stack, vault, rpa, broker, mqtt, gattbridge):
    config = write_config("privacy-run.yaml", broker, vault.address,
                          "    pairing: passkey\n    passkey_file: vault.passkey", "both")
    asked = sum(1 for e in vault.history if e.get("event") == "passkey_request")
    mark = mqtt.mark()
    t0 = time.monotonic()
    bridge = gattbridge.start(["run", "--config", config, "--log-level", "debug"], "run-privacy")
    try:
        mqtt.wait_for(f"{BASE}/vault/availability", "online", 90, since=mark)
        record("privacy_identity_online", time.monotonic() - t0)
        mqtt.wait_for(f"{BASE}/vault/value", "2a", 30, since=mark)
        mqtt.wait_count(f"{BASE}/vault/counter", 3, 30, since=mark)
        # Until bluetoothd restarts, the bonded device is the object named after the RPA it bonded with.
        assert stack.device("hci0", rpa)["Address"].upper() == vault.address
        assert bridge.stop(10) == 0
    finally:
        bridge.kill()

    # bluetoothd restarts (the bridge is stopped meanwhile: a bluetoothd restart under a running bridge is covered
    # by test_real_pairing.py, and one more with an encrypted link coming back up right after the restart gives
    # this guest kernel's hci_chan_del oops more chances): the bond is loaded from storage under the identity
    # address, and the peripheral still advertises with RPAs.
    ready = vault.mark()
    stack.bluetoothd.stop()
    wait_until(lambda: not stack.bus.name_has_owner("org.bluez"), 10, "org.bluez still owned")
    stack.start_bluetoothd()
    privacy_on(stack)
    vault.wait_for("agent_ready", 60, since=ready)
    back = mqtt.mark()
    t1 = time.monotonic()
    bridge = gattbridge.start(["run", "--config", config, "--log-level", "debug"], "run-privacy-restarted")
    try:
        mqtt.wait_for(f"{BASE}/vault/availability", "online", 90, since=back)
        mqtt.wait_count(f"{BASE}/vault/counter", 3, 30, since=back)
        record("privacy_after_bluetoothd_restart_to_online", time.monotonic() - t1)
        assert stack.device("hci0", vault.address)["Paired"] is True
        assert stack.device("hci0", rpa) is None
        assert sum(1 for e in vault.history if e.get("event") == "passkey_request") == asked, \
            "asked again: the bond was not kept"
        assert bridge.stop(10) == 0
    finally:
        bridge.kill()


@pytest.fixture(scope="module")
def unbonded_rpa(stack, vault, gattbridge):
    """After `unpair` the bond is gone and the central sees RPAs again; privacy was switched
    on again after the bluetoothd restart, so it is a new one. The peripheral forgets its side of the bond too.

    bluetoothd 5.66 sometimes dies in this guest while a bonded link goes down (a segfault after the peripheral
    side's `read_complete_cb() Read Complete: err -110`, or the kernel's oops in hci_chan_del): that is BlueZ's
    failure, not the bridge's, and is logged to bluetoothd-deaths.log; it is started again so these scenarios
    still run."""
    if not stack.bluetoothd.running:
        with open(LOG_DIR / "bluetoothd-deaths.log", "a") as f:
            f.write(f"{time.monotonic():.3f} bluetoothd exited {stack.bluetoothd.popen.returncode} before the hint "
                    "scenarios; restarted\n")
        ready = vault.mark()
        stack.start_bluetoothd()
        privacy_on(stack)
        vault.wait_for("agent_ready", 60, since=ready)
    proc = gattbridge.run(["unpair", vault.address])
    assert proc.returncode == 0, proc.stderr
    forget_central(stack)
    return scan_for_rpa(vault, gattbridge)


def test_unpaired_protected_read_says_to_set_pairing(stack, vault, unbonded_rpa, broker, mqtt, gattbridge):
    config = write_config("privacy-hint.yaml", broker, unbonded_rpa, "    pairing: none", "read")
    mark = mqtt.mark()
    t0 = time.monotonic()
    bridge = gattbridge.start(["run", "--config", config, "--log-level", "debug"], "run-hint")
    try:
        event = mqtt.wait_for(f"{BASE}/bridge/event", hint, 60, since=mark).json()
        record("hint_read", time.monotonic() - t0)
        assert "vault" in event["message"], event
        bridge.wait_for_line("set pairing", 10, stream="stderr")
        assert bridge.stop(10) == 0
    finally:
        bridge.kill()
    assert not (stack.device("hci0", unbonded_rpa) or {}).get("Paired"), "pairing: none must not pair"


def test_read_of_an_unpaired_protected_characteristic_says_to_pair(vault, unbonded_rpa, gattbridge):
    proc = gattbridge.run(["read", unbonded_rpa, f"{secure.SERVICE}/{secure.CHARACTERISTIC}", "--timeout", "30"],
                          timeout=120)
    assert proc.returncode != 0, proc.stdout
    assert f"gattbridge pair {unbonded_rpa}" in proc.stderr, proc.stderr


def test_unpaired_protected_subscription_says_to_set_pairing(stack, vault, unbonded_rpa, broker, mqtt, gattbridge):
    """BlueZ 5.66 never answers the first AcquireNotify (the CCC write is refused, bluetoothd's own attempt to pair
    fails and the link drops) and keeps the characteristic acquired: every later subscription gets NotPermitted
    "Notify acquired", which is what the hint is given on. Last in the module: that leftover is only cleared by
    restarting bluetoothd (and removing the device with it still there crashes 5.66), so bluetoothd restarts here."""
    config = write_config("privacy-hint-notify.yaml", broker, unbonded_rpa, "    pairing: none", "notify")
    mark = mqtt.mark()
    t0 = time.monotonic()
    bridge = gattbridge.start(["run", "--config", config, "--log-level", "debug"], "run-hint-notify")
    try:
        event = mqtt.wait_for(f"{BASE}/bridge/event", hint, 90, since=mark).json()
        record("hint_notify", time.monotonic() - t0)
        assert "vault" in event["message"] and "acquired" in event["message"], event
        bridge.wait_for_line("set pairing", 10, stream="stderr")
        assert bridge.stop(10) == 0
    finally:
        bridge.kill()
        stack.bluetoothd.stop()
        wait_until(lambda: not stack.bus.name_has_owner("org.bluez"), 10, "org.bluez still owned")
        stack.start_bluetoothd()
