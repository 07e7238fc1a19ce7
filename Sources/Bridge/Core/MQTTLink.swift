import BridgeFeatureHost
import BridgeModel
import MQTT
import Synchronization

/// The bridge's handle on the broker connection. Sessions and features publish through it; a reload that changes
/// the MQTT settings swaps the client underneath without them noticing.
///
/// Publishes run under the same lock as the swap: a publish that raced a swap would otherwise land in the client
/// being shut down and be lost. The lock is uncontended except during a swap, and `MQTTClient.publish` never calls
/// back into the link.
public final class MQTTLink: BrokerLink, Sendable {
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

    public func publish(_ topic: String, _ payload: String, qos: Int = 1, retain: Bool = false) {
        let qos = MQTTQoS(rawValue: Int32(qos)) ?? .atLeastOnce
        // Every value published comes this way: topic and text go to the client as they are, which makes a message
        // only if this one has to wait.
        current.withLock { client in
            _ = client.publish(topic: topic, text: payload, qos: qos, retain: retain)
        }
    }

    /// A value's payload as lent UTF-8 bytes (`ChannelPublisher`'s `hex` values): the same way out as the text above.
    public func publish(_ topic: String, utf8 payload: UnsafeRawBufferPointer, qos: Int = 1, retain: Bool = false) {
        let qos = MQTTQoS(rawValue: Int32(qos)) ?? .atLeastOnce
        current.withLock { client in
            _ = client.publish(topic: topic, utf8: payload, qos: qos, retain: retain)
        }
    }

    public func publish(_ message: MQTTMessage) {
        current.withLock { client in _ = client.publish(message) }
    }

    public func subscribe(_ filter: String, retainHandling: MQTTRetainHandling) {
        client.subscribe(filter, qos: .atLeastOnce, retainHandling: retainHandling)
    }

    public func unsubscribe(_ filter: String) {
        client.unsubscribe(filter)
    }
}

/// The real broker status the features read (`BrokerStatus`).
extension MQTTLink: BrokerStatus {
    package var connectionState: MQTTConnectionState { client.connectionState }
    package var offlineBufferCount: Int { client.offlineBufferCount }
    package var droppedWhileOffline: Int { client.droppedWhileOffline }
}
