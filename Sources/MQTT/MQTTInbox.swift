import Synchronization

/// Received messages not yet taken by the consumer, in bytes. Past `limit` the network thread stops reading the
/// broker's socket (TCP then holds the rest at the broker), and the consumer wakes it once it has taken the backlog
/// below half: a flood of publishes the bridge subscribes to waits at the broker instead of in the bridge's memory.
final class InboxGauge: Sendable {
    let limit: Int
    private let bytes = Atomic<Int>(0)
    private let paused = Atomic<Bool>(false)
    private let wake: WakeSignal

    init(limit: Int, wake: WakeSignal) {
        self.limit = limit
        self.wake = wake
    }

    var queuedBytes: Int { bytes.load(ordering: .relaxed) }

    /// Network thread: a message was queued for the consumer.
    func received(_ size: Int) { bytes.add(size, ordering: .relaxed) }

    /// Network thread: whether to read the socket now. When not, the consumer is asked to wake the thread.
    func mayRead() -> Bool {
        guard bytes.load(ordering: .acquiring) >= limit else { return true }
        paused.store(true, ordering: .releasing)
        // The consumer may have drained in between and seen no pause to end: look again.
        return bytes.load(ordering: .acquiring) < limit / 2 && paused.exchange(false, ordering: .acquiringAndReleasing)
    }

    /// Consumer: a message was taken.
    func taken(_ size: Int) {
        let left = bytes.subtract(size, ordering: .acquiringAndReleasing).newValue
        if left < limit / 2, paused.load(ordering: .acquiring), paused.exchange(false, ordering: .acquiringAndReleasing) {
            wake.signal()
        }
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
