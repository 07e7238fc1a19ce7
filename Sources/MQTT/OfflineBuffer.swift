import DequeModule

/// A message waiting for the broker; `tracked` ones are shutdown's final messages, whose delivery is awaited.
struct OutgoingMessage: Sendable, Equatable {
    var message: MQTTMessage
    var tracked = false
}

/// QoS ≥ 1 messages published while the broker is unreachable, oldest first. The bound keeps memory flat during a
/// long outage; the oldest go first because the newest values are the ones worth delivering late.
struct OfflineBuffer: Sendable {
    let limit: Int
    private(set) var messages: Deque<OutgoingMessage> = []
    /// Messages evicted by the bound since the client was created.
    private(set) var evicted = 0

    init(limit: Int) { self.limit = max(0, limit) }

    var count: Int { messages.count }
    var isEmpty: Bool { messages.isEmpty }

    /// Appends, evicting the oldest when full; returns the evicted message, if any.
    mutating func append(_ message: OutgoingMessage) -> OutgoingMessage? {
        guard limit > 0 else {
            evicted += 1
            return message
        }
        messages.append(message)
        guard messages.count > limit else { return nil }
        evicted += 1
        return messages.removeFirst()
    }

    mutating func takeAll() -> Deque<OutgoingMessage> {
        defer { messages = [] }
        return messages
    }
}
