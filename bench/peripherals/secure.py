"""Secure sensor: a peripheral that talks only over an authenticated (passkey-paired) link, like a lock or a
thermostat. One custom service with one characteristic flagged `encrypt-authenticated-read` and
`encrypt-authenticated-notify` (bluetoothd enforces them: an unpaired read gets ATT error 0x05, an unauthenticated
subscription is refused); its value is one byte, 0x2a, and while subscribed it notifies a counter (00, 01, …) at
`rate` Hz.

The peripheral's side of pairing is its own `org.bluez.Agent1`, registered as bluetoothd's default agent with
capability KeyboardOnly, answering `RequestPasskey` with `passkey` (with the central's agent also KeyboardOnly, SMP has
both sides enter the same passkey, so the test knows it). Every passkey request is reported as
{"event":"passkey_request","device":…}, so a test can count pairing attempts; {"event":"agent_ready"} follows
each registration (again after a bluetoothd restart).

One bluetoothd serves both sides in the real-BlueZ guest, and as the default agent this one is also asked for the
*central's* side of a pairing that bluetoothd starts by itself (raising a link's security after an ATT
authentication error). It refuses those, as a headless host with no agent of its own would, and reports them as
{"event":"foreign_request",…}: only requests about devices seen from its own adapter get the passkey.
"""

from __future__ import annotations

from typing import Optional

from bench.dbus_util import DBusError, Exported, Method, call
from bench.peripherals.gatt import (BLUEZ, Advertisement, Characteristic, PeriodicNotifier, PeripheralRunner,
                                    Service, emit)

SERVICE = "c0ffee00-1ed0-4c7a-9b1e-000000000020"
CHARACTERISTIC = "c0ffee00-1ed0-4c7a-9b1e-000000000021"
DEFAULT_NAME = "Bench Lock"
DEFAULT_PASSKEY = 246810
AGENT_PATH = "/org/bench/agent"
AGENT_IFACE = "org.bluez.Agent1"


class SecureRunner(PeripheralRunner):
    def __init__(self, adapter: str, services: list[Service], advertisement: Advertisement, passkey: int):
        super().__init__(adapter, services, advertisement)
        self.passkey = passkey

    def _export(self) -> None:
        super()._export()
        agent = Exported(self.bus, AGENT_PATH)
        agent.add(AGENT_IFACE, [
            Method("Release", "", "", lambda: emit("agent_released")),
            Method("RequestPasskey", "o", "u", self._request_passkey, ["device"], ["passkey"]),
            Method("RequestConfirmation", "ou", "", lambda device, passkey: emit("confirmation_request", device=device),
                   ["device", "passkey"]),
            Method("RequestAuthorization", "o", "", lambda device: emit("authorization_request", device=device),
                   ["device"]),
            Method("AuthorizeService", "os", "", lambda device, uuid: None, ["device", "uuid"]),
            Method("Cancel", "", "", lambda: emit("agent_cancel")),
        ])
        self._exports.append(agent)

    def _request_passkey(self, device: str) -> int:
        if not device.startswith(self.adapter_path + "/"):
            emit("foreign_request", device=device)
            raise DBusError("org.bluez.Error.Rejected", "not a pairing of this peripheral")
        emit("passkey_request", device=device)
        return self.passkey

    async def _register(self) -> None:
        await super()._register()
        if not self.registered:
            return
        try:
            # In pairing mode: without Pairable, the kernel refuses the central's pairing request outright.
            await call(self.bus, BLUEZ, self.adapter_path, "org.freedesktop.DBus.Properties", "Set", "ssv",
                       "org.bluez.Adapter1", "Pairable", ("b", True), timeout=10)
            await call(self.bus, BLUEZ, "/org/bluez", "org.bluez.AgentManager1", "RegisterAgent", "os", AGENT_PATH,
                       "KeyboardOnly", timeout=10)
            await call(self.bus, BLUEZ, "/org/bluez", "org.bluez.AgentManager1", "RequestDefaultAgent", "o",
                       AGENT_PATH, timeout=10)
        except DBusError as exc:
            emit("error", message=f"agent registration failed: {exc}")
            return
        emit("agent_ready")


def build(adapter: str, name: Optional[str] = None, passkey: Optional[int] = None, rate: float = 2.0,
          manufacturer_data: Optional[dict[int, bytes]] = None, service_data: Optional[dict[str, bytes]] = None,
          **_ignored) -> PeripheralRunner:
    secret = Characteristic(CHARACTERISTIC, ["read", "notify", "encrypt-authenticated-read",
                                             "encrypt-authenticated-notify"], b"\x2a", acquire_notify=False)
    PeriodicNotifier(secret, lambda i: bytes([i % 256]), rate)
    adv = Advertisement(name or DEFAULT_NAME, [SERVICE], manufacturer_data, service_data)
    return SecureRunner(adapter, [Service(SERVICE, [secret])], adv, DEFAULT_PASSKEY if passkey is None else passkey)
