"""`make memory`: the idle daemon's memory in a minute, where `make bench` takes eight: the release gattbridge on the
bench's world (private bus, BlueZoo, mosquitto, the fd/signal stamp peripherals and the HM-10: the three devices
`make bench` measures idle), three devices online, then `--idle-seconds` of idle; prints RSS/PSS/anonymous/file from
/proc/PID/smaps_rollup and where the resident bytes are, mapping by mapping, from /proc/PID/smaps. With `--burst N`
it then sends N notifications at 1 kHz down each path and, after the same idle, measures again (what traffic brings
back). The numbers are printed, never asserted.

    .venv/bin/python scripts/bench/memory.py [--idle-seconds 15] [--burst 5000] [--json out.json]
                                            [--memory-limit MiB]

With `--memory-limit` the daemon runs in a memory cgroup of its own, from a copy of the binary dropped from the page
cache, so the binary's pages are charged to it as they would be to the unit of an installed daemon; once its devices
are online and it has idled, the cgroup is limited to that much (cgroup v2 `memory.high` where the memory controller
is on v2, else v1 `memory.limit_in_bytes`, which reclaims the same way before it would kill: memory getting short
under a running daemon), and after another idle the figures are taken; the report adds the cgroup's own figures (usage, how often the limit was hit, its
anonymous and file pages) and the daemon's minor and major faults: what the kernel reclaims by itself under
pressure, and what that costs (docs/dev/MEMORY.md, "The page trim, measured and removed").

GATTBRIDGE_BIN chooses the binary (default: .build-release, what `make bench-build` makes); the daemon inherits the
environment.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import BASE, World, gattbridge_binary  # noqa: E402


def rollup(pid: int) -> dict[str, int]:
    """The kB fields of smaps_rollup that matter here."""
    out = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in ("Rss", "Pss", "Pss_Anon", "Pss_File", "Anonymous", "Private_Clean", "Private_Dirty",
                   "Shared_Clean", "Shared_Dirty"):
            out[key] = int(rest.split()[0])
    out["File"] = out.get("Rss", 0) - out.get("Anonymous", 0)
    return out


def mappings(pid: int, binary: Path) -> list[dict]:
    """One row per mapping class: the executable's mappings by permission, each shared library (all its mappings),
    heap, stacks and the other anonymous mappings."""
    rows: dict[tuple[str, str], dict] = {}
    current = None
    exe = str(binary.resolve())
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        head = line.split()
        if head and "-" in head[0] and len(head) >= 5 and ":" not in head[0]:
            path = head[5] if len(head) > 5 else ""
            perms = head[1]
            if path == exe:
                key = ("gattbridge", perms)
            elif path.startswith("/"):
                key = (os.path.basename(path), "")
            elif path in ("[heap]", "[stack]", "[vvar]", "[vdso]", "[vsyscall]"):
                key = (path, "")
            else:
                key = ("anonymous" + (" (.bss)" if current and current[0] == "gattbridge" else ""), perms)
            current = key
            rows.setdefault(key, {"mapping": key[0], "perms": key[1], "size": 0, "rss": 0, "pss": 0, "anon": 0})
            start, end = (int(x, 16) for x in head[0].split("-"))
            rows[key]["size"] += (end - start) // 1024
        elif current is not None and head and head[0] in ("Rss:", "Pss:", "Anonymous:"):
            field = {"Rss:": "rss", "Pss:": "pss", "Anonymous:": "anon"}[head[0]]
            rows[current][field] += int(head[1])
    return sorted(rows.values(), key=lambda r: -r["rss"])


def report(title: str, pid: int, binary: Path) -> dict:
    r = rollup(pid)
    rows = mappings(pid, binary)
    print(f"\n{title}: RSS {r['Rss'] / 1024:.2f} MiB, PSS {r['Pss'] / 1024:.2f} MiB, "
          f"anonymous {r['Anonymous'] / 1024:.2f} MiB, file-backed {r['File'] / 1024:.2f} MiB")
    print(f"  {'mapping':<34} {'perms':<5} {'size kB':>9} {'RSS kB':>8} {'PSS kB':>8} {'anon kB':>8}")
    for row in rows:
        if row["rss"]:
            print(f"  {row['mapping']:<34} {row['perms']:<5} {row['size']:>9} {row['rss']:>8} {row['pss']:>8} "
                  f"{row['anon']:>8}")
    return {"rollup_kb": r, "mappings": rows}


class MemoryCgroup:
    """A memory cgroup for the daemon (see the module's doc), removed again by `close()`."""

    def __init__(self, binary: Path):
        v2 = Path("/sys/fs/cgroup")
        controllers = v2 / "cgroup.controllers"
        if controllers.exists() and "memory" in controllers.read_text().split():
            self.v2, self.path = True, v2 / f"gattbridge-memory-{os.getpid()}"
        else:
            self.v2, self.path = False, Path("/sys/fs/cgroup/memory") / f"gattbridge-memory-{os.getpid()}"
        self.path.mkdir()
        # A copy of the binary out of the page cache: each page the daemon maps is then read in, and charged to the
        # cgroup, by the daemon itself (pages cached before, by a build or an earlier run, stay charged elsewhere).
        self.copies = Path(f"/tmp/gattbridge-memory-{os.getpid()}")
        self.copies.mkdir(exist_ok=True)
        copy = self.copies / "gattbridge"
        shutil.copyfile(binary, copy)
        copy.chmod(0o755)
        fd = os.open(copy, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
        self.wrapper = self.copies / "run.sh"
        self.wrapper.write_text(f"#!/bin/sh\necho $$ > {self.path}/cgroup.procs\nexec {copy} \"$@\"\n")
        self.wrapper.chmod(0o755)

    def limit(self, mib: float) -> None:
        (self.path / ("memory.high" if self.v2 else "memory.limit_in_bytes")).write_text(str(int(mib * 1024 * 1024)))

    def stats(self) -> dict[str, int]:
        out: dict[str, int] = {}
        if self.v2:
            out["usage_kb"] = int((self.path / "memory.current").read_text()) // 1024
            for line in (self.path / "memory.events").read_text().splitlines():
                key, value = line.split()
                out[f"events_{key}"] = int(value)
            sizes, counts = {"anon", "file", "file_mapped"}, {"pgmajfault", "workingset_refault_file"}
        else:
            out["usage_kb"] = int((self.path / "memory.usage_in_bytes").read_text()) // 1024
            out["max_usage_kb"] = int((self.path / "memory.max_usage_in_bytes").read_text()) // 1024
            out["failcnt"] = int((self.path / "memory.failcnt").read_text())
            sizes, counts = {"rss", "cache", "mapped_file", "active_file", "inactive_file"}, {"pgmajfault"}
        for line in (self.path / "memory.stat").read_text().splitlines():
            key, value = line.split()
            if key in sizes:
                out[f"{key}_kb"] = int(value) // 1024     # bytes in memory.stat
            elif key in counts:
                out[key] = int(value)
        return out

    def close(self) -> None:
        for _ in range(50):
            try:
                self.path.rmdir()
                break
            except OSError:
                time.sleep(0.1)     # the last process is still leaving the cgroup
        shutil.rmtree(self.copies, ignore_errors=True)


def faults(pid: int) -> dict[str, int]:
    """Minor and major page faults of the whole process (fields 10 and 12 of stat(5))."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return {"minflt": int(fields[7]), "majflt": int(fields[9])}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--idle-seconds", type=float, default=15)
    ap.add_argument("--burst", type=int, default=0, help="then N notifications at 1 kHz on each path, idle, again")
    ap.add_argument("--json", help="also write the numbers here")
    ap.add_argument("--memory-limit", type=float, help="MiB: run the daemon in a memory cgroup limited to this")
    a = ap.parse_args()
    binary = gattbridge_binary()
    cgroup: Optional[MemoryCgroup] = MemoryCgroup(binary) if a.memory_limit else None
    if cgroup:
        os.environ["GATTBRIDGE_BIN"] = str(cgroup.wrapper)
    world = World()
    result: dict = {"binary": str(binary), "memory_limit_mib": a.memory_limit}

    def extra(pid: int) -> dict:
        figures: dict = {"faults": faults(pid)}
        if cgroup:
            figures["cgroup"] = cgroup.stats()
        print(f"  faults: {figures['faults']}" + (f"; cgroup: {figures['cgroup']}" if cgroup else ""))
        return figures
    try:
        listener = world.bench.sd_notify_listener()
        t0 = time.monotonic()
        gb = world.start_gattbridge(env=listener.env, log_level="info")
        listener.wait_for("READY", "1", timeout=30)
        result["start_to_ready_ms"] = round((time.monotonic() - t0) * 1000, 1)
        world.wait_online(timeout=60)
        result["start_to_online_ms"] = round((time.monotonic() - t0) * 1000, 1)
        print(f"{binary}: READY after {result['start_to_ready_ms']:.0f} ms, three devices online after "
              f"{result['start_to_online_ms']:.0f} ms; idle {a.idle_seconds:.0f} s…", file=sys.stderr)
        time.sleep(a.idle_seconds)
        if cgroup:
            result["before_limit"] = extra(gb.pid)
            result["before_limit"]["rollup_kb"] = rollup(gb.pid)
            print(f"memory cgroup {cgroup.path}: before the limit {result['before_limit']['rollup_kb']}; now "
                  f"{'v2 memory.high' if cgroup.v2 else 'v1 memory.limit_in_bytes'} {a.memory_limit:g} MiB, idle "
                  f"{a.idle_seconds:.0f} s…", file=sys.stderr)
            cgroup.limit(a.memory_limit)
            time.sleep(a.idle_seconds)
        result["idle"] = report(f"idle {a.idle_seconds:.0f} s, three devices online", gb.pid, binary)
        result["idle"] |= extra(gb.pid)
        if a.burst:
            bid = 1
            before = faults(gb.pid)
            result["burst_delivered"] = {}
            for path, p in (("fd", world.fd), ("sig", world.sig)):
                since = world.mqtt.mark()
                mark = p.burst(bid, 1000.0, a.burst)
                p.wait_burst(bid, mark, timeout=a.burst / 1000 * 4 + 30)
                try:
                    world.mqtt.wait_count(f"{BASE}/{path}/stamp", a.burst, timeout=30, since=since)
                    result["burst_delivered"][path] = True
                except TimeoutError:
                    result["burst_delivered"][path] = False
                    print(f"{path}: not every notification arrived (measuring anyway)", file=sys.stderr)
                bid += 1
            time.sleep(a.idle_seconds)
            result["after_burst"] = report(f"after {a.burst} notifications at 1 kHz on each path, idle "
                                           f"{a.idle_seconds:.0f} s", gb.pid, binary)
            result["after_burst"] |= extra(gb.pid)
            after = faults(gb.pid)
            result["burst_faults"] = {k: after[k] - before[k] for k in after}
            print(f"  faults during the bursts and the idle after: {result['burst_faults']}; "
                  f"all delivered: {result['burst_delivered']}")
        if not gb.running:
            print(f"gattbridge exited ({gb.returncode}): {gb.stderr_lines[-20:]}", file=sys.stderr)
            return 1
    finally:
        world.close()
        if cgroup:
            cgroup.close()
    if a.json:
        Path(a.json).write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
