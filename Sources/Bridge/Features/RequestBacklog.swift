import Synchronization

/// Bridge API requests handed to the API's loop and not yet served. A request costs far more than it takes to send
/// (a `device/add` writes a file and reconfigures the bridge), so a flood of them would queue without bound in front
/// of the loop; past `limit` further requests are dropped and counted, and the loop, once it caught up, serves what
/// comes next at once. Not the fleet facts the API also listens to (bridge states, owners, availability): those are
/// few and never dropped.
final class RequestBacklog: Sendable {
    let limit: Int
    private let queued = Atomic<Int>(0)
    private let dropped = Atomic<Int>(0)

    init(limit: Int) { self.limit = limit }

    /// True when `topic` is a request (`B/bridge/request/<verb>`, in a fleet also `B/bridge/<id>/request/<verb>`).
    static func isRequest(_ topic: String) -> Bool { topic.contains("/request/") }

    /// Whether a request may join the queue; if not, it is counted as dropped.
    func admit() -> Bool {
        if queued.load(ordering: .relaxed) >= limit {
            dropped.add(1, ordering: .relaxed)
            return false
        }
        queued.add(1, ordering: .relaxed)
        return true
    }

    /// A request left the queue; returns how many are still queued.
    @discardableResult
    func taken() -> Int { queued.subtract(1, ordering: .relaxed).newValue }

    /// The requests dropped since the last call.
    func takeDropped() -> Int { dropped.exchange(0, ordering: .relaxed) }
}
