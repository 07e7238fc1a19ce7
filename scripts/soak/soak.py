"""`make soak DURATION=600`: notifications and commands flow through the release gattbridge while random faults are
injected; at the end a report, and a non-zero exit on any crash or on QoS 1 messages lost outside the faults that
legitimately lose them.

Flow: two stamp peripherals (scripts/bench/stamp_peripheral.py; one on the fd path, one on the signal path) notify
at SOAK_RATE Hz each (default 20); every notification carries (stream id, sequence number, send time). A `set`
command goes to the HM-10 every second; it echoes the line back as notifications, so every command makes a round
trip. The subscriber keeps a persistent MQTT session (clean start off, session never expires) on a broker with
persistence, so a broker restart loses nothing on the subscriber's side either.

Faults, one every SOAK_FAULT_INTERVAL seconds (default 20, ±30 % jitter), in a shuffled rotation:
  peripheral   a stamp peripheral is killed (link loss) and returns 1–4 s later (its new process starts a new stream)
  bluez        BlueZoo is killed and restarted (a bluetoothd crash); peripherals register again by themselves
  mosquitto    the broker is stopped and restarted 1–3 s later
  sighup       SIGHUP: the daemon reloads its (unchanged) config: RELOADING=1 … READY=1, no device interrupted
  bad_command  malformed commands: invalid UTF-8, unknown device/channel, not writable, oversized (256 KiB), bad verb
  bad_serial   the HM-10 notifies invalid UTF-8 and an over-long line (4 KiB without delimiter)
  retained_command  a `set` published with the retain flag (forwarded live: it runs once) sits on the broker while
               the broker restarts and the bridge resubscribes: it must never run again (one echo only, checked over
               the whole run) and commands keep working
  huge_publish a 50 MB `set`: refused by the broker's limit or dropped by the bridge, never held in memory
  get_flood    2,000 `get`s at once on the HM-10's channel: coalesced (one read pending), a command right after
               them still makes its round trip
  adapter_off  the central adapter the devices use is powered off (Adapter1.Powered): every device reconnects
               through the second central adapter (docs/adapters.md); the first is powered on again afterwards
  birth_flood  20,000 Home Assistant birth messages (`homeassistant/status` `online`) at QoS 0: coalesced into a
               few republishes; the daemon's RSS stays below 64 MB and a command makes its round trip within 60 s
               (sent again every 5 s: one published while the flood drains may be dropped, by design)
  forged_fleet_record  what any broker client could write on the fleet's topics: a handover request from a bridge
               that does not exist, a retained owner record naming a lower id that is no bridge, and `offline` on
               the daemon's own `B/bridge/<id>/state`: within 30 s the record and the state are the daemon's again
               and both stamp streams flow
  adapter_wedged  that adapter is wedged (bench/bluezoo_patched.py's Bench1.Wedge: StartDiscovery and Connect fail
               until a power cycle) and a stamp peripheral restarts, so its reconnection goes through the wedged
               adapter: the daemon detects the wedge (window shortened to SOAK_WEDGE_WINDOW s, default 10, through
               GATTBRIDGE_WEDGE_WINDOW), power-cycles the adapter, and every device flows again

The daemon uses two central adapters (hci0 and a second one the soak adds), listed in `bluetooth.adapters`.

Beside the stamps, the traffic systemd's watchdog must survive: a heart-rate strap notifying at SOAK_QOS0_RATE Hz
(default 10) on a `qos: 0` channel, and a BTHome broadcaster heard twice a second (`adverts:` on). The daemon runs as
under systemd's watchdog: WATCHDOG_USEC is set (SOAK_WATCHDOG_SEC, default 10) and a pet later than that gets the
daemon a SIGABRT, as systemd would send it, which fails the run.

Losses: notifications the peripheral sent while the bridge was subscribed, not received by the subscriber. Those
that were in the air when a peripheral or BlueZoo died are lost with the link (BLE has no retransmission across a
link loss) and are reported apart ("lost with the link"); every other loss, including across broker restarts and
reloads, counts against the bridge. Duplicates (QoS 1 allows them) and reordering are reported. Every command must
come back as the HM-10's echo, except one sent in the last 2 s before BlueZoo was killed (its write or echo was in
the air) or before a broker restart (the bridge's MQTT session is clean: the broker keeps no command for it while it
is disconnected).

A failed run keeps its evidence before the bench's directory is removed: every process's log (the daemon's at
SOAK_LOG_LEVEL, default notice; BlueZoo's, the broker's, the peripherals'), the soak's timeline and its fault log, in
`<out-dir>/soak-failed-<time>/` (path printed with the report). BENCH_KEEP=1 keeps the whole bench directory.

    .venv/bin/python scripts/soak/soak.py --duration 600 [--seed N]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import shutil
import signal
import statistics
import sys
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Optional

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

from common import (BASE, MOSQUITTO_EXTRA, REPO, World, gattbridge_binary, machine, sample,  # noqa: E402
                    save_results, unstamp, write_config)
from bench.bench import Mosquitto, persistent_broker_config  # noqa: E402

FAULTS = ["peripheral", "bluez", "mosquitto", "sighup", "bad_command", "bad_serial", "retained_command",
          "huge_publish", "get_flood", "adapter_off", "adapter_wedged", "birth_flood", "forged_fleet_record"]
FLEET_ID = "soak"               # the daemon is a fleet of one, so forged fleet records have something to hit
RSS_LIMIT_KB = 64 * 1024
LINK_FAULTS = {"peripheral", "bluez", "adapter_off", "adapter_wedged"}
SECOND_CENTRAL = "00:00:00:00:0A:02"
STRAP_ADDRESS = "C0:FF:EE:00:0A:11"
PORCH_ADDRESS = "A4:C1:38:0B:0A:01"


TIMELINE: list[str] = []       # what log() printed, UTC-stamped as the daemon's lines are: kept with a failed run's logs


def log(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)
    TIMELINE.append(f"{datetime.now(timezone.utc).isoformat(timespec='milliseconds')} {text}")


class Subscriber:
    """paho, MQTT 5, persistent session (clean start off, no expiry), QoS 1 on bench/#; reconnects by itself."""

    def __init__(self, host: str, port: int):
        import paho.mqtt.client as mqtt
        from paho.mqtt.properties import Properties
        from paho.mqtt.packettypes import PacketTypes
        self.mqtt = mqtt
        self.messages: list[tuple[float, str, bytes]] = []
        self.lock = threading.Lock()
        self.connected = threading.Event()
        self.client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="soak-subscriber",
                                  protocol=mqtt.MQTTv5)
        props = Properties(PacketTypes.CONNECT)
        props.SessionExpiryInterval = 0xFFFFFFFF
        self.client.on_connect = self._on_connect
        self.client.on_disconnect = lambda *a, **k: self.connected.clear()
        self.client.on_message = self._on_message
        self.client.reconnect_delay_set(0.2, 1)
        self.client.connect(host, port, clean_start=False, properties=props)
        self.client.loop_start()
        if not self.connected.wait(10):
            raise TimeoutError("soak subscriber did not connect")

    def _on_connect(self, client, userdata, flags, reason_code, properties=None):
        client.subscribe(f"{BASE}/#", qos=1)
        self.connected.set()

    def _on_message(self, client, userdata, msg):
        with self.lock:
            self.messages.append((time.monotonic(), msg.topic, bytes(msg.payload)))

    def since(self, index: int) -> list[tuple[float, str, bytes]]:
        with self.lock:
            return self.messages[index:]

    def mark(self) -> int:
        with self.lock:
            return len(self.messages)

    def wait_for(self, pred, timeout: float, since: int = 0) -> Optional[tuple[float, str, bytes]]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for m in self.since(since):
                if pred(m):
                    return m
            time.sleep(0.05)
        return None

    def publish(self, topic: str, payload: bytes, qos: int = 1, retain: bool = False) -> None:
        self.client.publish(topic, payload, qos=qos, retain=retain)

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


class Soak:
    def __init__(self, duration: float, rate: float, fault_interval: float, seed: int, faults: list[str] = FAULTS):
        self.duration, self.rate, self.fault_interval = duration, rate, fault_interval
        self.faults = faults
        self.rng = random.Random(seed)
        self.seed = seed
        self.world = World()
        b = self.world.bench
        # The world's broker has no persistence; the soak needs one that keeps sessions across restarts.
        self.world.broker.stop()
        self.broker = Mosquitto(b.workdir, b.log_dir, self.world.broker.port, extra_config=MOSQUITTO_EXTRA +
                                persistent_broker_config(b.workdir / "mosquitto-data"))
        b.brokers.append(self.broker)
        self.broker.start()
        self.world.broker = self.broker
        # A second central adapter for the adapter faults (docs/adapters.md), listed with hci0 (BlueZoo's peripherals are
        # adapters too, which the daemon must not use as centrals).
        self.central2 = b.bluez.add_adapter(SECOND_CENTRAL)
        # The watchdog's load: a fast QoS 0 channel and a broadcaster.
        self.qos0_rate = float(os.environ.get("SOAK_QOS0_RATE", 10))
        self.strap = b.peripheral("heart_rate", STRAP_ADDRESS, rate=self.qos0_rate)
        self.porch = b.broadcaster("bthome", PORCH_ADDRESS, interval=0.5)
        write_config(self.world.config, self.broker.port, extra_devices=f"""\
  - name: strap
    address: "{STRAP_ADDRESS}"
    channels:
      - {{ name: heart_rate, characteristic: "2a37", codec: heart_rate_measurement, qos: 0 }}
  - name: porch
    address: "{PORCH_ADDRESS}"
    advert: bthome
""")
        with open(self.world.config, "a") as f:
            f.write(f"bluetooth:\n  adapters: [hci0, {self.central2}]\nbridge:\n  id: {FLEET_ID}\n"
                    f"adverts:\n  enabled: true\n")
        self.watchdog_sec = float(os.environ.get("SOAK_WATCHDOG_SEC", 10))
        self.watchdog_aborts: list[dict] = []
        self.watching = threading.Event()
        # Home Assistant discovery on, for the birth flood.
        self.world.config.write_text(self.world.config.read_text().replace("homeassistant:\n  enabled: false",
                                                                           "homeassistant:\n  enabled: true", 1))
        self.wedge_window = float(os.environ.get("SOAK_WEDGE_WINDOW", 10))
        self.log_level = os.environ.get("SOAK_LOG_LEVEL", "notice")
        self.sub = Subscriber(self.broker.host, self.broker.port)
        self.notify = b.sd_notify_listener()
        self.stream_ids = {"fd": 0, "sig": 0}
        self.next_stream = 100
        self.streams: dict[int, dict] = {}       # stream id → {"path", "produced" (None when killed), "start"}
        self.windows: list[tuple[str, float, float]] = []   # (fault kind, start, end) of faults that lose in the air
        self.retained_lines: set[str] = set()      # retained commands published: echoed once (live), never replayed
        self.flood_windows: list[tuple[float, float]] = []   # (start, end) of birth floods: commands may be dropped
        self.broker_windows: list[tuple[float, float]] = []  # (start, end) of broker restarts: commands can't reach us
        self.recovery: dict[str, list[float]] = {k: [] for k in FAULTS}
        self.fault_log: list[dict] = []
        self.crashes: list[dict] = []
        self.rss: list[tuple[float, int, int, int, int]] = []
        self.commands_sent: dict[str, float] = {}
        self.command_n = 0
        self.gb = None
        self.t_start = 0.0
        # Stamps carry CLOCK_REALTIME; faults are timed on the monotonic clock. The offset turns one into the other.
        self.realtime_offset = time.time() - time.monotonic()

    # --- processes ---

    def start_gattbridge(self) -> None:
        self.started_at = time.monotonic()
        self.gb = self.world.start_gattbridge(env={**self.notify.env, "GATTBRIDGE_WEDGE_WINDOW": str(self.wedge_window),
                                                   "WATCHDOG_USEC": str(int(self.watchdog_sec * 1e6))},
                                              log_level=self.log_level)

    def watch_the_watchdog(self) -> None:
        """As systemd does: once the daemon said READY, a pet at least every WATCHDOG_USEC, or SIGABRT. The daemon
        is then restarted by `check_alive` (as systemd's Restart= would), and the abort fails the run."""
        seen = 0
        started, ready, last = None, False, 0.0
        while self.watching.is_set():
            gb = self.gb
            if self.started_at != started:
                started, ready, last = self.started_at, False, self.started_at
            new = self.notify.since(seen)
            seen += len(new)
            for m in new:
                if m["_t"] < started:
                    continue
                if m.get("READY") == "1":
                    ready = True
                if m.get("READY") == "1" or m.get("WATCHDOG") == "1":
                    last = max(last, m["_t"])
            late = time.monotonic() - last
            if gb is not None and gb.running and ready and late > self.watchdog_sec:
                log(f"WATCHDOG: no pet for {late:.1f} s; SIGABRT (as systemd would)")
                self.watchdog_aborts.append({"t": round(time.monotonic() - self.t_start, 1), "late_s": round(late, 1),
                                             "stderr_tail": gb.stderr_lines[-20:]})
                try:
                    os.kill(gb.pid, signal.SIGABRT)
                    gb.wait(10)
                except (ProcessLookupError, Exception):  # noqa: BLE001 - gone already, or slow to die: check_alive sees it
                    pass
                ready = False
            time.sleep(0.1)

    def check_alive(self) -> None:
        if self.gb is not None and not self.gb.running:
            rc = self.gb.returncode
            self.crashes.append({"t": round(time.monotonic() - self.t_start, 1), "exit": rc,
                                 "stderr_tail": self.gb.stderr_lines[-20:]})
            log(f"gattbridge EXITED with {rc}; restarting it (as systemd would)")
            self.start_gattbridge()

    def peripheral(self, path: str):
        return self.world.fd if path == "fd" else self.world.sig

    def start_stream(self, path: str) -> None:
        sid = self.next_stream
        self.next_stream += 1
        self.stream_ids[path] = sid
        self.streams[sid] = {"path": path, "produced": None, "start": time.monotonic()}
        self.peripheral(path).send({"cmd": "stream", "id": sid, "rate": self.rate})

    def halt_stream(self, path: str, timeout: float = 10) -> None:
        p = self.peripheral(path)
        sid = self.stream_ids[path]
        mark = p.mark()
        p.send({"cmd": "halt"})
        done = p.wait_for(lambda e: e.get("event") == "burst_done" and e.get("id") == sid, timeout, since=mark)
        self.streams[sid]["produced"] = done["count"]

    # --- recovery probes ---

    def wait_flow(self, path: str, since: int, timeout: float = 90, sent_after: float = 0.0) -> Optional[float]:
        """Time at which a stamp from the current stream of `path`, sent after monotonic time `sent_after`, arrived
        after mark `since`."""
        sid = self.stream_ids[path]
        topic = f"{BASE}/{path}/stamp"

        def fresh(m):
            if m[1] != topic:
                return False
            try:
                stream, _, sent = unstamp(bytes.fromhex(m[2].decode()))
            except ValueError:
                return False
            return stream == sid and sent / 1e9 - self.realtime_offset > sent_after
        m = self.sub.wait_for(fresh, timeout, since)
        return m[0] if m else None

    # --- adapters ---

    def adapter_in_use(self) -> str:
        """The adapter most devices are on, from the retained B/bridge/devices."""
        listing = [m for m in self.sub.since(0) if m[1] == f"{BASE}/bridge/devices"]
        adapters = collections.Counter(d["adapter"] for d in json.loads(listing[-1][2])) if listing else {}
        return max(adapters, key=adapters.get) if adapters else "hci0"

    def adapter_of(self, device: str) -> Optional[str]:
        """The adapter the device is placed on, from the retained B/bridge/devices."""
        listing = [m for m in self.sub.since(0) if m[1] == f"{BASE}/bridge/devices"]
        placed = {d["name"]: d["adapter"] for d in json.loads(listing[-1][2])} if listing else {}
        return placed.get(device)

    def devices_on(self, adapter: str) -> list[str]:
        """The connected devices placed on `adapter` (a passive one is heard by every adapter and never goes offline
        for one of them)."""
        listing = [m for m in self.sub.since(0) if m[1] == f"{BASE}/bridge/devices"]
        return [d["name"] for d in json.loads(listing[-1][2])
                if d["adapter"] == adapter and d["name"] != "porch"] if listing else []

    def back_online(self, devices: list[str], mark: int, timeout: float = 90) -> Optional[float]:
        """Each device went offline after `mark` and came online again: the time the last one did."""
        times = []
        for device in devices:
            topic = f"{BASE}/{device}/availability"
            down = self.sub.wait_for(lambda m: m[1] == topic and m[2] == b"offline", timeout, mark)
            if down is None:
                return None
            start = next(i for i, m in enumerate(self.sub.since(0)) if m is down)
            up = self.sub.wait_for(lambda m: m[1] == topic and m[2] == b"online", timeout, start)
            if up is None:
                return None
            times.append(up[0])
        return max(times, default=time.monotonic())

    def set_powered(self, adapter: str, on: bool) -> None:
        self.world.bench.bus.call("org.bluez", f"/org/bluez/{adapter}", "org.freedesktop.DBus.Properties", "Set",
                                  "ssv", "org.bluez.Adapter1", "Powered", ("b", on))

    def all_flowing(self, mark: int, after: float, timeout: float = 90) -> Optional[float]:
        """Both stamp streams deliver values sent after `after`, and the HM-10's last availability is online: the
        time the last of them arrived."""
        times = [self.wait_flow(p, mark, timeout=timeout, sent_after=after) for p in ("fd", "sig")]
        if not all(times):
            return None
        deadline = time.monotonic() + timeout
        while True:
            seen = [m for m in self.sub.since(mark) if m[1] == f"{BASE}/hm10/availability"]
            if not seen or seen[-1][2] == b"online":
                return max(times + [seen[-1][0]] if seen else times)
            if time.monotonic() > deadline:
                return None
            time.sleep(0.2)     # the subscriber's thread appends messages; this re-reads them until the deadline

    # --- faults ---

    def fault(self, kind: str) -> None:
        t0 = time.monotonic()
        mark = self.sub.mark()
        detail: dict = {"kind": kind, "t": round(t0 - self.t_start, 1),
                        "at": datetime.now(timezone.utc).isoformat(timespec="milliseconds")}
        log(f"fault {kind} at t={detail['t']} s")
        recovered: Optional[float] = None
        if kind == "peripheral":
            path = self.rng.choice(["fd", "sig"])
            detail["device"] = path
            p = self.peripheral(path)
            p.kill()
            time.sleep(self.rng.uniform(1, 4))
            p.start()
            self.start_stream(path)
            t_back = time.monotonic()
            recovered = self.wait_flow(path, mark)
            self.windows.append((kind, t0, recovered or time.monotonic()))
            if recovered:
                detail["down_s"] = round(t_back - t0, 2)
        elif kind == "bluez":
            self.world.bench.bluez.restart()
            times = [self.wait_flow(p, mark) for p in ("fd", "sig")]
            online = self.sub.wait_for(lambda m: m[1] == f"{BASE}/hm10/availability" and m[2] == b"online", 60, mark)
            recovered = max(times + [online[0] if online else None]) if all(times) and online else None
            self.windows.append((kind, t0, recovered or time.monotonic()))
        elif kind == "mosquitto":
            self.broker.stop()
            if not self.broker.saved_database():
                # Without its database the broker forgets the subscriber's session: what the bridge delivers before
                # the subscriber re-subscribes would be lost on the broker's side and wrongly counted against us.
                raise RuntimeError("the soak's mosquitto could not save its persistence database; see its log in "
                                   f"{self.world.bench.log_dir}")
            time.sleep(self.rng.uniform(1, 3))
            self.broker.start()
            t_back = time.monotonic()
            # Recovered: values sent after the broker came back arrive (not merely the backlog).
            times = [self.wait_flow(p, mark, sent_after=t_back) for p in ("fd", "sig")]
            recovered = max(times) if all(times) else None
            if recovered:
                detail["down_s"] = round(t_back - t0, 2)
            self.broker_windows.append((t0, recovered or time.monotonic()))
        elif kind == "adapter_off":
            adapter = self.adapter_in_use()
            detail["adapter"] = adapter
            on_it = self.devices_on(adapter)
            detail["devices"] = on_it
            self.set_powered(adapter, False)
            back = self.back_online(on_it, mark)
            recovered = self.all_flowing(mark, after=back) if back else None
            self.windows.append((kind, t0, recovered or time.monotonic()))
            self.set_powered(adapter, True)      # back for the next faults; the devices stay where they are now
        elif kind == "adapter_wedged":
            # The device killed below must be one on the wedged adapter: after an adapter_off the devices are spread
            # over both, and one on the other adapter reconnects there, leaving nothing missing on the wedged one
            # (no wedge by docs/adapters.md's rule, so nothing to heal).
            path = self.rng.choice(["fd", "sig"])
            placed = self.adapter_of(path)
            adapter = placed if placed and placed.startswith("hci") else self.adapter_in_use()
            detail["adapter"] = adapter
            detail["device"] = path
            self.world.bench.bus.call("org.bluez", "/org/bluezoo/bench", "org.bluezoo.Bench1", "Wedge", "y",
                                      int(adapter[3:]))
            p = self.peripheral(path)
            p.kill()          # its reconnection now goes through the wedged adapter
            p.start()
            self.start_stream(path)
            # Healed: the daemon power-cycles the wedged adapter (docs/adapters.md's ladder) while the device is missing on
            # it. Or the device is placed elsewhere before anything failed on the wedged adapter (another one heard
            # it more recently and stronger, e.g. just after an adapter_off) and comes back there: nothing is missing
            # on the wedged adapter then, so by the wedge rule (docs/adapters.md) it is not wedged; the soak power-cycles it itself for the
            # faults that follow, and the fault counts as a failover.
            def healed_or_moved(m) -> bool:
                if m[1] == f"{BASE}/bridge/event":
                    return b'"adapter_recovery"' in m[2] and b'"power_cycle"' in m[2] and b'"ok"' in m[2]
                if m[1] == f"{BASE}/bridge/devices":
                    entry = next((d for d in json.loads(m[2]) if d["name"] == path), None)
                    return bool(entry) and entry["adapter"] not in (adapter, "none") and entry["state"] == "online"
                return False
            healed = self.sub.wait_for(healed_or_moved, self.wedge_window + 90, mark)
            if healed and healed[1] == f"{BASE}/bridge/devices":
                detail["failed_over"] = True
                self.set_powered(adapter, False)
                self.set_powered(adapter, True)
            recovered = self.all_flowing(mark, after=healed[0]) if healed else None
            self.windows.append((kind, t0, recovered or time.monotonic()))
            if healed and not detail.get("failed_over"):
                detail["detected_and_cycled_s"] = round(healed[0] - t0, 2)
        elif kind == "sighup":
            nmark = len(self.notify.messages)
            self.gb.signal(signal.SIGHUP)
            try:
                self.notify.wait_for("RELOADING", "1", 10, nmark)
                self.notify.wait_for("READY", "1", 30, nmark + 1)
                recovered = time.monotonic()
            except TimeoutError:
                recovered = None
        elif kind == "bad_command":
            bad = [(f"{BASE}/hm10/serial/set", b"\xff\xfe\xfd not utf-8"),
                   (f"{BASE}/nobody/serial/set", b"hello"),
                   (f"{BASE}/hm10/nothing/set", b"hello"),
                   (f"{BASE}/fd/stamp/set", b"00"),
                   (f"{BASE}/hm10/serial/set", b"x" * 262144),
                   (f"{BASE}/hm10/serial/frobnicate", b"1"),
                   (f"{BASE}/hm10/serial/set/extra", b"1"),
                   (f"{BASE}//serial/set", b"1")]
            for topic, payload in bad:
                self.sub.publish(topic, payload)
            # The first three are answered on bridge/log at once; then the bridge must still carry commands.
            logs = self.sub.wait_for(lambda m: m[1] == f"{BASE}/bridge/log" and b"unknown device" in m[2], 20, mark)
            probe = self.send_command()
            echoed = self.sub.wait_for(lambda m: m[1] == f"{BASE}/hm10/serial" and m[2] == probe.encode(), 40, mark)
            recovered = echoed[0] if logs and echoed else None
            detail["rejections"] = sum(1 for m in self.sub.since(mark) if m[1] == f"{BASE}/bridge/log")
        elif kind == "bad_serial":
            hm = self.world.hm10
            # The serial link is one byte stream: an echo still on its way would merge into the junk line below.
            last = f"cmd-{self.command_n}"
            self.sub.wait_for(lambda m: m[1] == f"{BASE}/hm10/serial" and m[2] == last.encode(), 10)
            hm.send({"cmd": "notify", "char": "ffe1", "value": (b"bad \xff\xfe\xc3( utf-8\n").hex()})
            for _ in range(8):
                hm.send({"cmd": "notify", "char": "ffe1", "value": (b"L" * 512).hex()})
            hm.send({"cmd": "notify", "char": "ffe1", "value": b"\n".hex()})
            got = self.sub.wait_for(lambda m: m[1] == f"{BASE}/hm10/serial" and m[2].startswith(b"LLLL"), 20, mark)
            bad = self.sub.wait_for(lambda m: m[1] == f"{BASE}/hm10/serial" and "\ufffd" in m[2].decode("utf-8", "replace"),
                                    20, mark)
            probe = self.send_command()
            echoed = self.sub.wait_for(lambda m: m[1] == f"{BASE}/hm10/serial" and m[2] == probe.encode(), 40, mark)
            recovered = echoed[0] if got and bad and echoed else None
            detail["pieces"] = sum(1 for m in self.sub.since(mark) if m[1] == f"{BASE}/hm10/serial" and m[2].startswith(b"L"))
        elif kind == "retained_command":
            line = f"retained-{self.command_n}"
            self.retained_lines.add(line)
            # Published with the retain flag while the bridge is subscribed, the broker forwards it live (flag
            # cleared), so it runs once, as any live command does; then it sits on the broker as a retained message
            # and must never run again when the bridge resubscribes after the restart.
            self.sub.publish(f"{BASE}/hm10/serial/set", line.encode(), retain=True)
            self.sub.wait_for(lambda m: m[1] == f"{BASE}/hm10/serial" and m[2] == line.encode(), 20, mark)
            self.broker.stop()
            time.sleep(self.rng.uniform(1, 2))
            self.broker.start()
            t_back = time.monotonic()
            times = [self.wait_flow(p, mark, sent_after=t_back) for p in ("fd", "sig")]
            # The bridge resubscribed (MQTT 5: retain handling 2, so the broker does not even send it; 3.1.1: sent,
            # ignored and reported). A command after it is a barrier: retained messages come before live ones.
            probe = self.send_command()
            echoed = self.sub.wait_for(lambda m: m[1] == f"{BASE}/hm10/serial" and m[2] == probe.encode(), 40, mark)
            self.sub.publish(f"{BASE}/hm10/serial/set", b"", retain=True)
            self.broker_windows.append((t0, time.monotonic()))
            recovered = max(times + [echoed[0]]) if all(times) and echoed else None
        elif kind == "huge_publish":
            before = sample(self.gb.pid).rss_kb
            self.sub.publish(f"{BASE}/hm10/serial/set", b"x" * (50 * 1024 * 1024))
            probe = self.send_command()
            echoed = self.sub.wait_for(lambda m: m[1] == f"{BASE}/hm10/serial" and m[2] == probe.encode(), 60, mark)
            detail["rss_growth_kb"] = sample(self.gb.pid).rss_kb - before
            recovered = echoed[0] if echoed and detail["rss_growth_kb"] < 16 * 1024 else None
        elif kind == "get_flood":
            for _ in range(2000):
                self.sub.publish(f"{BASE}/hm10/serial/get", b"", qos=0)
            probe = self.send_command()
            echoed = self.sub.wait_for(lambda m: m[1] == f"{BASE}/hm10/serial" and m[2] == probe.encode(), 40, mark)
            detail["reads_published"] = sum(1 for m in self.sub.since(mark)
                                            if m[1] == f"{BASE}/hm10/serial" and m[2] == b"")
            recovered = echoed[0] if echoed else None
        elif kind == "birth_flood":
            for _ in range(20_000):
                self.sub.publish("homeassistant/status", b"online", qos=0)
            # A command published while the flood drains may be dropped, by the broker or by the bridge's bounded
            # inbox (docs/security.md, memory bounds under floods: "send it again"): one every 5 s until one comes
            # back, within 60 s. The ones dropped meanwhile are excused (flood_windows).
            probes: set[bytes] = set()
            echoed = None
            deadline = time.monotonic() + 60
            while echoed is None and time.monotonic() < deadline:
                probes.add(self.send_command().encode())
                echoed = self.sub.wait_for(lambda m: m[1] == f"{BASE}/hm10/serial" and m[2] in probes, 5, mark)
            detail["rss_kb"] = sample(self.gb.pid).rss_kb
            detail["commands_sent_until_one_came_back"] = len(probes)
            recovered = echoed[0] if echoed and detail["rss_kb"] < RSS_LIMIT_KB else None
            self.flood_windows.append((t0, recovered or time.monotonic()))
        elif kind == "forged_fleet_record":
            owner, state = f"{BASE}/fd/owner", f"{BASE}/bridge/{FLEET_ID}/state"
            self.sub.publish(f"{owner}/request", json.dumps({"bridge": "zz", "rssi": 20}).encode())
            self.sub.publish(owner, json.dumps({"bridge": "0", "rssi": 20, "since": 1}).encode(), retain=True)
            self.sub.publish(state, b"offline", retain=True)
            record = self.sub.wait_for(lambda m: m[1] == owner and f'"bridge":"{FLEET_ID}"'.encode() in m[2], 30, mark)
            online = self.sub.wait_for(lambda m: m[1] == state and m[2] == b"online", 30, mark)
            times = [self.wait_flow(p, mark, timeout=30) for p in ("fd", "sig")]
            recovered = max([record[0], online[0]] + times) if record and online and all(times) else None
        if recovered is None:
            detail["recovered"] = False
            log(f"fault {kind}: NOT recovered")
        else:
            detail["recovery_s"] = round(recovered - t0, 3)
            self.recovery[kind].append(recovered - t0)
            log(f"fault {kind} {detail.get('device', '')}: recovered in {recovered - t0:.2f} s")
        self.fault_log.append(detail)

    def send_command(self) -> str:
        self.command_n += 1
        line = f"cmd-{self.command_n}"
        self.commands_sent[line] = time.monotonic()
        self.sub.publish(f"{BASE}/hm10/serial/set", line.encode())
        return line

    # --- the run ---

    def run(self) -> dict:
        log(f"soak: {self.duration:.0f} s, {self.rate:g} Hz × 2 stamp streams, a fault every ~{self.fault_interval:g} s,"
            f" seed {self.seed}")
        self.start_gattbridge()
        self.notify.wait_for("READY", "1", 30)
        self.watching.set()
        threading.Thread(target=self.watch_the_watchdog, daemon=True).start()
        self.world.wait_online(timeout=90)
        self.world.wait_online(devices=("strap", "porch"), timeout=90)
        self.t_start = time.monotonic()
        for path in ("fd", "sig"):
            self.start_stream(path)
        end = self.t_start + self.duration
        next_fault = self.t_start + self.fault_interval * self.rng.uniform(0.7, 1.3)
        next_cmd = self.t_start + 1
        next_rss = self.t_start
        rotation: list[str] = []
        first_rotation = True
        while time.monotonic() < end:
            now = time.monotonic()
            self.check_alive()
            if now >= next_rss:
                try:
                    s = sample(self.gb.pid)
                    self.rss.append((now - self.t_start, s.rss_kb, s.pss_kb, s.anon_kb, s.file_kb))
                except (FileNotFoundError, ProcessLookupError):
                    pass
                next_rss = now + 10
            if now >= next_cmd:
                self.send_command()
                next_cmd = now + 1
            if now >= next_fault and now < end - 15:
                if not rotation:
                    rotation = self.faults[:]
                    self.rng.shuffle(rotation)
                    # The first birth flood grows the heap once (20,000 messages through the bounded queues; malloc
                    # keeps the pages for the next one): it comes first, inside the warm-up, so it is judged as a
                    # one-off high-water mark, as the first oversized command is, not as growth.
                    if first_rotation and "birth_flood" in rotation:
                        rotation.remove("birth_flood")
                        rotation.append("birth_flood")
                    first_rotation = False
                self.fault(rotation.pop())
                self.check_alive()
                next_fault = time.monotonic() + self.fault_interval * self.rng.uniform(0.7, 1.3)
            time.sleep(0.1)
        for path in ("fd", "sig"):
            self.halt_stream(path)
        time.sleep(5)        # drain (QoS 1 in flight, the broker's queue)
        self.check_alive()
        self.watching.clear()
        return self.report()

    def report(self) -> dict:
        msgs = self.sub.since(0)
        per_stream: dict[int, list[tuple[int, int, float]]] = {}
        for t, topic, payload in msgs:
            if topic.endswith("/stamp"):
                try:
                    sid, seq, sent = unstamp(bytes.fromhex(payload.decode()))
                except ValueError:
                    continue
                per_stream.setdefault(sid, []).append((seq, sent, t))
        produced = lost = lost_link = dups = reordered = 0
        unexplained: list[dict] = []
        lost_by_stream: dict[str, dict] = {}
        for sid, info in self.streams.items():
            got = per_stream.get(sid, [])
            seqs = [g[0] for g in got]
            unique = set(seqs)
            dups += len(seqs) - len(unique)
            reordered += sum(1 for a, b in zip(seqs, seqs[1:]) if b < a)
            n = info["produced"] if info["produced"] is not None else (max(unique) + 1 if unique else 0)
            produced += n
            sent_at = {g[0]: g[1] / 1e9 - self.realtime_offset for g in got}
            for missing in sorted(set(range(n)) - unique):
                before = max((s for s in unique if s < missing), default=None)
                after = min((s for s in unique if s > missing), default=None)
                lo = sent_at.get(before, info["start"]) if before is not None else info["start"]
                hi = sent_at.get(after, time.monotonic()) if after is not None else time.monotonic()
                excused = any(start - 1.0 <= hi and lo <= stop for _, start, stop in self.windows)
                if excused:
                    lost_link += 1
                else:
                    lost += 1
                    entry = lost_by_stream.setdefault(str(sid), {"path": info["path"], "lost": 0})
                    entry["lost"] += 1
                    if len(unexplained) < 20:
                        unexplained.append({"stream": sid, "seq": missing, "t": round(lo - self.t_start, 2)})
        echoes = {p.decode("utf-8", "replace") for _, topic, p in msgs if topic == f"{BASE}/hm10/serial"}
        rejected = [json.loads(p) for _, topic, p in msgs if topic == f"{BASE}/bridge/log"]
        cmds_echoed = sum(1 for c in self.commands_sent if c in echoes)
        # A command whose write or echo was in the air when BlueZoo died, or when the adapter carrying the HM-10 was
        # powered off (adapter_off, or the power cycle that heals adapter_wedged), is lost with the link. One published in the
        # 2 s before a broker restart, or before the bridge was back, may never reach the bridge: its MQTT session is
        # clean, so the broker keeps nothing for it while it is away (by design: no command runs minutes late). Any
        # other missing echo is a loss.
        missing = [(c, t) for c, t in self.commands_sent.items() if c not in echoes]
        excused = [(c, t) for c, t in missing
                   if any(kind in ("bluez", "adapter_off", "adapter_wedged") and start - 2.0 <= t <= stop
                          for kind, start, stop in self.windows)
                   or any(start - 2.0 <= t <= stop for start, stop in self.broker_windows)
                   or any(start <= t <= stop for start, stop in self.flood_windows)]
        cmds_lost = [m for m in missing if m not in excused]
        missing_cmds = [{"command": c, "t": round(t - self.t_start, 1), "excused": (c, t) in excused}
                        for c, t in missing][:20]
        rss = [r[1] for r in self.rss]
        # Warm-up: the first quarter (at least 60 s), so one-off high-water marks (the first oversized command, the
        # first reconnections) are not mistaken for growth.
        warm = [r for r in self.rss if r[0] >= max(60.0, self.duration / 4)] or self.rss
        first = statistics.median([r[1] for r in warm[:max(1, len(warm) // 10)]]) if warm else 0
        last = statistics.median([r[1] for r in warm[-max(1, len(warm) // 10):]]) if warm else 0
        anon_first = statistics.median([r[3] for r in warm[:max(1, len(warm) // 10)]]) if warm else 0
        anon_last = statistics.median([r[3] for r in warm[-max(1, len(warm) // 10):]]) if warm else 0
        result = {
            "date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "machine": machine(),
            "binary": str(gattbridge_binary()), "seed": self.seed, "duration_s": self.duration,
            "rate_hz_per_stream": self.rate, "fault_interval_s": self.fault_interval,
            "qos1_notifications": {"produced": produced, "received_unique": produced - lost - lost_link,
                                   "lost": lost, "lost_with_the_link": lost_link, "duplicates": dups,
                                   "reordered": reordered, "lost_by_stream": lost_by_stream,
                                   "unexplained_examples": unexplained},
            "commands": {"sent": len(self.commands_sent), "echoed": cmds_echoed,
                         "not_echoed": len(self.commands_sent) - cmds_echoed, "lost": len(cmds_lost),
                         "not_echoed_examples": missing_cmds,
                         "bridge_log_rejections": len(rejected)},
            "faults": {k: {"count": len(v) + sum(1 for f in self.fault_log if f["kind"] == k and f.get("recovered") is False),
                           "recovered": len(v),
                           "recovery_s_median": round(statistics.median(v), 3) if v else None,
                           "recovery_s_max": round(max(v), 3) if v else None} for k, v in self.recovery.items()},
            "fault_log": self.fault_log,
            "crashes": len(self.crashes), "crash_details": self.crashes,
            "watchdog": {"timeout_s": self.watchdog_sec, "aborts": len(self.watchdog_aborts),
                         "abort_details": self.watchdog_aborts},
            "load": {"qos0_values": sum(1 for _, topic, _ in msgs if topic == f"{BASE}/strap/heart_rate"),
                     "qos0_rate_hz": self.qos0_rate,
                     "advert_values": sum(1 for _, topic, _ in msgs if topic.startswith(f"{BASE}/porch/")
                                          and not topic.endswith("/availability"))},
            "rss_kb": {"samples": len(rss), "min": min(rss, default=0), "max": max(rss, default=0),
                       "first_after_warmup_median": first, "last_median": last,
                       "growth_percent": round(100 * (last - first) / first, 1) if first else None,
                       "anon_first_after_warmup_median": anon_first, "anon_last_median": anon_last,
                       "series": [(round(t), r, p, a, f) for t, r, p, a, f in self.rss]},
        }
        # Judged on anonymous memory, what a leak grows. File-backed pages (code, read-only data) are mapped one code
        # path at a time as they first run (a fault kind first run after warm-up included) and are the kernel's to
        # reclaim when memory is short (docs/dev/MEMORY.md); bounded by the mapped files, they are reported, not judged.
        result["rss_kb"]["anon_growth_percent"] = (round(100 * (anon_last - anon_first) / anon_first, 1)
                                                   if anon_first else None)
        growth = result["rss_kb"]["anon_growth_percent"]
        result["rss_flat"] = growth is not None and (growth <= 10 or anon_last - anon_first <= 1024)
        not_recovered = [f for f in self.fault_log if f.get("recovered") is False]
        # Counted where it runs, on the HM-10 (the echoes on MQTT can repeat: QoS 1 re-delivery around a restart).
        written = collections.Counter(e.get("text") for e in self.world.hm10.events_matching("line", since=0))
        result["retained_commands_executed"] = sorted(line for line in self.retained_lines if written[line] > 1)
        result["pass"] = (result["crashes"] == 0 and lost == 0 and not cmds_lost and not not_recovered
                          and result["rss_flat"] and not result["retained_commands_executed"]
                          and not self.watchdog_aborts and result["load"]["qos0_values"] > 0
                          and result["load"]["advert_values"] > 0)
        return result


def print_report(r: dict) -> None:
    q = r["qos1_notifications"]
    c = r["commands"]
    print(f"\ngattbridge soak — {r['date']} — {r['duration_s']:.0f} s, seed {r['seed']}, "
          f"{r['machine']['cpu']}, {r['machine']['cores']} cores")
    print(f"QoS 1 notifications: produced {q['produced']:,}, received {q['received_unique']:,}, lost {q['lost']} "
          f"(+ {q['lost_with_the_link']} lost with the link at peripheral/BlueZoo deaths), duplicates "
          f"{q['duplicates']}, reordered {q['reordered']}")
    print(f"commands: sent {c['sent']}, echoed back {c['echoed']}, not echoed {c['not_echoed']} ({c['lost']} lost) "
          f"{c['not_echoed_examples'][:5]}; bridge/log rejections {c['bridge_log_rejections']}")
    print("faults (count, recovered, recovery median / max):")
    for k, v in r["faults"].items():
        med = f"{v['recovery_s_median']:.3f} s / {v['recovery_s_max']:.3f} s" if v["recovered"] else "—"
        print(f"  {k:<12} {v['count']:>3} {v['recovered']:>3}   {med}")
    wedges = [f for f in r["fault_log"] if f["kind"] == "adapter_wedged"]
    if wedges:
        # A wedge the daemon healed (power_cycle event) apart from one whose device went elsewhere before anything
        # failed on the wedged adapter (no wedge by docs/adapters.md; the soak power-cycled the adapter itself).
        healed = sum(1 for f in wedges if "detected_and_cycled_s" in f)
        moved = sum(1 for f in wedges if f.get("failed_over"))
        print(f"  adapter_wedged: {healed} detected and power-cycled by the daemon, {moved} failed over first")
    rs = r["rss_kb"]
    print(f"crashes: {r['crashes']}")
    w, load = r["watchdog"], r["load"]
    print(f"watchdog ({w['timeout_s']:g} s, SIGABRT when late, as systemd): {w['aborts']} abort(s); under "
          f"{load['qos0_values']:,} QoS 0 values ({load['qos0_rate_hz']:g} Hz) and {load['advert_values']:,} "
          f"broadcast readings")
    print(f"RSS: {rs['min'] / 1024:.1f}–{rs['max'] / 1024:.1f} MiB over {rs['samples']} samples; after warm-up "
          f"{rs['first_after_warmup_median'] / 1024:.1f} → {rs['last_median'] / 1024:.1f} MiB "
          f"({rs['growth_percent']} %); of which anonymous "
          f"{rs['anon_first_after_warmup_median'] / 1024:.1f} → {rs['anon_last_median'] / 1024:.1f} MiB "
          f"({rs.get('anon_growth_percent')} %): {'flat' if r['rss_flat'] else 'GROWING'}")
    if r.get("kept_logs"):
        print(f"logs of this failed run (daemon, BlueZoo, broker, peripherals, the soak's timeline): {r['kept_logs']}")
    print("PASS" if r["pass"] else "FAIL")


def keep_logs(soak: Soak, out_dir: str, result: Optional[dict]) -> Path:
    """A failed run's evidence, before the bench's directory goes: every process's log (the daemon's, BlueZoo's, the
    broker's, the peripherals'), the soak's own timeline and its fault log, in `<out_dir>/soak-failed-<time>/`."""
    kept = Path(out_dir) / f"soak-failed-{datetime.now().strftime('%Y%m%d-%H%M%S')}"
    shutil.copytree(soak.world.bench.log_dir, kept / "logs")
    (kept / "timeline.log").write_text("\n".join(TIMELINE) + "\n")
    (kept / "faults.json").write_text(json.dumps(result["fault_log"] if result else soak.fault_log, indent=2))
    return kept


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--duration", type=float, default=float(os.environ.get("SOAK_DURATION", 600)))
    ap.add_argument("--rate", type=float, default=float(os.environ.get("SOAK_RATE", 20)))
    ap.add_argument("--fault-interval", type=float, default=float(os.environ.get("SOAK_FAULT_INTERVAL", 20)))
    ap.add_argument("--seed", type=int, default=int(os.environ.get("SOAK_SEED", time.time_ns() % 100000)))
    ap.add_argument("--faults", default=os.environ.get("SOAK_FAULTS", ",".join(FAULTS)),
                    help="comma-separated subset of " + ",".join(FAULTS))
    ap.add_argument("--out-dir", default=str(REPO / ".bench"))
    a = ap.parse_args()
    faults = [f.strip() for f in a.faults.split(",") if f.strip()]
    if not faults or any(f not in FAULTS for f in faults):
        ap.error(f"--faults: choose from {','.join(FAULTS)}")
    soak = Soak(a.duration, a.rate, a.fault_interval, a.seed, faults)
    result: Optional[dict] = None
    kept: Optional[Path] = None
    try:
        result = soak.run()
        if soak.gb is not None:
            result["exit_code_on_sigterm"] = soak.gb.stop(10)
    finally:
        if result is None or not result["pass"]:
            kept = keep_logs(soak, a.out_dir, result)
            log(f"logs of the failed run kept in {kept}")
        soak.sub.close()
        soak.world.close()
    if kept:
        result["kept_logs"] = str(kept)
    print_report(result)
    print(f"JSON: {save_results(result, a.out_dir, 'soak', 'soak-latest.json')} (and a timestamped copy)")
    return 0 if result["pass"] else 1


if __name__ == "__main__":
    sys.exit(main())
