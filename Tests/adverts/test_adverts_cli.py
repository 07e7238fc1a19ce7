"""`gattbridge adverts decode` as a user runs it: the JSON object, exit statuses, bindkeys from a file."""
from __future__ import annotations

import json
import os
import pathlib
import subprocess

HERE = pathlib.Path(__file__).parent
BINARY = os.environ.get("GATTBRIDGE_BIN", str(HERE.parent.parent / ".build" / "debug" / "gattbridge"))
ENCRYPTED = ["--address", "54:48:E6:8F:80:A5", "--service-data", "fcd2=41a47266c95f730011223378237214"]
KEY = "231d39c1d7cc1ab1aee224cd096db932"


def decode(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([BINARY, "adverts", "decode", *args], capture_output=True, text=True, timeout=30)


def test_prints_one_json_object_with_exactly_the_documented_keys() -> None:
    run = decode("--service-data", "fcd2=40005201643a01")
    assert run.returncode == 0, run.stderr
    assert run.stdout.count("\n") == 1
    assert json.loads(run.stdout) == {
        "format": "bthome", "measurements": {"battery": 100},
        "events": [{"name": "button", "event_type": "press"}], "packet_id": 82, "encrypted": False,
    }


def test_manufacturer_data_in_hex_or_decimal_and_the_name() -> None:
    for company in ("0xec88", "60552"):
        run = decode("--name", "GVH5075_2762", "--manufacturer-data", f"{company}=00 03 4d b2 64 00")
        assert json.loads(run.stdout)["measurements"] == {"temperature": 21.6, "humidity": 49.8, "battery": 100}


def test_bindkey_from_a_file(tmp_path: pathlib.Path) -> None:
    key_file = tmp_path / "key"
    key_file.write_text(KEY + "\n")
    key_file.chmod(0o600)
    run = decode("--bindkey-file", str(key_file), *ENCRYPTED)
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout)
    assert result["encrypted"] is True and result["measurements"] == {"temperature": 25.06, "humidity": 50.55}
    assert KEY not in run.stdout + run.stderr


def test_nothing_decodes_exits_65_with_the_reason() -> None:
    no_key = decode(*ENCRYPTED)
    assert no_key.returncode == 65 and no_key.stdout == ""
    assert "no bindkey" in no_key.stderr
    wrong = decode("--bindkey", "00" * 16, *ENCRYPTED)
    assert wrong.returncode == 65 and "decryption failed" in wrong.stderr
    unknown = decode("--service-data", "180f=64")
    assert unknown.returncode == 65 and "no broadcast of a known format" in unknown.stderr
    truncated = decode("--manufacturer-data", "1177=0505a060")
    assert truncated.returncode == 65


def test_bad_arguments_exit_64(tmp_path: pathlib.Path) -> None:
    assert decode().returncode == 64
    assert decode("--service-data", "fcd2=4").returncode == 64
    assert decode("--service-data", "nonsense=40").returncode == 64
    assert decode("--manufacturer-data", "70000=00").returncode == 64
    assert decode("--bindkey", "abc", *ENCRYPTED).returncode == 64
    assert decode("--bindkey-file", str(tmp_path / "missing"), *ENCRYPTED).returncode == 64
    both = decode("--bindkey", KEY, "--bindkey-file", str(tmp_path / "x"), *ENCRYPTED)
    assert both.returncode == 64


def test_batch_answers_every_line() -> None:
    lines = [
        {"service_data": {"fcd2": "4002ca0903bf13"}},
        {"service_data": {"fcd2": "zz"}},
        "not json",
        {"manufacturer_data": {"1177": "0505a060"}},
    ]
    text = "".join((json.dumps(line) if isinstance(line, dict) else line) + "\n" for line in lines)
    run = subprocess.run([BINARY, "adverts", "decode", "--batch"], input=text, capture_output=True, text=True,
                         timeout=30)
    answers = [json.loads(line) for line in run.stdout.splitlines()]
    assert len(answers) == 4
    assert answers[0]["measurements"] == {"temperature": 25.06, "humidity": 50.55}
    assert answers[0]["units"] == {"temperature": "°C", "humidity": "%"}
    assert all("error" in answer for answer in answers[1:])
