import DequeModule

/// A message waiting for the broker; `tracked` ones are shutdown's final messages, whose delivery is awaited.
struct OutgoingMessage: Sendable, Equatable {
    var message: MQTTMessage
    var tracked = false

    /// What the message costs in memory while it waits, for the byte bound.
    var footprint: Int { message.footprint }
}

extension MQTTMessage {
    /// Bytes the message holds while queued: topic, payload and MQTT 5 properties plus a fixed overhead for the
    /// structures around them (libmosquitto keeps a packet and a copy; our queues keep the Swift value).
    public var footprint: Int {
        Self.footprint(topicBytes: topic.utf8.count, payloadBytes: payloadCount)
            + (responseTopic?.utf8.count ?? 0) + (correlationData?.count ?? 0)
    }

    /// The footprint of a message without MQTT 5 properties, for a value published without making a message.
    static func footprint(topicBytes: Int, payloadBytes: Int) -> Int { topicBytes + payloadBytes + 128 }
}

/// What libmosquitto holds for us and what still waits to be handed to it, counted together against one bound.
struct Held: Sendable, Equatable {
    var count = 0
    var bytes = 0
}

/// QoS ≥ 1 messages not yet given to libmosquitto, oldest first: published while the broker is unreachable, or
/// while libmosquitto already holds `limit` unacknowledged ones (or `byteLimit` bytes). The bound covers both
/// together (`held` is what libmosquitto holds and what waits for the network thread), so memory stays flat during
/// a long outage, a stalled broker or a flood of publishes; the oldest go first because the newest values are the
/// ones worth delivering late. The bound is in bytes as well as messages: ten thousand 1 KB discovery configs are
/// not ten thousand 20-byte values.
struct OfflineBuffer: Sendable {
    let limit: Int
    let byteLimit: Int
    private(set) var messages: Deque<OutgoingMessage> = []
    private(set) var bytes = 0
    /// Messages evicted by the bound since the client was created.
    private(set) var evicted = 0

    init(limit: Int, byteLimit: Int = .max) {
        self.limit = max(0, limit)
        self.byteLimit = max(0, byteLimit)
    }

    var count: Int { messages.count }
    var isEmpty: Bool { messages.isEmpty }

    /// True when nothing more fits beside `held`.
    func isFull(held: Held) -> Bool {
        messages.count + held.count >= limit || bytes + held.bytes >= byteLimit
    }

    /// Appends, then evicts the oldest beyond the bound (possibly `message` itself); returns them.
    mutating func append(_ message: OutgoingMessage, inFlight: Int = 0) -> [OutgoingMessage] {
        append(message, held: Held(count: inFlight, bytes: 0))
    }

    mutating func append(_ message: OutgoingMessage, held: Held) -> [OutgoingMessage] {
        messages.append(message)
        bytes += message.footprint
        return trim(held: held)
    }

    /// Puts `older` (oldest first) in front of what is buffered, then evicts the oldest beyond the bound.
    mutating func prepend(_ older: some Collection<OutgoingMessage>, inFlight: Int = 0) -> [OutgoingMessage] {
        prepend(older, held: Held(count: inFlight, bytes: 0))
    }

    mutating func prepend(_ older: some Collection<OutgoingMessage>, held: Held) -> [OutgoingMessage] {
        messages.insert(contentsOf: older, at: 0)
        bytes += older.reduce(0) { $0 + $1.footprint }
        return trim(held: held)
    }

    mutating func popFirst() -> OutgoingMessage? {
        guard let first = messages.popFirst() else { return nil }
        bytes -= first.footprint
        return first
    }

    mutating func takeAll() -> Deque<OutgoingMessage> {
        defer { messages = []; bytes = 0 }
        return messages
    }

    private mutating func trim(held: Held) -> [OutgoingMessage] {
        var out: [OutgoingMessage] = []
        while !messages.isEmpty,
              messages.count + held.count > limit || bytes + held.bytes > byteLimit {
            let first = messages.removeFirst()
            bytes -= first.footprint
            out.append(first)
        }
        evicted += out.count
        return out
    }
}
