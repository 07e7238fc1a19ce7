"""Random broadcasts for the differential test: valid objects of every kind, encrypted with random keys (by the
`cryptography` package, independently of gattbridge's libcrypto wrapper), and damaged ones (truncated, bit-flipped,
wrong key, unknown ids). Deterministic for a seed."""
from __future__ import annotations

import random
from typing import Any

from cryptography.hazmat.primitives.ciphers.aead import AESCCM

from bthome_ble.const import MEAS_TYPES
from xiaomi_ble.devices import DEVICE_TYPES

BTHOME_UUID = "fcd2"
XIAOMI_UUID = "fe95"


def address(rng: random.Random) -> str:
    return ":".join(f"{rng.randrange(256):02X}" for _ in range(6))


def damage(rng: random.Random, data: bytes) -> bytes:
    """One kind of damage, or none (half the time)."""
    roll = rng.random()
    if roll < 0.5 or not data:
        return data
    if roll < 0.75:
        return data[: rng.randrange(len(data))]
    if roll < 0.9:
        index = rng.randrange(len(data))
        return data[:index] + bytes([data[index] ^ (1 << rng.randrange(8))]) + data[index + 1 :]
    return data + bytes(rng.randrange(256) for _ in range(rng.randrange(1, 4)))


# --- BTHome -------------------------------------------------------------------------------------------------------
def bthome_object(rng: random.Random, object_id: int) -> bytes:
    meas = MEAS_TYPES[object_id]
    if meas.data_format in ("raw", "string"):
        if meas.data_format == "string" and rng.random() < 0.8:
            text = "".join(rng.choice("abcxyz 019é€") for _ in range(rng.randrange(0, 12))).encode()
        else:
            text = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 12)))
        return bytes([object_id, len(text)]) + text
    if meas.data_format == "command":
        args = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 5)))
        return bytes([object_id, len(args) | (rng.randrange(8) << 5), rng.randrange(6)]) + args
    body = bytearray(rng.randrange(256) for _ in range(meas.data_length))
    if object_id == 0x3A:
        body[0] = rng.choice([0, 1, 2, 3, 4, 5, 6, 0x80, 0x81, 7])
    elif object_id == 0x3C:
        body[0] = rng.choice([0, 1, 2, 3])
    elif meas.data_length == 1 and rng.random() < 0.5:
        body[0] = rng.choice([0, 1])
    return bytes([object_id]) + bytes(body)


def bthome_objects(rng: random.Random) -> bytes:
    ids = [rng.choice(list(MEAS_TYPES)) for _ in range(rng.randrange(1, 7))]
    if rng.random() < 0.3:  # several objects of one id
        ids += [rng.choice(ids)] * rng.randrange(1, 3)
    if rng.random() < 0.8:
        ids.sort()
    if rng.random() < 0.4:
        ids.insert(0, 0x00)
    out = b"".join(bthome_object(rng, i) for i in ids)
    if rng.random() < 0.1:
        unknown = rng.choice([i for i in range(256) if i not in MEAS_TYPES])
        cut = rng.randrange(len(out) + 1)
        out = out[:cut] + bytes([unknown]) + out[cut:]
    return out


def bthome(rng: random.Random) -> dict[str, Any]:
    sender = address(rng)
    objects = bthome_objects(rng)
    mac_included = rng.random() < 0.2
    encrypted = rng.random() < 0.4
    info = 0x40 | (0x02 if mac_included else 0) | (0x04 if rng.random() < 0.3 else 0) | (0x01 if encrypted else 0)
    if rng.random() < 0.03:
        info = (info & 0x1F) | (rng.choice([0, 1, 3, 7]) << 5)
    mac = bytes.fromhex(sender.replace(":", ""))[::-1] if mac_included else b""
    request: dict[str, Any] = {"address": sender}
    if encrypted:
        key = bytes(rng.randrange(256) for _ in range(16))
        counter = rng.randrange(2**32).to_bytes(4, "little")
        nonce = bytes.fromhex(sender.replace(":", "")) + b"\xd2\xfc" + bytes([info]) + counter
        sealed = AESCCM(key, tag_length=4).encrypt(nonce, objects, None)
        body = sealed[:-4] + counter + sealed[-4:]
        roll = rng.random()
        if roll < 0.1:
            key = bytes(rng.randrange(256) for _ in range(16))  # the wrong key
        request["bindkey"] = None if roll > 0.95 else key.hex()
        data = bytes([info]) + mac + body
    else:
        data = bytes([info]) + mac + objects
        if rng.random() < 0.05:
            request["bindkey"] = bytes(rng.randrange(256) for _ in range(16)).hex()
    request["service_data"] = {BTHOME_UUID: damage(rng, data).hex()}
    return request


# --- Xiaomi -------------------------------------------------------------------------------------------------------
XIAOMI_OBJECTS = {
    0x000F: 3, 0x1004: 2, 0x1005: 2, 0x1006: 2, 0x1007: 3, 0x1008: 1, 0x1009: 2, 0x100A: 1, 0x100D: 4, 0x1010: 2,
    0x1012: 1, 0x1013: 1, 0x1014: 1, 0x1015: 1, 0x1017: 4, 0x1018: 1, 0x1019: 1, 0x101B: 4, 0x4801: 4, 0x4802: 1,
    0x4803: 1, 0x4804: 1, 0x4805: 4, 0x4806: 1, 0x4808: 4, 0x480C: 1, 0x4818: 2, 0x4A01: 1, 0x4A08: 4, 0x4C01: 4, 0x4C02: 1, 0x4C03: 1, 0x4C08: 4,
    0x4E01: 1,
}
XIAOMI_MODELS = [
    "LYWSDCGQ", "LYWSD02", "LYWSD02MMC", "LYWSD03MMC", "MHO-C401", "MHO-C303", "CGG1", "CGG1-ENCRYPTED", "CGDK2",
    "CGDK3", "XMWSDJ04MMC", "HHCCJCY01", "GCLS002", "HHCCPOT002", "MJYD02YL", "RTCGQ02LM", "MCCGQ02HL", "CGPR1",
    "CGH1", "MUE4094RT", "XMPIRO2SXS", "MJWSD05MMC", "MJWSD06MMC", "XMMF01JQD", "SJWS02LM", "MS1BB(MI)", "PS1BB",
]
XIAOMI_IDS = [i for i, d in DEVICE_TYPES.items() if d.model in XIAOMI_MODELS]


def xiaomi_object(rng: random.Random, object_id: int) -> bytes:
    length = XIAOMI_OBJECTS[object_id]
    if rng.random() < 0.05:
        length = rng.randrange(1, 6)  # a wrong length: the object is skipped
    body = bytearray(rng.randrange(256) for _ in range(length))
    if object_id in (0x4801, 0x4805, 0x4808, 0x4C01, 0x4C08, 0x4A08) and length == 4 and rng.random() < 0.8:
        import struct

        body = bytearray(struct.pack("<f", rng.uniform(-40, 120)))
    if object_id == 0x1019:
        body[0] = rng.randrange(5)
    return object_id.to_bytes(2, "little") + bytes([len(body)]) + bytes(body)


def xiaomi(rng: random.Random) -> dict[str, Any]:
    sender = address(rng)
    ids = [rng.choice(list(XIAOMI_OBJECTS)) for _ in range(rng.randrange(1, 4))]
    if rng.random() < 0.05:
        ids.append(rng.choice([0x1001, 0x4E0C, 0x9999]))
    objects = b"".join(
        xiaomi_object(rng, i) if i in XIAOMI_OBJECTS else i.to_bytes(2, "little") + b"\x01\x00" for i in ids
    )
    version = rng.choice([2, 3, 4, 5, 5])
    encrypted = version >= 4 and rng.random() < 0.5
    mac_included = rng.random() < 0.6 or (encrypted and rng.random() < 0.5)
    capability = rng.random() < 0.2
    control = version << 12 | 0x40 | (0x10 if mac_included else 0) | (0x20 if capability else 0)
    control |= 0x08 if encrypted else 0
    if rng.random() < 0.02:
        control |= 0x80  # mesh
    product = rng.choice(XIAOMI_IDS) if rng.random() < 0.97 else rng.randrange(0x10000)
    counter = rng.randrange(256)
    header = control.to_bytes(2, "little") + product.to_bytes(2, "little") + bytes([counter])
    mac = bytes.fromhex(sender.replace(":", ""))[::-1]
    header += mac if mac_included else b""
    if capability:
        cap = rng.randrange(256)
        header += bytes([cap]) + (bytes([rng.randrange(256)]) if cap & 0x20 else b"")
    request: dict[str, Any] = {"address": sender}
    if encrypted:
        key = bytes(rng.randrange(256) for _ in range(16))
        extension = bytes(rng.randrange(256) for _ in range(3))
        nonce = mac + product.to_bytes(2, "little") + bytes([counter]) + extension
        sealed = AESCCM(key, tag_length=4).encrypt(nonce, objects, b"\x11")
        data = header + sealed[:-4] + extension + sealed[-4:]
        if rng.random() < 0.1:
            key = bytes(rng.randrange(256) for _ in range(16))
        request["bindkey"] = key.hex()
    else:
        data = header + objects
        if rng.random() < 0.05:
            request["bindkey"] = bytes(rng.randrange(256) for _ in range(16)).hex()
    request["service_data"] = {XIAOMI_UUID: damage(rng, data).hex()}
    return request


# --- Govee --------------------------------------------------------------------------------------------------------
GOVEE_NAMES = [
    "GVH5072_1234", "GVH5075_ABCD", "GVH5129_0000", "GVH5101_1A2B", "GVH5102_3C4D", "GVH5177_5E6F", "GVH5174_7A8B",
    "GVH5100_0001", "GVH5104_0002", "GVH5105_0003", "GVH5108_0004", "GVH5110_0005", "GV5179_0006", "Govee_H5074_C3F1",
    "GVH5051_1111", "GVH5052_2222", "GVH5071_3333", "H5179_4444", "GVH5106_5555", "Unrelated", "",
]
GOVEE_COMPANIES = [0xEC88, 0x0001, 0x8801, 0x1234, 0x4C00, 0x0499]


def govee(rng: random.Random) -> dict[str, Any]:
    length = rng.choice([6, 6, 6, 7, 8, 9, 9, 5, 10])
    data = bytearray(rng.randrange(256) for _ in range(length))
    if rng.random() < 0.7 and length in (6, 8):  # plausible readings: 20.0 °C, 45 % and so on
        value = rng.randrange(-400, 1000) * 10000 + rng.randrange(1000)
        packed = (abs(value) | (0x800000 if value < 0 else 0)).to_bytes(3, "big")
        start = 1 if length == 6 and rng.random() < 0.5 else 2
        data[start : start + 3] = packed
        data[start + 3] = rng.randrange(101) | (0x80 if rng.random() < 0.1 else 0)
    request = {"name": rng.choice(GOVEE_NAMES), "manufacturer_data": {str(rng.choice(GOVEE_COMPANIES)): bytes(data).hex()}}
    return request


# --- Ruuvi --------------------------------------------------------------------------------------------------------
def ruuvi(rng: random.Random) -> dict[str, Any]:
    data = bytearray([5]) + bytearray(rng.randrange(256) for _ in range(23))
    for offset, sentinel in ((1, b"\x80\x00"), (3, b"\xff\xff"), (5, b"\xff\xff"), (7, b"\x80\x00"), (13, b"\xff\xff")):
        if rng.random() < 0.1:
            data[offset : offset + 2] = sentinel
    raw = bytes(data)
    if rng.random() < 0.1:
        raw = raw[: rng.randrange(1, 24)]
    return {"address": address(rng), "manufacturer_data": {"1177": raw.hex()}}


GENERATORS = {"bthome": bthome, "xiaomi": xiaomi, "govee": govee, "ruuvi": ruuvi}
