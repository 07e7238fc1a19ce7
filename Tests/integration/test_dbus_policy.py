"""The shipped D-Bus policy (systemd/gattbridge-dbus.conf) on a real dbus-daemon.

A private system bus whose config denies by default exactly as Debian's /usr/share/dbus-1/system.conf does (no name
may be owned, no method call sent, unless a policy file punches a hole), includes the shipped policy with its user
rewritten to the user running the test, and a stand-in for the two holes BlueZ's own bluetooth.conf punches for
bluetoothd (owning org.bluez, sending on org.bluez.Agent1). A fake org.bluez then answers calls: the interfaces the
daemon uses go through, anything else is refused by the bus with AccessDenied, and org.bluez can call the agent.
"""

from __future__ import annotations

import asyncio
import os
import pwd
import shutil
import xml.etree.ElementTree as ET

import pytest

from bench.bench import REPO, Process
from bench.dbus_util import DBusError, Exported, Method, call

import sdbus
from sdbus.sd_bus_internals import SdBusInterface

POLICY = REPO / "systemd" / "gattbridge-dbus.conf"

# The default context of Debian 12's system.conf (dbus 1.14), verbatim in substance.
BUS_CONFIG = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path={socket}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <deny own="*"/>
    <deny send_type="method_call"/>
    <allow send_type="signal"/>
    <allow send_requested_reply="true" send_type="method_return"/>
    <allow send_requested_reply="true" send_type="error"/>
    <allow receive_type="method_call"/>
    <allow receive_type="method_return"/>
    <allow receive_type="error"/>
    <allow receive_type="signal"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Introspectable"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Properties"/>
  </policy>
  <!-- Stand-in for BlueZ's bluetooth.conf (which admits root, bluetoothd's user): own org.bluez, call agents.
       Here the test's one user plays bluetoothd too; also owning a second name, the destination that must stay
       out of reach. -->
  <policy user="{user}">
    <allow own="org.bluez"/>
    <allow own="org.example.Other"/>
    <allow send_interface="org.bluez.Agent1"/>
  </policy>
  <include>{policy}</include>
</busconfig>
"""

ALLOWED = ["org.bluez.Adapter1", "org.bluez.Device1", "org.bluez.GattCharacteristic1", "org.bluez.GattDescriptor1",
           "org.bluez.AgentManager1", "org.freedesktop.DBus.Properties", "org.freedesktop.DBus.ObjectManager",
           "org.freedesktop.DBus.Introspectable"]
DENIED = ["org.bluez.GattManager1", "org.bluez.LEAdvertisingManager1", "org.bluez.Network1", "org.bluez.Battery1",
          "org.example.Anything"]
ACCESS_DENIED = "org.freedesktop.DBus.Error.AccessDenied"


def test_policy_is_a_busconfig_for_the_gattbridge_user():
    root = ET.parse(POLICY).getroot()
    assert root.tag == "busconfig"
    policies = root.findall("policy")
    assert [p.attrib for p in policies] == [{"user": "gattbridge"}]
    rules = list(policies[0])
    assert rules and all(rule.tag == "allow" for rule in rules), "the file only punches holes, it denies nothing"
    # Narrow: every rule names a destination/sender and an interface; nothing is owned.
    for rule in rules:
        assert "own" not in rule.attrib and "own_prefix" not in rule.attrib
        assert ("send_destination" in rule.attrib and "send_interface" in rule.attrib) or \
               (rule.attrib.get("receive_sender") == "org.bluez" and "receive_interface" in rule.attrib)


@pytest.fixture
def policy_bus(tmp_path):
    """A private deny-by-default system bus with the shipped policy for the current user; yields its address."""
    if shutil.which("dbus-daemon") is None:
        pytest.skip("dbus-daemon not installed")
    user = pwd.getpwuid(os.getuid()).pw_name
    text = POLICY.read_text()
    assert text.count('user="gattbridge"') == 1
    policy = tmp_path / "gattbridge.conf"
    policy.write_text(text.replace('user="gattbridge"', f'user="{user}"'))
    config = tmp_path / "bus.conf"
    config.write_text(BUS_CONFIG.format(socket=tmp_path / "bus", user=user, policy=policy))
    daemon = Process(["dbus-daemon", f"--config-file={config}", "--nofork", "--print-address=1"], "dbus-daemon",
                     log_dir=tmp_path).start()
    try:
        address = daemon.wait_for_line(lambda line: line.startswith("unix:"), 10).strip()
        yield address
    finally:
        daemon.stop()


def _open_at(address: str):
    """A new connection to the private bus (sd-bus reads DBUS_SYSTEM_BUS_ADDRESS when it opens)."""
    previous = os.environ.get("DBUS_SYSTEM_BUS_ADDRESS")
    os.environ["DBUS_SYSTEM_BUS_ADDRESS"] = address
    try:
        return sdbus.sd_bus_open_system()
    finally:
        if previous is None:
            del os.environ["DBUS_SYSTEM_BUS_ADDRESS"]
        else:
            os.environ["DBUS_SYSTEM_BUS_ADDRESS"] = previous


async def _outcome(bus, destination, path, interface, member, signature="", *args) -> str:
    """"ok", or the D-Bus error name of the reply."""
    try:
        await call(bus, destination, path, interface, member, signature, *args, timeout=5)
        return "ok"
    except DBusError as error:
        return error.name


def test_shipped_policy_admits_the_daemons_calls_and_nothing_else(policy_bus):
    async def scenario():
        bluez = _open_at(policy_bus)
        await bluez.request_name_async("org.bluez", 0)
        served = Exported(bluez, "/org/bluez/hci0")
        for interface in ALLOWED[:5] + DENIED:
            served.add(interface, [Method("Probe", "", "s", lambda interface=interface: interface)])
        # Another service, on a connection of its own (a rule naming a destination matches every name the
        # receiving connection owns).
        other = _open_at(policy_bus)
        await other.request_name_async("org.example.Other", 0)
        other_served = Exported(other, "/org/bluez/hci0")
        other_served.add("org.bluez.Adapter1", [Method("Probe", "", "s", lambda: "other")])

        daemon = _open_at(policy_bus)
        outcomes = {}
        for interface in ALLOWED[:5] + DENIED:
            outcomes[interface] = await _outcome(daemon, "org.bluez", "/org/bluez/hci0", interface, "Probe")
        # The standard interfaces, answered by sd-bus itself on the fake's object.
        outcomes["Properties.GetAll"] = await _outcome(daemon, "org.bluez", "/org/bluez/hci0",
                                                       "org.freedesktop.DBus.Properties", "GetAll", "s",
                                                       "org.bluez.Adapter1")
        outcomes["Introspectable.Introspect"] = await _outcome(daemon, "org.bluez", "/org/bluez/hci0",
                                                               "org.freedesktop.DBus.Introspectable", "Introspect")
        outcomes["ObjectManager.GetManagedObjects"] = await _outcome(
            daemon, "org.bluez", "/", "org.freedesktop.DBus.ObjectManager", "GetManagedObjects")
        # Another destination, even on an interface allowed towards org.bluez.
        outcomes["Other Adapter1"] = await _outcome(daemon, "org.example.Other", "/org/bluez/hci0",
                                                    "org.bluez.Adapter1", "Probe")
        outcomes["Other Properties.GetAll"] = await _outcome(daemon, "org.example.Other", "/org/bluez/hci0",
                                                             "org.freedesktop.DBus.Properties", "GetAll", "s",
                                                             "org.bluez.Adapter1")
        # The watchdog's probe: Peer.Ping answered by the bus daemon itself.
        outcomes["bus Peer.Ping"] = await _outcome(daemon, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                                   "org.freedesktop.DBus.Peer", "Ping")
        served.stop()
        other_served.stop()
        return outcomes

    outcomes = asyncio.run(scenario())
    for interface in ALLOWED[:5]:
        assert outcomes[interface] == "ok", (interface, outcomes)
    for interface in DENIED:
        assert outcomes[interface] == ACCESS_DENIED, (interface, outcomes)
    assert outcomes["Properties.GetAll"] == "ok", outcomes
    assert outcomes["Introspectable.Introspect"] == "ok", outcomes
    # No ObjectManager at "/" on the fake: not refused by the bus, answered by the fake (UnknownObject/Method).
    assert outcomes["ObjectManager.GetManagedObjects"] != ACCESS_DENIED, outcomes
    assert outcomes["Other Adapter1"] == ACCESS_DENIED, outcomes
    assert outcomes["Other Properties.GetAll"] == ACCESS_DENIED, outcomes
    assert outcomes["bus Peer.Ping"] == "ok", outcomes


def test_org_bluez_may_call_the_agent(policy_bus):
    async def scenario():
        bluez = _open_at(policy_bus)
        await bluez.request_name_async("org.bluez", 0)
        # The daemon's unique name, as BlueZ learns it from RegisterAgent: the sender of a call it receives.
        senders = []

        def register_agent(message):
            senders.append(message.sender)
            message.create_reply().send()

        manager = SdBusInterface()
        manager.add_method("RegisterAgent", "os", ["agent", "capability"], "", [], sdbus.DbusUnprivilegedFlag,
                           register_agent)
        bluez.add_interface(manager, "/org/bluez", "org.bluez.AgentManager1")

        daemon = _open_at(policy_bus)
        requests = []
        agent = Exported(daemon, "/org/gattbridge/agent")
        agent.add("org.bluez.Agent1", [Method("RequestPasskey", "o", "u", lambda device: requests.append(device) or 123456)])
        await call(daemon, "org.bluez", "/org/bluez", "org.bluez.AgentManager1", "RegisterAgent", "os",
                   "/org/gattbridge/agent", "KeyboardOnly", timeout=5)
        (passkey,) = await call(bluez, senders[0], "/org/gattbridge/agent", "org.bluez.Agent1", "RequestPasskey", "o",
                                "/org/bluez/hci0/dev_C0_FF_EE_00_00_01", timeout=5)
        agent.stop()
        manager._stop_export()
        return passkey, requests

    passkey, requests = asyncio.run(scenario())
    assert passkey == 123456
    assert requests == ["/org/bluez/hci0/dev_C0_FF_EE_00_00_01"]
