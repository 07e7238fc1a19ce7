"""LED controller: one custom 128-bit service with one characteristic (read, write with response), one byte:
00 off, 01 on. Any other length is rejected with org.bluez.Error.InvalidValueLength, any other byte with
org.bluez.Error.Failed ("0x80", an application error), a write command with NotPermitted (no
write-without-response flag). Every accepted write and the start-up state are reported as
{"event":"state","led":"00"|"01"}.
"""

from __future__ import annotations

from typing import Optional

from bench.dbus_util import DBusError
from bench.peripherals.gatt import Advertisement, Characteristic, PeripheralRunner, Service, emit

SERVICE = "c0ffee00-1ed0-4c7a-9b1e-000000000001"
CHARACTERISTIC = "c0ffee00-1ed0-4c7a-9b1e-000000000002"
DEFAULT_NAME = "Bench LED"


def build(adapter: str, name: Optional[str] = None, initial: str = "00",
          manufacturer_data: Optional[dict[int, bytes]] = None, service_data: Optional[dict[str, bytes]] = None,
          **_ignored) -> PeripheralRunner:
    state = Characteristic(CHARACTERISTIC, ["read", "write"], bytes.fromhex(initial))

    def on_write(value: bytes, wtype: str) -> None:
        if len(value) != 1:
            raise DBusError("org.bluez.Error.InvalidValueLength", "Invalid value length")
        if value not in (b"\x00", b"\x01"):
            raise DBusError("org.bluez.Error.Failed", "0x80")
        state.value = value
        emit("state", led=value.hex())

    state.on_write = on_write
    adv = Advertisement(name or DEFAULT_NAME, [SERVICE], manufacturer_data, service_data)
    runner = PeripheralRunner(adapter, [Service(SERVICE, [state])], adv)
    emit("state", led=state.value.hex())
    return runner
