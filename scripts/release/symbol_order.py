"""Regenerates scripts/release/symbol-order.txt and unnamed-order.ld, the order `make release` gives the linker for the
daemon's functions.

Why: the release binary has 12 MB of code, and the daemon runs about 1 MB of it, spread over the whole file. Every
page the kernel maps for it stays resident until memory gets short, and the kernel faults around (64 KB at a time), so
without an order the idle daemon kept ~7.5 MB of code mapped; with the functions it runs packed together, ~4.5 MB,
and under memory pressure the pages it keeps using are few and hold little else (docs/dev/MEMORY.md). A stale list is
harmless (new functions just keep their default place); regenerate it when the daemon's code changed a lot.

How: runs an unstripped release binary under valgrind's callgrind against the simulated bench (the three demo
peripherals, a second heart rate strap without AcquireNotify, two BTHome broadcasters, mosquitto, `gattbridge run -c
config/demo.yaml` with that strap added), waits until every device is online and then `SETTLE` seconds (callgrind
dumps the profile so far: start-up), idles (another dump), exercises commands and reads, and stops it with SIGTERM. Broadcasts are
part of the steady state: one broadcaster is the demo's saved passive `balcony-thermometer`, the other an unlisted
sensor the demo's `auto: [bthome]` adopts, each sending a new packet a second, so the discovery signals, decoders, the
tracker and their publishes run after start-up and their functions are packed with the rest of the steady state's
(otherwise a daemon with broadcasters maps megabytes of code pages back in, docs/performance.md#passive-broadcasts).
The second strap's notifications take BlueZ's signal path, so the connection's property taps, which every other
signal passes too once a device uses them, are in the steady state as well. The order lists the binary's functions
that ran in the idle steady state, most expensive first, then those the commands and the shutdown added, then those
that ran only during start-up: the steady state's functions go first and share as few pages as possible with the
rest, so the pages it keeps using are few and the start-up-only ones are the kernel's to reclaim. Names that live in large input sections (the
toolchain's static libraries are not compiled one function per section) are left out: the linker would move the whole
section, and local helpers such as `__swift_instantiateConcreteTypeFromMangledName` share one name across objects, so
one of them could drag a big unrelated section into the hot pages.

LLVM's private functions (closure context destroyers, `__unnamed_N` helpers, extra-inhabitant witnesses) have no
symbol, so no ordering file can name them; each one the steady state ran kept a 64 KB window of its own mapped. The
profile records instruction addresses, which the linker map turns into input sections; those of the package's own
objects that define no symbol and ran in the steady state or the commands go, in that order, into
scripts/release/unnamed-order.ld, a linker script that places them just before `.text`, next to the ordered
functions.

    .venv/bin/python scripts/release/symbol_order.py [--binary PATH] [--seconds 60]

Without --binary (and its linker --map) it builds one with `make release`'s flags, not stripped, in
.build-symbol-order.
"""

from __future__ import annotations

import argparse
import bisect
import collections
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
OUTPUT = REPO / "scripts/release/symbol-order.txt"
UNNAMED_OUTPUT = REPO / "scripts/release/unnamed-order.ld"
SCRATCH = REPO / ".build-symbol-order"     # where it builds the binary it profiles (without --binary)
UNNAMED_HEADER = """The package's unnamed functions (LLVM private: no symbol, so symbol-order.txt cannot name them) that the
   profiled steady state and commands ran, most expensive first, placed just before .text and so next to the ordered
   functions. Generated with symbol-order.txt by scripts/release/symbol_order.py; docs/dev/MEMORY.md says why. A
   stale line matches nothing and costs only memory."""


def build() -> tuple[Path, Path]:
    # `make release`'s flags without -s: callgrind needs the symbol table.
    make = ["make", "-s", "--no-print-directory", "-C", str(REPO)]
    subprocess.run(make + ["release-prep"], check=True)
    flags = subprocess.run(make + ["print-release-flags"], check=True, capture_output=True, text=True).stdout.split()
    flags = without_unnamed_order(flags)
    link_map = SCRATCH / "gattbridge.map"
    subprocess.run(["swift", "build", *flags, "-Xlinker", f"-Map={link_map}", "--scratch-path", str(SCRATCH)],
                   cwd=REPO, check=True)
    return SCRATCH / "release/gattbridge", link_map


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    sys.exit(f"symbol_order: timed out waiting for {what}")


# The broadcasters: the demo config's saved passive `balcony-thermometer`, and one it does not list (an `auto` device).
SAVED_BROADCASTER = "A4:C1:38:0B:70:01"
AUTO_BROADCASTER = "A4:C1:38:0B:70:02"

# A second heart rate strap without AcquireNotify: its notifications take the signal path (the connection's property
# taps, which every other signal then passes too).
SIGNAL_STRAP = "C0:FF:EE:00:00:04"
SIGNAL_STRAP_DEVICE = f"""  - name: heart-rate-signal
    address: "{SIGNAL_STRAP}"
    channels:
      - {{ name: heart_rate, characteristic: "2a37", codec: heart_rate_measurement, mode: notify }}

"""

# Seconds after every device came online that start-up is taken to be over (its last one-time work, the Home
# Assistant configs and the first reads, is done within a second or two even under valgrind).
SETTLE = 10


def profile(binary: Path, seconds: int, work: Path) -> tuple[Path, Path, Path]:
    """Profiles the daemon; returns the profile of its start-up, the idle steady state after it, and the commands and
    shutdown."""
    port = free_port()
    (work / "mosquitto.conf").write_text(f"listener {port} 127.0.0.1\nallow_anonymous true\npersistence false\n")
    processes: list[subprocess.Popen] = []

    def start(args, log: str, **kwargs) -> subprocess.Popen:
        with open(work / log, "w") as out:
            process = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, start_new_session=True, **kwargs)
        processes.append(process)
        return process

    output = work / "callgrind.out"
    try:
        start(["mosquitto", "-c", str(work / "mosquitto.conf")], "mosquitto.log")
        env_file = work / "bench.env"
        start([str(REPO / ".venv/bin/python"), "-m", "bench", "--peripheral", "heart_rate", "--peripheral", "hm10",
               "--peripheral", "led", "--peripheral", f"heart_rate+signal:{SIGNAL_STRAP}",
               "--broadcaster", f"bthome:{SAVED_BROADCASTER}", "--broadcaster", f"bthome:{AUTO_BROADCASTER}",
               "--env-file", str(env_file)], "bench.log", cwd=REPO)
        wait_for(lambda: env_file.exists() and env_file.stat().st_size > 0, 30, "the bench")
        env = dict(os.environ)
        for line in env_file.read_text().splitlines():
            key, _, value = line.partition("=")
            env[key] = value
        config = (REPO / "config/demo.yaml").read_text()
        config = re.sub(r"(?m)^  port: .*$", f"  port: {port}", config)
        config = config.replace("\ndevices:\n", "\ndevices:\n" + SIGNAL_STRAP_DEVICE, 1)
        (work / "demo.yaml").write_text(config)

        availability = work / "availability.txt"
        start(["mosquitto_sub", "-p", str(port), "-v", "-t", "gattbridge/+/availability"], "availability.txt")
        daemon = start(["valgrind", "-q", "--tool=callgrind", f"--callgrind-out-file={output}", "--dump-instr=yes",
                        "--demangle=no", str(binary), "run", "-c",
                        str(work / "demo.yaml"), "--log-level", "info"], "gattbridge.log", env=env)
        wait_for(lambda: availability.read_text().count(" online") >= 6, 180,
                 "four connected and two passive devices online")
        time.sleep(SETTLE)
        subprocess.run(["callgrind_control", "--dump", str(daemon.pid)], check=True, capture_output=True)

        def publish(topic: str, message: str | None) -> None:
            args = ["mosquitto_pub", "-p", str(port), "-t", f"gattbridge/{topic}"]
            subprocess.run(args + (["-m", message] if message is not None else ["-n"]), check=True)

        # The steady state: notifications (the heart rate, 1 Hz), broadcasts (two sensors, 1 Hz each), polls,
        # keepalives. Then a dump, so the commands
        # and the shutdown land in a profile part of their own.
        time.sleep(seconds)
        subprocess.run(["callgrind_control", "--dump", str(daemon.pid)], check=True, capture_output=True)
        # The command paths: a write with response, a write without, an on-demand read.
        for topic, message in [("desk-led/led/set", "ON"), ("hm10/serial/set", "hello hm10"),
                               ("heart-rate-strap/battery/get", None), ("desk-led/led/set", "OFF")]:
            publish(topic, message)
            time.sleep(2)
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(timeout=120)
    finally:
        for process in reversed(processes):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in processes:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
    parts = sorted(work.glob("callgrind.out*"), key=lambda p: int(p.suffix[1:]) if p.suffix[1:].isdigit() else 1 << 30)
    if len(parts) != 3:
        sys.exit(f"symbol_order: expected three profile parts (start-up, steady state, commands and shutdown), "
                 f"got {[p.name for p in parts]}")
    return parts[0], parts[1], parts[2]


class Profile:
    """One callgrind profile part, read for the binary's code: the cost of each function it names and of each
    instruction address (the profile is taken with --dump-instr=yes, so cost lines start with an address)."""

    def __init__(self, callgrind_output: Path, binary: Path) -> None:
        names: dict[str, str] = {}
        objects: dict[str, str] = {}

        def resolve(text: str, table: dict[str, str]) -> str | None:
            match = re.match(r"\((\d+)\)(?: (.*))?", text)
            if not match:
                return text
            if match.group(2) is not None:
                table[match.group(1)] = match.group(2)
            return table.get(match.group(1))

        self.functions: collections.Counter[str] = collections.Counter()
        self.addresses: collections.Counter[int] = collections.Counter()
        in_binary = False
        current = ""
        address = 0
        call_follows = False
        for line in callgrind_output.read_text().splitlines():
            if line.startswith("ob="):
                current_object = resolve(line[3:], objects)
                in_binary = bool(current_object) and Path(current_object).resolve() == binary.resolve()
            elif line.startswith("fn="):
                # callgrind tells recursion levels apart as name'2, name'3...
                current = re.sub(r"'\d+$", "", resolve(line[3:], names) or "")
                if in_binary:
                    self.functions[current] += 0
            elif line.startswith(("cob=", "cfi=", "cfl=")):
                resolve(line.split("=", 1)[1], objects if line.startswith("cob=") else {})
            elif line.startswith("cfn="):
                resolve(line[4:], names)
            elif line.startswith("calls="):
                call_follows = True   # the next cost line is the call's inclusive cost, at the call site
            elif line[:1].isdigit() or line[:1] in "+-*":
                fields = line.split()
                if len(fields) < 3:
                    continue
                # Subposition compression: +N/-N relative to the last address, * the same, else absolute.
                position = fields[0]
                if position[:1] in "+-":
                    address += int(position)
                elif position != "*":
                    address = int(position, 0)
                if in_binary:
                    own = 0 if call_follows else int(fields[-1])
                    self.addresses[address] += own
                    self.functions[current] += own
                call_follows = False

    def ranked_functions(self) -> list[str]:
        """The binary's functions with a cost, most expensive first."""
        return [name for name, _ in self.functions.most_common()]


def in_large_sections(link_map: Path, limit: int = 32 * 1024) -> set[str]:
    """Names defined in an input section larger than `limit`: code that was not compiled one function per section
    (the toolchain's static libraries). Ordering such a name moves the whole section, mostly code that never runs;
    local helpers share their name across objects, so one of them can drag in a big unrelated section."""
    large: set[str] = set()
    section_size = 0
    for line in link_map.read_text(errors="replace").splitlines():
        fields = line.split(None, 4)
        if len(fields) < 5 or not re.fullmatch(r"[0-9a-f]+", fields[0]):
            continue
        if ":(" in fields[4]:
            section_size = int(fields[2], 16)
        elif fields[3] == "1" and section_size > limit:   # a symbol line (alignment column 1) inside that section
            large.add(fields[4].strip())
    return large


def without_unnamed_order(flags: list[str]) -> list[str]:
    """`make release`'s flags less the unnamed-order linker script. Placed in an output section of their own, the
    unnamed functions lie outside the binary's `.text`, and valgrind then attributes them to no object ("???"), so a
    profile of such a binary cannot see them run."""
    out: list[str] = []
    for flag in flags:
        if flag.endswith("/unnamed-order.ld") and out[-3:] == ["-Xlinker", "-T", "-Xlinker"]:
            del out[-3:]
            continue
        out.append(flag)
    return out


class UnnamedSections:
    """The binary's code input sections that define no symbol, from the linker map: LLVM's private functions (closure
    context destroyers `objectdestroy`, `__unnamed_N` helpers, extra-inhabitant witnesses), whose `.L` names never
    reach the symbol table, so a symbol ordering file cannot name them. A linker script can, by object and section."""

    def __init__(self, link_map: Path) -> None:
        if re.search(r"(?m)^\s+[0-9a-f]+\s+[0-9a-f]+\s+[0-9a-f]+\s+\d+ \.text\.unnamed$", link_map.read_text(errors="replace")):
            sys.exit("symbol_order: the binary was linked with scripts/release/unnamed-order.ld; link it without "
                     "(as this script's own build does), or valgrind cannot see its unnamed functions run")
        sections: list[tuple[int, int, str, str]] = []
        named: set[int] = set()
        for line in link_map.read_text(errors="replace").splitlines():
            fields = line.split(None, 4)
            if len(fields) < 5 or not re.fullmatch(r"[0-9a-f]+", fields[0]):
                continue
            match = re.fullmatch(r"(.*):\((\.text\..*)\)", fields[4].strip())
            if match:
                sections.append((int(fields[0], 16), int(fields[2], 16), match.group(1), match.group(2)))
            elif fields[3] == "1" and sections and int(fields[0], 16) >= sections[-1][0]:
                named.add(len(sections) - 1)   # a symbol line (alignment column 1) inside the last section
        self.sections = sections
        self.starts = [section[0] for section in sections]
        self.unnamed = {i for i in range(len(sections)) if i not in named}

    def ranked(self, part: Profile) -> list[tuple[str, str]]:
        """The unnamed sections `part` executed (in the package's own objects), most expensive first."""
        cost: collections.Counter[int] = collections.Counter()
        for address, own in part.addresses.items():
            i = bisect.bisect_right(self.starts, address) - 1
            if i in self.unnamed and address < self.sections[i][0] + self.sections[i][1]:
                cost[i] += own
        ranked = []
        for i, _ in cost.most_common():
            found = re.search(r"/([^/]+\.build/[^/]+\.o)$", self.sections[i][2])
            if found:   # the toolchain's archives are not compiled one function per section
                ranked.append((found.group(1), self.sections[i][3]))
        return ranked


def linker_script(sections: list[tuple[str, str]]) -> str:
    """An output section ahead of `.text` (whose start the symbol order fills with the steady state's named
    functions) holding the unnamed sections, in order. lld matches `*` across `/`; `?` stands for characters a
    section pattern cannot hold (some names carry spaces)."""
    lines = [f"    */{obj}({re.sub(r'[^A-Za-z0-9_.$]', '?', name)})" for obj, name in sections]
    return (f"/* {UNNAMED_HEADER} */\n"
            "SECTIONS {\n  .text.unnamed : {\n" + "\n".join(lines) + "\n  }\n} INSERT BEFORE .text;\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", type=Path, help="an unstripped release gattbridge linked without "
                        "unnamed-order.ld (default: build one)")
    parser.add_argument("--map", type=Path, help="the linker map (-Map) of --binary")
    parser.add_argument("--seconds", type=int, default=60, help="idle time after start-up (notifications, polls, keepalives)")
    options = parser.parse_args()
    if options.binary and not options.map:
        parser.error("--binary needs --map")
    binary, link_map = (options.binary, options.map) if options.binary else build()
    unnamed_sections = UnnamedSections(link_map)   # refuses a binary linked with the unnamed order, before the profile
    with tempfile.TemporaryDirectory(prefix="gattbridge-symbol-order.") as directory:
        startup_part, steady_part, commands_part = profile(binary, options.seconds, Path(directory))
        parts = [Profile(part, binary) for part in (steady_part, commands_part, startup_part)]
    steady = parts[0].ranked_functions()
    functions = list(steady)
    seen = set(steady)
    for part in parts[1:]:
        for name in part.ranked_functions():
            if name not in seen:
                seen.add(name)
                functions.append(name)
    # Unnamed sections of the steady state and the commands only: what runs only during start-up is left to the kernel
    # to reclaim wherever it lies.
    unnamed: list[tuple[str, str]] = []
    for part in parts[:2]:
        unnamed += [section for section in unnamed_sections.ranked(part) if section not in unnamed]
    UNNAMED_OUTPUT.write_text(linker_script(unnamed))
    large = in_large_sections(link_map)
    order = [name for name in functions if name not in large]
    OUTPUT.write_text("".join(name + "\n" for name in order))
    print(f"symbol_order: {len(order)} functions, {len([n for n in steady if n not in large])} of them in the "
          f"steady state after start-up ({len(functions) - len(order)} in large sections left out) -> {OUTPUT.relative_to(REPO)}; "
          f"{len(unnamed)} unnamed sections -> {UNNAMED_OUTPUT.relative_to(REPO)}")


if __name__ == "__main__":
    main()
