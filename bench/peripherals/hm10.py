"""HM-10 serial module: service FFE0, characteristic FFE1 (read, write-without-response, notify), MTU 23.

Bytes written to FFE1 are buffered; each time a full line (ending in the delimiter, default "\\n") has arrived
it is echoed back, delimiter included, as notifications of at most 20 bytes (MTU 23 − 3), in order.
Events: {"event":"write",…} for every write and {"event":"line","text":…} for every complete line.
"""

from __future__ import annotations

from typing import Optional

from bench.peripherals.gatt import Advertisement, Characteristic, PeripheralRunner, Service, emit

SERVICE = "ffe0"
CHARACTERISTIC = "ffe1"
DEFAULT_NAME = "HMSoft"
CHUNK = 20


def echo_chunks(line: bytes) -> list[bytes]:
    """The notifications the module sends for one received line (delimiter included)."""
    return [line[i:i + CHUNK] for i in range(0, len(line), CHUNK)]


class Echo:
    def __init__(self, delimiter: bytes):
        self.delimiter = delimiter
        self.buffer = b""
        self.char: Optional[Characteristic] = None

    async def on_write(self, value: bytes, wtype: str) -> None:
        self.buffer += value
        while self.delimiter in self.buffer:
            line, _, self.buffer = self.buffer.partition(self.delimiter)
            emit("line", text=line.decode("utf-8", errors="replace"), hex=line.hex())
            for chunk in echo_chunks(line + self.delimiter):
                await self.char.notify(chunk)


def build(adapter: str, name: Optional[str] = None, acquire_notify: bool = True, log_notify: bool = False,
          delimiter: str = "\n", mtu: Optional[int] = 23, manufacturer_data: Optional[dict[int, bytes]] = None,
          service_data: Optional[dict[str, bytes]] = None, **_ignored) -> PeripheralRunner:
    echo = Echo(delimiter.encode())
    char = Characteristic(CHARACTERISTIC, ["read", "write-without-response", "notify"], b"",
                          acquire_notify=acquire_notify, mtu=mtu, log_notify=log_notify, on_write=echo.on_write)
    echo.char = char
    adv = Advertisement(name or DEFAULT_NAME, [SERVICE], manufacturer_data, service_data)
    return PeripheralRunner(adapter, [Service(SERVICE, [char])], adv)
