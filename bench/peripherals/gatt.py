"""A small GATT-peripheral library over BlueZ's standard peripheral API only
(GattManager1.RegisterApplication, LEAdvertisingManager1.RegisterAdvertisement, GattService1,
GattCharacteristic1, LEAdvertisement1, ObjectManager), so a peripheral runs unchanged on BlueZoo and on a
real bluetoothd.

One peripheral is one process. It speaks to the tests through stdout, one JSON object per line
(`{"event": "ready", ...}`), and reads commands from stdin (see `PeripheralRunner._command`).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import sys
from typing import Any, Awaitable, Callable, Iterable, Optional

from bench.dbus_util import (DBusError, Exported, Method, Property, call, emit_properties_changed,
                             get_property, managed_objects, open_system_bus, subscribe)

BLUEZ = "org.bluez"
SERVICE_IFACE = "org.bluez.GattService1"
CHAR_IFACE = "org.bluez.GattCharacteristic1"
ADV_IFACE = "org.bluez.LEAdvertisement1"
BASE_UUID_TAIL = "-0000-1000-8000-00805f9b34fb"


def full_uuid(uuid: str) -> str:
    """'2a37' / '0x2A37' / '0000180d' / 128-bit → canonical lower-case 128-bit string."""
    u = uuid.lower().removeprefix("0x")
    if len(u) == 4:
        return f"0000{u}{BASE_UUID_TAIL}"
    if len(u) == 8:
        return f"{u}{BASE_UUID_TAIL}"
    if len(u) == 36:
        return u
    raise ValueError(f"not a UUID: {uuid!r}")


def short_uuid(uuid: str) -> str:
    """The 16-bit form when the UUID is on the Bluetooth base UUID, else the 128-bit form."""
    u = full_uuid(uuid)
    if u.startswith("0000") and u.endswith(BASE_UUID_TAIL):
        return u[4:8]
    return u


def emit(event: str, **fields: Any) -> None:
    """One event line on stdout for the tests (flushed: the bench reads it as it comes)."""
    sys.stdout.write(json.dumps({"event": event, **fields}, separators=(",", ":")) + "\n")
    sys.stdout.flush()


class Characteristic:
    """A server characteristic. Values are bytes. Flags are enforced as an ATT server would:
    reads need "read", write requests need "write", write commands need "write-without-response",
    notifications need "notify" or "indicate".

    on_write(value, type) may raise DBusError to reject a write; on_subscribe()/on_unsubscribe() run when
    the first central subscribes / the last one leaves (a producer starts and stops there)."""

    def __init__(self, uuid: str, flags: Iterable[str], value: bytes = b"", *, acquire_notify: bool = True,
                 mtu: Optional[int] = None, log_notify: bool = False,
                 on_write: Optional[Callable[[bytes, str], Any]] = None,
                 on_subscribe: Optional[Callable[[], Any]] = None,
                 on_unsubscribe: Optional[Callable[[], Any]] = None):
        self.uuid = full_uuid(uuid)
        self.flags = list(flags)
        self.value = bytes(value)
        self.can_notify = "notify" in self.flags or "indicate" in self.flags
        self.acquire_notify = acquire_notify and self.can_notify
        self.mtu = mtu
        self.log_notify = log_notify
        self.on_write = on_write
        self.on_subscribe = on_subscribe
        self.on_unsubscribe = on_unsubscribe
        self.path = ""
        self.service_path = ""
        self.bus = None
        self.notifying = False                 # a StartNotify session is open
        self.fd_sessions: list[socket.socket] = []   # AcquireNotify sockets (our ends)
        self.notifications_sent = 0

    @property
    def name(self) -> str:
        return short_uuid(self.uuid)

    @property
    def subscribed(self) -> bool:
        return self.notifying or bool(self.fd_sessions)

    # --- D-Bus export ---

    def export(self, bus, path: str, service_path: str) -> Exported:
        self.bus, self.path, self.service_path = bus, path, service_path
        methods = [
            Method("ReadValue", "a{sv}", "ay", self._read_value, ["options"], ["value"]),
            Method("WriteValue", "aya{sv}", "", self._write_value, ["value", "options"]),
        ]
        props = [
            Property("UUID", "s", lambda: self.uuid, emits_change=False),
            Property("Service", "o", lambda: self.service_path, emits_change=False),
            Property("Flags", "as", lambda: self.flags, emits_change=False),
            Property("Value", "ay", lambda: self.value),
        ]
        if self.can_notify:
            methods += [Method("StartNotify", "", "", self._start_notify),
                        Method("StopNotify", "", "", self._stop_notify),
                        Method("Confirm", "", "", self._confirm)]
            props.append(Property("Notifying", "b", lambda: self.notifying))
        if self.acquire_notify:
            # The property's presence is what tells BlueZ the server supports AcquireNotify.
            methods.append(Method("AcquireNotify", "a{sv}", "hq", self._acquire_notify, ["options"],
                                  ["fd", "mtu"]))
            props.append(Property("NotifyAcquired", "b", lambda: bool(self.fd_sessions)))
        if self.mtu is not None:
            props.append(Property("MTU", "q", lambda: self.mtu, emits_change=False))
        exported = Exported(bus, path)
        exported.add(CHAR_IFACE, methods, props)
        return exported

    # --- server operations ---

    async def notify(self, value: bytes) -> None:
        """Sends one notification to every subscriber (and updates Value, as a BlueZ server does)."""
        self.value = bytes(value)
        if not self.subscribed:
            return
        if self.notifying:
            emit_properties_changed(self.bus, self.path, CHAR_IFACE, {"Value": ("ay", self.value)})
        loop = asyncio.get_running_loop()
        for sock in list(self.fd_sessions):
            try:
                await loop.sock_sendall(sock, self.value)
            except OSError:
                self._end_fd_session(sock)
        self.notifications_sent += 1
        if self.log_notify:
            emit("notify", char=self.name, value=self.value.hex(), n=self.notifications_sent)

    def end_all_sessions(self) -> None:
        """bluetoothd went away: every session is gone with it."""
        for sock in list(self.fd_sessions):
            self._end_fd_session(sock)
        if self.notifying:
            self.notifying = False
            self._after_unsubscribe("StartNotify")

    # --- D-Bus handlers ---

    def _read_value(self, options: dict) -> bytes:
        if "read" not in self.flags:
            raise DBusError("org.bluez.Error.NotPermitted", "Read not permitted")
        offset = _option(options, "offset", 0)
        if offset > len(self.value):
            raise DBusError("org.bluez.Error.InvalidOffset", "Invalid offset")
        emit("read", char=self.name, value=self.value[offset:].hex())
        return self.value[offset:]

    async def _write_value(self, value: bytes, options: dict) -> None:
        wtype = _option(options, "type", None)
        if wtype is None:  # what bluetoothd picks when the client gives no type
            wtype = "request" if "write" in self.flags else "command"
        needed = {"request": "write", "command": "write-without-response", "reliable": "reliable-write"}.get(wtype)
        if needed is None or needed not in self.flags:
            raise DBusError("org.bluez.Error.NotPermitted", f"Write ({wtype}) not permitted")
        value = bytes(value)
        emit("write", char=self.name, value=value.hex(), type=wtype)
        if self.on_write is not None:
            result = self.on_write(value, wtype)
            if asyncio.iscoroutine(result):
                await result
        else:
            self.value = value

    async def _start_notify(self) -> None:
        if self.notifying:
            return
        self.notifying = True
        emit_properties_changed(self.bus, self.path, CHAR_IFACE, {"Notifying": ("b", True)})
        await self._after_subscribe("StartNotify")

    async def _stop_notify(self) -> None:
        if not self.notifying:
            return
        self.notifying = False
        emit_properties_changed(self.bus, self.path, CHAR_IFACE, {"Notifying": ("b", False)})
        self._after_unsubscribe("StartNotify")

    def _confirm(self) -> None:
        if "indicate" in self.flags:
            emit("confirm", char=self.name)

    async def _acquire_notify(self, options: dict) -> tuple[int, int]:
        mtu = self.mtu or _option(options, "mtu", 23)
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        ours.setblocking(False)
        self.fd_sessions.append(ours)
        loop = asyncio.get_running_loop()

        def on_readable():
            # The other end never sends notifications to us: a read is a confirmation (0x01) or the hang-up
            # that means the central unsubscribed or the link went down.
            try:
                data = ours.recv(16)
            except BlockingIOError:
                return
            except OSError:
                data = b""
            if not data:
                self._end_fd_session(ours)

        loop.add_reader(ours.fileno(), on_readable)
        fd = theirs.detach()
        loop.call_soon(os.close, fd)  # sd-bus duplicates it into the reply right after we return
        emit_properties_changed(self.bus, self.path, CHAR_IFACE, {"NotifyAcquired": ("b", True)})
        await self._after_subscribe("AcquireNotify")
        return fd, mtu

    def _end_fd_session(self, sock: socket.socket) -> None:
        if sock not in self.fd_sessions:
            return
        self.fd_sessions.remove(sock)
        try:
            asyncio.get_running_loop().remove_reader(sock.fileno())
        except (RuntimeError, ValueError):
            pass
        sock.close()
        if not self.fd_sessions and self.bus is not None:
            emit_properties_changed(self.bus, self.path, CHAR_IFACE, {"NotifyAcquired": ("b", False)})
        self._after_unsubscribe("AcquireNotify")

    async def _after_subscribe(self, via: str) -> None:
        emit("subscribed", char=self.name, via=via)
        first = (self.notifying + len(self.fd_sessions)) == 1
        if first and self.on_subscribe is not None:
            result = self.on_subscribe()
            if asyncio.iscoroutine(result):
                await result

    def _after_unsubscribe(self, via: str) -> None:
        emit("unsubscribed", char=self.name, via=via, sent=self.notifications_sent)
        if not self.subscribed and self.on_unsubscribe is not None:
            self.on_unsubscribe()


def _option(options: dict, key: str, default: Any) -> Any:
    v = options.get(key)
    if v is None:
        return default
    return v[1] if isinstance(v, tuple) else v


class Service:
    def __init__(self, uuid: str, characteristics: list[Characteristic], primary: bool = True):
        self.uuid = full_uuid(uuid)
        self.characteristics = characteristics
        self.primary = primary


class Advertisement:
    """LEAdvertisement1 (type "peripheral", or "broadcast" for a sensor that takes no connection; Discoverable true so
    scanners list it). `update` changes the data while registered: bluetoothd (and BlueZoo) follow the object's
    PropertiesChanged, so the next advertising report carries the new bytes."""

    def __init__(self, local_name: str, service_uuids: list[str], manufacturer_data: Optional[dict[int, bytes]] = None,
                 service_data: Optional[dict[str, bytes]] = None, adv_type: str = "peripheral"):
        self.local_name = local_name
        self.service_uuids = [full_uuid(u) for u in service_uuids]
        self.manufacturer_data = dict(manufacturer_data or {})
        self.service_data = {full_uuid(k): v for k, v in (service_data or {}).items()}
        self.adv_type = adv_type
        # "1M" (or "2M", "Coded"): an extended advertisement, for data over a legacy one's 31 bytes
        self.secondary_channel: Optional[str] = None
        self.bus = None
        self.path = ""

    def update(self, manufacturer_data: Optional[dict[int, bytes]] = None,
               service_data: Optional[dict[str, bytes]] = None) -> None:
        """New data (only the kinds the advertisement was exported with: the property set is fixed at export)."""
        changed = {}
        if manufacturer_data is not None:
            self.manufacturer_data = dict(manufacturer_data)
            changed["ManufacturerData"] = ("a{qv}", {k: ("ay", v) for k, v in self.manufacturer_data.items()})
        if service_data is not None:
            self.service_data = {full_uuid(k): v for k, v in service_data.items()}
            changed["ServiceData"] = ("a{sv}", {k: ("ay", v) for k, v in self.service_data.items()})
        if changed and self.bus is not None:
            emit_properties_changed(self.bus, self.path, ADV_IFACE, changed)

    def export(self, bus, path: str) -> Exported:
        self.bus, self.path = bus, path
        props = [
            Property("Type", "s", lambda: self.adv_type, emits_change=False),
            Property("ServiceUUIDs", "as", lambda: self.service_uuids),
            Property("Discoverable", "b", lambda: True),
        ]
        if self.local_name:
            props.append(Property("LocalName", "s", lambda: self.local_name))
        if self.secondary_channel:
            props.append(Property("SecondaryChannel", "s", lambda: self.secondary_channel, emits_change=False))
        if self.manufacturer_data:
            props.append(Property("ManufacturerData", "a{qv}",
                                  lambda: {k: ("ay", v) for k, v in self.manufacturer_data.items()}))
        if self.service_data:
            props.append(Property("ServiceData", "a{sv}",
                                  lambda: {k: ("ay", v) for k, v in self.service_data.items()}))
        exported = Exported(bus, path)
        exported.add(ADV_IFACE, [Method("Release", "", "", lambda: emit("advertisement_released"))], props)
        return exported


class PeripheralRunner:
    """Exports the application and advertisement, registers both on `adapter`, and registers them again
    whenever bluetoothd (org.bluez) comes back, as a well-behaved BlueZ peripheral does.

    stdin commands (one JSON object per line; answered with {"event":"done","cmd":…,"id":…}):
      {"cmd":"notify","char":"2a37","value":"0648"}   send one notification
      {"cmd":"set","char":"2a19","value":"50"}        change the value without notifying
      {"cmd":"advertise","on":false}                   stop / restart advertising

    `readvertise` > 0 (seconds) re-registers the advertisement that often while no central is connected to
    our adapter. Off by default (BlueZoo reports advertisements on every scan tick). Real controllers emulated
    by BlueZ's btvirt send an advertising report only at the moment advertising or scanning is switched on, so
    without it a central that starts scanning, or starts its connect's passive scan, after we registered
    would never hear from us.
    """

    APP_PATH = "/org/bench/app"
    ADV_PATH = "/org/bench/advertisement0"

    def __init__(self, adapter: str, services: list[Service], advertisement: Advertisement):
        """`services` empty: a broadcaster, which registers only its advertisement (bluetoothd refuses an empty
        GATT application)."""
        self.adapter = adapter
        self.adapter_path = f"/org/bluez/{adapter}"
        self.services = services
        self.advertisement = advertisement
        self.bus = None
        self.registered = False
        self.advertising = False
        self._register_task: Optional[asyncio.Task] = None
        self._stop = asyncio.Event()
        self._slots: list = []
        self._exports: list[Exported] = []
        self._om_slot = None
        self.readvertise = 0.0
        self._adv_lock = asyncio.Lock()
        # Extra stdin commands of a kind: name → coroutine function(cmd dict); and coroutines run for the process's
        # life once the bus is open (a broadcaster's ticker).
        self.commands: dict[str, Callable[[dict], Awaitable[None]]] = {}
        self.background: list[Callable[[], Awaitable[None]]] = []

    def characteristic(self, uuid: str) -> Characteristic:
        u = full_uuid(uuid)
        for s in self.services:
            for c in s.characteristics:
                if c.uuid == u:
                    return c
        raise KeyError(uuid)

    def all_characteristics(self) -> list[Characteristic]:
        return [c for s in self.services for c in s.characteristics]

    def _export(self) -> None:
        bus = self.bus
        self._om_slot = bus.add_object_manager(self.APP_PATH)
        for i, service in enumerate(self.services):
            spath = f"{self.APP_PATH}/service{i}"
            exp = Exported(bus, spath)
            exp.add(SERVICE_IFACE, [], [
                Property("UUID", "s", (lambda s=service: s.uuid), emits_change=False),
                Property("Primary", "b", (lambda s=service: s.primary), emits_change=False),
                Property("Includes", "ao", lambda: [], emits_change=False),
            ])
            self._exports.append(exp)
            for j, char in enumerate(service.characteristics):
                self._exports.append(char.export(bus, f"{spath}/char{j}", spath))
        self._exports.append(self.advertisement.export(bus, self.ADV_PATH))

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        self.bus = open_system_bus()
        self._export()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self._stop.set)
        self._slots.append(await subscribe(self.bus, self._on_name_owner_changed, "org.freedesktop.DBus",
                                           "/org/freedesktop/DBus", "org.freedesktop.DBus", "NameOwnerChanged"))
        self._listen_stdin(loop)
        self._register_task = loop.create_task(self._register())
        self._background_tasks = [loop.create_task(job()) for job in self.background]
        if self.readvertise > 0:
            loop.create_task(self._readvertise_loop())
        await self._stop.wait()
        await self._shutdown()

    async def _shutdown(self) -> None:
        """Graceful stop: unregister like a real application would, then leave the bus."""
        if self.registered:
            for member, path in (("UnregisterAdvertisement", self.ADV_PATH), ("UnregisterApplication", self.APP_PATH)):
                if member == "UnregisterApplication" and not self.services:
                    continue
                iface = "org.bluez.LEAdvertisingManager1" if "Advert" in member else "org.bluez.GattManager1"
                try:
                    await call(self.bus, BLUEZ, self.adapter_path, iface, member, "o", path, timeout=2)
                except DBusError:
                    pass
        emit("stopped")

    async def _register(self) -> None:
        # Wait for our adapter (after a bluetoothd restart the bench adds it again a moment later).
        while True:
            try:
                address = await get_property(self.bus, BLUEZ, self.adapter_path, "org.bluez.Adapter1", "Address",
                                             timeout=2)
                break
            except DBusError:
                await asyncio.sleep(0.05)
        try:
            if self.services:
                await self._call_when_exported("org.bluez.GattManager1", "RegisterApplication", self.APP_PATH)
            await self._call_when_exported("org.bluez.LEAdvertisingManager1", "RegisterAdvertisement", self.ADV_PATH)
        except DBusError as exc:
            emit("error", message=f"registration failed: {exc}")
            self._stop.set()
            return
        self.registered = True
        self.advertising = True
        emit("ready", adapter=self.adapter, address=address, name=self.advertisement.local_name)

    async def _call_when_exported(self, interface: str, member: str, path: str, wait: float = 10.0) -> None:
        """A registration call that waits for its interface: a (re)started bluetoothd exports Adapter1 first and
        adds LEAdvertisingManager1 a moment later, once the controller's advertising features are read."""
        deadline = asyncio.get_running_loop().time() + wait
        while True:
            try:
                await call(self.bus, BLUEZ, self.adapter_path, interface, member, "oa{sv}", path, {}, timeout=10)
                return
            except DBusError as exc:
                not_yet = exc.name in ("org.freedesktop.DBus.Error.UnknownMethod",
                                       "org.freedesktop.DBus.Error.UnknownInterface",
                                       "org.freedesktop.DBus.Error.UnknownObject")
                if not not_yet or asyncio.get_running_loop().time() > deadline:
                    raise
            await asyncio.sleep(0.1)

    async def _readvertise_loop(self) -> None:
        while True:
            await asyncio.sleep(self.readvertise)
            async with self._adv_lock:
                if not (self.registered and self.advertising):
                    continue
                try:
                    if await self._central_connected():
                        continue
                    try:
                        await call(self.bus, BLUEZ, self.adapter_path, "org.bluez.LEAdvertisingManager1",
                                   "UnregisterAdvertisement", "o", self.ADV_PATH, timeout=5)
                    except DBusError as exc:
                        # A registration that failed last round (e.g. while the adapter powered off) left
                        # nothing to unregister: register again all the same.
                        if exc.name != "org.bluez.Error.DoesNotExist":
                            raise
                    await call(self.bus, BLUEZ, self.adapter_path, "org.bluez.LEAdvertisingManager1",
                               "RegisterAdvertisement", "oa{sv}", self.ADV_PATH, {}, timeout=5)
                except DBusError as exc:
                    # Not an "error" event: bluetoothd may be restarting, and the next round tries again.
                    emit("readvertise_failed", message=str(exc))

    async def _central_connected(self) -> bool:
        prefix = self.adapter_path + "/dev_"
        objects = await managed_objects(self.bus, BLUEZ, "/", timeout=5)
        return any(path.startswith(prefix) and ifaces.get("org.bluez.Device1", {}).get("Connected")
                   for path, ifaces in objects.items())

    def _on_name_owner_changed(self, message) -> None:
        name, old, new = message.parse_to_tuple()
        if name != BLUEZ:
            return
        if old and not new:
            self.registered = False
            self.advertising = False
            for c in self.all_characteristics():
                c.end_all_sessions()
            emit("bluez_lost")
        elif new:
            if self._register_task is not None:
                self._register_task.cancel()
            self._register_task = asyncio.get_running_loop().create_task(self._register())

    def _listen_stdin(self, loop: asyncio.AbstractEventLoop) -> None:
        fd = sys.stdin.fileno()
        os.set_blocking(fd, False)
        buf = bytearray()

        def on_readable():
            nonlocal buf
            try:
                data = os.read(fd, 65536)
            except BlockingIOError:
                return
            if not data:  # the bench closed our stdin: nothing more to read; keep running
                loop.remove_reader(fd)
                return
            buf += data
            while b"\n" in buf:
                line, _, rest = bytes(buf).partition(b"\n")
                buf = bytearray(rest)
                if line.strip():
                    loop.create_task(self._command(line))

        try:
            loop.add_reader(fd, on_readable)
        except PermissionError:
            pass  # stdin is a regular file or /dev/null (not pollable): no commands then

    async def _command(self, line: bytes) -> None:
        try:
            cmd = json.loads(line)
            kind = cmd["cmd"]
            if kind == "notify":
                await self.characteristic(cmd["char"]).notify(bytes.fromhex(cmd["value"]))
            elif kind == "set":
                c = self.characteristic(cmd["char"])
                c.value = bytes.fromhex(cmd["value"])
                emit_properties_changed(self.bus, c.path, CHAR_IFACE, {"Value": ("ay", c.value)})
            elif kind == "advertise":
                await self._set_advertising(bool(cmd.get("on", True)))
            elif kind in self.commands:
                await self.commands[kind](cmd)
            else:
                raise ValueError(f"unknown command {kind!r}")
        except Exception as exc:  # noqa: BLE001 - reported to the test, which decides
            emit("error", message=f"command {line.decode(errors='replace')}: {exc}")
            return
        emit("done", cmd=kind, id=cmd.get("id"))

    async def _set_advertising(self, on: bool) -> None:
        async with self._adv_lock:
            if on == self.advertising:
                return
            member = "RegisterAdvertisement" if on else "UnregisterAdvertisement"
            args = ("oa{sv}", self.ADV_PATH, {}) if on else ("o", self.ADV_PATH)
            try:
                await call(self.bus, BLUEZ, self.adapter_path, "org.bluez.LEAdvertisingManager1", member, *args)
            except DBusError as exc:
                # Off is off: a re-registration that failed (see _readvertise_loop) left nothing registered.
                if on or exc.name != "org.bluez.Error.DoesNotExist":
                    raise
            self.advertising = on


class PeriodicNotifier:
    """Notifies `values(i)` on `char` at `rate` Hz while someone is subscribed; `count` > 0 stops after that
    many. The sequence restarts at index 0 with every new subscription, so tests can predict it."""

    def __init__(self, char: Characteristic, values: Callable[[int], bytes], rate: float, count: int = 0,
                 first_delay: Optional[float] = None):
        self.char = char
        self.values = values
        self.rate = rate
        self.count = count
        self.first_delay = first_delay
        self.task: Optional[asyncio.Task] = None
        char.on_subscribe = self.start
        char.on_unsubscribe = self.stop

    def start(self) -> None:
        if self.rate <= 0:
            return
        self.stop()
        self.task = asyncio.get_running_loop().create_task(self._run())

    def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
            self.task = None

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        period = 1.0 / self.rate
        start = loop.time() + (period if self.first_delay is None else self.first_delay)
        i = 0
        while self.count <= 0 or i < self.count:
            # Paced against the start time, so a slow iteration does not shift the whole sequence.
            delay = start + i * period - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            await self.char.notify(self.values(i))
            i += 1
        emit("notify_done", char=self.char.name, count=i)


def run(runner: PeripheralRunner, setup: Optional[Callable[[PeripheralRunner], Awaitable[None]]] = None) -> None:
    async def main():
        if setup is not None:
            await setup(runner)
        await runner.run()
    asyncio.run(main())
