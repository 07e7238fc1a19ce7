import Synchronization

/// A gate that opens once; any number of tasks can wait for it with a timeout. Used for "final messages delivered"
/// and "network thread ended", both signalled from the network thread.
final class Latch: Sendable {
    private struct State {
        var isOpen = false
        var nextID = 0
        var waiters: [Int: CheckedContinuation<Bool, Never>] = [:]
        /// Waits whose timer fired before their continuation was installed.
        var expired: Set<Int> = []
    }

    private let state = Mutex(State())

    var isOpen: Bool { state.withLock { $0.isOpen } }

    func open() {
        let waiters = state.withLock { state -> [CheckedContinuation<Bool, Never>] in
            state.isOpen = true
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume(returning: true) }
    }

    /// True if the latch opened, false when `timeout` passed first.
    func wait(timeout: Duration) async -> Bool {
        let id = state.withLock { state in
            defer { state.nextID += 1 }
            return state.nextID
        }
        let timer = Task {
            try? await Task.sleep(for: timeout)
            if Task.isCancelled { return }
            let waiter = self.state.withLock { state in
                guard let waiter = state.waiters.removeValue(forKey: id) else {
                    state.expired.insert(id)
                    return nil as CheckedContinuation<Bool, Never>?
                }
                return waiter
            }
            waiter?.resume(returning: false)
        }
        defer { timer.cancel() }
        return await withCheckedContinuation { continuation in
            let immediate = state.withLock { state -> Bool? in
                if state.isOpen { return true }
                if state.expired.remove(id) != nil { return false }
                state.waiters[id] = continuation
                return nil
            }
            if let immediate { continuation.resume(returning: immediate) }
        }
    }
}
