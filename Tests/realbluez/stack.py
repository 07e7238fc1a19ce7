"""The real Bluetooth stack inside the QEMU guest: dbus-daemon, btvirt (emulated LE controllers on one shared
emulated air), bluetoothd, and optionally btmon. Only `scripts/realbluez/guest.sh` runs this (see
docs/dev/REAL-BLUEZ.md); it needs the kernel's hci_vhci and root.

btvirt -L -l8 gives eight LE-only controllers in ONE process (two btvirt processes never hear each other):
hci0 is the central (gattbridge), hci1..hci3 are one simulated peripheral each, as on the BlueZoo bench, so
each peripheral has its own address and its own GATT database. Addresses are btvirt's, read at start-up.
hci4 is a second central (adapters), hci5 the pairing peripheral (test_real_pairing.py), hci6 and hci7 the
passive broadcasters (test_real_adverts.py).
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Optional

from bench.bench import DBusDaemon, wait_until
from bench.central import BusThread

BLUETOOTHD = "/usr/libexec/bluetooth/bluetoothd"
CONTROLLERS = 8


class Daemon:
    """A long-running tool whose output goes straight to a log file (no Python reader threads: the guest's
    CPU is emulated, and bluetoothd -d is chatty)."""

    def __init__(self, args: list[str], log: Path, env: dict[str, str]):
        self.args, self.log, self.env = args, log, env
        self.popen: Optional[subprocess.Popen] = None

    def start(self) -> "Daemon":
        f = open(self.log, "ab", buffering=0)
        f.write(f"--- {time.monotonic():.3f} start {' '.join(self.args)}\n".encode())
        self.popen = subprocess.Popen(self.args, env=self.env, stdin=subprocess.DEVNULL, stdout=f,
                                      stderr=subprocess.STDOUT, start_new_session=True)
        f.close()
        return self

    @property
    def running(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 5.0) -> None:
        if not self.running:
            return
        self.popen.send_signal(sig)
        try:
            self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.popen.wait(5)


class RealBlueZ:
    def __init__(self, workdir: Path, log_dir: Path, btmon: Optional[Path] = None, debug: bool = True):
        self.workdir, self.log_dir = workdir, log_dir
        self.btmon_file = btmon
        self.debug = debug
        self.dbus = DBusDaemon(workdir, log_dir)
        self.env: dict[str, str] = {}
        self.btvirt: Optional[Daemon] = None
        self.btmon: Optional[Daemon] = None
        self.bluetoothd: Optional[Daemon] = None
        self.monitor: Optional[Daemon] = None
        self.bus: Optional[BusThread] = None
        self.addresses: dict[str, str] = {}      # hciN → address
        self.timings: dict[str, float] = {}

    def start(self) -> "RealBlueZ":
        self.dbus.start()
        os.environ["DBUS_SYSTEM_BUS_ADDRESS"] = self.dbus.address   # for sd-bus in this process
        self.env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=self.dbus.address, PYTHONUNBUFFERED="1")
        if os.environ.get("REALBLUEZ_DBUS_MONITOR") == "1":   # every message on the bus, with timestamps
            self.monitor = Daemon(["stdbuf", "-oL", "dbus-monitor", "--address", self.dbus.address],
                                  self.log_dir / "dbus-monitor.log", self.env).start()
        if self.btmon_file is not None:
            self.btmon = Daemon(["btmon", "-w", str(self.btmon_file)], self.log_dir / "btmon.log", self.env).start()
        btvirt_env = dict(self.env)
        shim = Path(os.environ.get("REALBLUEZ_OUT", "/nonexistent")) / "btvirt-handles.so"
        if shim.exists():   # scripts/realbluez/btvirt-handles.c: consistent handles with several connections
            btvirt_env["LD_PRELOAD"] = str(shim)
        self.btvirt = Daemon(["btvirt", "-L", f"-l{CONTROLLERS}"], self.log_dir / "btvirt.log", btvirt_env).start()
        wait_until(lambda: all(Path(f"/sys/class/bluetooth/hci{i}").exists() for i in range(CONTROLLERS)), 20,
                   "btvirt's controllers did not appear")
        self.bus = BusThread()
        self.start_bluetoothd()
        for i in range(CONTROLLERS):
            self.addresses[f"hci{i}"] = self.bus.get_property("org.bluez", f"/org/bluez/hci{i}",
                                                              "org.bluez.Adapter1", "Address").upper()
        return self

    def start_bluetoothd(self, timeout: float = 30.0) -> None:
        args = [BLUETOOTHD, "-n"] + (["-d"] if self.debug else [])
        t0 = time.monotonic()
        self.bluetoothd = Daemon(args, self.log_dir / "bluetoothd.log", self.env).start()

        def powered():
            if not self.bluetoothd.running:
                raise RuntimeError(f"bluetoothd exited ({self.bluetoothd.popen.returncode}); see bluetoothd.log")
            try:
                return all(self.bus.get_property("org.bluez", f"/org/bluez/hci{i}", "org.bluez.Adapter1", "Powered",
                                                 timeout=2) for i in range(CONTROLLERS))
            except Exception:  # noqa: BLE001 - not up yet
                return False
        wait_until(powered, timeout, "bluetoothd did not power every adapter")
        self.timings.setdefault("bluetoothd_ready_s", time.monotonic() - t0)

    def kill_bluetoothd(self) -> None:
        """SIGKILL, as a crash: clients only see org.bluez's NameOwnerChanged."""
        self.bluetoothd.stop(signal.SIGKILL)
        wait_until(lambda: not self.bus.name_has_owner("org.bluez"), 10, "org.bluez still owned")

    def set_powered(self, adapter: str, on: bool) -> None:
        self.bus.call("org.bluez", f"/org/bluez/{adapter}", "org.freedesktop.DBus.Properties", "Set", "ssv",
                      "org.bluez.Adapter1", "Powered", ("b", on), timeout=15)
        wait_until(lambda: self.bus.get_property("org.bluez", f"/org/bluez/{adapter}", "org.bluez.Adapter1",
                                                 "Powered") == on, 15, f"{adapter} Powered never became {on}")

    def btmgmt_power(self, index: int, on: bool) -> None:
        """Powers a controller through the kernel's management interface, behind bluetoothd's back (as rfkill or a
        dongle's firmware would): bluetoothd only learns it from the kernel."""
        subprocess.run(["btmgmt", "--index", str(index), "power", "on" if on else "off"], env=self.env, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30)

    def freeze_btvirt(self, seconds: float, scan_on: str) -> None:
        """SIGSTOP btvirt for `seconds`, then SIGCONT: every emulated controller stops answering, as a wedged USB
        dongle does. Meanwhile discovery is started on `scan_on` (as another client), so the kernel sends HCI
        commands nobody answers and hits its command timeout (2 s); discovery is stopped again after the thaw."""
        self.btvirt.popen.send_signal(signal.SIGSTOP)
        outcome: list = []

        def scan() -> None:
            try:
                self.bus.call("org.bluez", f"/org/bluez/{scan_on}", "org.bluez.Adapter1", "StartDiscovery",
                              timeout=seconds + 20)
                outcome.append("ok")
            except Exception as error:  # noqa: BLE001 - the frozen controller may make it fail; either is fine
                outcome.append(error)
        thread = threading.Thread(target=scan)
        thread.start()
        try:
            time.sleep(seconds)      # the fault itself: controllers silent for this long
        finally:
            self.btvirt.popen.send_signal(signal.SIGCONT)
        thread.join(seconds + 30)
        if outcome == ["ok"]:
            try:
                self.bus.call("org.bluez", f"/org/bluez/{scan_on}", "org.bluez.Adapter1", "StopDiscovery")
            except Exception:  # noqa: BLE001 - bluetoothd may have ended it already
                pass

    @staticmethod
    def kernel_log() -> str:
        return subprocess.run(["dmesg"], capture_output=True, text=True, timeout=10).stdout

    def device(self, adapter: str, address: str) -> Optional[dict]:
        """Device1 properties of `address` as seen from `adapter`, or None when bluetoothd has no such object."""
        path = f"/org/bluez/{adapter}/dev_{address.replace(':', '_')}"
        return self.bus.managed_objects().get(path, {}).get("org.bluez.Device1")

    def close(self) -> None:
        for d in (self.bluetoothd, self.btvirt, self.btmon, self.monitor):
            if d is not None:
                d.stop()
        if self.bus is not None:
            self.bus.close()
        self.dbus.stop()

