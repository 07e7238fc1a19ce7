"""A peripheral built from a JSON description, so tests can create devices the code has never seen.

    {
      "name": "Thermo",                               # advertised LocalName
      "advertise": ["181a"],                          # ServiceUUIDs; default: every primary service
      "manufacturer_data": {"0xffff": "0102"},        # optional, company id → hex
      "service_data": {"181a": "00"},                 # optional, UUID → hex
      "services": [
        {"uuid": "181a", "primary": true, "characteristics": [
          {"uuid": "2a6e", "flags": ["read", "notify"], "value": "e803",
           "acquire_notify": true,                    # default true; false forces the StartNotify path
           "mtu": 23,                                 # optional, reported to BlueZ
           "echo": false,                             # true: every write is notified back
           "notify": {"values": ["e803", "e903"], "rate": 2, "count": 0}}   # count 0: cycle for ever
        ]}
      ]
    }

Writes are stored as the new value (and reported as write events); notification i of a subscription carries
values[i % len(values)].
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

from bench.peripherals.gatt import (Advertisement, Characteristic, PeriodicNotifier, PeripheralRunner,
                                    Service)


def load(description: str) -> dict:
    """A JSON text, or the path of a JSON file."""
    text = description.strip()
    if not text.startswith("{"):
        text = Path(description).read_text()
    return json.loads(text)


def _int(v: Any) -> int:
    return v if isinstance(v, int) else int(str(v), 0)


def build(adapter: str, config: str, name: Optional[str] = None, acquire_notify: bool = True,
          log_notify: bool = False, rate: Optional[float] = None, count: Optional[int] = None,
          manufacturer_data: Optional[dict[int, bytes]] = None, service_data: Optional[dict[str, bytes]] = None,
          **_ignored) -> PeripheralRunner:
    desc = load(config)
    services = []
    for s in desc["services"]:
        chars = []
        for c in s.get("characteristics", []):
            char = Characteristic(c["uuid"], c.get("flags", ["read"]), bytes.fromhex(c.get("value", "")),
                                  acquire_notify=acquire_notify and c.get("acquire_notify", True),
                                  mtu=c.get("mtu"), log_notify=log_notify)
            if c.get("echo"):
                def on_write(value: bytes, wtype: str, char=char):
                    return char.notify(value)
                char.on_write = on_write
            if n := c.get("notify"):
                values = [bytes.fromhex(v) for v in n["values"]]
                PeriodicNotifier(char, lambda i, values=values: values[i % len(values)],
                                 rate if rate is not None else float(n.get("rate", 1)),
                                 count if count is not None else int(n.get("count", 0)))
            chars.append(char)
        services.append(Service(s["uuid"], chars, s.get("primary", True)))
    mdata = {_int(k): bytes.fromhex(v) for k, v in desc.get("manufacturer_data", {}).items()}
    mdata.update(manufacturer_data or {})
    sdata = {k: bytes.fromhex(v) for k, v in desc.get("service_data", {}).items()}
    sdata.update(service_data or {})
    advertised = desc.get("advertise", [s["uuid"] for s in desc["services"] if s.get("primary", True)])
    adv = Advertisement(name or desc.get("name", "Bench Generic"), advertised, mdata, sdata)
    return PeripheralRunner(adapter, services, adv)
