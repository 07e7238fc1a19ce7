"""Checks of the guide (docs/, README.md) and of the config's JSON Schema against the validator. No bench needed: only
the gattbridge binary ($GATTBRIDGE_BIN, else .build/debug/gattbridge) and the venv's jsonschema and PyYAML."""
import os
import pathlib

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def gattbridge_bin() -> str:
    path = os.environ.get("GATTBRIDGE_BIN") or str(REPO / ".build" / "debug" / "gattbridge")
    if not os.access(path, os.X_OK):
        pytest.fail(f"gattbridge binary not found at {path}: run `swift build` (or set GATTBRIDGE_BIN)")
    return path
