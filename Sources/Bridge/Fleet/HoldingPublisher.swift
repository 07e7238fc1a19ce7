import Synchronization

/// Fleet (SPEC §10): where a session's values go, held back while its bridge is not sure it still owns the device
/// (`OwnershipAction.hold`, the 2 s an owner listens after a broker reconnect). Still its own: the values follow in
/// order, none lost. Taken by another bridge meanwhile: they are dropped, since the new owner publishes the same
/// notifications and a value must never be published twice.
final class HoldingPublisher: MessagePublisher, Sendable {
    private struct Held {
        var topic: String
        var payload: String
        var qos: Int
        var retain: Bool
    }

    private struct State {
        var holding = false
        var queue: [Held] = []
    }

    /// A hold lasts seconds; this bounds what a fast notifier can pile up meanwhile (the oldest go first).
    static let limit = 2_000
    private let inner: any MessagePublisher
    private let state = Mutex(State())

    init(_ inner: any MessagePublisher) {
        self.inner = inner
    }

    func publish(_ topic: String, _ payload: String, qos: Int, retain: Bool) {
        // Forwarded under the lock, so a value published while the hold ends cannot overtake the held ones.
        state.withLock { state in
            guard state.holding else { return inner.publish(topic, payload, qos: qos, retain: retain) }
            if state.queue.count >= Self.limit { state.queue.removeFirst() }
            state.queue.append(Held(topic: topic, payload: payload, qos: qos, retain: retain))
        }
    }

    func hold() {
        state.withLock { $0.holding = true }
    }

    /// Ends a hold: the held values are published (`deliver`), or dropped.
    func release(deliver: Bool) {
        state.withLock { state in
            guard state.holding else { return }
            state.holding = false
            if deliver {
                for held in state.queue { inner.publish(held.topic, held.payload, qos: held.qos, retain: held.retain) }
            }
            state.queue = []
        }
    }
}
