"""Button: one custom 128-bit service with one notify-only characteristic that carries one byte per action:
01 press, 02 double press, 03 long press (ACTIONS). Nothing is sent on its own: the test presses the button with
the stdin command {"cmd":"notify","char":CHARACTERISTIC,"value":"01"} (bench.Peripheral.notify), and every
notification sent is reported as {"event":"notify",…}. A press while no central is subscribed is lost, as it is
on a real button.
"""

from __future__ import annotations

from typing import Optional

from bench.peripherals.gatt import Advertisement, Characteristic, PeripheralRunner, Service

SERVICE = "c0ffee00-1ed0-4c7a-9b1e-000000000010"
CHARACTERISTIC = "c0ffee00-1ed0-4c7a-9b1e-000000000011"
DEFAULT_NAME = "Bench Button"

# Action name → the byte the button notifies; the names are the event types of a config's `values` map.
ACTIONS = {"press": b"\x01", "double_press": b"\x02", "long_press": b"\x03"}


def build(adapter: str, name: Optional[str] = None, acquire_notify: bool = True,
          manufacturer_data: Optional[dict[int, bytes]] = None, service_data: Optional[dict[str, bytes]] = None,
          mtu: Optional[int] = None, **_ignored) -> PeripheralRunner:
    button = Characteristic(CHARACTERISTIC, ["notify"], b"\x00", acquire_notify=acquire_notify, log_notify=True,
                            mtu=mtu)
    adv = Advertisement(name or DEFAULT_NAME, [SERVICE], manufacturer_data, service_data)
    return PeripheralRunner(adapter, [Service(SERVICE, [button])], adv)
