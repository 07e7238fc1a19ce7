import BridgeModel
import Synchronization

/// Fleet (docs/fleet.md): where a session's values go, held back while its bridge is not sure it still owns the device
/// (`OwnershipAction.hold`, the 2 s an owner listens after a broker reconnect). Still its own: the values follow in
/// order, none lost. Taken by another bridge meanwhile: they are dropped, since the new owner publishes the same
/// notifications and a value must never be published twice.
///
/// Whether a device is held is the core's to say (`CoreMachine.fleet`; the router reads it from the routing table):
/// this is only the gate on the value path, which the core's actions close and open.
package final class HoldingPublisher: MessagePublisher, Sendable {
    private struct Held {
        var topic: String
        var payload: String
        var qos: Int
        var retain: Bool
    }

    /// A hold lasts seconds; this bounds what a fast notifier can pile up meanwhile (the oldest go first, a quarter
    /// at a time, so a full queue does not shift on every value).
    static let limit = 2_000
    private let inner: any MessagePublisher
    private let queue = Mutex<[Held]>([])
    /// Read without the lock on every value (the notification hot path); changed only under it, so a value that
    /// sees `true` queues behind the held ones or, once the lock is its, finds the hold ended and the queue flushed.
    private let holding = Atomic<Bool>(false)

    package init(_ inner: any MessagePublisher) {
        self.inner = inner
    }

    package func publish(_ topic: String, _ payload: String, qos: Int, retain: Bool) {
        guard holding.load(ordering: .acquiring) else { return inner.publish(topic, payload, qos: qos, retain: retain) }
        queue.withLock { queue in
            guard holding.load(ordering: .acquiring) else { return inner.publish(topic, payload, qos: qos, retain: retain) }
            if queue.count >= Self.limit { queue.removeFirst(Self.limit / 4) }
            queue.append(Held(topic: topic, payload: payload, qos: qos, retain: retain))
        }
    }

    /// `publish` of a payload lent as UTF-8 bytes: passed on as it is, or made text to be held.
    package func publish(_ topic: String, utf8 payload: UnsafeRawBufferPointer, qos: Int, retain: Bool) {
        guard holding.load(ordering: .acquiring) else { return inner.publish(topic, utf8: payload, qos: qos, retain: retain) }
        publish(topic, String(decoding: payload, as: UTF8.self), qos: qos, retain: retain)
    }

    /// Starts a hold; false when one was on already.
    package func hold() -> Bool {
        queue.withLock { _ in !holding.exchange(true, ordering: .acquiringAndReleasing) }
    }

    /// Ends a hold: the held values are published (`deliver`), or dropped. False when there was none.
    @discardableResult
    package func release(deliver: Bool) -> Bool {
        queue.withLock { queue in
            guard holding.load(ordering: .acquiring) else { return false }
            if deliver {
                for held in queue { inner.publish(held.topic, held.payload, qos: held.qos, retain: held.retain) }
            }
            queue = []
            holding.store(false, ordering: .releasing)
            return true
        }
    }
}
