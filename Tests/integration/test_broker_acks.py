"""A broker that stops acknowledging while the link stays up (PINGRESPs still come): the bridge notices, reconnects
and its QoS 1 messages flow again.

mosquitto 2.0.11 (Debian 12, Raspberry Pi OS) did this under `test_floods.py`'s plain flood: it logged PUBACKs to
the bridge that it never wrote. MQTT sends a message again only after a reconnect, and libmosquitto sends no new
QoS 1 message while the broker's receive maximum (20) is taken by unacknowledged ones, so without the reconnect
every QoS 1 publish of the bridge (command answers, values, availability) waited for good.

The fault is injected between the bridge and a real mosquitto by a TCP relay that forwards everything except,
while told to, the broker's PUBACK packets.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from types import SimpleNamespace

from bridge_helpers import start_bridge

PUBACK = 4


def _shut(*sockets: socket.socket) -> None:
    """Ends both directions of a relayed connection: one side closing closes the other."""
    for s in sockets:
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


class PubackDropper:
    """127.0.0.1:port → the broker; broker-to-client PUBACK packets are dropped while `dropping` is set."""

    def __init__(self, broker_port: int):
        self.broker_port = broker_port
        self.dropping = threading.Event()
        self.dropped = 0
        self.connections = 0
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._sockets: list[socket.socket] = [self._listener]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            broker = socket.create_connection(("127.0.0.1", self.broker_port))
            self._sockets += [client, broker]
            self.connections += 1
            threading.Thread(target=self._copy, args=(client, broker), daemon=True).start()
            threading.Thread(target=self._filter, args=(broker, client), daemon=True).start()

    @staticmethod
    def _copy(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        _shut(source, sink)

    def _filter(self, source: socket.socket, sink: socket.socket) -> None:
        """Forwards whole MQTT packets (fixed header, remaining length, body), leaving out PUBACKs when told."""
        def read(count: int) -> bytes:
            data = b""
            while len(data) < count:
                chunk = source.recv(count - len(data))
                if not chunk:
                    raise OSError("closed")
                data += chunk
            return data
        try:
            while True:
                header = read(1)
                length_bytes = b""
                length, multiplier = 0, 1
                while True:
                    byte = read(1)
                    length_bytes += byte
                    length += (byte[0] & 0x7F) * multiplier
                    multiplier *= 128
                    if not byte[0] & 0x80:
                        break
                body = read(length)
                if header[0] >> 4 == PUBACK and self.dropping.is_set():
                    self.dropped += 1
                    continue
                sink.sendall(header + length_bytes + body)
        except OSError:
            pass
        _shut(source, sink)

    def close(self) -> None:
        for s in self._sockets:
            try:
                s.close()
            except OSError:
                pass


def test_a_broker_that_stops_acknowledging_is_reconnected_and_qos1_flows_again(run_gattbridge, mosquitto, mqtt,
                                                                               tmp_path):
    relay = PubackDropper(mosquitto.port)
    try:
        relay.dropping.set()
        # keepalive 10 s: the bridge waits twice that, 20 s, with nothing acknowledged.
        bridge = start_bridge(run_gattbridge, tmp_path, SimpleNamespace(port=relay.port), [], keepalive=10)
        request = bridge.topic("bridge", "request", "health")
        response = bridge.topic("bridge", "response", "health")
        mqtt.wait_for(bridge.topic("bridge", "info"), None, 15)

        def answered(since: int) -> set:
            return {m.json().get("transaction") for m in mqtt.received(response, since)}

        # More answers than the broker's receive maximum (20), whose PUBACKs are lost: libmosquitto's window fills
        # and the rest cannot go out on this connection.
        mark = mqtt.mark()
        wanted = {f"t{i}" for i in range(25)}
        for transaction in sorted(wanted):
            mqtt.publish(request, json.dumps({"transaction": transaction}))
        line = bridge.process.wait_for_line("MQTT broker acknowledged none of", 40, stream="stderr")
        assert "reconnecting" in line, line
        assert relay.dropped >= 20, relay.dropped
        assert not wanted <= answered(mark), "every answer went out past a full receive maximum: the fault did not take"

        # The broker acknowledges again: after the reconnect (a second one, if the first came while PUBACKs were
        # still dropped) what waited is sent again, and new requests are answered.
        relay.dropping.clear()
        deadline = time.monotonic() + 60
        while True:
            seen = mqtt.mark()
            if wanted <= answered(mark):
                break
            left = deadline - time.monotonic()
            assert left > 0, f"still unanswered after the reconnect: {sorted(wanted - answered(mark))}"
            try:
                mqtt.wait_for(response, None, left, since=seen)
            except TimeoutError:
                pass
        after = mqtt.mark()
        mqtt.publish(request, json.dumps({"transaction": "after"}))
        answer = mqtt.wait_for(response, lambda m: m.json().get("transaction") == "after", 15, since=after).json()
        assert answer["status"] == "ok", answer
        assert relay.connections >= 2, relay.connections
        bridge.assert_running()
    finally:
        relay.close()
