"""Small asyncio helpers over sdbus's low-level API, shared by the peripherals and the test central.

Why the low-level API: sdbus's class-based interfaces allow one Python class per D-Bus interface
name per process, so a characteristic could not omit `NotifyAcquired`/`AcquireNotify` when the
peripheral wants to force the StartNotify path. Building vtables by hand (`SdBusInterface`) lets
every object export exactly the members it supports, as a real BlueZ application does.

Everything here runs on one asyncio loop; sd-bus objects are not thread-safe.
"""

from __future__ import annotations

import asyncio
import inspect
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import sdbus
from sdbus.sd_bus_internals import SdBus, SdBusInterface, SdBusMessage

PROPS_IFACE = "org.freedesktop.DBus.Properties"
OM_IFACE = "org.freedesktop.DBus.ObjectManager"


class DBusError(Exception):
    """An error reply: `name` is the D-Bus error name (e.g. org.bluez.Error.NotPermitted)."""

    def __init__(self, name: str, message: str = ""):
        super().__init__(f"{name}: {message}")
        self.name = name
        self.message = message


def unvariant(value: Any) -> Any:
    """Strips one variant layer, as sdbus returns variants as (signature, value) tuples."""
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], str):
        return value[1]
    return value


def unvariant_dict(d: dict) -> dict:
    """a{sv} (or a{qv}) → plain dict."""
    return {k: unvariant(v) for k, v in d.items()}


def open_system_bus() -> SdBus:
    """The system bus; sd-bus honours DBUS_SYSTEM_BUS_ADDRESS, which the bench points at its private daemon."""
    bus = sdbus.sd_bus_open_system()
    # The default sd-bus method timeout is 25 s; keep it, callers pass their own deadlines.
    return bus


def _error_from(exc: BaseException) -> DBusError:
    if isinstance(exc, DBusError):
        return exc
    if isinstance(exc, sdbus.SdBusBaseError):
        # sdbus maps well-known names to classes and keeps (name, message) for unmapped ones.
        name = getattr(exc, "dbus_error_name", None)
        if name is None and exc.args and isinstance(exc.args[0], str) and "." in exc.args[0]:
            name = exc.args[0]
            text = exc.args[1] if len(exc.args) > 1 else ""
            return DBusError(name, str(text))
        return DBusError(name or "org.freedesktop.DBus.Error.Failed", str(exc.args[0]) if exc.args else str(exc))
    return DBusError("org.freedesktop.DBus.Error.Failed", repr(exc))


async def call(bus: SdBus, destination: str, path: str, interface: str, member: str,
               signature: str = "", *args: Any, timeout: float = 10.0) -> tuple:
    """One method call; returns the reply's arguments as a tuple; raises DBusError."""
    msg = bus.new_method_call_message(destination, path, interface, member)
    if signature:
        msg.append_data(signature, *args)
    try:
        async with asyncio.timeout(timeout):
            reply = await bus.call_async(msg)
    except TimeoutError:
        raise DBusError("org.freedesktop.DBus.Error.NoReply", f"{member} timed out after {timeout}s")
    except Exception as exc:  # noqa: BLE001 - re-raised as our own error type
        raise _error_from(exc) from exc
    return reply.parse_to_tuple()


async def get_property(bus: SdBus, destination: str, path: str, interface: str, name: str,
                       timeout: float = 10.0) -> Any:
    (value,) = await call(bus, destination, path, PROPS_IFACE, "Get", "ss", interface, name, timeout=timeout)
    return unvariant(value)


async def get_all(bus: SdBus, destination: str, path: str, interface: str, timeout: float = 10.0) -> dict:
    (props,) = await call(bus, destination, path, PROPS_IFACE, "GetAll", "s", interface, timeout=timeout)
    return unvariant_dict(props)


async def managed_objects(bus: SdBus, destination: str, path: str = "/", timeout: float = 10.0) -> dict:
    """path → interface → {property: plain value}."""
    (objs,) = await call(bus, destination, path, OM_IFACE, "GetManagedObjects", timeout=timeout)
    return {p: {i: unvariant_dict(props) for i, props in ifaces.items()} for p, ifaces in objs.items()}


async def subscribe(bus: SdBus, callback: Callable[[SdBusMessage], None], sender: Optional[str] = None,
                    path: Optional[str] = None, interface: Optional[str] = None,
                    member: Optional[str] = None):
    """Adds a match rule; returns the slot (keep a reference; `.close()` removes the match)."""
    return await bus.match_signal_async(sender, path, interface, member, callback)


def emit_properties_changed(bus: SdBus, path: str, interface: str, changed: dict[str, tuple[str, Any]],
                            invalidated: tuple[str, ...] = ()) -> None:
    """Sends PropertiesChanged carrying the new values (as BlueZ does for Value and Notifying)."""
    msg = bus.new_signal_message(path, PROPS_IFACE, "PropertiesChanged")
    msg.append_data("sa{sv}as", interface, changed, list(invalidated))
    msg.send()


@dataclass
class Method:
    """One exported method. `handler(*args)` may be sync or async; it returns None, one value,
    or a tuple for several out-arguments, and raises DBusError for an error reply."""
    name: str
    in_sig: str
    out_sig: str
    handler: Callable[..., Any]
    in_names: list[str] = field(default_factory=list)
    out_names: list[str] = field(default_factory=list)
    no_reply: bool = False


@dataclass
class Property:
    """One exported read-only property; `getter()` returns the plain value."""
    name: str
    sig: str
    getter: Callable[[], Any]
    emits_change: bool = True


class Exported:
    """One object path's exported interfaces; `stop()` removes them from the bus."""

    def __init__(self, bus: SdBus, path: str):
        self.bus = bus
        self.path = path
        self._interfaces: list[SdBusInterface] = []
        self._tasks: set[asyncio.Task] = set()

    def add(self, interface: str, methods: list[Method] = (), properties: list[Property] = ()) -> None:
        iface = SdBusInterface()
        for m in methods:
            flags = sdbus.DbusUnprivilegedFlag | (sdbus.DbusNoReplyFlag if m.no_reply else 0)
            in_names = m.in_names or [f"a{i}" for i in range(_count_args(m.in_sig))]
            out_names = m.out_names or [f"r{i}" for i in range(_count_args(m.out_sig))]
            iface.add_method(m.name, m.in_sig, in_names, m.out_sig, out_names, flags,
                             self._method_callback(m))
        for p in properties:
            flags = sdbus.DbusPropertyEmitsChangeFlag if p.emits_change else 0
            iface.add_property(p.name, p.sig, self._getter(p), None, flags)
        self.bus.add_interface(iface, self.path, interface)
        self._interfaces.append(iface)

    def stop(self) -> None:
        for iface in self._interfaces:
            iface._stop_export()
        self._interfaces.clear()

    @staticmethod
    def _getter(p: Property):
        def get(message: SdBusMessage) -> None:
            message.append_data(p.sig, p.getter())
        return get

    def _method_callback(self, m: Method):
        def on_call(message: SdBusMessage) -> None:
            task = asyncio.get_running_loop().create_task(self._run(m, message))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        return on_call

    @staticmethod
    async def _run(m: Method, message: SdBusMessage) -> None:
        try:
            result = m.handler(*message.parse_to_tuple())
            if inspect.isawaitable(result):
                result = await result
        except Exception as exc:  # noqa: BLE001 - every failure becomes an error reply
            if message.expect_reply:
                err = _error_from(exc)
                message.create_error_reply(err.name, err.message).send()
            return
        if not message.expect_reply:
            return
        reply = message.create_reply()
        if m.out_sig:
            if isinstance(result, tuple):
                reply.append_data(m.out_sig, *result)
            else:
                reply.append_data(m.out_sig, result)
        reply.send()


def _count_args(sig: str) -> int:
    """Number of complete types in a signature (for argument names)."""
    count, i = 0, 0
    while i < len(sig):
        i = _skip_type(sig, i)
        count += 1
    return count


def _skip_type(sig: str, i: int) -> int:
    c = sig[i]
    if c == "a":
        return _skip_type(sig, i + 1)
    if c in "({":
        close = ")" if c == "(" else "}"
        i += 1
        while sig[i] != close:
            i = _skip_type(sig, i)
        return i + 1
    return i + 1

