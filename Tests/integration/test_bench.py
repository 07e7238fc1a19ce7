"""Self-tests of the simulated BLE bench, through plain D-Bus calls (the bench's own central, no gattbridge).

Each BlueZoo patch (bench/bluezoo_patched.py) has a test here that fails without it.
"""

from __future__ import annotations

import pytest

from bench.central import Central
from bench.dbus_util import DBusError, unvariant_dict
from bench.peripherals import heart_rate, hm10, led

HRM = "C0:FF:EE:00:00:01"
HM10 = "C0:FF:EE:00:00:02"
LED = "C0:FF:EE:00:00:03"


def connect(central: Central, address: str) -> None:
    central.start_discovery()
    central.wait_device(address, 10)
    central.connect(address)


def test_peripherals_advertise_and_are_discovered(central, peripheral):
    peripheral("heart_rate")
    peripheral("hm10")
    peripheral("led", name="Desk LED")
    central.start_discovery()
    hrm = central.wait_device(HRM)
    assert hrm["Name"] == "Bench HRM"
    assert set(hrm["UUIDs"]) >= {"0000180d-0000-1000-8000-00805f9b34fb", "0000180f-0000-1000-8000-00805f9b34fb"}
    assert central.wait_device(HM10)["UUIDs"] == ["0000ffe0-0000-1000-8000-00805f9b34fb"]
    desk = central.wait_device(LED)
    assert desk["Name"] == "Desk LED" and desk["UUIDs"] == [led.SERVICE]
    assert central.bus.get_property("org.bluez", "/org/bluez/hci0", "org.bluez.Adapter1", "Discovering") is True


def test_connect_read_battery_and_device_information(central, peripheral):
    hrm = peripheral("heart_rate", battery=64)
    connect(central, HRM)
    assert central.device(HRM)["Connected"] is True
    assert central.read(HRM, "2a19") == bytes([64])
    assert central.read(HRM, "2a29") == b"Bench Instruments"
    assert central.read(HRM, "2a24") == b"HRM-1"
    assert hrm.wait_for({"event": "read", "char": "2a19"})["value"] == "40"
    flags = {central.char_properties(HRM, u)["UUID"][4:8]: central.char_properties(HRM, u)["Flags"]
             for u in ("2a37", "2a19", "2a29")}
    assert flags == {"2a37": ["notify"], "2a19": ["read", "notify"], "2a29": ["read"]}


def test_read_of_a_notify_only_characteristic_is_not_permitted(central, peripheral):
    peripheral("heart_rate")
    connect(central, HRM)
    with pytest.raises(DBusError) as err:
        central.read(HRM, "2a37")
    assert err.value.name == "org.bluez.Error.NotPermitted"


@pytest.mark.parametrize("server_acquire", [False, True], ids=["server-StartNotify", "server-AcquireNotify"])
def test_heart_rate_start_notify_delivers_the_known_sequence(central, peripheral, server_acquire):
    # A server without AcquireNotify is driven with StartNotify; one with it, with AcquireNotify (as bluetoothd).
    hrm = peripheral("heart_rate", rate=50, no_acquire_notify=not server_acquire)
    connect(central, HRM)
    n = central.start_notify(HRM, "2a37")
    got = n.take(10, 10)
    assert got == [heart_rate.encoded(i) for i in range(10)]
    via = "AcquireNotify" if server_acquire else "StartNotify"
    assert hrm.wait_for({"event": "subscribed", "char": "2a37"})["via"] == via
    assert central.char_properties(HRM, "2a37")["Notifying"] is True
    central.stop_notify(HRM, "2a37", n)
    hrm.wait_for({"event": "unsubscribed", "char": "2a37"})
    assert central.char_properties(HRM, "2a37")["Notifying"] is False


def test_heart_rate_sequence_covers_every_flag():
    flags = [heart_rate.measurement(i).flags for i in range(len(heart_rate.SEQUENCE))]
    assert any(f & 0x01 for f in flags) and any(not f & 0x01 for f in flags)          # uint16 and uint8
    assert {(f >> 1) & 0b11 for f in flags} == {0b00, 0b01, 0b10, 0b11}                # contact combinations
    assert any(f & 0x08 for f in flags) and any(f & 0x10 for f in flags)               # energy, RR
    assert {len(m.rr) for m in heart_rate.SEQUENCE} >= {0, 1, 3}
    assert heart_rate.encoded(5) == bytes.fromhex("16584003")
    assert heart_rate.expected_json(5) == {"bpm": 88, "contact": True, "energy_kj": None, "rr_ms": [812.5]}
    assert heart_rate.expected_json(7)["contact"] is None          # "detected" bit without "supported"
    assert heart_rate.expected_json(3)["bpm"] == 300


def test_heart_rate_acquire_notify_and_hang_up(central, peripheral):
    hrm = peripheral("heart_rate", rate=50)
    connect(central, HRM)
    sock, mtu = central.acquire_notify(HRM, "2a37")
    sock.settimeout(5)
    assert mtu > 0
    assert [sock.recv(512) for _ in range(8)] == [heart_rate.encoded(i) for i in range(8)]
    assert hrm.wait_for({"event": "subscribed", "char": "2a37"})["via"] == "AcquireNotify"
    assert central.char_properties(HRM, "2a37")["NotifyAcquired"] is True
    sock.close()  # releasing the fd is how a client unsubscribes
    hrm.wait_for({"event": "unsubscribed", "char": "2a37", "via": "AcquireNotify"})
    assert central.read(HRM, "2a19") == bytes([87])


def test_notify_count_limits_the_sequence(central, peripheral):
    hrm = peripheral("heart_rate", rate=100, count=3, no_acquire_notify=True)
    connect(central, HRM)
    n = central.start_notify(HRM, "2a37")
    assert n.take(3, 5) == [heart_rate.encoded(i) for i in range(3)]
    assert hrm.wait_for("notify_done")["count"] == 3
    with pytest.raises(TimeoutError):
        n.get(0.3)


def test_led_write_request_changes_state(central, peripheral):
    p = peripheral("led")
    assert p.wait_for("state")["led"] == "00"
    connect(central, LED)
    central.write(LED, led.CHARACTERISTIC, b"\x01")
    assert p.wait_for({"event": "write", "char": led.CHARACTERISTIC})["type"] == "request"
    p.wait_for({"event": "state", "led": "01"})
    assert central.read(LED, led.CHARACTERISTIC) == b"\x01"
    for value, wtype, error in ((b"\x02", None, "org.bluez.Error.Failed"),
                                (b"\x01\x00", None, "org.bluez.Error.InvalidValueLength"),
                                (b"\x00", "command", "org.bluez.Error.NotPermitted")):
        with pytest.raises(DBusError) as err:
            central.write(LED, led.CHARACTERISTIC, value, type=wtype)
        assert err.value.name == error
    assert central.read(LED, led.CHARACTERISTIC) == b"\x01"


def test_hm10_echoes_lines_in_20_byte_chunks(central, peripheral):
    p = peripheral("hm10", no_acquire_notify=True)
    connect(central, HM10)
    assert central.char_properties(HM10, "ffe1")["MTU"] == 23
    n = central.start_notify(HM10, "ffe1")
    line = b"the quick brown fox jumps over the lazy dog"  # 43 bytes + "\n" → 20 + 20 + 4
    data = line + b"\n"
    for i in range(0, len(data), 20):  # as a central with MTU 23 writes it: commands of MTU-3 bytes
        central.write(HM10, "ffe1", data[i:i + 20], type="command")
    assert p.wait_for("line")["text"] == line.decode()
    assert p.wait_for("write")["type"] == "command"
    expected = hm10.echo_chunks(data)
    assert [len(c) for c in expected] == [20, 20, 4]
    assert n.take(3, 5) == expected
    # A partial line is buffered until its delimiter arrives.
    central.write(HM10, "ffe1", b"ab", type="command")
    with pytest.raises(TimeoutError):
        n.get(0.3)
    central.write(HM10, "ffe1", b"c\n", type="command")
    assert n.get(5) == b"abc\n"


def test_hm10_echo_through_acquire_notify(central, peripheral):
    peripheral("hm10")
    connect(central, HM10)
    sock, mtu = central.acquire_notify(HM10, "ffe1")
    sock.settimeout(5)
    assert mtu == 23
    central.write(HM10, "ffe1", b"hello\n", type="command")
    assert sock.recv(64) == b"hello\n"
    sock.close()


def test_generic_peripheral_from_json(central, peripheral):
    desc = {
        "name": "Thermo",
        "services": [{"uuid": "181a", "characteristics": [
            {"uuid": "2a6e", "flags": ["read", "notify"], "value": "e803",
             "notify": {"values": ["e803", "e903", "ea03"], "rate": 50}},
            {"uuid": "12345678-1234-5678-1234-56789abcdef0", "flags": ["read", "write"], "value": "00"},
        ]}],
    }
    p = peripheral("generic", address="C0:FF:EE:00:01:01", config=desc)
    connect(central, "C0:FF:EE:00:01:01")
    assert central.device("C0:FF:EE:00:01:01")["Name"] == "Thermo"
    assert central.read("C0:FF:EE:00:01:01", "2a6e") == bytes.fromhex("e803")
    n = central.start_notify("C0:FF:EE:00:01:01", "2a6e")
    assert n.take(4, 5) == [bytes.fromhex(v) for v in ("e803", "e903", "ea03", "e803")]
    central.write("C0:FF:EE:00:01:01", "12345678-1234-5678-1234-56789abcdef0", b"\x2a")
    assert p.wait_for("write")["value"] == "2a"
    assert central.read("C0:FF:EE:00:01:01", "12345678-1234-5678-1234-56789abcdef0") == b"\x2a"


def test_stdin_notify_command(central, peripheral):
    p = peripheral("heart_rate", rate=0, no_acquire_notify=True)
    connect(central, HRM)
    n = central.start_notify(HRM, "2a19")
    p.notify("2a19", b"\x05")
    assert n.get(5) == b"\x05"


# --- the BlueZoo patches ------------------------------------------------------------------------------------------

def test_patch1_reconnect_after_disconnect(central, peripheral):
    hrm = peripheral("heart_rate", rate=50, no_acquire_notify=True)
    connect(central, HRM)
    n = central.start_notify(HRM, "2a37")
    n.take(2, 5)
    central.disconnect(HRM)
    central.wait_property(HRM, "Connected", False)
    assert central.device(HRM)["ServicesResolved"] is False
    assert central.gatt(HRM) == {}  # link objects unexported
    hrm.wait_for({"event": "unsubscribed", "char": "2a37", "via": "StartNotify"})
    for _ in range(2):
        central.connect(HRM)  # failed with sd-bus error 17 (EEXIST) before the patch
        assert central.read(HRM, "2a19") == bytes([87])
        n = central.start_notify(HRM, "2a37")
        assert n.take(3, 5) == [heart_rate.encoded(i) for i in range(3)]
        central.disconnect(HRM)
        central.wait_property(HRM, "Connected", False)


def test_patch1_connect_to_a_silent_peripheral_fails(central, peripheral, wait_until):
    hrm = peripheral("heart_rate")
    central.start_discovery()
    central.wait_device(HRM)
    hrm.kill()
    # BlueZoo drops the advertisement once it sees the peripheral's bus name go.
    wait_until(lambda: central.bus.get_property("org.bluez", f"/org/bluez/{hrm.adapter}",
                                                "org.bluez.LEAdvertisingManager1", "ActiveInstances") == 0, 5)
    with pytest.raises(DBusError) as err:
        central.bus.call("org.bluez", central.device_path(HRM), "org.bluez.Device1", "Connect", timeout=10)
    assert err.value.name == "org.bluez.Error.Failed"
    assert central.device(HRM)["Connected"] is False


@pytest.mark.parametrize("server_acquire", [False, True], ids=["server-StartNotify", "server-AcquireNotify"])
def test_patch2_peripheral_death_is_a_link_loss(central, peripheral, server_acquire):
    hrm = peripheral("heart_rate", rate=50, no_acquire_notify=not server_acquire)
    connect(central, HRM)
    n = central.start_notify(HRM, "2a37")
    n.take(2, 5)
    hrm.kill()
    central.wait_property(HRM, "Connected", False, 5)
    assert central.device(HRM)["ServicesResolved"] is False
    assert central.gatt(HRM) == {}
    hrm.start()  # same adapter, same address
    central.connect(HRM)
    n = central.start_notify(HRM, "2a37")
    assert n.take(3, 5) == [heart_rate.encoded(i) for i in range(3)]


def test_graceful_stop_and_restart_at_the_same_address(central, peripheral):
    p = peripheral("led", initial="01")
    connect(central, LED)
    p.stop()  # SIGTERM: the application unregisters itself, which is a link loss for the central too
    assert p.events_matching("stopped")
    central.wait_property(LED, "Connected", False, 5)
    p.start()
    assert p.wait_for("ready")["address"] == LED
    central.connect(LED)
    assert central.read(LED, led.CHARACTERISTIC) == b"\x01"


def test_patch2_link_loss_hangs_up_acquired_notify(central, peripheral):
    hrm = peripheral("heart_rate", rate=50)
    connect(central, HRM)
    sock, _ = central.acquire_notify(HRM, "2a37")
    sock.settimeout(5)
    sock.recv(512)
    hrm.kill()
    central.wait_property(HRM, "Connected", False, 5)
    # A hang-up (EOF) once the queued notifications are read, as bluetoothd closes the fd on disconnect.
    for _ in range(1000):
        if sock.recv(512) == b"":
            break
    else:
        pytest.fail("acquired notify socket never hung up")


def test_patch3_manufacturer_data(central, peripheral):
    peripheral("heart_rate", manufacturer_data={0xFFFF: "0102", 0x004C: "beef"}, service_data={"180d": "07"})
    central.start_discovery()
    dev = central.wait_device(HRM)  # GetManagedObjects failed outright before the patch
    assert unvariant_dict(dev["ManufacturerData"]) == {0xFFFF: b"\x01\x02", 0x004C: b"\xbe\xef"}
    assert unvariant_dict(dev["ServiceData"]) == {"0000180d-0000-1000-8000-00805f9b34fb": b"\x07"}


def test_patch4_notify_sessions_per_client(bench, central, peripheral, wait_until):
    hrm = peripheral("heart_rate", rate=50, no_acquire_notify=True)
    connect(central, HRM)
    other = Central()  # its own bus connection
    try:
        n1 = central.start_notify(HRM, "2a37")
        n1.take(1, 5)
        n2 = other.start_notify(HRM, "2a37")  # the server already notifies: was routed to AcquireNotify
        n2.take(2, 5)
        central.start_notify(HRM, "2a37")  # a repeated StartNotify from the same client succeeds
        central.stop_notify(HRM, "2a37", n1)
        assert central.char_properties(HRM, "2a37")["Notifying"] is True  # the other session remains
        mark = hrm.mark()
        n2.take(2, 5)
    finally:
        other.close()  # the client leaves the bus without StopNotify: its session ends with it
    hrm.wait_for({"event": "unsubscribed", "char": "2a37", "via": "StartNotify"}, since=mark)
    wait_until(lambda: central.char_properties(HRM, "2a37")["Notifying"] is False, 5, "still notifying")
    assert hrm.events_matching("confirm") == []  # notifications are not confirmed (only indications are)


def test_patch6_discovery_stops_with_its_last_client(bench, central):
    other = Central()  # its own bus connection
    try:
        central.start_discovery()
        other.start_discovery()
        other.stop_discovery()
        assert central.bus.get_property("org.bluez", "/org/bluez/hci0", "org.bluez.Adapter1", "Discovering") is True
        central.stop_discovery()
        assert central.bus.get_property("org.bluez", "/org/bluez/hci0", "org.bluez.Adapter1", "Discovering") is False
    finally:
        other.close()


def test_bluezoo_restart(bench, bluez, central, peripheral):
    hrm = peripheral("heart_rate", rate=50, no_acquire_notify=True)
    connect(central, HRM)
    mark = hrm.mark()
    bluez.restart()
    hrm.wait_for("bluez_lost", since=mark)
    hrm.wait_for("ready", since=mark)  # re-registered on the new bluetoothd
    assert bluez.process.running
    connect(central, HRM)
    assert central.read(HRM, "2a19") == bytes([87])
    n = central.start_notify(HRM, "2a37")
    assert n.take(2, 5) == [heart_rate.encoded(0), heart_rate.encoded(1)]


def test_mosquitto_broker_and_mqtt_client(mosquitto, mqtt, bench):
    mqtt.publish("bench/test", "hello", qos=1, retain=True)
    assert mqtt.wait_for("bench/+", "hello").topic == "bench/test"
    port = mosquitto.port
    mosquitto.restart()  # persistence off: the retained message is gone after a restart
    assert mosquitto.port == port and mosquitto.running
    late = bench.mqtt_client(mosquitto, topics=["bench/#"])
    late.publish("bench/other", b"x")
    late.wait_for("bench/other")
    assert late.received("bench/test") == []
    mosquitto.stop()
    assert not mosquitto.running
