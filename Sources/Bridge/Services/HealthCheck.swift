import BridgeCoreLayer
import DBus
import MQTT

/// Liveness for the systemd watchdog. Each probe crosses one of the daemon's event loops, so a pet proves that all of
/// them turn: a Peer.Ping round trip through the D-Bus loop thread and the bus, the MQTT link's own turn within the
/// window (its last turn on the monotonic clock: the loop that hosts it serves it at least once a second however busy
/// the bus or the broker is, `LoopKernel`'s rules), and a turn of the bridge core's loop. Outages of the broker,
/// bluetoothd or a device do not fail any probe (the bus answers Ping itself; the link keeps turning while it
/// reconnects); a hung or starved loop does (docs/operating.md, "The watchdog").
public struct HealthCheck: Sendable {
    let bus: DBusConnection
    let mqtt: MQTTLink
    let core: BridgeCore

    public init(bus: DBusConnection, mqtt: MQTTLink, core: BridgeCore) {
        self.bus = bus
        self.mqtt = mqtt
        self.core = core
    }

    public enum Verdict: Sendable, Equatable {
        case live
        case stuck(String)
    }

    /// `deadline` bounds the D-Bus round trip and is the pet interval; a core loop that never turns makes this never
    /// return, which is the point: no verdict, no pet.
    public func probe(deadline: Duration) async -> Verdict {
        do {
            try await bus.ping(timeout: deadline)
        } catch {
            return .stuck("D-Bus ping failed: \(error)")
        }
        guard mqtt.client.loopTurned(within: Self.linkWindow(petInterval: deadline)) else {
            return .stuck("MQTT network loop is not turning")
        }
        guard await core.ping() else { return .stuck("bridge core did not answer") }
        return .live
    }

    /// How recent the link's last turn must be: two pet intervals, at least 2 s (it turns once a second when idle) and
    /// at most 5 s, so a stall is noticed well before a long `WatchdogSec` runs out.
    static func linkWindow(petInterval: Duration) -> Duration {
        min(.seconds(5), max(.seconds(2), petInterval * 2))
    }
}
