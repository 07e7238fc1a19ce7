"""Passive broadcasts through the real bluetoothd (docs/adverts.md): BTHome thermometers (bench/peripherals/
broadcaster.py, one plain, one encrypted) advertise on their own emulated controllers (hci6, hci7) through
bluetoothd's LEAdvertisingManager1; gattbridge `run` on hci0 with `adverts: {enabled: true}` and two saved passive
devices publishes the temperature and humidity they sent, and their availability, over MQTT.

The broadcasters run with `--connectable`: the kernel sends a non-connectable advertisement from a fresh
non-resolvable private address each time it is set up (no saved address would ever match), a connectable one from
the controller's own address, as a real sensor does; the daemon never connects to a passive device. Unlike the
connectable peripherals they need no re-registration (`--readvertise`): btvirt sends an advertising report only when
advertising or scanning is switched on, but bluetoothd sets a changed advertisement up again on each of the
broadcaster's PropertiesChanged, so every new packet is reported (a sensor repeating one packet would be heard only
once). Runs first in the guest (file order), before the connected devices' scenarios, and stops its daemon and
broadcasters when done.
"""

from __future__ import annotations

import math
import time

import pytest

from bench.bench import Peripheral
from conftest import LOG_DIR, WORKDIR, record

BASE = "realadverts"
BINDKEY = "231d39c1d7cc1ab1aee224cd096db932"
SENSORS = {"balcony": "hci6", "cellar": "hci7"}     # plain, encrypted

CONFIG = """\
mqtt:
  host: 127.0.0.1
  port: {port}
  client_id: gattbridge-realbluez-adverts
  base_topic: {base}
  keepalive: 30
bluetooth:
  adapters: [hci0]
homeassistant:
  enabled: false
adverts:
  enabled: true
  auto: []
devices:
  - name: balcony
    address: "{balcony}"
    advert: bthome
  - name: cellar
    address: "{cellar}"
    advert: bthome
    bindkey_file: {bindkey_file}
"""


@pytest.fixture(scope="module")
def broadcasters(stack, env):
    """name → the broadcaster Peripheral (started together: Python starts slowly on the emulated CPU)."""
    key = WORKDIR / "bindkey"
    key.write_text(BINDKEY + "\n")
    key.chmod(0o600)
    started = {}
    try:
        for name, adapter in SENSORS.items():
            options = {"bindkey_file": str(key)} if name == "cellar" else {}
            p = Peripheral("broadcaster", adapter, stack.addresses[adapter], env, LOG_DIR, format="bthome",
                           connectable=True, **options)
            started[name] = p.start(wait_ready=False)
        for p in started.values():
            p.wait_for("ready", 60)
        yield started
    finally:
        for p in started.values():
            p.kill()


def sent(broadcaster: Peripheral, measurement: str) -> list[float]:
    return [p["measurements"][measurement] for p in broadcaster.broadcasts() if measurement in p["measurements"]]


def is_sent(text: str, broadcaster: Peripheral, measurement: str) -> bool:
    try:
        value = float(text)
    except ValueError:
        return False
    return any(math.isclose(value, v, abs_tol=1e-9) for v in sent(broadcaster, measurement))


def test_run_publishes_broadcast_values_heard_through_real_bluetoothd(broadcasters, broker, mqtt, gattbridge):
    config = WORKDIR / "adverts.yaml"
    config.write_text(CONFIG.format(port=broker.port, base=BASE, bindkey_file=WORKDIR / "bindkey",
                                    **{name: p.address for name, p in broadcasters.items()}))
    check = gattbridge.run(["config", "check", "--config", str(config)])
    assert check.returncode == 0, check.stderr
    mark = mqtt.mark()
    t0 = time.monotonic()
    proc = gattbridge.start(["run", "--config", str(config), "--log-level", "debug"], "run-adverts")
    try:
        mqtt.wait_for(f"{BASE}/bridge/state", "online", 30, since=mark)
        for name, p in broadcasters.items():
            mqtt.wait_for(f"{BASE}/{name}/availability", "online", 60, since=mark)
            for measurement in ("temperature", "humidity"):
                mqtt.wait_for(f"{BASE}/{name}/{measurement}",
                              lambda m, p=p, measurement=measurement: is_sent(m.text, p, measurement), 60, since=mark)
            record(f"adverts_{name}_first_values", time.monotonic() - t0)
        # The values follow the broadcasts: three more temperatures, each another one the sensor sent.
        for name, p in broadcasters.items():
            for _ in range(3):
                last = mqtt.received(f"{BASE}/{name}/temperature", mark)[-1]
                mqtt.wait_for(f"{BASE}/{name}/temperature",
                              lambda m, p=p, last=last: m.text != last.text and is_sent(m.text, p, "temperature"),
                              30, since=mqtt.messages.index(last) + 1)
            record(f"adverts_{name}_four_values", time.monotonic() - t0)
        # Nothing published that a sensor did not send: no mis-scaled or invented value, encrypted or not.
        for name, p in broadcasters.items():
            for measurement in ("temperature", "humidity", "battery"):
                stray = [m.text for m in mqtt.received(f"{BASE}/{name}/{measurement}", mark)
                         if not is_sent(m.text, p, measurement)]
                assert stray == [], f"{name}/{measurement}: published {stray}, never sent"
        assert proc.running, proc.stderr[-2000:]
    finally:
        proc.stop(10)
    mqtt.wait_for(f"{BASE}/bridge/state", "offline", 10, since=mark)
