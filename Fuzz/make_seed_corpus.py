#!/usr/bin/env python3
"""Writes the hand-made seeds of Fuzz/Corpus/{FuzzCodecs,FuzzConfig,FuzzCommands,FuzzBridgeRequest} (FuzzDBus: make_dbus_corpus.py),
and of the broadcast decoders' targets from the reference parsers' test vectors (Tests/adverts/vectors.json).
Seeds are named by their SHA-1, as libFuzzer names what it adds, so re-running only adds files.

    python3 Fuzz/make_seed_corpus.py
"""
import hashlib
import struct
from pathlib import Path

ROOT = Path(__file__).resolve().parent
REPO = ROOT.parent


def write(target: str, seed: bytes) -> None:
    out = ROOT / "Corpus" / target
    out.mkdir(parents=True, exist_ok=True)
    (out / hashlib.sha1(seed).hexdigest()).write_bytes(seed)


def codecs() -> None:
    # selector (delimiter index in the low 3 bits, max_line - 4 in the high 5; also the MTU), piece, rest
    pieces = [b"", b"\x00", b"\x01", b"\xff", b"\x00\x48", b"\x06\x4b", b"\x01\x2c\x01", b"\x0e\x5a\xd2\x04",
              b"\x16\x58\x40\x03", b"\x1f\x82\x00\xf4\x01\x00\x02\x00\x04\xbc\x02", struct.pack("<f", 1.5),
              struct.pack(">d", -1e300), struct.pack("<f", float("nan")), struct.pack("<I", 0xFFFFFFFF),
              b"0a1b", b"0x01 02:03", b"AQID", b"AQI", b"true", b"-32768", b"4294967295", b"1e+20", b"-inf",
              "héllo wörld ✓".encode(), b"\xc3\x28", b'{"bpm":72,"rr_ms":[812.5],"x":null,"y":[true,"\\u00e9"]}']
    rests = [b"", b"hello\nworld\n", b"part;ial;", b"\r\nline\r\n", "a long line with ✓ unicode\n".encode() * 3,
             b"\xff\xfe bad utf8 \n"]
    for i, piece in enumerate(pieces):
        rest = rests[i % len(rests)]
        write("FuzzCodecs", bytes([i * 37 % 256, len(piece)]) + piece + rest)


def config() -> None:
    for path in sorted((REPO / "config").glob("*.yaml")):
        write("FuzzConfig", path.read_bytes())
    write("FuzzConfig", b"mqtt: { port: 0 }\ndevices: []\n")
    write("FuzzConfig", b"devices:\n  - name: x\n    address: \"zz\"\n    channels: []\n")
    write("FuzzConfig", b"devices:\n  - name: a\n    address: \"C0:FF:EE:00:00:01\"\n    channels:\n"
                        b"      - { name: s, characteristic: ffe1, codec: text, delimiter: \"\\r\\n\", max_line: 0 }\n")
    write("FuzzConfig", b"mqtt:\n  tls: true\n  password: x\n&a [*a]\n")
    # Deep nesting, refused before libyaml loads it (flow, flow mappings, compact block sequences, indentation),
    # and the depth limit's edge; noncharacters and controls in names that become topic levels.
    write("FuzzConfig", b"[" * 5000)
    write("FuzzConfig", b"{a: " * 2000)
    write("FuzzConfig", b"- " * 3000 + b"x\n")
    write("FuzzConfig", b"".join(b" " * i + b"k%d:\n" % i for i in range(80)))
    write("FuzzConfig", b"devices: " + b"[" * 63 + b"]" * 63 + b"\n")
    write("FuzzConfig", b"devices:\n  - name: \"dev\\uFFFF\\uFDD0\\x85\"\n    address: \"C0:FF:EE:00:00:01\"\n"
                        b"    channels:\n      - { name: \"c\\u0001\\U0010FFFF\", characteristic: 2a19, codec: hex }\n")


def commands() -> None:
    # mtu, topic length, topic, payload
    cases = [
        (23, "home/ble/desk-led/led/set", b"ON"), (23, "home/ble/desk-led/led/set", b"0x01"),
        (0, "home/ble/desk-led/u8/set", b"255"), (0, "home/ble/desk-led/i16be/set", b"-300"),
        (0, "home/ble/desk-led/f32/set", b"1.5e3"), (0, "home/ble/desk-led/f64be/set", b"nan"),
        (0, "home/ble/desk-led/flag/set", b"open"), (0, "home/ble/desk-led/b64/set", b"AQID"),
        (23, "home/ble/hm10/serial/set", "hello ✓ world, a line longer than one write".encode()),
        (5, "home/ble/hm10/mapped/set", b"PING"), (0, "home/ble/hm10/raw/set", b"\xff\xfe"),
        (23, "home/ble/strap/heart_rate/set", b"72"), (23, "home/ble/strap/battery/get", b""),
        (23, "home/ble/nobody/led/set", b"ON"), (23, "home/ble/desk-led//set", b""), (23, "home/ble/a/b/c/set", b"1"),
    ]
    for mtu, topic, payload in cases:
        t = topic.encode()
        write("FuzzCommands", bytes([mtu, len(t)]) + t + payload)


def bridge_requests() -> None:
    """FuzzBridgeRequest: a verb byte (index into BridgeRequest.Verb.allCases + extras), then the JSON payload."""
    lamp = ('{"name":"lamp","address":"C0:FF:EE:00:00:03","channels":[{"name":"led","characteristic":"ffe5/ffe9",'
            '"codec":"hex","values":{"ON":"01","OFF":"00"},"mode":"read","interval":1.5,"writable":true,'
            '"homeassistant":"switch","command_ttl":30}]}')
    serial = ('{"name":"hm10 \\u2028\\u0085","address":"C0:FF:EE:00:00:02","transaction":7,"channels":[{"name":"serial",'
              '"characteristic":"ffe1","codec":"text","writable":true,"delimiter":"\\r\\n","max_line":64}]}')
    cases = [
        (0, b"{}"), (0, b'{"transaction":"t-1"}'), (0, b""), (0, b"{"), (0, b"[1,2]"), (0, b'{"transaction":[]}'),
        (1, lamp.encode()), (1, serial.encode()),
        (1, b'{"name":"x","address":"C0:FF:EE:00:00:07","channels":[{"name":"c","characteristic":"2a19","codec":"hexx"}]}'),
        (1, b'{"name":"taken","address":"C0:FF:EE:00:00:01","channels":[{"name":"c","characteristic":"2a19","codec":"hex","qos":"1"}]}'),
        (2, b'{"name":"lamp"}'), (2, b'{"name":5}'),
        (3, b'{"duration":3,"service":["180d","0000ffe0-0000-1000-8000-00805f9b34fb"]}'), (3, b'{"duration":61}'),
        (4, b'{"address":"c0:ff:ee:00:00:01"}'), (5, b'{"transaction":1.5}'), (8, b'{"transaction":"x"}'),
    ]
    for verb, payload in cases:
        write("FuzzBridgeRequest", bytes([verb]) + payload)


def adverts() -> None:
    import json

    vectors = json.loads((REPO / "Tests" / "adverts" / "vectors.json").read_text())
    names = ["", "GVH5075_1234", "GVH5101_1A2B", "Govee_H5074_C3F1", "GVH5051_1111", "GV5179_0006", "GVH5106_5555",
             "H5179_4444", "GV5112AC3D", "GVH5127"]
    for vector in vectors:
        for uuid, data in vector["service_data"].items():
            data = bytes.fromhex(data)
            if "fcd2" in uuid:
                write("FuzzBTHome", data)
            elif "fe95" in uuid:
                write("FuzzXiaomi", b"\x00" + data)
        for company, data in vector["manufacturer_data"].items():
            data = bytes.fromhex(data)
            if company == "1177":
                write("FuzzRuuvi", data)
            elif vector["family"] == "govee":
                name = next((i for i, n in enumerate(names) if n and n[-4:] in (vector["name"] or "")), 0)
                write("FuzzGovee", int(company).to_bytes(2, "big") + bytes([name]) + data)
            if company == "76":
                write("FuzzBeacons", data)
    for record in ["b2188d38c1a42909bf13860b571005", "a4c1388d18b200ea32570b8610", "a4c1388d18b2ff9c32570b8610"]:
        write("FuzzThermometerFirmware", bytes.fromhex(record))
    for beacon in ["0215e2c56db5dffb48d2b060d0f5a71096e000010002c5", "10eb00676f6f676c6507",
                   "00e8000102030405060708090a0b0c0d0e0f", "20000bb817800000000100000002"]:
        write("FuzzBeacons", bytes.fromhex(beacon))


def replay_ledger() -> None:
    """Scripts of the FuzzReplayLedger target: a step count, then steps (even op: admit the next 4 bytes as a counter;
    odd: save and restore, or with 0x10 re-arm), then a saved file's text."""
    def admit(op: int, counter: int) -> bytes:
        return bytes([op & 0xFE]) + counter.to_bytes(4, "little")
    audit = b"".join(admit(0, c) for c in (10, 11, 2000, 2001, 2002, 10, 2002, 11, 2004))
    write("FuzzReplayLedger", bytes([9]) + audit)
    write("FuzzReplayLedger", bytes([5]) + admit(0, 500) + admit(2, 3) + b"\x01" + b"\x11" + admit(0, 4))
    key = "0000000000000000"
    write("FuzzReplayLedger", bytes([0]) + f"A4:C1:38:0B:70:02 {key} 2005\nA4:C1:38:0B:70:03 {key} 7\n".encode())


if __name__ == "__main__":
    codecs()
    config()
    commands()
    bridge_requests()
    adverts()
    replay_ledger()
