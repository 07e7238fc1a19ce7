/// One connection attempt in flight per adapter: bluetoothd and most controllers handle concurrent LE connection
/// attempts badly (`InProgress`, `le-connection-abort-by-local`), so sessions take turns, first come first served.
///
/// Holders are named by a caller-chosen key (e.g. device and session generation), which makes `release` idempotent and
/// lets it withdraw a request that has not been granted yet. A device that never answers holds the slot only until
/// its connect timeout, after which its session releases it and the next waiter goes.
public actor ConnectGate<Key: Hashable & Sendable> {
    private struct Waiter {
        let id: UInt64
        let key: Key
        let continuation: CheckedContinuation<Void, any Error>
    }

    public private(set) var holder: Key?
    private var waiters: [Waiter] = []
    private var nextID: UInt64 = 0

    public init() {}

    /// The keys waiting, in the order they will be served.
    public var queue: [Key] { waiters.map(\.key) }

    /// Waits for the slot, in FIFO order. Throws `CancellationError` if the task is cancelled or the request is
    /// withdrawn with `release` before the grant; a grant that races with cancellation is handed on, never leaked.
    /// Acquiring a key that already holds the slot returns at once.
    public func acquire(_ key: Key) async throws {
        if holder == key { return }
        try Task.checkCancellation()
        if holder == nil {
            holder = key
            return
        }
        nextID &+= 1
        let id = nextID
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                waiters.append(Waiter(id: id, key: key, continuation: continuation))
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

    /// Frees the slot if `key` holds it (granting it to the next waiter), or withdraws `key`'s pending request.
    /// Anything else is a no-op, so releasing twice is safe.
    public func release(_ key: Key) {
        if holder == key {
            holder = nil
            if !waiters.isEmpty {
                let next = waiters.removeFirst()
                holder = next.key
                next.continuation.resume()
            }
        } else if let index = waiters.firstIndex(where: { $0.key == key }) {
            waiters.remove(at: index).continuation.resume(throwing: CancellationError())
        }
    }

    /// Runs `body` holding the slot, releasing it however `body` ends.
    public func withSlot<T: Sendable>(_ key: Key, _ body: @Sendable () async throws -> T) async throws -> T {
        try await acquire(key)
        defer { release(key) }
        return try await body()
    }

    private func withdraw(_ id: UInt64) {
        if let index = waiters.firstIndex(where: { $0.id == id }) {
            waiters.remove(at: index).continuation.resume(throwing: CancellationError())
        }
    }
}
