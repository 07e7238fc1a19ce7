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

/// What the network thread hands the consumer, in the order it happened: a message received, or the link coming up
/// or going down. One stream carries both so that a consumer can tell which connection a message came on: the
/// retained messages a (re)subscription replays always follow the `.connected` of their connection.
public enum MQTTInbound: Sendable, Equatable {
    case message(MQTTMessage)
    case connected
    case disconnected
}

/// `MQTTClient.messages`: the received messages in arrival order; taking one releases its bytes from the inbox
/// bound (`InboxGauge`). Meant for one consumer, which reads either this or `inbound` (the same stream, with the
/// connection changes between the messages).
public struct MQTTInbox: AsyncSequence, Sendable {
    public typealias Element = MQTTMessage
    public typealias Failure = Never

    let stream: AsyncStream<MQTTInbound>
    let gauge: InboxGauge

    /// The same inbox with the connection changes in their place between the messages.
    public var inbound: MQTTInboundSequence { MQTTInboundSequence(stream: stream, gauge: gauge) }

    public struct AsyncIterator: AsyncIteratorProtocol {
        var base: MQTTInboundSequence.AsyncIterator

        public mutating func next() async -> MQTTMessage? {
            while let next = await base.next() {
                if case .message(let message) = next { return message }
            }
            return nil
        }
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: inbound.makeAsyncIterator())
    }
}

/// `MQTTInbox.inbound`.
public struct MQTTInboundSequence: AsyncSequence, Sendable {
    public typealias Element = MQTTInbound
    public typealias Failure = Never

    let stream: AsyncStream<MQTTInbound>
    let gauge: InboxGauge

    public struct AsyncIterator: AsyncIteratorProtocol {
        var base: AsyncStream<MQTTInbound>.AsyncIterator
        let gauge: InboxGauge

        public mutating func next() async -> MQTTInbound? {
            guard let next = await base.next() else { return nil }
            if case .message(let message) = next { gauge.taken(message.footprint) }
            return next
        }
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: stream.makeAsyncIterator(), gauge: gauge)
    }
}
