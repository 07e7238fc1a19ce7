/// One MQTT application message: received on a subscription, used as the will, or published at shutdown.
public struct MQTTMessage: Sendable, Equatable {
    public var topic: String
    public var payload: [UInt8]
    public var qos: MQTTQoS
    public var retain: Bool

    public init(topic: String, payload: [UInt8], qos: MQTTQoS = .atLeastOnce, retain: Bool = false) {
        self.topic = topic
        self.payload = payload
        self.qos = qos
        self.retain = retain
    }

    public init(topic: String, string: String, qos: MQTTQoS = .atLeastOnce, retain: Bool = false) {
        self.init(topic: topic, payload: Array(string.utf8), qos: qos, retain: retain)
    }

    /// The payload as text; invalid UTF-8 becomes U+FFFD rather than failing, since commands are text.
    public var payloadString: String { String(decoding: payload, as: UTF8.self) }
}
