import MQTT
import Synchronization

/// Bytes of broker messages handed to features and not yet handled by them.
///
/// The MQTT client bounds what waits for the bridge (`MQTTClient.inboxLimit`), but the pump empties that inbox as
/// fast as it routes: without this second bound a flood (20,000 Home Assistant births) would move from the bounded
/// inbox into the features' unbounded event streams and grow the heap by megabytes. Past `limit` the pump waits for
/// the features (`belowLimit`), the client's inbox fills behind it, and the network thread drops and counts the
/// excess as it does for any flood (docs/security.md, "Memory bounds under floods").
package final class FeatureBacklog: Sendable {
    let limit: Int
    private struct State {
        var bytes = 0
        var waiters: [CheckedContinuation<Void, Never>] = []
        var closed = false
    }
    private let state = Mutex(State())

    init(limit: Int) {
        self.limit = limit
    }

    var bytes: Int { state.withLock { $0.bytes } }

    /// `count` bytes were handed to features.
    func add(_ count: Int) {
        guard count > 0 else { return }
        state.withLock { $0.bytes += count }
    }

    /// A feature handled a message of `count` bytes.
    package func release(_ count: Int) {
        guard count > 0 else { return }
        let woken = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.bytes -= count
            guard state.bytes < limit else { return [] }
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in woken { waiter.resume() }
    }

    /// Returns once less than `limit` bytes wait in the features (at once when so already), or the bridge stops.
    /// The pump asks after every message: the common case is one lock and no continuation.
    package func belowLimit() async {
        guard state.withLock({ $0.bytes >= limit && !$0.closed }) else { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let waiting = state.withLock { state in
                guard state.bytes >= limit, !state.closed else { return false }
                state.waiters.append(continuation)
                return true
            }
            if !waiting { continuation.resume() }
        }
    }

    /// The features stopped: what they left unhandled is never released, so nothing waits any more.
    func close() {
        let woken = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.closed = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in woken { waiter.resume() }
    }
}

/// One event on its way to one feature; `bytes` is what it counts in the `FeatureBacklog` (a routed broker
/// message's footprint, 0 for everything else).
package struct FeatureDelivery: Sendable {
    let event: CoreEvent
    package let bytes: Int
}

/// A feature's events. Iterating it releases a message's bytes from the backlog when the next event is asked for,
/// that is once the feature has handled it; `runFeatureLoop`, which hands events on to a loop of its own, takes the
/// `deliveries` and releases after its handler instead.
public struct FeatureEvents: AsyncSequence, Sendable {
    public typealias Element = CoreEvent
    public typealias Failure = Never

    package let deliveries: AsyncStream<FeatureDelivery>
    let backlog: FeatureBacklog

    public struct AsyncIterator: AsyncIteratorProtocol {
        var base: AsyncStream<FeatureDelivery>.AsyncIterator
        let backlog: FeatureBacklog
        var handled = 0

        public mutating func next() async -> CoreEvent? {
            backlog.release(handled)
            handled = 0
            guard let delivery = await base.next() else { return nil }
            handled = delivery.bytes
            return delivery.event
        }
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: deliveries.makeAsyncIterator(), backlog: backlog)
    }
}
