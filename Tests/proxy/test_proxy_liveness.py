"""The proxy under load keeps the bridge alive (docs/operating.md, "The watchdog"): with the daemon under the shipped
unit's watchdog scaled down (a pet every second), a broadcaster at 5 Hz forwarded to a subscribed Home Assistant
client while another client floods requests as fast as it can (and reads the answers) must not delay a pet, nor
cost the broker its keepalive."""
from __future__ import annotations

import asyncio
import socket
import threading
import time

from bench.bench import SdNotifyListener
from test_liveness import RUN_SECONDS, WATCHDOG_USEC, assert_no_keepalive_drop, assert_pets_every_second, watch_pets

from test_proxy import address_int, connected, run

SENSOR = "A4:C1:38:0B:72:01"


def flood(port: int, stop: threading.Event, answered: list[int]) -> None:
    """Hello, then Ping after Ping in batches, reading every answer: a client that is busy, not stalled."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(b"\x00\x05\x01\x0a\x03abc")                # HelloRequest(client_info="abc")
        batch = b"\x00\x00\x07" * 2000                          # 2,000 PingRequests
        while not stop.is_set():
            s.sendall(batch)
            got = 0
            while got < 3 * 2000:                               # each PingResponse is 3 bytes
                chunk = s.recv(65536)
                if not chunk:
                    return
                got += len(chunk)
            answered[0] += 2000


def test_a_flooding_client_and_forwarded_adverts_keep_the_watchdog(bench, proxy_bridge, mosquitto):
    bench.broadcaster("bthome", SENSOR, interval=0.2)
    notify = SdNotifyListener(bench.workdir)
    try:
        env = dict(notify.env, WATCHDOG_USEC=str(WATCHDOG_USEC))
        proxy = proxy_bridge(encryption=False, env=env)
        notify.wait_for("READY", "1", timeout=20)
        stop, answered = threading.Event(), [0]
        flooder = threading.Thread(target=flood, args=(proxy.port, stop, answered), daemon=True)
        heard: list[int] = []

        async def listen():
            client, _ = await connected(proxy, SENSOR)
            client.subscribe_bluetooth_le_raw_advertisements(
                lambda response: heard.extend(a.address for a in response.advertisements))
            flooder.start()
            loop = asyncio.get_running_loop()
            gaps = await loop.run_in_executor(None, watch_pets, notify, proxy.bridge.process, RUN_SECONDS)
            stop.set()
            await client.disconnect()
            return gaps
        gaps = run(listen())
        flooder.join(10)
        assert_pets_every_second(gaps, "with a flooding proxy client and forwarded advertisements")
        assert answered[0] > 10_000, f"the flood was answered only {answered[0]} times"
        # (BlueZoo reports a device once per scan tick, a second: about one a second whatever the sensor sends.)
        assert heard.count(address_int(SENSOR)) >= RUN_SECONDS * 0.8, "the subscribed client stopped hearing the sensor"
        assert_no_keepalive_drop(mosquitto)
        assert "not petting the watchdog" not in proxy.bridge.process.stderr
    finally:
        notify.close()
