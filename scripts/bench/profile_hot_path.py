"""`make profile`: where gattbridge's CPU per notification goes, beside the floor relay, on one path at one rate.

`make bench` says how far gattbridge is from the floor; this says why. It starts the bench world, then for each
subject (gattbridge, release build; the floor relay on the twin peripheral) streams `--count` notifications at
`--rate` on `--path` and attaches, for the stream's duration:

- `strace -f -c` (the default): system calls per notification by name, all threads. The floor relay makes the
  fewest calls BlueZ's API and libmosquitto allow; every extra call per notification is gattbridge's own cost.
- `switches`: context switches per notification, by thread (from /proc; no tracer attached, so undisturbed).
- `trace`: every system call with its thread and time (`strace -f -tt`), to read one notification's way.
- `perf`: `perf record -g` sampling (cpu-clock: this VM has no hardware counters), then `perf report` by symbol
  (`make profile` builds the release binary with its symbols kept).
- `callgrind`: user-space instructions per notification, by library and by function (the subject runs under
  valgrind's callgrind from its start, counting only while the notifications stream). The one figure here that
  two builds can be compared by on a busy machine: the CPU time rounds of `make bench` scatter by ±10 % per round
  here, an instruction count by well under 1 %. Valgrind runs the process some 50 times slower, so use a rate it
  keeps up with (`--rate 200`): each notification is then handled on its own, as at 1 kHz on a quiet machine.

`--path hr` is a decoded value: heart-rate stamps on the signal path through a `codec: heart_rate_measurement`
channel at `--qos` (the floor relay publishes the same notifications' raw bytes). With callgrind it also prints the
instructions per value of decoding and publishing it (`ChannelPublisher.publish`, inclusive: the codec, the JSON,
the hand-over to libmosquitto) and whether it is within issue 45's budget of 5,000, beside the loop thread's total.

Counts, not timings, so a loaded machine still gives the same answer. Output on stdout. Needs `strace`, `perf` or
`valgrind` (Debian: `apt install strace linux-perf valgrind`).

    .venv/bin/python scripts/bench/profile_hot_path.py [--path fd|sig|hr] [--qos 0|1] [--rate 1000] [--count 5000]
                                                       [--tool strace|perf|callgrind] [--subjects gattbridge,floor]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import BASE, REPO, StampSubscriber, World  # noqa: E402
from run_bench import connect_twins, start_relay  # noqa: E402


def log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


class ThreadSwitches:
    """`switches`: context switches per thread (voluntary, involuntary) from /proc, read before and after."""

    def __init__(self, pid: int, out: Path):
        self.pid, self.out = pid, out
        self.before = self.read()

    def read(self) -> dict[str, tuple[str, int, int]]:
        threads = {}
        for task in Path(f"/proc/{self.pid}/task").iterdir():
            try:
                status = (task / "status").read_text()
            except OSError:
                continue
            fields = dict(line.split(":\t", 1) for line in status.splitlines() if ":\t" in line)
            threads[task.name] = (fields.get("Name", "?").strip(), int(fields["voluntary_ctxt_switches"]),
                                  int(fields["nonvoluntary_ctxt_switches"]))
        return threads

    def send_signal(self, _sig) -> None:
        after = self.read()
        rows = []
        for tid, (name, vol, invol) in sorted(after.items()):
            _, vol0, invol0 = self.before.get(tid, (name, 0, 0))
            rows.append({"tid": tid, "name": name, "voluntary": vol - vol0, "involuntary": invol - invol0})
        self.out.write_text(json.dumps(rows))

    def wait(self, _timeout=None) -> None:
        pass


class Callgrind:
    """`callgrind`: the subject was started under valgrind with instrumentation off (`wrap`); it is switched on when
    attached and the counters zeroed, then dumped when detached."""

    def __init__(self, pid: int, out: Path):
        self.pid, self.out = pid, out
        self.control("--instr=on")
        time.sleep(2.0)     # instrumenting costs a burst of translation; let it pass before counting
        self.control("--zero")

    def control(self, *args: str) -> None:
        subprocess.run(["callgrind_control", *args, str(self.pid)], capture_output=True, timeout=120, check=True)

    def send_signal(self, _sig) -> None:
        self.control("--dump=notifications")

    def wait(self, _timeout=None) -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not list(self.out.parent.glob(f"{self.out.name}.{self.pid}.*")):
            time.sleep(0.1)


def wrap(binary: Path, out: Path) -> Path:
    """A script that starts `binary` under callgrind, instrumentation off until `Callgrind` switches it on."""
    for old in out.parent.glob(f"{out.name}.*"):
        old.unlink()
    script = out.with_suffix(".sh")
    script.write_text(f"#!/bin/sh\nexec valgrind --tool=callgrind --instr-atstart=no "
                      f"--callgrind-out-file={shlex.quote(str(out) + '.%p')} {shlex.quote(str(binary))} \"$@\"\n")
    script.chmod(0o755)
    return script


def callgrind_table(out: Path, notifications: int, limit: int = 25) -> str:
    """Instructions per notification: the total, by library, and the functions that cost the most themselves."""
    # `<out>.<pid>.<n>` is the dump taken on detach; `<out>.<pid>` is written at exit, after the counters were used.
    dumps = sorted(p for p in out.parent.glob(f"{out.name}.*") if re.search(r"\.\d+\.\d+$", p.name))
    if not dumps:
        return "no callgrind dump"
    report = subprocess.run(["callgrind_annotate", "--auto=no", "--threshold=100", "--inclusive=no", str(dumps[0])],
                            capture_output=True, text=True).stdout
    rows, by_object, total = [], {}, 0
    for line in report.splitlines():
        m = re.match(r"\s*([\d,]+)\s+\([ \d.]+%\)\s+(.*)$", line)
        if not m:
            continue
        count = int(m.group(1).replace(",", ""))
        if "PROGRAM TOTALS" in line:
            total = count
            continue
        where = m.group(2)
        obj = re.search(r"\[([^\]]*)\]\s*$", where)
        name = Path(obj.group(1)).name if obj else "(own code, inlined)"
        by_object[name] = by_object.get(name, 0) + count
        rows.append((count, where))
    n = max(1, notifications)
    lines = [f"instructions per notification: {total / n:,.0f}"]
    lines += [f"  {count / n:>10,.0f}  {name}" for name, count in sorted(by_object.items(), key=lambda kv: -kv[1])]
    lines.append("the functions that cost the most themselves (per notification):")
    lines += [f"  {count / n:>10,.0f}  {where[:150]}" for count, where in rows[:limit]]
    return "\n".join(lines)


# The decode-and-publish of one value: the notification path hands each value to `ChannelPublisher.publish` (or, for a
# value read, `publishRead`); inclusive counts take in the codec, the JSON writer and the hand-over to libmosquitto.
PUBLISH_SYMBOL = re.compile(r"16ChannelPublisherC7publish(Read)?y")
# Issue 45's budget for decode + publish of a heart-rate value, instructions.
PUBLISH_BUDGET = 5000


def callgrind_publish(out: Path, notifications: int) -> str:
    """Instructions per value inside `ChannelPublisher.publish`, inclusive of what it calls."""
    dumps = sorted(p for p in out.parent.glob(f"{out.name}.*") if re.search(r"\.\d+\.\d+$", p.name))
    if not dumps:
        return "no callgrind dump"
    report = subprocess.run(["callgrind_annotate", "--auto=no", "--threshold=100", "--inclusive=yes", str(dumps[0])],
                            capture_output=True, text=True).stdout
    n = max(1, notifications)
    rows = []
    for line in report.splitlines():
        m = re.match(r"\s*([\d,]+)\s+\([ \d.]+%\)\s+(.*)$", line)
        if m and PUBLISH_SYMBOL.search(m.group(2)):
            rows.append((int(m.group(1).replace(",", "")), m.group(2)))
    if not rows:
        return "decode + publish per value: ChannelPublisher.publish not found (inlined, or no symbols: `make profile`)"
    count, where = max(rows)
    verdict = "within" if count / n <= PUBLISH_BUDGET else "OVER"
    return (f"decode + publish per value (ChannelPublisher.publish, inclusive): {count / n:,.0f} instructions, "
            f"{verdict} the budget of {PUBLISH_BUDGET:,}  [{where[:100]}]")


def attach(tool: str, pid: int, out: Path):
    if tool == "callgrind":
        return Callgrind(pid, out)
    if tool == "switches":
        return ThreadSwitches(pid, out)
    if tool == "strace":
        cmd = ["strace", "-f", "-c", "-o", str(out), "-p", str(pid)]
    elif tool == "trace":
        cmd = ["strace", "-f", "-tt", "-o", str(out), "-p", str(pid)]
    else:
        cmd = ["perf", "record", "-e", "cpu-clock", "-F", "4999", "-g", "-o", str(out), "-p", str(pid)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    time.sleep(1.0)     # strace/perf need a moment to attach to every thread; nothing is streaming yet
    return proc


def detach(proc) -> None:
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()


def stream(world: World, stamps: StampSubscriber, peripheral, topic: str, burst: int, rate: float,
           count: int) -> int:
    start = len(stamps.poll())
    since = peripheral.burst(burst, rate, count)
    peripheral.wait_burst(burst, since, timeout=count / rate * 4 + 30)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        got = sum(1 for t, b, *_ in stamps.poll()[start:] if t == topic and b == burst)
        if got >= count:
            return got
        time.sleep(0.05)
    return sum(1 for t, b, *_ in stamps.poll()[start:] if t == topic and b == burst)


def strace_table(path: Path, notifications: int) -> list[tuple[str, float]]:
    rows = []
    for line in path.read_text().splitlines():
        fields = line.split()
        # % time, seconds, usecs/call, calls, [errors], syscall
        if len(fields) >= 5 and re.fullmatch(r"[\d.]+", fields[0]) and fields[-1] != "total":
            calls = int(fields[3])
            rows.append((fields[-1], calls / max(1, notifications)))
    return sorted(rows, key=lambda r: -r[1])


def perf_table(path: Path, limit: int = 40) -> str:
    report = subprocess.run(["perf", "report", "-i", str(path), "--no-children", "--sort", "dso,sym", "--stdio",
                             "--percent-limit", "0.7", "-g", "none"], capture_output=True, text=True)
    lines = [line for line in report.stdout.splitlines() if line and not line.startswith("#")]
    return "\n".join(lines[:limit])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--path", choices=("fd", "sig", "hr"), default="fd")
    ap.add_argument("--qos", type=int, choices=(0, 1), default=0, help="the hr path's channel QoS (and the relay's)")
    ap.add_argument("--rate", type=float, default=1000)
    ap.add_argument("--count", type=int, default=5000)
    ap.add_argument("--tool", choices=("strace", "trace", "switches", "perf", "callgrind"), default="strace")
    ap.add_argument("--subjects", default="gattbridge,floor")
    ap.add_argument("--out-dir", default=str(REPO / ".bench" / "profile"))
    a = ap.parse_args()
    subjects = [s for s in a.subjects.split(",") if s]
    out_dir = Path(a.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    world = World(floor="floor" in subjects, decoded=a.path == "hr", decoded_qos=a.qos)
    if a.tool == "callgrind":
        # The bench starts both subjects from these variables (scripts/bench/common.py).
        from common import floor_relay_binary, gattbridge_binary
        os.environ["GATTBRIDGE_BIN"] = str(wrap(gattbridge_binary(), out_dir / f"gattbridge-{a.path}.callgrind"))
        if "floor" in subjects:
            os.environ["FLOOR_RELAY_BIN"] = str(wrap(floor_relay_binary(), out_dir / f"floor-{a.path}.callgrind"))
    results: dict[str, dict] = {}
    try:
        stamps = StampSubscriber(world.bench, world.broker.port)
        burst = 900
        if "gattbridge" in subjects:
            gb = world.start_gattbridge()
            world.wait_online(timeout=180 if a.tool == "callgrind" else 60)
            # Under valgrind, past start-up's last one-time work too (slow there): it would otherwise be counted as the
            # notifications' work.
            time.sleep(20 if a.tool == "callgrind" else 2)
            peripheral = {"fd": world.fd, "sig": world.sig, "hr": world.hr}[a.path]
            out = out_dir / f"gattbridge-{a.path}.{a.tool}"
            tracer = attach(a.tool, gb.pid, out)
            burst += 1
            got = stream(world, stamps, peripheral, f"{BASE}/{a.path}/stamp", burst, a.rate, a.count)
            detach(tracer)
            results["gattbridge"] = {"file": out, "received": got}
            gb.stop()
        if "floor" in subjects:
            connect_twins(world)
            peripheral = {"fd": world.floor_fd, "sig": world.floor_sig, "hr": world.floor_hr}[a.path]
            topic = f"{BASE}/floor_{a.path}/stamp"
            relay, _ = start_relay(world, a.path, a.qos if a.path == "hr" else 1)
            out = out_dir / f"floor-{a.path}.{a.tool}"
            tracer = attach(a.tool, relay.pid, out)
            burst += 1
            got = stream(world, stamps, peripheral, topic, burst, a.rate, a.count)
            detach(tracer)
            results["floor"] = {"file": out, "received": got}
            relay.signal(signal.SIGTERM)
            relay.wait(10)
    finally:
        world.close()

    print(f"\nhot-path profile — {a.path} path, {a.count} notifications at {a.rate:.0f}/s, {a.tool}")
    if a.tool == "strace":
        tables = {name: dict(strace_table(r["file"], r["received"])) for name, r in results.items()}
        names = sorted({n for t in tables.values() for n in t}, key=lambda n: -max(t.get(n, 0) for t in tables.values()))
        print(f"\nsystem calls per notification (all threads)")
        print(f"{'syscall':<18}" + "".join(f"{s:>12}" for s in tables))
        for n in names:
            print(f"{n:<18}" + "".join(f"{tables[s].get(n, 0):>12.3f}" for s in tables))
        print(f"{'total':<18}" + "".join(f"{sum(tables[s].values()):>12.3f}" for s in tables))
        for name, r in results.items():
            print(f"{name}: {r['received']} of {a.count} received; raw table in {r['file']}")
    elif a.tool == "switches":
        for name, r in results.items():
            print(f"\n{name}: context switches per notification by thread (voluntary + involuntary)")
            for row in json.loads(r["file"].read_text()):
                total = (row["voluntary"] + row["involuntary"]) / max(1, r["received"])
                if total >= 0.001:
                    print(f"  {row['tid']:>8} {row['name']:<16} {total:.3f}  ({row['voluntary']} + {row['involuntary']})")
    elif a.tool == "callgrind":
        for name, r in results.items():
            print(f"\n--- {name}: {r['received']} of {a.count} received")
            print(callgrind_table(r["file"], r["received"]))
            if name == "gattbridge":
                print(callgrind_publish(r["file"], r["received"]))
    elif a.tool == "trace":
        for name, r in results.items():
            print(f"{name}: {r['received']} of {a.count} received; every system call in {r['file']}")
    else:
        for name, r in results.items():
            print(f"\n--- {name}: {r['received']} of {a.count} received; {r['file']}")
            print(perf_table(r["file"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
