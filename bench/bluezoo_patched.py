"""BlueZoo 1.0.2 with a runtime patch layer that makes it behave like bluetoothd where the bench needs it.

Run exactly like `bluezoo`:  python bench/bluezoo_patched.py --auto-enable --scan-interval 1 --adapter 00:00:00:00:00:01
Extra option (removed before BlueZoo parses its arguments):
  --connect-fail-delay S   how long Device1.Connect to a peripheral that is not advertising takes to fail (default 2)

This is not a fork: the pinned wheel (bench/requirements.txt) is imported unchanged and a few methods are
replaced at start-up. Each patch says what is wrong in 1.0.2 and why the bench needs it fixed:

  1. reconnect after Device1.Disconnect — `Device.disconnect` only flips Connected; the link's GATT objects stay
     exported, so the next Connect re-exports them at the same paths and fails with sd-bus error 17 (EEXIST).
     Fixed: stop the server-side notify sessions the link opened, unexport the link objects (InterfacesRemoved,
     as bluetoothd does), reset ServicesResolved and Connected. Connect on an already connected device succeeds
     without re-exporting (bluetoothd answers success too), and Connect to a peripheral that is not advertising, or
     only advertises non-connectable ("broadcast", a passive sensor), fails with org.bluez.Error.Failed
     "le-connection-abort-by-local" instead of "connecting" to nothing.
  2. no link loss — when a peripheral process dies, its central stays Connected/ServicesResolved with stale
     objects. Fixed: the adapter's GATT-application removal (run when the application's bus name is lost)
     disconnects every device whose peer is that adapter, through the fixed disconnect, so the central sees
     ServicesResolved=false, InterfacesRemoved and Connected=false like a supervision timeout on real BlueZ.
  3. Device1.ManufacturerData is declared a{sv}; BlueZ (and every advertisement) uses a{qv}, so an
     advertisement with manufacturer data made GetManagedObjects fail for every client. Fixed: a{qv}.
  4. notify sessions — a client StartNotify while the server is already notifying was routed to AcquireNotify
     (UnknownMethod on servers without it), a second StartNotify from the same client failed, sessions of a
     client that left the bus were never stopped, Confirm() was called on the server after every notification
     (BlueZ confirms indications only) and the client's Notifying property showed the server's flag.
     Fixed with per-link, per-client sessions as in bluetoothd: the server side is started once per link
     (AcquireNotify when the server exposes NotifyAcquired, else StartNotify) and stopped with the last
     session, a session ends when its client leaves the bus, Notifying/NotifyAcquired reflect the link.
  5. client AcquireNotify handed the server's own socket to the client, so neither side ever saw a hang-up
     when the link went down (and BlueZoo leaked its copy of every descriptor it received: sdbus already
     hands received descriptors over to the caller, BlueZoo dup()ed them again and never closed the original). Fixed: BlueZoo relays the notifications through its own socket pair, closed
     on disconnect (the client gets HUP as with bluetoothd) and when the client closes its end (the server
     gets HUP). The server now also receives the `device`/`mtu`/`link` options on AcquireNotify.
  7. empty notifications — a zero-length notification reads as 0 bytes from a SEQPACKET socket, like the
     hang-up, and both relays took it for one (ending the subscription). Fixed: a 0-byte read is the end only
     when poll reports POLLHUP/POLLRDHUP/POLLERR; otherwise it is an empty value and is passed on, as bluetoothd
     passes a remote device's empty notification to an AcquireNotify client.
  6. discovery — every StartDiscovery started one more scan task (the old one leaked), and StopDiscovery by
     one client stopped discovery for all. Fixed: one task per adapter; discovery stops with its last client.
  8. adapters (bench switches, not a fix) — powering an adapter off drops its links, as bluetoothd does (BlueZoo
     only stopped discovery). And a wedge switch for the adapter tests: `org.bluezoo.Bench1.Wedge(y id)` on
     `/org/bluezoo/bench` makes that adapter fail every StartDiscovery (org.bluez.Error.Failed) and every
     Device1.Connect (org.bluez.Error.InProgress) until it is powered off (`Adapter1.Powered`), like a
     controller that only a power cycle brings back; `WedgeSilently(y id)` leaves both unanswered instead.

  9. DuplicateData — BlueZoo signals Device1.ServiceData/ManufacturerData only when the bytes change, whatever the
     discovery filter. bluetoothd with `DuplicateData: true` clears a device's advertising data at every report and
     adds it again, so every report is a PropertiesChanged, repeats included (what keeps a passive sensor that
     repeats one packet "heard"). Fixed: with that filter on the scanning adapter, an unchanged report is signalled.

Bench control (not a fix): per-adapter RSSI of a peripheral, settable at run time over D-Bus (see its section).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import select
import socket
import sys
from typing import Any, Optional

import sdbus

from bluezoo import bluezoo as bluezoo_main
from bluezoo import events
from bluezoo.adapter import Adapter
from bluezoo.device import Device
from bluezoo.exceptions import (DBusBluezFailedError, DBusBluezInProgressError, DBusBluezNotPermittedError,
                                DBusBluezNotSupportedError, DBusBluezRejectedError)
from bluezoo.gatt import GattCharacteristicClientLink
from bluezoo.gatt.manager import GattManager
from bluezoo.log import logger
from bluezoo.utils import dbus_method_async_except_logging

CHAR_IFACE = "org.bluez.GattCharacteristic1"

# Seconds a Connect to a non-advertising peripheral takes to fail (set from --connect-fail-delay).
CONNECT_FAIL_DELAY = 2.0


def _replace_dbus_method(cls: type, name: str, func) -> None:
    """Swap the Python implementation behind an exported D-Bus method (sdbus copies the member per class)."""
    vars(cls)[name].original_method = dbus_method_async_except_logging(func)


def _replace_property_getter(cls: type, name: str, getter) -> None:
    vars(cls)[name].property_getter = getter


def _hung_up(sock: socket.socket) -> bool:
    """True when the peer closed `sock` (patch 7): tells a hang-up from an empty SEQPACKET record."""
    poller = select.poll()
    poller.register(sock.fileno(), select.POLLIN | select.POLLRDHUP)
    return any(ev & (select.POLLHUP | select.POLLRDHUP | select.POLLERR | select.POLLNVAL)
               for _, ev in poller.poll(0))


def _emit(obj, changed: dict[str, tuple[str, Any]]) -> None:
    """PropertiesChanged on an exported BlueZoo object (ignored once the object is gone)."""
    try:
        obj.properties_changed.emit((CHAR_IFACE, changed, []))
    except Exception:  # noqa: BLE001 - the object may have been unexported meanwhile
        pass


# --- patch 1: disconnect / connect ------------------------------------------------------------------------

async def _release_link_char(link: GattCharacteristicClientLink) -> None:
    """Ends every notify session of one characteristic link (patch 4 state) and its AcquireNotify relay."""
    for sub in _state(link).sessions.values():
        sub.unsubscribe()
    _state(link).sessions.clear()
    await _stop_server_notify(link)
    _close_relay(link)


async def _disconnect(self: Device, uuid: Optional[str] = None) -> None:
    self.connecting_task.cancel()
    logger.info(f"Disconnecting {self}")
    links = list(self.services.items())
    for _, link in links:
        if isinstance(link, GattCharacteristicClientLink):
            await _release_link_char(link)
    if self.services_resolved:
        await self.ServicesResolved.set_async(False)
    if self.peer is not None and self.peer.services_resolved:
        await self.peer.ServicesResolved.set_async(False)
    # Children first (descriptors, characteristics, then services), as bluetoothd removes them.
    for path, link in sorted(links, key=lambda x: x[0], reverse=True):
        try:
            self.peer_adapter.mock.remove_object(link)
        except KeyError:
            pass
    self.services.clear()
    if self.peer is not None and self.peer.connected:
        await self.peer.Connected.set_async(False)
    if self.connected:
        await self.Connected.set_async(False)


_original_connect = Device.connect


def _connectable(adapter: Adapter) -> bool:
    """Some advertisement of the adapter accepts connections: a "broadcast" one (a passive sensor's) does not."""
    return any(adv.Type.get("peripheral") != "broadcast" for adv in adapter.advertisements.values())


async def _connect(self: Device, uuid: Optional[str] = None) -> None:
    if self.connected and self.services_resolved:
        return  # bluetoothd: Connect on a connected LE device succeeds at once
    if self.is_le and not _connectable(self.peer_adapter):
        # Nothing connectable advertises at that address: a real controller times out the LE connection attempt.
        await asyncio.sleep(CONNECT_FAIL_DELAY)
        if not _connectable(self.peer_adapter):
            raise DBusBluezFailedError("le-connection-abort-by-local")
    if self.services:  # objects left from an interrupted connect: clear them before re-exporting
        await _disconnect(self)
    await _original_connect(self, uuid)


# --- patch 2: link loss when the GATT application goes away -------------------------------------------------

_original_del_gatt_application = GattManager._GattManager__del_gatt_application


async def _del_gatt_application(self: GattManager, app) -> None:
    await _original_del_gatt_application(self, app)
    # `self` is the peripheral's adapter. Every central that is connected to it loses the link.
    for adapter in list(self.mock.adapters.values()):
        for device in list(adapter.devices.values()):
            if device.peer_adapter is self and (device.connected or device.services):
                logger.info(f"Link loss: {device} on {adapter} (GATT application gone)")
                await _disconnect(device)


# --- patch 3: ManufacturerData signature --------------------------------------------------------------------

def _patch_manufacturer_data_signature() -> None:
    vars(Device)["ManufacturerData"].property_signature = "a{qv}"


# --- patches 4 and 5: notify sessions and the AcquireNotify relay -------------------------------------------

class _LinkNotifyState:
    """Notify bookkeeping of one characteristic link (one central's view of one server characteristic)."""

    def __init__(self):
        self.sessions: dict[str, events.Subscription] = {}   # client bus name → its "service lost" hook
        self.source: Optional[str] = None                    # None | "signal" | "fd": how values reach the link
        self.signal_sub = events.Subscription()
        self.server_sock: Optional[socket.socket] = None     # server's AcquireNotify socket (StartNotify path)
        self.relay: Optional[tuple[socket.socket, socket.socket]] = None  # (server side, our client-facing end)


def _state(link) -> _LinkNotifyState:
    st = getattr(link, "_bench_notify", None)
    if st is None:
        st = link._bench_notify = _LinkNotifyState()
    return st


def _signal_links(client) -> set:
    """Links that get values from this server characteristic through its StartNotify session."""
    links = getattr(client, "_bench_signal_links", None)
    if links is None:
        links = client._bench_signal_links = set()
    return links


def _prepare_options(link, options: dict) -> dict:
    options = dict(options)
    options.update({
        "device": ("o", link.service.device.peer.get_object_path()),
        "mtu": ("q", link.mtu),
        "link": ("s", link.link)})
    return options


def _is_notifying(link) -> bool:
    st = _state(link)
    return bool(st.sessions) or st.relay is not None


async def _start_server_notify(link) -> None:
    st = _state(link)
    client = link.client
    if client.NotifyAcquired.get() is not None:
        # The server supports AcquireNotify: bluetoothd prefers it for the server side.
        fd, mtu = await client.AcquireNotify(_prepare_options(link, {}))
        sock = socket.socket(fileno=fd)  # sdbus hands the received descriptor over to us
        sock.setblocking(False)
        st.server_sock = sock
        st.source = "fd"
        loop = asyncio.get_running_loop()

        def on_readable():
            try:
                data = sock.recv(65536)
            except BlockingIOError:
                return
            except OSError:
                data = None
            if data is None or (not data and _hung_up(sock)):
                _close_server_sock(link)
                return
            _emit(link, {"Value": ("ay", data)})
            client.Value.cache(data)
            if "indicate" in client.Flags.get([]):
                try:
                    sock.send(b"\x01")  # confirmation, as bluetoothd writes it for indications
                except OSError:
                    pass

        loop.add_reader(sock.fileno(), on_readable)
        return

    async def on_properties_changed(properties: dict[str, Any]):
        if "Value" in properties and st.source == "signal":
            _emit(link, {"Value": ("ay", properties["Value"])})
            if "indicate" in client.Flags.get([]):
                await client.Confirm()

    st.signal_sub = events.subscribe(f"properties:changed:{id(client)}", on_properties_changed)
    st.source = "signal"
    others = _signal_links(client)
    if not others:
        await client.StartNotify()
    others.add(link)


def _close_server_sock(link) -> None:
    st = _state(link)
    if st.server_sock is not None:
        try:
            asyncio.get_running_loop().remove_reader(st.server_sock.fileno())
        except (RuntimeError, ValueError):
            pass
        st.server_sock.close()
        st.server_sock = None
    if st.source == "fd":
        st.source = None


async def _stop_server_notify(link) -> None:
    st = _state(link)
    if st.source == "fd":
        _close_server_sock(link)  # the server sees HUP, as with bluetoothd
    elif st.source == "signal":
        st.signal_sub.unsubscribe()
        st.source = None
        others = _signal_links(link.client)
        others.discard(link)
        if not others:
            try:
                await link.client.StopNotify()
            except Exception as exc:  # noqa: BLE001 - the server may be gone (link loss)
                logger.debug(f"StopNotify on {link} failed: {exc}")


async def _start_notify(self) -> None:
    sender = sdbus.get_current_message().sender
    st = _state(self)
    flags = self.client.Flags.get([])
    if "notify" not in flags and "indicate" not in flags:
        raise DBusBluezNotSupportedError("Operation is not supported")
    if st.relay is not None:
        raise DBusBluezNotPermittedError("Notify acquired")
    if sender in st.sessions:
        return  # bluetoothd: a second StartNotify from the same client succeeds
    was_notifying = _is_notifying(self)
    if st.source is None:
        await _start_server_notify(self)

    async def on_sender_lost():
        if st.sessions.pop(sender, None) is not None and not st.sessions:
            await _stop_server_notify(self)
            _emit(self, {"Notifying": ("b", False)})

    st.sessions[sender] = events.subscribe(f"service:lost:{sender}", on_sender_lost, once=True)
    if not was_notifying:
        _emit(self, {"Notifying": ("b", True)})


async def _stop_notify(self) -> None:
    sender = sdbus.get_current_message().sender
    st = _state(self)
    sub = st.sessions.pop(sender, None)
    if sub is None:
        raise DBusBluezFailedError("No notify session started")
    sub.unsubscribe()
    if not st.sessions:
        await _stop_server_notify(self)
        _emit(self, {"Notifying": ("b", False)})


def _close_relay(link) -> None:
    st = _state(link)
    if st.relay is None:
        return
    loop = asyncio.get_running_loop()
    for sock in st.relay:
        try:
            loop.remove_reader(sock.fileno())
        except ValueError:
            pass
        sock.close()
    st.relay = None
    _emit(link, {"NotifyAcquired": ("b", False), "Notifying": ("b", False)})


async def _acquire_notify(self, options: dict[str, tuple[str, Any]]) -> tuple[int, int]:
    st = _state(self)
    flags = self.client.Flags.get([])
    if "notify" not in flags and "indicate" not in flags:
        raise DBusBluezNotSupportedError("Operation is not supported")
    if st.sessions or st.relay is not None:
        raise DBusBluezNotPermittedError("Notify already enabled")
    fd, mtu = await self.client.AcquireNotify(_prepare_options(self, options))
    server = socket.socket(fileno=fd)  # sdbus hands the received descriptor over to us
    server.setblocking(False)
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    ours.setblocking(False)
    st.relay = (server, ours)
    loop = asyncio.get_running_loop()

    def from_server():
        try:
            data = server.recv(65536)
        except BlockingIOError:
            return
        except OSError:
            data = None
        if data is None or (not data and _hung_up(server)):
            _close_relay(self)
            return
        try:
            ours.send(data)
        except BlockingIOError:
            logger.warning(f"{self}: client does not read its notify socket; notification dropped")
        except OSError:
            _close_relay(self)

    def from_client():
        try:
            data = ours.recv(65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:  # the client closed its end: release the server side too
            _close_relay(self)
            return
        try:
            server.send(data)  # indication confirmations
        except OSError:
            pass

    loop.add_reader(server.fileno(), from_server)
    loop.add_reader(ours.fileno(), from_client)
    client_fd = theirs.detach()
    # sd-bus duplicates the descriptor when the reply is built, right after this coroutine returns.
    loop.call_soon(os.close, client_fd)
    _emit(self, {"NotifyAcquired": ("b", True), "Notifying": ("b", True)})
    return client_fd, mtu


def _patch_notify() -> None:
    link = GattCharacteristicClientLink
    _replace_dbus_method(link, "StartNotify", _start_notify)
    _replace_dbus_method(link, "StopNotify", _stop_notify)
    _replace_dbus_method(link, "AcquireNotify", _acquire_notify)
    _replace_property_getter(link, "Notifying", _is_notifying)
    _replace_property_getter(link, "NotifyAcquired", lambda self: _state(self).relay is not None)


# --- patch 6: discovery ------------------------------------------------------------------------------------

_original_create_discovering_task = bluezoo_main.BluezMockService.create_discovering_task
_original_stop_discovering = Adapter._Adapter__stop_discovering


def _create_discovering_task(self, id: int):
    self.adapters[id].discovering_task.cancel()
    return _original_create_discovering_task(self, id)


async def _stop_discovering(self: Adapter) -> None:
    if self.scan_subscribers and self.powered:
        return  # other clients still discover
    await _original_stop_discovering(self)


# --- patch 9: DuplicateData reports repeats -------------------------------------------------------------------

def _patch_duplicate_data() -> None:
    original_add_device = Adapter.add_device

    async def add_device(self: Adapter, device: Device):
        path = f"{self.get_object_path()}/dev_{device.address.replace(':', '_')}"
        known = self.devices.get(path)
        repeat = (known is not None and known.service_data == device.service_data
                  and known.manufacturer_data == device.manufacturer_data)
        await original_add_device(self, device)
        if not (repeat and self.scan_filter_duplicate and self.devices.get(path) is known):
            return
        changed = {}
        if known.service_data:
            changed["ServiceData"] = ("a{sv}", known.service_data)
        if known.manufacturer_data:
            changed["ManufacturerData"] = ("a{qv}", known.manufacturer_data)
        if changed:
            try:
                known.properties_changed.emit((DEVICE_IFACE, changed, []))
            except Exception:  # noqa: BLE001 - unexported meanwhile
                pass

    Adapter.add_device = add_device


# --- patch 8: adapters: power-off drops links, and the wedge switch -----------------------------------------

class _BenchSwitches(sdbus.DbusInterfaceCommonAsync, interface_name="org.bluezoo.Bench1"):
    """Bench-only faults, exported at /org/bluezoo/bench."""

    def __init__(self, mock):
        super().__init__()
        self.mock = mock

    @sdbus.dbus_method_async(input_signature="y", input_args_names=["id"], flags=sdbus.DbusUnprivilegedFlag)
    async def Wedge(self, id: int) -> None:
        adapter = self.mock.adapters.get(id)
        if adapter is None:
            raise DBusBluezFailedError("no such adapter")
        logger.info(f"Wedging {adapter} until it is power-cycled")
        adapter._bench_wedged = True

    @sdbus.dbus_method_async(input_signature="y", input_args_names=["id"], flags=sdbus.DbusUnprivilegedFlag)
    async def WedgeSilently(self, id: int) -> None:
        """The other face of a wedge: StartDiscovery and Device1.Connect are never answered (bluetoothd stuck on
        the controller) until the adapter is powered off; then they fail."""
        adapter = self.mock.adapters.get(id)
        if adapter is None:
            raise DBusBluezFailedError("no such adapter")
        logger.info(f"Wedging {adapter} silently until it is power-cycled")
        adapter._bench_wedged = "silent"
        adapter._bench_unwedged = asyncio.Event()


def _wedged(adapter) -> bool:
    return getattr(adapter, "_bench_wedged", False)


async def _wedge_answer(adapter, error) -> None:
    """Raises `error` for a wedged adapter: at once, or (silent wedge) only once it is powered off."""
    if _wedged(adapter) == "silent":
        await adapter._bench_unwedged.wait()
        raise DBusBluezFailedError("Not Powered")
    raise error


def _patch_adapters() -> None:
    original_init = bluezoo_main.BluezMockService.__init__

    def init(self, *args, **kwargs):
        original_init(self, *args, **kwargs)
        self._bench_switches = _BenchSwitches(self)
        self._bench_switches.export_to_dbus("/org/bluezoo/bench")

    bluezoo_main.BluezMockService.__init__ = init

    start_discovery = vars(Adapter)["StartDiscovery"].original_method

    async def wedged_start_discovery(self: Adapter) -> None:
        if _wedged(self):
            await _wedge_answer(self, DBusBluezFailedError("Operation failed (wedged controller)"))
        await start_discovery(self)

    _replace_dbus_method(Adapter, "StartDiscovery", wedged_start_discovery)

    connect = Device.connect

    async def wedged_connect(self: Device, uuid: Optional[str] = None) -> None:
        if _wedged(self.adapter):
            await _wedge_answer(self.adapter, DBusBluezInProgressError("In Progress"))
        await connect(self, uuid)

    Device.connect = wedged_connect

    powered = vars(Adapter)["Powered"]
    set_powered = powered.property_setter

    def powered_setter(self: Adapter, value: bool) -> None:
        if not value:
            if _wedged(self) == "silent":
                self._bench_unwedged.set()
            self._bench_wedged = False
            for device in list(self.devices.values()):
                if device.connected or device.services:
                    asyncio.get_running_loop().create_task(_disconnect(device))
        set_powered(self, value)

    powered.property_setter = powered_setter


# --- bench control: per-adapter RSSI ------------------------------------------------------------------------
# BlueZoo reports every device with RSSI 0 and never changes it, so nothing can tell a near adapter from a far
# one. This bench-only control (not a fix of BlueZoo: bluetoothd has nothing like it) gives each (scanning adapter,
# peripheral) pair an RSSI, settable at run time over D-Bus, so a test can move a peripheral towards another
# central:  org.bluezoo.BenchRSSI1.SetRSSI(s adapter_address, s peer_address, n rssi) on /org/bluezoo/bench/rssi.
# The device object already on that adapter gets the value at once (PropertiesChanged on Device1, as bluetoothd
# signals a new advert's RSSI); a device reported later starts with it. Pairs never set keep BlueZoo's 0.
# -127 (OUT_OF_RANGE), set before the adapter first reports the peripheral, means that adapter never hears it.

DEVICE_IFACE = "org.bluez.Device1"
_RSSI: dict[tuple[str, str], int] = {}
# An RSSI at or below this, set before the adapter first reports the peripheral, means it never hears it.
OUT_OF_RANGE = -127


class BenchRSSI(sdbus.DbusInterfaceCommonAsync, interface_name="org.bluezoo.BenchRSSI1"):
    def __init__(self, mock):
        super().__init__()
        self.mock = mock

    @sdbus.dbus_method_async(input_signature="ssn", input_args_names=["adapter", "peer", "rssi"],
                             flags=sdbus.DbusUnprivilegedFlag)
    async def SetRSSI(self, adapter: str, peer: str, rssi: int) -> None:
        adapter, peer = adapter.upper(), peer.upper()
        _RSSI[(adapter, peer)] = rssi
        for scanner in self.mock.adapters.values():
            if scanner.address.upper() != adapter:
                continue
            for device in list(scanner.devices.values()):
                if device.address.upper() == peer and device.rssi != rssi:
                    device.rssi = rssi
                    try:
                        device.properties_changed.emit((DEVICE_IFACE, {"RSSI": ("n", rssi)}, []))
                    except Exception:  # noqa: BLE001 - unexported meanwhile
                        pass


def _patch_rssi() -> None:
    # The originals are taken when the patch is applied, not at import: other patches wrap the same methods.
    original_init = bluezoo_main.BluezMockService.__init__
    original_add_device = Adapter.add_device

    def init(self, *args, **kwargs):
        original_init(self, *args, **kwargs)
        self.bench_rssi = BenchRSSI(self)
        self.bench_rssi.export_to_dbus("/org/bluezoo/bench/rssi")

    async def add_device(self: Adapter, device: Device):
        rssi = _RSSI.get((self.address.upper(), device.address.upper()))
        if rssi is not None and rssi <= OUT_OF_RANGE:
            return      # this adapter does not hear the peripheral at all
        if rssi is not None:
            device.rssi = rssi
        await original_add_device(self, device)

    bluezoo_main.BluezMockService.__init__ = init
    Adapter.add_device = add_device


# --- bench control: a late answer to Pair -------------------------------------------------------------------
# bluetoothd answers Device1.Pair only after the service discovery that follows the bonding, so on a slow link the
# device is Paired (keys stored) well before the answer; on real BlueZ an ATT request that waits out its 30 s
# timeout there has been seen to hold it past a 30 s `gattbridge pair`. BlueZoo answers at once. This bench-only
# control delays the answer after the device is marked paired:
# org.bluezoo.BenchPair1.SetReplyDelay(d seconds) on /org/bluezoo/bench/pair (0, the default, answers at once).

_PAIR_REPLY_DELAY = 0.0


class BenchPair(sdbus.DbusInterfaceCommonAsync, interface_name="org.bluezoo.BenchPair1"):
    @sdbus.dbus_method_async(input_signature="d", input_args_names=["seconds"], flags=sdbus.DbusUnprivilegedFlag)
    async def SetReplyDelay(self, seconds: float) -> None:
        global _PAIR_REPLY_DELAY
        _PAIR_REPLY_DELAY = max(0.0, seconds)


def _patch_pair_reply() -> None:
    original_init = bluezoo_main.BluezMockService.__init__
    original_pair = Device.pair

    def init(self, *args, **kwargs):
        original_init(self, *args, **kwargs)
        self.bench_pair = BenchPair()
        self.bench_pair.export_to_dbus("/org/bluezoo/bench/pair")

    async def pair(self: Device) -> None:
        await original_pair(self)
        if _PAIR_REPLY_DELAY > 0:
            await asyncio.sleep(_PAIR_REPLY_DELAY)

    bluezoo_main.BluezMockService.__init__ = init
    Device.pair = pair


# --- bench control: agent calls from org.bluez ---------------------------------------------------------------
# An agent must answer only bluetoothd (the owner of org.bluez). BlueZoo never calls agents itself, so the tests ask
# it to: org.bluezoo.BenchAgent1.Call(s destination, s path, s member, s signature, v argument…) on
# /org/bluezoo/bench/agent relays one org.bluez.Agent1 call with the device path (and for RequestConfirmation a
# passkey, for AuthorizeService a UUID) from BlueZoo's own connection, returning a RequestPasskey's number (0 for
# calls without a result). A Rejected answer comes back as org.bluez.Error.Rejected.


class BenchAgent(sdbus.DbusInterfaceCommonAsync, interface_name="org.bluezoo.BenchAgent1"):
    @sdbus.dbus_method_async(input_signature="sssos", result_signature="u",
                             input_args_names=["destination", "path", "member", "device", "extra"],
                             result_args_names=["passkey"],
                             flags=sdbus.DbusUnprivilegedFlag)
    async def Call(self, destination: str, path: str, member: str, device: str, extra: str) -> int:
        bus = sdbus.get_default_bus()
        msg = bus.new_method_call_message(destination, path, "org.bluez.Agent1", member)
        if member == "RequestConfirmation":
            msg.append_data("ou", device, int(extra))
        elif member == "AuthorizeService":
            msg.append_data("os", device, extra)
        else:
            msg.append_data("o", device)
        try:
            reply = await bus.call_async(msg)
        except Exception as exc:  # noqa: BLE001 - the agent's error, passed on by name
            if "org.bluez.Error.Rejected" in repr(exc) or "Rejected" in type(exc).__name__:
                raise DBusBluezRejectedError(str(exc)) from exc
            raise DBusBluezFailedError(repr(exc)) from exc
        values = reply.parse_to_tuple()
        return int(values[0]) if values and isinstance(values[0], int) else 0


def _patch_agent_calls() -> None:
    original_init = bluezoo_main.BluezMockService.__init__

    def init(self, *args, **kwargs):
        original_init(self, *args, **kwargs)
        self.bench_agent = BenchAgent()
        self.bench_agent.export_to_dbus("/org/bluezoo/bench/agent")

    bluezoo_main.BluezMockService.__init__ = init


# --- wiring ------------------------------------------------------------------------------------------------

def _patch_connection() -> None:
    Device.disconnect = _disconnect
    Device.connect = _connect


def _patch_link_loss() -> None:
    GattManager._GattManager__del_gatt_application = _del_gatt_application


def _patch_discovery() -> None:
    bluezoo_main.BluezMockService.create_discovering_task = _create_discovering_task
    Adapter._Adapter__stop_discovering = _stop_discovering


PATCHES = {
    "1": _patch_connection,
    "2": _patch_link_loss,
    "3": _patch_manufacturer_data_signature,
    "4": _patch_notify,          # 4 and 5 share the notify session code
    "6": _patch_discovery,
    "8": _patch_adapters,
    "9": _patch_duplicate_data,  # before "rssi", which wraps it: an out-of-range adapter hears no repeat either
    "rssi": _patch_rssi,         # bench control, not a fix
    "pair_reply": _patch_pair_reply,  # bench control, not a fix
    "agent_calls": _patch_agent_calls,  # bench control, not a fix
}


def apply_patches(skip: frozenset[str] = frozenset()) -> None:
    """Applies every patch except those numbered in `skip` (the tests use $BLUEZOO_SKIP_PATCHES, e.g. "2,3",
    to show that each self-test fails without its patch)."""
    for number, patch in PATCHES.items():
        if number not in skip:
            patch()


def main() -> None:
    global CONNECT_FAIL_DELAY
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--connect-fail-delay", type=float, default=CONNECT_FAIL_DELAY)
    ours, rest = pre.parse_known_args()
    CONNECT_FAIL_DELAY = ours.connect_fail_delay
    sys.argv = [sys.argv[0], *rest]
    skip = frozenset(x.strip() for x in os.environ.get("BLUEZOO_SKIP_PATCHES", "").split(",") if x.strip())
    apply_patches(skip)
    bluezoo_main.main()


if __name__ == "__main__":
    main()
