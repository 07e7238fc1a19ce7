import DequeModule

/// A message waiting for the broker; `tracked` ones are shutdown's final messages, whose delivery is awaited.
struct OutgoingMessage: Sendable, Equatable {
    var message: MQTTMessage
    var tracked = false
}

/// QoS ≥ 1 messages not yet given to libmosquitto, oldest first: published while the broker is unreachable, or
/// while libmosquitto already holds `limit` unacknowledged ones. The bound covers both together (`inFlight` is
/// what libmosquitto holds), so memory stays flat during a long outage or a stalled broker; the oldest go first
/// because the newest values are the ones worth delivering late.
struct OfflineBuffer: Sendable {
    let limit: Int
    private(set) var messages: Deque<OutgoingMessage> = []
    /// Messages evicted by the bound since the client was created.
    private(set) var evicted = 0

    init(limit: Int) { self.limit = max(0, limit) }

    var count: Int { messages.count }
    var isEmpty: Bool { messages.isEmpty }

    /// Room left beside `inFlight` messages held by libmosquitto.
    func capacity(inFlight: Int) -> Int { max(0, limit - inFlight) }

    /// Appends, then evicts the oldest beyond `capacity(inFlight:)` (possibly `message` itself); returns them.
    mutating func append(_ message: OutgoingMessage, inFlight: Int = 0) -> [OutgoingMessage] {
        messages.append(message)
        return trim(to: capacity(inFlight: inFlight))
    }

    /// Puts `older` (oldest first) in front of what is buffered, then evicts the oldest beyond the bound.
    mutating func prepend(_ older: some Collection<OutgoingMessage>, inFlight: Int = 0) -> [OutgoingMessage] {
        messages.insert(contentsOf: older, at: 0)
        return trim(to: capacity(inFlight: inFlight))
    }

    mutating func popFirst() -> OutgoingMessage? { messages.popFirst() }

    mutating func takeAll() -> Deque<OutgoingMessage> {
        defer { messages = [] }
        return messages
    }

    private mutating func trim(to capacity: Int) -> [OutgoingMessage] {
        guard messages.count > capacity else { return [] }
        let excess = messages.count - capacity
        evicted += excess
        defer { messages.removeFirst(excess) }
        return Array(messages.prefix(excess))
    }
}
