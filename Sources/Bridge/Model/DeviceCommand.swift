/// Where the result of a command goes besides the device: an MQTT 5 Response Topic and its Correlation Data (docs/bridge-api.md).
public struct ReplyTarget: Sendable, Hashable {
    public var topic: String
    public var correlationData: [UInt8]?

    public init(topic: String, correlationData: [UInt8]? = nil) {
        self.topic = topic
        self.correlationData = correlationData
    }
}

/// A `set` or `get` accepted for one device, waiting for (or in) its turn.
public struct DeviceCommand: Sendable, Hashable {
    public enum Kind: Sendable, Hashable {
        /// Bytes already encoded by the channel's codec (text with its write delimiter appended).
        case set([UInt8])
        case get
    }

    public var id: UInt64
    /// The channel name.
    public var channel: String
    public var kind: Kind
    /// The command topic, named in reports so a client can match its request.
    public var topic: String
    /// The MQTT payload as received, for the report of a rejected command.
    public var payload: [UInt8]
    public var arrival: ContinuousClock.Instant
    /// The channel's `command_ttl`.
    public var ttl: Duration
    /// Everyone to tell the outcome (coalesced `get`s add theirs to the one that stays).
    public var replies: [ReplyTarget]

    public init(id: UInt64, channel: String, kind: Kind, topic: String, payload: [UInt8] = [],
                arrival: ContinuousClock.Instant, ttl: Duration = .seconds(30), replies: [ReplyTarget] = []) {
        self.id = id
        self.channel = channel
        self.kind = kind
        self.topic = topic
        self.payload = payload
        self.arrival = arrival
        self.ttl = ttl
        self.replies = replies
    }

    public var deadline: ContinuousClock.Instant { arrival + ttl }

    /// Expired once it has waited its whole ttl (at the deadline itself too, so a timer firing exactly then drops it).
    public func isExpired(at now: ContinuousClock.Instant) -> Bool { now >= deadline }

    public var isGet: Bool { kind == .get }
}
