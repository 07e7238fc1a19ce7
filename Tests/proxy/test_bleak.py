"""An unmodified `bleak.BleakClient` through the bridge's Bluetooth proxy, wired as Home Assistant wires its ESPHome
nodes (docs/home-assistant.md, "Bluetooth proxy"): aioesphomeapi's ReconnectLogic connects to the proxy, bleak-esphome's
`connect_scanner` builds the remote scanner and its connector, habluetooth's `BluetoothManager` registers it and
installs its bleak wrapper, and an integration's plain `BleakClient(address)` is routed through the proxy to the bench's
peripherals.

The manager has no local adapters: a fake `BluetoothAdapters` lists none, the kernel management socket is not opened,
and D-Bus points nowhere while Home Assistant's side runs, so neither the machine's Bluetooth nor BlueZoo's adapters
(the bench's bus) can stand in for the proxy.
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
import time

import pytest
from aioesphomeapi import ReconnectLogic
from bleak_esphome import connect_scanner
from bleak_esphome.backend.client import ESPHomeClient
from bleak_esphome.backend.scanner import ESPHomeScanner
from bluetooth_adapters import BluetoothAdapters
import habluetooth.manager
from habluetooth import BluetoothManager, HaBleakClientWrapper, get_manager, set_manager
from habluetooth.central_manager import CentralBluetoothManager
from habluetooth.usage import uninstall_multiple_bleak_catcher

from bench.bench import CENTRAL_ADDRESS
from bench.peripherals import heart_rate, led

STRAP = "C0:FF:EE:00:44:01"
LAMP = "C0:FF:EE:00:44:02"
SLOTS = 3             # the bridge's default connection_slots
TIMEOUT = 20.0
NOWHERE = "unix:path=/nonexistent/gattbridge-test-no-system-bus"


def full_uuid(short: str) -> str:
    return f"0000{short}-0000-1000-8000-00805f9b34fb"


async def wait_for(condition, what: str, timeout: float = TIMEOUT):
    deadline = time.monotonic() + timeout
    while not (result := condition()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)
    return result


class NoAdapters(BluetoothAdapters):
    """No local adapter: Home Assistant on a host whose only Bluetooth is the proxy."""

    @property
    def adapters(self) -> dict:
        return {}

    @property
    def default_adapter(self) -> str:
        return "hci0"


class NoManagementSocket:
    """Stands in for habluetooth's kernel management channel (local adapters only); refused as in a container
    without NET_ADMIN, which habluetooth handles as "no local recovery"."""

    def __init__(self, *args, **kwargs) -> None:
        pass

    async def setup(self) -> None:
        raise PermissionError("the test uses no local Bluetooth")

    def close(self) -> None:
        pass


class HomeAssistantBluetooth(BluetoothManager):
    """Home Assistant's manager subclass, reduced to recording what its integrations would be offered."""

    def __init__(self) -> None:
        super().__init__(NoAdapters())
        self.discovered: dict[str, object] = {}

    def _discover_service_info(self, service_info) -> None:
        self.discovered[service_info.address] = service_info


class ProxyNode:
    """Home Assistant's ESPHome entry for the bridge: ReconnectLogic and, on each connect, the scanner set up and
    registered as homeassistant/components/esphome/bluetooth.py does through bleak-esphome."""

    def __init__(self, proxy) -> None:
        self.cli = proxy.client()
        self.client_data = None
        self.connected = asyncio.Event()
        self._teardown: list = []
        self.logic = ReconnectLogic(client=self.cli, on_connect=self._on_connect, on_disconnect=self._on_disconnect,
                                    name=None, zeroconf_wake=False)

    async def _on_connect(self) -> None:
        info = await self.cli.device_info()
        self.client_data = connect_scanner(self.cli, info, True)
        scanner = self.client_data.scanner
        self._teardown = [scanner.async_setup(), get_manager().async_register_scanner(scanner)]
        self.connected.set()

    async def _on_disconnect(self, expected: bool) -> None:
        if self.client_data is not None:
            self.client_data.bluetooth_device.async_set_unavailable()
            for callback in list(self.client_data.disconnect_callbacks):
                callback()
        for undo in reversed(self._teardown):
            undo()
        self._teardown = []

    async def start(self) -> None:
        await self.logic.start()
        await asyncio.wait_for(self.connected.wait(), TIMEOUT)

    async def stop(self) -> None:
        await self.logic.stop()
        await self.cli.disconnect()
        await self._on_disconnect(True)


@pytest.fixture
def no_local_bluetooth(monkeypatch):
    """Home Assistant's side gets no adapter, no management socket and no system bus."""
    monkeypatch.setattr(habluetooth.manager, "MGMTBluetoothCtl", NoManagementSocket)

    def isolate() -> None:
        # Called once the bench runs: its processes and its own bus connection keep the bench's bus.
        monkeypatch.setenv("DBUS_SYSTEM_BUS_ADDRESS", NOWHERE)
    yield isolate
    CentralBluetoothManager.manager = None
    uninstall_multiple_bleak_catcher()   # bleak's own classes for whatever runs next in this process


@contextlib.asynccontextmanager
async def home_assistant(proxy):
    """Home Assistant's Bluetooth stack with the bridge as its only proxy, connected and its scanner registered."""
    manager = HomeAssistantBluetooth()
    set_manager(manager)
    await manager.async_setup()
    node = ProxyNode(proxy)
    try:
        assert await manager.async_get_bluetooth_adapters() == {}
        await node.start()
        scanners = manager.async_current_scanners()
        assert len(scanners) == 1 and isinstance(scanners[0], ESPHomeScanner)
        scanner = scanners[0]
        assert (scanner.source, scanner.name, scanner.connectable) == \
            (CENTRAL_ADDRESS, f"bench-proxy ({CENTRAL_ADDRESS})", True)
        yield manager, node
    finally:
        await node.stop()
        manager.async_stop()


def allocations(manager):
    """The proxy's slots as Home Assistant shows them: (free, slots, allocated addresses)."""
    current = manager.async_current_allocations(CENTRAL_ADDRESS)
    return (current[0].free, current[0].slots, sorted(current[0].allocated)) if current else None


def bleak_esphome_complaints(caplog) -> list[str]:
    """bleak-esphome checks the proxy's answers against each other (slot accounting, connection states)."""
    return [r.getMessage() for r in caplog.records if r.name.startswith("bleak_esphome") and r.levelno >= logging.WARNING]


def test_an_unmodified_bleak_client_reads_notifies_and_writes_through_the_proxy(bluez, peripheral, proxy_bridge,
                                                                              no_local_bluetooth, caplog):
    # As a radio would hear them (BlueZoo's own 0 is no RSSI to Home Assistant's path scoring).
    bluez.set_rssi(CENTRAL_ADDRESS, STRAP, -58)
    bluez.set_rssi(CENTRAL_ADDRESS, LAMP, -64)
    proxy = proxy_bridge(name="bench-proxy")
    no_local_bluetooth()
    caplog.set_level(logging.DEBUG, logger="bleak_esphome")
    caplog.set_level(logging.DEBUG, logger="habluetooth")

    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        async with home_assistant(proxy) as (manager, node):
            await wait_for(lambda: allocations(manager) == (SLOTS, SLOTS, []), "the proxy's free slots in habluetooth")
            # The peripherals power on while Home Assistant listens: the bridge forwards what BlueZ reports from then
            # on (a device already known whose advertisement never changes is the next test's gap).
            await loop.run_in_executor(None, peripheral, "heart_rate", STRAP)
            lamp = await loop.run_in_executor(None, peripheral, "led", LAMP)
            await loop.run_in_executor(None, lambda: lamp.wait_for({"event": "state", "led": "00"}))

            # Heard through the proxy's raw advertisements, as an integration's discovery sees it.
            heard = await wait_for(lambda: manager.discovered.get(STRAP), "the strap heard through the proxy")
            assert heard.source == CENTRAL_ADDRESS and heard.connectable and heard.rssi == -58
            assert heard.name == heart_rate.DEFAULT_NAME
            assert full_uuid(heart_rate.HEART_RATE_SERVICE) in heard.service_uuids
            await wait_for(lambda: manager.async_ble_device_from_address(LAMP, True), "the lamp heard")

            import bleak  # the name an integration uses, looked up now that habluetooth wrapped it
            assert bleak.BleakClient is HaBleakClientWrapper
            disconnected = asyncio.Event()
            client = bleak.BleakClient(STRAP, disconnected_callback=lambda _: disconnected.set(), timeout=TIMEOUT)
            await asyncio.wait_for(client.connect(), TIMEOUT)
            assert client.is_connected
            assert isinstance(client._backend, ESPHomeClient)   # routed through the proxy, not a local adapter
            await wait_for(lambda: allocations(manager) == (SLOTS - 1, SLOTS, [STRAP]), "one slot taken")

            battery = full_uuid(heart_rate.BATTERY_LEVEL)
            assert await asyncio.wait_for(client.read_gatt_char(battery), TIMEOUT) == bytes([87])
            manufacturer = await asyncio.wait_for(client.read_gatt_char(full_uuid(heart_rate.MANUFACTURER_NAME)), TIMEOUT)
            assert manufacturer.decode() == heart_rate.MANUFACTURER
            values: list[bytes] = []
            measurement = full_uuid(heart_rate.HEART_RATE_MEASUREMENT)
            await asyncio.wait_for(client.start_notify(measurement, lambda _, data: values.append(bytes(data))),
                                   TIMEOUT)
            await wait_for(lambda: len(values) >= 3, "three heart-rate notifications")
            assert values[:3] == [heart_rate.encoded(i) for i in range(3)]
            await asyncio.wait_for(client.stop_notify(measurement), TIMEOUT)

            # Most integrations connect as bleak-retry-connector's docs say: the BLEDevice Home Assistant offers,
            # establish_connection and its client class, which habluetooth wrapped too.
            import bleak_retry_connector
            lamp_device = manager.async_ble_device_from_address(LAMP, True)
            lamp_client = await asyncio.wait_for(bleak_retry_connector.establish_connection(
                bleak_retry_connector.BleakClientWithServiceCache, lamp_device, led.DEFAULT_NAME, max_attempts=1),
                TIMEOUT)
            assert isinstance(lamp_client, HaBleakClientWrapper) and isinstance(lamp_client._backend, ESPHomeClient)
            await wait_for(lambda: allocations(manager) == (SLOTS - 2, SLOTS, sorted([STRAP, LAMP])),
                           "two slots taken")
            assert await asyncio.wait_for(lamp_client.read_gatt_char(led.CHARACTERISTIC), TIMEOUT) == b"\x00"
            await asyncio.wait_for(lamp_client.write_gatt_char(led.CHARACTERISTIC, b"\x01", response=True), TIMEOUT)
            await loop.run_in_executor(None, lambda: lamp.wait_for({"event": "state", "led": "01"}))
            assert await asyncio.wait_for(lamp_client.read_gatt_char(led.CHARACTERISTIC), TIMEOUT) == b"\x01"

            await asyncio.wait_for(client.disconnect(), TIMEOUT)
            await asyncio.wait_for(lamp_client.disconnect(), TIMEOUT)
            assert not client.is_connected and not lamp_client.is_connected
            await wait_for(lambda: allocations(manager) == (SLOTS, SLOTS, []), "every slot free again")
            assert node.client_data.bluetooth_device.ble_connections_free == SLOTS
            # The disconnect reaches the integration's callback, as with bleak's own BlueZ backend.
            await asyncio.wait_for(disconnected.wait(), TIMEOUT)

    asyncio.run(asyncio.wait_for(scenario(), 120))
    proxy.bridge.assert_running()
    assert bleak_esphome_complaints(caplog) == []


# BlueZ reports a device again only when what it advertises changes (or its RSSI moves 8 dBm): the bridge sends a
# client that subscribes what is around now (Sources/Bridge/Proxy/AdvertisementCache.swift).
def test_a_device_heard_before_home_assistant_restarts_is_offered_to_its_new_session(bluez, peripheral, proxy_bridge,
                                                                                   no_local_bluetooth):
    bluez.set_rssi(CENTRAL_ADDRESS, LAMP, -64)
    proxy = proxy_bridge(name="bench-proxy")
    no_local_bluetooth()

    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        async with home_assistant(proxy) as (manager, _):
            # Powered on while the first session listens: proves the bridge heard it (and the scan never stops).
            lamp = await loop.run_in_executor(None, peripheral, "led", LAMP)
            await loop.run_in_executor(None, lambda: lamp.wait_for({"event": "state", "led": "00"}))
            await wait_for(lambda: manager.async_ble_device_from_address(LAMP, True), "the lamp heard")
        # Home Assistant restarts. The lamp advertises all the time; an ESPHome proxy passes on its next packet.
        async with home_assistant(proxy) as (manager, _):
            await wait_for(lambda: manager.async_ble_device_from_address(LAMP, True), "the lamp offered again",
                           timeout=10)

    asyncio.run(asyncio.wait_for(scenario(), 60))
