"""Simulated BLE peripherals for the bench; each runs as its own process (see __main__.py)."""

from bench.peripherals import broadcaster, button, crowd, generic, heart_rate, hm10, led, secure

KINDS = {
    "heart_rate": heart_rate.build,
    "hm10": hm10.build,
    "led": led.build,
    "generic": generic.build,
    "button": button.build,
    "secure": secure.build,
    "broadcaster": broadcaster.build,
    "crowd": crowd.build,
}
