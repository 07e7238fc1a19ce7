"""What the web page's browser tests share (Tests/web/conftest.py, test_page.py): addresses, the browser's path, a page
that records what it did besides drawing, and a bridge API request over MQTT. A module of its own name, so that the
tests import it whichever conftest pytest loaded first."""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

from bench.peripherals import led

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("GATTBRIDGE_CHROMIUM", "/usr/bin/chromium")
SCREENSHOTS = os.environ.get("GATTBRIDGE_WEB_SCREENSHOTS") == "1"
PASSWORD = "correct horse battery staple"

STRAP, SERIAL, LAMP = "C0:FF:EE:00:00:01", "C0:FF:EE:00:00:02", "C0:FF:EE:00:00:03"
LED_CHAR = f"{led.SERVICE}/{led.CHARACTERISTIC}"


class Seen:
    """What a page did besides drawing: dialogs opened, requests sent, console errors and uncaught exceptions."""

    def __init__(self):
        self.dialogs: list[str] = []
        self.requests: list = []
        self.errors: list[str] = []

    def page_errors(self) -> list[str]:
        # The browser asks for /favicon.ico by itself; the page serves no icon (nothing else static).
        return [e for e in self.errors if "favicon" not in e and "404" not in e]


def new_page(browser, width: int = 1280, height: int = 800):
    context = browser.new_context(viewport={"width": width, "height": height})
    context.set_default_timeout(15_000)
    page = context.new_page()
    seen = Seen()

    def on_dialog(dialog):
        seen.dialogs.append(dialog.message)
        dialog.dismiss()
    page.on("dialog", on_dialog)
    page.on("request", lambda r: seen.requests.append(r))
    page.on("console", lambda m: m.type == "error" and seen.errors.append(f"console: {m.text} {m.location}"))
    page.on("pageerror", lambda e: seen.errors.append(f"pageerror: {e}"))
    page.seen = seen
    return context, page


def api_request(mqtt, bridge, verb: str, body: dict, timeout: float = 15.0) -> dict:
    """A bridge API request over MQTT (docs/bridge-api.md), as another client of the bridge sends it; its answer."""
    transaction = f"web-{time.monotonic_ns()}"
    mark = mqtt.mark()
    mqtt.publish(bridge.topic("bridge", "request", verb), json.dumps({**body, "transaction": transaction}))
    return mqtt.wait_for(bridge.topic("bridge", "response", verb),
                         lambda m: m.json().get("transaction") == transaction, timeout, since=mark).json()
