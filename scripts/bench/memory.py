"""`make memory`: the idle daemon's memory in a minute, where `make bench` takes eight: the release gattbridge on the
bench's world (private bus, BlueZoo, mosquitto, the fd/signal stamp peripherals and the HM-10: the three devices
`make bench` measures idle), three devices online, then `--idle-seconds` of idle (the daemon trims its start-up
pages 5 s after the devices came online, so at least that); prints RSS/PSS/anonymous/file from
/proc/PID/smaps_rollup and where the resident bytes are, mapping by mapping, from /proc/PID/smaps. With `--burst N`
it then sends N notifications at 1 kHz down each path and, after the same idle, measures again (what traffic brings
back). The numbers are printed, never asserted.

    .venv/bin/python scripts/bench/memory.py [--idle-seconds 15] [--burst 5000] [--json out.json]

GATTBRIDGE_BIN chooses the binary (default: .build-release, what `make bench-build` makes); the daemon inherits the
environment, so e.g. GATTBRIDGE_NO_TRIM=1 measures it without its start-up page trim, and GATTBRIDGE_FAULT_AROUND=1
with the trim but with the kernel's fault-around on the trimmed mappings (docs/dev/MEMORY.md).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--idle-seconds", type=float, default=15)
    ap.add_argument("--burst", type=int, default=0, help="then N notifications at 1 kHz on each path, idle, again")
    ap.add_argument("--json", help="also write the numbers here")
    a = ap.parse_args()
    binary = gattbridge_binary()
    world = World()
    result: dict = {"binary": str(binary)}
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
        result["idle"] = report(f"idle {a.idle_seconds:.0f} s, three devices online", gb.pid, binary)
        if a.burst:
            bid = 1
            for path, p in (("fd", world.fd), ("sig", world.sig)):
                since = world.mqtt.mark()
                mark = p.burst(bid, 1000.0, a.burst)
                p.wait_burst(bid, mark, timeout=a.burst / 1000 * 4 + 30)
                try:
                    world.mqtt.wait_count(f"{BASE}/{path}/stamp", a.burst, timeout=30, since=since)
                except TimeoutError:
                    print(f"{path}: not every notification arrived (measuring anyway)", file=sys.stderr)
                bid += 1
            time.sleep(a.idle_seconds)
            result["after_burst"] = report(f"after {a.burst} notifications at 1 kHz on each path, idle "
                                           f"{a.idle_seconds:.0f} s", gb.pid, binary)
        trims = [line for line in gb.stderr_lines + gb.stdout_lines if "trim" in line.lower()]
        for line in trims:
            print(f"log: {line}")
        if not gb.running:
            print(f"gattbridge exited ({gb.returncode}): {gb.stderr_lines[-20:]}", file=sys.stderr)
            return 1
    finally:
        world.close()
    if a.json:
        Path(a.json).write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
