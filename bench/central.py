"""A synchronous BLE central for tests, speaking BlueZ's client API (org.bluez Adapter1/Device1/GATT) over D-Bus.

sd-bus is driven by an asyncio loop on one private thread; every public method hands a coroutine to it and
waits for the result with a deadline. Used by the bench itself (adapter management, readiness) and by the
bench self-tests. The connection opens the system bus, i.e. whatever DBUS_SYSTEM_BUS_ADDRESS names when
the BusThread starts.
"""

from __future__ import annotations

import asyncio
import queue
import socket
import threading
import time
from typing import Any, Callable, Optional, Union

from bench.dbus_util import (PROPS_IFACE, DBusError, call, get_all, get_property, managed_objects, open_system_bus,
                             subscribe, unvariant_dict)

BLUEZ = "org.bluez"
ADAPTER_IFACE = "org.bluez.Adapter1"
DEVICE_IFACE = "org.bluez.Device1"
SERVICE_IFACE = "org.bluez.GattService1"
CHAR_IFACE = "org.bluez.GattCharacteristic1"
BASE_UUID_TAIL = "-0000-1000-8000-00805f9b34fb"


def full_uuid(uuid: str) -> str:
    u = uuid.lower().removeprefix("0x")
    return f"0000{u}{BASE_UUID_TAIL}" if len(u) == 4 else (f"{u}{BASE_UUID_TAIL}" if len(u) == 8 else u)


def device_path(adapter: str, address: str) -> str:
    return f"/org/bluez/{adapter}/dev_{address.upper().replace(':', '_')}"


class BusThread:
    """An asyncio loop on a daemon thread owning one sd-bus connection."""

    def __init__(self):
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="bench-dbus", daemon=True)
        self._thread.start()
        self.bus = self.run(self._open())

    @staticmethod
    async def _open():
        return open_system_bus()

    def run(self, coro, timeout: float = 30.0) -> Any:
        """Runs a coroutine on the loop and waits for it (at most `timeout` seconds)."""
        fut = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return fut.result(timeout)
        except TimeoutError:
            fut.cancel()
            raise TimeoutError(f"D-Bus operation did not finish within {timeout}s") from None

    def call(self, destination: str, path: str, interface: str, member: str, signature: str = "", *args: Any,
             timeout: float = 10.0) -> tuple:
        return self.run(call(self.bus, destination, path, interface, member, signature, *args, timeout=timeout),
                        timeout + 1)

    def get_property(self, destination: str, path: str, interface: str, name: str, timeout: float = 10.0) -> Any:
        return self.run(get_property(self.bus, destination, path, interface, name, timeout=timeout), timeout + 1)

    def get_all(self, destination: str, path: str, interface: str, timeout: float = 10.0) -> dict:
        return self.run(get_all(self.bus, destination, path, interface, timeout=timeout), timeout + 1)

    def managed_objects(self, destination: str = BLUEZ, path: str = "/", timeout: float = 10.0) -> dict:
        return self.run(managed_objects(self.bus, destination, path, timeout=timeout), timeout + 1)

    def name_has_owner(self, name: str) -> bool:
        (has,) = self.call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "NameHasOwner",
                           "s", name)
        return bool(has)

    def subscribe(self, callback: Callable[[Any], None], sender: Optional[str] = None, path: Optional[str] = None,
                  interface: Optional[str] = None, member: Optional[str] = None):
        """callback(message) runs on the bus thread. Returns the match slot (`close()` via `unsubscribe`)."""
        return self.run(subscribe(self.bus, callback, sender, path, interface, member))

    def unsubscribe(self, slot) -> None:
        self.loop.call_soon_threadsafe(slot.close)

    def close(self) -> None:
        async def _close():
            self.bus.close()
        try:
            self.run(_close(), 5)
        except Exception:  # noqa: BLE001 - closing a broken connection
            pass
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)


class Notifications:
    """Values of one characteristic arriving as PropertiesChanged(Value) (the StartNotify path)."""

    def __init__(self):
        self.values: "queue.Queue[bytes]" = queue.Queue()
        self.slot = None

    def get(self, timeout: float = 10.0) -> bytes:
        try:
            return self.values.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError(f"no notification within {timeout}s") from None

    def take(self, n: int, timeout: float = 10.0) -> list[bytes]:
        deadline = time.monotonic() + timeout
        return [self.get(max(0.0, deadline - time.monotonic())) for _ in range(n)]


class Central:
    """The central side (hci0 by default), as gattbridge sees BlueZ."""

    def __init__(self, bus: Optional[BusThread] = None, adapter: str = "hci0"):
        self._own_bus = bus is None
        self.bus = bus or BusThread()
        self.adapter = adapter
        self.adapter_path = f"/org/bluez/{adapter}"

    def close(self) -> None:
        if self._own_bus:
            self.bus.close()

    # --- discovery / connection ---

    def start_discovery(self) -> None:
        self.bus.call(BLUEZ, self.adapter_path, ADAPTER_IFACE, "StartDiscovery")

    def stop_discovery(self) -> None:
        self.bus.call(BLUEZ, self.adapter_path, ADAPTER_IFACE, "StopDiscovery")

    def device_path(self, address: str) -> str:
        return device_path(self.adapter, address)

    def devices(self) -> dict[str, dict]:
        """address → Device1 properties, for every device under our adapter."""
        objs = self.bus.managed_objects()
        return {props[DEVICE_IFACE]["Address"]: props[DEVICE_IFACE] for path, props in objs.items()
                if DEVICE_IFACE in props and path.startswith(self.adapter_path + "/")}

    def wait_device(self, address: str, timeout: float = 10.0) -> dict:
        """Waits until the device is discovered; returns its Device1 properties."""
        return wait_until(lambda: self.devices().get(address.upper()), timeout, f"device {address} not discovered")

    def device(self, address: str) -> dict:
        return self.bus.get_all(BLUEZ, self.device_path(address), DEVICE_IFACE)

    def device_property(self, address: str, name: str) -> Any:
        return self.bus.get_property(BLUEZ, self.device_path(address), DEVICE_IFACE, name)

    def wait_property(self, address: str, name: str, value: Any, timeout: float = 10.0) -> None:
        wait_until(lambda: self.device_property(address, name) == value, timeout,
                   f"{address}.{name} never became {value!r}")

    def connect(self, address: str, timeout: float = 20.0) -> None:
        self.bus.call(BLUEZ, self.device_path(address), DEVICE_IFACE, "Connect", timeout=timeout)
        self.wait_property(address, "ServicesResolved", True, timeout)

    def disconnect(self, address: str, timeout: float = 10.0) -> None:
        self.bus.call(BLUEZ, self.device_path(address), DEVICE_IFACE, "Disconnect", timeout=timeout)

    # --- GATT ---

    def gatt(self, address: str) -> dict[str, dict]:
        """Object path → {interface: properties} for the device's services/characteristics/descriptors."""
        prefix = self.device_path(address) + "/"
        return {p: i for p, i in self.bus.managed_objects().items() if p.startswith(prefix)}

    def char_path(self, address: str, uuid: str, service: Optional[str] = None) -> str:
        objs = self.gatt(address)
        want = full_uuid(uuid)
        for path, ifaces in sorted(objs.items()):
            props = ifaces.get(CHAR_IFACE)
            if props is None or props["UUID"] != want:
                continue
            if service is not None and objs[props["Service"]][SERVICE_IFACE]["UUID"] != full_uuid(service):
                continue
            return path
        raise KeyError(f"{address} has no characteristic {uuid}")

    def char_properties(self, address: str, uuid: str) -> dict:
        return self.bus.get_all(BLUEZ, self.char_path(address, uuid), CHAR_IFACE)

    def read(self, address: str, uuid: str, timeout: float = 10.0) -> bytes:
        (value,) = self.bus.call(BLUEZ, self.char_path(address, uuid), CHAR_IFACE, "ReadValue", "a{sv}", {},
                                 timeout=timeout)
        return bytes(value)

    def write(self, address: str, uuid: str, value: bytes, type: Optional[str] = None, timeout: float = 10.0) -> None:
        options = {"type": ("s", type)} if type else {}
        self.bus.call(BLUEZ, self.char_path(address, uuid), CHAR_IFACE, "WriteValue", "aya{sv}", bytes(value),
                      options, timeout=timeout)

    def start_notify(self, address: str, uuid: str, timeout: float = 10.0) -> Notifications:
        """Subscribes to PropertiesChanged of the characteristic, then calls StartNotify."""
        path = self.char_path(address, uuid)
        n = Notifications()

        def on_signal(message):
            iface, changed, _ = message.parse_to_tuple()
            if iface == CHAR_IFACE and "Value" in changed:
                n.values.put(bytes(unvariant_dict(changed)["Value"]))

        n.slot = self.bus.subscribe(on_signal, BLUEZ, path, PROPS_IFACE, "PropertiesChanged")
        self.bus.call(BLUEZ, path, CHAR_IFACE, "StartNotify", timeout=timeout)
        return n

    def stop_notify(self, address: str, uuid: str, notifications: Optional[Notifications] = None) -> None:
        self.bus.call(BLUEZ, self.char_path(address, uuid), CHAR_IFACE, "StopNotify")
        if notifications is not None and notifications.slot is not None:
            self.bus.unsubscribe(notifications.slot)

    def acquire_notify(self, address: str, uuid: str, timeout: float = 10.0) -> tuple[socket.socket, int]:
        """AcquireNotify: returns (SOCK_SEQPACKET socket, MTU); every notification is one recv()."""
        fd, mtu = self.bus.call(BLUEZ, self.char_path(address, uuid), CHAR_IFACE, "AcquireNotify", "a{sv}", {},
                                timeout=timeout)
        # sdbus hands the received descriptor over to the caller: the socket owns it now.
        return socket.socket(fileno=fd), mtu


def wait_until(cond: Callable[[], Any], timeout: float, message: Union[str, Callable[[], str]] = "condition not met",
               interval: float = 0.02) -> Any:
    """Polls `cond` until it returns something truthy (returned) or the deadline passes (TimeoutError).
    Exceptions from `cond` count as "not yet" until the deadline; the last one is chained. A callable `message` is
    asked at the deadline, so it can say what the state was then."""
    deadline = time.monotonic() + timeout
    last_exc: Optional[BaseException] = None
    while True:
        try:
            result = cond()
            if result:
                return result
        except (DBusError, KeyError, OSError, TimeoutError) as exc:
            last_exc = exc
        if time.monotonic() >= deadline:
            text = message() if callable(message) else message
            raise TimeoutError(f"{text} (after {timeout}s)") from last_exc
        time.sleep(interval)
