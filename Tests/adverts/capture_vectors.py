"""Records the broadcasts that the reference parsers' own test suites feed them, as test vectors.

    python capture_vectors.py OUT.json REPO_TESTS_DIR   (once per repository: their `tests` packages clash)

Runs each reference repository's pytest suite (bthome-ble, xiaomi-ble, govee-ble, ruuvitag-ble; their tests are not
in the PyPI packages, so they come from a checkout) with `BluetoothData.update` wrapped: every advertisement a test
hands to a parser is written down with the parser's bindkey. The suites' own verdicts do not matter here (a suite
written for another release may fail a test or two); only their inputs are kept. Vectors are sorted and deduplicated
so the file is stable; vectors already in OUT.json are kept. Tests/adverts/vectors.json was made this way; the differential test replays it.
"""
import json
import sys

import pytest
from bluetooth_sensor_state_data import BluetoothData

PARSERS = {
    "BTHomeBluetoothDeviceData": "bthome",
    "XiaomiBluetoothDeviceData": "xiaomi",
    "GoveeBluetoothDeviceData": "govee",
    "RuuvitagBluetoothDeviceData": "ruuvi",
}

captured: set[str] = set()


def record(parser, info):
    family = PARSERS.get(type(parser).__name__)
    if family is None:
        return
    bindkey = getattr(parser, "bindkey", None)
    vector = {
        "family": family,
        "address": info.address,
        "name": info.name,
        "service_data": {str(k): bytes(v).hex() for k, v in info.service_data.items()},
        "manufacturer_data": {str(k): bytes(v).hex() for k, v in info.manufacturer_data.items()},
        "bindkey": bytes(bindkey).hex() if bindkey else None,
    }
    captured.add(json.dumps(vector, sort_keys=True))


original = BluetoothData.update


def update(self, data):
    try:
        record(self, data)
    except Exception:  # a test's odd mock is no vector
        pass
    return original(self, data)


class Plugin:
    def pytest_configure(self, config):
        BluetoothData.update = update


if __name__ == "__main__":
    out, directory = sys.argv[1:]
    try:
        with open(out) as f:
            captured.update(json.dumps(v, sort_keys=True) for v in json.load(f))
    except FileNotFoundError:
        pass
    pytest.main(["-q", "-p", "no:cacheprovider", directory], plugins=[Plugin()])
    vectors = [json.loads(v) for v in sorted(captured)]
    with open(out, "w") as f:
        json.dump(vectors, f, indent=0, sort_keys=True)
        f.write("\n")
    print(f"{len(vectors)} vectors", file=sys.stderr)
