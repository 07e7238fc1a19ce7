"""The bridge as a Home Assistant Bluetooth proxy (docs/home-assistant.md, "Bluetooth proxy"), spoken to by Home
Assistant's own ESPHome client, aioesphomeapi, on the simulated bench: what it says of itself, the advertisements it
forwards (parsed by bluetooth-data-tools, the parser Home Assistant's Bluetooth stack uses), its keys and its refusals,
and bad input that closes only its own connection.
"""
from __future__ import annotations

import asyncio
import socket
import subprocess
import time

import pytest
from aioesphomeapi import (APIConnectionError, InvalidEncryptionKeyAPIError, RequiresEncryptionAPIError,
                           EncryptionPlaintextAPIError)
from aioesphomeapi.core import BluetoothGATTAPIError
from aioesphomeapi.model import BluetoothProxyFeature, BluetoothScannerMode, BluetoothScannerState
from bluetooth_data_tools import parse_advertisement_data_bytes

from bench.bench import CENTRAL_ADDRESS
from bench.peripherals import heart_rate, led
from bridge_helpers import channel, device

BTHOME = "A4:C1:38:0B:71:01"
GOVEE = "A4:C1:38:0B:71:02"
TIMEOUT = 20.0


def address_int(address: str) -> int:
    return int(address.replace(":", ""), 16)


def run(coroutine):
    return asyncio.run(asyncio.wait_for(coroutine, 60))


async def wait_for(condition, what: str, timeout: float = TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


def test_device_info_names_the_proxy_its_address_and_features(proxy_bridge):
    proxy = proxy_bridge(name="bench-proxy")

    async def check():
        client = proxy.client()
        await client.connect(login=False)
        try:
            info = await client.device_info()
            assert info.name == "bench-proxy"
            assert info.mac_address == CENTRAL_ADDRESS
            assert info.bluetooth_mac_address == CENTRAL_ADDRESS
            assert info.project_name == "gattbridge.bridge"
            assert info.manufacturer == "gattbridge"
            flags = info.bluetooth_proxy_feature_flags_compat(client.api_version)
            assert flags == (BluetoothProxyFeature.PASSIVE_SCAN | BluetoothProxyFeature.ACTIVE_CONNECTIONS
                             | BluetoothProxyFeature.REMOTE_CACHING | BluetoothProxyFeature.PAIRING
                             | BluetoothProxyFeature.CACHE_CLEARING
                             | BluetoothProxyFeature.RAW_ADVERTISEMENTS | BluetoothProxyFeature.FEATURE_STATE_AND_MODE)
            assert info.api_encryption_supported
            entities, services = await client.list_entities_services()
            assert (entities, services) == ([], [])
            # Home Assistant subscribes to these on every node; a proxy has nothing to send, and stays connected.
            client.subscribe_states(lambda state: None)
            client.subscribe_logs(lambda message: None)
            assert (await client.device_info()).name == "bench-proxy"
        finally:
            await client.disconnect()
    run(check())
    proxy.bridge.assert_running()


def test_raw_advertisements_carry_the_broadcasters_bytes_and_rssi(bench, bluez, proxy_bridge):
    rssi = {BTHOME: -61, GOVEE: -74}
    for address, value in rssi.items():
        bluez.set_rssi(CENTRAL_ADDRESS, address, value)
    sensor = bench.broadcaster("bthome", BTHOME)
    govee = bench.broadcaster("govee", GOVEE)
    proxy = proxy_bridge()
    heard: list = []
    states: list = []

    async def check():
        client = proxy.client()
        await client.connect(login=False)
        try:
            client.subscribe_bluetooth_scanner_state(states.append)
            unsubscribe = client.subscribe_bluetooth_le_raw_advertisements(
                lambda response: heard.append([(a.address, a.rssi, a.address_type, bytes(a.data))
                                               for a in response.advertisements]))
            wanted = {address_int(BTHOME), address_int(GOVEE)}
            await wait_for(lambda: wanted <= {a[0] for batch in heard for a in batch}, "both broadcasters")
            # The state on subscribing, then every change: the scan runs once the bridge's discovery started.
            await wait_for(lambda: any(s.state == BluetoothScannerState.RUNNING for s in states), "a running scanner")
            unsubscribe()
        finally:
            await client.disconnect()
    run(check())

    assert all(len(batch) <= 16 for batch in heard)
    assert all(state.mode == BluetoothScannerMode.ACTIVE for state in states)
    for broadcaster, address in ((sensor, BTHOME), (govee, GOVEE)):
        sent = broadcaster.broadcasts()
        adverts = [a for batch in heard for a in batch if a[0] == address_int(address)]
        assert adverts
        matched = 0
        for _, heard_rssi, address_type, data in adverts:
            assert heard_rssi == rssi[address]
            assert address_type == 0        # BlueZoo's devices are public
            _, _, service_data, manufacturer_data, _ = parse_advertisement_data_bytes(data)
            service = {uuid[4:8]: value.hex() for uuid, value in service_data.items()}
            maker = {str(company): value.hex() for company, value in manufacturer_data.items()}
            if any(p["service_data"] == service and p["manufacturer_data"] == maker for p in sent):
                matched += 1
        assert matched == len(adverts), f"{address}: advertisements whose bytes no packet sent"
    proxy.bridge.assert_running()


def test_a_wrong_key_and_a_plaintext_client_are_refused_and_the_right_key_works(proxy_bridge):
    proxy = proxy_bridge()

    async def check():
        wrong = proxy.client(noise_psk="QRTIErOb/fcE9Ez4PGfPKzt/9vYIk5MZDJhOU3ZV+Mk=")
        with pytest.raises(InvalidEncryptionKeyAPIError):
            await wrong.connect(login=False)
        plain = proxy.client(noise_psk=None)
        with pytest.raises(RequiresEncryptionAPIError):
            await plain.connect(login=False)
        right = proxy.client()
        await right.connect(login=False)
        assert (await right.device_info()).mac_address == CENTRAL_ADDRESS
        await right.disconnect()
    run(check())
    proxy.bridge.assert_running()


def test_plaintext_on_loopback_and_an_encrypted_client_told_so(proxy_bridge):
    proxy = proxy_bridge(encryption=False)

    async def check():
        plain = proxy.client(noise_psk=None)
        await plain.connect(login=False)
        info = await plain.device_info()
        assert not info.api_encryption_supported
        await plain.disconnect()
        noisy = proxy.client(noise_psk="QRTIErOb/fcE9Ez4PGfPKzt/9vYIk5MZDJhOU3ZV+Mk=")
        with pytest.raises(EncryptionPlaintextAPIError):
            await noisy.connect(login=False)
    run(check())


def test_the_generated_key_is_kept_and_esphome_key_prints_it(proxy_bridge, gattbridge_bin):
    proxy = proxy_bridge(key_file=False)
    key_path = proxy.state_dir / "esphome-proxy.key"
    assert key_path.stat().st_mode & 0o777 == 0o600
    printed = subprocess.run([str(gattbridge_bin), "esphome-key", "--config", str(proxy.config)],
                             capture_output=True, text=True, timeout=30)
    assert printed.returncode == 0, printed.stderr
    assert printed.stdout.strip() == proxy.key
    # The key reaches the user through this command only: never the daemon's output.
    assert proxy.key not in proxy.bridge.process.stdout + proxy.bridge.process.stderr

    async def check():
        client = proxy.client()
        await client.connect(login=False)
        assert (await client.device_info()).bluetooth_mac_address == CENTRAL_ADDRESS
        await client.disconnect()
    run(check())


def raw_connection(port: int) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    return s


def closed_by_server(s: socket.socket) -> bool:
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                return True
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


def test_bad_input_closes_only_its_own_connection(proxy_bridge, mqtt):
    proxy = proxy_bridge(encryption=False)

    async def connected_client():
        client = proxy.client(noise_psk=None)
        await client.connect(login=False)
        return client

    async def check():
        good = await connected_client()
        # A length far above 64 KiB, a frame with no known marker, garbage after a good hello.
        for garbage in (b"\x00\xff\xff\xff\x7f", b"\x07hello", b"\x00\x00\x01" + b"\x00\x02\x09\xff\xff"):
            s = raw_connection(proxy.port)
            s.sendall(garbage)
            assert closed_by_server(s), garbage
            s.close()
        # A client that asks and never reads: closed once what waits for it passes its bound.
        flood = raw_connection(proxy.port)
        flood.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        hello = b"\x00\x00\x01"
        info = b"\x00\x00\x09"
        try:
            flood.sendall(hello + info * 200_000)
        except (BrokenPipeError, ConnectionResetError):
            pass
        flood.settimeout(20)
        assert closed_by_server(flood)
        flood.close()
        assert (await good.device_info()).mac_address == CENTRAL_ADDRESS
        await good.disconnect()
    run(check())
    proxy.bridge.assert_running()
    # The MQTT side went on: the bridge still answers its API.
    mark = mqtt.mark()
    mqtt.publish(proxy.bridge.topic("bridge", "request", "health"), "{}")
    mqtt.wait_for(proxy.bridge.topic("bridge", "response", "health"), None, 10, since=mark)


def test_the_proxy_is_announced_over_mdns_as_esphome_nodes_are(avahi, proxy_bridge, wait_until):
    proxy = proxy_bridge(name="bench-proxy")

    def announced():
        return [s for s in avahi.browse("_esphomelib._tcp") if s["name"] == "bench-proxy"]
    found = wait_until(announced, 20, "the proxy never appeared in avahi-browse")
    service = found[0]
    assert service["port"] == proxy.port
    txt = service["txt"]
    # Home Assistant's zeroconf flow keys the entry on `mac` (as DeviceInfo's mac_address) and asks for the key when
    # `api_encryption` is there.
    assert txt["mac"] == CENTRAL_ADDRESS.replace(":", "").lower()
    assert txt["api_encryption"] == "Noise_NNpsk0_25519_ChaChaPoly_SHA256"
    assert txt["platform"] == "linux" and txt["network"] in ("wifi", "ethernet")
    assert txt["project_name"] == "gattbridge.bridge" and txt["version"]
    assert txt["friendly_name"]
    proxy.bridge.process.stop()
    wait_until(lambda: not announced(), 20, "the proxy's announcement outlived the bridge")


STRAP = "C0:FF:EE:00:44:01"
LAMP = "C0:FF:EE:00:44:02"
CCCD = "00002902-0000-1000-8000-00805f9b34fb"


def full_uuid(short: str) -> str:
    return f"0000{short}-0000-1000-8000-00805f9b34fb"


def characteristic(services, uuid: str):
    return next(c for s in services.services for c in s.characteristics if c.uuid == uuid)


def layout(services) -> list:
    """Every handle with its UUID: what Home Assistant caches per address."""
    return [(s.uuid, s.handle, [(c.uuid, c.handle, c.properties, [(d.uuid, d.handle) for d in c.descriptors])
                                for c in s.characteristics]) for s in services.services]


class Connection:
    """One device through the proxy, as bleak-esphome drives it: connect without cache, then GATT by handle."""

    def __init__(self, client, address: str, flags: int):
        self.client, self.address, self.flags = client, address_int(address), flags
        self.states: list[tuple[bool, int, int]] = []

    async def connect(self) -> None:
        await self.client.bluetooth_device_connect(self.address, lambda *state: self.states.append(state),
                                                   address_type=0, feature_flags=self.flags, has_cache=False,
                                                   timeout=30)

    async def disconnect(self) -> None:
        await self.client.bluetooth_device_disconnect(self.address)


async def connected(proxy, *heard: str):
    """aioesphomeapi connected to the bridge, and the feature flags it read, as Home Assistant starts; once the devices
    `heard` came through its raw advertisements, as Home Assistant connects only to a device a proxy heard."""
    client = proxy.client()
    await client.connect(login=False)
    flags = (await client.device_info()).bluetooth_proxy_feature_flags_compat(client.api_version)
    if heard:
        seen: set = set()
        unsubscribe = client.subscribe_bluetooth_le_raw_advertisements(
            lambda response: seen.update(a.address for a in response.advertisements))
        await wait_for(lambda: {address_int(a) for a in heard} <= seen, f"{', '.join(heard)} heard through the proxy")
        unsubscribe()
    return client, flags


def test_connections_through_the_proxy_read_notify_write_and_free_their_slots(peripheral, proxy_bridge):
    strap = peripheral("heart_rate", STRAP)
    lamp = peripheral("led", LAMP)
    lamp.wait_for({"event": "state", "led": "00"})
    proxy = proxy_bridge()
    free: list = []

    async def check():
        client, flags = await connected(proxy, STRAP, LAMP)
        client.subscribe_bluetooth_connections_free(lambda f, limit, allocated: free.append((f, limit, list(allocated))))
        await wait_for(lambda: free and free[-1][:2] == (3, 3), "three free slots")

        first = Connection(client, STRAP, flags)
        await first.connect()
        assert first.states[-1][0] and first.states[-1][2] == 0, first.states
        await wait_for(lambda: free[-1] == (2, 3, [address_int(STRAP)]), "one slot taken")
        services = await client.bluetooth_gatt_get_services(first.address)
        battery = characteristic(services, full_uuid(heart_rate.BATTERY_LEVEL))
        assert await client.bluetooth_gatt_read(first.address, battery.handle) == bytes([87])
        measurement = characteristic(services, full_uuid(heart_rate.HEART_RATE_MEASUREMENT))
        # Every notifying characteristic lists its CCCD, which BlueZ does not export: bleak-esphome writes it.
        cccd = next(d for d in measurement.descriptors if d.uuid == CCCD)
        values: list[bytes] = []
        await client.bluetooth_gatt_start_notify(first.address, measurement.handle,
                                                 lambda handle, data: values.append(bytes(data)))
        await client.bluetooth_gatt_write_descriptor(first.address, cccd.handle, b"\x01\x00")
        await wait_for(lambda: len(values) >= 3, "three heart-rate notifications")
        assert values[:3] == [heart_rate.encoded(i) for i in range(3)]
        assert await client.bluetooth_gatt_read_descriptor(first.address, cccd.handle) == b"\x01\x00"
        # A handle nobody listed is an ATT error, not a dropped request.
        with pytest.raises(APIConnectionError):
            await client.bluetooth_gatt_read(first.address, 0xFFF0)

        second = Connection(client, LAMP, flags)
        await second.connect()
        lamp_services = await client.bluetooth_gatt_get_services(second.address)
        state = next(c for s in lamp_services.services for c in s.characteristics if c.uuid == led.CHARACTERISTIC)
        await client.bluetooth_gatt_write(second.address, state.handle, b"\x01", response=True)
        await asyncio.get_running_loop().run_in_executor(None, lambda: lamp.wait_for({"event": "state", "led": "01"}))
        await wait_for(lambda: free[-1][0] == 1, "two slots taken")

        await first.disconnect()
        await second.disconnect()
        await wait_for(lambda: free[-1] == (3, 3, []), "every slot free again")
        for connection in (first, second):
            assert [s for s in connection.states if not s[0]] == [(False, 0, 0)], connection.states

        # The same handles on a new connection: Home Assistant's cache of them stays right.
        again = Connection(client, STRAP, flags)
        await again.connect()
        assert layout(await client.bluetooth_gatt_get_services(again.address)) == layout(services)
        await again.disconnect()
        await client.disconnect()
    run(check())
    proxy.bridge.assert_running()


def test_a_lost_link_is_reported_once_and_its_slot_freed(bench, peripheral, proxy_bridge):
    strap = peripheral("heart_rate", STRAP)
    proxy = proxy_bridge()
    free: list = []

    async def check():
        client, flags = await connected(proxy, STRAP)
        client.subscribe_bluetooth_connections_free(lambda f, limit, allocated: free.append((f, limit, list(allocated))))
        link = Connection(client, STRAP, flags)
        await link.connect()
        assert link.states[-1][0]
        await asyncio.get_running_loop().run_in_executor(None, strap.stop)
        await wait_for(lambda: any(not s[0] for s in link.states), "the lost link reported")
        await wait_for(lambda: free and free[-1] == (3, 3, []), "its slot free")
        await client.device_info()  # a round trip: what the bridge sent before its answer has arrived
        assert len([s for s in link.states if not s[0]]) == 1, link.states
        await client.disconnect()
    run(check())


def test_a_device_of_the_config_is_refused_and_keeps_its_values_flowing(peripheral, proxy_bridge, mqtt):
    lamp = peripheral("led", LAMP)
    lamp.wait_for({"event": "state", "led": "00"})
    proxy = proxy_bridge(devices=[device("desk-led", LAMP, [channel("led", f"{led.SERVICE}/{led.CHARACTERISTIC}",
                                                                    "hex", mode="read", interval=1)])])
    proxy.bridge.wait_online(mqtt, "desk-led")

    async def check():
        client, flags = await connected(proxy)
        refused = Connection(client, LAMP, flags)
        await refused.connect()
        assert refused.states and not refused.states[-1][0] and refused.states[-1][2] != 0, refused.states
        await client.disconnect()
    run(check())
    mark = mqtt.mark()
    mqtt.wait_for(proxy.bridge.topic("desk-led", "led"), None, 10, since=mark)
    mqtt.wait_for(proxy.bridge.topic("desk-led", "availability"), lambda m: m.text == "online", 10)
    proxy.bridge.assert_running()


def test_pair_unpair_and_clear_cache_through_the_proxy(peripheral, central, proxy_bridge):
    peripheral("heart_rate", STRAP)
    lamp = peripheral("led", LAMP)
    lamp.wait_for({"event": "state", "led": "00"})
    # BlueZoo pairs just-works when the default agent is NoInputNoOutput (the daemon's, asked to be the default).
    proxy = proxy_bridge(default_agent=True)
    proxy.bridge.process.wait_for_line("pairing agent registered", stream="stderr")

    async def check():
        client, flags = await connected(proxy, STRAP, LAMP)
        link = Connection(client, STRAP, flags)
        await link.connect()
        paired = await client.bluetooth_device_pair(link.address)
        assert (paired.paired, paired.error) == (True, 0)
        assert central.device_property(STRAP, "Paired") is True
        # A bonded device's cache goes only with its bond: clearing it alone is refused, and its link goes on.
        cleared = await client.bluetooth_device_clear_cache(link.address)
        assert not cleared.success and cleared.error != 0
        services = await client.bluetooth_gatt_get_services(link.address)
        battery = characteristic(services, full_uuid(heart_rate.BATTERY_LEVEL))
        assert await client.bluetooth_gatt_read(link.address, battery.handle) == bytes([87])
        # Unpair answers first, then the link's end is reported (as ESPHome orders them), once.
        unpaired = await client.bluetooth_device_unpair(link.address)
        assert (unpaired.success, unpaired.error) == (True, 0)
        await wait_for(lambda: any(not s[0] for s in link.states), "the link ended by the unpair")
        assert len([s for s in link.states if not s[0]]) == 1, link.states
        # An unbonded device's cache: cleared (BlueZ forgets the device until it is heard again).
        plain = Connection(client, LAMP, flags)
        await plain.connect()
        assert plain.states[-1][0], plain.states
        await plain.disconnect()
        cleared = await client.bluetooth_device_clear_cache(plain.address)
        assert (cleared.success, cleared.error) == (True, 0)
        await client.disconnect()
    run(check())
    proxy.bridge.assert_running()


def test_a_flood_of_requests_is_answered_every_one_within_the_bound(peripheral, proxy_bridge):
    peripheral("heart_rate", STRAP)
    proxy = proxy_bridge()

    async def check():
        client, flags = await connected(proxy, STRAP)
        link = Connection(client, STRAP, flags)
        await link.connect()
        services = await client.bluetooth_gatt_get_services(link.address)
        battery = characteristic(services, full_uuid(heart_rate.BATTERY_LEVEL))
        # 200 reads at once: each is answered, the value or, past the requests the bridge works on for one client at
        # a time, "no resources" (0x80); none is dropped, none waits for a timeout.
        results = await asyncio.gather(*(client.bluetooth_gatt_read(link.address, battery.handle, timeout=20)
                                         for _ in range(200)), return_exceptions=True)
        values = [r for r in results if isinstance(r, (bytes, bytearray))]
        refused = [r for r in results if isinstance(r, BluetoothGATTAPIError)]
        assert len(values) + len(refused) == 200, [r for r in results if not isinstance(r, (bytes, bytearray))][:3]
        # (aioesphomeapi matches answers by address and handle: with one handle read 200 times at once, an early
        # refusal answers several of its waiters. Whether any is refused depends on how fast BlueZoo answers.)
        assert all(r.error.error == 0x80 for r in refused)
        assert all(v == bytes([87]) for v in values)
        # The link still serves once the flood's reads are worked off (another handle: answers to the flood may still
        # be on their way for this one); until then a request is refused "no resources", not queued.
        maker = characteristic(services, full_uuid(heart_rate.MANUFACTURER_NAME))
        deadline = time.monotonic() + TIMEOUT
        while True:
            try:
                assert await client.bluetooth_gatt_read(link.address, maker.handle) == heart_rate.MANUFACTURER.encode()
                break
            except BluetoothGATTAPIError as error:
                assert error.error.error == 0x80 and time.monotonic() < deadline, error
                await asyncio.sleep(0.05)
        await link.disconnect()
        await client.disconnect()
    run(check())
    proxy.bridge.assert_running()


def test_an_adapters_max_connections_caps_the_proxy_with_the_bridges_own(peripheral, proxy_bridge, mqtt):
    peripheral("heart_rate", STRAP)
    lamp = peripheral("led", LAMP)
    lamp.wait_for({"event": "state", "led": "00"})
    other = peripheral("led", "C0:FF:EE:00:44:03")
    other.wait_for({"event": "state", "led": "00"})
    # hci0 takes 2: the bridge's own lamp holds one, so the proxy gets one of its three slots' worth.
    proxy = proxy_bridge(max_connections=2, devices=[
        device("desk-led", LAMP, [channel("led", f"{led.SERVICE}/{led.CHARACTERISTIC}", "hex", mode="read",
                                          interval=5)])])
    proxy.bridge.wait_online(mqtt, "desk-led")

    async def check():
        client, flags = await connected(proxy, STRAP, "C0:FF:EE:00:44:03")
        first = Connection(client, STRAP, flags)
        await first.connect()
        assert first.states[-1][0], first.states
        second = Connection(client, "C0:FF:EE:00:44:03", flags)
        await second.connect()
        assert second.states[-1] == (False, 0, 0x80), second.states
        await first.disconnect()
        await second.connect()
        assert second.states[-1][0], second.states
        await second.disconnect()
        await client.disconnect()
    run(check())
    proxy.bridge.assert_running()


def test_the_bridge_stopping_closes_the_proxys_links(peripheral, central, proxy_bridge):
    peripheral("heart_rate", STRAP)
    proxy = proxy_bridge()

    async def check():
        client, flags = await connected(proxy, STRAP)
        link = Connection(client, STRAP, flags)
        await link.connect()
        assert link.states[-1][0]
        assert central.device_property(STRAP, "Connected") is True
        # The client stays connected while the bridge stops: the bridge's own stop closes the link.
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, proxy.bridge.process.stop)
        assert proxy.bridge.process.returncode == 0
        await wait_for(lambda: central.device_property(STRAP, "Connected") is False, "the link closed by the stop")
    run(check())
