/// One MQTT application message: received on a subscription, used as the will, or published at shutdown.
public struct MQTTMessage: Sendable, Equatable {
    public var topic: String
    /// The payload's bytes, or the text they come from. Text stays a `String` until something asks for `payload`:
    /// a value published from text is handed to libmosquitto from the string's own UTF-8, so the notification hot
    /// path makes no byte array per message.
    private var body: Body
    public var qos: MQTTQoS
    /// On a received message: the broker sent it from its retained store (a replay, not a live publish). MQTT 3.1.1
    /// and 5 both set it on the copy sent to a new subscriber and clear it on live forwarding.
    public var retain: Bool
    /// MQTT 5 Response Topic (request/response): where the publisher wants an answer. Always nil on 3.1.1.
    public var responseTopic: String?
    /// MQTT 5 Correlation Data, copied into the answer so the requester can match it. Always nil on 3.1.1; at
    /// most 65,535 bytes (a longer value is refused by `publish`).
    public var correlationData: [UInt8]?

    private enum Body: Sendable {
        case bytes([UInt8])
        case text(String)
    }

    public init(topic: String, payload: [UInt8], qos: MQTTQoS = .atLeastOnce, retain: Bool = false,
                responseTopic: String? = nil, correlationData: [UInt8]? = nil) {
        self.init(topic: topic, body: .bytes(payload), qos: qos, retain: retain, responseTopic: responseTopic,
                  correlationData: correlationData)
    }

    public init(topic: String, string: String, qos: MQTTQoS = .atLeastOnce, retain: Bool = false,
                responseTopic: String? = nil, correlationData: [UInt8]? = nil) {
        self.init(topic: topic, body: .text(string), qos: qos, retain: retain, responseTopic: responseTopic,
                  correlationData: correlationData)
    }

    private init(topic: String, body: Body, qos: MQTTQoS, retain: Bool, responseTopic: String?,
                 correlationData: [UInt8]?) {
        self.topic = topic
        self.body = body
        self.qos = qos
        self.retain = retain
        self.responseTopic = responseTopic
        self.correlationData = correlationData
    }

    public var payload: [UInt8] {
        get {
            switch body {
            case .bytes(let bytes): bytes
            case .text(let text): Array(text.utf8)
            }
        }
        set { body = .bytes(newValue) }
    }

    /// The payload's length in bytes, without making the byte array `payload` would for text.
    public var payloadCount: Int {
        switch body {
        case .bytes(let bytes): bytes.count
        case .text(let text): text.utf8.count
        }
    }

    /// The payload as text; invalid UTF-8 becomes U+FFFD rather than failing, since commands are text.
    public var payloadString: String {
        switch body {
        case .bytes(let bytes): String(decoding: bytes, as: UTF8.self)
        case .text(let text): text
        }
    }

    /// Calls `body` with the payload's bytes, without copying them.
    func withPayloadBytes<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R {
        switch self.body {
        case .bytes(let bytes):
            return bytes.withUnsafeBytes(body)
        case .text(let text):
            return Self.withUTF8(of: text, body)
        }
    }

    /// Calls `body` with `text`'s UTF-8 bytes. Not `String.withUTF8`, which is mutating and so copies the string
    /// first (a retain and a release per message).
    static func withUTF8<R>(of text: String, _ body: (UnsafeRawBufferPointer) -> R) -> R {
        if let result = text.utf8.withContiguousStorageIfAvailable({ body(UnsafeRawBufferPointer($0)) }) {
            return result
        }
        var copy = text
        return copy.withUTF8 { body(UnsafeRawBufferPointer($0)) }
    }

    /// Equal when everything a subscriber would see is: the same bytes, whether they were given as text or not.
    public static func == (lhs: MQTTMessage, rhs: MQTTMessage) -> Bool {
        lhs.topic == rhs.topic && lhs.qos == rhs.qos && lhs.retain == rhs.retain
            && lhs.responseTopic == rhs.responseTopic && lhs.correlationData == rhs.correlationData
            && lhs.withPayloadBytes { a in rhs.withPayloadBytes { b in a.elementsEqual(b) } }
    }
}
