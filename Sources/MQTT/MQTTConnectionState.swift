/// Where the client's session with the broker stands, as the bridge needs to know it.
public enum MQTTConnectionState: Sendable, Equatable, CustomStringConvertible {
    /// Started, no CONNACK yet.
    case connecting
    /// CONNACK received, every remembered subscription re-sent and the offline buffer handed over.
    case connected
    /// The link is down; the network thread keeps retrying. `reasonCode` is a libmosquitto error code, an MQTT 5
    /// reason code or a CONNACK return code, as `description` says.
    case disconnected(reasonCode: Int32, description: String)

    public var description: String {
        switch self {
        case .connecting: "connecting"
        case .connected: "connected"
        case .disconnected(let code, let text): "disconnected (\(code): \(text))"
        }
    }
}
