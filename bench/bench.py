"""The bench's Python API: every process the integration tests need, started and stopped on demand.

    with Bench() as b:                       # private dbus-daemon + patched BlueZoo with central adapter hci0
        hrm = b.peripheral("heart_rate")     # own adapter hci1 at C0:FF:EE:00:00:01, waits for {"event":"ready"}
        broker = b.mosquitto()               # 127.0.0.1:<free port>
        mqtt = b.mqtt_client()               # subscribed to "#", records every message
        gb = b.run_gattbridge(["run", "--config", path])

Every child runs in its own process group and is killed with it; `Bench.close()` (or leaving the `with`)
ends everything that is still running, whatever happened. Waits are conditions with deadlines.
"""

from __future__ import annotations

import ctypes
import json
import os
import queue
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Optional, Union

from bench.central import BusThread, Central, wait_until

REPO = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
CENTRAL_ADDRESS = "00:00:00:00:00:01"
# Default addresses of the named peripherals (they match the example configuration in docs/configuration.md).
DEFAULT_ADDRESSES = {"heart_rate": "C0:FF:EE:00:00:01", "hm10": "C0:FF:EE:00:00:02", "led": "C0:FF:EE:00:00:03"}

__all__ = ["Bench", "BlueZoo", "DBusDaemon", "Mosquitto", "MqttClient", "Peripheral", "Process",
           "SdNotifyListener", "gattbridge_bin", "wait_until", "free_port", "REPO"]


_PR_SET_PDEATHSIG = 1
try:
    _prctl = ctypes.CDLL(None, use_errno=True).prctl
except (OSError, AttributeError):  # not Linux/glibc: children then only end through close()
    _prctl = None


def _die_with_parent() -> None:
    """Runs in the child between fork and exec: SIGKILL it when the bench process dies, so even a killed
    test run leaves nothing behind. (Only a C call here: no Python locks are taken after fork.)"""
    if _prctl is not None:
        _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def gattbridge_bin() -> Path:
    """$GATTBRIDGE_BIN, else <repo>/.build/debug/gattbridge."""
    return Path(os.environ.get("GATTBRIDGE_BIN") or REPO / ".build" / "debug" / "gattbridge")


# --- processes ------------------------------------------------------------------------------------------------

class Process:
    """A child in its own process group. stdout and stderr are read line by line by two threads into
    `stdout_lines`/`stderr_lines` (and copied to `<log_dir>/<name>.log` when a log dir is given)."""

    def __init__(self, args: list[str], name: str, env: Optional[dict[str, str]] = None,
                 cwd: Optional[Union[str, Path]] = None, log_dir: Optional[Path] = None, stdin: bool = False,
                 on_stdout: Optional[Callable[[str], None]] = None):
        self.args = [str(a) for a in args]
        self.name = name
        self.env = env
        self.cwd = cwd
        self.log_dir = log_dir
        self.want_stdin = stdin
        self.on_stdout = on_stdout
        self.popen: Optional[subprocess.Popen] = None
        self.stdout_lines: list[str] = []
        self.stderr_lines: list[str] = []
        self._cond = threading.Condition()
        self._threads: list[threading.Thread] = []
        self._log = None

    def start(self) -> "Process":
        if self.log_dir is not None:
            self._log = open(self.log_dir / f"{self.name}.log", "a", buffering=1)
            self._log.write(f"--- start {' '.join(self.args)}\n")
        self.stdout_lines, self.stderr_lines = [], []
        self.popen = subprocess.Popen(
            self.args, env=self.env, cwd=self.cwd, start_new_session=True, preexec_fn=_die_with_parent,
            stdin=subprocess.PIPE if self.want_stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace", bufsize=1)
        self._threads = [
            threading.Thread(target=self._reader, args=(self.popen.stdout, self.stdout_lines, "out"), daemon=True),
            threading.Thread(target=self._reader, args=(self.popen.stderr, self.stderr_lines, "err"), daemon=True),
        ]
        for t in self._threads:
            t.start()
        return self

    def _reader(self, stream, lines: list[str], tag: str) -> None:
        for line in stream:
            line = line.rstrip("\n")
            with self._cond:
                lines.append(line)
                self._cond.notify_all()
            if self._log is not None:
                try:
                    self._log.write(f"[{tag}] {line}\n")
                except ValueError:
                    pass
            if tag == "out" and self.on_stdout is not None:
                self.on_stdout(line)
        with self._cond:
            self._cond.notify_all()

    @property
    def pid(self) -> Optional[int]:
        return self.popen.pid if self.popen else None

    @property
    def running(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    @property
    def returncode(self) -> Optional[int]:
        return self.popen.poll() if self.popen else None

    @property
    def stdout(self) -> str:
        return "\n".join(self.stdout_lines)

    @property
    def stderr(self) -> str:
        return "\n".join(self.stderr_lines)

    def write_stdin(self, text: str) -> None:
        assert self.popen is not None and self.popen.stdin is not None, "started without stdin=True"
        self.popen.stdin.write(text)
        self.popen.stdin.flush()

    def wait_for_line(self, predicate: Union[str, Callable[[str], bool]], timeout: float = 10.0,
                      stream: str = "stdout", since: int = 0) -> str:
        """First line (from index `since`) containing the string / satisfying the predicate."""
        match = (lambda line: predicate in line) if isinstance(predicate, str) else predicate
        lines = self.stdout_lines if stream == "stdout" else self.stderr_lines
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                lines = self.stdout_lines if stream == "stdout" else self.stderr_lines
                for line in lines[since:]:
                    if match(line):
                        return line
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"{self.name}: no {stream} line matching {predicate!r} within {timeout}s; "
                                       f"last lines: {lines[-5:]}")
                self._cond.wait(min(left, 0.2))

    def wait(self, timeout: float = 10.0) -> int:
        """Waits for the process to exit (and its output to be read); returns the exit code."""
        assert self.popen is not None
        rc = self.popen.wait(timeout)
        for t in self._threads:
            t.join(2)
        return rc

    def signal(self, sig: int) -> None:
        """Sends a signal to the process itself (not the group)."""
        if self.running:
            self.popen.send_signal(sig)

    def kill(self) -> None:
        """SIGKILL to the whole process group: abrupt, nothing gets to clean up."""
        self._signal_group(signal.SIGKILL)
        self._reap(5)

    def stop(self, timeout: float = 5.0) -> Optional[int]:
        """SIGTERM to the group, SIGKILL after `timeout`. Returns the exit code."""
        if self.popen is None:
            return None
        if self.popen.poll() is None:
            self._signal_group(signal.SIGTERM)
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                pass
        self._signal_group(signal.SIGKILL)  # anything left in the group (children of the child)
        return self._reap(5)

    def _signal_group(self, sig: int) -> None:
        if self.popen is None:
            return
        try:
            os.killpg(self.popen.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def _reap(self, timeout: float) -> Optional[int]:
        try:
            rc = self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            rc = None
        for t in self._threads:
            t.join(2)
        if self.popen.stdin is not None:
            try:
                self.popen.stdin.close()
            except (BrokenPipeError, OSError):
                pass
        if self._log is not None:
            self._log.write(f"--- exit {rc}\n")
            self._log.close()
            self._log = None
        return rc


# --- D-Bus daemon -------------------------------------------------------------------------------------------

DBUS_CONFIG = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <!-- The bench's private "system" bus: BlueZoo owns org.bluez on it, peripherals export objects; everyone may
       do anything. -->
  <type>system</type>
  <listen>unix:path={socket}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_destination="*" eavesdrop="true"/>
    <allow receive_sender="*"/>
    <allow eavesdrop="true"/>
  </policy>
  <limit name="max_replies_per_connection">50000</limit>
  <limit name="max_match_rules_per_connection">50000</limit>
</busconfig>
"""


class DBusDaemon:
    def __init__(self, workdir: Path, log_dir: Optional[Path] = None):
        self.workdir = workdir
        self.log_dir = log_dir
        self.config = workdir / "dbus.conf"
        self.socket = workdir / "bus"
        self.address: Optional[str] = None
        self.process: Optional[Process] = None

    def start(self) -> "DBusDaemon":
        self.config.write_text(DBUS_CONFIG.format(socket=self.socket))
        self.process = Process(["dbus-daemon", f"--config-file={self.config}", "--nofork", "--print-address=1"],
                               "dbus-daemon", log_dir=self.log_dir).start()
        line = self.process.wait_for_line(lambda line: line.startswith("unix:"), 10)
        self.address = line.strip()
        return self

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()


# --- BlueZoo ------------------------------------------------------------------------------------------------

class BlueZoo:
    """Patched BlueZoo (bench/bluezoo_patched.py) on the private bus, with the central adapter hci0.
    Peripheral adapters are added with `add_adapter`; `restart()` brings them back with the same ids."""

    def __init__(self, env: dict[str, str], bus: BusThread, log_dir: Optional[Path] = None,
                 central_address: str = CENTRAL_ADDRESS, scan_interval: int = 1, connect_fail_delay: float = 2.0):
        self.env = env
        self.bus = bus
        self.log_dir = log_dir
        self.central_address = central_address
        self.scan_interval = scan_interval
        self.connect_fail_delay = connect_fail_delay
        self.adapters: dict[int, str] = {}   # id → address (peripheral adapters)
        self.process: Optional[Process] = None

    def start(self, timeout: float = 20.0) -> "BlueZoo":
        self.process = Process(
            [PYTHON, REPO / "bench" / "bluezoo_patched.py", "--auto-enable", "--scan-interval", str(self.scan_interval),
             "--connect-fail-delay", str(self.connect_fail_delay), "--adapter", self.central_address],
            "bluezoo", env=self.env, cwd=REPO, log_dir=self.log_dir).start()
        self._wait_powered("hci0", timeout)
        for id, address in sorted(self.adapters.items()):
            self._add(id, address, timeout)
        return self

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()

    def kill(self) -> None:
        """Abrupt end, like a bluetoothd crash: only NameOwnerChanged tells the clients."""
        if self.process is not None:
            self.process.kill()

    def restart(self, timeout: float = 20.0) -> "BlueZoo":
        self.kill()
        wait_until(lambda: not self.bus.name_has_owner("org.bluez"), 10, "org.bluez still owned")
        return self.start(timeout)

    def add_adapter(self, address: str, timeout: float = 10.0) -> str:
        """Adds (or finds) the adapter that will play the peripheral at `address`; returns its name (hciN)."""
        address = address.upper()
        for id, a in self.adapters.items():
            if a == address:
                return f"hci{id}"
        id = max(self.adapters, default=0) + 1
        if id > 255:
            raise RuntimeError("BlueZoo adapter ids are one byte")
        self._add(id, address, timeout)
        self.adapters[id] = address
        return f"hci{id}"

    def set_rssi(self, adapter_address: str, peer_address: str, rssi: int) -> None:
        """The RSSI at which the adapter at `adapter_address` hears the peripheral at `peer_address` (bench control
        of bluezoo_patched.py; effective at once, also for devices reported later). Not kept across restart()."""
        self.bus.call("org.bluez", "/org/bluezoo/bench/rssi", "org.bluezoo.BenchRSSI1", "SetRSSI", "ssn",
                      adapter_address, peer_address, rssi)

    def set_pair_reply_delay(self, seconds: float) -> None:
        """How long BlueZoo holds its answer to Device1.Pair after the device is paired (bench control of
        bluezoo_patched.py; bluetoothd answers only after the service discovery that follows the bonding)."""
        self.bus.call("org.bluez", "/org/bluezoo/bench/pair", "org.bluezoo.BenchPair1", "SetReplyDelay", "d", float(seconds))

    def _add(self, id: int, address: str, timeout: float) -> None:
        # org.bluezoo.Manager1.AddAdapter(y id, s address) → /org/bluez/hci<id>
        self.bus.call("org.bluez", "/org/bluezoo", "org.bluezoo.Manager1", "AddAdapter", "ys", id, address)
        self._wait_powered(f"hci{id}", timeout)

    def _wait_powered(self, adapter: str, timeout: float) -> None:
        def powered():
            if not self.process.running:
                raise RuntimeError(f"BlueZoo exited ({self.process.returncode}): {self.process.stderr[-2000:]}")
            return self.bus.get_property("org.bluez", f"/org/bluez/{adapter}", "org.bluez.Adapter1", "Powered",
                                         timeout=2)
        wait_until(powered, timeout, f"{adapter} never powered")


# --- peripherals ----------------------------------------------------------------------------------------------

EventPredicate = Union[str, dict, Callable[[dict], bool]]


def _matcher(predicate: EventPredicate) -> Callable[[dict], bool]:
    """"ready" → event name; {"event": "write", "char": "2a37"} → subset match; or any callable."""
    if isinstance(predicate, str):
        return lambda e: e.get("event") == predicate
    if isinstance(predicate, dict):
        return lambda e: all(e.get(k) == v for k, v in predicate.items())
    return predicate


class Peripheral:
    """One simulated peripheral process (`python -m bench.peripherals KIND --adapter hciN …`).

    `.events` is a queue of every JSON event line; `.history` keeps them all. `wait_for(pred, timeout)`
    returns the first matching event received since the current process started (or since `since`, an index
    from `mark()`)."""

    def __init__(self, kind: str, adapter: str, address: str, env: dict[str, str], log_dir: Optional[Path] = None,
                 **options: Any):
        self.kind = kind
        self.adapter = adapter
        self.address = address.upper()
        self.env = env
        self.log_dir = log_dir
        self.options = options
        self.events: "queue.Queue[dict]" = queue.Queue()
        self.history: list[dict] = []
        self._cond = threading.Condition()
        self._run_start = 0
        self.process: Optional[Process] = None
        self.starts = 0

    def _args(self) -> list[str]:
        args = [PYTHON, "-m", "bench.peripherals", self.kind, "--adapter", self.adapter]
        if self.kind == "broadcaster":
            args += ["--address", self.address]
        for key, value in self.options.items():
            flag = "--" + key.replace("_", "-")
            if value is True:
                args.append(flag)
            elif value is False or value is None:
                continue
            elif key == "config" and isinstance(value, (dict, list)):
                args += [flag, json.dumps(value)]
            elif isinstance(value, (list, tuple)):
                for v in value:
                    args += [flag, str(v)]
            elif isinstance(value, dict):  # manufacturer_data={0xffff: "0102"}, service_data={"180d": "00"}
                for k, v in value.items():
                    k = f"0x{k:04x}" if isinstance(k, int) else k
                    args += [flag, f"{k}:{v.hex() if isinstance(v, bytes) else v}"]
            else:
                args += [flag, str(value)]
        return args

    def _on_line(self, line: str) -> None:
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            event = {"event": "output", "line": line}
        with self._cond:
            self.history.append(event)
            self._cond.notify_all()
        self.events.put(event)

    def start(self, wait_ready: bool = True, timeout: float = 15.0) -> "Peripheral":
        with self._cond:
            self._run_start = len(self.history)
        self.starts += 1
        self.process = Process(self._args(), f"peripheral-{self.kind}-{self.address.replace(':', '')}",
                               env=self.env, cwd=REPO, log_dir=self.log_dir, stdin=True,
                               on_stdout=self._on_line).start()
        if wait_ready:
            self.wait_for("ready", timeout)
        return self

    def mark(self) -> int:
        """Index to pass as `since` to wait only for events that arrive after this call."""
        with self._cond:
            return len(self.history)

    def wait_for(self, predicate: EventPredicate, timeout: float = 10.0, since: Optional[int] = None) -> dict:
        match = _matcher(predicate)
        deadline = time.monotonic() + timeout
        with self._cond:
            start = self._run_start if since is None else since
            while True:
                for event in self.history[start:]:
                    if match(event):
                        return event
                    if event.get("event") == "error":
                        raise RuntimeError(f"peripheral {self.kind} reported an error: {event}")
                left = deadline - time.monotonic()
                if left <= 0 or (self.process is not None and not self.process.running and left < timeout - 1):
                    stderr = self.process.stderr[-2000:] if self.process else ""
                    raise TimeoutError(f"peripheral {self.kind}@{self.address}: no event matching {predicate!r} "
                                       f"within {timeout}s; events: {self.history[start:][-8:]}; stderr: {stderr}")
                self._cond.wait(min(left, 0.2))

    def events_matching(self, predicate: EventPredicate, since: Optional[int] = None) -> list[dict]:
        match = _matcher(predicate)
        with self._cond:
            start = self._run_start if since is None else since
            return [e for e in self.history[start:] if match(e)]

    def send(self, cmd: dict, wait: bool = True, timeout: float = 10.0) -> None:
        """A stdin command (see PeripheralRunner); waits for its "done" event unless wait=False."""
        mark = self.mark()
        self.process.write_stdin(json.dumps(cmd) + "\n")
        if wait:
            self.wait_for(lambda e: e.get("event") == "done" and e.get("cmd") == cmd["cmd"], timeout, since=mark)

    def notify(self, char: str, value: bytes) -> None:
        self.send({"cmd": "notify", "char": char, "value": value.hex()})

    def press(self, event: str = "press") -> dict:
        """Broadcaster (bthome): a button event now; returns the packet's broadcast event."""
        mark = self.mark()
        self.send({"cmd": "press", "event": event})
        return self.wait_for(lambda e: e.get("event") == "broadcast" and e.get("events"), 5, since=mark)

    def broadcasts(self, since: Optional[int] = None) -> list[dict]:
        """Broadcaster: every packet it put on the air (this process run, or since a `mark()`)."""
        return self.events_matching("broadcast", since)

    def kill(self) -> None:
        """SIGKILL: the process vanishes from the bus; the central sees a link loss."""
        if self.process is not None:
            self.process.kill()

    def stop(self) -> None:
        """SIGTERM: the peripheral unregisters and leaves (the central's link is lost all the same)."""
        if self.process is not None:
            self.process.stop()

    def restart(self, wait_ready: bool = True, timeout: float = 15.0) -> "Peripheral":
        """Ends the process (abruptly) and starts a new one on the same adapter, i.e. at the same address."""
        self.kill()
        return self.start(wait_ready, timeout)

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.running


# --- MQTT -----------------------------------------------------------------------------------------------------

def persistent_broker_config(directory: Path) -> str:
    """mosquitto settings (for `Mosquitto(extra_config=…)`) that keep sessions and queued messages over a restart, so
    a subscriber with a persistent session misses nothing published while it was reconnecting. The database is
    saved every second and at shutdown (`Mosquitto.saved_database` tells whether that worked)."""
    directory.mkdir(parents=True, exist_ok=True)
    # `user root`: mosquitto started as root drops to user "mosquitto", which cannot reach into private temporary
    # directories: every save then fails ("Permission denied" in its log), a restart forgets every session, and
    # messages published before a subscriber re-subscribes are lost on the broker's side.
    return f"persistence true\npersistence_location {directory}/\nautosave_interval 1\nuser root\n"


class Mosquitto:
    """A real mosquitto broker on 127.0.0.1 (free port, anonymous, no persistence)."""

    def __init__(self, workdir: Path, log_dir: Optional[Path] = None, port: Optional[int] = None,
                 extra_config: str = ""):
        self.workdir = workdir
        self.log_dir = log_dir
        self.host = "127.0.0.1"
        self.port = port or free_port()
        self.config = workdir / f"mosquitto-{self.port}.conf"
        self.extra_config = extra_config
        self.process: Optional[Process] = None

    def start(self, timeout: float = 10.0) -> "Mosquitto":
        self.config.write_text(
            f"listener {self.port} {self.host}\nallow_anonymous true\npersistence false\n"
            f"log_dest stderr\nlog_type error\nlog_type warning\nlog_type notice\n{self.extra_config}\n")
        self.process = Process(["mosquitto", "-c", self.config], f"mosquitto-{self.port}",
                               log_dir=self.log_dir).start()

        def accepting():
            if not self.process.running:
                raise RuntimeError(f"mosquitto exited: {self.process.stderr[-2000:]}")
            with socket.socket() as s:
                s.settimeout(0.5)
                return s.connect_ex((self.host, self.port)) == 0
        wait_until(accepting, timeout, f"mosquitto not accepting on {self.port}")
        return self

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()

    def kill(self) -> None:
        if self.process is not None:
            self.process.kill()

    def restart(self, timeout: float = 10.0) -> "Mosquitto":
        self.stop()
        return self.start(timeout)

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.running

    def saved_database(self) -> bool:
        """False when this broker's log says a save of its persistence database failed (see
        `persistent_broker_config`)."""
        return self.process is None or "Error saving in-memory database" not in self.process.stderr


class Message:
    def __init__(self, topic: str, payload: bytes, qos: int, retain: bool):
        self.topic, self.payload, self.qos, self.retain = topic, payload, qos, retain
        self.time = time.monotonic()

    @property
    def text(self) -> str:
        return self.payload.decode("utf-8", errors="replace")

    def json(self) -> Any:
        return json.loads(self.payload)

    def __repr__(self) -> str:
        return f"Message({self.topic!r}, {self.payload!r}, qos={self.qos}, retain={self.retain})"


class MqttClient:
    """A paho-mqtt (2.x) test client that records every message on its subscriptions."""

    def __init__(self, host: str, port: int, topics: Iterable[str] = ("#",), client_id: Optional[str] = None,
                 protocol: str = "5", qos: int = 2):
        import paho.mqtt.client as mqtt
        self._mqtt = mqtt
        proto = mqtt.MQTTv5 if protocol == "5" else mqtt.MQTTv311
        self.client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=client_id or f"bench-{os.getpid()}-"
                                  f"{time.monotonic_ns()}", protocol=proto)
        self.topics = list(topics)
        self.qos = qos
        self.messages: list[Message] = []
        self._cond = threading.Condition()
        self._subscribed = threading.Event()
        self.client.on_connect = self._on_connect
        self.client.on_subscribe = lambda *a, **k: self._subscribed.set()
        self.client.on_message = self._on_message
        self.client.connect(host, port)
        self.client.loop_start()
        if not self._subscribed.wait(10):
            self.close()
            raise TimeoutError("MQTT test client did not get its subscription acknowledged")

    def _on_connect(self, client, userdata, flags, reason_code, properties=None):
        if self.topics:
            client.subscribe([(t, self.qos) for t in self.topics])
        else:
            self._subscribed.set()

    def _on_message(self, client, userdata, msg):
        with self._cond:
            self.messages.append(Message(msg.topic, bytes(msg.payload), msg.qos, bool(msg.retain)))
            self._cond.notify_all()

    def mark(self) -> int:
        with self._cond:
            return len(self.messages)

    def received(self, topic: str = "#", since: int = 0) -> list[Message]:
        with self._cond:
            return [m for m in self.messages[since:] if self._mqtt.topic_matches_sub(topic, m.topic)]

    def wait_for(self, topic: str, predicate: Optional[Callable[[Message], bool]] = None, timeout: float = 10.0,
                 since: int = 0) -> Message:
        """First message (from index `since`, default the beginning) on `topic` (wildcards allowed) that
        satisfies `predicate`; a str predicate matches the payload text exactly."""
        if isinstance(predicate, str):
            text = predicate
            predicate = lambda m: m.text == text  # noqa: E731
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for m in self.messages[since:]:
                    if self._mqtt.topic_matches_sub(topic, m.topic) and (predicate is None or predicate(m)):
                        return m
                left = deadline - time.monotonic()
                if left <= 0:
                    seen = [m for m in self.messages[since:] if self._mqtt.topic_matches_sub(topic, m.topic)]
                    raise TimeoutError(f"no MQTT message on {topic!r} matching within {timeout}s; "
                                       f"seen there: {seen[-5:]}")
                self._cond.wait(min(left, 0.2))

    def wait_count(self, topic: str, n: int, timeout: float = 10.0, since: int = 0) -> list[Message]:
        wait_until(lambda: len(self.received(topic, since)) >= n, timeout, f"fewer than {n} messages on {topic}")
        return self.received(topic, since)

    def publish(self, topic: str, payload: Union[str, bytes], qos: int = 1, retain: bool = False,
                timeout: float = 10.0) -> None:
        info = self.client.publish(topic, payload, qos=qos, retain=retain)
        info.wait_for_publish(timeout)

    def close(self) -> None:
        try:
            self.client.disconnect()
        finally:
            self.client.loop_stop()


class SdNotifyListener:
    """A NOTIFY_SOCKET for sd_notify tests: pass `env` to the daemon, read `messages` (one dict per datagram)."""

    def __init__(self, workdir: Path):
        self.path = workdir / f"notify-{time.monotonic_ns()}.sock"
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(str(self.path))
        self.sock.settimeout(0.2)
        self.messages: list[dict[str, str]] = []
        self._cond = threading.Condition()
        self._closed = False
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    @property
    def env(self) -> dict[str, str]:
        return {"NOTIFY_SOCKET": str(self.path)}

    def _run(self) -> None:
        while not self._closed:
            try:
                data = self.sock.recv(4096)
            except socket.timeout:
                continue
            except OSError:
                return
            fields = dict(line.split("=", 1) for line in data.decode(errors="replace").splitlines() if "=" in line)
            fields["_t"] = time.monotonic()     # arrival time: orders datagrams against MQTT, measures pet intervals
            with self._cond:
                self.messages.append(fields)
                self._cond.notify_all()

    def mark(self) -> int:
        with self._cond:
            return len(self.messages)

    def since(self, index: int, key: Optional[str] = None) -> list[dict]:
        with self._cond:
            return [m for m in self.messages[index:] if key is None or key in m]

    def wait_for_match(self, predicate: Callable[[dict], bool], timeout: float = 10.0, since: int = 0) -> dict:
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for m in self.messages[since:]:
                    if predicate(m):
                        return m
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"no matching sd_notify message within {timeout}s; got {self.messages[-8:]}")
                self._cond.wait(min(left, 0.2))

    def wait_status(self, text: str, timeout: float = 15.0, since: int = 0) -> dict:
        return self.wait_for_match(lambda m: text in m.get("STATUS", ""), timeout, since)

    def wait_for(self, key: str, value: Optional[str] = None, timeout: float = 10.0, since: int = 0) -> dict:
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for m in self.messages[since:]:
                    if key in m and (value is None or m[key] == value):
                        return m
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"no sd_notify {key}={value} within {timeout}s; got {self.messages[-5:]}")
                self._cond.wait(min(left, 0.2))

    def close(self) -> None:
        self._closed = True
        self._thread.join(2)
        self.sock.close()
        self.path.unlink(missing_ok=True)


# --- the bench --------------------------------------------------------------------------------------------------

class Bench:
    """Owns every process of one test (or one manual session). `close()` ends them all."""

    def __init__(self, workdir: Optional[Path] = None, dbus: Optional[DBusDaemon] = None, start_bluezoo: bool = True,
                 scan_interval: int = 1, connect_fail_delay: float = 2.0):
        self._own_workdir = workdir is None
        self.workdir = Path(workdir or tempfile.mkdtemp(prefix="gattbridge-bench-"))
        self.log_dir = self.workdir / "logs"
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self._own_dbus = dbus is None
        self._closers: list[Callable[[], None]] = []
        self.peripherals: list[Peripheral] = []
        self.processes: list[Process] = []
        self.brokers: list[Mosquitto] = []
        self.mqtt_clients: list[MqttClient] = []
        self._generic_count = 0
        self.dbus = dbus or DBusDaemon(self.workdir, self.log_dir).start()
        self.env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=self.dbus.address, PYTHONUNBUFFERED="1",
                        PYTHONPATH=str(REPO))
        # sd-bus in this process reads the variable when the connection opens.
        self._saved_address = os.environ.get("DBUS_SYSTEM_BUS_ADDRESS")
        os.environ["DBUS_SYSTEM_BUS_ADDRESS"] = self.dbus.address
        self.bus = BusThread()
        self.bluez = BlueZoo(self.env, self.bus, self.log_dir, scan_interval=scan_interval,
                             connect_fail_delay=connect_fail_delay)
        self._central: Optional[Central] = None
        if start_bluezoo:
            try:
                self.bluez.start()
            except BaseException:
                self.close()
                raise

    def __enter__(self) -> "Bench":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def bus_address(self) -> str:
        return self.dbus.address

    @property
    def central(self) -> Central:
        """A test-side central on hci0 (what gattbridge also uses)."""
        if self._central is None:
            self._central = Central(self.bus, "hci0")
        return self._central

    def peripheral(self, kind: str, address: Optional[str] = None, wait_ready: bool = True, **options: Any) -> Peripheral:
        """Starts a simulated peripheral on its own BlueZoo adapter, whose address is the peripheral's address.
        Options become command-line flags: name="X", rate=50, count=10, no_acquire_notify=True, log_notify=True,
        manufacturer_data={0xffff: "0102"}, service_data={"180d": "00"}, config={…} (generic), initial="01"."""
        if address is None:
            if kind in DEFAULT_ADDRESSES and all(p.address != DEFAULT_ADDRESSES[kind] for p in self.peripherals):
                address = DEFAULT_ADDRESSES[kind]
            else:
                self._generic_count += 1
                address = f"C0:FF:EE:00:01:{self._generic_count:02X}"
        adapter = self.bluez.add_adapter(address)
        p = Peripheral(kind, adapter, address, self.env, self.log_dir, **options)
        self.peripherals.append(p)
        return p.start(wait_ready)

    def broadcaster(self, format: str, address: Optional[str] = None, wait_ready: bool = True,
                    **options: Any) -> Peripheral:
        """A passive sensor on its own adapter (bench/peripherals/broadcaster.py): format bthome | pvvx | govee |
        xiaomi | ruuvi | ibeacon | eddystone;
        options bindkey_file=PATH, interval=S, event_hold=S, first_tick=N, name=…"""
        return self.peripheral("broadcaster", address, wait_ready, format=format, **options)

    def crowd(self, addresses: Iterable[str], size: int = 250, interval: float = 1.0) -> Peripheral:
        """Forged BTHome broadcasters flooding, one adapter per address, in one process (bench/peripherals/crowd.py):
        advertisements of `size` bytes (250: extended; 31: legacy) full of numbered repeats of new object ids."""
        addresses = [a.upper() for a in addresses]
        members = [f"{self.bluez.add_adapter(a)}={a}" for a in addresses]
        p = Peripheral("crowd", members[0].split("=")[0], addresses[0], self.env, self.log_dir, member=members,
                       size=size, interval=interval)
        self.peripherals.append(p)
        return p.start(True)

    def mosquitto(self, port: Optional[int] = None, extra_config: str = "") -> Mosquitto:
        broker = Mosquitto(self.workdir, self.log_dir, port, extra_config)
        self.brokers.append(broker)
        return broker.start()

    def mqtt_client(self, broker: Optional[Mosquitto] = None, topics: Iterable[str] = ("#",), **kw: Any) -> MqttClient:
        broker = broker or self.brokers[-1]
        client = MqttClient(broker.host, broker.port, topics, **kw)
        self.mqtt_clients.append(client)
        return client

    def run_gattbridge(self, args: list[str], env: Optional[dict[str, str]] = None, stdin: bool = False,
                       binary: Optional[Path] = None, name: str = "gattbridge") -> Process:
        """Spawns gattbridge with the bench's DBUS_SYSTEM_BUS_ADDRESS (plus `env`); stdout/stderr captured."""
        binary = Path(binary or gattbridge_bin())
        if not binary.exists():
            raise FileNotFoundError(f"gattbridge binary not found at {binary} (build it: swift build; "
                                    f"or set GATTBRIDGE_BIN)")
        proc = Process([binary, *args], name, env={**self.env, **(env or {})}, cwd=self.workdir,
                       log_dir=self.log_dir, stdin=stdin).start()
        self.processes.append(proc)
        return proc

    def sd_notify_listener(self) -> SdNotifyListener:
        listener = SdNotifyListener(self.workdir)
        self._closers.append(listener.close)
        return listener

    def close(self) -> None:
        """Ends everything, in reverse order of dependence; never raises."""
        def quietly(fn: Callable[[], Any]) -> None:
            try:
                fn()
            except Exception:  # noqa: BLE001 - cleanup must go on
                pass
        for proc in self.processes:
            quietly(proc.kill)
        for p in self.peripherals:
            quietly(p.kill)
        for c in self.mqtt_clients:
            quietly(c.close)
        for b in self.brokers:
            quietly(b.kill)
        for fn in self._closers:
            quietly(fn)
        quietly(self.bluez.kill)
        quietly(self.bus.close)
        if self._own_dbus:
            quietly(self.dbus.stop)
        if self._saved_address is None:
            os.environ.pop("DBUS_SYSTEM_BUS_ADDRESS", None)
        else:
            os.environ["DBUS_SYSTEM_BUS_ADDRESS"] = self._saved_address
        if self._own_workdir and os.environ.get("BENCH_KEEP") != "1":
            shutil.rmtree(self.workdir, ignore_errors=True)
