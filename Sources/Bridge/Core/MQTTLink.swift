import MQTT
import Synchronization

/// The bridge's handle on the broker connection. Sessions publish through it; a reload that changes the MQTT settings
/// swaps the client underneath without the sessions noticing.
public final class MQTTLink: Sendable {
    private let current: Mutex<MQTTClient>

    public init(_ client: MQTTClient) {
        current = Mutex(client)
    }

    public var client: MQTTClient { current.withLock { $0 } }

    /// Replaces the client and returns the old one, which the caller shuts down.
    public func swap(_ client: MQTTClient) -> MQTTClient {
        current.withLock { old in
            let previous = old
            old = client
            return previous
        }
    }

    @discardableResult
    public func publish(_ topic: String, _ payload: String, qos: Int = 1, retain: Bool = false) -> MQTTPublishOutcome {
        client.publish(topic: topic, string: payload, qos: MQTTQoS(rawValue: Int32(qos)) ?? .atLeastOnce, retain: retain)
    }

    @discardableResult
    public func publish(_ topic: String, bytes: [UInt8], qos: Int = 1, retain: Bool = false) -> MQTTPublishOutcome {
        client.publish(topic: topic, payload: bytes, qos: MQTTQoS(rawValue: Int32(qos)) ?? .atLeastOnce, retain: retain)
    }
}
