"""Passive broadcasters in a fleet (docs/adverts.md, docs/fleet.md): every bridge hears every broadcast, yet a passive
device, saved or `auto`, has one owner like a connected device, chosen from the RSSI each bridge hears, and only that
owner publishes, so each broadcast is published once however many bridges heard it. A killed owner's passive device
moves to another bridge, which publishes from then on. A passive device takes no connection slot: a bridge whose
one slot is taken still owns it.

The bench is test_fleet.py's: each bridge on its own BlueZoo adapter, the RSSI each adapter hears set per
broadcaster; the broadcasters are test_adverts.py's (bench/peripherals/broadcaster.py).
"""

from __future__ import annotations

import signal
from collections import Counter

from adverts_helpers import passive, same_number, sent_values, wait_value
from test_fleet import STRAP, Fleet, owner_of, strap_device, wait_single_owner

BALCONY = "A4:C1:38:0B:72:01"
STRANGER = "A4:C1:38:0B:72:02"               # not saved: an auto device
AUTO_NAME = "bthome-" + STRANGER.replace(":", "").lower()
ADVERTS = {"adverts": {"enabled": True, "auto": ["bthome"], "timeout": 15}}


def advert_fleet(bench, run_gattbridge, mosquitto, tmp_path, devices: list[dict], count: int) -> Fleet:
    fleet = Fleet(bench, run_gattbridge, mosquitto, tmp_path, devices, count)
    fleet.sections = ADVERTS
    return fleet


def assert_published_once(mqtt, fleet: Fleet, name: str, broadcaster, since: int, reading: str = "temperature"):
    """Every value on B/name/reading since `since` is one the broadcaster sent, and each is published once: the
    bench's values do not repeat within 40 packets, so a second message with the same value is a second publisher."""
    published = [m.text for m in mqtt.received(fleet.topic(name, reading), since)]
    sent = sent_values(broadcaster, reading)
    stray = [p for p in published if not any(same_number(p, v) for v in sent)]
    assert stray == [], f"{name}/{reading}: published {stray}, never sent"
    twice = {value: n for value, n in Counter(published).items() if n > 1}
    assert twice == {}, f"{name}/{reading}: published more than once: {twice} (all: {published})"
    return published


def assert_new_owner_publishes_once(mqtt, fleet: Fleet, wait_until, owner: str, name: str, broadcaster) -> None:
    """After a change of owner: values of packets sent from now on come, each once, through the new owner."""
    last = broadcaster.broadcasts()[-1]["n"]
    first = wait_value(mqtt, fleet.bridges[owner], name, "temperature", broadcaster, since=mqtt.mark(), after=last)
    settled = mqtt.messages.index(first)
    wait_until(lambda: len(mqtt.received(fleet.topic(name, "temperature"), settled)) >= 4, 20,
               f"{owner} publishes no values of {name}")
    assert_published_once(mqtt, fleet, name, broadcaster, settled)


def test_a_passive_device_has_one_owner_publishes_once_and_moves_with_its_owner(
        bench, run_gattbridge, mosquitto, mqtt, wait_until, tmp_path):
    balcony = bench.broadcaster("bthome", BALCONY, event_hold=3)
    stranger = bench.broadcaster("bthome", STRANGER)
    fleet = advert_fleet(bench, run_gattbridge, mosquitto, tmp_path, [passive("balcony", BALCONY, "bthome")], 3)
    # b hears the balcony best, then c, then a; a hears the unsaved sensor best.
    for id, balcony_rssi, stranger_rssi in (("a", -75, -50), ("b", -50, -70), ("c", -65, -72)):
        fleet.rssi(id, BALCONY, balcony_rssi)
        fleet.rssi(id, STRANGER, stranger_rssi)
    fleet.start_all()

    assert wait_single_owner(mqtt, fleet, wait_until, "balcony", expected="b") == "b"
    mqtt.wait_for(fleet.topic("balcony", "availability"), "online", 20)
    # The auto device: every bridge tracks it, one owns it.
    assert wait_single_owner(mqtt, fleet, wait_until, AUTO_NAME, expected="a") == "a"
    mqtt.wait_for(fleet.topic(AUTO_NAME, "availability"), "online", 20)

    # Each broadcast once, though three bridges hear it.
    mark = mqtt.mark()
    for name, sensor in (("balcony", balcony), (AUTO_NAME, stranger)):
        wait_until(lambda: len(mqtt.received(fleet.topic(name, "temperature"), mark)) >= 5, 20,
                   lambda: f"{name}: few values ({mqtt.received(fleet.topic(name, 'temperature'), mark)})")
        assert_published_once(mqtt, fleet, name, sensor, mark)
    # A press, held on the air for three seconds and heard by every bridge, is one event.
    mark = mqtt.mark()
    pressed = balcony.press()
    mqtt.wait_for(fleet.topic("balcony", "button"), None, 10, since=mark)
    wait_value(mqtt, fleet.bridges["b"], "balcony", "temperature", balcony, since=mark, after=pressed["n"])
    assert [m.json() for m in mqtt.received(fleet.topic("balcony", "button"), mark)] == [{"event_type": "press"}]
    assert fleet.owners("balcony") == ["b"] and fleet.owners(AUTO_NAME) == ["a"]
    # Passive devices take no connection: no bridge ever connected one.
    events = [m.json() for m in mqtt.received(fleet.topic("bridge", "event"))]
    assert [e for e in events if e.get("device") in ("balcony", AUTO_NAME)] == [], events

    # The owner dies: its will speaks, c (the next best) takes the balcony over and publishes from then on.
    mark = mqtt.mark()
    fleet.bridges["b"].process.signal(signal.SIGKILL)
    mqtt.wait_for(fleet.topic("bridge", "b", "state"), "offline", 30, since=mark)
    assert wait_single_owner(mqtt, fleet, wait_until, "balcony", timeout=30, expected="c") == "c"
    assert_new_owner_publishes_once(mqtt, fleet, wait_until, "c", "balcony", balcony)
    assert owner_of(mqtt, fleet, "balcony") == "c"
    assert fleet.owners(AUTO_NAME) == ["a"]
    for id in ("a", "c"):
        fleet.bridges[id].assert_running()


def test_a_passive_device_takes_no_connection_slot(bench, run_gattbridge, peripheral, mosquitto, mqtt, wait_until,
                                                   tmp_path):
    """a has one connection slot, taken by the strap; it hears the balcony best too and owns it as well."""
    peripheral("heart_rate", STRAP, rate=2)
    balcony = bench.broadcaster("bthome", BALCONY)
    fleet = advert_fleet(bench, run_gattbridge, mosquitto, tmp_path,
                         [strap_device(), passive("balcony", BALCONY, "bthome")], 2)
    fleet.max_connections = {"a": 1}
    for id, address, rssi in (("a", STRAP, -50), ("a", BALCONY, -50), ("b", STRAP, -75), ("b", BALCONY, -75)):
        fleet.rssi(id, address, rssi)
    fleet.start_all()

    assert wait_single_owner(mqtt, fleet, wait_until, "strap", expected="a") == "a"
    assert wait_single_owner(mqtt, fleet, wait_until, "balcony", expected="a") == "a"
    mqtt.wait_for(fleet.topic("strap", "availability"), "online", 30)
    mark = mqtt.mark()
    mqtt.wait_count(fleet.topic("strap", "heart_rate"), 3, 15, since=mark)
    wait_until(lambda: len(mqtt.received(fleet.topic("balcony", "temperature"), mark)) >= 3, 20,
               "the balcony publishes no values")
    assert_published_once(mqtt, fleet, "balcony", balcony, mark)
    assert fleet.owners("strap") == ["a"] and fleet.owners("balcony") == ["a"]
    for bridge in fleet.bridges.values():
        bridge.assert_running()


def test_a_moved_broadcaster_is_handed_over_once(bench, run_gattbridge, mosquitto, mqtt, wait_until, tmp_path):
    """The RSSI rule of connected devices (10 dB stronger for `handover_after`), for a passive one: the owner gives
    it up without a connection to drop, the new owner publishes, each value still once."""
    balcony = bench.broadcaster("bthome", BALCONY)
    fleet = advert_fleet(bench, run_gattbridge, mosquitto, tmp_path, [passive("balcony", BALCONY, "bthome")], 2)
    fleet.rssi("a", BALCONY, -50)
    fleet.rssi("b", BALCONY, -75)
    fleet.start_all()
    assert wait_single_owner(mqtt, fleet, wait_until, "balcony", expected="a") == "a"

    mark = mqtt.mark()
    # b now hears it more than 10 dB stronger than a's record (-50) says.
    fleet.rssi("a", BALCONY, -80)
    fleet.rssi("b", BALCONY, -35)
    assert wait_single_owner(mqtt, fleet, wait_until, "balcony", timeout=40, expected="b") == "b"
    assert_new_owner_publishes_once(mqtt, fleet, wait_until, "b", "balcony", balcony)
    owners = [m.json()["bridge"] for m in mqtt.received(fleet.topic("balcony", "owner"), mark) if m.payload]
    changes = [b for i, b in enumerate(owners) if i == 0 or owners[i - 1] != b]
    assert changes in (["b"], ["a", "b"]), owners
    assert fleet.bridges["a"].process.stderr.count("giving up device balcony") == 1
    for bridge in fleet.bridges.values():
        bridge.assert_running()
