"""The web page in a real browser (docs/web.md): Debian's chromium through Playwright against the real bridge on the
simulated bench (Tests/web/conftest.py). Elements are found by role and visible text, as a person finds them; every wait
is a condition with a deadline.
"""
from __future__ import annotations

import json
import re

from playwright.sync_api import expect

from bench.bench import wait_until
from bridge_helpers import channel, device
from web_helpers import LED_CHAR, PASSWORD, REPO, SCREENSHOTS, api_request, new_page

THERMO = "A4:C1:38:0B:70:21"         # a BTHome broadcaster nobody saved
EVIL = "A4:C1:38:0B:70:66"           # one that advertises markup as its name
SPARE_LAMP = "C0:FF:EE:00:01:31"     # an LED nobody saved
SPARE_STRAP = "C0:FF:EE:00:01:32"    # a heart-rate strap nobody saved
GADGET = "C0:FF:EE:00:01:33"
LEVEL_UUID = "c0ffee00-1e7e-4c7a-9b1e-000000000001"
HOSTILE = "<img src=x onerror=alert(1)>"
KIB = 1024


def open_route(page, wb, route: str) -> None:
    page.goto(f"{wb.url}/#/{route}")


def device_row(page, name: str):
    return page.get_by_role("row").filter(has=page.get_by_role("link", name=name, exact=True))


def nearby_row(page, address: str):
    return page.get_by_role("row").filter(has_text=address)


def scan(page, wb, address: str, text: str = ""):
    """Nearby → Scan (5 s); the row of `address` once it shows `text`."""
    open_route(page, wb, "nearby")
    page.get_by_role("button", name="Scan", exact=True).click()
    row = nearby_row(page, address)
    expect(row).to_contain_text(text or address, timeout=30_000)
    return row


def add_form(page, address: str):
    return page.get_by_role("form", name=re.compile("^Add " + re.escape(address)))


def value_of(row, name: str) -> str:
    """The value `name` in a Devices row ("name value" in its list of values)."""
    item = row.get_by_role("listitem").filter(has=row.page.locator(".vname", has_text=re.compile(f"^{name}$")))
    return item.locator(".value").inner_text()


def shot(page, name: str) -> None:
    if SCREENSHOTS:
        out = REPO / "docs" / "web"
        out.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(out / f"{name}.png"), full_page=True)


def no_writes(peripheral, since: int) -> None:
    assert peripheral.events_matching("write", since=since) == [], peripheral.events_matching("write", since=since)


# --- reading ------------------------------------------------------------------------------------------------

def test_the_bench_devices_appear_with_live_values(web_bridge, page):
    wb = web_bridge()
    open_route(page, wb, "devices")
    expect(page.get_by_role("heading", name="Devices")).to_be_visible()
    for name, address in (("heart-rate-strap", "C0:FF:EE:00:00:01"), ("hm10", "C0:FF:EE:00:00:02"),
                          ("desk-led", "C0:FF:EE:00:00:03")):
        row = device_row(page, name)
        expect(row).to_contain_text("online", timeout=15_000)
        expect(row).to_contain_text(address)
        expect(row).to_contain_text("connected")
        expect(row).to_contain_text("config")
    expect(device_row(page, "desk-led")).to_contain_text("OFF", timeout=10_000)
    page.evaluate("window.__sameDocument = true")
    strap = device_row(page, "heart-rate-strap")
    heart_rate = wb.bridge.topic("heart-rate-strap", "heart_rate")
    # Three values in a row reach the page within 3 s of their MQTT publish, without a reload.
    for _ in range(3):
        mark = wb.mqtt.mark()
        published = wb.mqtt.wait_for(heart_rate, None, 5, since=mark).text
        wait_until(lambda: value_of(strap, "heart_rate") == published, 3,
                   lambda: f"the page shows {value_of(strap, 'heart_rate')!r}, MQTT said {published!r} 3 s ago")
    assert json.loads(value_of(strap, "heart_rate"))["bpm"] > 0
    assert page.evaluate("window.__sameDocument") is True


def test_every_page_renders_under_the_csp(web_bridge, bench, page):
    """Each page draws without a console error or a refused inline script/style; docs/web/*.png when asked."""
    bench.broadcaster("bthome", THERMO)
    wb = web_bridge()
    status, _ = wb.api("GET", "/")
    assert status == 200
    import urllib.request
    with urllib.request.urlopen(wb.url + "/", timeout=10) as r:
        csp = r.headers["Content-Security-Policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp and "default-src 'none'" in csp, csp

    open_route(page, wb, "devices")
    expect(device_row(page, "heart-rate-strap")).to_contain_text('"bpm"', timeout=15_000)
    expect(device_row(page, "desk-led")).to_contain_text("OFF", timeout=10_000)
    shot(page, "devices")

    page.get_by_role("link", name="desk-led", exact=True).click()
    expect(page.get_by_role("heading", name="desk-led", exact=True)).to_be_visible()
    page.get_by_role("button", name="ON", exact=True).click()
    expect(page.get_by_role("status", name="Result for led")).to_have_text("ok", timeout=10_000)
    expect(page.get_by_role("heading", name="Recent errors")).to_be_visible()
    shot(page, "device")

    scan(page, wb, THERMO, "temperature=")
    nearby_row(page, THERMO).get_by_role("button", name="Add").click()
    expect(add_form(page, THERMO).get_by_label("Name")).to_be_visible()
    shot(page, "nearby")

    page.get_by_role("link", name="Log", exact=True).click()
    expect(page.get_by_role("heading", name="Log", exact=True)).to_be_visible()
    expect(page.get_by_label("Level")).to_have_value("all")
    wb.mqtt.publish(wb.bridge.topic("desk-led", "led", "set"), "zz")         # a bad command, for an entry to show
    expect(page.get_by_role("list", name=re.compile("Log entries")).get_by_role("listitem").first).to_contain_text(
        '"zz"', timeout=10_000)
    shot(page, "log")

    page.get_by_role("link", name="Bridge", exact=True).click()
    expect(page.get_by_role("heading", name="Adapters")).to_be_visible()
    expect(page.get_by_role("row").filter(has_text="hci0")).to_contain_text("ok")
    info = wb.mqtt.wait_for(wb.bridge.topic("bridge", "info"), None, 5).json()
    expect(page.locator("main")).to_contain_text(info["version"])
    expect(page.locator("main")).to_contain_text("connected")
    shot(page, "bridge")
    assert page.seen.page_errors() == []
    assert page.seen.dialogs == []


# --- acting -------------------------------------------------------------------------------------------------

def test_the_led_switched_from_the_page_reaches_the_peripheral(web_bridge, page):
    wb = web_bridge()
    lamp = wb.peripherals["desk-led"]
    open_route(page, wb, "device/desk-led")
    result = page.get_by_role("status", name="Result for led")
    for button, byte, shown in (("ON", "01", "ON"), ("OFF", "00", "OFF")):
        mark = lamp.mark()
        page.get_by_role("button", name=button, exact=True).click()
        expect(result).to_have_text("ok", timeout=10_000)
        lamp.wait_for({"event": "state", "led": byte}, 5, since=mark)
        expect(page.get_by_role("row").filter(has_text=re.compile("^led"))).to_contain_text(shown, timeout=5_000)

    # A free-input channel: text to the HM-10, which echoes the line back as the channel's value.
    serial = wb.peripherals["hm10"]
    mark = serial.mark()
    open_route(page, wb, "device/hm10")
    page.get_by_label("Value for serial").fill("hello page")
    page.get_by_role("button", name="Send", exact=True).click()
    expect(page.get_by_role("status", name="Result for serial")).to_have_text("ok", timeout=10_000)
    serial.wait_for("line", 5, since=mark)
    expect(page.get_by_role("row").filter(has_text=re.compile("^serial"))).to_contain_text("hello page",
                                                                                           timeout=5_000)


def test_a_bad_command_shows_its_error_and_the_log_has_it(web_bridge, peripheral, page):
    gadget = peripheral("generic", GADGET, config={"name": "Level", "services": [
        {"uuid": "c0ffee00-1e7e-4c7a-9b1e-000000000000",
         "characteristics": [{"uuid": LEVEL_UUID, "flags": ["read", "write"], "value": "05"}]}]})
    wb = web_bridge([device("gadget", GADGET, [channel("level", LEVEL_UUID, "uint8", mode="read", interval=60,
                                                       writable=True)])])
    wb.bridge.wait_online(wb.mqtt, "gadget")
    open_route(page, wb, "log")
    expect(page.get_by_role("heading", name="Log", exact=True)).to_be_visible()
    log = page.get_by_role("list", name=re.compile("Log entries"))
    open_route(page, wb, "device/gadget")
    mark, writes = wb.mqtt.mark(), gadget.mark()
    page.get_by_label("Value for level").fill("256")              # out of range for uint8
    page.get_by_role("button", name="Send", exact=True).click()
    result = page.get_by_role("status", name="Result for level")
    expect(result).not_to_have_text(re.compile(r"^(ok|sending…)?$"), timeout=10_000)
    logged = wb.mqtt.wait_for(wb.bridge.log, lambda m: m.json().get("level") == "error", 10, since=mark).json()
    no_writes(gadget, writes)

    page.get_by_role("link", name="Log", exact=True).click()
    entry = log.get_by_role("listitem").filter(has_text=logged["message"])
    expect(entry).to_be_visible(timeout=5_000)
    expect(entry).to_contain_text("error")
    # Newest first, live: a second bad command lands on top without a reload.
    mark = wb.mqtt.mark()
    wb.mqtt.publish(wb.bridge.topic("gadget", "level", "set"), "12abc")
    second = wb.mqtt.wait_for(wb.bridge.log, lambda m: m.json().get("level") == "error", 10, since=mark).json()
    expect(log.get_by_role("listitem").first).to_contain_text(second["message"], timeout=5_000)
    # The level filter: Error leaves errors only.
    page.get_by_label("Level").select_option("error")
    levels = [t.lower() for t in log.locator(".level").all_inner_texts()]    # shown in capitals
    assert levels and set(levels) == {"error"}, levels


def test_a_broadcaster_is_added_from_nearby(web_bridge, bench, page):
    bench.broadcaster("bthome", THERMO)
    wb = web_bridge()
    row = scan(page, wb, THERMO, "temperature=")
    expect(row).to_contain_text("BTHome")
    row.get_by_role("button", name="Add").click()
    form = add_form(page, THERMO)
    form.get_by_label("Name").fill("porch-thermo")
    expect(form.get_by_label("Bindkey")).to_be_visible()
    form.get_by_role("button", name="Add device").click()
    expect(form.get_by_role("status")).to_have_text(re.compile("^ok"), timeout=15_000)
    saved = json.loads((wb.state_dir / "devices.d" / "porch-thermo.yaml").read_text())
    assert saved["address"] == THERMO and saved["advert"] in ("bthome", "auto") and "channels" not in saved, saved

    page.get_by_role("link", name="Devices", exact=True).click()
    row = device_row(page, "porch-thermo")
    expect(row).to_contain_text("passive", timeout=10_000)
    expect(row).to_contain_text("api")
    expect(row).to_contain_text("temperature", timeout=15_000)


def test_a_connectable_device_is_added_through_its_characteristics(web_bridge, peripheral, page):
    spare_lamp = peripheral("led", SPARE_LAMP)
    peripheral("heart_rate", SPARE_STRAP)
    wb = web_bridge()

    # The standard characteristics come pre-filled: the strap's heart rate and battery.
    row = scan(page, wb, SPARE_STRAP)
    row.get_by_role("button", name="Add").click()
    form = add_form(page, SPARE_STRAP)
    expect(form.get_by_role("combobox", name="Codec for Heart Rate Measurement (2a37)")).to_have_value(
        "heart_rate_measurement", timeout=30_000)
    expect(form.get_by_role("checkbox", name="Publish Heart Rate Measurement (2a37)")).to_be_checked()
    expect(form.get_by_role("checkbox", name="Writable Heart Rate Measurement (2a37)")).to_be_disabled()
    expect(form.get_by_role("combobox", name="Codec for Battery Level (2a19)")).to_have_value("battery_level")
    expect(form.get_by_role("combobox", name="Home Assistant component for Battery Level (2a19)")).to_have_value(
        "sensor")

    # The LED's vendor characteristic, chosen by hand: published, writable, a switch with ON/OFF.
    nearby_row(page, SPARE_LAMP).get_by_role("button", name="Add").click()
    form = add_form(page, SPARE_LAMP)
    char = re.compile(re.escape(LED_CHAR.split("/")[1]) + r"\)$")
    publish = form.get_by_role("checkbox", name=re.compile("^Publish .*" + char.pattern))
    expect(publish).to_be_visible(timeout=30_000)
    publish.check()
    form.get_by_role("checkbox", name=re.compile("^Writable .*" + char.pattern)).check()
    form.get_by_role("textbox", name=re.compile("^Channel name for .*" + char.pattern)).fill("led")
    form.get_by_role("textbox", name=re.compile("^Values for .*" + char.pattern)).fill("ON=01, OFF=00")
    form.get_by_role("combobox", name=re.compile("^Home Assistant component for .*" + char.pattern)).select_option(
        "switch")
    form.get_by_label("Name", exact=True).fill("page-lamp")
    expect(form.get_by_label("Passkey")).to_be_hidden()
    form.get_by_role("button", name="Add device").click()
    expect(form.get_by_role("status").last).to_have_text(re.compile("^ok"), timeout=15_000)
    saved = json.loads((wb.state_dir / "devices.d" / "page-lamp.yaml").read_text())
    assert saved["channels"][0]["values"] == {"ON": "01", "OFF": "00"}, saved
    assert saved["channels"][0]["writable"] is True and saved["channels"][0]["homeassistant"] == "switch", saved

    wb.bridge.wait_online(wb.mqtt, "page-lamp", timeout=30)
    open_route(page, wb, "device/page-lamp")
    mark = spare_lamp.mark()
    page.get_by_role("button", name="ON", exact=True).click()
    expect(page.get_by_role("status", name="Result for led")).to_have_text("ok", timeout=10_000)
    spare_lamp.wait_for({"event": "state", "led": "01"}, 5, since=mark)


def test_a_device_added_over_mqtt_appears_and_one_removed_from_the_page_disappears(web_bridge, peripheral, page):
    peripheral("led", SPARE_LAMP)
    wb = web_bridge()
    open_route(page, wb, "devices")
    expect(device_row(page, "desk-led")).to_be_visible(timeout=15_000)
    page.evaluate("window.__sameDocument = true")
    answer = api_request(wb.mqtt, wb.bridge, "device/add", {
        "name": "mqtt-lamp", "address": SPARE_LAMP,
        "channels": [{"name": "led", "characteristic": LED_CHAR, "codec": "hex", "values": {"ON": "01", "OFF": "00"},
                      "mode": "read", "interval": 1, "writable": True}]})
    assert answer["status"] == "ok", answer
    row = device_row(page, "mqtt-lamp")
    expect(row).to_contain_text("api", timeout=3_000)
    expect(row).to_contain_text("online", timeout=20_000)
    assert page.evaluate("window.__sameDocument") is True
    drop_in = wb.state_dir / "devices.d" / "mqtt-lamp.yaml"
    assert drop_in.exists()

    row.get_by_role("link", name="mqtt-lamp", exact=True).click()
    page.get_by_role("button", name="Remove", exact=True).click()
    confirm = page.get_by_role("group", name="Confirm removal")
    expect(confirm).to_be_visible()
    assert drop_in.exists(), "removed before the confirmation"
    confirm.get_by_role("button", name="Yes, remove").click()
    expect(page).to_have_url(re.compile("#/devices$"), timeout=10_000)
    expect(device_row(page, "mqtt-lamp")).to_have_count(0, timeout=5_000)
    expect(device_row(page, "desk-led")).to_have_count(1)
    assert not drop_in.exists()
    # Config devices cannot be removed: no Remove button.
    open_route(page, wb, "device/desk-led")
    expect(page.get_by_role("button", name="ON", exact=True)).to_be_visible()
    expect(page.get_by_role("button", name="Remove")).to_have_count(0)


# --- security -----------------------------------------------------------------------------------------------

def test_an_advertised_name_full_of_markup_is_shown_as_text(web_bridge, bench, page):
    bench.broadcaster("bthome", EVIL, name=HOSTILE)
    wb = web_bridge()
    answer = api_request(wb.mqtt, wb.bridge, "device/add", {"name": HOSTILE, "address": EVIL, "advert": "bthome"})
    assert answer["status"] == "ok", answer

    open_route(page, wb, "devices")
    link = page.get_by_role("link", name=HOSTILE, exact=True)
    expect(link).to_be_visible(timeout=15_000)
    link.click()
    expect(page.get_by_role("heading", name=HOSTILE, exact=True)).to_be_visible()
    scan(page, wb, EVIL, "temperature=")
    expect(nearby_row(page, EVIL).get_by_role("cell", name=HOSTILE, exact=True)).to_be_visible()
    page.get_by_role("link", name="Log", exact=True).click()
    expect(page.get_by_role("heading", name="Log", exact=True)).to_be_visible()

    assert page.locator("main img").count() == 0
    assert page.seen.dialogs == []
    strays = [r.url for r in page.seen.requests if re.search(r"/x($|[?#])", r.url)]
    assert strays == []
    assert page.seen.page_errors() == []


def test_with_a_password_and_no_session_nothing_is_shown_or_changed(web_bridge, page):
    wb = web_bridge(password=PASSWORD)
    lamp = wb.peripherals["desk-led"]
    writes = lamp.mark()
    open_route(page, wb, "devices")
    expect(page.get_by_label("Password")).to_be_visible()
    expect(page.get_by_role("button", name="Log in")).to_be_visible()
    expect(page.get_by_role("link", name="Devices", exact=True)).to_have_count(0)
    for name in ("heart-rate-strap", "desk-led", "C0:FF:EE:00:00:03"):
        assert name not in page.content()

    origin = {"Origin": wb.url}
    for path in ("/api/state", "/api/log", "/api/events"):
        status, _ = wb.api("GET", path)
        assert status == 401, (path, status)
    status, _ = wb.api("GET", "/api/session")
    assert status == 200
    for path, body in (("/api/device/desk-led/led/set", {"payload": "ON"}),
                       ("/api/request/device/remove", {"name": "desk-led"}),
                       ("/api/request/device/add", {"name": "intruder", "address": "C0:FF:EE:00:01:99",
                                                    "advert": "bthome"})):
        status, _ = wb.api("POST", path, body, headers=origin)
        assert status in (401, 403), (path, status)
    no_writes(lamp, writes)
    assert not (wb.state_dir / "devices.d" / "intruder.yaml").exists()
    listed = wb.mqtt.wait_for(wb.bridge.topic("bridge", "devices"), None, 5).json()
    assert {d["name"] for d in listed} >= {"desk-led"}

    # A wrong password is said so; the right one opens the page with an HttpOnly, SameSite=Strict session cookie.
    page.get_by_label("Password").fill("wrong")
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("alert")).to_contain_text("wrong password")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(device_row(page, "desk-led")).to_contain_text("online", timeout=15_000)
    cookie = next(c for c in page.context.cookies() if c["name"] == "gb_session")
    assert cookie["httpOnly"] is True and cookie["sameSite"] == "Strict", cookie
    assert "gb_session" not in page.evaluate("document.cookie")
    open_route(page, wb, "device/desk-led")
    page.get_by_role("button", name="ON", exact=True).click()
    expect(page.get_by_role("status", name="Result for led")).to_have_text("ok", timeout=10_000)
    lamp.wait_for({"event": "state", "led": "01"}, 5, since=writes)

    # Logged out: the form again, and the API closed.
    page.get_by_role("button", name="Log out").click()
    expect(page.get_by_label("Password")).to_be_visible()
    status = page.evaluate("fetch('/api/state').then(r => r.status)")
    assert status == 401


def test_login_attempts_are_throttled(web_bridge):
    wb = web_bridge(password=PASSWORD, bench_peripherals=False)
    origin = {"Origin": wb.url}
    statuses = [wb.api("POST", "/api/login", {"password": f"guess-{i}"}, headers=origin)[0] for i in range(5)]
    assert statuses == [401] * 5, statuses
    status, body = wb.api("POST", "/api/login", {"password": "guess-5"}, headers=origin)
    assert status == 429, (status, body)
    # A foreign Origin is refused before the password is even looked at.
    status, _ = wb.api("POST", "/api/login", {"password": PASSWORD}, headers={"Origin": "http://evil.example"})
    assert status == 403


def test_cross_site_requests_change_nothing(web_bridge, page):
    wb = web_bridge()
    lamp = wb.peripherals["desk-led"]
    open_route(page, wb, "device/desk-led")
    with page.expect_request(lambda r: r.method == "POST" and r.url.endswith("/led/set")) as info:
        page.get_by_role("button", name="OFF", exact=True).click()
    expect(page.get_by_role("status", name="Result for led")).to_have_text("ok", timeout=10_000)
    sent = info.value
    headers = sent.all_headers()
    token, origin = headers["x-csrf-token"], headers["origin"]
    assert origin == wb.url and token
    path = "/api/device/desk-led/led/set"
    on = json.dumps({"payload": "ON"}).encode()

    writes = lamp.mark()
    host = f"127.0.0.1:{wb.port}"
    refused = {
        "no token": {"Origin": origin},
        "a wrong token": {"Origin": origin, "X-CSRF-Token": "0" * len(token)},
        "no Origin": {"X-CSRF-Token": token},
        "a foreign Origin": {"Origin": "http://evil.example", "X-CSRF-Token": token},
        "Origin null": {"Origin": "null", "X-CSRF-Token": token},
        "a foreign Host": {"Origin": origin, "X-CSRF-Token": token, "Host": "evil.example"},
        "a foreign Host and Origin (DNS rebinding)": {"Origin": "http://evil.example:%d" % wb.port,
                                                      "X-CSRF-Token": token, "Host": f"evil.example:{wb.port}"},
        "a form post": {"Origin": "http://evil.example", "Content-Type": "text/plain"},
    }
    for why, extra in refused.items():
        status, body = wb.api("POST", path, raw=on, headers={"Content-Type": "application/json", **extra})
        assert 400 <= status < 500, (why, status, body)
    status, _ = wb.api("POST", "/api/request/device/add", headers={"Origin": "http://evil.example",
                                                                  "X-CSRF-Token": token},
                       body={"name": "intruder", "address": "C0:FF:EE:00:01:99", "advert": "bthome"})
    assert status == 403
    status, _ = wb.api("GET", "/", headers={"Host": "evil.example"})
    assert 400 <= status < 500, status
    status, _ = wb.api("GET", "/api/state", headers={"Host": f"evil.example:{wb.port}"})
    assert 400 <= status < 500, status
    no_writes(lamp, writes)
    assert not (wb.state_dir / "devices.d" / "intruder.yaml").exists()

    # The same request with the page's token, Origin and Host does what the page did: the replay itself was valid.
    status, body = wb.api("POST", path, raw=on, headers={"Content-Type": "application/json", "Origin": origin,
                                                        "X-CSRF-Token": token, "Host": host})
    assert status == 200 and body == {"status": "ok"}, (status, body)
    lamp.wait_for({"event": "state", "led": "01"}, 5, since=writes)


# --- size and shape -----------------------------------------------------------------------------------------

def test_at_a_phones_width_nothing_scrolls_sideways(web_bridge, bench, phone):
    bench.broadcaster("bthome", THERMO)
    wb = web_bridge()

    def fits(what: str) -> None:
        widths = phone.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
        assert widths[0] <= widths[1] == 390, (what, widths)

    open_route(phone, wb, "devices")
    expect(device_row(phone, "heart-rate-strap")).to_contain_text('"bpm"', timeout=15_000)
    fits("devices")
    open_route(phone, wb, "device/desk-led")
    expect(phone.get_by_role("button", name="ON", exact=True)).to_be_visible()
    fits("device")
    open_route(phone, wb, "device/heart-rate-strap")
    expect(phone.get_by_role("row").filter(has_text=re.compile("^heart_rate"))).to_contain_text("bpm")
    fits("device with JSON values")
    scan(phone, wb, THERMO, "temperature=")
    fits("nearby")
    nearby_row(phone, "C0:FF:EE:00:00:03").get_by_role("button", name="Add").click()
    expect(add_form(phone, "C0:FF:EE:00:00:03").get_by_role("checkbox").first).to_be_visible(timeout=30_000)
    fits("nearby, a connectable device's characteristics")
    open_route(phone, wb, "log")
    expect(phone.get_by_role("heading", name="Log", exact=True)).to_be_visible()
    fits("log")
    open_route(phone, wb, "bridge")
    expect(phone.get_by_role("heading", name="Adapters")).to_be_visible()
    fits("bridge")


def test_the_first_load_transfers_at_most_150_kib(web_bridge, browser):
    wb = web_bridge()
    context, page = new_page(browser)
    try:
        finished = []
        page.on("requestfinished", lambda r: finished.append(r))
        open_route(page, wb, "devices")
        expect(device_row(page, "desk-led")).to_contain_text("online", timeout=15_000)
        sizes = {}
        for r in finished:
            s = r.sizes()
            sizes[r.url] = s["responseBodySize"] + s["responseHeadersSize"] + s["requestHeadersSize"]
        total = sum(sizes.values())
        assert {wb.url + "/", wb.url + "/app.js", wb.url + "/app.css"} <= set(u.split("#")[0] for u in sizes), sizes
        assert total <= 150 * KIB, sizes
        print(f"first load: {total} bytes in {len(sizes)} requests: {sizes}")
    finally:
        context.close()
