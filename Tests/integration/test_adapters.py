"""Several adapters (docs/adapters.md) on the simulated bench: failover when the central adapter is powered off or removed,
`max_connections`, and a wedged adapter healed by the recovery ladder (bench/bluezoo_patched.py patch 8's switch).

The bench's central is hci0; each test adds a second central adapter next to the peripherals' own adapters, and
lists the two centrals in `bluetooth.adapters` (the peripherals' adapters are BlueZoo adapters too).
"""

from __future__ import annotations

import json
import os
import time

from bridge_helpers import BASE, channel, device, to_yaml

STRAP = "C0:FF:EE:00:0A:01"
SECOND = "C0:FF:EE:00:0A:02"
CENTRAL2 = "00:00:00:00:0A:02"


def hr_device(name: str, address: str, **options) -> dict:
    return {**device(name, address, [channel("heart_rate", "180d/2a37", "heart_rate_measurement")]), **options}


def start(run_gattbridge, tmp_path, mosquitto, devices, adapters, env=None):
    doc = {
        "mqtt": {"host": "127.0.0.1", "port": mosquitto.port, "client_id": f"gattbridge-test-{time.monotonic_ns()}",
                 "base_topic": BASE, "keepalive": 10},
        "bluetooth": {"adapters": adapters},
        "homeassistant": {"enabled": False},
        "devices": devices,
    }
    path = tmp_path / "adapters.yaml"
    path.write_text(to_yaml(doc) + "\n")
    level = os.environ.get("GATTBRIDGE_TEST_LOG_LEVEL", "debug")
    return run_gattbridge(["run", "--config", path, "--log-level", level], env=env)


def topic(*levels: str) -> str:
    return "/".join((BASE, *levels))


def placed(mqtt, name: str, adapter: str, timeout: float = 30.0, since: int = 0):
    """Waits until B/bridge/devices says `name` is online through `adapter`."""
    def match(m):
        entry = next((d for d in m.json() if d["name"] == name), None)
        return entry is not None and entry["adapter"] == adapter and entry["state"] == "online"
    return mqtt.wait_for(topic("bridge", "devices"), match, timeout, since)


def online_through(mqtt, name: str, timeout: float = 30.0, since: int = 0) -> str:
    """Waits until B/bridge/devices says `name` is online; returns the adapter it went through (with `any`, both
    centrals listen for a missing device and the first to hear it may take it)."""
    def match(m):
        entry = next((d for d in m.json() if d["name"] == name), None)
        return entry is not None and entry["state"] == "online"
    msg = mqtt.wait_for(topic("bridge", "devices"), match, timeout, since)
    return next(d for d in msg.json() if d["name"] == name)["adapter"]


def adapter_status(mqtt, name: str, predicate, timeout: float = 30.0, since: int = 0) -> dict:
    msg = mqtt.wait_for(topic("bridge", "adapters"),
                        lambda m: any(a["name"] == name and predicate(a) for a in m.json()), timeout, since)
    return next(a for a in msg.json() if a["name"] == name)


def set_powered(bench, adapter: str, value: bool) -> None:
    bench.bus.call("org.bluez", f"/org/bluez/{adapter}", "org.freedesktop.DBus.Properties", "Set", "ssv",
                   "org.bluez.Adapter1", "Powered", ("b", value))


def test_powered_off_adapter_fails_over_to_the_other(bench, peripheral, run_gattbridge, mosquitto, mqtt, tmp_path):
    strap = peripheral("heart_rate", STRAP, rate=5)
    central2 = bench.bluez.add_adapter(CENTRAL2)
    gattbridge = start(run_gattbridge, tmp_path, mosquitto, [hr_device("strap", STRAP)], ["hci0", central2])
    first = online_through(mqtt, "strap")
    other = central2 if first == "hci0" else "hci0"
    status = adapter_status(mqtt, first, lambda a: a["connections"] == 1)
    assert set(status) == {"name", "address", "powered", "discovering", "connections", "state", "recoveries",
                           "last_error"}
    assert status["state"] == "ok" and status["powered"] is True, status
    info = mqtt.wait_for(topic("bridge", "info"), timeout=10).json()
    assert info["adapters"] == ["hci0", central2], info       # only the listed adapters, not the peripherals' own

    mark = mqtt.mark()
    set_powered(bench, first, False)
    mqtt.wait_for(topic("strap", "availability"), "offline", 15, mark)
    placed(mqtt, "strap", other, since=mark)
    mqtt.wait_for(topic("strap", "heart_rate"), timeout=10, since=mqtt.mark())      # values flow again
    adapter_status(mqtt, first, lambda a: a["powered"] is False and a["connections"] == 0, since=mark)
    assert gattbridge.running, gattbridge.stderr[-3000:]
    del strap


def test_removed_adapter_fails_over_to_the_other(bench, peripheral, run_gattbridge, mosquitto, mqtt, tmp_path):
    peripheral("heart_rate", STRAP, rate=5)
    central2 = bench.bluez.add_adapter(CENTRAL2)
    gattbridge = start(run_gattbridge, tmp_path, mosquitto, [hr_device("strap", STRAP)], ["hci0", central2])
    first = online_through(mqtt, "strap")
    other = central2 if first == "hci0" else "hci0"

    mark = mqtt.mark()
    bench.bus.call("org.bluez", "/org/bluezoo", "org.bluezoo.Manager1", "RemoveAdapter", "y", int(first[3:]))
    placed(mqtt, "strap", other, since=mark)
    mqtt.wait_for(topic("strap", "heart_rate"), timeout=10, since=mqtt.mark())
    mqtt.wait_for(topic("bridge", "adapters"), lambda m: [a["name"] for a in m.json()] == [other], 10, mark)
    assert gattbridge.running, gattbridge.stderr[-3000:]


def test_a_device_only_the_second_adapter_hears_goes_through_it(bench, peripheral, run_gattbridge, mosquitto,
                                                                mqtt, tmp_path):
    """A missing `any` device is first looked for through the adapter it is placed on (hci0, by name); when that
    one has not found it within its head start (10 s), every usable adapter listens, and the second, which hears
    it, takes it."""
    peripheral("heart_rate", STRAP, rate=2)
    central2 = bench.bluez.add_adapter(CENTRAL2)
    bench.bluez.set_rssi(bench.bluez.central_address, STRAP, -127)     # out of hci0's range
    bench.bluez.set_rssi(CENTRAL2, STRAP, -50)
    start(run_gattbridge, tmp_path, mosquitto, [hr_device("strap", STRAP)], ["hci0", central2])
    assert online_through(mqtt, "strap", timeout=40) == central2


def test_max_connections_sends_the_second_device_to_the_other_adapter(bench, peripheral, run_gattbridge, mosquitto,
                                                                      mqtt, tmp_path):
    peripheral("heart_rate", STRAP, rate=2)
    peripheral("heart_rate", SECOND, rate=2)
    central2 = bench.bluez.add_adapter(CENTRAL2)
    # One link per adapter: whichever adapter hears a device first takes it, the other device must use the other.
    start(run_gattbridge, tmp_path, mosquitto, [hr_device("first", STRAP), hr_device("second", SECOND)],
          [{"name": "hci0", "max_connections": 1}, {"name": central2, "max_connections": 1}])

    def both_online(m):
        devices = {d["name"]: d for d in m.json()}
        return all(d["state"] == "online" for d in devices.values()) and len(devices) == 2
    listing = {d["name"]: d["adapter"] for d in mqtt.wait_for(topic("bridge", "devices"), both_online, 30).json()}
    assert sorted(listing.values()) == sorted(["hci0", central2]), listing
    adapter_status(mqtt, "hci0", lambda a: a["connections"] == 1)
    adapter_status(mqtt, central2, lambda a: a["connections"] == 1)


def test_silently_wedged_adapter_is_power_cycled_and_the_device_returns(bench, peripheral, run_gattbridge, mosquitto,
                                                                        mqtt, tmp_path):
    """The other face of a wedge: bluetoothd never answers StartDiscovery or Connect (stuck on the controller).
    Discovery starts that time out count against the adapter (connect timeouts do not: a device that is away makes
    them too), and the ladder heals it."""
    strap = peripheral("heart_rate", STRAP, rate=5)
    start(run_gattbridge, tmp_path, mosquitto, [hr_device("strap", STRAP, adapter="hci0")], ["hci0"],
          env={"GATTBRIDGE_WEDGE_WINDOW": "3"})
    placed(mqtt, "strap", "hci0")

    mark = mqtt.mark()
    bench.bus.call("org.bluez", "/org/bluezoo/bench", "org.bluezoo.Bench1", "WedgeSilently", "y", 0)
    strap.restart()          # link loss: nothing through hci0 is answered any more
    mqtt.wait_for(topic("strap", "availability"), "offline", 15, mark)

    def recovery(step, result):
        return lambda m: m.json() == {"type": "adapter_recovery", "adapter": "hci0", "step": step, "result": result}
    mqtt.wait_for(topic("bridge", "event"), recovery("restart_discovery", "failed"), 60, mark)
    cycled = mqtt.wait_for(topic("bridge", "event"), recovery("power_cycle", "ok"), 30, mark)
    after = mqtt.received().index(cycled)
    mqtt.wait_for(topic("strap", "availability"), "online", 40, after)
    status = adapter_status(mqtt, "hci0", lambda a: a["state"] == "ok" and a["connections"] == 1, 10, after)
    assert status["recoveries"] == 1 and status["last_error"], status


def test_wedged_adapter_is_power_cycled_and_the_device_returns(bench, peripheral, run_gattbridge, mosquitto, mqtt,
                                                               tmp_path):
    strap = peripheral("heart_rate", STRAP, rate=5)
    # A pinned device on the only listed adapter: it has nowhere else to go, so only healing brings it back.
    gattbridge = start(run_gattbridge, tmp_path, mosquitto, [hr_device("strap", STRAP, adapter="hci0")], ["hci0"],
                       env={"GATTBRIDGE_WEDGE_WINDOW": "3"})
    placed(mqtt, "strap", "hci0")

    mark = mqtt.mark()
    bench.bus.call("org.bluez", "/org/bluezoo/bench", "org.bluezoo.Bench1", "Wedge", "y", 0)
    strap.restart()          # link loss: every reconnect now fails with InProgress
    mqtt.wait_for(topic("strap", "availability"), "offline", 15, mark)

    def recovery(step, result):
        return lambda m: m.json() == {"type": "adapter_recovery", "adapter": "hci0", "step": step, "result": result}
    mqtt.wait_for(topic("bridge", "event"), recovery("restart_discovery", "failed"), 40, mark)
    adapter_status(mqtt, "hci0", lambda a: a["state"] == "recovering" and a["recoveries"] == 1, 5, mark)
    cycled = mqtt.wait_for(topic("bridge", "event"), recovery("power_cycle", "ok"), 30, mark)
    after = mqtt.received().index(cycled)
    mqtt.wait_for(topic("strap", "availability"), "online", 30, after)
    status = adapter_status(mqtt, "hci0", lambda a: a["state"] == "ok" and a["connections"] == 1, 10, after)
    assert status["recoveries"] == 1 and status["last_error"], status
    assert "wedged; recovery step power_cycle" in gattbridge.stderr
    health_answer = None
    mqtt.publish(topic("bridge", "request", "health"), json.dumps({"transaction": 7}))
    health_answer = mqtt.wait_for(topic("bridge", "response", "health"), timeout=10).json()
    assert [a["name"] for a in health_answer["data"]["adapters"]] == ["hci0"], health_answer
    assert health_answer["data"]["adapters"][0]["recoveries"] == 1, health_answer
