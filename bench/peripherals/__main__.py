"""python -m bench.peripherals KIND --adapter hciN [options]

KIND: heart_rate | hm10 | led | button | secure | generic (generic needs --config JSON-or-path) | broadcaster
(a passive sensor: --format bthome|pvvx|govee|xiaomi|ruuvi|ibeacon|eddystone --address ADDRESS_OF_ITS_ADAPTER
[--bindkey-file PATH]) | crowd (forged BTHome broadcasters flooding: --member hciN=ADDRESS… --size BYTES).
Events go to stdout as JSON lines ({"event":"ready",…} once registered); commands are read from stdin
(see bench.peripherals.gatt.PeripheralRunner).
"""

from __future__ import annotations

import argparse
import sys

from bench.broadcasts import FORMATS
from bench.peripherals import KINDS
from bench.peripherals.gatt import emit, full_uuid, run


def _company_data(text: str) -> tuple[int, bytes]:
    company, _, data = text.partition(":")
    return int(company, 0), bytes.fromhex(data)


def _service_data(text: str) -> tuple[str, bytes]:
    uuid, _, data = text.rpartition(":")
    return full_uuid(uuid), bytes.fromhex(data)


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.peripherals", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("kind", choices=sorted(KINDS))
    p.add_argument("--adapter", required=True, help="the adapter this peripheral owns (hciN); its address is "
                                                    "the peripheral's address")
    p.add_argument("--name", help="advertised LocalName")
    p.add_argument("--rate", type=float, help="notifications per second (heart_rate default 1; generic: "
                                              "overrides the description)")
    p.add_argument("--count", type=int, help="stop after N notifications per subscription (0: never)")
    p.add_argument("--no-acquire-notify", action="store_true",
                   help="do not offer AcquireNotify, forcing BlueZ onto the StartNotify path")
    p.add_argument("--log-notify", action="store_true", help="report every notification as an event")
    p.add_argument("--manufacturer-data", action="append", type=_company_data, default=[],
                   metavar="COMPANY:HEX", help="advertised manufacturer data, e.g. 0xffff:0102 (repeatable)")
    p.add_argument("--service-data", action="append", type=_service_data, default=[],
                   metavar="UUID:HEX", help="advertised service data (repeatable)")
    p.add_argument("--mtu", type=int, help="MTU the characteristics report (hm10 default 23)")
    p.add_argument("--battery", type=int, default=87, help="heart_rate: initial battery level")
    p.add_argument("--battery-interval", type=float, default=0.0,
                   help="heart_rate: seconds between battery notifications while subscribed (0: none)")
    p.add_argument("--initial", default="00", help="led: initial state, 00 or 01")
    p.add_argument("--delimiter", default="\n", help="hm10: line delimiter")
    p.add_argument("--config", help="generic: JSON description or path to one")
    p.add_argument("--passkey", type=int, help="secure: the six-digit passkey its agent answers")
    p.add_argument("--readvertise", type=float, default=0.0, metavar="S",
                   help="re-register the advertisement every S seconds while no central is connected (for "
                        "btvirt's emulated controllers; 0: never)")
    p.add_argument("--format", default="bthome", choices=FORMATS,
                   help="broadcaster: bthome | pvvx | govee | xiaomi (MiBeacon v5) | ruuvi (format 5) | ibeacon | "
                        "eddystone (UID frame)")
    p.add_argument("--address", help="broadcaster: its adapter's address (BTHome and MiBeacon encryption and the pvvx, "
                                     "MiBeacon and Ruuvi records hold it)")
    p.add_argument("--bindkey-file", help="broadcaster: encrypt (bthome, xiaomi) with the bindkey in this file "
                                          "(32 hex digits)")
    p.add_argument("--interval", type=float, default=1.0, help="broadcaster: seconds between packets")
    p.add_argument("--event-hold", type=float, default=2.5,
                   help="broadcaster: seconds a button-event packet stays on the air")
    p.add_argument("--first-tick", type=int, default=0, help="broadcaster: where its value sequence starts")
    p.add_argument("--connectable", action="store_true",
                   help="broadcaster: advertise as a connectable peripheral (on a real BlueZ controller a "
                        "non-connectable advertisement goes out from a fresh random address each time)")
    p.add_argument("--member", action="append", default=[], metavar="hciN=ADDRESS",
                   help="crowd: an adapter and its address (repeatable; the first is --adapter)")
    p.add_argument("--size", type=int, default=250, help="crowd: the advertising data's length in bytes")
    a = p.parse_args(argv)

    opts = dict(name=a.name, acquire_notify=not a.no_acquire_notify, log_notify=a.log_notify,
                manufacturer_data=dict(a.manufacturer_data), service_data=dict(a.service_data))
    if a.kind == "heart_rate":
        opts.update(rate=1.0 if a.rate is None else a.rate, count=a.count or 0, battery=a.battery,
                    battery_interval=a.battery_interval, mtu=a.mtu)
    elif a.kind == "hm10":
        opts.update(delimiter=a.delimiter, mtu=a.mtu or 23)
    elif a.kind == "led":
        opts.update(initial=a.initial)
    elif a.kind == "button":
        opts.update(mtu=a.mtu)
    elif a.kind == "secure":
        opts.update(passkey=a.passkey, rate=2.0 if a.rate is None else a.rate)
    elif a.kind == "broadcaster":
        opts.update(format=a.format, address=a.address, bindkey_file=a.bindkey_file, interval=a.interval,
                    event_hold=a.event_hold, first_tick=a.first_tick, connectable=a.connectable)
    elif a.kind == "crowd":
        opts.update(member=a.member, size=a.size, interval=a.interval)
    elif a.kind == "generic":
        if not a.config:
            p.error("generic needs --config")
        opts.update(config=a.config, rate=a.rate, count=a.count)
    try:
        runner = KINDS[a.kind](a.adapter, **opts)
    except (ValueError, KeyError, OSError) as exc:
        emit("error", message=f"bad peripheral description: {exc}")
        return 2
    runner.readvertise = a.readvertise
    run(runner)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
