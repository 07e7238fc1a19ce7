/// One MQTT application message: received on a subscription, used as the will, or published at shutdown.
public struct MQTTMessage: Sendable, Equatable {
    public var topic: String
    public var payload: [UInt8]
    public var qos: MQTTQoS
    /// On a received message: the broker sent it from its retained store (a replay, not a live publish). MQTT 3.1.1
    /// and 5 both set it on the copy sent to a new subscriber and clear it on live forwarding.
    public var retain: Bool
    /// MQTT 5 Response Topic (request/response): where the publisher wants an answer. Always nil on 3.1.1.
    public var responseTopic: String?
    /// MQTT 5 Correlation Data, copied into the answer so the requester can match it. Always nil on 3.1.1; at
    /// most 65,535 bytes (a longer value is refused by `publish`).
    public var correlationData: [UInt8]?

    public init(topic: String, payload: [UInt8], qos: MQTTQoS = .atLeastOnce, retain: Bool = false,
                responseTopic: String? = nil, correlationData: [UInt8]? = nil) {
        self.topic = topic
        self.payload = payload
        self.qos = qos
        self.retain = retain
        self.responseTopic = responseTopic
        self.correlationData = correlationData
    }

    public init(topic: String, string: String, qos: MQTTQoS = .atLeastOnce, retain: Bool = false,
                responseTopic: String? = nil, correlationData: [UInt8]? = nil) {
        self.init(topic: topic, payload: Array(string.utf8), qos: qos, retain: retain, responseTopic: responseTopic,
                  correlationData: correlationData)
    }

    /// The payload as text; invalid UTF-8 becomes U+FFFD rather than failing, since commands are text.
    public var payloadString: String { String(decoding: payload, as: UTF8.self) }
}
