import DBus
import MQTT

/// Liveness for the systemd watchdog. Each probe crosses one of the daemon's event loops, so a pet proves that all of
/// them turn: a Peer.Ping round trip through the D-Bus loop thread and the bus, the MQTT network thread's own
/// heartbeat, and a turn of the bridge core's loop. Outages of the broker, bluetoothd or a device do not fail any
/// probe (the bus answers Ping itself; the MQTT thread keeps iterating while it reconnects); a hung loop does.
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

    /// `deadline` bounds the D-Bus round trip; a core loop that never turns makes this never return, which is the
    /// point: no verdict, no pet.
    public func probe(deadline: Duration) async -> Verdict {
        do {
            try await bus.ping(timeout: deadline)
        } catch {
            return .stuck("D-Bus ping failed: \(error)")
        }
        guard await mqtt.client.loopIsAlive() else { return .stuck("MQTT network loop is not turning") }
        guard await core.ping() else { return .stuck("bridge core did not answer") }
        return .live
    }
}
