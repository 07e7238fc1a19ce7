#!/usr/bin/env python3
"""Seeds for FuzzDBus from a real capture: `dbus-monitor --address ADDR --binary > capture.bin` on the bench while
gattbridge scans, inspects and listens (how Fuzz/Corpus/FuzzDBus was made). Writes one raw seed (selector 0x00 +
the wire message) per distinct (type, interface, member, signature), and a wrapped seed (selector 0x01..0x07 +
signature + body) for the signals the harness can wrap.

    python3 Fuzz/make_dbus_corpus.py capture.bin Fuzz/Corpus/FuzzDBus
"""
import hashlib
import struct
import sys
from pathlib import Path

WRAPPED = {"PropertiesChanged": 1, "InterfacesAdded": 3, "InterfacesRemoved": 5, "NameOwnerChanged": 7}


def messages(data: bytes):
    offset = 0
    while offset + 16 <= len(data):
        endian = "<" if data[offset] == ord("l") else ">"
        body_len, = struct.unpack_from(endian + "I", data, offset + 4)
        fields_len, = struct.unpack_from(endian + "I", data, offset + 12)
        header_len = 16 + fields_len + (-(16 + fields_len) % 8)
        yield endian, data[offset:offset + header_len + body_len], header_len
        offset += header_len + body_len


def header_fields(endian: str, message: bytes) -> dict:
    fields_len, = struct.unpack_from(endian + "I", message, 12)
    pos, end, out = 16, 16 + fields_len, {}
    while pos < end:
        pos += -pos % 8
        code = message[pos]
        sig_len = message[pos + 1]
        sig = message[pos + 2:pos + 2 + sig_len].decode()
        pos += 3 + sig_len
        if sig in ("s", "o"):
            pos += -pos % 4
            n, = struct.unpack_from(endian + "I", message, pos)
            out[code] = message[pos + 4:pos + 4 + n].decode()
            pos += 5 + n
        elif sig == "g":
            n = message[pos]
            out[code] = message[pos + 1:pos + 1 + n].decode()
            pos += 2 + n
        elif sig == "u":
            pos += -pos % 4
            out[code], = struct.unpack_from(endian + "I", message, pos)
            pos += 4
        else:
            raise ValueError(f"unexpected header field type {sig}")
    return out


def main(capture: str, out_dir: str) -> None:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    seen = set()
    for endian, message, header_len in messages(Path(capture).read_bytes()):
        fields = header_fields(endian, message)
        key = (message[1], fields.get(2), fields.get(3), fields.get(8))
        if key in seen:
            continue
        seen.add(key)
        seeds = [b"\x00" + message]
        member, signature = fields.get(3), fields.get(8, "")
        if endian == "<" and member in WRAPPED and message[1] == 4:
            sig = signature.encode()
            seeds.append(bytes([WRAPPED[member], len(sig)]) + sig + message[header_len:])
        for seed in seeds:
            (out / hashlib.sha1(seed).hexdigest()).write_bytes(seed)
    print(f"{len(seen)} distinct messages → {out}")


if __name__ == "__main__":
    main(*sys.argv[1:3])
