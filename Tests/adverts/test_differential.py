"""gattbridge's broadcast decoders against Home Assistant's reference parsers (bthome-ble, xiaomi-ble, govee-ble,
ruuvitag-ble, pinned in scripts/adverts/requirements.txt), on the packets of the references' own test suites
(vectors.json, see capture_vectors.py) and on generated ones (generate.py).

For every packet both readings must agree, names, values and units: exactly for BTHome and RuuviTag (every object
of the format is decoded), and for Xiaomi and Govee wherever gattbridge decodes the object or model (it reads the
common sensor objects and the thermometer-hygrometer family; the references know more devices): there, what
gattbridge says must equal what the reference says, and the packets where the reference says more are counted, never
hidden. A packet the reference cannot read (nothing, or an exception) must yield an error from gattbridge, never
values. Counts are printed at the end (`pytest -rA` or the terminal summary).
"""
from __future__ import annotations

import json
import math
import os
import pathlib
import random
import subprocess
from collections import Counter
from typing import Any

import pytest

import generate
import reference

HERE = pathlib.Path(__file__).parent
BINARY = os.environ.get("GATTBRIDGE_BIN", str(HERE.parent.parent / ".build" / "debug" / "gattbridge"))
GENERATED = int(os.environ.get("ADVERTS_GENERATED", "10000"))
COUNTS: Counter = Counter()


def gattbridge(family: str, requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One `adverts decode --batch` process for all packets, decoding the family's format only."""
    lines = "".join(json.dumps({**{k: v for k, v in r.items() if k != "family"}, "format": family}) + "\n"
                    for r in requests)
    out = subprocess.run([BINARY, "adverts", "decode", "--batch"], input=lines, capture_output=True, text=True,
                         timeout=300, check=True).stdout.splitlines()
    assert len(out) == len(requests)
    return [json.loads(line) for line in out]


def same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12)
    return a == b


def compare(family: str, request: dict[str, Any], ours: dict[str, Any], theirs: dict[str, Any] | Exception) -> str:
    """The verdict for one packet: "equal", "both-empty", "reference-raised", "partial"; anything else fails."""
    if isinstance(theirs, Exception):
        # The reference refuses it by raising (empty service data it indexes into; a Ruuvi record too short or too
        # long for its struct): gattbridge must refuse it too, without crashing (the batch answered).
        assert "error" in ours, (request, ours, theirs)
        return "reference-raised"
    ours_values = {k: v for k, v in ours.get("measurements", {}).items()}
    if family == "bthome" and theirs["packet_id"] is not None and "error" not in ours:
        assert ours["packet_id"] == theirs["packet_id"], (request, ours, theirs)
    theirs_empty = not theirs["measurements"] and not theirs["events"]
    if "error" in ours:
        if theirs_empty:
            return "both-empty"
        if family == "ruuvi" and not is_ruuvi_format5(request):
            return "other-format"  # RuuviTag formats 3, 6 and E1: only format 5 is decoded
        assert family in ("xiaomi", "govee"), (request, ours, theirs)
        return "partial"  # a device or object gattbridge does not decode
    if family == "bthome" and theirs_empty and theirs["packet_id"] is not None:
        assert not ours_values and not ours["events"], (request, ours, theirs)
        return "equal"
    assert not theirs_empty, f"gattbridge decoded what the reference did not: {request} {ours}"
    for name, value in ours_values.items():
        assert name in theirs["measurements"], (name, request, ours, theirs)
        assert same(value, theirs["measurements"][name]), (name, value, theirs["measurements"][name], request)
        assert ours["units"].get(name) == theirs["units"].get(name), (name, request, ours, theirs)
    assert ours["events"] == theirs["events"] or family != "bthome", (request, ours, theirs)
    if set(ours_values) == set(theirs["measurements"]) and ours["events"] == theirs["events"]:
        return "equal"
    assert family in ("xiaomi", "govee"), (request, ours, theirs)
    return "partial"


def is_ruuvi_format5(request: dict[str, Any]) -> bool:
    return request.get("manufacturer_data", {}).get("1177", "").startswith("05")


def run(family: str, requests: list[dict[str, Any]], label: str) -> None:
    answers = gattbridge(family, requests)
    for request, ours in zip(requests, answers):
        try:
            theirs: dict[str, Any] | Exception = reference.decode(family, request)
        except Exception as error:  # noqa: BLE001 - the reference's own crash is a verdict here
            theirs = error
        verdict = compare(family, request, ours, theirs)
        COUNTS[(family, label, verdict)] += 1
        if verdict == "partial" and os.environ.get("ADVERTS_SHOW_PARTIAL"):
            print("partial", request, ours, theirs)


VECTORS = json.loads((HERE / "vectors.json").read_text())


@pytest.mark.parametrize("family", ["bthome", "xiaomi", "govee", "ruuvi"])
def test_captured(family: str) -> None:
    requests = []
    for vector in VECTORS:
        if vector["family"] != family:
            continue
        service_data = vector["service_data"]
        # BTHome v1 (UUIDs 181c/181e) is the format's retired first version: not decoded.
        if family == "bthome" and not any("fcd2" in uuid for uuid in service_data):
            COUNTS[(family, "captured", "skipped-v1")] += 1
            continue
        requests.append(vector)
    run(family, requests, "captured")


@pytest.mark.parametrize("family", ["bthome", "xiaomi", "govee", "ruuvi"])
def test_generated(family: str) -> None:
    rng = random.Random(f"{family}-{GENERATED}")
    run(family, [generate.GENERATORS[family](rng) for _ in range(GENERATED)], "generated")


def pytest_terminal_summary_lines() -> list[str]:
    lines = []
    for family in ("bthome", "xiaomi", "govee", "ruuvi"):
        for label in ("captured", "generated"):
            parts = {v: n for (f, l, v), n in COUNTS.items() if f == family and l == label}
            if parts:
                total = sum(n for v, n in parts.items() if v != "skipped-v1")
                lines.append(f"{family:7} {label:9} {total:6} compared: "
                             + ", ".join(f"{v} {n}" for v, n in sorted(parts.items())))
    return lines
