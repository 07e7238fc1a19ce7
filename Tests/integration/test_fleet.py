"""Several bridges on one broker (docs/fleet.md, issue 16): each `gattbridge run` has its own central adapter on one
BlueZoo, so all of them hear the same peripherals; the bench's per-adapter RSSI control (bluezoo_patched.py) says
how well. Every device must end with exactly one owner, values must not be published twice, a SIGKILLed owner's
devices come back through another bridge within 30 s, a moved peripheral is handed over once, without flapping
under ±5 dB of noise, and a broker restart in the middle of a handover still ends with one owner. The bridge API
answers a shared request once, applies a device added on the shared topic on every bridge, and answers a bridge's own
requests from that bridge alone.

Which bridge believes it owns what is read from each bridge's log ("owning device X" / "giving up device X"), the
only place that says it; the retained `B/D/owner` record says what the fleet agreed on.
"""

from __future__ import annotations

import json
import random
import signal
import time

from bench.bench import CENTRAL_ADDRESS, MqttClient
from bench.peripherals import heart_rate

from bridge_helpers import BASE, Bridge, assert_consecutive, channel, device, heart_rate_index, to_yaml

STRAP = "C0:FF:EE:00:06:01"
SERIAL = "C0:FF:EE:00:06:02"
CENTRALS = [CENTRAL_ADDRESS, "00:00:00:00:0B:02", "00:00:00:00:0B:03"]
HANDOVER_AFTER = 4          # seconds; the default 30 s only makes the test slower (docs/configuration.md: test-only lowering)


def strap_device() -> dict:
    return device("strap", STRAP, [channel("heart_rate", "180d/2a37", "heart_rate_measurement")])


def serial_device() -> dict:
    return device("serial", SERIAL, [channel("serial", "ffe0/ffe1", "text", writable=True,
                                             write_with_response=False, flush_after=0.5)])


class Fleet:
    """Bridges `a`, `b`, … each on its own central adapter, sharing a broker and base topic."""

    bridge_settings: dict = {}      # more keys of each bridge's `bridge:` section
    max_connections: dict = {}      # bridge id → its adapter's max_connections (default 5)
    sections: dict = {}             # more top-level sections of every bridge's config (e.g. `adverts:`)

    def __init__(self, bench, run_gattbridge, mosquitto, tmp_path, devices, count: int):
        self.bench, self.run, self.mosquitto, self.tmp_path, self.devices = bench, run_gattbridge, mosquitto, tmp_path, devices
        self.ids = [chr(ord("a") + i) for i in range(count)]
        self.adapters = {"a": "hci0"}
        for i, id in enumerate(self.ids[1:], start=1):
            self.adapters[id] = bench.bluez.add_adapter(CENTRALS[i])
        self.address = {id: CENTRALS[i] for i, id in enumerate(self.ids)}
        self.bridges: dict[str, Bridge] = {}

    def start(self, id: str) -> Bridge:
        doc = {
            "mqtt": {"host": "127.0.0.1", "port": self.mosquitto.port, "client_id": f"gattbridge-fleet-{id}",
                     "base_topic": BASE, "keepalive": 10},
            "bluetooth": ({"adapters": [{"name": self.adapters[id], "max_connections": self.max_connections[id]}]}
                          if id in self.max_connections else {"adapter": self.adapters[id]}),
            "homeassistant": {"enabled": False},
            "bridge": {"id": id, "handover_after": HANDOVER_AFTER, **self.bridge_settings},
            "state_dir": str(self.tmp_path / f"state-{id}"),
            "devices": self.devices,
            **self.sections,
        }
        path = self.tmp_path / f"bridge-{id}.yaml"
        path.write_text(to_yaml(doc) + "\n")
        process = self.run(["run", "--config", path, "--log-level", "debug"], name=f"gattbridge-{id}")
        self.bridges[id] = Bridge(process, path, BASE)
        return self.bridges[id]

    def start_all(self) -> None:
        for id in self.ids:
            self.start(id)

    def rssi(self, id: str, peer: str, value: int) -> None:
        self.bench.bluez.set_rssi(self.address[id], peer, value)

    def owners(self, device_name: str) -> list[str]:
        """The bridges whose log says they own the device now (last word wins), among those running."""
        owning = []
        for id, bridge in self.bridges.items():
            if not bridge.process.running:
                continue
            text = bridge.process.stderr
            took, gave = text.rfind(f"owning device {device_name}"), text.rfind(f"giving up device {device_name}")
            if took > gave:
                owning.append(id)
        return owning

    def topic(self, *levels: str) -> str:
        return "/".join((BASE, *levels))


def owner_of(mqtt, fleet: Fleet, name: str):
    msgs = [m for m in mqtt.received(fleet.topic(name, "owner")) if m.payload]
    return json.loads(msgs[-1].text)["bridge"] if msgs else None


def wait_single_owner(mqtt, fleet: Fleet, wait_until, name: str, timeout: float = 30.0, expected: str = None) -> str:
    def settled():
        owners = fleet.owners(name)
        record = owner_of(mqtt, fleet, name)
        if len(owners) == 1 and record == owners[0] and (expected is None or record == expected):
            return record
        return None
    return wait_until(settled, timeout, lambda: f"{name}: no single owner (logs say {fleet.owners(name)}, "
                                                f"record {owner_of(mqtt, fleet, name)})")


def strap_owned_by_a(bench, run_gattbridge, peripheral, mosquitto, mqtt, wait_until, tmp_path, a_rssi: int,
                     b_rssi: int, rate: int = 2) -> Fleet:
    """Two bridges and the strap, which a hears better and so owns; returns once a owns it."""
    peripheral("heart_rate", STRAP, rate=rate)
    fleet = Fleet(bench, run_gattbridge, mosquitto, tmp_path, [strap_device()], 2)
    fleet.rssi("a", STRAP, a_rssi)
    fleet.rssi("b", STRAP, b_rssi)
    fleet.start_all()
    assert wait_single_owner(mqtt, fleet, wait_until, "strap", expected="a") == "a"
    return fleet


def test_two_bridges_share_devices_then_fail_over(bench, run_gattbridge, peripheral, mosquitto, mqtt, wait_until,
                                                 tmp_path):
    peripheral("heart_rate", STRAP, rate=5)
    serial = peripheral("hm10", SERIAL)
    fleet = Fleet(bench, run_gattbridge, mosquitto, tmp_path, [strap_device(), serial_device()], 2)
    # a hears the strap best, b the serial module: each gets one.
    fleet.rssi("a", STRAP, -50)
    fleet.rssi("b", STRAP, -75)
    fleet.rssi("a", SERIAL, -75)
    fleet.rssi("b", SERIAL, -50)
    fleet.start_all()

    for id in fleet.ids:
        mqtt.wait_for(fleet.topic("bridge", id, "state"), "online", 15)
    assert wait_single_owner(mqtt, fleet, wait_until, "strap", expected="a") == "a"
    assert wait_single_owner(mqtt, fleet, wait_until, "serial", expected="b") == "b"
    mqtt.wait_for(fleet.topic("strap", "availability"), "online", 20)
    mqtt.wait_for(fleet.topic("serial", "availability"), "online", 20)
    assert not mqtt.received(fleet.topic("bridge", "state")), "a fleet member must not use B/bridge/state"

    # Values once: consecutive heart-rate notifications, none published twice.
    mark = mqtt.mark()
    wait_until(lambda: len(mqtt.received(fleet.topic("strap", "heart_rate"), mark)) >= 10, 15, "no heart rate")
    indices = [heart_rate_index(m.text) for m in mqtt.received(fleet.topic("strap", "heart_rate"), mark)]
    assert_consecutive(indices, len(heart_rate.SEQUENCE))

    # A command is executed once, by the owner.
    mark = mqtt.mark()
    serial_mark = serial.mark()
    mqtt.publish(fleet.topic("serial", "serial", "set"), "hello fleet")
    serial.wait_for({"event": "line", "text": "hello fleet"}, 10)
    mqtt.wait_for(fleet.topic("serial", "serial"), "hello fleet", 10, since=mark)
    # A second command: the owner writes in arrival order, so a repeat of the first would come before it; the other
    # bridge never connected the module, so it could not have written at all.
    mqtt.publish(fleet.topic("serial", "serial", "set"), "marker")
    serial.wait_for({"event": "line", "text": "marker"}, 10)
    assert len(serial.events_matching({"event": "line", "text": "hello fleet"}, since=serial_mark)) == 1
    events = [json.loads(m.text) for m in mqtt.received(fleet.topic("bridge", "event"))]
    assert [e for e in events if e.get("device") == "serial" and e.get("type") == "connected"] == \
        [{"type": "connected", "device": "serial"}], events
    assert not mqtt.received(fleet.bridges["a"].log, mark)

    # SIGKILL b: only its will speaks. a hears the serial module too (weaker) and takes it within 30 s.
    mark = mqtt.mark()
    fleet.bridges["b"].process.signal(signal.SIGKILL)
    killed = time.monotonic()
    mqtt.wait_for(fleet.topic("bridge", "b", "state"), "offline", 10, since=mark)
    mqtt.wait_for(fleet.topic("serial", "availability"), "offline", 10, since=mark)
    mqtt.wait_for(fleet.topic("serial", "availability"), "online", 30, since=mark)
    assert time.monotonic() - killed < 30
    assert wait_single_owner(mqtt, fleet, wait_until, "serial", expected="a") == "a"
    mqtt.publish(fleet.topic("serial", "serial", "set"), "through a")
    serial.wait_for({"event": "line", "text": "through a"}, 15)
    assert fleet.owners("strap") == ["a"]


def test_three_bridges_each_device_owned_once_and_the_killed_owners_devices_move(
        bench, run_gattbridge, peripheral, mosquitto, mqtt, wait_until, tmp_path):
    peripheral("heart_rate", STRAP, rate=2)
    serial = peripheral("hm10", SERIAL)
    fleet = Fleet(bench, run_gattbridge, mosquitto, tmp_path, [strap_device(), serial_device()], 3)
    for id, strap_rssi, serial_rssi in (("a", -80, -60), ("b", -55, -85), ("c", -70, -70)):
        fleet.rssi(id, STRAP, strap_rssi)
        fleet.rssi(id, SERIAL, serial_rssi)
    fleet.start_all()
    assert wait_single_owner(mqtt, fleet, wait_until, "strap", expected="b") == "b"
    assert wait_single_owner(mqtt, fleet, wait_until, "serial", expected="a") == "a"
    mqtt.wait_for(fleet.topic("strap", "availability"), "online", 20)

    mark = mqtt.mark()
    fleet.bridges["b"].process.signal(signal.SIGKILL)
    mqtt.wait_for(fleet.topic("strap", "availability"), "online", 30, since=mark)
    # c hears the strap at -70, a at -80: c claims first.
    assert wait_single_owner(mqtt, fleet, wait_until, "strap", expected="c") == "c"
    assert fleet.owners("serial") == ["a"]
    mqtt.publish(fleet.topic("serial", "serial", "set"), "still a")
    serial.wait_for({"event": "line", "text": "still a"}, 15)


def test_a_moved_peripheral_is_handed_over_once_without_flapping(bench, run_gattbridge, peripheral, mosquitto, mqtt,
                                                                wait_until, tmp_path):
    fleet = strap_owned_by_a(bench, run_gattbridge, peripheral, mosquitto, mqtt, wait_until, tmp_path, -60, -80, rate=5)
    mqtt.wait_for(fleet.topic("strap", "availability"), "online", 20)

    # ±5 dB of noise around a:-60 / b:-62 (no handover: far under 10 dB), then around a:-75 / b:-55 (one).
    rng = random.Random(16)
    mark = mqtt.mark()

    def noisy(a_level: int, b_level: int, seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            fleet.rssi("a", STRAP, a_level + rng.randint(-5, 5))
            fleet.rssi("b", STRAP, b_level + rng.randint(-5, 5))
            time.sleep(0.5)  # noqa: the pace of the noise (adverts), not a synchronisation

    noisy(-60, -62, HANDOVER_AFTER + 4)
    assert fleet.owners("strap") == ["a"]
    # The move: b now hears it ≥ 10 dB better than a reports, even with noise (worst case -60 vs -70).
    noisy(-75, -55, HANDOVER_AFTER * 4 + 10)
    assert wait_single_owner(mqtt, fleet, wait_until, "strap", expected="b") == "b"
    mqtt.wait_for(fleet.topic("strap", "availability"), "online", 20, since=mark)
    noisy(-75, -55, HANDOVER_AFTER * 2)
    owners = [json.loads(m.text)["bridge"] for m in mqtt.received(fleet.topic("strap", "owner"), mark) if m.payload]
    changes = [b for i, b in enumerate(owners) if i == 0 or owners[i - 1] != b]
    assert changes in (["b"], ["a", "b"]), owners          # a's refreshes, then b: exactly one handover
    assert fleet.owners("strap") == ["b"]
    gave_up = fleet.bridges["a"].process.stderr.count("giving up device strap")
    assert gave_up == 1


def test_a_broker_restart_during_a_handover_ends_with_one_owner(bench, run_gattbridge, peripheral, mosquitto, mqtt,
                                                               wait_until, tmp_path):
    fleet = strap_owned_by_a(bench, run_gattbridge, peripheral, mosquitto, mqtt, wait_until, tmp_path, -60, -80)

    mark = mqtt.mark()
    fleet.rssi("b", STRAP, -40)
    mqtt.wait_for(fleet.topic("strap", "owner", "request"), None, HANDOVER_AFTER + 15, since=mark)
    mosquitto.restart()
    # After the restart the fleet settles on one owner, whichever: b if the release survived, else the claim
    # rule (b hears it stronger and claims first).
    owner = wait_single_owner(mqtt, fleet, wait_until, "strap", timeout=45)
    # What the broker keeps, read afresh (the test client's own copies include what it had before the restart).
    wait_until(lambda: retained(mosquitto, fleet.topic("strap", "availability")) == "online", 30,
               "the device's retained availability is not online")
    assert fleet.owners("strap") == [owner]
    assert owner_of(mqtt, fleet, "strap") == owner


def retained(mosquitto, topic: str):
    """The retained payload the broker holds on `topic` now (None: none), read by a new client."""
    client = MqttClient("127.0.0.1", mosquitto.port, topics=[topic])
    try:
        return client.wait_for(topic, None, 2).text
    except TimeoutError:
        return None
    finally:
        client.close()


def test_an_owner_back_after_its_will_fired_leaves_the_device_to_the_new_owner(
        bench, run_gattbridge, peripheral, mosquitto, mqtt, wait_until, tmp_path):
    """docs/fleet.md, the race "an owner that returns after its will fired": a is frozen (SIGSTOP) past 1.5 × keepalive,
    so the broker fires its will while a still has the device connected; b takes the device over. When a runs
    again it reconnects, listens, finds b's record and gives the device up silently: it neither says its stale
    `online` again nor puts `offline` over b's `online`."""
    fleet = strap_owned_by_a(bench, run_gattbridge, peripheral, mosquitto, mqtt, wait_until, tmp_path, -50, -70)
    availability = fleet.topic("strap", "availability")
    mqtt.wait_for(availability, "online", 20)
    a, b = fleet.bridges["a"].process, fleet.bridges["b"].process

    mark = mqtt.mark()
    a.signal(signal.SIGSTOP)
    try:
        mqtt.wait_for(fleet.topic("bridge", "a", "state"), "offline", 30, since=mark)   # keepalive 10 s
        wait_until(lambda: owner_of(mqtt, fleet, "strap") == "b" and "owning device strap" in b.stderr, 30,
                   "b did not take the device over")
        mqtt.wait_for(availability, "online", 30, since=mark)
    finally:
        a.signal(signal.SIGCONT)
    back = len(a.stderr_lines)
    mqtt.wait_for(fleet.topic("bridge", "a", "state"), "online", 30, since=mark)
    a.wait_for_line("giving up device strap", 30, stream="stderr", since=back)
    # a's session has torn down (what it would have said as `offline` is said by now).
    a.wait_for_line(lambda line: "device=strap" in line and "availability offline" in line, 30,
                    stream="stderr", since=back)
    assert wait_single_owner(mqtt, fleet, wait_until, "strap", expected="b") == "b"
    wait_until(lambda: retained(mosquitto, availability) == "online", 15,
               "the returning owner overwrote the new owner's availability")


def fleet_request(mqtt, fleet: Fleet, verb: str, body: dict = None, bridge: str = None) -> str:
    """Publishes a request (shared, or to `bridge`'s own topic) with a fresh transaction; returns the transaction."""
    transaction = f"t-{time.monotonic_ns()}"
    levels = ("bridge", bridge, "request", verb) if bridge else ("bridge", "request", verb)
    mqtt.publish(fleet.topic(*levels), json.dumps({**(body or {}), "transaction": transaction}))
    return transaction


def answers(mqtt, fleet: Fleet, verb: str, transaction: str, bridge: str = None, since: int = 0) -> list[dict]:
    levels = ("bridge", bridge, "response", verb) if bridge else ("bridge", "response", verb)
    return [m.json() for m in mqtt.received(fleet.topic(*levels), since) if m.json().get("transaction") == transaction]


def the_one_answer(mqtt, fleet: Fleet, wait_until, verb: str, transaction: str, since: int) -> dict:
    """Waits for the answer to a shared request, then for every bridge's answer to a later request of its own: each
    bridge serves its requests in order, so a second answer to the shared one would have come before those."""
    wait_until(lambda: answers(mqtt, fleet, verb, transaction, since=since), 20, f"no answer to the shared {verb}")
    markers = {id: fleet_request(mqtt, fleet, "health", bridge=id) for id in fleet.ids}
    for id, marker in markers.items():
        wait_until(lambda: answers(mqtt, fleet, "health", marker, bridge=id, since=since), 10, f"{id}: no health")
        assert answers(mqtt, fleet, "health", marker, bridge=id, since=since)[0]["data"]["bridge"] == id
    assert not mqtt.received(fleet.topic("bridge", "response", "health"), since), "own requests answered as shared"
    found = answers(mqtt, fleet, verb, transaction, since=since)
    assert len(found) == 1, found
    return found[0]


def test_the_bridge_api_answers_once_per_fleet_and_adds_devices_on_every_bridge(
        bench, run_gattbridge, peripheral, mosquitto, mqtt, wait_until, tmp_path):
    peripheral("heart_rate", STRAP, rate=2)
    fleet = Fleet(bench, run_gattbridge, mosquitto, tmp_path, [], 2)
    # b hears the strap best: the owner is not the coordinator (a, the lowest id).
    fleet.rssi("a", STRAP, -75)
    fleet.rssi("b", STRAP, -50)
    fleet.start_all()
    for id in fleet.ids:
        mqtt.wait_for(fleet.topic("bridge", id, "info"), lambda m: m.json().get("bridge") == id, 15)
    # The shared info comes from the coordinator once it has heard the fleet's states.
    mqtt.wait_for(fleet.topic("bridge", "info"), lambda m: m.json().get("bridge") == "a", 15)

    mark = mqtt.mark()
    listing = the_one_answer(mqtt, fleet, wait_until, "devices", fleet_request(mqtt, fleet, "devices"), mark)
    assert listing["status"] == "ok" and listing["data"] == [], listing

    mark = mqtt.mark()
    added = the_one_answer(mqtt, fleet, wait_until, "device/add",
                           fleet_request(mqtt, fleet, "device/add", strap_device()), mark)
    assert added["status"] == "ok", added
    for id in fleet.ids:
        assert (tmp_path / f"state-{id}" / "devices.d" / "strap.yaml").exists(), f"{id} did not save the device"
    assert wait_single_owner(mqtt, fleet, wait_until, "strap", expected="b") == "b"
    mqtt.wait_for(fleet.topic("strap", "availability"), "online", 20, since=mark)

    def online_through_b(m) -> bool:
        devices = m.json()
        return [(d["name"], d["owner"], d["state"]) for d in devices] == [("strap", "b", "online")]
    # Every bridge's own view, and the shared one the coordinator writes, say the same.
    for id in fleet.ids:
        mqtt.wait_for(fleet.topic("bridge", id, "devices"), online_through_b, 15, since=mark)
    mqtt.wait_for(fleet.topic("bridge", "devices"), online_through_b, 15, since=mark)
    # The connected event may follow the availability: waited for, then counted.
    connected = {"type": "connected", "device": "strap"}
    mqtt.wait_for(fleet.topic("bridge", "event"), lambda m: m.json() == connected, 10, since=mark)
    events = [json.loads(m.text) for m in mqtt.received(fleet.topic("bridge", "event"), mark)]
    assert [e for e in events if e.get("type") == "connected"] == [connected], events


def test_forged_fleet_records_are_claims_that_heal_within_seconds(bench, run_gattbridge, peripheral, mosquitto, mqtt,
                                                                 wait_until, tmp_path):
    """Issue 27: any client of the broker can write the fleet's topics. A request or record naming a bridge that is
    not live moves nothing, and a forged `offline` on a live bridge's state is said back at once: within 30 s of
    each forgery the device is owned by a, online, and the retained records agree."""
    fleet = strap_owned_by_a(bench, run_gattbridge, peripheral, mosquitto, mqtt, wait_until, tmp_path, -50, -75)
    availability, owner = fleet.topic("strap", "availability"), fleet.topic("strap", "owner")
    mqtt.wait_for(availability, "online", 20)

    def healed() -> bool:
        return (fleet.owners("strap") == ["a"] and retained(mosquitto, owner) is not None
                and json.loads(retained(mosquitto, owner))["bridge"] == "a"
                and retained(mosquitto, availability) == "online"
                and retained(mosquitto, fleet.topic("bridge", "a", "state")) == "online")

    forgeries = [
        # A handover request from a bridge that does not exist, with the best signal there is.
        (fleet.topic("strap", "owner", "request"), json.dumps({"bridge": "zz", "rssi": 20}), False),
        # A retained record naming a lower id than the owner's, of no bridge at all.
        (owner, json.dumps({"bridge": "0", "rssi": 20, "since": 1}), True),
        # The owner's own state, forged offline (as its will would say).
        (fleet.topic("bridge", "a", "state"), "offline", True),
    ]
    for topic, payload, retain in forgeries:
        mark = mqtt.mark()
        forged = time.monotonic()
        mqtt.publish(topic, payload, retain=retain)
        wait_until(healed, 30, lambda: f"not healed after {payload} on {topic}: owners {fleet.owners('strap')}, "
                                       f"record {retained(mosquitto, owner)}, availability "
                                       f"{retained(mosquitto, availability)}")
        assert time.monotonic() - forged < 30
        # Nobody ever recorded a bridge that does not exist as the owner.
        names = [json.loads(m.text)["bridge"] for m in mqtt.received(owner, mark) if m.payload]
        assert "zz" not in names, names
    for bridge in fleet.bridges.values():
        bridge.assert_running()
