import Synchronization

/// Received messages not yet taken by the consumer, in bytes. Past `limit` further messages are dropped (and
/// counted) instead of queued: a flood of publishes on topics the bridge subscribes to cannot grow its memory.
/// The network thread keeps reading meanwhile: acknowledgements and the keepalive's PINGRESP share the socket with
/// the flood, and a client that stopped reading would stall its own publishes and lose its link.
final class InboxGauge: Sendable {
    let limit: Int
    private let bytes = Atomic<Int>(0)

    init(limit: Int) {
        self.limit = limit
    }

    /// Network thread: whether a received message of `size` bytes is queued for the consumer (false: dropped).
    func admit(_ size: Int) -> Bool {
        guard bytes.load(ordering: .relaxed) < limit else { return false }
        bytes.add(size, ordering: .relaxed)
        return true
    }

    /// Consumer: a message was taken.
    func taken(_ size: Int) {
        bytes.subtract(size, ordering: .relaxed)
    }
}

/// `MQTTClient.messages`: the received messages in arrival order; taking one releases its bytes from the inbox
/// bound (`InboxGauge`). Meant for one consumer.
public struct MQTTInbox: AsyncSequence, Sendable {
    public typealias Element = MQTTMessage
    public typealias Failure = Never

    let stream: AsyncStream<MQTTMessage>
    let gauge: InboxGauge

    public struct AsyncIterator: AsyncIteratorProtocol {
        var base: AsyncStream<MQTTMessage>.AsyncIterator
        let gauge: InboxGauge

        public mutating func next() async -> MQTTMessage? {
            guard let message = await base.next() else { return nil }
            gauge.taken(message.footprint)
            return message
        }
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: stream.makeAsyncIterator(), gauge: gauge)
    }
}
