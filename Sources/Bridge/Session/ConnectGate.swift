/// One connection attempt in flight per adapter: bluetoothd and most controllers handle concurrent LE connection
/// attempts badly (`InProgress`, `le-connection-abort-by-local`), so sessions take turns, first come first served.
/// Each adapter is its own lane (named by its object path): attempts through different radios do not wait for each
/// other (docs/adapters.md).
///
/// Holders are named by a caller-chosen key (e.g. device and session generation), which makes `release` idempotent and
/// lets it withdraw a request that has not been granted yet. A device that never answers holds the slot only until
/// its connect timeout, after which its session releases it and the next waiter goes. `release` needs no lane: a
/// session that moved to another adapter still frees the slot it took on the old one.
public actor ConnectGate<Key: Hashable & Sendable> {
    private struct Waiter {
        let id: UInt64
        let key: Key
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct Lane {
        var holder: Key?
        var waiters: [Waiter] = []
    }

    private var lanes: [String: Lane] = [:]
    private var nextID: UInt64 = 0

    public init() {}

    /// The holder of the default lane (callers that do not name adapters).
    public var holder: Key? { lanes[""]?.holder }
    /// The keys waiting in the default lane, in the order they will be served.
    public var queue: [Key] { queue(lane: "") }

    public func holder(lane: String) -> Key? { lanes[lane]?.holder }
    public func queue(lane: String) -> [Key] { lanes[lane]?.waiters.map(\.key) ?? [] }

    /// Waits for the lane's slot, in FIFO order. Throws `CancellationError` if the task is cancelled or the request
    /// is withdrawn with `release` before the grant; a grant that races with cancellation is handed on, never
    /// leaked. Acquiring a key that already holds the slot returns at once.
    public func acquire(_ key: Key, lane: String = "") async throws {
        if lanes[lane]?.holder == key { return }
        try Task.checkCancellation()
        if lanes[lane, default: Lane()].holder == nil {
            lanes[lane, default: Lane()].holder = key
            return
        }
        nextID &+= 1
        let id = nextID
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                lanes[lane, default: Lane()].waiters.append(Waiter(id: id, key: key, continuation: continuation))
            }
        } onCancel: {
            // Unstructured on purpose: the handler is synchronous and may run on any thread, and withdrawing
            // needs the actor. It only resumes the waiter's continuation, so it cannot outlive anything.
            Task { await self.withdraw(id) }
        }
        if Task.isCancelled {
            release(key)
            throw CancellationError()
        }
    }

    /// Frees the slot `key` holds in any lane (granting it to that lane's next waiter), or withdraws `key`'s pending
    /// request. Anything else is a no-op, so releasing twice is safe.
    public func release(_ key: Key) {
        for name in Array(lanes.keys) {
            guard var lane = lanes[name] else { continue }
            if lane.holder == key {
                lane.holder = nil
                if !lane.waiters.isEmpty {
                    let next = lane.waiters.removeFirst()
                    lane.holder = next.key
                    next.continuation.resume()
                }
            } else if let index = lane.waiters.firstIndex(where: { $0.key == key }) {
                lane.waiters.remove(at: index).continuation.resume(throwing: CancellationError())
            } else {
                continue
            }
            lanes[name] = lane.holder == nil && lane.waiters.isEmpty ? nil : lane
        }
    }

    /// Runs `body` holding the slot, releasing it however `body` ends.
    public func withSlot<T: Sendable>(_ key: Key, lane: String = "", _ body: @Sendable () async throws -> T) async throws -> T {
        try await acquire(key, lane: lane)
        defer { release(key) }
        return try await body()
    }

    private func withdraw(_ id: UInt64) {
        for name in Array(lanes.keys) {
            if let index = lanes[name]?.waiters.firstIndex(where: { $0.id == id }) {
                lanes[name]!.waiters.remove(at: index).continuation.resume(throwing: CancellationError())
                return
            }
        }
    }
}
